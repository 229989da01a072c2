"""The Python ADL reader (lxml) the native one replaced, kept as the oracle of the differential
tests (like ``cr_fsm_reference``): same input, an equal model (``adl_reference_model``) or the
same refusal.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from lxml import etree

from adl_reference_model import (
    AdlConsistentRegion,
    AdlExport,
    AdlHostPool,
    AdlImport,
    AdlParallelRegion,
    Annotation,
    Application,
    Checkpointing,
    Composite,
    CompositePort,
    CustomMetric,
    ExportProperty,
    HostPlacement,
    InputPort,
    Operator,
    OperatorDefinition,
    OutputPort,
    Partitions,
    PortRef,
    RuntimeConstant,
    Splitter,
    SubmissionTimeValue,
    ThreadedPort,
    ToolkitRef,
    TupleType,
)
from streams_k8s.app.adl import AdlError
from streams_k8s.app.model import OperatorKind, SplitterKind
from streams_k8s.app.safe_xml import UnsafeXmlError, parse_untrusted

_NAMESPACES = {
    "http://www.ibm.com/xmlns/prod/streams/application/v4200": "v4200",
    "http://www.ibm.com/xmlns/prod/streams/application/v4000": "v4000",
}
_OPERATOR_TAGS = {
    "primitiveOperInstance": OperatorKind.PRIMITIVE,
    "primitiveImportOperInstance": OperatorKind.IMPORT,
    "primitiveExportOperInstance": OperatorKind.EXPORT,
}


def _local(el: etree._Element) -> str:
    return str(el.tag).rpartition("}")[2]


@cache
def _in_namespace_of(tag: str, name: str) -> str:
    return tag[: tag.find("}") + 1] + name


def _qualified(el: etree._Element, name: str) -> str:
    """``name`` in ``el``'s namespace: every element the parser reads is in the ADL's namespace."""
    return _in_namespace_of(str(el.tag), name)


def _children(el: etree._Element | None, name: str) -> Iterator[etree._Element]:
    if el is None:
        return iter(())
    return el.iterchildren(_qualified(el, name))


def _child(el: etree._Element | None, name: str) -> etree._Element | None:
    return next(el.iterchildren(_qualified(el, name)), None) if el is not None else None


class _Kids:
    """An element's children by name (the first of each), read in one pass: an operator asks for a
    dozen of them, and a search of the children per name was most of the parse."""

    def __init__(self, el: etree._Element) -> None:
        self.tag = str(el.tag)
        self.first: dict[str, etree._Element] = {}
        for child in el:
            self.first.setdefault(str(child.tag), child)

    def __call__(self, name: str) -> etree._Element | None:
        return self.first.get(_in_namespace_of(self.tag, name))


def _req(el: etree._Element, attr: str) -> str:
    value = el.get(attr)
    if value is None:
        raise AdlError(f"line {el.sourceline}: <{_local(el)}> lacks required attribute '{attr}'")
    return value


def _int(el: etree._Element, attr: str) -> int:
    """An index, size or count: every integer attribute of the ADL is an xs:unsignedLong."""
    raw = _req(el, attr)
    if raw.isascii() and raw.isdigit():  # the common case, checked without building a message
        return int(raw)
    where = f"line {el.sourceline}: <{_local(el)} {attr}='{raw}'>"
    try:
        value = int(raw)
    except ValueError:
        raise AdlError(f"{where} is not an integer") from None
    if value < 0:
        raise AdlError(f"{where} is negative (an xs:unsignedLong)")
    return value


def _opt_int(el: etree._Element, attr: str) -> int | None:
    return _int(el, attr) if el.get(attr) is not None else None


def _bool(el: etree._Element, attr: str, default: bool) -> bool:
    raw = el.get(attr)
    if raw is None:
        return default
    if raw in ("true", "1"):
        return True
    if raw in ("false", "0"):
        return False
    raise AdlError(f"line {el.sourceline}: <{_local(el)} {attr}='{raw}'> is not a boolean")


def _text(el: etree._Element | None) -> str:
    return (el.text or "").strip() if el is not None else ""


def _refs(container: etree._Element | None) -> tuple[PortRef, ...]:
    return tuple(
        PortRef(_int(c, "operIndex"), _int(c, "portIndex"), c.get("portKind", "input"))
        for c in _children(container, "connection")
    )


def _annotations(el: etree._Element) -> tuple[Annotation, ...]:
    found = []
    for tag in ("splAnnotation", "annotation"):
        for a in _children(el, tag):
            values = tuple((v.get("key", ""), v.get("type", ""), _text(v)) for v in _children(a, "value"))
            found.append(Annotation(_req(a, "tag"), values, _bool(a, "internal", False)))
    return tuple(found)


def _input_port(p: etree._Element) -> InputPort:
    tp = _child(p, "threadedPort")
    return InputPort(
        index=_int(p, "index"),
        name=p.get("name", ""),
        tuple_type_index=_int(p, "tupleTypeIndex"),
        encoding=p.get("encoding", "LE"),
        transport=p.get("transport", "TCP"),
        is_mutable=_bool(p, "isMutable", False),
        is_control=_bool(p, "isControl", False),
        connections=_refs(_child(p, "connections")),
        threaded_port=(
            ThreadedPort(tp.get("congestionPolicy", "wait"), _opt_int(tp, "queueSize"))
            if tp is not None
            else None
        ),
    )


def _output_port(p: etree._Element) -> OutputPort:
    return OutputPort(
        index=_int(p, "index"),
        name=p.get("name", ""),
        stream_name=p.get("streamName", p.get("name", "")),
        tuple_type_index=_int(p, "tupleTypeIndex"),
        encoding=p.get("encoding", "LE"),
        transport=p.get("transport", "TCP"),
        is_mutable=_bool(p, "isMutable", False),
        viewable=_bool(p, "viewable", True),
        connections=_refs(_child(p, "connections")),
    )


def _placement(res: etree._Element | None) -> HostPlacement:
    if res is None:
        return HostPlacement()
    host = _child(res, "hostLocation")
    pool = _child(res, "poolLocation")
    return HostPlacement(
        host=_req(host, "hostname") if host is not None else None,
        pool_index=_int(pool, "poolIndex") if pool is not None else None,
        inpool_index=_opt_int(pool, "inpoolIndex") if pool is not None else None,
        colocations=tuple(_req(c, "colocId") for c in _children(res, "coLocation")),
        exlocations=tuple(_req(c, "exlocId") for c in _children(res, "exLocation")),
        # Only an explicit "true" isolates (the original treated isolation="false" as true).
        isolation=_bool(res, "isolation", False),
    )


def _partitions(part: etree._Element | None) -> Partitions:
    if part is None:
        return Partitions()
    return Partitions(
        colocations=tuple(_req(c, "colocId") for c in _children(part, "coLocation")),
        exlocations=tuple(_req(c, "exlocId") for c in _children(part, "exLocation")),
        isolation=_bool(part, "isolation", False),
    )


def _import_spec(el: etree._Element) -> AdlImport:
    nb = _child(el, "nameBasedImport")
    pb = _child(el, "propertyBasedImport")
    if nb is not None:
        return AdlImport(
            application_name=nb.get("applicationName"),
            stream_name=nb.get("streamName"),
            application_scope=nb.get("applicationScope"),
            filter=el.get("filter"),
        )
    if pb is not None:
        return AdlImport(
            subscription=pb.get("subscription"),
            application_scope=pb.get("applicationScope"),
            filter=el.get("filter"),
        )
    raise AdlError(f"line {el.sourceline}: import operator '{el.get('name')}' has no import specification")


def _export_spec(el: etree._Element) -> AdlExport:
    props = tuple(
        ExportProperty(_req(p, "name"), p.get("type", ""), tuple(_text(v) for v in _children(p, "value")))
        for p in _children(_child(el, "properties"), "property")
    )
    allow = el.get("allowFilter")
    return AdlExport(
        stream_name=el.get("streamName"),
        properties=props,
        allow_filter=None if allow is None else allow == "true",
        congestion_policy=el.get("congestionPolicy"),
    )


def _unique_ports(el: etree._Element, ports: tuple[InputPort, ...] | tuple[OutputPort, ...]) -> None:
    indices = [p.index for p in ports]
    if len(set(indices)) != len(indices):
        raise AdlError(f"line {el.sourceline}: operator '{el.get('name')}' declares a port index twice")


def _operator(el: etree._Element, kind: OperatorKind, composite: int) -> Operator:
    child = _Kids(el)
    ckpt = child("checkpointing")
    jvm = child("jvmArguments")
    so = child("sharedObject")
    tracing = child("tracing")
    period = ckpt.get("period") if ckpt is not None else None
    inputs = tuple(_input_port(p) for p in _children(child("inputPorts"), "port"))
    outputs = tuple(_output_port(p) for p in _children(child("outputPorts"), "port"))
    _unique_ports(el, inputs)
    _unique_ports(el, outputs)
    return Operator(
        index=_int(el, "index"),
        name=_req(el, "name"),
        kind=kind,
        definition_index=_int(el, "definitionIndex"),
        composite=composite,
        input_ports=inputs,
        output_ports=outputs,
        restartable=_bool(el, "restartable", True),
        relocatable=_bool(el, "relocatable", True),
        optimized=_bool(el, "optimized", True),
        single_threaded_on_outputs=_bool(el, "singleThreadedOnOutputs", True),
        placement=_placement(child("resources")),
        partitions=_partitions(child("partitions")),
        checkpointing=(
            Checkpointing(_req(ckpt, "policy"), float(period) if period else None)
            if ckpt is not None
            else None
        ),
        jvm_arguments=tuple(_text(a) for a in _children(jvm, "jvmArgument")) if jvm is not None else None,
        annotations=_annotations(el),
        runtime_constants=tuple(
            RuntimeConstant(
                _req(c, "name"),
                c.get("value", ""),
                _opt_int(c, "submissionTimeValueIndex"),
                c.get("defaultValue"),
            )
            for c in _children(child("runtimeConstants"), "runtimeConstant")
        ),
        env_vars=tuple((_req(v, "name"), v.get("value", "")) for v in _children(child("envVars"), "envVar")),
        wrapper=_text(_child(so, "wrapper")) or "none",
        shared_object_class=so.get("class", "") if so is not None else "",
        shared_object_uri=_text(_child(so, "uri")),
        tracing_level=tracing.get("level") if tracing is not None else None,
        import_spec=_import_spec(el) if kind is OperatorKind.IMPORT else None,
        export_spec=_export_spec(el) if kind is OperatorKind.EXPORT else None,
    )


def _composite_ports(el: etree._Element | None) -> tuple[CompositePort, ...]:
    return tuple(
        CompositePort(
            _int(p, "index"), _refs(_child(p, "incomingConnections")), _refs(_child(p, "outgoingConnections"))
        )
        for p in _children(el, "port")
    )


class _Builder:
    def __init__(self, kinds: dict[int, str]) -> None:
        self.kinds = kinds
        self.operators: dict[int, Operator] = {}
        self.composites: dict[int, Composite] = {}

    def _claim(self, index: int, el: etree._Element) -> None:
        if index in self.operators or index in self.composites:
            raise AdlError(f"line {el.sourceline}: operator index {index} is used twice")

    def composite(self, el: etree._Element, parent: int | None) -> None:
        index = _int(el, "index")
        self._claim(index, el)
        definition = _int(el, "definitionIndex")
        self.composites[index] = Composite(
            index=index,
            name=_req(el, "name"),
            definition_index=definition,
            kind=self.kinds.get(definition, ""),
            parent=parent,
            input_ports=_composite_ports(_child(el, "inputPorts")),
            output_ports=_composite_ports(_child(el, "outputPorts")),
            annotations=_annotations(el),
        )
        for child in el:
            if not isinstance(child.tag, str):
                continue
            name = _local(child)
            if name == "compositeOperInstance":
                self.composite(child, index)
            elif name in _OPERATOR_TAGS:
                op = _operator(child, _OPERATOR_TAGS[name], index)
                self._claim(op.index, child)
                self.operators[op.index] = op


def _consistent_regions(composites: dict[int, Composite]) -> tuple[AdlConsistentRegion, ...]:
    found = []
    for comp in composites.values():
        for a in comp.annotations:
            if a.tag != "consistentRegion":
                continue
            period, drain, reset = a.get("period"), a.get("drainTimeout"), a.get("resetTimeout")
            attempts = a.get("maxConsecutiveResetAttempts")
            found.append(
                AdlConsistentRegion(
                    index=int(a.get("index") or 0),
                    trigger=a.get("trigger") or "operatorDriven",
                    period=float(period) if period else None,
                    drain_timeout=float(drain) if drain else None,
                    reset_timeout=float(reset) if reset else None,
                    max_consecutive_reset_attempts=int(attempts) if attempts else None,
                )
            )
    return tuple(sorted(found, key=lambda r: r.index))


def _parallel_region(el: etree._Element) -> AdlParallelRegion:
    po = _child(el, "parallelOperator")
    if po is None:
        raise AdlError(f"line {el.sourceline}: parallel region '{el.get('name')}' has no parallelOperator")
    width = _child(el, "parallelWidth")
    const = _child(width, "constantWidth")
    stv = _child(width, "submissionTimeParameterIndexForWidth")
    if const is None and stv is None:
        raise AdlError(f"line {el.sourceline}: parallel region '{el.get('name')}' has no width")
    splitters = []
    for s in _children(po, "splitter"):
        name = _req(s, "kind")  # (read outside the try: a missing kind is reported as missing)
        try:
            kind = SplitterKind(name)
        except ValueError:
            raise AdlError(f"line {s.sourceline}: unknown splitter kind '{s.get('kind')}'") from None
        attrs = tuple(_req(a, "name") for a in _children(_child(s, "attributes"), "attribute"))
        splitters.append(Splitter(_int(s, "iportIndex"), kind, attrs))
    try:
        constant = int(_text(const)) if const is not None else None
        stv_index = int(_text(stv)) if stv is not None else None
    except ValueError:
        raise AdlError(
            f"line {el.sourceline}: parallel region '{el.get('name')}' width is not an integer"
        ) from None
    return AdlParallelRegion(
        index=_int(el, "index"),
        name=_req(el, "name"),
        oper_index=_int(po, "operIndex"),
        splitters=tuple(splitters),
        constant_width=constant,
        width_value_index=stv_index,
        replicate_host_tags=tuple(_req(t, "name") for t in _children(el, "replicateHostTag")),
    )


def _host_pools(app: etree._Element) -> tuple[AdlHostPool, ...]:
    return tuple(
        AdlHostPool(
            index=_int(h, "index"),
            name=_req(h, "name"),
            exclusive=h.get("membershipMode") == "exclusive",
            size=_opt_int(h, "size"),
            hosts=tuple(_req(x, "hostname") for x in _children(h, "host")),
            tags=tuple(_req(t, "name") for t in _children(h, "tag")),
        )
        for h in _children(_child(app, "hostpools"), "hostpool")
    )


def _definitions(app: etree._Element) -> tuple[OperatorDefinition, ...]:
    return tuple(
        OperatorDefinition(
            index=_int(d, "index"),
            kind=_req(d, "kind"),
            runtime_type=d.get("runtimeType", "SPL_CPlusPlus"),
            toolkit_index=_opt_int(d, "toolkitIndex") or 0,
            custom_metric_indices=tuple(
                int(_text(i)) for i in _children(_child(d, "customMetricIndicies"), "customMetricIndex")
            ),
        )
        for d in _children(_child(app, "primitiveOperDefinitions"), "primitiveOperDefinition")
    )


def _submission_time_values(app: etree._Element) -> tuple[SubmissionTimeValue, ...]:
    return tuple(
        SubmissionTimeValue(
            index=_int(v, "index"),
            name=_req(v, "name"),
            composite_name=v.get("compositeName", ""),
            kind=v.get("kind", "named"),
            required=_bool(v, "required", False),
            default_value=v.get("defaultValue"),
        )
        for v in _children(_child(app, "submissionTimeValues"), "submissionTimeValue")
    )


def parse_adl(data: bytes, *, what: str = "ADL") -> Application:
    """Parse ADL bytes (untrusted) into an :class:`Application`. Raises AdlError."""
    try:
        root = parse_untrusted(data, what=what)
    except UnsafeXmlError as err:
        raise AdlError(str(err)) from None
    ns = etree.QName(root).namespace or ""
    if _local(root) != "applicationSet" or ns not in _NAMESPACES:
        raise AdlError(
            f"{what}: root <{_local(root)}> in namespace '{ns}' is not a v4200/v4000 ADL applicationSet"
        )
    apps = list(_children(root, "splApplication"))
    if len(apps) != 1:
        raise AdlError(f"{what}: expected exactly one <splApplication>, found {len(apps)}")
    app = apps[0]
    composites_el = _child(app, "composites")
    kinds = {
        _int(d, "index"): _req(d, "kind")
        for d in _children(_child(composites_el, "compositeOperDefinitions"), "compositeOperDefinition")
    }
    mains = list(_children(_child(composites_el, "compositeOperInstances"), "compositeOperInstance"))
    if not mains:
        raise AdlError(f"{what}: no main composite instance")
    builder = _Builder(kinds)
    for main in mains:
        builder.composite(main, None)
    if not any(op.kind is OperatorKind.PRIMITIVE for op in builder.operators.values()):
        raise AdlError(f"{what}: the application has no primitive operators")
    return Application(
        name=_req(app, "name"),
        scope=app.get("applicationScope", "Default"),
        version=app.get("version", ""),
        build_id=app.get("buildId", ""),
        bundle=app.get("bundle", ""),
        product_version=app.get("productVersion", ""),
        application_directory=app.get("applicationDirectory", ""),
        output_directory=app.get("outputDirectory", ""),
        data_directory=app.get("dataDirectory"),
        checkpoint_directory=app.get("checkpointDirectory"),
        avoid_runtime_yield=app.get("avoidRuntimeYield", "auto"),
        adl_version=_NAMESPACES[ns],
        main_composite=_int(mains[0], "index"),
        operators=builder.operators,
        composites=builder.composites,
        hostpools=_host_pools(app),
        tuple_types=tuple(
            TupleType(
                _int(t, "index"), tuple((_req(a, "name"), _req(a, "type")) for a in _children(t, "attribute"))
            )
            for t in _children(_child(app, "tupleTypes"), "tupleType")
        ),
        definitions=_definitions(app),
        composite_kinds=kinds,
        toolkits=tuple(
            ToolkitRef(_int(t, "index"), _req(t, "name"), t.get("version", ""))
            for t in _children(_child(app, "toolkits"), "toolkit")
        ),
        custom_metrics=tuple(
            CustomMetric(_int(m, "index"), _req(m, "name"), _req(m, "kind"), _text(m))
            for m in _children(_child(app, "customMetrics"), "customMetric")
        ),
        parallel_regions=tuple(
            _parallel_region(r) for r in _children(_child(app, "parallelRegions"), "parallelRegion")
        ),
        submission_time_values=_submission_time_values(app),
        consistent_regions=_consistent_regions(builder.composites),
    )
