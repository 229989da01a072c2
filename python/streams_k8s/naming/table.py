"""The per-job name table: operator port label → PE port label, as Java properties.

It is the `operator_port_labels.properties` key of the job's ConfigMap, mounted in every PE pod at
/etc/config/job. The writer produces exactly what `java.util.Properties.store` wrote for the
original runtime; the reader is the native parser, with every bad line reported by number.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

from streams_k8s._native import PropertiesError, parse_properties
from streams_k8s.naming.labels import LabelError, OperatorPortLabel, PePortLabel

TABLE_KEY = "operator_port_labels.properties"
_HEADER = "Operator port labels"


class NameTableError(ValueError):
    """A name table that cannot be used; the message names every bad line."""


class NameTable(Mapping[OperatorPortLabel, PePortLabel]):
    """An immutable operator-port → PE-port mapping."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[OperatorPortLabel, PePortLabel]) -> None:
        self._entries = dict(entries)

    @classmethod
    def parse(cls, text: str) -> NameTable:
        try:
            raw = parse_properties(text)
        except PropertiesError as err:
            raise NameTableError(f"bad name table: {err.args[0]}") from err
        entries: dict[OperatorPortLabel, PePortLabel] = {}
        problems = []
        for key, value in raw.items():
            try:
                entries[OperatorPortLabel.parse(key)] = PePortLabel.parse(value)
            except LabelError as err:
                problems.append(f"entry '{key}': {err}")
        if problems:
            raise NameTableError(f"bad name table: {'; '.join(problems)}")
        return cls(entries)

    def to_text(self, written_at: datetime | None = None) -> str:
        """The file as `Properties.store(writer, "Operator port labels")` writes it, in label order."""
        stamp = (written_at or datetime.now(UTC)).strftime("%a %b %d %H:%M:%S %Z %Y")
        lines = [f"#{_HEADER}", f"#{stamp}"]
        lines += [f"{key}={value}" for key, value in sorted(self._entries.items())]
        return "\n".join(lines) + "\n"

    def __getitem__(self, key: OperatorPortLabel) -> PePortLabel:
        return self._entries[key]

    def __iter__(self) -> Iterator[OperatorPortLabel]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"NameTable({len(self)} entries)"
