"""A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
on loopback, started and stopped by the project: the test bed that judges what the sandbox accepts.
The binaries are built from their Go modules by `tools/build-control-plane`."""
