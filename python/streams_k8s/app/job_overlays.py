"""Streams job configuration overlays (`streamtool submitjob -g overlay.json`), as a Job's settings.

A Streams overlay file is ``{"jobConfigOverlays": [{"jobConfig": {...}, "deploymentConfig": {...}}],
"comment": "..."}``. What it sets that a Job has, it maps onto the Job:

| overlay field | Job |
|---|---|
| `jobConfig.jobName` | `metadata.name` |
| `jobConfig.submissionParameters` `[{name, value}]` | `spec.submissionTimeValues` |
| `jobConfig.dataDirectory` | `spec.processingElement.dataPath` |
| `jobConfig.tracing` (`error` ... `trace`, `off`) | `spec.processingElement.appTraceLevel` |
| `deploymentConfig.fusionScheme` (`automatic`, `legacy`, `manual`) | `spec.fusion` |
| `deploymentConfig.fusionTargetPeCount` (manual) | `spec.fusion.manual` |
| `deploymentConfig.parallelRegionConfig.fusionType` | `spec.fusion.type` |
| `deploymentConfig.threadingModel`, `dynamicThreadingThreadCount`, `...Elastic` | `spec.threadingModel` |

Anything else is refused, naming the field (and, for the fields Streams has, why it means nothing
here): an overlay setting that were silently dropped would run a job other than the one asked for.
Plain records, no model: `streams-k8s plan -g` loads no pydantic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streams_k8s.api.spec_values import FusionMode, FusionType, ThreadingMode
from streams_k8s.app.fusion import FusionChoice

# Fields Streams has that mean nothing on Kubernetes, and why.
_NO_MEANING = {
    "jobConfig.jobGroup": "who may do what to a job is the namespace's RBAC here, not a Streams job group",
    "jobConfig.preloadApplicationBundles": "PE pods fetch the bundle from the operator when they start",
    "deploymentConfig.placementScheme": "kube-scheduler places the PE pods (honouring the ADL's host "
    "pools and placement constraints)",
    "operatorConfigs": "per-operator overlays are not applied by streams-k8s",
    "configInstructions": "configuration instructions are not applied by streams-k8s",
}
_TRACE_LEVELS = ("off", "error", "warn", "info", "debug", "trace")  # the PE template's appTraceLevel


class OverlayError(ValueError):
    """An overlay that cannot be applied; the message names the field."""


@dataclass(frozen=True, slots=True)
class ThreadingChoice:
    """An overlay's threading model (as `app.plan.Threading`)."""

    mode: ThreadingMode
    thread_count: int | None = None
    elastic: bool | None = None

    def to_wire(self) -> dict[str, Any]:
        if self.mode is not ThreadingMode.DYNAMIC:
            return {self.mode.value: True}
        dynamic: dict[str, Any] = {}
        if self.thread_count is not None:
            dynamic["threadCount"] = self.thread_count
        if self.elastic is not None:
            dynamic["elastic"] = self.elastic
        return {"dynamic": dynamic}


@dataclass(frozen=True, slots=True)
class JobOverlay:
    job_name: str | None = None
    submission_values: dict[str, str] = field(default_factory=dict)
    fusion: FusionChoice | None = None
    threading: ThreadingChoice | None = None
    data_directory: str | None = None
    trace_level: str | None = None

    def spec_patch(self) -> dict[str, Any]:
        """What the overlay sets of a Job's spec (wire names), to merge over the spec."""
        spec: dict[str, Any] = {}
        if self.submission_values:
            spec["submissionTimeValues"] = dict(self.submission_values)
        if self.fusion is not None:
            fusion: dict[str, Any] = {}
            if self.fusion.mode is FusionMode.MANUAL:
                fusion["manual"] = self.fusion.manual
            elif self.fusion.mode is FusionMode.LEGACY:
                fusion["legacy"] = True
            else:
                fusion["automatic"] = True
            if self.fusion.type is not None:
                fusion["type"] = self.fusion.type.value
            spec["fusion"] = fusion
        if self.threading is not None:
            spec["threadingModel"] = self.threading.to_wire()
        pe: dict[str, Any] = {}
        if self.data_directory is not None:
            pe["dataPath"] = self.data_directory
        if self.trace_level is not None:
            pe["appTraceLevel"] = self.trace_level.upper()
        if pe:
            spec["processingElement"] = pe
        return spec


def read_overlay(document: Any) -> JobOverlay:
    """The settings of an overlay document (parsed JSON); `OverlayError` naming the first field
    that cannot be applied."""
    top = _object(document, "the overlay document")
    _known(top, "", {"jobConfigOverlays", "comment"})
    overlays = top.get("jobConfigOverlays", [])
    if not isinstance(overlays, list):
        raise OverlayError("jobConfigOverlays: must be a list of overlays")
    if len(overlays) > 1:
        raise OverlayError("jobConfigOverlays: has more than one overlay; Streams applies one, so does this")
    if not overlays:
        return JobOverlay()
    overlay = _object(overlays[0], "jobConfigOverlays[0]")
    _known(overlay, "", {"jobConfig", "deploymentConfig"})
    job = _object(overlay.get("jobConfig", {}), "jobConfig")
    _known(job, "jobConfig.", {"jobName", "submissionParameters", "dataDirectory", "tracing"})
    deployment = _object(overlay.get("deploymentConfig", {}), "deploymentConfig")
    allowed = {"fusionScheme", "fusionTargetPeCount", "parallelRegionConfig", "threadingModel"}
    _known(
        deployment, "deploymentConfig.", allowed | {"dynamicThreadingThreadCount", "dynamicThreadingElastic"}
    )
    tracing = _text(job, "tracing", "jobConfig.")
    if tracing is not None and tracing.lower() not in _TRACE_LEVELS:
        raise OverlayError(f"jobConfig.tracing: '{tracing}' is none of {', '.join(_TRACE_LEVELS)}")
    return JobOverlay(
        job_name=_text(job, "jobName", "jobConfig."),
        submission_values=_parameters(job.get("submissionParameters", [])),
        fusion=_fusion(deployment),
        threading=_threading(deployment),
        data_directory=_text(job, "dataDirectory", "jobConfig."),
        trace_level=tracing,
    )


def read_overlay_file(path: Path) -> JobOverlay:
    """The overlay in the JSON file ``path``."""
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise OverlayError(f"{path.name} is not JSON: {err}") from None
    return read_overlay(document)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is no count


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise OverlayError(f"{where}: must be a JSON object")
    return value


def _known(obj: Mapping[str, Any], prefix: str, allowed: set[str]) -> None:
    for key in obj:
        if key in allowed:
            continue
        path = f"{prefix}{key}"
        why = _NO_MEANING.get(path)
        raise OverlayError(f"{path}: {why}" if why else f"{path}: unknown field, not applied by streams-k8s")


def _text(obj: Mapping[str, Any], key: str, prefix: str) -> str | None:
    value = obj.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise OverlayError(f"{prefix}{key}: must be a non-empty string")
    return value


def _parameters(value: Any) -> dict[str, str]:
    if not isinstance(value, list):
        raise OverlayError("jobConfig.submissionParameters: must be a list of {name, value}")
    values = {}
    for index, item in enumerate(value):
        where = f"jobConfig.submissionParameters[{index}]"
        entry = _object(item, where)
        _known(entry, f"{where}.", {"name", "value"})
        name, given = entry.get("name"), entry.get("value")
        if not isinstance(name, str) or not name or not isinstance(given, str | int | float | bool):
            raise OverlayError(f"{where}: needs a name and a value")
        values[name] = str(given).lower() if isinstance(given, bool) else str(given)
    return values


def _fusion(deployment: Mapping[str, Any]) -> FusionChoice | None:
    scheme = deployment.get("fusionScheme")
    count = deployment.get("fusionTargetPeCount")
    region = _object(deployment.get("parallelRegionConfig", {}), "deploymentConfig.parallelRegionConfig")
    _known(region, "deploymentConfig.parallelRegionConfig.", {"fusionType"})
    if scheme is None and count is None and not region:
        return None
    modes = [m.value for m in FusionMode]
    if scheme is not None and scheme not in modes:
        raise OverlayError(f"deploymentConfig.fusionScheme: '{scheme}' is none of {', '.join(modes)}")
    mode = FusionMode(scheme) if scheme is not None else FusionMode.MANUAL if count else FusionMode.AUTOMATIC
    if count is not None and (mode is not FusionMode.MANUAL or not _whole(count) or count < 1):
        raise OverlayError(
            "deploymentConfig.fusionTargetPeCount: a PE count (1 or more) of fusionScheme manual"
        )
    if mode is FusionMode.MANUAL and count is None:
        raise OverlayError("deploymentConfig.fusionScheme: manual needs fusionTargetPeCount")
    kind = region.get("fusionType")
    types = [t.value for t in FusionType]
    if kind is not None and kind not in types:
        raise OverlayError(
            f"deploymentConfig.parallelRegionConfig.fusionType: '{kind}' is none of {', '.join(types)}"
        )
    return FusionChoice(mode, manual=count, type=FusionType(kind) if kind is not None else None)


def _threading(deployment: Mapping[str, Any]) -> ThreadingChoice | None:
    model = deployment.get("threadingModel")
    count = deployment.get("dynamicThreadingThreadCount")
    elastic = deployment.get("dynamicThreadingElastic")
    if model is None and count is None and elastic is None:
        return None
    modes = [m.value for m in ThreadingMode]
    if model not in modes:
        raise OverlayError(f"deploymentConfig.threadingModel: '{model}' is none of {', '.join(modes)}")
    if (count is not None or elastic is not None) and model != ThreadingMode.DYNAMIC.value:
        raise OverlayError("deploymentConfig.dynamicThreadingThreadCount: only with threadingModel dynamic")
    if count is not None and (not _whole(count) or count < 1):
        raise OverlayError("deploymentConfig.dynamicThreadingThreadCount: a thread count, 1 or more")
    if elastic is not None and not isinstance(elastic, bool):
        raise OverlayError("deploymentConfig.dynamicThreadingElastic: true or false")
    return ThreadingChoice(ThreadingMode(model), count, elastic)
