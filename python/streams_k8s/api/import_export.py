"""Import and Export: publish/subscribe of streams between jobs."""

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from streams_k8s.api.base import PrinterColumn, Resource, Status, WireModel
from streams_k8s.api.spec_values import ExportType

# Where a stream goes in or out: the job (its id), PE and PE port.
_PORT_COLUMNS = (
    PrinterColumn(name="Job-ID", type="integer", json_path=".spec.jobId"),
    PrinterColumn(name="PE", type="integer", json_path=".spec.peId"),
    PrinterColumn(name="Port", type="integer", json_path=".spec.portId"),
)


class StreamProperty(WireModel):
    name: Annotated[str, Field(min_length=1)]
    type: str
    values: list[str] = Field(default_factory=list)


class ExportedStream(WireModel):
    name: str | None = None
    properties: list[StreamProperty] | None = None
    export_oper_name: str
    allow_filter: bool = True
    congestion_policy: str | None = None


class ExportSpec(WireModel):
    job_id: Annotated[int, Field(ge=0)]
    pe_id: Annotated[int, Field(ge=0)]
    port_id: Annotated[int, Field(ge=0)]
    type: ExportType
    stream: ExportedStream


class Export(Resource):
    kind_name: ClassVar[str] = "Export"
    plural: ClassVar[str] = "streamsexports"
    singular: ClassVar[str] = "streamsexport"
    short_names: ClassVar[tuple[str, ...]] = ("stx",)
    description: ClassVar[str] = "A stream a PE output port exports to other jobs."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        *_PORT_COLUMNS,
        PrinterColumn(name="Type", type="string", json_path=".spec.type"),
        PrinterColumn(
            name="Stream",
            type="string",
            json_path=".spec.stream.name",
            description="Stream name (exports by name).",
        ),
        PrinterColumn(name="Operator", type="string", json_path=".spec.stream.exportOperName"),
    )

    kind: Literal["Export"] = "Export"
    spec: ExportSpec
    status: Status | None = None


class NameBasedImport(WireModel):
    application_name: str
    import_oper_name: str
    stream_name: str
    application_scope: str | None = None


class PropertyBasedImport(WireModel):
    subscription: str
    import_oper_name: str
    index: Annotated[int, Field(ge=0)]
    application_scope: str | None = None


class ImportedStreams(WireModel):
    name_based_imports: dict[str, NameBasedImport] = Field(default_factory=dict)
    property_based_import: PropertyBasedImport | None = None
    filter: str | None = None


class ImportSpec(WireModel):
    job_id: Annotated[int, Field(ge=0)]
    pe_id: Annotated[int, Field(ge=0)]
    port_id: Annotated[int, Field(ge=0)]
    port_index: Annotated[int, Field(ge=0)]
    streams: ImportedStreams


class Import(Resource):
    kind_name: ClassVar[str] = "Import"
    plural: ClassVar[str] = "streamsimports"
    singular: ClassVar[str] = "streamsimport"
    short_names: ClassVar[tuple[str, ...]] = ("sti",)
    description: ClassVar[str] = "Streams a PE input port imports from other jobs."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        *_PORT_COLUMNS,
        PrinterColumn(
            name="Subscription",
            type="string",
            json_path=".spec.streams.propertyBasedImport.subscription",
            description="Subscription expression (imports by properties).",
        ),
        PrinterColumn(
            name="Filter",
            type="string",
            json_path=".spec.streams.filter",
            description="Tuple filter expression.",
        ),
    )

    kind: Literal["Import"] = "Import"
    spec: ImportSpec
    status: Status | None = None
