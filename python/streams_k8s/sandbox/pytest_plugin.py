"""pytest fixtures for the sandbox, opt-in: `pytest -p streams_k8s.sandbox.pytest_plugin`.

- `sandbox`: a started `Sandbox` per test. Options come from `@pytest.mark.sandbox(...)`, whose
  keyword arguments are those of `Sandbox` (e.g. `nodes=3`, `crd_dirs=[path]`, `token="t"`).
- `sandbox_api`: a kubernetes_asyncio `ApiClient` connected to that sandbox.
- `module_sandbox`: one `Sandbox` shared by a test module (default options, or the module's
  `pytestmark = pytest.mark.sandbox(...)`); its tests run on the module's event loop, so mark them
  `pytest.mark.asyncio(loop_scope="module")`. Tests share its state: use distinct names or
  namespaces.

The schema guard is on for the whole session: every built-in object any sandbox of the session
accepts (written by the test, an operator, a coordinator, the CLI, or the sandbox's own simulated
cluster) is also checked with kubernetes-validate --strict, and a violation fails the test during
which it was written, naming the object and the error. `STREAMS_K8S_SANDBOX_SCHEMA_GUARD=0` (or
`Sandbox(schema_guard=False)`, e.g. in a benchmark) turns it off.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Generator
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

if TYPE_CHECKING:  # imported when a fixture is used: the plugin loads before any fixture is asked for
    from streams_k8s.sandbox.sandbox import Sandbox

_GUARD_ENVIRONMENT = "STREAMS_K8S_SANDBOX_SCHEMA_GUARD"  # conformance.ENVIRONMENT, not imported here
_GUARD_MODULE = "streams_k8s.sandbox.conformance"
_seen_violations = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sandbox(**options): keyword arguments for the `sandbox` fixture's Sandbox(...)"
    )
    # Inherited by sandboxes the tests start in other processes (`streams-k8s sandbox`).
    os.environ.setdefault(_GUARD_ENVIRONMENT, "1")
    config.stash[_seen_violations] = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A schema-guard violation found during a test's setup, call or teardown fails that phase."""
    outcome = yield
    guard = sys.modules.get(_GUARD_MODULE)
    if guard is None:
        return
    violations: list[str] = guard.VIOLATIONS
    seen = item.config.stash[_seen_violations]
    if len(violations) == seen:
        return
    item.config.stash[_seen_violations] = len(violations)
    report = outcome.get_result()
    if report.passed:
        report.outcome = "failed"
        report.longrepr = "a real API server's schema rejects what the sandbox accepted:\n" + "\n".join(
            violations[seen:]
        )


@pytest_asyncio.fixture
async def sandbox(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    from streams_k8s.sandbox.sandbox import Sandbox

    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("sandbox"))):  # closest marker wins
        options.update(marker.kwargs)
    async with Sandbox(**options) as sb:
        yield sb


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_sandbox(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    from streams_k8s.sandbox.sandbox import Sandbox

    options: dict[str, Any] = {}
    for marker in request.node.iter_markers("sandbox"):
        options = {**marker.kwargs, **options}
    async with Sandbox(**options) as sb:
        yield sb


@pytest_asyncio.fixture
async def sandbox_api(sandbox: Sandbox) -> AsyncIterator[Any]:
    from kubernetes_asyncio.client import ApiClient

    async with ApiClient(await sandbox.client_configuration()) as api:
        yield api
