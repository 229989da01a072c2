"""What the simulated PE runtime reads to know its connections, as the Streams runtime does: the
static connections of its AADL (`/etc/config/pe/aadl.xml`) and the job's name table
(`/etc/config/job/operator_port_labels.properties`, read with boost `read_ini` rules).

An output connection names its receiver twice: the PE port label `E.I@J` the AADL was built with,
and the operator port label `J.O.P` of the receiving operator, which the name table maps to the PE
port the operator lives on now (so a sender follows an operator re-fused into another PE). An input
connection names the PE that sends to it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lxml import etree

from streams_k8s.api.contract import AADL_KEY, NAME_TABLE_KEY, PE_PORT_BASE

AUGMENTED = "{http://www.ibm.com/xmlns/prod/streams/application/augmented}"

_PE_PORT = re.compile(r"^(\d+)\.(\d+)@(\d+)$")
_UNESCAPE = re.compile(r"\\([\\ =:])")
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


class WiringError(ValueError):
    """An AADL or a name table the runtime cannot read."""


@dataclass(frozen=True)
class PePort:
    """A PE port label `E.I@J`."""

    pe: int
    port: int
    job: int

    def __str__(self) -> str:
        return f"{self.pe}.{self.port}@{self.job}"

    @property
    def tcp_port(self) -> int:
        return PE_PORT_BASE + self.port


@dataclass(frozen=True)
class Output:
    """A static output connection: the receiver's PE port per the AADL and its operator port label."""

    receiver: PePort
    operator_port: str  # J.O.P


@dataclass(frozen=True)
class Input:
    """A static input connection: PE input port `port` receives from PE `sender`."""

    port: int
    sender: int


@dataclass(frozen=True)
class Wiring:
    pe: int
    job_id: int
    job_name: str
    inputs: tuple[Input, ...]
    outputs: tuple[Output, ...]
    input_ports: frozenset[int]


def _int(element: Any, name: str) -> int:
    value = element.get(name)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise WiringError(f"{AADL_KEY}: <{etree.QName(element).localname}> has no integer {name}") from None


@lru_cache(maxsize=4096)
def parse_aadl(text: str) -> Wiring:
    """The static connections of a PE's AADL (PEs of the same content share the parse)."""
    try:
        root = etree.fromstring(text.encode(), _PARSER)
    except etree.XMLSyntaxError as err:
        raise WiringError(f"{AADL_KEY} is not XML: {err}") from None
    if root.tag != f"{AUGMENTED}augmentedPE":
        raise WiringError(f"{AADL_KEY}: the root is <{root.tag}>, not an augmentedPE")
    job_id = _int(root, "jobId")
    inputs: list[Input] = []
    ports: set[int] = set()
    for port in root.iterfind(f"{AUGMENTED}inputPorts/{AUGMENTED}inputPort"):
        port_id = _int(port, "id")
        ports.add(port_id)
        for conn in port.iterfind(f"{AUGMENTED}staticConnections/{AUGMENTED}staticConnection"):
            inputs.append(Input(port_id, _int(conn, "peId")))
    outputs: list[Output] = []
    for port in root.iterfind(f"{AUGMENTED}outputPorts/{AUGMENTED}outputPort"):
        for conn in port.iterfind(f"{AUGMENTED}staticConnections/{AUGMENTED}staticConnection"):
            receiver = PePort(_int(conn, "peId"), _int(conn, "iportId"), job_id)
            operator = f"{job_id}.{_int(conn, 'iOperInstanceIndex')}.{_int(conn, 'iOperInstancePortIndex')}"
            outputs.append(Output(receiver, operator))
    return Wiring(
        pe=_int(root, "id"),
        job_id=job_id,
        job_name=str(root.get("jobName") or ""),
        inputs=tuple(dict.fromkeys(inputs)),  # one connection per (port, sender), as the runtime keys them
        outputs=tuple(dict.fromkeys(outputs)),
        input_ports=frozenset(ports),
    )


@lru_cache(maxsize=256)
def parse_name_table(text: str) -> dict[str, PePort]:
    """Operator port label -> PE port, read as boost `read_ini` reads the properties file: trimmed
    lines, `#`/`;` comments, the first `=` splits; a line without `=`, an empty or duplicate key
    make the whole file unreadable. Keys under a `[section]` are not top-level names."""
    table: dict[str, PePort] = {}
    seen: set[tuple[str, str]] = set()
    section = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), _UNESCAPE.sub(r"\1", value.strip())
        if not sep or not key:
            raise WiringError(f"{NAME_TABLE_KEY} line {number}: not a key=value line")
        if (section, key) in seen:
            raise WiringError(f"{NAME_TABLE_KEY} line {number}: duplicate key {key!r}")
        seen.add((section, key))
        match = _PE_PORT.match(value)
        if not section and match is not None:
            table[key] = PePort(*map(int, match.groups()))
    return table


def entries_changed(old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    """Whether a ConfigMap change (``old`` -> ``new``, None for absent) can change what a PE
    reading it as its name table resolves: not a rewrite that only moves the date line, nor an edit
    of its labels (which would otherwise have every PE of the job evaluate its connections again)."""
    if old is None or new is None:
        return True
    before, after = ((o.get("data") or {}).get(NAME_TABLE_KEY) for o in (old, new))
    if before is None or after is None or before == after:
        return before != after
    try:
        return parse_name_table(before) != parse_name_table(after)
    except WiringError:
        return True


def mounted_config_map(pod: dict[str, Any], directory: str) -> str | None:
    """The ConfigMap the pod's first container sees at `directory`, itself or projected with other
    sources (a TLS job's transport Secret); None: nothing mounted there."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or [{}]
    mount = next(
        (m for m in containers[0].get("volumeMounts") or [] if m.get("mountPath") == directory), None
    )
    if mount is None:
        return None
    volume = next((v for v in spec.get("volumes") or [] if v.get("name") == mount.get("name")), None)
    projected = ((volume or {}).get("projected") or {}).get("sources") or []
    sources = [volume or {}, *projected]
    source: dict[str, Any] = next((s["configMap"] for s in sources if s.get("configMap")), {})
    name = source.get("name")
    return str(name) if name else None
