"""The share of API requests that failed lately, and whether the API server counts as failing.

A failure is a request without a usable answer: no answer at all (connection refused, reset,
timed out), 429 or 5xx. Other answers (404, 409, 422, ...) are the API server working. Requests
are counted in one-second buckets over the last ``window`` seconds; the ratio counts only once
``min_requests`` were made (a few failures of an idle operator say little).

The API server counts as failing from the moment the share reaches the budget until it falls
below half of it (`next_api_server_state`): the state is said in a log line when it changes, in
the health answers' warnings and in the metrics; never in readiness, which says whether the pod can
serve what its Service carries (the PEs' REST API and bundle repository answer from the caches).
"""

from __future__ import annotations

import time
from collections import deque
from enum import Enum


def is_failure(status: int) -> bool:
    return status in (0, 429) or status >= 500


class ApiErrorRate:
    """Requests and failures over a sliding window (see the module docs)."""

    def __init__(self, window: float = 60.0, min_requests: int = 20) -> None:
        self.window = window
        self.min_requests = min_requests
        self._buckets: deque[list[int]] = deque()  # [second, requests, failures]

    def record(self, status: int, now: float | None = None) -> None:
        second = int(now if now is not None else time.monotonic())
        if not self._buckets or self._buckets[-1][0] != second:
            self._buckets.append([second, 0, 0])
        bucket = self._buckets[-1]
        bucket[1] += 1
        bucket[2] += is_failure(status)
        self._prune(second)

    def _prune(self, second: int) -> None:
        while self._buckets and self._buckets[0][0] <= second - self.window:
            self._buckets.popleft()

    def counts(self, now: float | None = None) -> tuple[int, int]:
        """(requests, failures) in the window."""
        self._prune(int(now if now is not None else time.monotonic()))
        return sum(b[1] for b in self._buckets), sum(b[2] for b in self._buckets)

    def ratio(self, now: float | None = None) -> float:
        """Failed share of the window's requests; 0 below ``min_requests``."""
        requests, failures = self.counts(now)
        return failures / requests if requests >= self.min_requests else 0.0


class ApiServerState(Enum):
    ANSWERING = "answering"
    FAILING = "failing"


def next_api_server_state(state: ApiServerState, ratio: float, budget: float) -> ApiServerState:
    """FAILING once the failed share reaches ``budget``; ANSWERING again below half of it (a share
    that hovers at the budget does not flip the state, and its log line, every few seconds)."""
    if ratio >= budget:
        return ApiServerState.FAILING
    if ratio < budget / 2:
        return ApiServerState.ANSWERING
    return state
