"""Notification wire format between the coordinator and the PE runtime (fixed by the runtime).

The runtime pulls its notifications over HTTP (``GET /api/consistentregion/pe/{pe}``) and gets
UDP datagrams on port 10001 as push hints. Both carry the same JSON document,
``{"<regionIndex>":{"type":"<type>","message":"<message>"}}``, compact as Jackson writes it.
The runtime reads datagrams into a 128-byte buffer and does not survive a truncated one, so a
datagram carries exactly one region and is never longer than that buffer (anything else reaches
the runtime through its 5-second HTTP poll). Messages themselves are produced by the native FSM.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from streams_k8s.consistent.fsm import NotificationType, Notify

MAX_DATAGRAM_BYTES = 128


class WireError(ValueError):
    """A notification document that does not have the runtime's shape."""


def encode_entry(note: Notify) -> bytes:
    """One region's entry: the body of ``GET /pe/{pe}/region/{r}``."""
    return orjson.dumps({"type": note.type.value, "message": note.message})


def encode_board(entries: Mapping[int, Notify]) -> bytes:
    """All regions of one PE: the body of ``GET /pe/{pe}`` (regions in index order)."""
    doc = {str(r): {"type": n.type.value, "message": n.message} for r, n in sorted(entries.items())}
    return orjson.dumps(doc)


def encode_datagram(region_index: int, note: Notify) -> bytes:
    """The UDP hint for one region. Every FSM notification fits (the worst case, a u32 region
    index and u64 sequence ids, is 119 bytes); anything larger is refused, never truncated."""
    data = encode_board({region_index: note})
    if len(data) > MAX_DATAGRAM_BYTES:
        raise WireError(f"a {len(data)}-byte datagram exceeds the runtime's {MAX_DATAGRAM_BYTES}-byte buffer")
    return data


def decode_board(data: bytes | str) -> dict[int, Notify]:
    """Parses a board document (HTTP body or datagram) as the runtime would, but strictly."""
    try:
        doc: Any = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise WireError(f"not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise WireError("a notification document is a JSON object keyed by region index")
    out: dict[int, Notify] = {}
    for key, entry in doc.items():
        if not key.isdigit():
            raise WireError(f"region key {key!r} is not a region index")
        out[int(key)] = _decode_entry(entry, where=f"region {key}")
    return out


def _decode_entry(entry: Any, where: str) -> Notify:
    if not isinstance(entry, dict) or set(entry) != {"type", "message"}:
        raise WireError(f"{where}: expected exactly the keys 'type' and 'message'")
    kind, message = entry["type"], entry["message"]
    if not isinstance(message, str):
        raise WireError(f"{where}: message must be a string")
    try:
        return Notify(NotificationType(kind), message)
    except ValueError:
        raise WireError(f"{where}: unknown notification type {kind!r}") from None


def message_values(message: str) -> list[str]:
    """The runtime's positional reading of a message: split on ';', keep what follows the
    first '='. ``pendCkpt`` (third value of resumeSubmission) is true iff its value is '1'."""
    return [part.partition("=")[2] for part in message.split(";")]


class NotificationBoard:
    """The latest notification per (PE, region), served to PEs over HTTP."""

    def __init__(self) -> None:
        self._board: dict[int, dict[int, Notify]] = {}

    def post(self, region_index: int, pes: Iterable[int], note: Notify) -> None:
        for pe in pes:
            self._board.setdefault(pe, {})[region_index] = note

    def clear(self, region_index: int, pes: Iterable[int]) -> None:
        """Forget the region's entry for these PEs (the region became unhealthy)."""
        for pe in pes:
            entries = self._board.get(pe)
            if entries is not None:
                entries.pop(region_index, None)
                if not entries:
                    del self._board[pe]

    def for_pe(self, pe: int) -> dict[int, Notify]:
        """The PE's entries (empty: the HTTP API answers 404)."""
        return dict(self._board.get(pe, {}))

    def entry(self, pe: int, region_index: int) -> Notify | None:
        return self._board.get(pe, {}).get(region_index)
