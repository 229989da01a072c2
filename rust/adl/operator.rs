//! Primitive operator instances (with their ports, placement, partitions, import/export
//! specifications) and the annotations and connections composites share with them.

use std::borrow::Cow;

use super::elements::{
    boolean, child, children, children_of, float, int, opt_int, req, same_namespace, shown, text,
    El,
};
use super::model::{
    Annotation, Checkpointing, CompositePort, Export, ExportProperty, HostPlacement, Import,
    InputPort, Operator, OperatorKind, OutputPort, Partitions, PortRef, RuntimeConstant,
    ThreadedPort,
};
use super::{at, AdlError};

pub(crate) fn refs<'a>(container: Option<El<'a>>) -> Result<Vec<PortRef<'a>>, AdlError> {
    children_of(container, "connection")
        .map(|c| {
            Ok(PortRef {
                oper_index: int(c, "operIndex")?,
                port_index: int(c, "portIndex")?,
                kind: c.attribute("portKind").unwrap_or("input"),
            })
        })
        .collect()
}

pub(crate) fn annotations<'a>(el: El<'a>) -> Result<Vec<Annotation<'a>>, AdlError> {
    let mut found = Vec::new();
    for tag in ["splAnnotation", "annotation"] {
        for a in children(el, tag) {
            let values = children(a, "value")
                .map(|v| {
                    (
                        v.attribute("key").unwrap_or(""),
                        v.attribute("type").unwrap_or(""),
                        text(Some(v)),
                    )
                })
                .collect();
            found.push(Annotation {
                tag: req(a, "tag")?,
                values,
                internal: boolean(a, "internal", false)?,
            });
        }
    }
    Ok(found)
}

fn input_port<'a>(p: El<'a>) -> Result<InputPort<'a>, AdlError> {
    let tp = child(Some(p), "threadedPort");
    Ok(InputPort {
        index: int(p, "index")?,
        name: p.attribute("name").unwrap_or(""),
        tuple_type_index: int(p, "tupleTypeIndex")?,
        encoding: p.attribute("encoding").unwrap_or("LE"),
        transport: p.attribute("transport").unwrap_or("TCP"),
        is_mutable: boolean(p, "isMutable", false)?,
        is_control: boolean(p, "isControl", false)?,
        connections: refs(child(Some(p), "connections"))?,
        threaded_port: match tp {
            Some(tp) => Some(ThreadedPort {
                congestion_policy: tp.attribute("congestionPolicy").unwrap_or("wait"),
                queue_size: opt_int(tp, "queueSize")?,
            }),
            None => None,
        },
    })
}

fn output_port<'a>(p: El<'a>) -> Result<OutputPort<'a>, AdlError> {
    let name = p.attribute("name").unwrap_or("");
    Ok(OutputPort {
        index: int(p, "index")?,
        name,
        stream_name: p.attribute("streamName").unwrap_or(name),
        tuple_type_index: int(p, "tupleTypeIndex")?,
        encoding: p.attribute("encoding").unwrap_or("LE"),
        transport: p.attribute("transport").unwrap_or("TCP"),
        is_mutable: boolean(p, "isMutable", false)?,
        viewable: boolean(p, "viewable", true)?,
        connections: refs(child(Some(p), "connections"))?,
    })
}

fn ids<'a>(el: El<'a>, name: &'static str, attr: &str) -> Result<Vec<&'a str>, AdlError> {
    children(el, name).map(|c| req(c, attr)).collect()
}

fn placement<'a>(res: El<'a>) -> Result<HostPlacement<'a>, AdlError> {
    let host = child(Some(res), "hostLocation");
    let pool = child(Some(res), "poolLocation");
    Ok(HostPlacement {
        host: host.map(|h| req(h, "hostname")).transpose()?,
        pool_index: pool.map(|p| int(p, "poolIndex")).transpose()?,
        inpool_index: match pool {
            Some(p) => opt_int(p, "inpoolIndex")?,
            None => None,
        },
        colocations: ids(res, "coLocation", "colocId")?,
        exlocations: ids(res, "exLocation", "exlocId")?,
        // Only an explicit "true" isolates (the original treated isolation="false" as true).
        isolation: boolean(res, "isolation", false)?,
    })
}

fn partitions<'a>(part: El<'a>) -> Result<Partitions<'a>, AdlError> {
    Ok(Partitions {
        colocations: ids(part, "coLocation", "colocId")?,
        exlocations: ids(part, "exLocation", "exlocId")?,
        isolation: boolean(part, "isolation", false)?,
    })
}

fn import_spec<'a>(el: El<'a>) -> Result<Import<'a>, AdlError> {
    let filter = el.attribute("filter");
    if let Some(nb) = child(Some(el), "nameBasedImport") {
        return Ok(Import {
            application_name: nb.attribute("applicationName"),
            stream_name: nb.attribute("streamName"),
            application_scope: nb.attribute("applicationScope"),
            filter,
            ..Import::default()
        });
    }
    if let Some(pb) = child(Some(el), "propertyBasedImport") {
        return Ok(Import {
            subscription: pb.attribute("subscription"),
            application_scope: pb.attribute("applicationScope"),
            filter,
            ..Import::default()
        });
    }
    let name = shown(el, "name");
    Err(at(
        el,
        format!("import operator '{name}' has no import specification"),
    ))
}

fn export_spec<'a>(el: El<'a>) -> Result<Export<'a>, AdlError> {
    let properties = children_of(child(Some(el), "properties"), "property")
        .map(|p| {
            Ok(ExportProperty {
                name: req(p, "name")?,
                type_: p.attribute("type").unwrap_or(""),
                values: children(p, "value").map(|v| text(Some(v))).collect(),
            })
        })
        .collect::<Result<_, AdlError>>()?;
    Ok(Export {
        stream_name: el.attribute("streamName"),
        properties,
        allow_filter: el.attribute("allowFilter").map(|a| a == "true"),
        congestion_policy: el.attribute("congestionPolicy"),
    })
}

fn unique_ports(el: El<'_>, mut indices: Vec<u64>) -> Result<(), AdlError> {
    indices.sort_unstable();
    if indices.windows(2).any(|w| w[0] == w[1]) {
        let name = shown(el, "name");
        return Err(at(
            el,
            format!("operator '{name}' declares a port index twice"),
        ));
    }
    Ok(())
}

/// The first child of each name an operator reads, found in one pass over its children.
#[derive(Default)]
struct Kids<'a> {
    checkpointing: Option<El<'a>>,
    jvm_arguments: Option<El<'a>>,
    shared_object: Option<El<'a>>,
    tracing: Option<El<'a>>,
    input_ports: Option<El<'a>>,
    output_ports: Option<El<'a>>,
    resources: Option<El<'a>>,
    partitions: Option<El<'a>>,
    runtime_constants: Option<El<'a>>,
    env_vars: Option<El<'a>>,
}

impl<'a> Kids<'a> {
    fn of(el: El<'a>) -> Self {
        let mut kids = Kids::default();
        let namespace = el.tag_name().namespace();
        for c in el
            .children()
            .filter(|c| c.is_element() && same_namespace(c.tag_name().namespace(), namespace))
        {
            let slot = match c.tag_name().name() {
                "checkpointing" => &mut kids.checkpointing,
                "jvmArguments" => &mut kids.jvm_arguments,
                "sharedObject" => &mut kids.shared_object,
                "tracing" => &mut kids.tracing,
                "inputPorts" => &mut kids.input_ports,
                "outputPorts" => &mut kids.output_ports,
                "resources" => &mut kids.resources,
                "partitions" => &mut kids.partitions,
                "runtimeConstants" => &mut kids.runtime_constants,
                "envVars" => &mut kids.env_vars,
                _ => continue,
            };
            slot.get_or_insert(c);
        }
        kids
    }
}

/// Long: one field after another, in the order the ADL's problems are reported.
pub(crate) fn operator<'a>(
    el: El<'a>,
    kind: OperatorKind,
    composite: u64,
) -> Result<Operator<'a>, AdlError> {
    let kids = Kids::of(el);
    let inputs: Vec<InputPort> = children_of(kids.input_ports, "port")
        .map(input_port)
        .collect::<Result<_, _>>()?;
    let outputs: Vec<OutputPort> = children_of(kids.output_ports, "port")
        .map(output_port)
        .collect::<Result<_, _>>()?;
    unique_ports(el, inputs.iter().map(|p| p.index).collect())?;
    unique_ports(el, outputs.iter().map(|p| p.index).collect())?;
    let so = kids.shared_object;
    let wrapper = text(child(so, "wrapper"));
    Ok(Operator {
        index: int(el, "index")?,
        name: req(el, "name")?,
        kind,
        definition_index: int(el, "definitionIndex")?,
        composite,
        input_ports: inputs,
        output_ports: outputs,
        restartable: boolean(el, "restartable", true)?,
        relocatable: boolean(el, "relocatable", true)?,
        optimized: boolean(el, "optimized", true)?,
        single_threaded_on_outputs: boolean(el, "singleThreadedOnOutputs", true)?,
        placement: kids.resources.map(placement).transpose()?,
        partitions: kids.partitions.map(partitions).transpose()?,
        checkpointing: kids.checkpointing.map(checkpointing).transpose()?,
        jvm_arguments: kids
            .jvm_arguments
            .map(|j| children(j, "jvmArgument").map(|a| text(Some(a))).collect()),
        annotations: annotations(el)?,
        runtime_constants: children_of(kids.runtime_constants, "runtimeConstant")
            .map(|c| {
                Ok(RuntimeConstant {
                    name: req(c, "name")?,
                    value: c.attribute("value").unwrap_or(""),
                    submission_time_value_index: opt_int(c, "submissionTimeValueIndex")?,
                    default_value: c.attribute("defaultValue"),
                })
            })
            .collect::<Result<_, AdlError>>()?,
        env_vars: children_of(kids.env_vars, "envVar")
            .map(|v| Ok((req(v, "name")?, v.attribute("value").unwrap_or(""))))
            .collect::<Result<_, AdlError>>()?,
        wrapper: if wrapper.is_empty() {
            Cow::Borrowed("none")
        } else {
            wrapper
        },
        shared_object_class: so.map_or("", |s| s.attribute("class").unwrap_or("")),
        shared_object_uri: text(child(so, "uri")),
        tracing_level: kids.tracing.and_then(|t| t.attribute("level")),
        import_spec: (kind == OperatorKind::Import)
            .then(|| import_spec(el))
            .transpose()?,
        export_spec: (kind == OperatorKind::Export)
            .then(|| export_spec(el))
            .transpose()?,
    })
}

fn checkpointing<'a>(ckpt: El<'a>) -> Result<Checkpointing<'a>, AdlError> {
    let policy = req(ckpt, "policy")?;
    let period = match ckpt.attribute("period") {
        None | Some("") => None,
        Some(raw) => Some(float(raw).ok_or_else(|| {
            at(
                ckpt,
                format!("<checkpointing period='{raw}'> is not a number"),
            )
        })?),
    };
    Ok(Checkpointing { policy, period })
}

pub(crate) fn composite_ports<'a>(el: Option<El<'a>>) -> Result<Vec<CompositePort<'a>>, AdlError> {
    children_of(el, "port")
        .map(|p| {
            Ok(CompositePort {
                index: int(p, "index")?,
                incoming: refs(child(Some(p), "incomingConnections"))?,
                outgoing: refs(child(Some(p), "outgoingConnections"))?,
            })
        })
        .collect()
}
