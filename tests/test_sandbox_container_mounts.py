"""A process-running container's emptyDir volumes (`sandbox.cluster.container_mounts`): the paths
under its mounts, in its environment and arguments, are the pod's own directories on this host."""

from __future__ import annotations

from pathlib import Path

from streams_k8s.sandbox.cluster.container_mounts import empty_dirs, mounted_environment, translate

POD = {
    "spec": {
        "volumes": [
            {"name": "bundles", "emptyDir": {"sizeLimit": "4Gi"}},
            {"name": "tmp", "emptyDir": {}},
            {"name": "config", "configMap": {"name": "c"}},
        ]
    }
}
CONTAINER = {
    "volumeMounts": [
        {"name": "bundles", "mountPath": "/var/cache/streams-k8s"},
        {"name": "tmp", "mountPath": "/tmp/"},
        {"name": "config", "mountPath": "/etc/config"},
    ]
}


def test_the_operators_bundle_cache_lands_in_the_pods_directory(tmp_path: Path) -> None:
    mounts = empty_dirs(POD, CONTAINER, tmp_path)
    assert mounts == {"/var/cache/streams-k8s": tmp_path / "bundles", "/tmp": tmp_path / "tmp"}
    assert all(directory.is_dir() for directory in mounts.values())
    env = mounted_environment({"STREAMS_K8S_BUNDLE_CACHE": "/var/cache/streams-k8s/bundles"}, mounts)
    assert env == {"STREAMS_K8S_BUNDLE_CACHE": f"{tmp_path}/bundles/bundles", "TMPDIR": str(tmp_path / "tmp")}


def test_only_paths_under_a_mount_move(tmp_path: Path) -> None:
    mounts = {"/var/cache": tmp_path / "a", "/var/cache/deep": tmp_path / "b"}
    assert translate("/var/cache/deep/x", mounts) == f"{tmp_path}/b/x"  # the deepest mount wins
    assert translate("/var/cache", mounts) == str(tmp_path / "a")
    assert translate("/var/cached", mounts) == "/var/cached"
    assert translate("--namespace=streams", mounts) == "--namespace=streams"
    assert translate("/etc/config/x", mounts) == "/etc/config/x"  # a ConfigMap is not mounted
