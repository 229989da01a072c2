//! ADL (v4200, and v4000 where it has the same shape) → logical model, sans-IO: bytes in, model out.
//!
//! The XML is untrusted: no DTD is read and no entity is expanded (a DOCTYPE is refused outright,
//! neither the ADL nor any other Streams document has one), the size is bounded, and every
//! structural problem becomes an [`AdlError`] naming the line of the element at fault. The reader
//! follows the schema's order and reports the first problem in the order the fields are read.
//!
//! roxmltree (rather than a pull parser such as quick-xml): it checks well-formedness fully
//! (names, namespaces, duplicate attributes, references), resolves namespaces, refuses DTDs by
//! default, keeps byte positions for line numbers, and its tree lets the reader look children up
//! by name the way the schema nests them.

mod elements;
pub mod model;
mod operator;
mod prolog;
mod sections;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;

use roxmltree::{Document, ParsingOptions};

use elements::{child, children, children_of, int, line, local, req, El};
use model::{Application, Composite, Operator, OperatorKind};

/// The first bytes scanned for a DOCTYPE before parsing: it can only appear in the prolog.
pub const PROLOG_SCAN: usize = 64 * 1024;

const NAMESPACES: [(&str, &str); 2] = [
    (
        "http://www.ibm.com/xmlns/prod/streams/application/v4200",
        "v4200",
    ),
    (
        "http://www.ibm.com/xmlns/prod/streams/application/v4000",
        "v4000",
    ),
];

/// Why an ADL was refused: at an element's line, or (`line` None) the document as a whole.
#[derive(Debug, PartialEq)]
pub struct AdlError {
    pub line: Option<u32>,
    pub reason: String,
}

impl AdlError {
    fn document(reason: String) -> Self {
        AdlError { line: None, reason }
    }

    /// The message: `line N: reason`, or `what: reason` for the document as a whole.
    pub fn message(&self, what: &str) -> String {
        match self.line {
            Some(line) => format!("line {line}: {}", self.reason),
            None => format!("{what}: {}", self.reason),
        }
    }
}

impl fmt::Display for AdlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message("ADL"))
    }
}

pub(crate) fn at(el: El<'_>, reason: String) -> AdlError {
    AdlError {
        line: Some(line(el)),
        reason,
    }
}

const DOCTYPE: &str = "a DOCTYPE declaration is not allowed (entity and DTD attacks)";

/// Parse untrusted XML: at most `max_bytes`, UTF-8, no DOCTYPE (so no DTD and no entities).
pub fn document(data: &[u8], max_bytes: usize) -> Result<Document<'_>, AdlError> {
    if data.len() > max_bytes {
        return Err(AdlError::document(format!(
            "{} bytes exceeds the {max_bytes}-byte limit",
            data.len()
        )));
    }
    let prolog = &data[..data.len().min(PROLOG_SCAN)];
    if [b"<!DOCTYPE".as_slice(), b"<!ENTITY"]
        .iter()
        .any(|m| memchr::memmem::find(prolog, m).is_some())
    {
        return Err(AdlError::document(DOCTYPE.to_owned()));
    }
    let text = std::str::from_utf8(data).map_err(|err| {
        AdlError::document(format!(
            "not well-formed XML: not UTF-8 (byte {})",
            err.valid_up_to()
        ))
    })?;
    prolog::check(text)
        .map_err(|reason| AdlError::document(format!("not well-formed XML: {reason}")))?;
    let options = ParsingOptions {
        allow_dtd: false,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(text, options).map_err(|err| match err {
        roxmltree::Error::DtdDetected => AdlError::document(DOCTYPE.to_owned()),
        err => AdlError::document(format!("not well-formed XML: {err}")),
    })
}

/// Read the model from a parsed ADL document (see [`document`] for the XML rules).
pub fn read<'a>(doc: &'a Document<'a>) -> Result<Application<'a>, AdlError> {
    let root = doc.root_element();
    let ns = root.tag_name().namespace().unwrap_or("");
    let version = NAMESPACES
        .iter()
        .find(|(uri, _)| *uri == ns)
        .map(|(_, v)| *v);
    let adl_version = match version {
        Some(v) if local(root) == "applicationSet" => v,
        _ => {
            return Err(AdlError::document(format!(
                "root <{}> in namespace '{ns}' is not a v4200/v4000 ADL applicationSet",
                local(root)
            )))
        }
    };
    let apps: Vec<El<'a>> = children(root, "splApplication").collect();
    let [app] = apps[..] else {
        return Err(AdlError::document(format!(
            "expected exactly one <splApplication>, found {}",
            apps.len()
        )));
    };
    let composites_el = child(Some(app), "composites");
    let mut kinds = Kinds::default();
    for d in children_of(
        child(composites_el, "compositeOperDefinitions"),
        "compositeOperDefinition",
    ) {
        let index = int(d, "index")?;
        kinds.insert(index, req(d, "kind")?);
    }
    let mains: Vec<El<'a>> = children_of(
        child(composites_el, "compositeOperInstances"),
        "compositeOperInstance",
    )
    .collect();
    let Some(&first) = mains.first() else {
        return Err(AdlError::document("no main composite instance".to_owned()));
    };
    let mut builder = Builder::new(kinds);
    for &main in &mains {
        builder.walk(main)?;
    }
    if !builder
        .operators
        .iter()
        .any(|op| op.kind == OperatorKind::Primitive)
    {
        return Err(AdlError::document(
            "the application has no primitive operators".to_owned(),
        ));
    }
    let name = req(app, "name")?;
    let get = |attr: &str, default: &'a str| app.attribute(attr).unwrap_or(default);
    let consistent_regions =
        sections::consistent_regions(&builder.composites, &builder.composite_elements);
    Ok(Application {
        name,
        scope: get("applicationScope", "Default"),
        version: get("version", ""),
        build_id: get("buildId", ""),
        bundle: get("bundle", ""),
        product_version: get("productVersion", ""),
        application_directory: get("applicationDirectory", ""),
        output_directory: get("outputDirectory", ""),
        data_directory: app.attribute("dataDirectory"),
        checkpoint_directory: app.attribute("checkpointDirectory"),
        avoid_runtime_yield: get("avoidRuntimeYield", "auto"),
        adl_version,
        main_composite: int(first, "index")?,
        hostpools: sections::host_pools(app)?,
        tuple_types: sections::tuple_types(app)?,
        definitions: sections::definitions(app)?,
        toolkits: sections::toolkits(app)?,
        custom_metrics: sections::custom_metrics(app)?,
        parallel_regions: children_of(child(Some(app), "parallelRegions"), "parallelRegion")
            .map(sections::parallel_region)
            .collect::<Result<_, _>>()?,
        submission_time_values: sections::submission_time_values(app)?,
        consistent_regions: consistent_regions?,
        composite_kinds: builder.kinds.entries,
        operators: builder.operators,
        composites: builder.composites,
    })
}

/// Composite definition index → kind with a dict's semantics: first-seen order, last kind wins.
#[derive(Default)]
struct Kinds<'a> {
    entries: Vec<(u64, &'a str)>,
    position: HashMap<u64, usize>,
}

impl<'a> Kinds<'a> {
    fn insert(&mut self, index: u64, kind: &'a str) {
        match self.position.get(&index) {
            Some(&at) => self.entries[at].1 = kind,
            None => {
                self.position.insert(index, self.entries.len());
                self.entries.push((index, kind));
            }
        }
    }

    fn get(&self, index: u64) -> &'a str {
        self.position
            .get(&index)
            .map_or("", |&at| self.entries[at].1)
    }
}

/// What the walk over the composite instances has yet to read.
enum Pending<'a> {
    Composite(El<'a>, Option<u64>),
    Operator(El<'a>, OperatorKind, u64),
}

/// The composite and operator instances, in document order; indices are unique across both.
struct Builder<'a> {
    kinds: Kinds<'a>,
    operators: Vec<Operator<'a>>,
    composites: Vec<Composite<'a>>,
    composite_elements: Vec<El<'a>>,
    taken: rustc_hash::FxHashSet<u64>,
}

impl<'a> Builder<'a> {
    fn new(kinds: Kinds<'a>) -> Self {
        Builder {
            kinds,
            operators: Vec::new(),
            composites: Vec::new(),
            composite_elements: Vec::new(),
            taken: rustc_hash::FxHashSet::default(),
        }
    }

    fn claim(&mut self, index: u64, el: El<'_>) -> Result<(), AdlError> {
        if !self.taken.insert(index) {
            return Err(at(el, format!("operator index {index} is used twice")));
        }
        Ok(())
    }

    /// A main composite and everything in it, depth first in document order (a loop with its own
    /// stack: nesting depth is the document's to choose, the native stack is not).
    fn walk(&mut self, main: El<'a>) -> Result<(), AdlError> {
        let mut pending = vec![Pending::Composite(main, None)];
        while let Some(next) = pending.pop() {
            match next {
                Pending::Operator(el, kind, composite) => {
                    let op = operator::operator(el, kind, composite)?;
                    self.claim(op.index, el)?;
                    self.operators.push(op);
                }
                Pending::Composite(el, parent) => {
                    let index = self.composite(el, parent)?;
                    let first = pending.len();
                    for c in el.children().filter(|c| c.is_element()) {
                        let kind = match local(c) {
                            "compositeOperInstance" => {
                                pending.push(Pending::Composite(c, Some(index)));
                                continue;
                            }
                            "primitiveOperInstance" => OperatorKind::Primitive,
                            "primitiveImportOperInstance" => OperatorKind::Import,
                            "primitiveExportOperInstance" => OperatorKind::Export,
                            _ => continue,
                        };
                        pending.push(Pending::Operator(c, kind, index));
                    }
                    pending[first..].reverse();
                }
            }
        }
        Ok(())
    }

    fn composite(&mut self, el: El<'a>, parent: Option<u64>) -> Result<u64, AdlError> {
        let index = int(el, "index")?;
        self.claim(index, el)?;
        let definition_index = int(el, "definitionIndex")?;
        self.composites.push(Composite {
            index,
            name: req(el, "name")?,
            definition_index,
            kind: self.kinds.get(definition_index),
            parent,
            input_ports: operator::composite_ports(child(Some(el), "inputPorts"))?,
            output_ports: operator::composite_ports(child(Some(el), "outputPorts"))?,
            annotations: operator::annotations(el)?,
        });
        self.composite_elements.push(el);
        Ok(index)
    }
}
