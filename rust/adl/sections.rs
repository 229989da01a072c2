//! The application-level sections of the ADL: parallel regions, host pools, operator definitions,
//! submission-time values, tuple types, toolkits, custom metrics, and the consistent regions the
//! composites' annotations declare.

use super::elements::{
    boolean, child, children, children_of, float, int, local, opt_int, req, shown, signed, text, El,
};
use super::model::{
    Composite, ConsistentRegion, CustomMetric, HostPool, OperatorDefinition, ParallelRegion,
    Splitter, SplitterKind, SubmissionTimeValue, ToolkitRef, TupleType,
};
use super::{at, AdlError};

type Found<T> = Result<Vec<T>, AdlError>;

fn splitter<'a>(s: El<'a>) -> Result<Splitter<'a>, AdlError> {
    let kind = match req(s, "kind")? {
        "RoundRobin" => SplitterKind::RoundRobin,
        "Hash" => SplitterKind::Hash,
        "Broadcast" => SplitterKind::Broadcast,
        other => return Err(at(s, format!("unknown splitter kind '{other}'"))),
    };
    let attributes = children_of(child(Some(s), "attributes"), "attribute")
        .map(|a| req(a, "name"))
        .collect::<Result<_, _>>()?;
    Ok(Splitter {
        iport_index: int(s, "iportIndex")?,
        kind,
        attributes,
    })
}

pub(crate) fn parallel_region<'a>(el: El<'a>) -> Result<ParallelRegion<'a>, AdlError> {
    let region = || shown(el, "name");
    let po = child(Some(el), "parallelOperator").ok_or_else(|| {
        at(
            el,
            format!("parallel region '{}' has no parallelOperator", region()),
        )
    })?;
    let width = child(Some(el), "parallelWidth");
    let constant = child(width, "constantWidth");
    let stv = child(width, "submissionTimeParameterIndexForWidth");
    if constant.is_none() && stv.is_none() {
        return Err(at(
            el,
            format!("parallel region '{}' has no width", region()),
        ));
    }
    let splitters = children(po, "splitter")
        .map(splitter)
        .collect::<Result<_, _>>()?;
    let width_of = |w: Option<El<'a>>| match w {
        Some(w) => signed(&text(Some(w))).map(Some).ok_or_else(|| {
            at(
                el,
                format!("parallel region '{}' width is not an integer", region()),
            )
        }),
        None => Ok(None),
    };
    let constant_width = width_of(constant)?;
    let width_value_index = width_of(stv)?;
    Ok(ParallelRegion {
        index: int(el, "index")?,
        name: req(el, "name")?,
        oper_index: int(po, "operIndex")?,
        splitters,
        constant_width,
        width_value_index,
        replicate_host_tags: children(el, "replicateHostTag")
            .map(|t| req(t, "name"))
            .collect::<Result<_, _>>()?,
    })
}

pub(crate) fn host_pools<'a>(app: El<'a>) -> Found<HostPool<'a>> {
    children_of(child(Some(app), "hostpools"), "hostpool")
        .map(|h| {
            Ok(HostPool {
                index: int(h, "index")?,
                name: req(h, "name")?,
                exclusive: h.attribute("membershipMode") == Some("exclusive"),
                size: opt_int(h, "size")?,
                hosts: children(h, "host")
                    .map(|x| req(x, "hostname"))
                    .collect::<Result<_, _>>()?,
                tags: children(h, "tag")
                    .map(|t| req(t, "name"))
                    .collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

pub(crate) fn definitions<'a>(app: El<'a>) -> Found<OperatorDefinition<'a>> {
    children_of(
        child(Some(app), "primitiveOperDefinitions"),
        "primitiveOperDefinition",
    )
    .map(|d| {
        Ok(OperatorDefinition {
            index: int(d, "index")?,
            kind: req(d, "kind")?,
            runtime_type: d.attribute("runtimeType").unwrap_or("SPL_CPlusPlus"),
            toolkit_index: opt_int(d, "toolkitIndex")?.unwrap_or(0),
            custom_metric_indices: children_of(
                child(Some(d), "customMetricIndicies"),
                "customMetricIndex",
            )
            .map(|i| {
                let raw = text(Some(i));
                signed(&raw)
                    .ok_or_else(|| at(i, format!("<{}> '{raw}' is not an integer", local(i))))
            })
            .collect::<Result<_, _>>()?,
        })
    })
    .collect()
}

pub(crate) fn submission_time_values<'a>(app: El<'a>) -> Found<SubmissionTimeValue<'a>> {
    children_of(
        child(Some(app), "submissionTimeValues"),
        "submissionTimeValue",
    )
    .map(|v| {
        Ok(SubmissionTimeValue {
            index: int(v, "index")?,
            name: req(v, "name")?,
            composite_name: v.attribute("compositeName").unwrap_or(""),
            kind: v.attribute("kind").unwrap_or("named"),
            required: boolean(v, "required", false)?,
            default_value: v.attribute("defaultValue"),
        })
    })
    .collect()
}

pub(crate) fn tuple_types<'a>(app: El<'a>) -> Found<TupleType<'a>> {
    children_of(child(Some(app), "tupleTypes"), "tupleType")
        .map(|t| {
            Ok(TupleType {
                index: int(t, "index")?,
                attributes: children(t, "attribute")
                    .map(|a| Ok((req(a, "name")?, req(a, "type")?)))
                    .collect::<Result<_, AdlError>>()?,
            })
        })
        .collect()
}

pub(crate) fn toolkits<'a>(app: El<'a>) -> Found<ToolkitRef<'a>> {
    children_of(child(Some(app), "toolkits"), "toolkit")
        .map(|t| {
            Ok(ToolkitRef {
                index: int(t, "index")?,
                name: req(t, "name")?,
                version: t.attribute("version").unwrap_or(""),
            })
        })
        .collect()
}

pub(crate) fn custom_metrics<'a>(app: El<'a>) -> Found<CustomMetric<'a>> {
    children_of(child(Some(app), "customMetrics"), "customMetric")
        .map(|m| {
            Ok(CustomMetric {
                index: int(m, "index")?,
                name: req(m, "name")?,
                kind: req(m, "kind")?,
                description: text(Some(m)),
            })
        })
        .collect()
}

/// The `consistentRegion` annotations of the composites, by region index (stable for ties).
pub(crate) fn consistent_regions<'a>(
    composites: &[Composite<'a>],
    elements: &[El<'a>],
) -> Found<ConsistentRegion> {
    let mut found = Vec::new();
    for (comp, el) in composites.iter().zip(elements) {
        for a in comp
            .annotations
            .iter()
            .filter(|a| a.tag == "consistentRegion")
        {
            let setting = |key: &str| a.get(key).filter(|v| !v.is_empty());
            let bad = |key: &str, raw: &str| {
                at(
                    *el,
                    format!("consistentRegion {key} '{raw}' is not a number"),
                )
            };
            let seconds = |key: &str| {
                setting(key)
                    .map(|raw| float(raw).ok_or_else(|| bad(key, raw)))
                    .transpose()
            };
            let count = |key: &str| {
                setting(key)
                    .map(|raw| signed(raw).ok_or_else(|| bad(key, raw)))
                    .transpose()
            };
            found.push(ConsistentRegion {
                index: count("index")?.unwrap_or(0),
                trigger: setting("trigger").unwrap_or("operatorDriven").to_owned(),
                period: seconds("period")?,
                drain_timeout: seconds("drainTimeout")?,
                reset_timeout: seconds("resetTimeout")?,
                max_consecutive_reset_attempts: count("maxConsecutiveResetAttempts")?,
            });
        }
    }
    found.sort_by_key(|r| r.index);
    Ok(found)
}
