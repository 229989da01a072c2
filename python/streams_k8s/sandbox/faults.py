"""Fault injection on the API server: failing or slow requests, and misbehaving watches.

Request rules match on verb, resource, namespace and name (None matches anything) and apply to
the next `count` matching requests (None: until cleared). Watch faults act on the open watches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

    def matches(self, info: RequestInfo) -> bool:
        return (
            (self.path is None or self.path == info.path)
            and (self.verb is None or self.verb == info.verb)
            and (
                self.resource is None
                or self.resource in (info.resource, f"{info.resource}/{info.subresource}")
            )
            and (self.namespace is None or self.namespace == info.namespace)
            and (self.name is None or self.name == info.name)
        )

    def error(self) -> ApiError:
        assert self.status is not None
        messages = {
            409: "Operation cannot be fulfilled: the object has been modified (injected conflict)",
            429: "Too many requests, please try again later (injected)",
            500: "Internal error (injected)",
        }
        message = self.message or messages.get(self.status, f"injected error {self.status}")
        return ApiError(self.status, message, retry_after=self.retry_after)


class Faults:
    """The fault-injection control of one sandbox."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.rules: list[RequestFault] = []

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
    ) -> RequestFault:
        """Answer the next `count` matching requests with `status` (409, 429 + Retry-After, 500, ...).
        Discovery and other non-resource requests match on `path` (and verb "get")."""
        if status == 429 and retry_after is None:
            retry_after = 1
        rule = RequestFault(status, 0.0, count, verb, resource, namespace, name, retry_after, message, path)
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
    ) -> RequestFault:
        """Add `seconds` of latency to matching requests."""
        rule = RequestFault(None, seconds, count, verb, resource, namespace, name, path=path)
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()
        self.resume_watches()

    def take(self, info: RequestInfo) -> tuple[float, ApiError | None]:
        """The latency and error to apply to one request (consuming counted rules)."""
        latency, error = 0.0, None
        for rule in list(self.rules):
            if not rule.matches(info):
                continue
            latency += rule.latency
            if error is None and rule.status is not None:
                error = rule.error()
            if rule.count is not None:
                rule.count -= 1
                if rule.count <= 0:
                    self.rules.remove(rule)
            if error is not None:
                break
        return latency, error

    def _signal(self, action: str, resource: str | None) -> int:
        hit = 0
        for coll in self.registry.store.collections.values():
            if resource is None or resource in (coll.rt.plural, coll.rt.qualified):
                for watcher in list(coll.watchers):
                    watcher.signal(action)
                    hit += 1
        return hit

    def drop_watches(self, resource: str | None = None) -> int:
        """Abort open watch connections (the client sees a broken stream). Returns how many."""
        return self._signal("drop", resource)

    def stall_watches(self, resource: str | None = None) -> int:
        """Keep open watches connected but silent (no events, no bookmarks) until resumed."""
        return self._signal("stall", resource)

    def resume_watches(self, resource: str | None = None) -> int:
        return self._signal("resume", resource)

    def expire_watches(self, resource: str | None = None) -> int:
        """Send an in-stream 410 Expired ERROR event to open watches, then close them."""
        return self._signal("expire", resource)

    def compact(self, resource: str | None = None) -> None:
        """Forget watch history: watches and continues from older resourceVersions get 410."""
        for rt in list(self.registry.types.values()):
            if resource is None or resource in (rt.plural, rt.qualified):
                self.registry.compact(rt)

    def apply(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The HTTP form: `{"action": "fail"|"delay"|"dropWatches"|..., ...}` (see the README)."""
        action = spec.get("action")
        where = {k: spec.get(k) for k in ("verb", "resource", "namespace", "name", "path")}
        if action == "fail":
            self.fail(
                int(spec["status"]),
                spec.get("count", 1),
                retry_after=spec.get("retryAfter"),
                message=spec.get("message"),
                **where,
            )
        elif action == "delay":
            self.delay(float(spec["seconds"]), spec.get("count"), **where)
        elif action in ("dropWatches", "stallWatches", "resumeWatches", "expireWatches"):
            method = {
                "dropWatches": self.drop_watches,
                "stallWatches": self.stall_watches,
                "resumeWatches": self.resume_watches,
                "expireWatches": self.expire_watches,
            }[action]
            return {"watches": method(spec.get("resource"))}
        elif action == "compact":
            self.compact(spec.get("resource"))
        elif action == "clear":
            self.clear()
        else:
            raise ApiError(400, f"unknown fault action {action!r}")
        return {"rules": len(self.rules)}
