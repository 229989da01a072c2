"""The subscription board: which PE ports exchange streams between jobs, from the Export and Import
objects of one namespace (the instance) and the jobs that exist there.

An Import port subscribes to an Export port when

- by name: the export is `ByName`, its stream name is one of the import's `nameBasedImports`
  stream names, and that entry's `applicationName` / `applicationScope`, when set, equal the
  export's `streams.ibm.com/applicationName` / `applicationScope` annotations;
- by properties: the export is `ByProperties`, the import's `applicationScope`, when set, equals
  the export's scope, and the subscription expression (`subscription_expression`) holds over the
  export's properties;

and, when the import has a filter, the export allows filters. Objects of a job that does not exist
(or is being deleted) take no part. An Import whose subscription does not parse matches nothing
by properties (its name-based imports still do); `Board.invalid` says why, by Import name.

The board of a PE is the document the PE runtime reads (``GET /api/subscriptions/job/{job}/pe/{pe}``
and the UDP notifications), one key per Export/Import object of the PE (`<job>-<pe>-<port>`):

    {"exports": {<export>: {"portId": N, "entries": {<import>: {"jobId", "peId", "portId",
                                                                "portIndex", "filter"}}}},
     "imports": {<import>: {"portId": N, "entries": {<export>: {"jobId", "peId", "portId"}}}}}
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from streams_k8s.api.contract import APPLICATION_NAME_ANNOTATION, APPLICATION_SCOPE_ANNOTATION, JOB_LABEL
from streams_k8s.api.import_export import Export, Import
from streams_k8s.api.spec_values import ExportType
from streams_k8s.app.subscription_expression import (
    Subscription,
    SubscriptionError,
    Value,
    parse_subscription,
    property_values,
)
from streams_k8s.k8s.objects import Object, meta

log = logging.getLogger(__name__)

PeKey = tuple[str, int]  # (job name, PE id)


@dataclass(frozen=True, slots=True)
class _Endpoint:
    name: str  # the object's name, `<job>-<pe>-<port>`
    job: str
    app_name: str | None
    app_scope: str | None


@dataclass(frozen=True, slots=True, eq=False)  # compared (and hashed) by identity
class _Published:
    at: _Endpoint
    export: Export
    values: dict[str, Value]  # typed properties, parsed once


@dataclass(frozen=True, slots=True)
class _Subscribed:
    at: _Endpoint
    import_: Import
    subscription: Subscription | None


@dataclass(frozen=True, slots=True)
class OtherEnd:
    """The Export or Import at the other end of a connection, and how a person would name it."""

    name: str
    job: str
    job_id: int
    pe_id: int
    port_id: int
    label: str  # `job/stream` (an export), `job/operator` (an import)


@dataclass(slots=True)
class Board:
    """Board documents by PE; `connections`: Export or Import name → its other ends; `invalid`:
    Import name → why its subscription cannot be used."""

    documents: dict[PeKey, dict[str, Any]] = field(default_factory=dict)
    connections: dict[str, list[OtherEnd]] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)

    def document(self, job: str, pe: int) -> dict[str, Any]:
        return self.documents.get((job, pe)) or empty_document()


def empty_document() -> dict[str, Any]:
    return {"exports": {}, "imports": {}}


def _endpoint(obj: Object) -> _Endpoint | None:
    m = meta(obj)
    job = (m.get("labels") or {}).get(JOB_LABEL)
    if not job:
        return None
    notes = m.get("annotations") or {}
    return _Endpoint(
        str(m["name"]),
        str(job),
        notes.get(APPLICATION_NAME_ANNOTATION),
        notes.get(APPLICATION_SCOPE_ANNOTATION),
    )


def _matches(exp: _Published, imp: _Subscribed) -> bool:
    streams, stream = imp.import_.spec.streams, exp.export.spec.stream
    if streams.filter and not stream.allow_filter:
        return False
    if exp.export.spec.type is ExportType.BY_NAME:
        return any(
            entry.stream_name == stream.name
            and (not entry.application_name or entry.application_name == exp.at.app_name)
            and (not entry.application_scope or entry.application_scope == exp.at.app_scope)
            for entry in streams.name_based_imports.values()
        )
    wanted = streams.property_based_import
    if wanted is None or imp.subscription is None:
        return False
    if wanted.application_scope and wanted.application_scope != exp.at.app_scope:
        return False
    return imp.subscription.matches(exp.values)


def compute_board(exports: Iterable[Object], imports: Iterable[Object], jobs: Iterable[str]) -> Board:
    """The board of one namespace: its Exports, Imports and the names of its live jobs."""
    live = set(jobs)
    board = Board()
    published: list[_Published] = []
    for obj in exports:
        at = _endpoint(obj)
        if at is None or at.job not in live:
            continue
        try:
            export = Export.from_wire(obj)
            published.append(_Published(at, export, property_values(export.spec.stream.properties or [])))
        except ValidationError as err:
            log.warning("Export %s ignored: %s", at.name, err)
    subscribed: list[_Subscribed] = []
    for obj in imports:
        at = _endpoint(obj)
        if at is None or at.job not in live:
            continue
        try:
            import_ = Import.from_wire(obj)
        except ValidationError as err:
            log.warning("Import %s ignored: %s", at.name, err)
            continue
        subscription = None
        wanted = import_.spec.streams.property_based_import
        if wanted is not None:
            try:
                subscription = parse_subscription(wanted.subscription)
            except SubscriptionError as err:
                board.invalid[at.name] = f"subscription {wanted.subscription!r}: {err}"
        subscribed.append(_Subscribed(at, import_, subscription))

    for exp in published:
        doc = board.documents.setdefault((exp.at.job, exp.export.spec.pe_id), empty_document())
        doc["exports"][exp.at.name] = {"portId": exp.export.spec.port_id, "entries": {}}
    for imp in subscribed:
        doc = board.documents.setdefault((imp.at.job, imp.import_.spec.pe_id), empty_document())
        doc["imports"][imp.at.name] = {"portId": imp.import_.spec.port_id, "entries": {}}
    by_stream: dict[str | None, list[_Published]] = {}
    for exp in published:
        named = exp.export.spec.type is ExportType.BY_NAME
        by_stream.setdefault(exp.export.spec.stream.name if named else None, []).append(exp)
    for imp in subscribed:
        streams = imp.import_.spec.streams
        candidates = [
            e for entry in streams.name_based_imports.values() for e in by_stream.get(entry.stream_name, ())
        ]
        if imp.subscription is not None:
            candidates += by_stream.get(None, [])
        for exp in dict.fromkeys(candidates):  # each export once, in a stable order
            if not _matches(exp, imp):
                continue
            exporter = exp.export.spec
            importer = imp.import_.spec
            board.documents[(exp.at.job, exporter.pe_id)]["exports"][exp.at.name]["entries"][imp.at.name] = {
                "jobId": importer.job_id,
                "peId": importer.pe_id,
                "portId": importer.port_id,
                "portIndex": importer.port_index,
                "filter": importer.streams.filter,
            }
            board.documents[(imp.at.job, importer.pe_id)]["imports"][imp.at.name]["entries"][exp.at.name] = {
                "jobId": exporter.job_id,
                "peId": exporter.pe_id,
                "portId": exporter.port_id,
            }
            board.connections.setdefault(exp.at.name, []).append(_other_end(imp))
            board.connections.setdefault(imp.at.name, []).append(_other_end(exp))
    return board


def _other_end(end: _Published | _Subscribed) -> OtherEnd:
    if isinstance(end, _Published):
        exporter, stream = end.export.spec, end.export.spec.stream
        where = (exporter.job_id, exporter.pe_id, exporter.port_id)
        label = stream.name or stream.export_oper_name
    else:
        importer, streams = end.import_.spec, end.import_.spec.streams
        where = (importer.job_id, importer.pe_id, importer.port_id)
        wanted = streams.property_based_import
        names = [entry.import_oper_name for entry in streams.name_based_imports.values()]
        label = wanted.import_oper_name if wanted is not None else (names[0] if names else end.at.name)
    return OtherEnd(end.at.name, end.at.job, *where, f"{end.at.job}/{label}")
