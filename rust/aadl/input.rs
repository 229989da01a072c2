//! What the renderer reads: the plan's own objects, field for field.
//!
//! Each struct mirrors one class of `streams_k8s.app` (model, topology, physical) and holds only
//! the attributes the AADL uses, under the same names, so the bindings extract them straight
//! from the Python objects by attribute (`FromPyObject` with the `python` feature) with no
//! intermediate form built in Python.

use rustc_hash::FxHashMap;

#[cfg(feature = "python")]
use pyo3::FromPyObject;

/// `AdlHostPool` (or a per-channel replica of one).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct HostPool {
    pub index: i64,
    pub name: String,
    pub exclusive: bool,
    pub size: Option<i64>,
    pub hosts: Vec<String>,
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct TupleType {
    pub index: i64,
    pub attributes: Vec<(String, String)>,
}

/// `OperatorDefinition`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Definition {
    pub index: i64,
    pub kind: String,
    pub runtime_type: String,
    pub toolkit_index: i64,
    pub custom_metric_indices: Vec<i64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct CustomMetric {
    pub index: i64,
    pub name: String,
    pub kind: String,
    pub description: String,
}

/// `ToolkitRef`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Toolkit {
    pub index: i64,
    pub name: String,
}

/// `Application`: what every PE's AADL repeats.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct App {
    pub name: String,
    pub scope: String,
    pub version: String,
    pub build_id: String,
    pub bundle: String,
    pub application_directory: String,
    pub output_directory: String,
    pub data_directory: Option<String>,
    pub checkpoint_directory: Option<String>,
    pub avoid_runtime_yield: String,
    pub tuple_types: Vec<TupleType>,
    pub definitions: Vec<Definition>,
    pub custom_metrics: Vec<CustomMetric>,
    pub toolkits: Vec<Toolkit>,
}

/// The job and application every PE of one call belongs to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Job {
    pub name: String,
    pub id: i64,
    pub app: App,
    /// The topology's host pools (the application's plus per-channel replicas).
    pub hostpools: Vec<HostPool>,
    /// The Job's threading model, for operators without `@threading`.
    pub default_threading: Option<String>,
    /// Submission-time value index → the value the user gave, as an SPL literal.
    pub given: FxHashMap<i64, String>,
}

/// `Channel`: a node's position in one enclosing parallel region.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Channel {
    pub region: i64,
    pub local: i64,
    pub local_max: i64,
    pub global_: i64,
    pub global_max: i64,
}

/// `HostPlacement`, with the channel intrinsics substituted.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Placement {
    pub host: Option<String>,
    pub pool_index: Option<i64>,
    pub inpool_index: Option<i64>,
    pub colocations: Vec<String>,
    pub exlocations: Vec<String>,
    pub isolation: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Checkpointing {
    pub policy: String,
    pub period: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct RuntimeConstant {
    pub name: String,
    pub value: String,
    pub submission_time_value_index: Option<i64>,
    pub default_value: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct ThreadedPort {
    pub congestion_policy: String,
    pub queue_size: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct InputPort {
    pub index: i64,
    pub name: String,
    pub tuple_type_index: i64,
    pub encoding: String,
    pub transport: String,
    pub is_mutable: bool,
    pub is_control: bool,
    pub threaded_port: Option<ThreadedPort>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct OutputPort {
    pub index: i64,
    pub name: String,
    pub stream_name: String,
    pub tuple_type_index: i64,
    pub encoding: String,
    pub transport: String,
    pub is_mutable: bool,
    pub viewable: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Annotation {
    pub tag: String,
    /// (key, type, value)
    pub values: Vec<(String, String, String)>,
}

/// `Operator`: the logical operator a node replicates.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Operator {
    pub index: i64,
    pub name: String,
    pub definition_index: i64,
    pub input_ports: Vec<InputPort>,
    pub output_ports: Vec<OutputPort>,
    pub restartable: bool,
    pub relocatable: bool,
    pub optimized: bool,
    pub single_threaded_on_outputs: bool,
    pub checkpointing: Option<Checkpointing>,
    pub jvm_arguments: Option<Vec<String>>,
    pub annotations: Vec<Annotation>,
    pub runtime_constants: Vec<RuntimeConstant>,
    pub env_vars: Vec<(String, String)>,
    pub wrapper: String,
    pub shared_object_class: String,
    pub shared_object_uri: String,
}

impl Default for Operator {
    fn default() -> Self {
        Operator {
            index: 0,
            name: String::new(),
            definition_index: 0,
            input_ports: Vec::new(),
            output_ports: Vec::new(),
            restartable: true,
            relocatable: true,
            optimized: true,
            single_threaded_on_outputs: true,
            checkpointing: None,
            jvm_arguments: None,
            annotations: Vec::new(),
            runtime_constants: Vec::new(),
            env_vars: Vec::new(),
            wrapper: "none".into(),
            shared_object_class: String::new(),
            shared_object_uri: String::new(),
        }
    }
}

impl Operator {
    /// The first input port with this index, as `Operator.input_port` finds it.
    pub fn input_port(&self, index: i64) -> Option<&InputPort> {
        self.input_ports.iter().find(|p| p.index == index)
    }

    pub fn output_port(&self, index: i64) -> Option<&OutputPort> {
        self.output_ports.iter().find(|p| p.index == index)
    }
}

/// `AdlImport`: name based (application + stream) or property based (subscription).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Import {
    pub application_name: Option<String>,
    pub stream_name: Option<String>,
    pub subscription: Option<String>,
    pub application_scope: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct ExportProperty {
    pub name: String,
    #[cfg_attr(feature = "python", pyo3(attribute("type")))]
    pub type_: String,
    pub values: Vec<String>,
}

/// `AdlExport`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Export {
    pub stream_name: Option<String>,
    pub properties: Vec<ExportProperty>,
    pub allow_filter: Option<bool>,
    pub congestion_policy: Option<String>,
}

/// An imported stream of a node's input port: (Import operator name, its index, what it imports).
pub type Imported = (String, i64, Import);

/// `Node`: one replica of an operator in the topology.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Node {
    pub index: i64,
    pub name: String,
    pub operator: Operator,
    pub channels: Vec<Channel>,
    pub placement: Placement,
    pub threading: Option<String>,
    /// Imported streams by input port.
    pub imports: FxHashMap<i64, Vec<Imported>>,
}

/// `SplitterStep`: the consumer's local channel of a region the connection enters.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct SplitterStep {
    pub region: i64,
    pub kind: String,
    pub iport: i64,
    pub channel: i64,
}

/// `SplitterUse`: the splitters a connection goes through, outermost first (never empty).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct SplitterUse {
    pub path: Vec<SplitterStep>,
}

/// `Edge`: one physical connection.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Edge {
    pub src: i64,
    pub src_port: i64,
    pub dst: i64,
    pub dst_port: i64,
    pub splitter: Option<SplitterUse>,
}

impl Edge {
    /// The outermost (splitter region, channel) it goes through, which keys PE output ports.
    pub fn channel(&self) -> Option<(i64, i64)> {
        self.splitter
            .as_ref()
            .and_then(|s| s.path.first())
            .map(|step| (step.region, step.channel))
    }
}

/// `PeInputPort`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct PeInput {
    pub id: i64,
    pub node: i64,
    pub port: i64,
    /// (source PE id, edge)
    pub senders: Vec<(i64, Edge)>,
}

/// `PeOutputPort`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct PeOutput {
    pub id: i64,
    pub node: i64,
    pub port: i64,
    pub channel: Option<(i64, i64)>,
    /// (destination PE id, edge)
    pub receivers: Vec<(i64, Edge)>,
    /// (Export operator name, what it exports)
    pub exports: Vec<(String, Export)>,
}

/// `PortIndex`: where every node and PE port ended up.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct PortIndex {
    /// node index → PE id
    pub pe_of: FxHashMap<i64, i64>,
    /// (node, port) → (PE id, PE port id)
    pub inputs: FxHashMap<(i64, i64), (i64, i64)>,
    /// (node, port, channel) → (PE id, PE port id)
    pub outputs: FxHashMap<(i64, i64, Option<(i64, i64)>), (i64, i64)>,
}

/// A node of the PE with the connections into and out of it (the topology's edge index).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Member {
    pub node: Node,
    pub into: Vec<Edge>,
    pub from: Vec<Edge>,
}

/// `PlannedPe`, its nodes resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pe {
    pub id: i64,
    pub index: i64,
    pub members: Vec<Member>,
    pub inputs: Vec<PeInput>,
    pub outputs: Vec<PeOutput>,
}
