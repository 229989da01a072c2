"""Where one client's requests went in a sandbox run: the figures a fault benchmark prints next to
its time (watches opened and failed, lists, reads and writes, answers by status, the seconds of
Retry-After they were told to wait, Events)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from streams_k8s.sandbox.server import RequestRecord

_WRITES = frozenset({"create", "update", "patch", "delete"})


def request_split(records: Iterable[RequestRecord], user: str) -> dict[str, Any]:
    """The requests ``user`` made, split by what they were and how they were answered."""
    mine = [r for r in records if r.user == user and r.info is not None]
    verbs = Counter(r.info.verb for r in mine if r.info is not None)
    failed = Counter(r.info.verb for r in mine if r.info is not None and r.status >= 400)
    statuses = Counter(r.status for r in mine if r.status in (409, 429, 500))
    writes = sum(n for verb, n in verbs.items() if verb in _WRITES)
    start = min((r.time for r in mine), default=0.0)
    write_times = [r.time - start for r in mine if r.info is not None and r.info.verb in _WRITES]
    return {
        # from its first request: the caches' sync gates the first write
        "first_write_at": round(min(write_times, default=0.0), 2),
        "last_write_at": round(max(write_times, default=0.0), 2),
        "requests": len(mine),
        "watches": verbs["watch"],
        "watches_failed": failed["watch"],
        "lists": verbs["list"],
        "lists_failed": failed["list"],
        "gets": verbs["get"],
        "writes": writes,
        "writes_failed": sum(n for verb, n in failed.items() if verb in _WRITES),
        "answered": {str(s): n for s, n in sorted(statuses.items())},
        "retry_after_seconds": statuses[429],  # each 429 said Retry-After: 1
        "events": sum(1 for r in mine if r.info is not None and r.info.resource == "events"),
    }
