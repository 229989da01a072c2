"""The cyclic garbage collector while a sandbox runs (and in the operator's process, which holds
its informers' caches the same way: `cli.run`).

A sandbox holds its stored objects, their watch history and their past versions: millions of
JSON maps and lists that are never mutated and can hold no reference cycle, and every write
allocates thousands more. With the default thresholds (a young collection every 700
allocations, a full one every 100 young ones once the heap has grown by a quarter) the full
collections walking that heap took ~40 % of the sandbox's CPU at 3,000 PEs (6 s of 15 s) and
paused the API server, its watches and its simulated cluster for up to a second each. While any
sandbox of the process runs, a young collection waits for `YOUNG_COLLECTION` allocations
instead, so full collections come ~70 times less often; the thresholds are put back when the last
one stops.
"""

from __future__ import annotations

import gc

YOUNG_COLLECTION = 50_000

_running = 0
_saved: tuple[int, int, int] | None = None


def hold() -> None:
    """A sandbox starts: collect young objects less often (once per process, however many run)."""
    global _running, _saved
    if _running == 0:
        _saved = gc.get_threshold()
        gc.set_threshold(max(_saved[0], YOUNG_COLLECTION), _saved[1], _saved[2])
    _running += 1


def release() -> None:
    """A sandbox stops: the thresholds it found, once no other sandbox of the process runs."""
    global _running, _saved
    _running = max(_running - 1, 0)
    if _running == 0 and _saved is not None:
        gc.set_threshold(*_saved)
        _saved = None
