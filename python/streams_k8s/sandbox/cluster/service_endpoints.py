"""Each Service's EndpointSlices, from an informer: where a Service's name leads, as a pod's DNS
and kube-proxy see it (slices labelled ``kubernetes.io/service-name``, whoever manages them).

Subscribers hear which Service's endpoints changed (the PE runtime looks again at the PEs that
resolve through it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams_k8s.k8s.informer import EventType, Informer
from streams_k8s.k8s.objects import Object, meta

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
ServiceKey = tuple[str, str]  # (namespace, service name)


def _service_of(obj: Object | None) -> str | None:
    if obj is None:
        return None
    name = (meta(obj).get("labels") or {}).get(SERVICE_NAME_LABEL)
    return str(name) if name else None


class ServiceEndpoints:
    def __init__(self, slices: Informer) -> None:
        self._slices: dict[ServiceKey, dict[str, Object]] = {}
        self._subscribers: list[Callable[[ServiceKey], None]] = []
        slices.add_handler(self._on_event)
        for obj in slices.store.select():
            self._on_event("add", None, obj)

    def subscribe(self, changed: Callable[[ServiceKey], None]) -> None:
        self._subscribers.append(changed)

    def _on_event(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        obj = new if new is not None else old
        if obj is None:
            return
        ns, name = str(meta(obj).get("namespace") or ""), str(meta(obj).get("name") or "")
        before, after = _service_of(old), _service_of(new) if kind != "delete" else None
        if before and before != after:
            held = self._slices.get((ns, before), {})
            held.pop(name, None)
            if not held:
                self._slices.pop((ns, before), None)
            self._changed((ns, before))
        if after and new is not None:
            self._slices.setdefault((ns, after), {})[name] = new
            self._changed((ns, after))

    def _changed(self, key: ServiceKey) -> None:
        for subscriber in self._subscribers:
            subscriber(key)

    def ready(self, namespace: str, service: str) -> list[str]:
        """The addresses of the Service's ready endpoints (IPv4 slices, by slice name)."""
        return [
            str(endpoint["addresses"][0])
            for _, endpoint_slice in sorted(self._slices.get((namespace, service), {}).items())
            if endpoint_slice.get("addressType", "IPv4") == "IPv4"
            for endpoint in endpoint_slice.get("endpoints") or []
            if endpoint.get("addresses") and (endpoint.get("conditions") or {}).get("ready") is not False
        ]

    def target_port(self, namespace: str, service: Object, port: int) -> int:
        """Where the Service's ``port`` leads on its endpoints (its target port, a named one as the
        slices resolved it); ``port`` itself when the Service does not declare it."""
        declared: dict[str, Any] | None = next(
            (p for p in (service.get("spec") or {}).get("ports") or [] if p.get("port") == port), None
        )
        if declared is None:
            return port
        target = declared.get("targetPort", port)
        if isinstance(target, int):
            return target
        named = {
            p.get("name"): p.get("port")
            for s in self._slices.get((namespace, str(meta(service).get("name"))), {}).values()
            for p in s.get("ports") or []
        }
        found = named.get(declared.get("name"))
        return int(found) if isinstance(found, int) else port
