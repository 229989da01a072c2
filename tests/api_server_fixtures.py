"""One test, two API servers: the `api_server` fixture runs a test once against the sandbox and once
against the real control plane (`tests/conftest.py`), each time in a namespace of the test's own.

A test module loads it with `pytest_plugins = ["api_server_fixtures"]`. The `control_plane` variant
carries the `control_plane` marker, so the default run leaves it out and `pytest -m control_plane`
runs it. The real server serves the project's CRDs and the tests' Widget CRD (`sandbox_crds`),
applied once per session with `kubectl apply --server-side`, as the sandbox serves them from its start.
"""

from __future__ import annotations

import ssl
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from api_clients import CLIENT_KINDS
from api_server import CONTROL_PLANE, SANDBOX, ApiServer
from sandbox_crds import GROUP, widget_crd
from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.sandbox import Sandbox

NAMESPACES = "/api/v1/namespaces"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _kubeconfig_for(source: Path, namespace: str, directory: Path) -> Path:
    config = yaml.safe_load(source.read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test on the sandbox, then on the real control plane (marked `control_plane`). A test
    that also takes `client_kind` runs with each client on the sandbox and raw HTTP alone on the
    real server: that kubernetes_asyncio works with kube-apiserver is given, with the sandbox it is
    a question."""
    if "backend" not in metafunc.fixturenames:
        return
    real = pytest.mark.control_plane
    if "client_kind" in metafunc.fixturenames:
        pairs = [*((kind, SANDBOX) for kind in CLIENT_KINDS), pytest.param("http", CONTROL_PLANE, marks=real)]
        metafunc.parametrize(("client_kind", "backend"), pairs, indirect=["backend"])
    else:
        metafunc.parametrize("backend", [SANDBOX, pytest.param(CONTROL_PLANE, marks=real)], indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Sandbox | ControlPlane:
    """The sandbox of the test (its `sandbox` marker's options), or the session's real control plane."""
    server: Sandbox | ControlPlane = request.getfixturevalue(
        "sandbox" if request.param == SANDBOX else "control_plane_crds"
    )
    return server


@asynccontextmanager
async def _in_a_namespace(
    backend: str, url: str, source: Path, tls: ssl.SSLContext | None, sandbox: Sandbox | None, tmp: Path
) -> AsyncIterator[ApiServer]:
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    api = ApiServer(backend, url, _kubeconfig_for(source, namespace, tmp), namespace, tls, sandbox)
    status, body = await api.call("POST", NAMESPACES, {"metadata": {"name": namespace}})
    assert status == 201, body
    if api.real:  # pods are refused until kube-controller-manager made the default ServiceAccount
        await api.until("GET", f"{NAMESPACES}/{namespace}/serviceaccounts/default", lambda s, _: s == 200)
    try:
        yield api
    finally:
        for path in [*reversed(api._cleanup), f"{NAMESPACES}/{namespace}"]:
            await api.call("DELETE", path)


@pytest_asyncio.fixture
async def api_server(backend: Sandbox | ControlPlane, tmp_path: Path) -> AsyncIterator[ApiServer]:
    """The test's API server (the sandbox, then the real control plane) and a namespace of its own."""
    if isinstance(backend, Sandbox):
        served = _in_a_namespace(SANDBOX, backend.url, backend.kubeconfig_path, None, backend, tmp_path)
    else:
        served = _in_a_namespace(
            CONTROL_PLANE, backend.url, backend.admin_kubeconfig, backend.admin_context(), None, tmp_path
        )
    async with served as api:
        yield api


@pytest_asyncio.fixture
async def sandbox_server(sandbox: Sandbox, tmp_path: Path) -> AsyncIterator[ApiServer]:
    """The sandbox alone, as an `ApiServer`: for the tests of what only the sandbox has."""
    async with _in_a_namespace(SANDBOX, sandbox.url, sandbox.kubeconfig_path, None, sandbox, tmp_path) as api:
        yield api


@pytest_asyncio.fixture
async def widgets_served(api_server: ApiServer) -> ApiServer:
    """The API server with the Widget CRD served (the real one's since the session began)."""
    if not api_server.real:
        status, body = await api_server.call("POST", CRDS, widget_crd())
        assert status == 201, body
    return api_server


@pytest_asyncio.fixture
async def own_widgets(api_server: ApiServer) -> str:
    """A Widget CRD in a group of the test's own, Established, for a test that changes the CRD;
    its group."""
    group = f"{api_server.namespace}.{GROUP}"
    status, body = await api_server.call("POST", CRDS, widget_crd(group=group, short_names=()))
    assert status == 201, body
    path = f"{CRDS}/widgets.{group}"
    api_server.delete_after(path)
    await api_server.until("GET", path, lambda _, crd: _established(crd))
    return group


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
