"""The real control plane as pytest fixtures: one per session, a namespace per test.

Any test that asks for `control_plane` (directly or through another fixture) is marked
`control_plane`: the default run leaves them out (`-m "not control_plane"` in pyproject's addopts)
and `pytest -m control_plane` runs them (the README's real suite). The binaries come from
`$STREAMS_K8S_CONTROL_PLANE_BIN`, else `tools/build-control-plane` builds or finds them: a machine
that cannot build them fails the tests that need them, loudly, never skips them. When a test that
used it failed, the control plane's directory (every component's log, the audit log) is kept and
its path printed.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any

import pytest
import pytest_asyncio
import yaml

from control_plane_install import binaries, kubectl
from sandbox_crds import widget_crd
from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError

MARKER = "control_plane"
# What every test namespace enforces: the level the operator's deploy/ namespace enforces.
POD_SECURITY = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")}
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
_failures = pytest.StashKey[int]()
_version = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_failures] = 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if MARKER in getattr(item, "fixturenames", ()):
            item.add_marker(MARKER)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    if outcome.get_result().failed and MARKER in item.keywords:
        item.config.stash[_failures] += 1


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _version in config.stash:
        terminalreporter.write_line(f"real control plane: /version {config.stash[_version]}")


@pytest.fixture(scope="session")
def control_plane(pytestconfig: pytest.Config) -> Iterator[ControlPlane]:
    plane = ControlPlane(binaries()).start()
    pytestconfig.stash[_version] = plane.version()
    try:
        yield plane
    finally:
        if pytestconfig.stash[_failures]:
            plane.keep = True
            print(f"\nthe control plane's files (logs, audit log) are kept in {plane.directory}")
        plane.stop()


@pytest_asyncio.fixture
async def admin(control_plane: ControlPlane) -> AsyncIterator[KubeClient]:
    """A client of the real control plane as its admin (system:masters)."""
    client = await KubeClient.connect(str(control_plane.admin_kubeconfig))
    try:
        yield client
    finally:
        await client.close()


@pytest_asyncio.fixture
async def cluster_namespace(admin: KubeClient) -> AsyncIterator[str]:
    """A namespace of the test's own that enforces Pod Security "restricted", with its default
    ServiceAccount in place (pods are refused until kube-controller-manager has made it)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    await admin.create(NAMESPACES, {"metadata": {"name": name, "labels": POD_SECURITY}})
    async with asyncio.timeout(30):
        while True:
            try:
                await admin.get(SERVICE_ACCOUNTS, "default", name)
                break
            except ApiError as err:
                if err.status != 404:
                    raise
                await asyncio.sleep(0.1)
    try:
        yield name
    finally:
        await admin.delete_if_present(NAMESPACES, name)


@pytest.fixture(scope="session")
def control_plane_crds(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> ControlPlane:
    """The real control plane with the project's CRDs, as the README installs them (server-side
    apply), and the tests' Widget CRD (`sandbox_crds`), Established."""
    widgets = tmp_path_factory.mktemp("crds") / "widgets.yaml"
    widgets.write_text(yaml.safe_dump(widget_crd()))
    kubectl(control_plane, "apply", "--server-side", "-f", "crds/", "-f", str(widgets))
    kubectl(control_plane, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    return control_plane


@pytest.fixture(scope="session")
def installed(control_plane_crds: ControlPlane) -> ControlPlane:
    """The project installed as its README says: the CRDs, then `kubectl apply -k deploy/`
    (namespace `streams` enforcing Pod Security restricted, RBAC, the operator's Deployment)."""
    kubectl(control_plane_crds, "apply", "-k", "deploy/")
    return control_plane_crds
