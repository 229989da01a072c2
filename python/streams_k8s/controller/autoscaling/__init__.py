"""The width autoscaler (issue 32, point 4): DS2-style (Kalavri et al., OSDI 2018), opt-in per Job.

`observations` turns two scrapes of a job's PE metrics into a window per operator instance,
`estimates` the true processing rate of each operator from it, `decision` the widths of every
parallel region at once from the sources' target rate, with bounds, a target-utilisation band, a
stabilisation window after each change, delayed scale-down and a check that a change delivered
what it promised. All pure: no I/O, no clock."""
