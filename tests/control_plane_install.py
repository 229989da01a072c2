"""The real control plane's binaries, and kubectl against it: for the suite's fixtures
(`tests/conftest.py`) and the benchmarks that start a control plane of their own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from repo_paths import REPO
from streams_k8s.control_plane.cluster import BIN_ENV, ControlPlane

BUILD = REPO / "tools" / "build-control-plane"


def binaries() -> Path:
    """`$STREAMS_K8S_CONTROL_PLANE_BIN`, else what `tools/build-control-plane` builds or finds; a
    machine that cannot build them fails, loudly."""
    given = os.environ.get(BIN_ENV)
    if given:
        return Path(given)
    built = subprocess.run([str(BUILD)], capture_output=True, text=True, check=False)
    if built.returncode != 0:
        pytest.fail(
            f"tools/build-control-plane failed ({built.returncode}):\n{built.stderr[-4000:]}", pytrace=False
        )
    return Path(built.stdout.strip().splitlines()[-1])


def kubectl(plane: ControlPlane, *args: str) -> str:
    """kubectl as the cluster's admin, from the repository's root; its output."""
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(plane.admin_kubeconfig), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    if done.returncode != 0:
        pytest.fail(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}", pytrace=False)
    return done.stdout
