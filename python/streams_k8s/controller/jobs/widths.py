"""Parallel-region width changes of a running job: re-fuse, then update only what changed.

A ParallelRegion's ``spec.width`` is the width wanted (kubectl edit, ``kubectl scale``, or the
REST API); its ``status.width`` the width applied. Every plan is re-fused from the submitted
plan (`plan_at_widths(base, widths)`), so the same widths always give the same PEs, whatever
the history and however often the controller restarts. A change is applied in this order:

1. write-ahead: the region's condition ``Resized=False`` (reason ``Resizing``) records the job
   generation the change becomes (``generationId`` + 1), then the Job's ``generationId`` is set
   to it; a restart finds the condition and reuses that generation;
2. added PEs get their ConfigMap, Service and PE; changed PEs a new AADL ConfigMap and PE spec
   (new contentId: their pods are replaced); removed PEs are deleted; the name table rewritten;
   ConsistentRegions the change alters get their new spec (what the running plan named and the
   new one does not removed; the others, and what the user set on them, left as they are);
   Exports and Imports follow the PE ports (created, replaced, deleted) with what the runtime
   edited in them (export properties, import subscriptions and filters);
3. the region's ``status.width`` / ``selector`` and ``Resized=True`` say it is applied.

A width that cannot be planned or placed, or whose objects the cluster would not accept
(`children.limits`), changes nothing; one whose objects the API server refuses in step 2
(`ChildRefused`) is applied back to the running plan. Either way ``Resized=False`` (reason
``ResizeFailed``) and a Warning Event say why, until the region's spec is edited again.

Every step is idempotent. Unchanged PEs are not touched, so their pods keep running.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streams_k8s.api.contract import (
    JOB_LABEL,
    NAME_TABLE_KEY,
    SVC_LABEL,
    pe_service_name,
)
from streams_k8s.app.plan import Plan
from streams_k8s.app.plan_diff import PlanDiff, diff_plans
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.children.limits import REFUSED, refused
from streams_k8s.controller.jobs.keeping import CREATE_CONCURRENCY
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, EXPORTS, IMPORTS, PARALLEL_REGIONS, PES
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, SERVICES
from streams_k8s.k8s.objects import Object, merge_patch_to, meta
from streams_k8s.naming.table import undated

RESIZED = "Resized"
RESIZING, FAILED = "Resizing", "ResizeFailed"
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


def failed(region: Object) -> bool:
    """This width cannot be applied (fixed by another edit of the region)."""
    return _resized(region, FAILED) is not None


def pending_generation(region: Object) -> int | None:
    """The job generation a change in progress on this region was given (write-ahead)."""
    found = _resized(region, RESIZING)
    match = _GENERATION.search(str(found.get("message"))) if found else None
    return int(match.group(1)) if match else None


@dataclass(frozen=True, slots=True)
class WidthChange:
    job: Object
    region: Object
    running: Plan
    target: Plan
    # every child of the target plan, labelled with the new generation (a PE the change leaves keeps
    # its children as they run: `children.desired.Rendered`)
    desired: list[Desired]
    generation: int
    running_desired: list[Desired]  # every child of the running plan: what the change undoes

    @property
    def diff(self) -> PlanDiff:
        return diff_plans(self.running, self.target)


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
    """Step 1 (write-ahead): the job generation this change becomes."""
    return await _set_resized(
        client, region, "False", RESIZING, f"to width {width} as job generation {generation}"
    )


class ChildRefused(Exception):
    """The API server refused a child of the target plan for what it is (400, 413, 422): the
    change cannot be finished as planned (the job controller applies the running plan back)."""

    def __init__(self, child: Desired, error: ApiError) -> None:
        super().__init__(str(error))
        self.child = child
        self.failure = refused(child, error)


async def _write(child: Desired, call: Awaitable[Any]) -> None:
    try:
        await call
    except ApiError as err:
        if err.status in REFUSED:
            raise ChildRefused(child, err) from err
        raise


async def apply(client: KubeClient, change: WidthChange) -> None:
    """Step 2: bring the children to the target plan (idempotent); `ChildRefused` if the API
    server will not take one of them."""
    namespace, job = str(meta(change.job)["namespace"]), str(meta(change.job)["name"])
    diff = change.diff
    wanted = {(d.resource, d.name): d for d in change.desired}
    before = {(d.resource, d.name): d for d in change.running_desired}
    added = {pe_service_name(job, i) for i in diff.added}
    changed = {pe_service_name(job, i) for i in [*diff.replaced, *diff.updated]}
    for resource in (CONFIGMAPS, SERVICES, PES):
        for name in sorted(added):
            child = wanted[(resource, name)]
            await _write(child, client.create_if_absent(resource, child.body))
    # what the running plan set and the target does not (a re-fused PE's placement) is removed
    running = {name: before[(PES, name)].body for name in changed if (PES, name) in before}
    await patch_pes(client, wanted, namespace, sorted(changed), current=running)
    for pe_id in diff.removed:
        for resource in (PES, SERVICES, CONFIGMAPS):
            await client.delete_if_present(resource, pe_service_name(job, pe_id), namespace)
    await follow_ports(client, wanted, namespace, job)
    await write_name_table(client, wanted, namespace, job)
    await follow_regions(client, wanted, namespace, before)


def name_table_written(live: Object | None, wanted: Desired) -> bool:
    """The job's ConfigMap ``live`` holds the wanted name table: its date line aside (a table
    rewritten only to move it would have every PE pod's mounted copy updated)."""
    if live is None:
        return False
    have = (live.get("data") or {}).get(NAME_TABLE_KEY, "")
    return undated(have) == undated(wanted.body["data"][NAME_TABLE_KEY])


async def write_name_table(
    client: KubeClient, wanted: Mapping[tuple[Resource, str], Desired], namespace: str, job: str
) -> None:
    """The job's ConfigMap: its name table (the transport pair is the job's Secret's: an earlier
    release's pair in the ConfigMap is moved by `retire_config_map_transport`)."""
    table = wanted[(CONFIGMAPS, job)]
    patch = {NAME_TABLE_KEY: table.body["data"][NAME_TABLE_KEY]}
    await _write(table, client.patch(CONFIGMAPS, job, {"data": patch}, namespace))


async def follow_regions(
    client: KubeClient,
    wanted: Mapping[tuple[Resource, str], Desired],
    namespace: str,
    planned_before: Mapping[tuple[Resource, str], Desired] | None = None,
    kinds: tuple[Resource, ...] = (CONSISTENT_REGIONS,),
) -> None:
    """Each ConsistentRegion's PEs follow the fusion (and, of other ``kinds``, the plan): its planned
    spec is written (only where it differs from ``planned_before``, the plan that runs, when given:
    what the user or the coordinator changed in a region the new plan leaves as it was is kept; and
    what the running plan names that the new one does not, e.g. a dropped channel's operators in a
    region's start and trigger maps, is removed)."""
    for (resource, name), child in wanted.items():
        if resource not in kinds:
            continue
        before = planned_before.get((resource, name)) if planned_before is not None else None
        if before is None:
            await _write(child, client.patch(resource, name, {"spec": child.body["spec"]}, namespace))
        elif before.body["spec"] != child.body["spec"]:
            patch = {"spec": merge_patch_to(before.body["spec"], child.body["spec"])}
            await _write(child, client.patch(resource, name, patch, namespace))


async def patch_pe(
    client: KubeClient,
    wanted: Mapping[tuple[Resource, str], Desired],
    namespace: str,
    name: str,
    content: bool = True,
    current: Object | None = None,
) -> None:
    """A PE's AADL ConfigMap (when its ``content`` changed), then the PE (so its next pod never
    starts on other content). Given the ``current`` PE, what the wanted spec lacks is removed from
    it (a setting the edit unsets or narrows), except the PE's own restart nonce."""
    if content:
        cm = wanted[(CONFIGMAPS, name)]
        patch = {"metadata": _merge_meta(cm.body), "data": cm.body["data"]}
        await _write(cm, client.patch(CONFIGMAPS, name, patch, namespace))
    pe = wanted[(PES, name)]
    spec = pe.body["spec"]
    if current is not None:
        spec = merge_patch_to(without_own_settings(current["spec"]), spec)
    patch = {"metadata": _merge_meta(pe.body), "spec": spec}
    await _write(pe, client.patch(PES, name, patch, namespace))


async def patch_pes(
    client: KubeClient,
    wanted: Mapping[tuple[Resource, str], Desired],
    namespace: str,
    names: Sequence[str],
    content: Collection[str] | None = None,
    current: Mapping[str, Object] | None = None,
) -> None:
    """`patch_pe` for each PE of ``names``, a bounded number at a time (one after the other, a
    100-PE upgrade waited seconds for its 200 writes); ``content``: those whose AADL changed (all
    when None). The first error is raised once every patch has ended."""
    slots = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def one(name: str) -> None:
        async with slots:
            changed = content is None or name in content
            await patch_pe(client, wanted, namespace, name, changed, (current or {}).get(name))

    results = await asyncio.gather(*(one(n) for n in names), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise errors[0]


def without_own_settings(spec: dict[str, Any]) -> dict[str, Any]:
    """A PE spec without what the user sets on the PE itself (its own restart nonce)."""
    return {k: v for k, v in spec.items() if k != "restartNonce"}


# What the PE runtime edits through the REST API (`pubsub.api`): it belongs to the operators,
# so it follows them to whichever PE port the re-fusion gives them.
_EDITABLE = {EXPORTS: "stream", IMPORTS: "streams"}


def _operators(resource: Resource, spec: dict[str, Any]) -> tuple[str, ...]:
    """The Export operator, or the Import operators, an Export or Import is for."""
    if resource == EXPORTS:
        return (str(spec["stream"]["exportOperName"]),)
    streams = spec["streams"]
    names = [str(i["importOperName"]) for i in (streams.get("nameBasedImports") or {}).values()]
    if streams.get("propertyBasedImport"):
        names.append(str(streams["propertyBasedImport"]["importOperName"]))
    return tuple(sorted(names))


async def follow_ports(
    client: KubeClient,
    wanted: Mapping[tuple[Resource, str], Desired],
    namespace: str,
    job: str,
    planned_before: Mapping[tuple[Resource, str], Desired] | None = None,
) -> None:
    """The job's Exports and Imports are those of the target plan's PE ports, keeping what the
    runtime edited (export properties, import subscriptions and filters), unless the application
    itself changed it (given ``planned_before``, the plan that runs: an upgraded bundle's own)."""
    for resource, editable in _EDITABLE.items():
        items, _ = await client.list_all(resource, namespace, label_selector=f"{JOB_LABEL}={job}")
        existing = {str(meta(o)["name"]): o for o in items}
        edited = {_operators(resource, o["spec"]): o["spec"][editable] for o in items}
        before = {
            _operators(resource, d.body["spec"]): d.body["spec"][editable]
            for (kind, _), d in (planned_before or {}).items()
            if kind == resource
        }
        for (kind, name), child in wanted.items():
            if kind != resource:
                continue
            spec = dict(child.body["spec"])
            operators = _operators(resource, spec)
            if planned_before is None or before.get(operators) == spec[editable]:
                spec[editable] = edited.get(operators, spec[editable])
            current = existing.pop(name, None)
            if current is None:
                await _write(child, client.create_if_absent(resource, {**child.body, "spec": spec}))
            elif current.get("spec") != spec or _labels_differ(current, child.body):
                # replaced, not merged: keys the target lacks (name-based imports) must go
                body = {**current, "spec": spec}
                body["metadata"] = {**current["metadata"], **_merge_meta(child.body)}
                await _write(child, client.replace(resource, body))
        for name in existing:
            await client.delete_if_present(resource, name, namespace)


def _labels_differ(current: Object, body: dict[str, Any]) -> bool:
    return bool(meta(current).get("labels") != body["metadata"]["labels"])


def _merge_meta(body: dict[str, Any]) -> dict[str, Any]:
    return {"labels": body["metadata"]["labels"], "annotations": body["metadata"]["annotations"]}


async def record_failure(client: KubeClient, region: Object, message: str) -> None:
    """The wanted width cannot be applied: nothing was changed; the region keeps its width."""
    await _set_resized(client, region, "False", FAILED, message)


async def record_applied(client: KubeClient, region: Object, width: int) -> None:
    """Step 3: the region runs at ``width``."""
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
