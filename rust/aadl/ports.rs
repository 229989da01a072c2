//! The PE's own ports: what feeds each one (static connections, imported streams), where each
//! output goes (static connections, the exported stream), and the operator port behind it.

use super::document::{input_port_id, Shared};
use super::input::{Export, Pe, PortIndex};
use super::xml::Writer;
use super::{AadlError, Text};

pub fn pe_ports<S: Text>(
    w: &mut Writer,
    shared: &Shared<'_, S>,
    ports: &PortIndex,
    pe: &Pe<'_, S>,
) -> Result<(), AadlError> {
    let node = |index: i64| {
        pe.members
            .iter()
            .map(|m| &m.node)
            .find(|n| n.index == index)
            .ok_or_else(|| AadlError::Inconsistent {
                what: format!(
                    "PE {} has a port of node {index}, which it does not hold",
                    pe.id
                ),
            })
    };
    let missing = |kind: &str, node: i64, port: i64| AadlError::Inconsistent {
        what: format!(
            "PE {} has {kind} port {port} of node {node}, which has no such port",
            pe.id
        ),
    };
    w.start("inputPorts");
    for p in &pe.inputs {
        let owner = node(p.node)?;
        let port = owner
            .operator
            .input_port(p.port)
            .ok_or_else(|| missing("input", p.node, p.port))?;
        w.start("inputPort")
            .int("id", p.id)
            .int("index", p.id)
            .int("peId", pe.id);
        w.attr("encoding", &port.encoding)?
            .attr("transport", &port.transport)?;
        shared.tuple_type(w, "tupleType", port.tuple_type_index)?;
        let imports = owner
            .imports
            .get(&p.port)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if !imports.is_empty() {
            w.start("importedStreams");
            let by_name = imports.iter().filter(|i| i.2.subscription.is_none());
            // the schema allows at most one property-based import
            let by_property = imports
                .iter()
                .filter(|i| i.2.subscription.is_some())
                .take(1);
            for (op_name, op_index, spec) in by_name.chain(by_property) {
                match &spec.subscription {
                    Some(subscription) => {
                        w.start("a:propertyBasedImport")
                            .attr("importOperName", op_name)?;
                        w.int("index", *op_index)
                            .attr("subscription", subscription)?;
                    }
                    None => {
                        w.start("a:nameBasedImport")
                            .attr("importOperName", op_name)?;
                        w.int("index", *op_index);
                        w.attr(
                            "applicationName",
                            spec.application_name.as_deref().unwrap_or(""),
                        )?;
                        w.attr("streamName", spec.stream_name.as_deref().unwrap_or(""))?;
                    }
                }
                if let Some(scope) = spec.application_scope.as_deref().filter(|s| !s.is_empty()) {
                    w.attr("applicationScope", scope)?;
                }
                w.end();
            }
            w.end();
        }
        w.start("staticConnections");
        let mut senders: Vec<_> = p.senders.iter().collect();
        senders.sort_by_key(|(src_pe, e)| (*src_pe, e.src, e.src_port));
        for (src_pe, edge) in senders {
            let sender = ports
                .outputs
                .get(&(edge.src, edge.src_port, edge.channel()))
                .map(|&(_, id)| id)
                .ok_or_else(|| AadlError::Inconsistent {
                    what: format!(
                        "output port {} of node {} is on no PE port",
                        edge.src_port, edge.src
                    ),
                })?;
            w.start("staticConnection").int("peId", *src_pe);
            w.int("oportId", sender).int("oportIndex", sender).end();
        }
        w.end();
        w.start("operInstanceConnection")
            .int("operInstanceIndex", p.node);
        w.int("iportIndex", p.port).end().end();
    }
    w.end().start("outputPorts");
    for out in &pe.outputs {
        let owner = node(out.node)?;
        let port = owner
            .operator
            .output_port(out.port)
            .ok_or_else(|| missing("output", out.node, out.port))?;
        w.start("outputPort")
            .int("id", out.id)
            .int("index", out.id)
            .int("peId", pe.id);
        w.attr("encoding", &port.encoding)?
            .attr("transport", &port.transport)?;
        w.attr("singleThreadedOnOutput", "true")?;
        shared.tuple_type(w, "tupleType", port.tuple_type_index)?;
        // the schema allows one exported stream per port
        if let Some((operator, spec)) = out.exports.first() {
            exported_stream(w, operator, spec)?;
        }
        w.start("staticConnections");
        let mut receivers: Vec<_> = out.receivers.iter().collect();
        receivers.sort_by_key(|(dst_pe, e)| (*dst_pe, e.dst, e.dst_port));
        for (dst_pe, edge) in receivers {
            let iport = input_port_id(ports, edge.dst, edge.dst_port)?;
            w.start("staticConnection").int("peId", *dst_pe);
            w.int("iportId", iport).int("iportIndex", iport);
            w.int("iOperInstanceIndex", edge.dst)
                .int("iOperInstancePortIndex", edge.dst_port);
            w.end();
        }
        w.end();
        w.start("operInstanceConnection")
            .int("operInstanceIndex", out.node);
        w.int("oportIndex", out.port);
        if let Some((splitter, channel)) = out.channel {
            w.int("splitterIndex", splitter)
                .int("channelIndex", channel);
        }
        w.end().end();
    }
    w.end();
    Ok(())
}

fn exported_stream<S: Text>(
    w: &mut Writer,
    operator: &str,
    spec: &Export<S>,
) -> Result<(), AadlError> {
    w.start("exportedStream").attr("exportOperName", operator)?;
    if let Some(name) = &spec.stream_name {
        w.attr("name", name)?;
    }
    if let Some(allow) = spec.allow_filter {
        w.flag("allowFilter", allow);
    }
    if let Some(policy) = &spec.congestion_policy {
        w.attr("congestionPolicy", policy)?;
    }
    if !spec.properties.is_empty() {
        w.start("a:properties");
        for prop in &spec.properties {
            w.start("a:property")
                .attr("name", &prop.name)?
                .attr("type", &prop.type_)?;
            for value in &prop.values {
                w.text_element("a:value", value)?;
            }
            w.end();
        }
        w.end();
    }
    w.end();
    Ok(())
}
