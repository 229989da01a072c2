"""What `kubectl kustomize deploy/` (and the optional `deploy/coordinator-pool/`) renders is accepted
the way a cluster would accept it: every object the sandbox serves is created through its HTTP API
with `fieldValidation=Strict` (as `kubectl apply` asks), and every built-in one also passes
kubernetes-validate --strict, the schema guard's check."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml

from api_writes import Writes
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.conformance import check

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.sandbox(simulate=False)


@pytest_asyncio.fixture
async def writes(sandbox: Sandbox) -> AsyncIterator[Writes]:
    """Writes to the sandbox alone: the real control plane gets deploy/ in the operator's suite."""
    async with aiohttp.ClientSession() as session:
        yield Writes(session, sandbox.url, "default")


def render(directory: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def collection_path(sandbox: Sandbox, obj: dict[str, Any]) -> str | None:
    """Where `obj` is created, or None for a kind the sandbox does not serve."""
    group, _, version = obj["apiVersion"].rpartition("/")
    for rt in sandbox.registry.served.get((group, version), {}).values():
        if rt.kind == obj["kind"]:
            root = f"/apis/{group}/{version}" if group else f"/api/{version}"
            if rt.namespaced:
                return f"{root}/namespaces/{obj['metadata']['namespace']}/{rt.plural}"
            return f"{root}/{rt.plural}"
    return None


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed: cannot render the kustomize bases")
@pytest.mark.parametrize("base", ["", "coordinator-pool"])
async def test_deploy_renders_are_accepted_strictly(sandbox: Sandbox, writes: Writes, base: str) -> None:
    objects = render(DEPLOY / base)
    assert objects
    unserved = []
    if base:  # the component is applied on top of the base, in its namespace
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "streams"}}
        assert (await writes.create("/api/v1/namespaces", namespace)).status == 201
    for obj in objects:
        path = collection_path(sandbox, obj)
        if path is None:
            unserved.append(obj["kind"])
            continue
        reply = await writes.create(path, obj, fieldValidation="Strict")
        assert reply.status == 201, (obj["kind"], obj["metadata"]["name"], reply.body)
        assert reply.warnings == [], (obj["kind"], obj["metadata"]["name"])
        assert check(obj) is None
    # Only the Prometheus Operator's ServiceMonitor needs a CRD this sandbox does not install.
    assert set(unserved) <= {"ServiceMonitor"}
    assert sandbox.schema_guard is not None
    assert sandbox.schema_guard.violations == []


@pytest.mark.sandbox(simulate=False, crd_dirs=[])
async def test_the_project_crds_are_accepted_strictly(sandbox: Sandbox, writes: Writes) -> None:
    """`kubectl apply -f crds/`, the step before deploy/."""
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for path in sorted((DEPLOY.parent / "crds").glob("*.yaml")):
        reply = await writes.create(crds, yaml.safe_load(path.read_text()), fieldValidation="Strict")
        assert reply.status == 201, (path.name, reply.body)
        assert reply.warnings == [], path.name
