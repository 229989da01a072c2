"""`kubectl streams` as a user of the real control plane runs it: the plugin on the PATH (as the
wheel's `kubectl-streams` entry point installs it), a ServiceAccount token in a kubeconfig of its
own, and the Role a user who runs jobs has (as the `edit` ClusterRole grants)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from real_cluster import KUBECTL, RealCluster
from tokens import kubeconfig_with_token

USER_ROLE = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: streams-user}
rules:
  - apiGroups: [streams.ibm.com]
    resources: [streamsjobs, streamspes, streamsprs, streamsprs/scale, streamscrs]
    verbs: ["*"]
  - apiGroups: [""]
    resources: [pods, pods/log]
    verbs: [get, list]
  - apiGroups: [""]
    resources: [services/proxy]
    verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: streams-viewer}
rules:
  - apiGroups: [streams.ibm.com]
    resources: [streamsjobs]
    verbs: [get, list]
  - apiGroups: [""]
    resources: [services/proxy]
    verbs: [get, create, update]
"""
# What a user of another watched namespace needs in the operator's: its REST API, to upload.
UPLOADER_ROLE = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: streams-uploader}
rules:
  - apiGroups: [""]
    resources: [services/proxy]
    resourceNames: ["streams-api:api"]  # the Service and port a proxy request names
    verbs: [get, create, update]
"""


def plugin_directory(directory: Path) -> Path:
    """A directory with `kubectl-streams`, as the wheel's entry point installs it."""
    directory.mkdir(exist_ok=True)
    script = directory / "kubectl-streams"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom streams_k8s.cli.streamtool import streams\n"
        "sys.exit(streams(prog_name='kubectl streams'))\n"
    )
    script.chmod(0o755)
    return directory


async def kubectl_streams(kubeconfig: Path, plugins: Path, *args: str) -> tuple[int, str, str]:
    """`kubectl streams ARGS` as the user of ``kubeconfig``, the plugin found on the PATH."""
    assert KUBECTL is not None, "kubectl is not installed"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PATH": f"{plugins}{os.pathsep}{os.environ['PATH']}"}
    process = await asyncio.create_subprocess_exec(
        KUBECTL,
        "streams",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await process.communicate()
    return int(process.returncode or 0), out.decode(), err.decode()


async def user(cluster: RealCluster, name: str, role: str, namespace: str, directory: Path) -> Path:
    """A kubeconfig of the ServiceAccount ``name`` of ``namespace``, bound there to ``role``."""
    await cluster.kubectl("create", "serviceaccount", name, "-n", namespace)
    await cluster.kubectl(
        "create",
        "rolebinding",
        name,
        f"--role={role}",
        f"--serviceaccount={namespace}:{name}",
        "-n",
        namespace,
    )
    _, token, _ = await cluster.kubectl("create", "token", name, "-n", namespace)
    return kubeconfig_with_token(cluster.plane.admin_kubeconfig, token.strip(), directory)


async def bind(cluster: RealCluster, name: str, namespace: str, role: str, where: str) -> None:
    """Bind the ServiceAccount ``name`` of ``namespace`` to the Role ``role`` of ``where``."""
    account = f"--serviceaccount={namespace}:{name}"
    await cluster.kubectl(
        "create", "rolebinding", f"{name}-{namespace}", f"--role={role}", account, "-n", where
    )
