"""The `writes` fixture (an `api_writes.Writes` on the `api_server` fixture: the sandbox, then the
real control plane), loaded by test modules with `pytest_plugins = ["writes_fixture"]`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from api_server import ApiServer
from api_writes import Writes

pytest_plugins = ["api_server_fixtures"]


@pytest_asyncio.fixture
async def writes(api_server: ApiServer) -> AsyncIterator[Writes]:
    async with api_server.session() as session:
        yield Writes(session, api_server.url, api_server.namespace)
