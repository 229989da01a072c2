//! The `augmentedPE` document, one element type after another in the schema's order: the root
//! and its context, then each operator instance with its ports, connections and splitters.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;

use super::input::{Edge, Job, Member, Node, Pe, PortIndex, RuntimeConstant, TupleType};
use super::ports::pe_ports;
use super::xml::{python_float_repr, Writer};
use super::{AadlError, Text};

const NAMESPACES: &str = " xmlns=\"http://www.ibm.com/xmlns/prod/streams/application/augmented\" \
    xmlns:a=\"http://www.ibm.com/xmlns/prod/streams/application\" \
    xmlns:p=\"http://www.ibm.com/xmlns/prod/streams/application/physical\" \
    xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"";

/// What every PE of a job shares: lookups, and the fragments written the same in each.
pub struct Shared<'a, S> {
    pub job: &'a Job<S>,
    /// `<a:libraries/>`, host pools and tuple types, serialised.
    context: String,
    /// custom metrics and the toolkit map, serialised.
    tail: String,
    tuple_types: FxHashMap<i64, &'a TupleType<S>>,
    /// definition index → toolkit index (the first definition of an index, as `next()` finds it)
    toolkits: FxHashMap<i64, i64>,
    /// definition index → runtime type (the last one, as a dict comprehension keeps it)
    runtimes: FxHashMap<i64, &'a str>,
}

impl<'a, S: Text> Shared<'a, S> {
    pub fn new(job: &'a Job<S>) -> Result<Self, AadlError> {
        let app = &job.app;
        let mut tuple_types = FxHashMap::default();
        for tt in &app.tuple_types {
            tuple_types.entry(tt.index).or_insert(tt);
        }
        let mut toolkits = FxHashMap::default();
        let mut runtimes = FxHashMap::default();
        for d in &app.definitions {
            toolkits.entry(d.index).or_insert(d.toolkit_index);
            runtimes.insert(d.index, &*d.runtime_type);
        }
        let mut shared = Shared {
            job,
            context: String::new(),
            tail: String::new(),
            tuple_types,
            toolkits,
            runtimes,
        };
        shared.context = shared.context_fragment()?;
        shared.tail = shared.tail_fragment()?;
        Ok(shared)
    }

    fn context_fragment(&self) -> Result<String, AadlError> {
        let mut w = Writer::with_capacity(4096);
        w.start("a:libraries").end();
        w.start("a:hostpools");
        for pool in &self.job.hostpools {
            w.start("a:hostpool")
                .attr("name", &pool.name)?
                .int("index", pool.index);
            w.attr(
                "membershipMode",
                if pool.exclusive {
                    "exclusive"
                } else {
                    "shared"
                },
            )?;
            if let Some(size) = pool.size {
                w.int("size", size);
            }
            for host in &pool.hosts {
                w.start("a:host").attr("hostname", host)?.end();
            }
            for tag in &pool.tags {
                w.start("a:tag").attr("name", tag)?.end();
            }
            w.end();
        }
        w.end().start("a:tupleTypes");
        for tt in &self.job.app.tuple_types {
            self.tuple_type(&mut w, "a:tupleType", tt.index)?;
        }
        w.end();
        Ok(w.finish())
    }

    fn tail_fragment(&self) -> Result<String, AadlError> {
        let app = &self.job.app;
        let mut w = Writer::with_capacity(1024);
        if !app.custom_metrics.is_empty() {
            w.start("customMetrics");
            for m in &app.custom_metrics {
                w.start("a:customMetric")
                    .int("index", m.index)
                    .attr("name", &m.name)?;
                w.attr("kind", &m.kind)?
                    .text_element("a:description", &m.description)?;
                w.end();
            }
            w.end();
        }
        w.start("toolkitsMap");
        for tk in &app.toolkits {
            w.start("p:toolkitMap")
                .int("index", tk.index)
                .attr("name", &tk.name)?
                .end();
        }
        w.end();
        Ok(w.finish())
    }

    /// `element` (a `tupleType` of either namespace) with the attributes of tuple type `index`;
    /// the schema wants at least one, so an empty or unknown type keeps a placeholder.
    pub fn tuple_type(
        &self,
        w: &mut Writer,
        element: &'static str,
        index: i64,
    ) -> Result<(), AadlError> {
        w.start(element).int("index", index);
        match self.tuple_types.get(&index) {
            Some(tt) if !tt.attributes.is_empty() => {
                for (name, type_) in &tt.attributes {
                    w.start("a:attribute")
                        .attr("name", name)?
                        .attr("type", type_)?
                        .end();
                }
            }
            _ => {
                w.start("a:attribute")
                    .attr("name", "_")?
                    .attr("type", "void")?
                    .end();
            }
        }
        w.end();
        Ok(())
    }
}

/// Looks up the PE port a connection's destination (node, port) ended up on.
pub fn input_port_id(ports: &PortIndex, node: i64, port: i64) -> Result<i64, AadlError> {
    ports
        .inputs
        .get(&(node, port))
        .map(|&(_, id)| id)
        .ok_or_else(|| {
            AadlError::inconsistent(format!("input port {port} of node {node} is on no PE port"))
        })
}

pub fn pe_of(ports: &PortIndex, node: i64) -> Result<i64, AadlError> {
    ports
        .pe_of
        .get(&node)
        .copied()
        .ok_or_else(|| AadlError::inconsistent(format!("node {node} is in no PE")))
}

pub fn render_pe<S: Text>(
    shared: &Shared<'_, S>,
    ports: &PortIndex,
    pe: &Pe<S>,
) -> Result<String, AadlError> {
    let job = shared.job;
    let app = &job.app;
    let ops = || pe.members.iter().map(|m| &m.node.operator);
    let cpp = ops().any(|op| {
        shared
            .runtimes
            .get(&op.definition_index)
            .is_none_or(|r| *r == "SPL_CPlusPlus")
    });
    let mut w = Writer::with_capacity(shared.context.len() + 2048 * pe.members.len());
    w.start("augmentedPE").raw_attributes(NAMESPACES);
    w.int("id", pe.id)
        .int("jobId", job.id)
        .attr("jobName", &job.name)?;
    w.attr("user", "user")?
        .attr("applicationScope", &app.scope)?;
    // the container class; it names no code (dynamicLoad)
    w.attr("class", format!("PE{}", pe.index))?;
    w.attr("language", if cpp { "C++" } else { "Java" })?;
    w.flag("optimized", ops().all(|op| op.optimized));
    w.flag("restartable", ops().all(|op| op.restartable));
    w.flag("relocatable", ops().all(|op| op.relocatable));
    w.attr("launchCount", "0")?;
    w.attr("applicationDirectory", &app.application_directory)?;
    w.attr("outputDirectory", &app.output_directory)?;
    w.attr("display", "")?.int("logicalIndex", pe.index);
    w.attr("buildId", &app.build_id)?
        .attr("bundle", &app.bundle)?;
    w.attr("version", &app.version)?
        .attr("applicationName", &app.name)?;
    w.attr("jobGroup", "default")?;
    w.attr("avoidRuntimeYield", &app.avoid_runtime_yield)?;
    for (key, value) in [
        ("dataDirectory", &app.data_directory),
        ("checkpointDirectory", &app.checkpoint_directory),
    ] {
        if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
            w.attr(key, value)?;
        }
    }
    w.fragment(&shared.context);
    let env: BTreeSet<(&str, &str)> = ops()
        .flat_map(|op| &op.env_vars)
        .map(|(k, v)| (&**k, &**v))
        .collect();
    w.start("envVars");
    for (name, value) in env {
        w.start("a:envVar")
            .attr("name", name)?
            .attr("value", value)?
            .end();
    }
    w.end();
    w.start("executable")
        .attr("dynamicLoad", "true")?
        .attr("digest", "")?;
    let wrapper = ops().map(|op| &*op.wrapper).find(|w| *w != "none");
    w.text_element("a:wrapper", wrapper.unwrap_or("none"))?;
    w.text_element("a:executableUri", "")?
        .text_element("a:arguments", "")?;
    w.start("a:dependencies").end().end();
    w.start("operInstances");
    for member in &pe.members {
        oper_instance(&mut w, shared, ports, member)?;
    }
    w.end();
    pe_ports(&mut w, shared, ports, pe)?;
    w.start("operDefinitions");
    let used: BTreeSet<i64> = ops().map(|op| op.definition_index).collect();
    for d in app.definitions.iter().filter(|d| used.contains(&d.index)) {
        w.start("a:operDefinition")
            .attr("kind", &d.kind)?
            .int("index", d.index);
        w.attr("runtimeType", &d.runtime_type)?;
        if !d.custom_metric_indices.is_empty() {
            w.start("a:customMetricIndicies");
            for &i in &d.custom_metric_indices {
                w.int_element("a:customMetricIndex", i);
            }
            w.end();
        }
        w.end();
    }
    w.end().fragment(&shared.tail).end();
    Ok(w.finish())
}

fn oper_instance<S: Text>(
    w: &mut Writer,
    shared: &Shared<'_, S>,
    ports: &PortIndex,
    member: &Member<S>,
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
    w.int(
        "toolkitIndex",
        shared
            .toolkits
            .get(&op.definition_index)
            .copied()
            .unwrap_or(0),
    );
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
pub struct Connection {
    pub inter: bool,
    pub operator: i64,
    /// `oportIndex` on input ports, `iportIndex` on output ports
    pub port: (&'static str, i64),
    pub channel: Option<(i64, i64)>,
    pub pe_port: Option<i64>,
}

/// Inter-PE connections first, then intra-PE ones, as the schema orders them.
pub fn connections<'c>(w: &mut Writer, conns: impl Iterator<Item = &'c Connection> + Clone) {
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

fn sorted_by<S, K: Ord>(edges: &[Edge<S>], key: impl Fn(&Edge<S>) -> K) -> Vec<&Edge<S>> {
    let mut sorted: Vec<&Edge<S>> = edges.iter().collect();
    sorted.sort_by_key(|e| key(e));
    sorted
}

fn input_ports<S: Text>(
    w: &mut Writer,
    shared: &Shared<'_, S>,
    ports: &PortIndex,
    member: &Member<S>,
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
    member: &Member<S>,
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

type Split<'e, S> = (&'e [super::input::SplitterStep<S>], Connection);
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
