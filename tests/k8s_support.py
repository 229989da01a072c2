"""Helpers shared by the controller-runtime tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.metrics import RuntimeMetrics
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.sandbox import Sandbox


def sandbox_runtime(sandbox: Sandbox, **overrides: Any) -> RuntimeSettings:
    """A Manager's settings for a test against ``sandbox``: loopback, ephemeral health and metrics
    ports, no leader election, short backoffs; ``overrides`` win."""
    fields: dict[str, Any] = {
        "kubeconfig": str(sandbox.kubeconfig_path),
        "bind_address": "127.0.0.1",
        "health_port": 0,
        "metrics_port": 0,
        "leader_election": False,
        "backoff_initial": 0.05,
        "backoff_max": 0.5,
    }
    return RuntimeSettings(**(fields | overrides))


async def eventually(condition: Callable[[], bool], within: float = 5.0, every: float = 0.01) -> None:
    """Wait until ``condition()`` holds; fail the test (TimeoutError) after ``within`` seconds."""
    async with asyncio.timeout(within):
        while True:
            if condition():
                return
            await asyncio.sleep(every)


async def eventually_async(
    check: Callable[[], Awaitable[bool]], within: float = 10.0, every: float = 0.05
) -> None:
    """Like ``eventually`` for a check that has to ask the API server."""
    async with asyncio.timeout(within):
        while True:
            if await check():
                return
            await asyncio.sleep(every)


def hand_fed_informer(resource: Resource) -> Informer:
    """An informer never started: a test fills its cache (or applies its events) by hand."""
    return Informer(None, resource, metrics=RuntimeMetrics())  # type: ignore[arg-type]
