"""The chart in charts/streams-k8s rendered by a real helm v3: `$STREAMS_K8S_HELM`, else the one
tools/build-helm builds from the Go module proxy (or finds in its cache). A machine that cannot
build it fails the tests that need it, loudly, as the real control plane's tests do."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from repo_paths import REPO

CHART = REPO / "charts" / "streams-k8s"
HELM_ENV = "STREAMS_K8S_HELM"
BUILD = REPO / "tools" / "build-helm"
# What Helm's objects carry besides the kustomize base's labels: which release they belong to.
RELEASE_LABELS = ("app.kubernetes.io/managed-by", "app.kubernetes.io/instance")


@functools.cache
def helm_binary() -> Path:
    given = os.environ.get(HELM_ENV)
    if given:
        return Path(given)
    built = subprocess.run([str(BUILD)], capture_output=True, text=True, check=False)
    if built.returncode != 0:
        pytest.fail(f"tools/build-helm failed ({built.returncode}):\n{built.stderr[-4000:]}", pytrace=False)
    return Path(built.stdout.strip().splitlines()[-1])


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, check=False, cwd=REPO)
    if check and done.returncode != 0:
        pytest.fail(f"helm {' '.join(args)} failed: {done.stderr.strip()}", pytrace=False)
    return done


def template(*values: str, namespace: str = "streams") -> list[dict[str, Any]]:
    """`helm template` of the chart with these `--set` values, as objects."""
    sets = [arg for value in values for arg in ("--set", value)]
    done = helm("template", "streams-k8s", str(CHART), "--namespace", namespace, *sets)
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def without_release_labels(obj: dict[str, Any]) -> dict[str, Any]:
    labels = {k: v for k, v in obj["metadata"].get("labels", {}).items() if k not in RELEASE_LABELS}
    return {**obj, "metadata": {**obj["metadata"], "labels": labels}}
