//! What the renderer reads: the plan's own objects, field for field.
//!
//! Each struct mirrors one class of `streams_k8s.app` (model, topology, physical) and holds only
//! the attributes the AADL uses, under the same names, so the bindings extract them straight
//! from the Python objects by attribute (`FromPyObject` with the `python` feature) with no
//! intermediate form built in Python. Strings are `S`: `String` here, and in the bindings a
//! borrowed Python string (no copy, no allocation: most of a plan's strings are written once).

use rustc_hash::FxHashMap;

#[cfg(feature = "python")]
use pyo3::FromPyObject;

#[cfg(feature = "python")]
mod extract {
    use pyo3::prelude::*;
    use pyo3::types::{PyList, PyTuple};

    /// A tuple or list field (what the model holds) read item by item, without the generic
    /// sequence protocol's iterator object (most are empty or short); any other sequence as PyO3
    /// reads it.
    pub fn seq<'py, T: FromPyObjectOwned<'py>>(obj: &Bound<'py, PyAny>) -> PyResult<Vec<T>> {
        if let Ok(tuple) = obj.cast::<PyTuple>() {
            tuple
                .iter_borrowed()
                .map(|item| item.extract().map_err(Into::into))
                .collect()
        } else if let Ok(list) = obj.cast::<PyList>() {
            list.iter()
                .map(|item| item.extract().map_err(Into::into))
                .collect()
        } else {
            obj.extract()
        }
    }
}

/// `AdlHostPool` (or a per-channel replica of one).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct HostPool<S = String> {
    pub index: i64,
    pub name: S,
    pub exclusive: bool,
    pub size: Option<i64>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub hosts: Vec<S>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub tags: Vec<S>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct TupleType<S = String> {
    pub index: i64,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub attributes: Vec<(S, S)>,
}

/// `OperatorDefinition`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Definition<S = String> {
    pub index: i64,
    pub kind: S,
    pub runtime_type: S,
    pub toolkit_index: i64,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub custom_metric_indices: Vec<i64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct CustomMetric<S = String> {
    pub index: i64,
    pub name: S,
    pub kind: S,
    pub description: S,
}

/// `ToolkitRef`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Toolkit<S = String> {
    pub index: i64,
    pub name: S,
}

/// `Application`: what every PE's AADL repeats.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct App<S = String> {
    pub name: S,
    pub scope: S,
    pub version: S,
    pub build_id: S,
    pub bundle: S,
    pub application_directory: S,
    pub output_directory: S,
    pub data_directory: Option<S>,
    pub checkpoint_directory: Option<S>,
    pub avoid_runtime_yield: S,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub tuple_types: Vec<TupleType<S>>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub definitions: Vec<Definition<S>>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub custom_metrics: Vec<CustomMetric<S>>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub toolkits: Vec<Toolkit<S>>,
}

/// The job and application every PE of one call belongs to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Job<S = String> {
    pub name: S,
    pub id: i64,
    pub app: App<S>,
    /// The topology's host pools (the application's plus per-channel replicas).
    pub hostpools: Vec<HostPool<S>>,
    /// The Job's threading model, for operators without `@threading`.
    pub default_threading: Option<S>,
    /// Submission-time value index → the value the user gave, as an SPL literal.
    pub given: FxHashMap<i64, S>,
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
pub struct Placement<S = String> {
    pub host: Option<S>,
    pub pool_index: Option<i64>,
    pub inpool_index: Option<i64>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub colocations: Vec<S>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub exlocations: Vec<S>,
    pub isolation: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Checkpointing<S = String> {
    pub policy: S,
    pub period: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct RuntimeConstant<S = String> {
    pub name: S,
    pub value: S,
    pub submission_time_value_index: Option<i64>,
    pub default_value: Option<S>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct ThreadedPort<S = String> {
    pub congestion_policy: S,
    pub queue_size: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct InputPort<S = String> {
    pub index: i64,
    pub name: S,
    pub tuple_type_index: i64,
    pub encoding: S,
    pub transport: S,
    pub is_mutable: bool,
    pub is_control: bool,
    pub threaded_port: Option<ThreadedPort<S>>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct OutputPort<S = String> {
    pub index: i64,
    pub name: S,
    pub stream_name: S,
    pub tuple_type_index: i64,
    pub encoding: S,
    pub transport: S,
    pub is_mutable: bool,
    pub viewable: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Annotation<S = String> {
    pub tag: S,
    /// (key, type, value)
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub values: Vec<(S, S, S)>,
}

/// `Operator`: the logical operator a node replicates.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Operator<S = String> {
    pub index: i64,
    pub name: S,
    pub definition_index: i64,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub input_ports: Vec<InputPort<S>>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub output_ports: Vec<OutputPort<S>>,
    pub restartable: bool,
    pub relocatable: bool,
    pub optimized: bool,
    pub single_threaded_on_outputs: bool,
    pub checkpointing: Option<Checkpointing<S>>,
    pub jvm_arguments: Option<Vec<S>>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub annotations: Vec<Annotation<S>>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub runtime_constants: Vec<RuntimeConstant<S>>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub env_vars: Vec<(S, S)>,
    pub wrapper: S,
    pub shared_object_class: S,
    pub shared_object_uri: S,
}

impl<S> Operator<S> {
    /// The first input port with this index, as `Operator.input_port` finds it.
    pub fn input_port(&self, index: i64) -> Option<&InputPort<S>> {
        self.input_ports.iter().find(|p| p.index == index)
    }

    pub fn output_port(&self, index: i64) -> Option<&OutputPort<S>> {
        self.output_ports.iter().find(|p| p.index == index)
    }
}

/// `AdlImport`: name based (application + stream) or property based (subscription).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Import<S = String> {
    pub application_name: Option<S>,
    pub stream_name: Option<S>,
    pub subscription: Option<S>,
    pub application_scope: Option<S>,
}

#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct ExportProperty<S = String> {
    pub name: S,
    #[cfg_attr(feature = "python", pyo3(attribute("type")))]
    pub type_: S,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub values: Vec<S>,
}

/// `AdlExport`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Export<S = String> {
    pub stream_name: Option<S>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub properties: Vec<ExportProperty<S>>,
    pub allow_filter: Option<bool>,
    pub congestion_policy: Option<S>,
}

/// An imported stream of a node's input port: (Import<S> operator name, its index, what it imports).
pub type Imported<S = String> = (S, i64, Import<S>);

/// `Node`: one replica of an operator in the topology.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Node<S = String> {
    pub index: i64,
    pub name: S,
    pub operator: Operator<S>,
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub channels: Vec<Channel>,
    pub placement: Placement<S>,
    pub threading: Option<S>,
    /// Imported streams by input port.
    pub imports: FxHashMap<i64, Vec<Imported<S>>>,
}

/// `SplitterStep`: the consumer's local channel of a region the connection enters.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct SplitterStep<S = String> {
    pub region: i64,
    pub kind: S,
    pub iport: i64,
    pub channel: i64,
}

/// `SplitterUse`: the splitters a connection goes through, outermost first (never empty).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct SplitterUse<S = String> {
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub path: Vec<SplitterStep<S>>,
}

/// `Edge`: one physical connection.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct Edge<S = String> {
    pub src: i64,
    pub src_port: i64,
    pub dst: i64,
    pub dst_port: i64,
    pub splitter: Option<SplitterUse<S>>,
}

impl<S> Edge<S> {
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
pub struct PeInput<S = String> {
    pub id: i64,
    pub node: i64,
    pub port: i64,
    /// (source PE id, edge)
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub senders: Vec<(i64, Edge<S>)>,
}

/// `PeOutputPort`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct PeOutput<S = String> {
    pub id: i64,
    pub node: i64,
    pub port: i64,
    pub channel: Option<(i64, i64)>,
    /// (destination PE id, edge)
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub receivers: Vec<(i64, Edge<S>)>,
    /// (Export operator name, what it exports)
    #[cfg_attr(feature = "python", pyo3(from_py_with = extract::seq))]
    pub exports: Vec<(S, Export<S>)>,
}

/// An operator output port and the splitter channel it feeds, if any: (node, port, channel).
pub type OutputKey = (i64, i64, Option<(i64, i64)>);

/// `PortIndex`: where every node and PE port ended up.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "python", derive(FromPyObject))]
pub struct PortIndex {
    /// node index → PE id
    pub pe_of: FxHashMap<i64, i64>,
    /// (node, port) → (PE id, PE port id)
    pub inputs: FxHashMap<(i64, i64), (i64, i64)>,
    /// (node, port, channel) → (PE id, PE port id)
    pub outputs: FxHashMap<OutputKey, (i64, i64)>,
}

/// A node of the PE with the connections into and out of it (the topology's edge index).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Member<'e, S = String> {
    pub node: Node<S>,
    pub into: Vec<&'e Edge<S>>,
    pub from: Vec<&'e Edge<S>>,
}

/// `PlannedPe`, its nodes resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pe<'e, S = String> {
    pub id: i64,
    pub index: i64,
    pub members: Vec<Member<'e, S>>,
    pub inputs: Vec<PeInput<S>>,
    pub outputs: Vec<PeOutput<S>>,
}
