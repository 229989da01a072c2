"""A job's children rendered from its plan: pure builders of Kubernetes objects (no I/O).

`desired` lists every child of a job in creation order; the other modules build one kind each.
`streams-k8s plan -o yaml` renders its ConfigMaps through the same builders.
"""
