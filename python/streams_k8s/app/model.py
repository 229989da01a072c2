"""The logical model of a Streams application, as read from its ADL.

No XML in here. The classes are the native core's (the ADL is parsed there and the model made
without a Python constructor per object): frozen, with read-only attributes, compared and hashed
by value. Python code makes only placements, partitions and host pools (a replicated node's own);
the rest comes from :func:`streams_k8s.app.adl.parse_adl`. Indices are the ADL's own (``index``
attributes), which are unique across primitive and composite operator instances.
"""

from __future__ import annotations

from enum import StrEnum

from streams_k8s._native import (
    AdlConsistentRegion,
    AdlExport,
    AdlHostPool,
    AdlImport,
    AdlParallelRegion,
    Annotation,
    Application,
    Checkpointing,
    Composite,
    CompositePort,
    CustomMetric,
    ExportProperty,
    HostPlacement,
    InputPort,
    Operator,
    OperatorDefinition,
    OutputPort,
    Partitions,
    PortRef,
    RuntimeConstant,
    Splitter,
    SubmissionTimeValue,
    ThreadedPort,
    ToolkitRef,
    TupleType,
)

__all__ = [
    "AdlConsistentRegion",
    "AdlExport",
    "AdlHostPool",
    "AdlImport",
    "AdlParallelRegion",
    "Annotation",
    "Application",
    "Checkpointing",
    "Composite",
    "CompositePort",
    "CustomMetric",
    "ExportProperty",
    "HostPlacement",
    "InputPort",
    "Operator",
    "OperatorDefinition",
    "OperatorKind",
    "OutputPort",
    "Partitions",
    "PortRef",
    "RuntimeConstant",
    "Splitter",
    "SplitterKind",
    "SubmissionTimeValue",
    "ThreadedPort",
    "ToolkitRef",
    "TupleType",
]


class OperatorKind(StrEnum):
    PRIMITIVE = "primitive"
    IMPORT = "import"
    EXPORT = "export"


class SplitterKind(StrEnum):
    ROUND_ROBIN = "RoundRobin"
    HASH = "Hash"
    BROADCAST = "Broadcast"
