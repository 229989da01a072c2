"""The writes that bring a job's children to a target plan, which every change of a running job
(an edit, a width change, a rollback) makes (`jobs.rollout`, `jobs.following`): a PE's ConfigMap
before its spec, so no pod starts with one PE's old content and new settings or the reverse; the
name table; Exports and Imports following the PE ports with what the runtime edited in them;
ConsistentRegions following the fusion. A child the API server refuses for what it is raises
`ChildRefused`.

Every write is idempotent. Unchanged PEs are not touched, so their pods keep running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Collection, Mapping, Sequence
from typing import Any

from streams_k8s.api.contract import (
    JOB_LABEL,
    NAME_TABLE_KEY,
)
from streams_k8s.controller.children.desired import Desired
from streams_k8s.controller.children.limits import REFUSED, refused
from streams_k8s.controller.jobs.keeping import CREATE_CONCURRENCY
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, EXPORTS, IMPORTS, PES
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.k8s.objects import Object, merge_patch_to, meta
from streams_k8s.naming.table import undated


class ChildRefused(Exception):
    """The API server refused a child of the target plan for what it is (400, 413, 422): the
    change cannot be finished as planned (a width change goes back: `jobs.rollout`)."""

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

    await at_once(*(one(n) for n in names))


async def at_once(*writes: Awaitable[None]) -> None:
    """``writes`` concurrently; the first error raised once all have ended (a refusal first)."""
    results = await asyncio.gather(*writes, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise next((e for e in errors if isinstance(e, JobFailure)), errors[0])


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
