"""Streams name resolution: label formats, the per-job name table, and a resolver."""

from streams_k8s.naming.labels import LabelError, OperatorPortLabel, PePortLabel
from streams_k8s.naming.resolver import Endpoint, NameNotFound, Resolution, Resolver
from streams_k8s.naming.table import NameTable, NameTableError, render_name_table

__all__ = [
    "Endpoint",
    "LabelError",
    "NameNotFound",
    "NameTable",
    "NameTableError",
    "OperatorPortLabel",
    "PePortLabel",
    "Resolution",
    "Resolver",
    "render_name_table",
]
