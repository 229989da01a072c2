"""Readiness probes of the containers that run as processes (`pod_processes`), as the kubelet's
prober runs them: ``httpGet`` (a status from 200 to 399 passes) and ``tcpSocket`` (a connection
passes) at the address the pod listens on here; an ``exec`` probe cannot run and passes.

A container is not ready until its probe first passes; the first probes come every 0.1 s (a
kubelet waits ``periodSeconds`` between them: the simulation does not make a coordinator wait 10 s
for nothing). Then it is probed every ``periodSeconds``, turns unready after
``failureThreshold`` failures in a row and ready again after ``successThreshold`` passes.
Liveness and startup probes are not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

FIRST_PROBES = 0.1
_TIMEOUT = 1.0

log = logging.getLogger(__name__)

# (pod uid, container, ready) whenever a container's readiness changes.
Changed = Callable[[str, str, bool], Awaitable[None]]


def _port(container: dict[str, Any], port: Any) -> int | None:
    if isinstance(port, int):
        return port
    for declared in container.get("ports") or []:
        if declared.get("name") == port and isinstance(declared.get("containerPort"), int):
            return int(declared["containerPort"])
    return int(port) if isinstance(port, str) and port.isdecimal() else None


async def probe_once(
    session: aiohttp.ClientSession, address: str, container: dict[str, Any], probe: dict[str, Any]
) -> bool:
    """One probe of ``container`` listening on ``address``."""
    seconds = float(probe.get("timeoutSeconds") or _TIMEOUT)
    try:
        if "httpGet" in probe:
            http = probe["httpGet"] or {}
            port = _port(container, http.get("port"))
            if port is None:
                return False
            scheme = str(http.get("scheme") or "HTTP").lower()
            url = f"{scheme}://{address}:{port}{http.get('path') or '/'}"
            timeout = aiohttp.ClientTimeout(total=seconds)
            async with session.get(url, timeout=timeout, ssl=False) as answer:
                return 200 <= answer.status < 400
        if "tcpSocket" in probe:
            port = _port(container, (probe["tcpSocket"] or {}).get("port"))
            if port is None:
                return False
            _, writer = await asyncio.wait_for(asyncio.open_connection(address, port), seconds)
            writer.close()
            return True
    except (aiohttp.ClientError, OSError, TimeoutError):
        return False
    return True  # exec: nothing to run it in


class ReadinessProber:
    def __init__(self, changed: Changed) -> None:
        self.changed = changed
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._session: aiohttp.ClientSession | None = None

    @staticmethod
    def probe_of(container: dict[str, Any]) -> dict[str, Any] | None:
        probe = container.get("readinessProbe")
        return probe if isinstance(probe, dict) else None

    def start(self, uid: str, address: str, container: dict[str, Any]) -> None:
        probe = self.probe_of(container)
        key = (uid, str(container.get("name")))
        if probe is None or key in self._tasks:
            return
        if self._session is None:
            self._session = aiohttp.ClientSession()
        loop = asyncio.get_running_loop()
        self._tasks[key] = loop.create_task(self._run(uid, address, container, probe), name=f"probe {key}")

    async def _run(self, uid: str, address: str, container: dict[str, Any], probe: dict[str, Any]) -> None:
        assert self._session is not None
        name = str(container.get("name"))
        await asyncio.sleep(float(probe.get("initialDelaySeconds") or 0))
        while True:
            if await probe_once(self._session, address, container, probe):
                break
            await asyncio.sleep(FIRST_PROBES)
        await self._tell(uid, name, True)
        ready, streak = True, 0
        period = float(probe.get("periodSeconds") or 10)
        thresholds = {
            False: int(probe.get("failureThreshold") or 3),
            True: int(probe.get("successThreshold") or 1),
        }
        while True:
            await asyncio.sleep(period)
            passed = await probe_once(self._session, address, container, probe)
            streak = streak + 1 if passed != ready else 0
            if streak >= thresholds[passed]:
                ready, streak = passed, 0
                await self._tell(uid, name, ready)

    async def _tell(self, uid: str, container: str, ready: bool) -> None:
        try:
            await self.changed(uid, container, ready)
        except Exception:  # the status write failed: the next change says it again
            log.exception("readiness of %s in pod %s could not be written", container, uid)

    def probing(self, uid: str) -> bool:
        return any(key[0] == uid for key in self._tasks)

    async def stop(self, uid: str) -> None:
        for key in [k for k in self._tasks if k[0] == uid]:
            task = self._tasks.pop(key)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def close(self) -> None:
        for uid in {k[0] for k in self._tasks}:
            await self.stop(uid)
        if self._session is not None:
            await self._session.close()
            self._session = None
