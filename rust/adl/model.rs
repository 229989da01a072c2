//! The logical model as the reader produces it: the fields of `app/model.py`, every string
//! borrowed from the parsed document (text content is trimmed, so it may be a slice or, when
//! split by comments, an owned join).

use std::borrow::Cow;

/// One end of a connection: operator (primitive or composite) index, port index, port kind.
pub struct PortRef<'a> {
    pub oper_index: u64,
    pub port_index: u64,
    pub kind: &'a str,
}

pub struct ThreadedPort<'a> {
    pub congestion_policy: &'a str,
    pub queue_size: Option<u64>,
}

pub struct InputPort<'a> {
    pub index: u64,
    pub name: &'a str,
    pub tuple_type_index: u64,
    pub encoding: &'a str,
    pub transport: &'a str,
    pub is_mutable: bool,
    pub is_control: bool,
    pub connections: Vec<PortRef<'a>>,
    pub threaded_port: Option<ThreadedPort<'a>>,
}

pub struct OutputPort<'a> {
    pub index: u64,
    pub name: &'a str,
    pub stream_name: &'a str,
    pub tuple_type_index: u64,
    pub encoding: &'a str,
    pub transport: &'a str,
    pub is_mutable: bool,
    pub viewable: bool,
    pub connections: Vec<PortRef<'a>>,
}

/// SPL `placement` host constraints (ADL `resources`).
#[derive(Default, Hash, PartialEq, Eq)]
pub struct HostPlacement<'a> {
    pub host: Option<&'a str>,
    pub pool_index: Option<u64>,
    pub inpool_index: Option<u64>,
    pub colocations: Vec<&'a str>,
    pub exlocations: Vec<&'a str>,
    pub isolation: bool,
}

/// SPL partition (fusion) constraints (ADL `partitions`).
#[derive(Default, Hash, PartialEq, Eq)]
pub struct Partitions<'a> {
    pub colocations: Vec<&'a str>,
    pub exlocations: Vec<&'a str>,
    pub isolation: bool,
}

pub struct Annotation<'a> {
    pub tag: &'a str,
    /// (key, type, value)
    pub values: Vec<(&'a str, &'a str, Cow<'a, str>)>,
    pub internal: bool,
}

impl Annotation<'_> {
    /// The first value under `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, _, v)| v.as_ref())
    }
}

pub struct Checkpointing<'a> {
    pub policy: &'a str,
    pub period: Option<f64>,
}

pub struct RuntimeConstant<'a> {
    pub name: &'a str,
    pub value: &'a str,
    pub submission_time_value_index: Option<u64>,
    pub default_value: Option<&'a str>,
}

/// Either name based (application + stream) or property based (subscription).
#[derive(Default)]
pub struct Import<'a> {
    pub application_name: Option<&'a str>,
    pub stream_name: Option<&'a str>,
    pub subscription: Option<&'a str>,
    pub application_scope: Option<&'a str>,
    pub filter: Option<&'a str>,
}

pub struct ExportProperty<'a> {
    pub name: &'a str,
    pub type_: &'a str,
    pub values: Vec<Cow<'a, str>>,
}

pub struct Export<'a> {
    pub stream_name: Option<&'a str>,
    pub properties: Vec<ExportProperty<'a>>,
    pub allow_filter: Option<bool>,
    pub congestion_policy: Option<&'a str>,
}

/// `primitiveOperInstance`, `primitiveImportOperInstance`, `primitiveExportOperInstance`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OperatorKind {
    Primitive,
    Import,
    Export,
}

pub struct Operator<'a> {
    pub index: u64,
    pub name: &'a str,
    pub kind: OperatorKind,
    pub definition_index: u64,
    /// Index of the enclosing composite instance.
    pub composite: u64,
    pub input_ports: Vec<InputPort<'a>>,
    pub output_ports: Vec<OutputPort<'a>>,
    pub restartable: bool,
    pub relocatable: bool,
    pub optimized: bool,
    pub single_threaded_on_outputs: bool,
    /// None: no `resources` element (the default placement).
    pub placement: Option<HostPlacement<'a>>,
    /// None: no `partitions` element (no constraints).
    pub partitions: Option<Partitions<'a>>,
    pub checkpointing: Option<Checkpointing<'a>>,
    /// Present only on Java operators.
    pub jvm_arguments: Option<Vec<Cow<'a, str>>>,
    pub annotations: Vec<Annotation<'a>>,
    pub runtime_constants: Vec<RuntimeConstant<'a>>,
    pub env_vars: Vec<(&'a str, &'a str)>,
    pub wrapper: Cow<'a, str>,
    pub shared_object_class: &'a str,
    pub shared_object_uri: Cow<'a, str>,
    pub tracing_level: Option<&'a str>,
    pub import_spec: Option<Import<'a>>,
    pub export_spec: Option<Export<'a>>,
}

pub struct CompositePort<'a> {
    pub index: u64,
    pub incoming: Vec<PortRef<'a>>,
    pub outgoing: Vec<PortRef<'a>>,
}

pub struct Composite<'a> {
    pub index: u64,
    pub name: &'a str,
    pub definition_index: u64,
    pub kind: &'a str,
    pub parent: Option<u64>,
    pub input_ports: Vec<CompositePort<'a>>,
    pub output_ports: Vec<CompositePort<'a>>,
    pub annotations: Vec<Annotation<'a>>,
}

pub struct HostPool<'a> {
    pub index: u64,
    pub name: &'a str,
    pub exclusive: bool,
    pub size: Option<u64>,
    pub hosts: Vec<&'a str>,
    pub tags: Vec<&'a str>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SplitterKind {
    RoundRobin,
    Hash,
    Broadcast,
}

impl SplitterKind {
    /// The ADL's (and the Python enum's) spelling.
    pub fn name(self) -> &'static str {
        match self {
            SplitterKind::RoundRobin => "RoundRobin",
            SplitterKind::Hash => "Hash",
            SplitterKind::Broadcast => "Broadcast",
        }
    }
}

pub struct Splitter<'a> {
    pub iport_index: u64,
    pub kind: SplitterKind,
    pub attributes: Vec<&'a str>,
}

pub struct ParallelRegion<'a> {
    pub index: u64,
    pub name: &'a str,
    /// The parallel operator (primitive or composite).
    pub oper_index: u64,
    pub splitters: Vec<Splitter<'a>>,
    pub constant_width: Option<i64>,
    /// The submission-time value giving the width.
    pub width_value_index: Option<i64>,
    pub replicate_host_tags: Vec<&'a str>,
}

pub struct SubmissionTimeValue<'a> {
    pub index: u64,
    pub name: &'a str,
    pub composite_name: &'a str,
    /// named | namedList
    pub kind: &'a str,
    pub required: bool,
    pub default_value: Option<&'a str>,
}

pub struct TupleType<'a> {
    pub index: u64,
    pub attributes: Vec<(&'a str, &'a str)>,
}

pub struct OperatorDefinition<'a> {
    pub index: u64,
    pub kind: &'a str,
    pub runtime_type: &'a str,
    pub toolkit_index: u64,
    pub custom_metric_indices: Vec<i64>,
}

pub struct CustomMetric<'a> {
    pub index: u64,
    pub name: &'a str,
    pub kind: &'a str,
    pub description: Cow<'a, str>,
}

pub struct ToolkitRef<'a> {
    pub index: u64,
    pub name: &'a str,
    pub version: &'a str,
}

/// A `@consistent` region as declared on a composite; None where the annotation leaves a setting out.
pub struct ConsistentRegion {
    pub index: i64,
    pub trigger: String,
    pub period: Option<f64>,
    pub drain_timeout: Option<f64>,
    pub reset_timeout: Option<f64>,
    pub max_consecutive_reset_attempts: Option<i64>,
}

pub struct Application<'a> {
    pub name: &'a str,
    pub scope: &'a str,
    pub version: &'a str,
    pub build_id: &'a str,
    pub bundle: &'a str,
    pub product_version: &'a str,
    pub application_directory: &'a str,
    pub output_directory: &'a str,
    pub data_directory: Option<&'a str>,
    pub checkpoint_directory: Option<&'a str>,
    pub avoid_runtime_yield: &'a str,
    /// "v4200" | "v4000"
    pub adl_version: &'static str,
    pub main_composite: u64,
    /// In document order (unique indices, shared with `composites`).
    pub operators: Vec<Operator<'a>>,
    /// In document order, each before the composites and operators it holds.
    pub composites: Vec<Composite<'a>>,
    pub hostpools: Vec<HostPool<'a>>,
    pub tuple_types: Vec<TupleType<'a>>,
    pub definitions: Vec<OperatorDefinition<'a>>,
    /// Composite definition index → kind, in first-seen order (a repeated index keeps the last kind).
    pub composite_kinds: Vec<(u64, &'a str)>,
    pub toolkits: Vec<ToolkitRef<'a>>,
    pub custom_metrics: Vec<CustomMetric<'a>>,
    pub parallel_regions: Vec<ParallelRegion<'a>>,
    pub submission_time_values: Vec<SubmissionTimeValue<'a>>,
    pub consistent_regions: Vec<ConsistentRegion>,
}
