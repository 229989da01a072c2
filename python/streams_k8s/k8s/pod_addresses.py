"""Pods indexed by IP address, from a pod informer: who sent a request, by its source address (or,
for a request presenting a token bound to a pod, by the pod's name: `bound`).

A server that trusts requests from certain pods (the PE pods of a job) looks their peer address
up here instead of scanning the cache per request. Terminated pods (phase Succeeded or Failed)
are left out: the kubelet has released their address, which another pod may hold already.
Several live pods can share one address (host-network pods share their node's), so a lookup
answers all of them and the caller decides.
"""

from __future__ import annotations

from collections import defaultdict

from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key

_TERMINATED = ("Succeeded", "Failed")


def peer_address(peer: str) -> str:
    """The address as pods list it: an IPv4 peer on a dual-stack socket is ``::ffff:a.b.c.d``."""
    return peer.removeprefix("::ffff:")


def pod_addresses(pod: Object) -> set[str]:
    """The addresses a live pod holds (none once it terminated)."""
    status = pod.get("status") or {}
    if status.get("phase") in _TERMINATED:
        return set()
    ips = {status.get("podIP"), *(i.get("ip") for i in status.get("podIPs") or () if isinstance(i, dict))}
    return {ip for ip in ips if isinstance(ip, str) and ip}


class PodsByAddress:
    def __init__(self, informer: Informer) -> None:
        self._store = informer.store
        self._by_address: dict[str, dict[ObjectKey, Object]] = defaultdict(dict)
        informer.add_handler(self._on_event)
        for pod in informer.store.select():
            self._on_event("add", None, pod)

    def _on_event(self, kind: str, old: Object | None, new: Object | None) -> None:
        if old is not None:
            key = object_key(old)
            for address in pod_addresses(old):
                pods = self._by_address.get(address)
                if pods is not None:
                    pods.pop(key, None)
                    if not pods:
                        del self._by_address[address]
        if kind != "delete" and new is not None:
            key = object_key(new)
            for address in pod_addresses(new):
                self._by_address[address][key] = new

    def at(self, address: str) -> list[Object]:
        """The live pods at this address (a peer address as the socket gives it)."""
        return list(self._by_address.get(peer_address(address), {}).values())

    def namespace_at(self, address: str) -> str | None:
        """The namespace of the live pods at this address, when they are all of one."""
        found = {str(meta(pod).get("namespace")) for pod in self.at(address)}
        return found.pop() if len(found) == 1 else None

    def bound(self, namespace: str, name: str, uid: str) -> Object | None:
        """The live pod a token is bound to: of that name and uid (the pod of that name now may be
        another one), not terminated."""
        pod = self._store.get(ObjectKey(namespace, name))
        if pod is None or meta(pod).get("uid") != uid:
            return None
        return pod if (pod.get("status") or {}).get("phase") not in _TERMINATED else None
