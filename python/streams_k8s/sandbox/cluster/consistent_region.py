"""The consistent-region side of the simulated PE runtime.

For each started PE pod labelled `streams.ibm.com/cr=true`, it polls the CR operator's notification
board (`GET {base}/api/consistentregion/pe/{pe}`, answering `{"<region>": {"type", "message"}}` or
404), as the runtime's consistent-region thread does when no UDP hint arrives, and answers:
- `triggerDrain` `seqId=N` -> `PUT /region/{r}/pe/{pe}/checkpoint` with body `N`;
- `triggerReset` `seqId=N;resetAttempt=A` -> `PUT /region/{r}/pe/{pe}/reset` with
  `{"progress": {"seqId": "N", "resetAttempt": "A"}}` (values are strings, as boost writes them);
- `resumeSubmission`, `drained`, `resetFailed` are recorded only.
A notification is acted on when it differs from the last one seen for that region. Answers come
after `drain_delay` / `reset_delay`; `skip_drains` / `skip_resets` make the next N go unanswered
(a PE that never completes), to exercise timeouts and retries.

By default it calls the runtime's address, the job's coordinator Service
(`COORDINATOR_URL`: `streams-<job>-consistentregion-api.<namespace>:10000`), which cluster DNS
(`cluster_dns`) leads to the coordinator pod's process, as the PE's pod (`pod_calls`: its bound
token, which the coordinator trusts as it trusts the pod's address).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from streams_k8s.api.contract import COORDINATOR_API_PORT, CR_LABEL
from streams_k8s.sandbox.cluster.pe_hooks import RuntimeHooks
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity
from streams_k8s.sandbox.cluster.pod_calls import PodCalls

log = logging.getLogger(__name__)

COORDINATOR_URL = f"http://streams-{{job}}-consistentregion-api.{{namespace}}:{COORDINATOR_API_PORT}"


@dataclass
class Notification:
    pe: PeIdentity
    region: str
    type: str
    message: str


def parse_message(message: str) -> dict[str, str]:
    """`seqId=5;resetAttempt=0` -> {"seqId": "5", "resetAttempt": "0"}."""
    return dict(part.split("=", 1) for part in message.split(";") if "=" in part)


@dataclass
class ConsistentRegionParticipant(RuntimeHooks):
    """Answers drain and reset notifications for the PEs of consistent regions.

    `base_url` may contain `{job}` and `{namespace}`; by default it is the runtime's address,
    `http://streams-{job}-consistentregion-api.{namespace}:10000`. None: nothing is polled until
    `connect`.
    """

    base_url: str | None = COORDINATOR_URL
    poll_interval: float = 0.2
    drain_delay: float = 0.0
    reset_delay: float = 0.0
    skip_drains: int = 0
    skip_resets: int = 0
    timeout: float = 1.0
    seen: list[Notification] = field(default_factory=list)
    answers: list[tuple[str, str, Any]] = field(default_factory=list)  # (method, path, body)
    _pes: dict[str, PeIdentity] = field(default_factory=dict, init=False, repr=False)
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict, init=False, repr=False)
    _own_calls: PodCalls | None = field(default=None, init=False, repr=False)  # outside a runtime

    async def pe_started(self, pe: PeIdentity, pod: dict[str, Any]) -> None:
        if (pod["metadata"].get("labels") or {}).get(CR_LABEL) != "true":
            return
        self._pes[pe.uid] = pe
        self._start(pe)

    def connect(self, base_url: str) -> None:
        """Poll and answer this CR operator API from now on (PEs already running included)."""
        self.base_url = base_url
        for pe in self._pes.values():
            self._start(pe)

    def _start(self, pe: PeIdentity) -> None:
        if self.base_url is None or pe.uid in self._tasks:
            return
        self._tasks[pe.uid] = asyncio.get_running_loop().create_task(self._run(pe), name=f"cr-pe-{pe.pe}")

    async def pe_stopped(self, pe: PeIdentity) -> None:
        self._pes.pop(pe.uid, None)
        task = self._tasks.pop(pe.uid, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._own_calls is not None:
            await self._own_calls.close()
            self._own_calls = self.calls = None

    def _base(self, pe: PeIdentity) -> str:
        assert self.base_url is not None
        return self.base_url.format(job=pe.job, namespace=pe.namespace).rstrip("/") + "/api/consistentregion"

    async def _run(self, pe: PeIdentity) -> None:
        """Poll and answer, as the PE's pod, until the PE stops."""
        if self.calls is None:
            self.calls = self._own_calls = PodCalls()
        calls = self.calls
        last: dict[str, tuple[str, str]] = {}
        while True:
            board = await self._poll(pe, calls)
            if board is not None:
                for region, note in board.items():
                    current = (str(note.get("type", "")), str(note.get("message", "")))
                    if last.get(region) != current:
                        await self._handle(pe, calls, Notification(pe, region, *current))
                last = {r: (str(n.get("type", "")), str(n.get("message", ""))) for r, n in board.items()}
            await asyncio.sleep(self.poll_interval)

    async def _poll(self, pe: PeIdentity, calls: PodCalls) -> dict[str, dict[str, Any]] | None:
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        try:
            headers = await calls.headers(pe.pod_ref)
            async with calls.session().get(
                f"{self._base(pe)}/pe/{pe.pe}", headers=headers, timeout=timeout
            ) as response:
                if response.status == 404:
                    return {}
                if response.status != 200:
                    return None
                board = orjson.loads(await response.read())
                return board if isinstance(board, dict) else None
        except (aiohttp.ClientError, OSError, TimeoutError, orjson.JSONDecodeError) as exc:
            log.debug("consistent-region poll for PE %s failed: %s", pe.pe, exc)
            return None

    async def _handle(self, pe: PeIdentity, calls: PodCalls, note: Notification) -> None:
        self.seen.append(note)
        self.log(pe, f"consistent region {note.region}: {note.type} {note.message}")
        fields = parse_message(note.message)
        if note.type == "triggerDrain" and "seqId" in fields:
            if self.skip_drains:
                self.skip_drains -= 1
                return
            await asyncio.sleep(self.drain_delay)
            await self._put(pe, calls, f"/region/{note.region}/pe/{pe.pe}/checkpoint", int(fields["seqId"]))
        elif note.type == "triggerReset" and "seqId" in fields:
            if self.skip_resets:
                self.skip_resets -= 1
                return
            await asyncio.sleep(self.reset_delay)
            progress = {"seqId": fields["seqId"], "resetAttempt": fields.get("resetAttempt", "0")}
            await self._put(pe, calls, f"/region/{note.region}/pe/{pe.pe}/reset", {"progress": progress})

    async def _put(self, pe: PeIdentity, calls: PodCalls, path: str, body: Any) -> None:
        """One attempt, as the runtime does (no retry; failures are logged)."""
        self.answers.append(("PUT", path, body))
        what = f"consistent region: PUT {path} {orjson.dumps(body).decode()}"
        headers = {"Content-Type": "application/json", **await calls.headers(pe.pod_ref)}
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        try:
            async with calls.session().put(
                self._base(pe) + path, data=orjson.dumps(body), headers=headers, timeout=timeout
            ) as response:
                self.log(pe, f"{what} answered {response.status}")
                if response.status != 204:
                    log.info("consistent-region PUT %s answered %s", path, response.status)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self.log(pe, f"{what} failed: {exc or type(exc).__name__}")
            log.info("consistent-region PUT %s failed: %s", path, exc)
