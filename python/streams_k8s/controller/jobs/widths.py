"""The widths of a job's ParallelRegions and what each region reports of its width changes.

A ParallelRegion's ``spec.width`` is the width wanted (kubectl edit, ``kubectl scale``, the REST
API, the JobAutoscaler); its ``status.width`` the width applied. A width change is a change of the
job like an edit (`jobs.resizing`), written ahead in the Job's ``status.upgrade``; the region only
reports it: ``Resized=False`` (reason ``Resizing``, "to width W as job generation N") while it is
applied, ``Resized=True`` with ``status.width`` and ``selector`` once it runs, ``Resized=False``
(reason ``ResizeFailed``) when it cannot be applied, until the region's spec is edited again.

The release before wrote a width change ahead in that ``Resizing`` condition alone
(`pending_generation` reads it back): a change it left under way is finished by this one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from streams_k8s.api.contract import JOB_LABEL, SVC_LABEL
from streams_k8s.controller.kinds import PARALLEL_REGIONS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.objects import Object, meta

RESIZED = "Resized"
RESIZING, RESIZE_FAILED = "Resizing", "ResizeFailed"
_GENERATION = re.compile(r"job generation (\d+)")


def widths_of(regions: list[Object]) -> tuple[dict[str, int], dict[str, int | None]]:
    """(wanted, applied) width by alias."""
    wanted = {str(r["spec"]["alias"]): int(r["spec"]["width"]) for r in regions}
    applied = {str(r["spec"]["alias"]): (r.get("status") or {}).get("width") for r in regions}
    return wanted, applied


def applied_widths(base: Mapping[str, int], regions: list[Object]) -> dict[str, int]:
    """The width each region of a plan at ``base`` widths runs at: its ParallelRegion's applied
    width, the plan's until one is recorded."""
    _, recorded = widths_of(regions)
    return {alias: recorded.get(alias) or width for alias, width in base.items()}


def _resized(region: Object, reason: str) -> dict[str, Any] | None:
    """The region's Resized=False condition with this reason, for its current spec."""
    generation = meta(region).get("generation")
    for c in (region.get("status") or {}).get("conditions") or ():
        if (
            c.get("type") == RESIZED
            and c.get("status") == "False"
            and c.get("reason") == reason
            and c.get("observedGeneration") == generation
        ):
            return dict(c)
    return None


def width_change_note(start: Mapping[str, int], target: Mapping[str, int]) -> str:
    """What a width change does: "R to width 4"."""
    return ", ".join(f"{alias} to width {w}" for alias, w in sorted(target.items()) if start.get(alias) != w)


def failed(region: Object) -> bool:
    """This width cannot be applied (fixed by another edit of the region)."""
    return _resized(region, RESIZE_FAILED) is not None


def pending_generation(region: Object) -> int | None:
    """The job generation a change under way on this region was given (the report, and the
    write-ahead of the release before)."""
    found = _resized(region, RESIZING)
    match = _GENERATION.search(str(found.get("message"))) if found else None
    return int(match.group(1)) if match else None


async def _set_resized(
    client: KubeClient, region: Object, status: str, reason: str, message: str, **fields: Any
) -> Object:
    """Write the region's Resized condition (and ``fields``) for its current spec."""
    conditions = list((region.get("status") or {}).get("conditions") or [])
    generation = meta(region).get("generation")
    set_condition(conditions, RESIZED, status, reason, message, generation)
    return await client.patch_status(
        PARALLEL_REGIONS,
        str(meta(region)["name"]),
        {**fields, "conditions": conditions},
        str(meta(region)["namespace"]),
    )


async def record_intent(client: KubeClient, region: Object, generation: int, width: int) -> Object:
    """The change to ``width`` is under way as job ``generation``."""
    return await _set_resized(
        client, region, "False", RESIZING, f"to width {width} as job generation {generation}"
    )


async def record_failure(client: KubeClient, region: Object, message: str) -> None:
    """The wanted width cannot be applied: the region keeps the width it runs at."""
    await _set_resized(client, region, "False", RESIZE_FAILED, message)


async def record_applied(client: KubeClient, region: Object, width: int) -> None:
    """The region runs at ``width``."""
    job = (meta(region).get("labels") or {}).get(JOB_LABEL)
    await _set_resized(
        client,
        region,
        "True",
        "Resized",
        f"running at width {width}",
        width=width,
        selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe",
        observedGeneration=meta(region).get("generation"),
    )
