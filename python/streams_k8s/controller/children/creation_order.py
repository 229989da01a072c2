"""In what order a job's missing children are created: each once what it needs exists.

A PE's pod needs its PE's ConfigMap and Service and the job's shared children (the name table, the
transport Secret, host pools, regions, ...), so a ProcessingElement is created after those; the
shared children keep their kinds' order among themselves; a PE's ConfigMap and Service need
nothing. Creating kind after kind instead, each kind waited for its slowest create: under an API
server that fails a share of requests (429 with Retry-After, 5xx retried with backoff), every
kind's batch took seconds for the unluckiest few of its objects, one kind after another.
"""

from __future__ import annotations

from collections.abc import Sequence

from streams_k8s.api.contract import PE_LABEL
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.kinds import PES


def _pe_of(child: Desired) -> str | None:
    """The PE a child is made for (its ConfigMap, Service, ProcessingElement), None for the job's."""
    return (child.body["metadata"].get("labels") or {}).get(PE_LABEL)


def creation_waits(children: Sequence[Desired]) -> list[list[int]]:
    """For each of ``children`` (in their order, `desired_objects`'), the indexes of those it is
    created after (see the module docs)."""
    shared = [i for i, c in enumerate(children) if c.resource != PES and _pe_of(c) is None]
    kinds = list(dict.fromkeys(children[i].resource for i in shared))
    own: dict[str, list[int]] = {}
    for i, child in enumerate(children):
        if child.resource != PES and (pe := _pe_of(child)) is not None:
            own.setdefault(pe, []).append(i)
    waits: list[list[int]] = []
    for child in children:
        if child.resource == PES:
            waits.append([*shared, *own.get(_pe_of(child) or "", [])])
        elif _pe_of(child) is None:
            earlier = kinds[: kinds.index(child.resource)]
            waits.append([i for i in shared if children[i].resource in earlier])
        else:
            waits.append([])
    return waits
