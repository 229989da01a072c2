"""What the API server answered a client, read from its audit log (components.AUDIT_POLICY): the
judge of "no write of ours is refused" on a real cluster."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Answers a well-behaved controller gets in normal operation: a lost race (409 Conflict /
# AlreadyExists), an object already gone (404), a watch resumed from an expired version (410), the
# server asking to slow down (429).
EXPECTED = frozenset({404, 409, 410, 429})
# Two more that refuse nothing, told by their message: a conditional JSON patch whose `test` failed
# (a lost race too; the server says no more than this, where a refused value names its field), and
# a request its client gave up on (a renewal abandoned at its deadline, a process stopped).
_NOT_REFUSALS = {
    422: "the server rejected our request due to an error in our request",
    500: "context canceled",
}


@dataclass(frozen=True)
class Answer:
    user: str
    verb: str
    uri: str
    code: int
    message: str

    def __str__(self) -> str:
        return f"{self.code} {self.verb} {self.uri} ({self.user}): {self.message}"


def _answer(event: dict[str, Any]) -> Answer:
    status = event.get("responseStatus") or {}
    return Answer(
        str((event.get("user") or {}).get("username", "")),
        str(event.get("verb", "")),
        str(event.get("requestURI", "")),
        int(status.get("code", 0)),
        str(status.get("message", "")),
    )


def answers(log: Path, users: Collection[str]) -> Iterator[Answer]:
    """Every completed request of `users`, in the log's order."""
    if not log.exists():
        return
    with log.open() as lines:
        for line in lines:
            event = json.loads(line)
            if event.get("stage") != "ResponseComplete":
                continue
            if (event.get("user") or {}).get("username") in users:
                yield _answer(event)


def refused(log: Path, users: Collection[str], expected: Collection[int] = EXPECTED) -> list[Answer]:
    """The requests of `users` the API server refused with a 4xx or 5xx it should not have to."""
    return [
        a
        for a in answers(log, users)
        if a.code >= 400 and a.code not in expected and _NOT_REFUSALS.get(a.code) != a.message
    ]
