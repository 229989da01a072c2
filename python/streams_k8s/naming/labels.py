"""The two label formats of Streams name resolution.

An operator port label ``J.O.P`` names input port P of physical operator O in job J and is stable
for the life of the application; a PE port label ``E.I@J`` names input port I of PE E in job J and
changes when the job is re-fused.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Self

from streams_k8s.api.contract import PE_PORT_BASE

_OPERATOR_PORT = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
_PE_PORT = re.compile(r"^(\d+)\.(\d+)@(\d+)$")


class LabelError(ValueError):
    """A string that is not a well-formed label."""


class OperatorPortLabel(NamedTuple):
    job_id: int
    operator_index: int
    port_index: int

    @classmethod
    def parse(cls, text: str) -> Self:
        match = _OPERATOR_PORT.match(text)
        if match is None:
            raise LabelError(f"'{text}' is not an operator port label (J.O.P, three decimal numbers)")
        return cls(*map(int, match.groups()))

    def __str__(self) -> str:
        return f"{self.job_id}.{self.operator_index}.{self.port_index}"


class PePortLabel(NamedTuple):
    pe_id: int
    port_id: int
    job_id: int

    @classmethod
    def parse(cls, text: str) -> Self:
        match = _PE_PORT.match(text)
        if match is None:
            raise LabelError(f"'{text}' is not a PE port label (E.I@J, three decimal numbers)")
        return cls(*map(int, match.groups()))

    @property
    def tcp_port(self) -> int:
        return PE_PORT_BASE + self.port_id

    def __str__(self) -> str:
        return f"{self.pe_id}.{self.port_id}@{self.job_id}"
