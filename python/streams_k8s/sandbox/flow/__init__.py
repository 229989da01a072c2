"""The simulated runtime's load: a job's declared workload (`workload`), its operators replicated
at the regions' widths (`graph`), and the pure flow model stepped over simulated time (`model`)
from which the simulated PEs serve the runtime's metrics (`exposition`)."""
