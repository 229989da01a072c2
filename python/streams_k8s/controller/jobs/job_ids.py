"""Numeric job ids: unique per namespace and never reused, across controller restarts.

The next free id lives in the ConfigMap `streams-job-ids` of the namespace (key `next`), advanced
with an optimistic-concurrency replace, so two writers never hand out the same id. The id is
persisted there before any Job records it; an id allocated by a controller that died before
writing it into the Job's status is simply skipped. Ids already held by Jobs are a floor, so a
deleted counter resumes above them instead of starting again at 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS

COUNTER_NAME = "streams-job-ids"
COUNTER_KEY = "next"
_ATTEMPTS = 20


class JobIdError(RuntimeError):
    """The id counter cannot be advanced (contended or corrupt beyond repair)."""


def _next_of(counter: dict[str, Any]) -> int:
    raw = str((counter.get("data") or {}).get(COUNTER_KEY, "0"))
    return int(raw) if raw.isdecimal() else 0


async def allocate_job_id(client: KubeClient, namespace: str, taken: Iterable[int] = ()) -> int:
    """A fresh id for a Job of ``namespace``, above every id in ``taken``."""
    floor = max(taken, default=-1) + 1
    for _ in range(_ATTEMPTS):
        try:
            counter = await client.get(CONFIGMAPS, COUNTER_NAME, namespace)
        except ApiError as err:
            if not err.not_found:
                raise
            fresh = {
                "metadata": {
                    "name": COUNTER_NAME,
                    "namespace": namespace,
                    "labels": {"app.kubernetes.io/managed-by": "streams-k8s"},
                },
                "data": {COUNTER_KEY: str(floor + 1)},
            }
            try:
                await client.create(CONFIGMAPS, fresh)
            except ApiError as create_err:
                if create_err.conflict:
                    continue  # another writer created it first: read theirs
                raise
            return floor
        job_id = max(_next_of(counter), floor)
        counter.setdefault("data", {})[COUNTER_KEY] = str(job_id + 1)
        try:
            await client.replace(CONFIGMAPS, counter)
        except ApiError as err:
            if err.conflict:
                continue  # someone advanced it meanwhile: read again
            raise
        return job_id
    raise JobIdError(f"could not advance {namespace}/{COUNTER_NAME} after {_ATTEMPTS} conflicting attempts")
