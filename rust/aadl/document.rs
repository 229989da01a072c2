//! The `augmentedPE` document, one element type after another in the schema's order: the root,
//! its context (what every PE of a job shares), environment, executable, operator instances
//! (`operator`), PE ports (`ports`) and definitions.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use super::input::{Job, Pe, PortIndex, TupleType};
use super::operator::oper_instance;
use super::ports::pe_ports;
use super::xml::Writer;
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

    /// The toolkit of an operator definition (0 for an unknown one).
    pub fn toolkit_index(&self, definition: i64) -> i64 {
        self.toolkits.get(&definition).copied().unwrap_or(0)
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
    pe: &Pe<'_, S>,
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
