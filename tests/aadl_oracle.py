"""The per-PE AADL (``augmentedPE``, valid against ``augmentedApplicationModel.xsd``).

Serialised on one line without insignificant whitespace, with attributes in a fixed order, so
the same PE always gives the same bytes and its sha256 is a stable content id.

Long: the AADL writer, one element type after another in the schema's order, read top to bottom.
"""

from __future__ import annotations

from lxml import etree

from streams_k8s.app.model import AdlExport, Application, RuntimeConstant
from streams_k8s.app.physical import PlannedPe, PortIndex
from streams_k8s.app.submission import spl_literal
from streams_k8s.app.topology import Node, SplitterStep, Topology

AUG = "http://www.ibm.com/xmlns/prod/streams/application/augmented"
BASE = "http://www.ibm.com/xmlns/prod/streams/application"
PHYS = "http://www.ibm.com/xmlns/prod/streams/application/physical"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
_NSMAP = {None: AUG, "a": BASE, "p": PHYS, "xsi": XSI}


def _b(value: bool) -> str:
    return "true" if value else "false"


def _el(parent: etree._Element, ns: str, local: str, /, **attrs: str) -> etree._Element:
    return etree.SubElement(parent, f"{{{ns}}}{local}", attrs)


def _context(root: etree._Element, topo: Topology) -> None:
    _el(root, BASE, "libraries")
    pools = _el(root, BASE, "hostpools")
    for pool in topo.hostpools:
        attrs = {
            "name": pool.name,
            "index": str(pool.index),
            "membershipMode": "exclusive" if pool.exclusive else "shared",
        }
        if pool.size is not None:
            attrs["size"] = str(pool.size)
        el = _el(pools, BASE, "hostpool", **attrs)
        for host in pool.hosts:
            _el(el, BASE, "host", hostname=host)
        for tag in pool.tags:
            _el(el, BASE, "tag", name=tag)
    types = _el(root, BASE, "tupleTypes")
    for tt in topo.app.tuple_types:
        _tuple_type(types, BASE, topo.app, tt.index)


def _tuple_type(parent: etree._Element, ns: str, app: Application, index: int) -> None:
    el = _el(parent, ns, "tupleType", index=str(index))
    tt = next((t for t in app.tuple_types if t.index == index), None)
    # The schema wants at least one attribute; an empty tuple type keeps a placeholder.
    for name, type_ in tt.attributes if tt and tt.attributes else (("_", "void"),):
        _el(el, BASE, "attribute", name=name, type=type_)


def _oper_instance(parent: etree._Element, topo: Topology, node: Node, ports: PortIndex) -> None:
    op = node.operator
    definition = next((d for d in topo.app.definitions if d.index == op.definition_index), None)
    el = _el(
        parent,
        BASE,
        "operInstance",
        index=str(node.index),
        name=node.name,
        definitionIndex=str(op.definition_index),
        singleThreadedOnInputs="true",
        singleThreadedOnOutputs=_b(op.single_threaded_on_outputs),
        restartable=_b(op.restartable),
        relocatable=_b(op.relocatable),
        launchCount="0",
        logicalName=op.name,
        logicalIndex=str(op.index),
        toolkitIndex=str(definition.toolkit_index if definition else 0),
    )
    el.set("class", op.shared_object_class or node.name)
    el.set(f"{{{XSI}}}type", "p:physOperInstanceType")
    if op.shared_object_uri:
        so = _el(el, BASE, "sharedObject")
        _el(so, BASE, "wrapper").text = op.wrapper
        _el(so, BASE, "sharedObjectUri").text = op.shared_object_uri
    res = _el(el, BASE, "resources")
    pl = node.placement
    if pl.host:
        _el(res, BASE, "hostLocation", hostname=pl.host)
    if pl.pool_index is not None:
        attrs = {"poolIndex": str(pl.pool_index)}
        if pl.inpool_index is not None:
            attrs["inpoolIndex"] = str(pl.inpool_index)
        _el(res, BASE, "poolLocation", **attrs)
    for coloc in pl.colocations:
        _el(res, BASE, "coLocation", colocId=coloc)
    for exloc in pl.exlocations:
        _el(res, BASE, "exLocation", exlocId=exloc)
    if pl.isolation:
        res.set("isolation", "true")
    if op.checkpointing is not None:
        ck = _el(el, BASE, "checkpointing", policy=op.checkpointing.policy)
        if op.checkpointing.period is not None:
            ck.set("period", repr(op.checkpointing.period))
    rcs = _el(el, BASE, "runtimeConstants")
    for rc in op.runtime_constants:
        _runtime_constant(rcs, topo, rc)
    _input_ports(el, topo, node, ports)
    _output_ports(el, topo, node, ports)
    for a in op.annotations:
        ann = _el(el, PHYS, "splAnnotation", tag=a.tag)
        for key, type_, value in a.values:
            _el(ann, BASE, "value", key=key, type=type_).text = value
    if op.jvm_arguments is not None:
        jvm = _el(el, PHYS, "jvmArguments")
        for arg in op.jvm_arguments:
            _el(jvm, PHYS, "jvmArgument").text = arg
    if node.channels:
        regions = _el(el, PHYS, "parallelRegions")
        for c in node.channels:
            _el(
                regions,
                PHYS,
                "parallelRegion",
                globalChannelIndex=str(c.global_),
                localChannelIndex=str(c.local),
                globalMaxChannels=str(c.global_max),
                localMaxChannels=str(c.local_max),
                regionIndex=str(c.region),
            )


def _runtime_constant(parent: etree._Element, topo: Topology, rc: RuntimeConstant) -> None:
    """A constant backed by a submission-time value takes the value the user gave, as SPL."""
    value = rc.value
    index = rc.submission_time_value_index
    el = _el(parent, BASE, "runtimeConstant", name=rc.name)
    if index is not None:
        given = topo.given_values.get(index)
        if given is not None:
            kind = next((v.kind for v in topo.app.submission_time_values if v.index == index), "named")
            value = spl_literal(given, kind)
        el.set("submissionTimeValueIndex", str(index))
        if rc.default_value is not None:
            el.set("defaultValue", rc.default_value)
    el.set("value", value)


def _input_ports(el: etree._Element, topo: Topology, node: Node, ports: PortIndex) -> None:
    container = _el(el, BASE, "inputPorts")
    dedicated = (node.threading or topo.default_threading) == "dedicated"
    incoming: dict[int, list[tuple[bool, dict[str, str]]]] = {}
    for edge in sorted(topo.edges_into(node.index), key=lambda e: (e.dst_port, e.src, e.src_port)):
        inter = ports.pe_of[edge.src] != ports.pe_of[node.index]
        attrs = {"operInstanceIndex": str(edge.src), "oportIndex": str(edge.src_port)}
        if edge.splitter:
            attrs["splitterIndex"] = str(edge.splitter.region)
            attrs["channelIndex"] = str(edge.splitter.channel)
        if inter:
            attrs["pePortIndex"] = str(ports.inputs[(node.index, edge.dst_port)][1])
        incoming.setdefault(edge.dst_port, []).append((inter, attrs))
    for port in node.operator.input_ports:
        p = _el(
            container,
            BASE,
            "inputPort",
            index=str(port.index),
            name=port.name,
            isMutable=_b(port.is_mutable),
            tupleTypeIndex=str(port.tuple_type_index),
        )
        if port.is_control:
            p.set("isControl", "true")
        conns = incoming.get(port.index, [])
        for want_inter in (True, False):
            for inter, attrs in conns:
                if inter == want_inter:
                    _el(p, BASE, "interPeConnection" if inter else "intraPeConnection", **attrs)
        # intra-PE connections get a thread of their own where the runtime expects one: from a
        # parallel channel's splitter, or into an operator asking for a dedicated thread
        injected = any(not inter and (dedicated or "splitterIndex" in attrs) for inter, attrs in conns)
        if port.threaded_port is not None or injected:
            tp = _el(
                p,
                BASE,
                "threadedPort",
                congestionPolicy=port.threaded_port.congestion_policy if port.threaded_port else "wait",
                singleThreadedOnInput="true",
                isInjected=_b(port.threaded_port is None),
            )
            if port.threaded_port is not None and port.threaded_port.queue_size is not None:
                tp.set("queueSize", str(port.threaded_port.queue_size))


def _output_ports(el: etree._Element, topo: Topology, node: Node, ports: PortIndex) -> None:
    container = _el(el, BASE, "outputPorts")
    for port in node.operator.output_ports:
        p = _el(
            container,
            BASE,
            "outputPort",
            index=str(port.index),
            name=port.name,
            isMutable=_b(port.is_mutable),
            tupleTypeIndex=str(port.tuple_type_index),
            streamName=node.name if not node.channels else f"{port.stream_name}",
            viewable=_b(port.viewable),
            logicalStreamName=port.stream_name,
        )
        p.set(f"{{{XSI}}}type", "p:physOperInstanceOutputPortType")
        direct: list[_Connection] = []
        split: list[tuple[tuple[SplitterStep, ...], _Connection]] = []
        for edge in sorted(topo.edges_from(node.index), key=lambda e: (e.src_port, e.dst, e.dst_port)):
            if edge.src_port != port.index:
                continue
            inter = ports.pe_of[edge.dst] != ports.pe_of[node.index]
            attrs = {"operInstanceIndex": str(edge.dst), "iportIndex": str(edge.dst_port)}
            if inter:
                attrs["pePortIndex"] = str(ports.inputs[(edge.dst, edge.dst_port)][1])
            if edge.splitter:
                split.append((edge.splitter.path, (inter, attrs)))
            else:
                direct.append((inter, attrs))
        _connections(p, direct)
        _splitters(p, split, 0)


_Connection = tuple[bool, dict[str, str]]  # (inter-PE, attributes)


def _connections(parent: etree._Element, conns: list[_Connection]) -> None:
    """Inter-PE connections first, then intra-PE ones, as the schema orders them."""
    for want_inter in (True, False):
        for inter, attrs in conns:
            if inter == want_inter:
                _el(parent, BASE, "interPeConnection" if inter else "intraPeConnection", **attrs)


def _splitters(
    parent: etree._Element, items: list[tuple[tuple[SplitterStep, ...], _Connection]], depth: int
) -> None:
    """Splitters at ``depth`` of the paths, each channel holding its connections or deeper splitters.

    The schema lets a parallel channel hold one kind of content, so a channel with several kinds
    (inter-PE, intra-PE, nested splitters) is written as several channel elements with its index.
    """
    regions: dict[tuple[int, str, int], dict[int, list[tuple[tuple[SplitterStep, ...], _Connection]]]] = {}
    for path, conn in items:
        step = path[depth]
        key = (step.region, step.kind.value, step.iport)
        regions.setdefault(key, {}).setdefault(step.channel, []).append((path, conn))
    for (region, kind, iport), channels in sorted(regions.items()):
        sp = _el(
            parent,
            BASE,
            "splitter",
            kind=kind,
            index=str(region),
            iportIndex=str(iport),
            regionIndex=str(region),
        )
        for channel, sub in sorted(channels.items()):
            deeper = [(path, conn) for path, conn in sub if len(path) > depth + 1]
            here = [conn for path, conn in sub if len(path) == depth + 1]
            for want_inter in (True, False):
                kind_conns = [c for c in here if c[0] == want_inter]
                if kind_conns:
                    _connections(_el(sp, BASE, "parallelChannel", index=str(channel)), kind_conns)
            if deeper:
                _splitters(_el(sp, BASE, "parallelChannel", index=str(channel)), deeper, depth + 1)


def _exported_stream(port: etree._Element, operator: str, spec: AdlExport) -> None:
    el = _el(port, AUG, "exportedStream", exportOperName=operator)
    if spec.stream_name is not None:
        el.set("name", spec.stream_name)
    if spec.allow_filter is not None:
        el.set("allowFilter", _b(spec.allow_filter))
    if spec.congestion_policy is not None:
        el.set("congestionPolicy", spec.congestion_policy)
    if spec.properties:
        props = _el(el, BASE, "properties")
        for prop in spec.properties:
            p = _el(props, BASE, "property", name=prop.name, type=prop.type)
            for value in prop.values:
                _el(p, BASE, "value").text = value


def _pe_ports(root: etree._Element, topo: Topology, pe: PlannedPe, ports: PortIndex) -> None:
    app = topo.app
    inputs = _el(root, AUG, "inputPorts")
    for p in pe.inputs:
        port = topo.nodes[p.node].operator.input_port(p.port)
        assert port is not None  # the topology only connects existing ports
        el = _el(inputs, AUG, "inputPort", id=str(p.id), index=str(p.id), peId=str(pe.id))
        el.set("encoding", port.encoding)
        el.set("transport", port.transport)
        _tuple_type(el, AUG, app, port.tuple_type_index)
        imports = topo.nodes[p.node].imports.get(p.port, ())
        if imports:
            imp = _el(el, AUG, "importedStreams")
            by_name = [i for i in imports if i[2].subscription is None]
            by_property = [i for i in imports if i[2].subscription is not None][:1]  # schema: at most one
            for op_name, op_index, spec in by_name + by_property:
                attrs = {"importOperName": op_name, "index": str(op_index)}
                if spec.subscription is not None:
                    attrs["subscription"] = spec.subscription
                else:
                    attrs["applicationName"] = spec.application_name or ""
                    attrs["streamName"] = spec.stream_name or ""
                if spec.application_scope:
                    attrs["applicationScope"] = spec.application_scope
                kind = "propertyBasedImport" if spec.subscription is not None else "nameBasedImport"
                _el(imp, BASE, kind, **attrs)
        static = _el(el, AUG, "staticConnections")
        for src_pe, edge in sorted(p.senders, key=lambda s: (s[0], s[1].src, s[1].src_port)):
            channel = (edge.splitter.region, edge.splitter.channel) if edge.splitter else None
            sender = ports.outputs[(edge.src, edge.src_port, channel)][1]
            _el(
                static, AUG, "staticConnection", peId=str(src_pe), oportId=str(sender), oportIndex=str(sender)
            )
        _el(el, AUG, "operInstanceConnection", operInstanceIndex=str(p.node), iportIndex=str(p.port))
    outputs = _el(root, AUG, "outputPorts")
    for out in pe.outputs:
        oport = topo.nodes[out.node].operator.output_port(out.port)
        assert oport is not None  # the topology only connects existing ports
        el = _el(outputs, AUG, "outputPort", id=str(out.id), index=str(out.id), peId=str(pe.id))
        el.set("encoding", oport.encoding)
        el.set("transport", oport.transport)
        el.set("singleThreadedOnOutput", "true")
        _tuple_type(el, AUG, app, oport.tuple_type_index)
        if out.exports:
            _exported_stream(el, *out.exports[0])  # the schema allows one exported stream per port
        static = _el(el, AUG, "staticConnections")
        for dst_pe, edge in sorted(out.receivers, key=lambda r: (r[0], r[1].dst, r[1].dst_port)):
            iport = ports.inputs[(edge.dst, edge.dst_port)][1]
            _el(
                static,
                AUG,
                "staticConnection",
                peId=str(dst_pe),
                iportId=str(iport),
                iportIndex=str(iport),
                iOperInstanceIndex=str(edge.dst),
                iOperInstancePortIndex=str(edge.dst_port),
            )
        conn = _el(
            el, AUG, "operInstanceConnection", operInstanceIndex=str(out.node), oportIndex=str(out.port)
        )
        if out.channel is not None:
            conn.set("splitterIndex", str(out.channel[0]))
            conn.set("channelIndex", str(out.channel[1]))


def pe_aadl(topo: Topology, pe: PlannedPe, ports: PortIndex, *, job_name: str, job_id: int) -> str:
    """The AADL document of ``pe`` as a single-line string."""
    app = topo.app
    members = [topo.nodes[n] for n in pe.nodes]
    runtimes = {d.index: d.runtime_type for d in app.definitions}
    cpp = any(runtimes.get(n.operator.definition_index, "SPL_CPlusPlus") == "SPL_CPlusPlus" for n in members)
    root = etree.Element(f"{{{AUG}}}augmentedPE", nsmap=_NSMAP)  # type: ignore[arg-type]
    attrs = {
        "id": str(pe.id),
        "jobId": str(job_id),
        "jobName": job_name,
        "user": "user",
        "applicationScope": app.scope,
        "class": f"PE{pe.index}",  # the container class; it names no code (dynamicLoad)
        "language": "C++" if cpp else "Java",
        "optimized": _b(all(n.operator.optimized for n in members)),
        "restartable": _b(all(n.operator.restartable for n in members)),
        "relocatable": _b(all(n.operator.relocatable for n in members)),
        "launchCount": "0",
        "applicationDirectory": app.application_directory,
        "outputDirectory": app.output_directory,
        "display": "",
        "logicalIndex": str(pe.index),
        "buildId": app.build_id,
        "bundle": app.bundle,
        "version": app.version,
        "applicationName": app.name,
        "jobGroup": "default",
        "avoidRuntimeYield": app.avoid_runtime_yield,
    }
    if app.data_directory:
        attrs["dataDirectory"] = app.data_directory
    if app.checkpoint_directory:
        attrs["checkpointDirectory"] = app.checkpoint_directory
    for key, value in attrs.items():
        root.set(key, value)
    _context(root, topo)
    env = _el(root, AUG, "envVars")
    for name, value in sorted({kv for n in members for kv in n.operator.env_vars}):
        _el(env, BASE, "envVar", name=name, value=value)
    exe = _el(root, AUG, "executable", dynamicLoad="true", digest="")
    wrapper = next((n.operator.wrapper for n in members if n.operator.wrapper != "none"), "none")
    _el(exe, BASE, "wrapper").text = wrapper
    _el(exe, BASE, "executableUri").text = ""
    _el(exe, BASE, "arguments").text = ""
    _el(exe, BASE, "dependencies")
    opers = _el(root, AUG, "operInstances")
    for node in members:
        _oper_instance(opers, topo, node, ports)
    _pe_ports(root, topo, pe, ports)
    defs = _el(root, AUG, "operDefinitions")
    used = sorted({n.operator.definition_index for n in members})
    for d in app.definitions:
        if d.index in used:
            el = _el(
                defs, BASE, "operDefinition", kind=d.kind, index=str(d.index), runtimeType=d.runtime_type
            )
            if d.custom_metric_indices:
                cmi = _el(el, BASE, "customMetricIndicies")
                for i in d.custom_metric_indices:
                    _el(cmi, BASE, "customMetricIndex").text = str(i)
    if app.custom_metrics:
        metrics = _el(root, AUG, "customMetrics")
        for m in app.custom_metrics:
            cm = _el(metrics, BASE, "customMetric", index=str(m.index), name=m.name, kind=m.kind)
            _el(cm, BASE, "description").text = m.description
    tks = _el(root, AUG, "toolkitsMap")
    for tk in app.toolkits:
        _el(tks, PHYS, "toolkitMap", index=str(tk.index), name=tk.name)
    return etree.tostring(root, encoding="unicode")
