"""What the pod of a PE needs from the PE's AADL: its input port count and SPL restartable flag."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from streams_k8s.app.safe_xml import UnsafeXmlError, parse_untrusted


@dataclass(frozen=True, slots=True)
class AadlFacts:
    input_ports: int
    restartable: bool


class AadlFactsError(ValueError):
    """The PE ConfigMap's aadl.xml cannot be read."""


# Facts by the sha256 of their document: the cache keeps no AADL (a document of a large PE is up to
# 1 MiB, and its job may be gone), only a few bytes per distinct content.
_CACHE_SIZE = 4096
_cache: OrderedDict[bytes, AadlFacts] = OrderedDict()


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
    key = hashlib.sha256(aadl.encode()).digest()
    found = _cache.get(key)
    if found is None:
        found = _cache[key] = _facts(aadl)
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
    return found
