"""Import and Export: publish/subscribe of streams between jobs."""

from typing import Annotated, ClassVar, Final, Literal

from pydantic import Field

from streams_k8s.api.base import PrinterColumn, Resource, Status, WireModel
from streams_k8s.api.spec_values import ExportType

# Where a stream goes in or out: the job (its id), PE and PE port.
_PORT_COLUMNS = (
    PrinterColumn(name="Job-ID", type="integer", json_path=".spec.jobId"),
    PrinterColumn(name="PE", type="integer", json_path=".spec.peId"),
    PrinterColumn(name="Port", type="integer", json_path=".spec.portId"),
)
MAX_LISTED_CONNECTIONS: Final = 20  # a status stays small however many jobs subscribe

# Whom the subscription board connected it to (`controller.pubsub.board`), as the operator last wrote it.
_CONNECTION_COLUMNS = (
    PrinterColumn(
        name="Connections",
        type="integer",
        json_path=".status.connectionCount",
        description="Ports of other jobs it exchanges the stream with.",
    ),
    PrinterColumn(
        name="Connected-To",
        type="string",
        json_path=".status.connectedTo",
        description="The jobs and streams (or importing operators) at the other end.",
    ),
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


class StreamConnection(WireModel):
    """The Export or Import at the other end of one connection of the subscription board."""

    name: str
    job: str
    job_id: Annotated[int, Field(ge=0)]
    pe_id: Annotated[int, Field(ge=0)]
    port_id: Annotated[int, Field(ge=0)]


class ConnectionStatus(Status):
    """What the subscription board connected an Export or Import to (`connections` lists the first
    `MAX_LISTED_CONNECTIONS`; `connectionCount` counts them all)."""

    connections: list[StreamConnection] = Field(default_factory=list, max_length=MAX_LISTED_CONNECTIONS)
    connection_count: Annotated[int, Field(ge=0)] | None = None
    connected_to: str | None = None


class ImportStatus(ConnectionStatus):
    streams: str | None = Field(
        None, description="What it imports: the stream names it asks for, or its subscription."
    )


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
        *_CONNECTION_COLUMNS,
    )

    kind: Literal["Export"] = "Export"
    spec: ExportSpec
    status: ConnectionStatus | None = None


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
            name="Streams",
            type="string",
            json_path=".status.streams",
            description="The stream names it imports by name, or its subscription expression.",
        ),
        PrinterColumn(
            name="Filter",
            type="string",
            json_path=".spec.streams.filter",
            description="Tuple filter expression.",
        ),
        *_CONNECTION_COLUMNS,
    )

    kind: Literal["Import"] = "Import"
    spec: ImportSpec
    status: ImportStatus | None = None
