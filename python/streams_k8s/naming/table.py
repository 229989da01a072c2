"""The per-job name table: operator port label → PE port label, as Java properties.

It is the `operator_port_labels.properties` key (`NAME_TABLE_KEY`) of the job's ConfigMap, mounted
in every PE pod at /etc/config/job. The writer (the only one: plans write through it too) produces
exactly what `java.util.Properties.store` wrote for the original runtime; the reader is native and
keeps the table native, so parsing a large table creates no Python objects and each lookup creates
only its answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime

from streams_k8s._native import NameTableIndex, PropertiesError
from streams_k8s.api.contract import NAME_TABLE_HEADER, name_table_stamp
from streams_k8s.naming.labels import OperatorPortLabel, PePortLabel


def render_name_table(entries: Iterable[tuple[object, object]], stamp: str) -> str:
    """The file as `Properties.store(writer, "Operator port labels")` writes it, entries in the
    order given (labels need no escaping); ``stamp`` is the date line (`name_table_stamp`)."""
    lines = [f"#{NAME_TABLE_HEADER}", f"#{stamp}"]
    lines += [f"{key}={value}" for key, value in entries]
    return "\n".join(lines) + "\n"


def undated(text: str) -> str:
    """The file without its date line (the comment under the header comment, as `render_name_table`
    writes them): two tables equal so hold the same lines otherwise, and a PE resolves the same
    through either."""
    lines = text.split("\n", 2)
    if len(lines) == 3 and lines[0].startswith("#") and lines[1].startswith("#"):
        return f"{lines[0]}\n{lines[2]}"
    return text


class NameTableError(ValueError):
    """A name table that cannot be used; the message names every bad line."""


class NameTable(Mapping[OperatorPortLabel, PePortLabel]):
    """An immutable operator-port → PE-port mapping."""

    __slots__ = ("_index",)

    def __init__(self, entries: Mapping[OperatorPortLabel, PePortLabel]) -> None:
        self._index = NameTableIndex([(*key, *value) for key, value in entries.items()])

    @classmethod
    def parse(cls, text: str) -> NameTable:
        try:
            index = NameTableIndex.parse(text)
        except PropertiesError as err:
            raise NameTableError(f"bad name table: {err}") from err
        table = cls.__new__(cls)
        table._index = index
        return table

    def to_text(self, written_at: datetime | None = None) -> str:
        """The file (`render_name_table`), in label order, dated ``written_at`` (default: now)."""
        return render_name_table(sorted(self._pairs()), name_table_stamp(written_at))

    def __getitem__(self, key: OperatorPortLabel) -> PePortLabel:
        found = self._index.get(*key)
        if found is None:
            raise KeyError(key)
        return PePortLabel(*found)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, OperatorPortLabel) and self._index.get(*key) is not None

    def __iter__(self) -> Iterator[OperatorPortLabel]:
        return (OperatorPortLabel(j, o, p) for j, o, p, *_ in self._index.entries())

    def _pairs(self) -> Iterator[tuple[OperatorPortLabel, PePortLabel]]:
        entries = self._index.entries()
        return ((OperatorPortLabel(j, o, p), PePortLabel(e, i, k)) for j, o, p, e, i, k in entries)

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"NameTable({len(self)} entries)"
