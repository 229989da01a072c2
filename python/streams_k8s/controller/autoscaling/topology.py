"""A job's logical graph as the autoscaler needs it, read from what the job runs: its PEs' AADLs
(each ``operInstance`` with its ``logicalName``, the operator instances its input ports hear,
and its parallel region's index) and the job's ParallelRegions (index -> alias). Operators in
topological order, each with the logical operators that feed it and its region's alias.

The AADL is the job's own, so the graph follows the running job (a width change or an edit that
re-fuses it) with no access to its bundle or plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lxml import etree

from streams_k8s.controller.autoscaling.estimates import OperatorShape

APPLICATION = "{http://www.ibm.com/xmlns/prod/streams/application}"
PHYSICAL = "{http://www.ibm.com/xmlns/prod/streams/application/physical}"
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


class TopologyError(ValueError):
    """AADLs the graph cannot be read from (with what is wrong)."""


def _instances(text: str) -> Iterable[tuple[str, str, list[str], str | None]]:
    """(index, logical name, indexes of the instances its inputs hear, region index) per instance."""
    try:
        root = etree.fromstring(text.encode(), _PARSER)
    except etree.XMLSyntaxError as err:
        raise TopologyError(f"an AADL is not XML: {err}") from None
    for op in root.iter(f"{APPLICATION}operInstance"):
        senders = [
            str(conn.get("operInstanceIndex"))
            for port in op.iterfind(f"{APPLICATION}inputPorts/{APPLICATION}inputPort")
            for conn in port
            if conn.get("operInstanceIndex") is not None
        ]
        region = op.find(f"{PHYSICAL}parallelRegions/{PHYSICAL}parallelRegion")
        yield (
            str(op.get("index")),
            str(op.get("logicalName") or op.get("name")),
            senders,
            region.get("regionIndex") if region is not None else None,
        )


def job_topology(aadls: Iterable[str], regions: Mapping[int, str]) -> list[OperatorShape]:
    """The logical graph of a job from its PEs' AADLs; `regions` maps region index to alias."""
    logical: dict[str, str] = {}
    inputs: dict[str, set[str]] = {}
    region_of: dict[str, str | None] = {}
    heard: list[tuple[str, list[str]]] = []
    for text in aadls:
        for index, name, senders, region in _instances(text):
            logical[index] = name
            inputs.setdefault(name, set())
            if region is not None and region.isdigit():
                region_of[name] = regions.get(int(region))
            else:
                region_of.setdefault(name, None)
            heard.append((name, senders))
    for name, senders in heard:
        for sender in senders:
            if sender not in logical:
                raise TopologyError(f"{name} hears operator instance {sender}, which no PE of the job runs")
            if logical[sender] != name:
                inputs[name].add(logical[sender])
    ordered: list[OperatorShape] = []
    placed: set[str] = set()
    pending = sorted(inputs)
    while pending:
        ready = [n for n in pending if inputs[n] <= placed]
        if not ready:
            raise TopologyError(f"the operators {', '.join(pending)} form a cycle")
        for name in ready:
            ordered.append(OperatorShape(name, tuple(sorted(inputs[name])), region_of[name]))
            placed.add(name)
        pending = [n for n in pending if n not in placed]
    return ordered
