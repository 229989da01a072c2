"""The simulated cluster, a client of any API server (`simulation.Simulation`): nodes with heartbeat
Leases, the kubelet that runs the pods bound to them (the coordinator pods' program for real), and
the simulated Streams PE runtime. See the sandbox's README."""
