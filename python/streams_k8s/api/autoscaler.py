"""JobAutoscaler: opt-in width autoscaling of one job's parallel regions (DS2-style).

A separate object naming its Job, as a HorizontalPodAutoscaler names its target: creating one opts
the job in, deleting it opts out, and editing it changes nothing of the job's own spec (no edit,
no upgrade). In ``Recommend`` mode (the default) the operator writes the widths it would set and
why to this object's status and Events; in ``Active`` mode it sets them through each
ParallelRegion's ``/scale`` subresource, as ``kubectl scale`` does.

The CRD refuses what can be checked without the job: a region's ``min`` over its ``max``, a bound
over the width limit, a band that does not hold the target utilisation, a region named twice. A
region the job does not have is reported by the operator (condition ``Valid=False``, a Warning
Event) and nothing is decided until the spec is fixed.
"""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, model_validator

from streams_k8s.api.base import CelRule, PrinterColumn, Resource, Status, WireModel
from streams_k8s.api.spec_values import MAX_WIDTH

HISTORY_SIZE = 10


class AutoscalerMode(StrEnum):
    RECOMMEND = "Recommend"
    ACTIVE = "Active"


class RegionBounds(WireModel):
    cel_rules: ClassVar[tuple[CelRule, ...]] = (
        # either bound may be absent (its default then holds it: 1 <= max, min <= the limit)
        CelRule(
            rule="!has(self.min) || !has(self.max) || self.min <= self.max",
            message="a region's min must not be over its max",
        ),
    )

    alias: Annotated[str, Field(min_length=1, description="The parallel region's alias, e.g. Score.")]
    min: Annotated[int, Field(ge=1, le=MAX_WIDTH)] = 1
    max: Annotated[int, Field(ge=1, le=MAX_WIDTH)] = MAX_WIDTH

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.min > self.max:
            raise ValueError(f"region {self.alias}: min {self.min} is over max {self.max}")
        return self


Fraction = Annotated[float, Field(gt=0, le=1)]


class JobAutoscalerSpec(WireModel):
    cel_rules: ClassVar[tuple[CelRule, ...]] = (
        CelRule(
            rule="(has(self.lowUtilization) ? self.lowUtilization : 0.6) <= "
            "(has(self.targetUtilization) ? self.targetUtilization : 0.8) && "
            "(has(self.targetUtilization) ? self.targetUtilization : 0.8) <= "
            "(has(self.highUtilization) ? self.highUtilization : 0.9)",
            message="the band must hold the target: lowUtilization <= targetUtilization <= highUtilization",
        ),
    )

    job: Annotated[
        str, Field(min_length=1, description="The Job (in this namespace) whose regions it sizes.")
    ]
    mode: AutoscalerMode = AutoscalerMode.RECOMMEND
    target_utilization: Fraction = 0.8
    low_utilization: Fraction = Field(
        0.6, description="Under it (for scaleDownDelaySeconds) a region shrinks."
    )
    high_utilization: Fraction = Field(0.9, description="Over it a region grows at once.")
    interval_seconds: Annotated[int, Field(ge=5)] = Field(30, description="Length of each metrics window.")
    stabilization_seconds: Annotated[int, Field(ge=0)] = Field(60, description="No decision after a change.")
    scale_down_delay_seconds: Annotated[int, Field(ge=0)] = 300
    regions: list[RegionBounds] = Field(
        default_factory=list,
        description="Bounds per region; a region not listed is bounded by 1 and the width limit.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["alias"]},
    )

    @model_validator(mode="after")
    def _band(self) -> Self:
        if not self.low_utilization <= self.target_utilization <= self.high_utilization:
            raise ValueError(
                "the band must hold the target: lowUtilization <= targetUtilization <= highUtilization"
            )
        aliases = [r.alias for r in self.regions]
        if len(set(aliases)) != len(aliases):
            raise ValueError("a region is named twice in regions")
        return self


class AutoscalerDecision(WireModel):
    time: datetime
    action: Annotated[str, Field(description="scaled, recommended, delivered or not delivered")]
    widths: dict[str, int] = Field(default_factory=dict)
    reason: str = ""


class JobAutoscalerStatus(Status):
    widths: dict[str, int] = Field(default_factory=dict, description="The regions' widths it last saw.")
    recommendation: dict[str, int] = Field(default_factory=dict, description="The widths it would set.")
    reasons: list[str] = Field(default_factory=list, description="Why, from the last window.")
    last_window: datetime | None = None
    history: list[AutoscalerDecision] = Field(
        default_factory=list, max_length=HISTORY_SIZE, description="The last decisions, oldest first."
    )


class JobAutoscaler(Resource):
    kind_name: ClassVar[str] = "JobAutoscaler"
    plural: ClassVar[str] = "streamsjobautoscalers"
    singular: ClassVar[str] = "streamsjobautoscaler"
    short_names: ClassVar[tuple[str, ...]] = ("stas",)
    description: ClassVar[str] = "Width autoscaling of a job's parallel regions (DS2-style), opt-in per job."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn(name="Job", type="string", json_path=".spec.job"),
        PrinterColumn(name="Mode", type="string", json_path=".spec.mode"),
        PrinterColumn(name="Target", type="number", json_path=".spec.targetUtilization"),
    )

    kind: Literal["JobAutoscaler"] = "JobAutoscaler"
    spec: JobAutoscalerSpec
    status: JobAutoscalerStatus | None = None
