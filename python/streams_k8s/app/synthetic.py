"""Synthetic Streams applications (ADL v4200 and SAB) of any size and shape, for tests and benches.

Shape: one source fans out to ``chains`` pipelines of ``length`` Functors, which fan in to one sink
(or end in per-chain sinks). Options add parallel regions (the middle operator of the first
``regions`` chains, constant width), host pools (chains spread over tagged pools), partition
colocation of neighbouring operators, partition exlocation inside a chain, partition isolation of
chain heads, consistent regions (one per chain) and host pools replicated per parallel channel.
``exports`` publish the end of chain i to other jobs (by stream name or by properties) and
``imports`` feed chain i's head from other jobs' streams (by name or by subscription).
Combinations that could not be satisfied are avoided. The output follows the compiler's ADL layout.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

NS = "http://www.ibm.com/xmlns/prod/streams/application/v4200"


@dataclass(frozen=True)
class Exported:
    """An Export operator: by ``stream`` name, else by ``properties`` (name, SPL type, literals)."""

    stream: str | None = None
    properties: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    allow_filter: bool | None = None


@dataclass(frozen=True)
class Imported:
    """An Import operator: by ``application`` and ``stream`` name, else by ``subscription``."""

    application: str | None = None
    stream: str | None = None
    subscription: str | None = None
    scope: str | None = None
    filter: str | None = None


@dataclass(frozen=True)
class SyntheticSpec:
    name: str = "synthetic::App"
    chains: int = 4
    length: int = 5
    fan_in: bool = True
    regions: int = 0
    width: int = 2
    pools: int = 0
    colocate_pairs: bool = False
    exlocate_chain_ends: bool = False
    isolate_heads: int = 0
    # host placement: every chain's head on a host of its own (hostExlocation), every chain's last
    # operator on one host together (hostColocation)
    host_exlocate_heads: bool = False
    host_colocate_tails: bool = False
    consistent_chains: int = 0
    consistent_period: float = 0.0  # seconds between a region's checkpoints; 0: operator-driven
    replicate_pools: bool = False  # regions replicate their chain's host pool per channel
    # region widths from submission-time values width0, width1, … (default ``width``, or required)
    width_values: bool = False
    required_values: bool = False
    exports: tuple[Exported, ...] = ()  # the i-th exports the end of chain i
    imports: tuple[Imported, ...] = ()  # the i-th feeds the head of chain i
    # operators (by index) in a new build: their shared object's URI changes, so their PEs' content does
    rebuilt: frozenset[int] = frozenset()

    @property
    def operators(self) -> int:
        return 1 + self.chains * self.length + (1 if self.fan_in else self.chains)


def _conn(oper: int, name: str, port: int, kind: str) -> str:
    return f'<connection operIndex="{oper}" operName={quoteattr(name)} portIndex="{port}" portKind="{kind}"/>'


def _port(kind: str, index: int, name: str, conns: list[str]) -> str:
    stream = f' streamName={quoteattr(name)} viewable="true"' if kind == "output" else ""
    return (
        f'<port encoding="LE" index="{index}" isMutable="false" name={quoteattr(name)}{stream} '
        f'transport="TCP" tupleTypeIndex="0"><connections>{"".join(conns)}</connections></port>'
    )


class _Writer:
    def __init__(self, spec: SyntheticSpec) -> None:
        self.spec = spec
        self.names: dict[int, str] = {0: "Source"}
        self.inputs: dict[int, list[int]] = {}
        self.outputs: dict[int, list[int]] = {}
        self.annotations: dict[int, str] = {}
        self.partitions: dict[int, str] = {}
        self.host_constraints: dict[int, str] = {}
        self.region_ops: list[int] = []
        self.chain_of: dict[int, int] = {}
        self.exports: dict[int, Exported] = {}  # by operator index
        self.imports: dict[int, Imported] = {}

    def link(self, a: int, b: int) -> None:
        self.outputs.setdefault(a, []).append(b)
        self.inputs.setdefault(b, []).append(a)

    def build(self) -> None:
        s = self.spec
        next_index = 1
        sink = 1 + s.chains * s.length
        ends: dict[int, int] = {}
        if s.fan_in:
            self.names[sink] = "Sink"
        for c in range(s.chains):
            prev = 0
            for j in range(s.length):
                op = next_index
                next_index += 1
                self.names[op] = f"C{c}_{j}"
                self.chain_of[op] = c
                self.link(prev, op)
                prev = op
                self.annotations[op] = self._constraints(c, j, op)
                if c < s.regions and j == s.length // 2:
                    self.region_ops.append(op)
            if s.fan_in:
                self.link(prev, sink)
            else:
                end = sink + c
                self.names[end] = f"Sink{c}"
                self.chain_of[end] = c
                self.link(prev, end)
            ends[c] = prev
        next_index = max(self.names) + 1
        for c, exported in enumerate(s.exports[: s.chains]):
            self.names[next_index], self.exports[next_index] = f"Export{c}", exported
            self.link(ends[c], next_index)
            next_index += 1
        for c, imported in enumerate(s.imports[: s.chains]):
            self.names[next_index], self.imports[next_index] = f"Import{c}", imported
            self.link(next_index, 1 + c * s.length)
            next_index += 1

    def _constraints(self, c: int, j: int, op: int) -> str:
        s = self.spec
        parts = []
        if c < s.consistent_chains:
            first = '<value key="isStartOfRegion" type="boolean">true</value>' if j == 0 else ""
            parts.append(
                f'<splAnnotation internal="true" tag="consistentRegionEntry">'
                f'<value key="index" type="int32">{c}</value>{first}</splAnnotation>'
            )
        partitions = []
        # an isolated chain head is never part of a colocated pair (that would be unsatisfiable)
        # nor is a parallel operator whose host pool is replicated per channel (different hosts)
        start = j - j % 2
        in_replicated_region = s.replicate_pools and s.pools > 0 and c < s.regions
        paired = (
            s.colocate_pairs
            and not (c < s.isolate_heads and j < 2)
            and not (in_replicated_region and s.length // 2 in (start, start + 1))
        )
        if paired and j % 2 == 0 and j + 1 < s.length:
            partitions.append(f'<coLocation colocId="co_{c}_{j}"/>')
        if paired and j % 2 == 1:
            partitions.append(f'<coLocation colocId="co_{c}_{j - 1}"/>')
        if s.exlocate_chain_ends and j in (0, s.length - 1):
            partitions.append(f'<exLocation exlocId="ex_{c}"/>')
        iso = ' isolation="true"' if c < s.isolate_heads and j == 0 else ""
        host = []  # in the schema's order: coLocation before exLocation
        if s.host_colocate_tails and j == s.length - 1:
            host.append('<coLocation colocId="tails"/>')
        if s.host_exlocate_heads and j == 0:
            host.append('<exLocation exlocId="heads"/>')
        self.host_constraints[op] = "".join(host)
        self.partitions[op] = (
            f"<partitions{iso}>{''.join(partitions)}</partitions>" if partitions or iso else ""
        )
        return "".join(parts)

    def _width(self, region: int) -> str:
        if self.spec.width_values:
            return f"<submissionTimeParameterIndexForWidth>{region}</submissionTimeParameterIndexForWidth>"
        return f"<constantWidth>{self.spec.width}</constantWidth>"

    def _width_values(self) -> str:
        if not (self.spec.width_values and self.region_ops):
            return ""
        default = "" if self.spec.required_values else f' defaultValue="&quot;{self.spec.width}&quot;"'
        values = "".join(
            f'<submissionTimeValue compositeName={quoteattr(self.spec.name)} index="{i}" kind="named" '
            f'name="width{i}" required="{"true" if self.spec.required_values else "false"}"{default}/>'
            for i in range(len(self.region_ops))
        )
        return f"<submissionTimeValues>{values}</submissionTimeValues>"

    def _replicated_tag(self, op: int) -> str:
        pool = self.pool_of(op)
        return f'<replicateHostTag name="pool{pool - 1}"/>' if self.spec.replicate_pools and pool else ""

    def pool_of(self, op: int) -> int:
        s = self.spec
        if s.pools and op in self.chain_of:
            return 1 + self.chain_of[op] % s.pools
        return 0

    def export_operator(self, op: int) -> str:
        spec, name = self.exports[op], self.names[op]
        attrs = f" streamName={quoteattr(spec.stream)}" if spec.stream is not None else ""
        if spec.allow_filter is not None:
            attrs += f' allowFilter="{str(spec.allow_filter).lower()}"'
        src = self.inputs[op][0]
        props = "".join(
            f"<property name={quoteattr(p)} type={quoteattr(t)}>"
            + "".join(f"<value>{escape(v)}</value>" for v in values)
            + "</property>"
            for p, t, values in spec.properties
        )
        return (
            f'<primitiveExportOperInstance definitionIndex="4" index="{op}" name={quoteattr(name)}{attrs}'
            f' sourceIndex="0" startLine="1" endLine="1"><inputPorts>'
            f"{_port('input', 0, name, [_conn(src, self.names[src], 0, 'output')])}</inputPorts>"
            f"{'<properties>' + props + '</properties>' if spec.stream is None else ''}"
            "</primitiveExportOperInstance>"
        )

    def import_operator(self, op: int) -> str:
        spec, name = self.imports[op], self.names[op]
        scope = f" applicationScope={quoteattr(spec.scope)}" if spec.scope is not None else ""
        if spec.subscription is not None:
            how = f"<propertyBasedImport subscription={quoteattr(spec.subscription)}{scope}/>"
        else:
            how = (
                f"<nameBasedImport applicationName={quoteattr(spec.application or '')} "
                f"streamName={quoteattr(spec.stream or '')}{scope}/>"
            )
        filtered = f" filter={quoteattr(spec.filter)}" if spec.filter is not None else ""
        dst = self.outputs[op][0]
        return (
            f'<primitiveImportOperInstance definitionIndex="3" index="{op}" name={quoteattr(name)}{filtered}'
            f' sourceIndex="0" startLine="1" endLine="1"><outputPorts>'
            f"{_port('output', 0, name, [_conn(dst, self.names[dst], 0, 'input')])}</outputPorts>"
            f"{how}</primitiveImportOperInstance>"
        )

    def operator(self, op: int) -> str:
        if op in self.exports:
            return self.export_operator(op)
        if op in self.imports:
            return self.import_operator(op)
        name = self.names[op]
        definition = 1 if op == 0 else (2 if not self.outputs.get(op) else 0)
        ins = [
            _port(
                "input",
                0,
                "In",
                [_conn(src, self.names[src], 0, "output") for src in self.inputs.get(op, [])],
            )
        ]
        outs = [
            _port("output", 0, name, [_conn(d, self.names[d], 0, "input") for d in self.outputs.get(op, [])])
        ]
        return (
            f'<primitiveOperInstance definitionIndex="{definition}" index="{op}" name={quoteattr(name)} '
            f'optimized="true" relocatable="true" restartable="true" singleThreadedOnOutputs="true"'
            f' sourceIndex="0" startLine="1" endLine="1">'
            f"{self.annotations.get(op, '')}"
            f"{'<inputPorts>' + ''.join(ins) + '</inputPorts>' if op in self.inputs else ''}"
            f"{'<outputPorts>' + ''.join(outs) + '</outputPorts>' if op in self.outputs else ''}"
            f'<envVars/><resources><poolLocation poolIndex="{self.pool_of(op)}"/>'
            f"{self.host_constraints.get(op, '')}</resources>"
            f"<runtimeConstants/><sharedObject class={quoteattr(name)}><wrapper>none</wrapper>"
            f"<uri>bin/{name}{'.rebuilt' if op in self.spec.rebuilt else ''}.so</uri></sharedObject>"
            f"{self.partitions.get(op, '')}</primitiveOperInstance>"
        )

    def document(self) -> str:
        s = self.spec
        main = max(self.names) + 1
        pools = ['<hostpool index="0" membershipMode="shared" name="$default"/>'] + [
            f'<hostpool index="{p + 1}" membershipMode="shared" name="pool{p}">'
            f'<tag name="pool{p}"/></hostpool>'
            for p in range(s.pools)
        ]
        regions = "".join(
            f'<parallelRegion index="{i}" name={quoteattr(self.names[op])}>'
            f'<parallelOperator operIndex="{op}">'
            '<splitter iportIndex="0" kind="RoundRobin"/></parallelOperator>'
            f"<parallelWidth>{self._width(i)}</parallelWidth>"
            f"{self._replicated_tag(op)}</parallelRegion>"
            for i, op in enumerate(self.region_ops)
        )
        consistent = "".join(
            _consistent_region(c, s.consistent_period) for c in range(min(s.consistent_chains, s.chains))
        )
        ops = "".join(self.operator(op) for op in sorted(self.names))
        name = quoteattr(s.name)
        where = 'sourceIndex="0" startLine="1" endLine="1"'
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<applicationSet xmlns="{NS}" name={quoteattr(s.name + ".appset")}>'
            f"<splApplication {_APPLICATION_ATTRS} name={name}>"
            f"<libraries/><hostpools>{''.join(pools)}</hostpools>{_types_and_definitions(s)}"
            f'<composites><sourceUris><uri index="0" path="file:///app.spl"/></sourceUris><compositeOperDefinitions>'
            f'<compositeOperDefinition index="0" kind={name} numberOfInputPorts="0" numberOfOutputPorts="0" '
            f'{where} toolkitIndex="0"/></compositeOperDefinitions><compositeOperInstances>'
            f'<compositeOperInstance definitionIndex="0" index="{main}" name={name} {where}>{ops}{consistent}'
            f"</compositeOperInstance></compositeOperInstances></composites>"
            f'<toolkits><toolkit index="0" name="spl" uri="file:///spl" version="1.4.0"/></toolkits>'
            f"{'<parallelRegions>' + regions + '</parallelRegions>' if regions else ''}"
            f"{self._width_values()}</splApplication></applicationSet>\n"
        )


_APPLICATION_ATTRS = (
    'adlPath="app/app.adl" applicationDirectory="app" applicationScope="Default" avoidRuntimeYield="auto" '
    'buildId="synthetic" bundle="./app.sab" outputDirectory="output" productVersion="4.3.0.0" version="1.0.0"'
)
_OPERATOR_KINDS = ("spl.relational::Functor", "spl.utility::Beacon", "spl.utility::Custom")
_ADAPTER_KINDS = ("spl.adapter::Import", "spl.adapter::Export")  # definitions 3 and 4


def _types_and_definitions(spec: SyntheticSpec) -> str:
    kinds = _OPERATOR_KINDS + (_ADAPTER_KINDS if spec.exports or spec.imports else ())
    definitions = "".join(
        f'<primitiveOperDefinition index="{i}" kind="{kind}" runtimeType="SPL_CPlusPlus" toolkitIndex="0"/>'
        for i, kind in enumerate(kinds)
    )
    return (
        '<tupleTypes><tupleType index="0"><attribute name="i" type="uint64"/></tupleType></tupleTypes>'
        f"<primitiveOperDefinitions>{definitions}</primitiveOperDefinitions>"
    )


_CONSISTENT_REGION = (
    '<splAnnotation internal="true" tag="consistentRegion"><value key="index" type="int64">{index}</value>'
    '<value key="trigger" type="enum{{periodic,operatorDriven}}">{trigger}</value>{period}'
    '<value key="drainTimeout" type="float64">180</value><value key="resetTimeout" type="float64">180</value>'
    '<value key="maxConsecutiveResetAttempts" type="int32">5</value></splAnnotation>'
)


def _consistent_region(index: int, period: float) -> str:
    if not period:
        return _CONSISTENT_REGION.format(index=index, trigger="operatorDriven", period="")
    every = f'<value key="period" type="float64">{period}</value>'
    return _CONSISTENT_REGION.format(index=index, trigger="periodic", period=every)


def synthetic_adl(spec: SyntheticSpec) -> bytes:
    """The ADL of the application ``spec`` describes."""
    writer = _Writer(spec)
    writer.build()
    return writer.document().encode("utf-8")


def write_sab(path: str | Path, spec: SyntheticSpec) -> Path:
    """Write a SAB (zip with bundleInfo.xml and tar/bundle.tar holding the ADL) to ``path``."""
    adl = synthetic_adl(spec)
    tar_buf = io.BytesIO()
    with tarfile.open(fileobj=tar_buf, mode="w") as tar:
        info = tarfile.TarInfo("app/app.adl")
        info.size = len(adl)
        tar.addfile(info, io.BytesIO(adl))
    bundle_info = (
        '<bundleInfoModel xmlns="http://www.ibm.com/xmlns/prod/streams/spl/bundleInfoModel" '
        'adlFile="app.adl" buildId="synthetic" bundleVersion="4300" executionMode="distributed">'
        '<toolkit name="spl" version="1.4.0"/></bundleInfoModel>'
    )
    path = Path(path)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bundleInfo.xml", bundle_info)
        zf.writestr("tar/bundle.tar", tar_buf.getvalue())
    return path
