"""What the simulated PE runtime calls out to: the reporter of connectivity states (the controller's
REST API, as the real runtime reports) and the hooks where further behaviour attaches
(`consistent_region.ConsistentRegionParticipant` answers consistent-region drains and resets)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from streams_k8s.sandbox.cluster.pe_identity import PeIdentity, pe_log, session_from
from streams_k8s.sandbox.pod_streams import ContainerLogs

Reporter = Callable[[PeIdentity, str], Awaitable[None]]


class RuntimeHooks:
    """Extension point for behaviour beyond connectivity (consistent regions): override these."""

    # Set by the runtime: where the hooks write what the PE would log.
    logs: ContainerLogs | None = None

    async def pe_started(self, pe: PeIdentity, pod: dict[str, Any]) -> None:
        """The PE's pod is Running and Ready (connectivity is reported next)."""

    async def pe_stopped(self, pe: PeIdentity) -> None:
        """The PE's pod terminated or was deleted."""

    async def close(self) -> None:
        """The sandbox stops: release what the hooks hold."""

    def log(self, pe: PeIdentity, text: str) -> None:
        """A line in the PE container's log."""
        if self.logs is not None:
            pe_log(self.logs, pe, text)


class HttpConnectivityReporter:
    """Reports to the controller's REST API like the real runtime (PUT, JSON string body), from
    the PE's pod address."""

    def __init__(self, base_url: str, timeout: float = 2.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)

    async def __call__(self, pe: PeIdentity, state: str) -> None:
        url = f"{self.base_url.format(namespace=pe.namespace)}/api/state/job/{pe.job}/pe/{pe.pe}/connectivity"
        body = orjson.dumps(state)
        async with (
            session_from(pe.address, self.timeout) as session,
            session.put(url, data=body, headers={"Content-Type": "application/json"}) as response,
        ):
            if response.status >= 300:
                raise RuntimeError(f"PUT {url} answered {response.status}: {(await response.text())[:200]}")

    async def close(self) -> None:
        """Nothing held between reports (each leaves from its own pod's address)."""
