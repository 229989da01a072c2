"""The simulated cluster: nodes, kubelet and PE runtime."""
