"""What the simulated PE runtime calls out to: the reporter of connectivity states (the controller's
REST API, as the real runtime reports) and the hooks where further behaviour attaches
(`consistent_region.ConsistentRegionParticipant` answers consistent-region drains and resets)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from streams_k8s.sandbox.cluster.container_logs import ContainerLog
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity, pe_log
from streams_k8s.sandbox.cluster.pod_calls import PodCalls

Reporter = Callable[[PeIdentity, str], Awaitable[None]]


class RuntimeHooks:
    """Extension point for behaviour beyond connectivity (consistent regions): override these."""

    # Set by the runtime: where the hooks write what the PE would log, and how its pod calls out.
    logs: ContainerLog | None = None
    calls: PodCalls | None = None

    async def pe_started(self, pe: PeIdentity, pod: dict[str, Any]) -> None:
        """The PE's pod is Running and Ready (connectivity is reported next)."""

    async def pe_stopped(self, pe: PeIdentity) -> None:
        """The PE's pod terminated or was deleted."""

    async def close(self) -> None:
        """The simulation stops: release what the hooks hold."""

    def log(self, pe: PeIdentity, text: str) -> None:
        """A line in the PE container's log."""
        if self.logs is not None:
            pe_log(self.logs, pe, text)


class HookChain(RuntimeHooks):
    """Several hooks, each told of every PE in turn (consistent regions, then the flow metrics)."""

    def __init__(self, *hooks: RuntimeHooks) -> None:
        self.hooks = hooks

    def _share(self) -> None:
        for hook in self.hooks:
            hook.logs, hook.calls = self.logs, self.calls

    async def pe_started(self, pe: PeIdentity, pod: dict[str, Any]) -> None:
        self._share()
        for hook in self.hooks:
            await hook.pe_started(pe, pod)

    async def pe_stopped(self, pe: PeIdentity) -> None:
        self._share()
        for hook in self.hooks:
            await hook.pe_stopped(pe)

    async def close(self) -> None:
        for hook in self.hooks:
            await hook.close()


class HttpConnectivityReporter:
    """Reports to the controller's REST API like the real runtime (PUT, JSON string body), as the
    PE's pod (`PodCalls`: its bound token, cluster DNS). ``base_url`` may contain ``{namespace}``."""

    def __init__(self, base_url: str, calls: PodCalls) -> None:
        self.base_url = base_url.rstrip("/")
        self.calls = calls

    async def __call__(self, pe: PeIdentity, state: str) -> None:
        url = f"{self.base_url.format(namespace=pe.namespace)}/api/state/job/{pe.job}/pe/{pe.pe}/connectivity"
        headers = {"Content-Type": "application/json", **await self.calls.headers(pe.pod_ref)}
        async with self.calls.session().put(url, data=orjson.dumps(state), headers=headers) as response:
            if response.status >= 300:
                raise RuntimeError(f"PUT {url} answered {response.status}: {(await response.text())[:200]}")
