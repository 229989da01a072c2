"""Streams name resolution: label formats, the per-job name table, and a resolver."""

from streams_k8s.naming.labels import (
    PE_PORT_BASE,
    LabelError,
    OperatorPortLabel,
    PePortLabel,
    pe_service_name,
)
from streams_k8s.naming.resolver import Endpoint, NameNotFound, Resolution, Resolver
from streams_k8s.naming.table import TABLE_KEY, NameTable, NameTableError

__all__ = [
    "PE_PORT_BASE",
    "TABLE_KEY",
    "Endpoint",
    "LabelError",
    "NameNotFound",
    "NameTable",
    "NameTableError",
    "OperatorPortLabel",
    "PePortLabel",
    "Resolution",
    "Resolver",
    "pe_service_name",
]
