"""Streams name resolution: label formats, the per-job name table, and a resolver
(`streams_k8s.naming.resolver`, imported on its own: it needs aiohttp, the plan does not)."""

from streams_k8s.naming.labels import LabelError, OperatorPortLabel, PePortLabel
from streams_k8s.naming.table import NameTable, NameTableError, render_name_table

__all__ = [
    "LabelError",
    "NameTable",
    "NameTableError",
    "OperatorPortLabel",
    "PePortLabel",
    "render_name_table",
]
