"""The real control plane itself: built at the pinned release, every component healthy, and the
cluster facts the rest of the real suite relies on (RBAC on, Pod Security enforced)."""

from __future__ import annotations

import pytest

from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError

PODS = Resource("", "v1", "pods", "Pod")


def test_the_api_server_is_the_pinned_release(control_plane: ControlPlane) -> None:
    assert control_plane.version() == "v1.37.2"
    assert control_plane.healthy() == dict.fromkeys(
        ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"), True
    )


async def test_pod_security_restricted_refuses_a_root_pod(admin: KubeClient, cluster_namespace: str) -> None:
    pod = {"metadata": {"name": "root"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    with pytest.raises(ApiError) as refused:
        await admin.create(PODS, pod, cluster_namespace)
    assert refused.value.status == 403
    assert 'violates PodSecurity "restricted:latest"' in str(refused.value)
