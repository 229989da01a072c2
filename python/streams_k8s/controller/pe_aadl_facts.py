"""What the pod of a PE needs from the PE's AADL: its input port count and SPL restartable flag."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from streams_k8s.app.safe_xml import UnsafeXmlError, parse_untrusted


@dataclass(frozen=True, slots=True)
class AadlFacts:
    input_ports: int
    restartable: bool


class AadlFactsError(ValueError):
    """The PE ConfigMap's aadl.xml cannot be read."""


@lru_cache(maxsize=4096)
def _facts(aadl: str) -> AadlFacts:
    try:
        root = parse_untrusted(aadl.encode(), what="aadl.xml")
    except UnsafeXmlError as err:
        raise AadlFactsError(str(err)) from err
    ports = next((child for child in root if _local(child.tag) == "inputPorts"), None)
    count = sum(1 for p in ports if _local(p.tag) == "inputPort") if ports is not None else 0
    return AadlFacts(input_ports=count, restartable=root.get("restartable", "true") == "true")


def _local(tag: object) -> str:
    return str(tag).rsplit("}", 1)[-1]


def aadl_facts(aadl: str) -> AadlFacts:
    """Facts of one AADL document (cached: PEs of the same content share them)."""
    return _facts(aadl)
