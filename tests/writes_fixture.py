"""The `writes` fixture (a `sandbox_writes.Writes` on the `sandbox` fixture), loaded by test modules
with `pytest_plugins = ["writes_fixture"]`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest_asyncio

from sandbox_writes import Writes
from streams_k8s.sandbox import Sandbox


@pytest_asyncio.fixture
async def writes(sandbox: Sandbox) -> AsyncIterator[Writes]:
    async with aiohttp.ClientSession() as session:
        yield Writes(sandbox, session)
