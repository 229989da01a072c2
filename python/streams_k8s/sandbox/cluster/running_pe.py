"""A started PE as the simulated runtime tracks it: what it read at start, what it depends on,
what it resolved and reported; the runtime's three-state summary of its connections; and the
reverse indexes that find the PEs a change concerns."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from streams_k8s.sandbox.cluster.container_logs import ContainerLog
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity, pe_log
from streams_k8s.sandbox.cluster.pe_wiring import Wiring

FULL, PARTIAL, NONE = "Full", "Partial", "None"

PodKey = tuple[str, str]  # (namespace, pod name)
ServiceKey = tuple[str, str]  # (namespace, service name)
ConfigMapKey = tuple[str, str]  # (namespace, ConfigMap name)
PeKey = tuple[str, str, str]  # (namespace, job, PE id)
K = TypeVar("K", bound=Hashable)


def connectivity(links: list[bool]) -> str:
    """The runtime's three-state summary of its connections."""
    if all(links):
        return FULL
    return NONE if not any(links) else PARTIAL


@dataclass(eq=False)
class RunningPe:
    """A started PE: what it read at start, what it depends on, what it resolved and reported."""

    identity: PeIdentity
    wiring: Wiring | None  # None: no AADL mounted, no static connections
    table_map: str | None  # the name table's ConfigMap
    services: set[ServiceKey] = field(default_factory=set)
    senders: set[PeKey] = field(default_factory=set)
    links: dict[str, str] = field(default_factory=dict)  # connection -> how it resolved (logged on change)
    table_problem: str = ""
    state: str | None = None
    # What the controller holds (its starting value); None: unknown, after a report whose answer
    # was lost (it may have landed), so the next evaluation reports whatever the state is.
    reported: str | None = NONE
    reporting: bool = False
    failing: bool = False

    @property
    def key(self) -> PodKey:
        return (self.identity.namespace, self.identity.pod)

    @property
    def job_name(self) -> str:
        return (self.wiring.job_name if self.wiring is not None else "") or self.identity.job

    def log(self, logs: ContainerLog, text: str) -> None:
        pe_log(logs, self.identity, text)


def file_under(index: dict[K, set[str]], keys: set[K], old: set[K], uid: str) -> None:
    """File `uid` under `keys` in a reverse index, removing it from the `old` ones."""
    for key in old - keys:
        bucket = index.get(key)
        if bucket is not None:
            bucket.discard(uid)
            if not bucket:
                del index[key]
    for key in keys - old:
        index.setdefault(key, set()).add(uid)
