//! One `operInstance`: the node's placement, checkpointing, runtime constants, annotations,
//! parallel channels, and its ports with the connections into and out of them, through the
//! splitters of the parallel regions they enter.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::document::{input_port_id, pe_of, Shared};
use super::input::{Edge, Member, Node, PortIndex, RuntimeConstant, SplitterStep};
use super::xml::{python_float_repr, Writer};
use super::{AadlError, Text};

pub fn oper_instance<S: Text>(
    w: &mut Writer,
    shared: &Shared<'_, S>,
    ports: &PortIndex,
    member: &Member<'_, S>,
) -> Result<(), AadlError> {
    let node = &member.node;
    let op = &node.operator;
    w.start("a:operInstance")
        .int("index", node.index)
        .attr("name", &node.name)?;
    w.int("definitionIndex", op.definition_index);
    w.attr("singleThreadedOnInputs", "true")?;
    w.flag("singleThreadedOnOutputs", op.single_threaded_on_outputs);
    w.flag("restartable", op.restartable)
        .flag("relocatable", op.relocatable);
    w.attr("launchCount", "0")?.attr("logicalName", &op.name)?;
    w.int("logicalIndex", op.index);
    w.int("toolkitIndex", shared.toolkit_index(op.definition_index));
    let class = if op.shared_object_class.is_empty() {
        &node.name
    } else {
        &op.shared_object_class
    };
    w.attr("class", class)?
        .attr("xsi:type", "p:physOperInstanceType")?;
    if !op.shared_object_uri.is_empty() {
        w.start("a:sharedObject")
            .text_element("a:wrapper", &op.wrapper)?;
        w.text_element("a:sharedObjectUri", &op.shared_object_uri)?
            .end();
    }
    resources(w, node)?;
    if let Some(ck) = &op.checkpointing {
        w.start("a:checkpointing").attr("policy", &ck.policy)?;
        if let Some(period) = ck.period {
            w.attr("period", python_float_repr(period))?;
        }
        w.end();
    }
    w.start("a:runtimeConstants");
    for rc in &op.runtime_constants {
        runtime_constant(w, shared, rc)?;
    }
    w.end();
    input_ports(w, shared, ports, member)?;
    output_ports(w, ports, member)?;
    for a in &op.annotations {
        w.start("p:splAnnotation").attr("tag", &a.tag)?;
        for (key, type_, value) in &a.values {
            w.start("a:value").attr("key", key)?.attr("type", type_)?;
            w.text(value)?.end();
        }
        w.end();
    }
    if let Some(args) = &op.jvm_arguments {
        w.start("p:jvmArguments");
        for arg in args {
            w.text_element("p:jvmArgument", arg)?;
        }
        w.end();
    }
    if !node.channels.is_empty() {
        w.start("p:parallelRegions");
        for c in &node.channels {
            w.start("p:parallelRegion")
                .int("globalChannelIndex", c.global_);
            w.int("localChannelIndex", c.local)
                .int("globalMaxChannels", c.global_max);
            w.int("localMaxChannels", c.local_max)
                .int("regionIndex", c.region)
                .end();
        }
        w.end();
    }
    w.end();
    Ok(())
}

fn resources<S: Text>(w: &mut Writer, node: &Node<S>) -> Result<(), AadlError> {
    let pl = &node.placement;
    w.start("a:resources");
    if pl.isolation {
        w.attr("isolation", "true")?;
    }
    if let Some(host) = pl.host.as_deref().filter(|h| !h.is_empty()) {
        w.start("a:hostLocation").attr("hostname", host)?.end();
    }
    if let Some(pool) = pl.pool_index {
        w.start("a:poolLocation").int("poolIndex", pool);
        if let Some(inpool) = pl.inpool_index {
            w.int("inpoolIndex", inpool);
        }
        w.end();
    }
    for coloc in &pl.colocations {
        w.start("a:coLocation").attr("colocId", coloc)?.end();
    }
    for exloc in &pl.exlocations {
        w.start("a:exLocation").attr("exlocId", exloc)?.end();
    }
    w.end();
    Ok(())
}

/// A constant backed by a submission-time value takes the value the user gave, as SPL.
fn runtime_constant<S: Text>(
    w: &mut Writer,
    shared: &Shared<'_, S>,
    rc: &RuntimeConstant<S>,
) -> Result<(), AadlError> {
    w.start("a:runtimeConstant").attr("name", &rc.name)?;
    let mut value = &rc.value;
    if let Some(index) = rc.submission_time_value_index {
        if let Some(given) = shared.job.given.get(&index) {
            value = given;
        }
        w.int("submissionTimeValueIndex", index);
        if let Some(default) = &rc.default_value {
            w.attr("defaultValue", default)?;
        }
    }
    w.attr("value", value)?.end();
    Ok(())
}

/// One `interPeConnection` / `intraPeConnection`: the operator port at the other end, the
/// splitter channel it comes through (input ports only) and, between PEs, the PE input port.
#[derive(Clone)]
struct Connection {
    inter: bool,
    operator: i64,
    /// `oportIndex` on input ports, `iportIndex` on output ports
    port: (&'static str, i64),
    channel: Option<(i64, i64)>,
    pe_port: Option<i64>,
}

/// Inter-PE connections first, then intra-PE ones, as the schema orders them.
fn connections<'c>(w: &mut Writer, conns: impl Iterator<Item = &'c Connection> + Clone) {
    for want_inter in [true, false] {
        for c in conns.clone().filter(|c| c.inter == want_inter) {
            w.start(if c.inter {
                "a:interPeConnection"
            } else {
                "a:intraPeConnection"
            });
            w.int("operInstanceIndex", c.operator)
                .int(c.port.0, c.port.1);
            if let Some((region, channel)) = c.channel {
                w.int("splitterIndex", region).int("channelIndex", channel);
            }
            if let Some(pe_port) = c.pe_port {
                w.int("pePortIndex", pe_port);
            }
            w.end();
        }
    }
}

fn sorted_by<'e, S, K: Ord>(
    edges: &[&'e Edge<S>],
    key: impl Fn(&Edge<S>) -> K,
) -> Vec<&'e Edge<S>> {
    let mut sorted = edges.to_vec();
    sorted.sort_by_key(|e| key(e));
    sorted
}

fn input_ports<S: Text>(
    w: &mut Writer,
    shared: &Shared<'_, S>,
    ports: &PortIndex,
    member: &Member<'_, S>,
) -> Result<(), AadlError> {
    let node = &member.node;
    let threading = node.threading.as_deref().filter(|t| !t.is_empty());
    let dedicated = threading.or(shared.job.default_threading.as_deref()) == Some("dedicated");
    let here = pe_of(ports, node.index)?;
    let mut incoming: FxHashMap<i64, Vec<(Connection, bool)>> = FxHashMap::default();
    for edge in sorted_by(&member.into, |e| (e.dst_port, e.src, e.src_port)) {
        let inter = pe_of(ports, edge.src)? != here;
        let conn = Connection {
            inter,
            operator: edge.src,
            port: ("oportIndex", edge.src_port),
            channel: edge.channel(),
            pe_port: inter
                .then(|| input_port_id(ports, node.index, edge.dst_port))
                .transpose()?,
        };
        let split = edge.splitter.is_some();
        incoming
            .entry(edge.dst_port)
            .or_default()
            .push((conn, split));
    }
    w.start("a:inputPorts");
    for port in &node.operator.input_ports {
        w.start("a:inputPort")
            .int("index", port.index)
            .attr("name", &port.name)?;
        w.flag("isMutable", port.is_mutable)
            .int("tupleTypeIndex", port.tuple_type_index);
        if port.is_control {
            w.attr("isControl", "true")?;
        }
        let conns = incoming
            .get(&port.index)
            .map(Vec::as_slice)
            .unwrap_or_default();
        connections(w, conns.iter().map(|(c, _)| c));
        // intra-PE connections get a thread of their own where the runtime expects one: from a
        // parallel channel's splitter, or into an operator asking for a dedicated thread
        let injected = conns
            .iter()
            .any(|(c, split)| !c.inter && (dedicated || *split));
        if port.threaded_port.is_some() || injected {
            let tp = port.threaded_port.as_ref();
            w.start("a:threadedPort");
            w.attr(
                "congestionPolicy",
                tp.map_or("wait", |t| &*t.congestion_policy),
            )?;
            w.attr("singleThreadedOnInput", "true")?
                .flag("isInjected", tp.is_none());
            if let Some(size) = tp.and_then(|t| t.queue_size) {
                w.int("queueSize", size);
            }
            w.end();
        }
        w.end();
    }
    w.end();
    Ok(())
}

fn output_ports<S: Text>(
    w: &mut Writer,
    ports: &PortIndex,
    member: &Member<'_, S>,
) -> Result<(), AadlError> {
    let node = &member.node;
    let here = pe_of(ports, node.index)?;
    let edges = sorted_by(&member.from, |e| (e.src_port, e.dst, e.dst_port));
    w.start("a:outputPorts");
    for port in &node.operator.output_ports {
        w.start("a:outputPort")
            .int("index", port.index)
            .attr("name", &port.name)?;
        w.flag("isMutable", port.is_mutable)
            .int("tupleTypeIndex", port.tuple_type_index);
        let stream = if node.channels.is_empty() {
            &node.name
        } else {
            &port.stream_name
        };
        w.attr("streamName", stream)?
            .flag("viewable", port.viewable);
        w.attr("logicalStreamName", &port.stream_name)?;
        w.attr("xsi:type", "p:physOperInstanceOutputPortType")?;
        let mut direct = Vec::new();
        let mut split = Vec::new();
        for edge in edges.iter().filter(|e| e.src_port == port.index) {
            let inter = pe_of(ports, edge.dst)? != here;
            let conn = Connection {
                inter,
                operator: edge.dst,
                port: ("iportIndex", edge.dst_port),
                channel: None,
                pe_port: inter
                    .then(|| input_port_id(ports, edge.dst, edge.dst_port))
                    .transpose()?,
            };
            match &edge.splitter {
                Some(use_) => split.push((use_.path.as_slice(), conn)),
                None => direct.push(conn),
            }
        }
        connections(w, direct.iter());
        splitters(w, &split, 0)?;
        w.end();
    }
    w.end();
    Ok(())
}

type Split<'e, S> = (&'e [SplitterStep<S>], Connection);
/// A splitter's connections by channel.
type Channels<'a, 'e, S> = BTreeMap<i64, Vec<&'a Split<'e, S>>>;

/// Splitters at `depth` of the paths, each channel holding its connections or deeper splitters.
///
/// The schema lets a parallel channel hold one kind of content, so a channel with several kinds
/// (inter-PE, intra-PE, nested splitters) is written as several channel elements with its index.
fn splitters<S: Text>(
    w: &mut Writer,
    items: &[Split<'_, S>],
    depth: usize,
) -> Result<(), AadlError> {
    let mut regions: BTreeMap<(i64, &str, i64), Channels<'_, '_, S>> = BTreeMap::new();
    for item in items {
        let step = &item.0[depth];
        let key = (step.region, &*step.kind, step.iport);
        regions
            .entry(key)
            .or_default()
            .entry(step.channel)
            .or_default()
            .push(item);
    }
    for ((region, kind, iport), channels) in regions {
        w.start("a:splitter").attr("kind", kind)?;
        w.int("index", region)
            .int("iportIndex", iport)
            .int("regionIndex", region);
        for (channel, sub) in channels {
            for want_inter in [true, false] {
                let mut here = sub
                    .iter()
                    .filter(|(path, c)| path.len() == depth + 1 && c.inter == want_inter)
                    .map(|(_, conn)| conn)
                    .peekable();
                if here.peek().is_some() {
                    w.start("a:parallelChannel").int("index", channel);
                    connections(w, here);
                    w.end();
                }
            }
            let deeper: Vec<Split<'_, S>> = sub
                .iter()
                .filter(|(path, _)| path.len() > depth + 1)
                .map(|&item| item.clone())
                .collect();
            if !deeper.is_empty() {
                w.start("a:parallelChannel").int("index", channel);
                splitters(w, &deeper, depth + 1)?;
                w.end();
            }
        }
        w.end();
    }
    Ok(())
}
