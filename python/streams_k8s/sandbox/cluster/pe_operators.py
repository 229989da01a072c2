"""The operator instances a PE runs, as its AADL (`/etc/config/pe/aadl.xml`) lists them: index,
logical name, and for a parallel region's copy its channel and the region's channel count (the
first ``parallelRegion`` an instance names: nested regions are not told apart)."""

from __future__ import annotations

from functools import lru_cache

from lxml import etree

from streams_k8s.api.contract import AADL_KEY
from streams_k8s.sandbox.cluster.pe_wiring import WiringError
from streams_k8s.sandbox.flow.job_flow import PlacedOperator

APPLICATION = "{http://www.ibm.com/xmlns/prod/streams/application}"
PHYSICAL = "{http://www.ibm.com/xmlns/prod/streams/application/physical}"
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _int(value: str | None, what: str) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise WiringError(f"{AADL_KEY}: an operInstance has no integer {what}") from None


@lru_cache(maxsize=4096)
def parse_operators(text: str) -> tuple[PlacedOperator, ...]:
    try:
        root = etree.fromstring(text.encode(), _PARSER)
    except etree.XMLSyntaxError as err:
        raise WiringError(f"{AADL_KEY} is not XML: {err}") from None
    found = []
    for op in root.iter(f"{APPLICATION}operInstance"):
        region = op.find(f"{PHYSICAL}parallelRegions/{PHYSICAL}parallelRegion")
        channel = _int(region.get("globalChannelIndex"), "globalChannelIndex") if region is not None else 0
        width = _int(region.get("globalMaxChannels"), "globalMaxChannels") if region is not None else 1
        name = op.get("logicalName") or op.get("name")
        if not name:
            raise WiringError(f"{AADL_KEY}: an operInstance has no logicalName")
        found.append(PlacedOperator(_int(op.get("index"), "index"), name, channel, width))
    return tuple(found)
