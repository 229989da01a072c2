"""The kubelet's streaming endpoints, as the API server proxies them for a pod: `pods/log` from
what the simulated kubelet and PE runtime recorded per container, and `pods/exec`, `pods/attach`
and `pods/portforward` refused with a 400 that says why (the sandbox runs no containers).

Logs are kept per container instance (a restarted container starts a new one; `previous=true`
reads the one before), bounded, and dropped with the pod."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from streams_k8s.sandbox.errors import bad_request, cause, invalid, not_found
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent

PODS = ("", "pods")
REFUSED = ("exec", "attach", "portforward")
_MAX_LINES = 10_000


def _rfc3339_nano(moment: float) -> str:
    """The kubelet's timestamp prefix (RFC 3339 with nanoseconds, trailing zeros dropped)."""
    whole = datetime.fromtimestamp(moment, UTC)
    fraction = f"{round(moment % 1 * 1e9) % 1_000_000_000:09d}".rstrip("0")
    return whole.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


@dataclass
class _PodLog:
    lines: dict[tuple[str, int], deque[tuple[float, str]]] = field(default_factory=dict)
    written: dict[tuple[str, int], int] = field(default_factory=dict)  # ever written (deques keep the last)
    restarts: dict[str, int] = field(default_factory=dict)  # container -> current instance


class ContainerLogs:
    """Lines written per container instance, with their times; followers wake on each write and
    on each change of the pod."""

    def __init__(self, registry: Registry, max_lines: int = _MAX_LINES) -> None:
        self.registry = registry
        self.max_lines = max_lines
        self._pods: dict[str, _PodLog] = {}  # pod uid -> its containers' lines
        self._changed: dict[str, asyncio.Event] = {}  # pod uid -> set on the next change
        self.closed = False
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        if rt.key != PODS:
            return
        uid = event.obj["metadata"]["uid"]
        if event.type == "DELETED":
            self._pods.pop(uid, None)
        else:
            statuses = (event.obj.get("status") or {}).get("containerStatuses")
            if statuses:
                pod = self._pods.setdefault(uid, _PodLog())
                for status in statuses:
                    pod.restarts[status["name"]] = int(status.get("restartCount", 0))
        self._notify(uid)

    def _notify(self, uid: str) -> None:
        changed = self._changed.pop(uid, None)
        if changed is not None:
            changed.set()

    def write(self, uid: str, container: str, text: str) -> None:
        """Append lines to the current instance of a container of the pod `uid`."""
        pod = self._pods.setdefault(uid, _PodLog())
        instance = (container, pod.restarts.get(container, 0))
        lines = pod.lines.get(instance)
        if lines is None:
            lines = pod.lines[instance] = deque(maxlen=self.max_lines)
        moment = time.time()
        for line in text.splitlines() or [""]:
            lines.append((moment, line))
        pod.written[instance] = pod.written.get(instance, 0) + len(text.splitlines() or [""])
        self._notify(uid)

    def since(
        self, uid: str, container: str, instance: int, seen: int
    ) -> tuple[list[tuple[float, str]], int]:
        """The lines of a container instance after the first `seen` ever written (those still
        kept), and how many have been written."""
        pod = self._pods.get(uid)
        lines = pod.lines.get((container, instance)) if pod is not None else None
        if pod is None or lines is None:
            return [], 0
        written = pod.written[(container, instance)]
        first_kept = written - len(lines)
        return list(lines)[max(0, seen - first_kept) :], written

    async def changed(self, uid: str) -> None:
        """Wait for a write to the pod's containers or a change of the pod."""
        event = self._changed.get(uid)
        if event is None:
            event = self._changed[uid] = asyncio.Event()
        await event.wait()

    def close(self) -> None:
        """End every follow (the sandbox stops)."""
        self.closed = True
        for uid in list(self._changed):
            self._notify(uid)


def _bool(query: Any, name: str) -> bool:
    return str(query.get(name, "false")).lower() in ("true", "1")


def _int_option(query: Any, name: str, pod: str, minimum: int) -> int | None:
    if name not in query:
        return None
    try:
        value = int(query[name])
    except ValueError:
        raise bad_request(f"{name} must be an integer, got {query[name]!r}") from None
    if value < minimum:
        relation = "greater than or equal to 0" if minimum == 0 else "greater than 0"
        raise invalid("PodLogOptions", pod, [cause(name, f"Invalid value: {value}: must be {relation}")])
    return value


def _container(pod: dict[str, Any], requested: str | None) -> str:
    """The container `requested` names (or the only one), as the API server checks it."""
    name = pod["metadata"]["name"]
    containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    init = [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []]
    if not requested:
        if len(containers) == 1:
            return str(containers[0])
        message = (
            f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
        )
        if init:
            message += f" or one of the init containers: [{' '.join(init)}]"
        raise bad_request(message)
    if requested not in containers and requested not in init:
        raise bad_request(f"container {requested} is not valid for pod {name}")
    return requested


def _container_status(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s.get("name") == container), None)


def _instance(pod: dict[str, Any], container: str, previous: bool) -> int:
    """Which instance of the container to read, or the kubelet's 400 when there is none."""
    name = pod["metadata"]["name"]
    status = _container_status(pod, container)
    if previous:
        restarts = int((status or {}).get("restartCount", 0))
        if not restarts or "terminated" not in ((status or {}).get("lastState") or {}):
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        return restarts - 1
    state = (status or {}).get("state") or {}
    if status is None or "waiting" in state:
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    return int(status.get("restartCount", 0))


async def serve_pod_stream(
    request: web.Request, registry: Registry, logs: ContainerLogs, ns: str, name: str, sub: str
) -> web.StreamResponse:
    pods = registry.types[PODS]
    pod = registry.find(pods, ns, name)
    if pod is None:
        raise not_found("pods", name)
    if sub in REFUSED:
        verb = {"exec": "exec into", "attach": "attach to", "portforward": "port-forward to"}[sub]
        raise bad_request(
            f"the streams-k8s sandbox runs no containers: it cannot {verb} pod {name} "
            f"(kubectl logs shows what its simulated kubelet and PE runtime recorded)"
        )
    query = request.query
    container = _container(pod, query.get("container"))
    tail = _int_option(query, "tailLines", name, 0)
    limit = _int_option(query, "limitBytes", name, 1)
    since_seconds = _int_option(query, "sinceSeconds", name, 1)
    since_time = query.get("sinceTime")
    if since_seconds is not None and since_time:
        raise invalid(
            "PodLogOptions",
            name,
            [cause("", "at most one of `sinceTime` or `sinceSeconds` may be specified")],
        )
    since = time.time() - since_seconds if since_seconds is not None else None
    if since_time:
        try:
            since = datetime.fromisoformat(since_time).timestamp()
        except ValueError:
            raise bad_request(f"sinceTime must be an RFC 3339 time, got {since_time!r}") from None
    response = web.StreamResponse(headers={"Content-Type": "text/plain", "Cache-Control": "no-cache"})
    if not pod["spec"].get("nodeName"):
        await response.prepare(request)  # not scheduled: no kubelet to ask, an empty log
        return response
    previous = _bool(query, "previous")
    instance = _instance(pod, container, previous)
    stamps = _bool(query, "timestamps")
    follow = _bool(query, "follow") and not previous
    uid = pod["metadata"]["uid"]
    budget = limit if limit is not None else -1

    def render(entries: list[tuple[float, str]]) -> bytes:
        nonlocal budget
        data = b"".join(
            ((_rfc3339_nano(at) + " ") if stamps else "").encode() + line.encode() + b"\n"
            for at, line in entries
            if since is None or at >= since
        )
        if budget >= 0:
            data, budget = data[:budget], max(0, budget - len(data))
        return data

    entries, seen = logs.since(uid, container, instance, 0)
    if tail is not None:
        entries = entries[len(entries) - tail :] if tail else []
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(render(entries))
    try:
        while follow and budget != 0 and not logs.closed:
            current = registry.find(pods, ns, name)
            if current is None or current["metadata"]["uid"] != uid:
                break
            entries, seen = logs.since(uid, container, instance, seen)
            if entries:
                await response.write(render(entries))
                continue
            status = _container_status(current, container) or {}
            if int(status.get("restartCount", 0)) != instance or "terminated" in (status.get("state") or {}):
                break  # the instance ended: so does following it
            with contextlib.suppress(TimeoutError):  # look again now and then, whatever happens
                async with asyncio.timeout(5.0):
                    await logs.changed(uid)
        await response.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    return response
