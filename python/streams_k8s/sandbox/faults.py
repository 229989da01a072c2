"""Fault injection on the API server: failing or slow requests, and misbehaving watches.

Request rules match on verb, resource, namespace and name (None matches anything) and apply to
the next `count` matching requests (None: until cleared). Watch faults act on the open watches.

Two modes make the faults of a real network and API server: `probability` fails each matching
request only at random (a seeded generator, `Faults(seed=...)`, so a run can be repeated), and
`after_commit` carries a resource request out and then answers with the error instead of the
result (a lost answer: the write happened, the client cannot know it).

Faults are meant for the operator's requests: those of the simulated cluster (its kubelet, nodes
and PE runtime, user ``sandbox:simulation``) and its watches are spared unless a rule or a watch
fault says ``simulation=True``.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from streams_k8s.sandbox.authn import SIMULATION
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.request_info import RequestInfo


@dataclass
class RequestFault:
    """Answer matching requests with `status` (if set) after `latency` seconds."""

    status: int | None = None
    latency: float = 0.0
    count: int | None = 1
    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    retry_after: int | None = None
    message: str | None = None
    path: str | None = None
    probability: float = 1.0  # of failing a matching request (the others pass untouched)
    after_commit: bool = False  # carry the request out, then answer the error
    simulation: bool = False  # the simulated cluster's requests too
    user: str | None = None  # only this user's requests (a pod's service account)
    # Instead of ``status``: one drawn at random per failed request among these (409 for writes
    # only: a read or watch draws among the others), 429 with ``retry_after``.
    statuses: tuple[int, ...] = ()

    def matches(self, info: RequestInfo, user: str = "") -> bool:
        return (
            (self.simulation or user != SIMULATION)
            and (self.user is None or self.user == user)
            and (self.path is None or self.path == info.path)
            and (self.verb is None or self.verb == info.verb)
            and (
                self.resource is None
                or self.resource in (info.resource, f"{info.resource}/{info.subresource}")
            )
            and (self.namespace is None or self.namespace == info.namespace)
            and (self.name is None or self.name == info.name)
        )

    def error(self, status: int | None = None) -> ApiError:
        status = status if status is not None else self.status
        assert status is not None
        messages = {
            409: "Operation cannot be fulfilled: the object has been modified (injected conflict)",
            429: "Too many requests, please try again later (injected)",
            500: "Internal error (injected)",
        }
        message = self.message or messages.get(status, f"injected error {status}")
        retry_after = self.retry_after if status == 429 or not self.statuses else None
        return ApiError(status, message, retry_after=retry_after)

    def drawn_status(self, info: RequestInfo, rng: random.Random) -> int | None:
        """The status this rule fails ``info`` with (None: it only delays)."""
        if not self.statuses:
            return self.status
        eligible = [s for s in self.statuses if s != 409 or info.verb in _WRITES]
        return rng.choice(eligible) if eligible else None


_Answer = TypeVar("_Answer")
_WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})


class Faults:
    """The fault-injection control of one sandbox."""

    def __init__(self, registry: Registry, seed: int | None = None) -> None:
        self.registry = registry
        self.rules: list[RequestFault] = []
        self.random = random.Random(seed)

    def fail(
        self,
        status: int,
        count: int | None = 1,
        *,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        path: str | None = None,
        retry_after: int | None = None,
        message: str | None = None,
        probability: float = 1.0,
        after_commit: bool = False,
        simulation: bool = False,
        user: str | None = None,
    ) -> RequestFault:
        """Answer the next `count` matching requests with `status` (409, 429 + Retry-After, 500, ...).
        Discovery and other non-resource requests match on `path` (and verb "get").
        ``probability``: fail each matching request with this chance (`count` counts failures).
        ``after_commit``: do what a resource request asks, then answer `status` (a lost answer).
        ``simulation``: the simulated cluster's requests match too. ``user``: only this user's
        (``system:serviceaccount:<ns>:<name>`` for a pod run as a process) match."""
        if status == 429 and retry_after is None:
            retry_after = 1
        rule = RequestFault(
            status,
            0.0,
            count,
            verb,
            resource,
            namespace,
            name,
            retry_after,
            message,
            path,
            probability,
            after_commit,
            simulation,
            user,
        )
        self.rules.append(rule)
        return rule

    def fail_mix(
        self,
        statuses: tuple[int, ...],
        probability: float,
        *,
        retry_after: int = 1,
        user: str | None = None,
        simulation: bool = False,
    ) -> RequestFault:
        """Fail each request (reads, watches and writes alike) with ``probability``, its status drawn
        among ``statuses`` (409 for writes only; 429 with ``retry_after``), until cleared."""
        rule = RequestFault(
            None,
            count=None,
            retry_after=retry_after,
            probability=probability,
            simulation=simulation,
            user=user,
            statuses=statuses,
        )
        self.rules.append(rule)
        return rule

    def delay(
        self,
        seconds: float,
        count: int | None = None,
        *,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        path: str | None = None,
        simulation: bool = False,
    ) -> RequestFault:
        """Add `seconds` of latency to matching requests."""
        rule = RequestFault(
            None, seconds, count, verb, resource, namespace, name, path=path, simulation=simulation
        )
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()
        self.resume_watches()

    def take(self, info: RequestInfo, user: str = "") -> tuple[float, ApiError | None, ApiError | None]:
        """The latency, the error to answer instead of acting and the error to answer after acting
        (`after_commit`), for one request by ``user`` (consuming counted rules)."""
        latency, error = 0.0, None
        after = False
        for rule in list(self.rules):
            if not rule.matches(info, user):
                continue
            if rule.probability < 1.0 and self.random.random() >= rule.probability:
                continue  # spared this time
            latency += rule.latency
            status = rule.drawn_status(info, self.random)
            if error is None and status is not None:
                error, after = rule.error(status), rule.after_commit
            if rule.count is not None:
                rule.count -= 1
                if rule.count <= 0:
                    self.rules.remove(rule)
            if error is not None:
                break
        return (latency, None, error) if after else (latency, error, None)

    @staticmethod
    async def answer(lost: ApiError | None, response: Awaitable[_Answer]) -> _Answer:
        """``response``, carried out; then ``lost`` instead of it when the answer is to be lost."""
        result = await response
        if lost is not None:
            raise lost
        return result

    def _signal(self, action: str, resource: str | None, simulation: bool) -> int:
        hit = 0
        for coll in self.registry.store.collections.values():
            if resource is None or resource in (coll.rt.plural, coll.rt.qualified):
                for watcher in list(coll.watchers):
                    if simulation or watcher.user != SIMULATION:
                        watcher.signal(action)
                        hit += 1
        return hit

    def drop_watches(self, resource: str | None = None, *, simulation: bool = False) -> int:
        """Abort open watch connections (the client sees a broken stream). Returns how many."""
        return self._signal("drop", resource, simulation)

    def stall_watches(self, resource: str | None = None, *, simulation: bool = False) -> int:
        """Keep open watches connected but silent (no events, no bookmarks) until resumed."""
        return self._signal("stall", resource, simulation)

    def resume_watches(self, resource: str | None = None, *, simulation: bool = True) -> int:
        """Let stalled watches flow again (by default the simulated cluster's too)."""
        return self._signal("resume", resource, simulation)

    @contextmanager
    def watches_stalled(self, resource: str) -> Iterator[int]:
        """`stall_watches` of ``resource`` (how many) for the block, resumed after it."""
        try:
            yield self.stall_watches(resource)
        finally:
            self.resume_watches(resource)

    def expire_watches(self, resource: str | None = None, *, simulation: bool = False) -> int:
        """Send an in-stream 410 Expired ERROR event to open watches, then close them."""
        return self._signal("expire", resource, simulation)

    def compact(self, resource: str | None = None) -> None:
        """Forget watch history: watches and continues from older resourceVersions get 410."""
        for rt in list(self.registry.types.values()):
            if resource is None or resource in (rt.plural, rt.qualified):
                self.registry.compact(rt)

    def apply(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The HTTP form: `{"action": "fail"|"delay"|"dropWatches"|..., ...}` (see the README)."""
        action = spec.get("action")
        where = {k: spec.get(k) for k in ("verb", "resource", "namespace", "name", "path")}
        simulation = bool(spec.get("simulation", action == "resumeWatches"))
        if action == "fail":
            self.fail(
                int(spec["status"]),
                spec.get("count", 1),
                retry_after=spec.get("retryAfter"),
                message=spec.get("message"),
                probability=float(spec.get("probability", 1.0)),
                after_commit=bool(spec.get("afterCommit", False)),
                simulation=simulation,
                user=spec.get("user"),
                **where,
            )
        elif action == "failMix":
            self.fail_mix(
                tuple(int(x) for x in spec["statuses"]),
                float(spec["probability"]),
                retry_after=int(spec.get("retryAfter", 1)),
                user=spec.get("user"),
                simulation=simulation,
            )
        elif action == "delay":
            self.delay(float(spec["seconds"]), spec.get("count"), simulation=simulation, **where)
        elif action in ("dropWatches", "stallWatches", "resumeWatches", "expireWatches"):
            method = {
                "dropWatches": self.drop_watches,
                "stallWatches": self.stall_watches,
                "resumeWatches": self.resume_watches,
                "expireWatches": self.expire_watches,
            }[action]
            return {"watches": method(spec.get("resource"), simulation=simulation)}
        elif action == "compact":
            self.compact(spec.get("resource"))
        elif action == "clear":
            self.clear()
        else:
            raise ApiError(400, f"unknown fault action {action!r}")
        return {"rules": len(self.rules)}
