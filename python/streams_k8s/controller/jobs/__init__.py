"""The Job reconciler: a Job becomes its children and its status says how far (`jobs.controller`).

Its layers, one concept each: `base` (caches, status writes, failure, cleanup), `planned` (the plan
and creating its children), `resizing` (parallel-region width changes, steps in `widths`),
`running` (a submitted job kept as planned) and `controller` (validation and submission); `status`
is the typed view of a Job's status, `job_ids` the namespace's id counter.
"""
