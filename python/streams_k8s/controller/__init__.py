"""The instance operator: its controllers, the servers PE pods call, and the pure builders they use.

| subsystem | where |
|---|---|
| wiring it all up (`streams-k8s run`'s default) | `operator` |
| a Job's spec checked, planned, placed | `planning` |
| a Job's children rendered from its plan (pure) | `children` |
| the Job reconciler | `jobs` |
| the PE reconciler (pods and their launches) | `pes` |
| host placement and the nodes it prepares | `placement` |
| consistent-region coordinator objects | `coordinators` |
| bundles: fetch and cache, the repository server | `bundles` |
| the instance REST API server | `rest` |
| publish/subscribe between jobs | `pubsub` |
| our kinds' REST resources | `kinds` |
"""
