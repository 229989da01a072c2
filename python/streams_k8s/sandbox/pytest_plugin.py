"""pytest fixtures for the sandbox, opt-in: `pytest -p streams_k8s.sandbox.pytest_plugin`.

- `sandbox`: a started `Sandbox` per test. Options come from `@pytest.mark.sandbox(...)`, whose
  keyword arguments are those of `Sandbox` (e.g. `nodes=3`, `crd_dirs=[path]`, `token="t"`).
- `sandbox_api`: a kubernetes_asyncio `ApiClient` connected to that sandbox.
- `module_sandbox`: one `Sandbox` shared by a test module (default options, or the module's
  `pytestmark = pytest.mark.sandbox(...)`); its tests run on the module's event loop, so mark them
  `pytest.mark.asyncio(loop_scope="module")`. Tests share its state: use distinct names or
  namespaces.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

if TYPE_CHECKING:  # imported when a fixture is used: the plugin loads before any fixture is asked for
    from streams_k8s.sandbox.sandbox import Sandbox


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sandbox(**options): keyword arguments for the `sandbox` fixture's Sandbox(...)"
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
