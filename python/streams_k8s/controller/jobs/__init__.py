"""The Job reconciler: a Job becomes its children and its status says how far (`jobs.controller`).

`JobController.reconcile` dispatches to collaborators, each given the client, the caches
(`caches`) and the recorder: `submission` (a submission, failures and retries), `plans` (the
plan, kept per Job), `keeping` (children created and kept, orphans `adoption`), `cleanup`,
`running` (a submitted job's pass), `rollout` (edits: `edit_targets`, `edit_regions` with
`checkpoints`, `edit_notes`, `rollback`), `resizing` (width changes, steps in `widths`) and
`count_writes` (counts and phase); `status` is the typed view of a Job's status, `status_writes`
its conditional write, `health` its kstatus conditions, `milestones` its Events, `job_ids` the
namespace's id counter.
"""
