"""Every container the project runs from its own image starts a real command of that image.

The container runtime composes the image's ENTRYPOINT and CMD with the container's ``command``
and ``args``: ``command`` replaces the ENTRYPOINT (and drops the CMD), ``args`` replaces the CMD.
These tests read deploy/Dockerfile's final stage, compose each rendered container the same way,
run the result with the installed console script standing in for the image's program and
``--help`` appended, and expect exit 0 (a wrong composition is `No such command`, exit 2).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from streams_k8s.api.consistent_region import ConsistentRegionOperator
from streams_k8s.consistent.manifests import coordinator_deployment
from streams_k8s.consistent.pool_manifests import coordinator_pool, pool_scheduler

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
PROGRAM = "streams-k8s"
IMAGE = "streams-k8s"  # the image deploy/ builds and its manifests name
_VARIABLE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def image_config(dockerfile: Path = DOCKERFILE) -> tuple[list[str], list[str]]:
    """ENTRYPOINT and CMD of the Dockerfile's final stage (exec or shell form)."""
    entrypoint: list[str] = []
    cmd: list[str] = []
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    for line in text.splitlines():
        instruction, _, rest = line.strip().partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":  # a new stage inherits nothing we read from the previous one
            entrypoint, cmd = [], []
        elif instruction in ("ENTRYPOINT", "CMD"):
            rest = rest.strip()
            form = json.loads(rest) if rest.startswith("[") else ["/bin/sh", "-c", rest]
            if instruction == "ENTRYPOINT":
                entrypoint, cmd = form, []  # setting ENTRYPOINT resets an inherited CMD
            else:
                cmd = form
    return entrypoint, cmd


def compose(container: dict[str, Any], entrypoint: list[str], cmd: list[str]) -> list[str]:
    """The argv the container runtime starts, with ``$(VAR)`` references expanded as the kubelet does."""
    command, args = container.get("command"), container.get("args")
    if command is not None:
        argv = [*command, *(args or [])]
    else:
        argv = [*entrypoint, *(args if args is not None else cmd)]
    env = {e["name"]: e.get("value", f"<{e['name']}>") for e in container.get("env") or ()}
    return [_VARIABLE.sub(lambda m: env.get(m.group(1), m.group(0)), arg) for arg in argv]


def starts(container: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """Run the composed command with ``--help``, the installed console script as the program."""
    argv = compose(container, *image_config())
    assert argv[:1] == [PROGRAM], f"{container['name']} would run {shlex.join(argv)}"
    script = Path(sys.executable).parent / PROGRAM
    program = str(script) if script.exists() else shutil.which(PROGRAM)
    assert program is not None, f"the {PROGRAM} console script is not installed"
    return subprocess.run(
        [program, *argv[1:], "--help"], capture_output=True, text=True, timeout=60, check=False
    )


def assert_starts(container: dict[str, Any], subcommand: str) -> None:
    result = starts(container)
    assert result.returncode == 0, f"{container['name']}: {result.stderr or result.stdout}"
    assert f"Usage: {PROGRAM} {subcommand}" in result.stdout


def test_the_image_runs_the_console_script() -> None:
    entrypoint, cmd = image_config()
    assert entrypoint == [PROGRAM]
    assert compose({"name": "default"}, entrypoint, cmd)[:2] == [PROGRAM, "run"]


def test_composition_follows_the_container_runtime() -> None:
    entrypoint, cmd = ["tini", "--"], ["serve"]
    assert compose({}, entrypoint, cmd) == ["tini", "--", "serve"]
    assert compose({"args": ["a"]}, entrypoint, cmd) == ["tini", "--", "a"]
    assert compose({"command": ["x"]}, entrypoint, cmd) == ["x"]  # CMD dropped with the ENTRYPOINT
    assert compose({"command": ["x"], "args": ["y"]}, entrypoint, cmd) == ["x", "y"]
    assert compose({"args": []}, entrypoint, cmd) == ["tini", "--"]
    env = [{"name": "NS", "value": "prod"}]
    assert compose({"args": ["--ns=$(NS)", "$(UNSET)"], "env": env}, [], []) == ["--ns=prod", "$(UNSET)"]


def _cro() -> ConsistentRegionOperator:
    return ConsistentRegionOperator.from_wire(
        {
            "apiVersion": "streams.ibm.com/v1",
            "kind": "ConsistentRegionOperator",
            "metadata": {"name": "j-consistent-region-operator", "namespace": "ns", "uid": "u-1"},
            "spec": {"jobName": "j", "jobUid": "job-uid", "numRegions": 1},
        }
    )


def _containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    return list(workload["spec"]["template"]["spec"]["containers"])


def test_a_dedicated_coordinator_starts() -> None:
    (container,) = _containers(coordinator_deployment(_cro(), namespace="ns", generation=0, image=IMAGE))
    assert_starts(container, "coordinator")


def test_the_shared_coordinator_pool_starts() -> None:
    (container,) = _containers(coordinator_pool(namespace="ns", image=IMAGE))
    assert_starts(container, "coordinator")


def test_the_pool_scheduler_starts() -> None:
    deployment = next(
        o for o in pool_scheduler(namespace="ns", image=IMAGE, capacity=4) if o["kind"] == "Deployment"
    )
    (container,) = _containers(deployment)
    assert_starts(container, "run")


def _deploy_containers() -> list[Any]:
    found = []
    for path in sorted((REPO / "deploy").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            template = ((doc or {}).get("spec") or {}).get("template") if isinstance(doc, dict) else None
            for container in ((template or {}).get("spec") or {}).get("containers") or ():
                if str(container.get("image", "")).split(":")[0] == IMAGE:
                    where = f"{path.relative_to(REPO)}:{container['name']}"
                    found.append(pytest.param(where, container, id=where))
    return found


@pytest.mark.parametrize(("where", "container"), _deploy_containers())
def test_every_deploy_manifest_container_starts(where: str, container: dict[str, Any]) -> None:
    result = starts(container)
    assert result.returncode == 0, f"{where}: {result.stderr or result.stdout}"


def test_deploy_has_the_operator_and_the_pool() -> None:
    where = {param.values[0] for param in _deploy_containers()}
    assert where == {
        "deploy/deployment.yaml:controller",
        "deploy/coordinator-pool/coordinator-pool.yaml:consistent-region-operator",
    }
