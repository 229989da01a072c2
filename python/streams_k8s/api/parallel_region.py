"""ParallelRegion: a parallel region of a job; its width scales like any workload."""

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from streams_k8s.api.base import PrinterColumn, Resource, Status, WireModel
from streams_k8s.api.spec_values import MAX_WIDTH


class ParallelRegionSpec(WireModel):
    index: Annotated[int, Field(ge=0)]
    alias: Annotated[str, Field(min_length=1, description="Logical name, e.g. Result.Region1.")]
    width: Annotated[
        int, Field(ge=1, le=MAX_WIDTH, description="Channel count; edit (or /scale) to change it.")
    ]


class ParallelRegionStatus(Status):
    width: Annotated[int, Field(ge=0)] | None = Field(None, description="Width currently running.")
    selector: str | None = Field(None, description="Label selector of the region's PEs (for /scale).")


class ParallelRegion(Resource):
    kind_name: ClassVar[str] = "ParallelRegion"
    plural: ClassVar[str] = "streamsprs"
    singular: ClassVar[str] = "streamspr"
    short_names: ClassVar[tuple[str, ...]] = ("stpr",)
    description: ClassVar[str] = "A parallel region of a job."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn(name="Alias", type="string", json_path=".spec.alias"),
        PrinterColumn(name="Width", type="integer", json_path=".spec.width"),
        PrinterColumn(name="Running", type="integer", json_path=".status.width"),
    )
    scale_paths: ClassVar[tuple[str, str] | None] = (".spec.width", ".status.width")

    kind: Literal["ParallelRegion"] = "ParallelRegion"
    spec: ParallelRegionSpec
    status: ParallelRegionStatus | None = None
