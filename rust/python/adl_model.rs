//! The logical model's classes (`streams_k8s.app.model` re-exports them): frozen, their fields
//! read-only attributes holding Python objects (a string or tuple read twice is the same object),
//! compared, hashed and shown the way the frozen dataclasses they replace were.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

/// A model class: the struct, its attributes, and `__eq__`/`__hash__`/`__repr__` over its fields
/// in order (as a dataclass's: equal only to its own class, hashed as the tuple of its fields).
macro_rules! model_class {
    (
        $(#[$meta:meta])*
        $name:ident { $($field:ident : $ty:ty),* $(,)? }
        $(methods { $($methods:tt)* })?
    ) => {
        $(#[$meta])*
        #[pyclass(module = "streams_k8s._native", frozen, get_all)]
        pub struct $name {
            $(pub(crate) $field: $ty,)*
        }

        impl $name {
            fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(py, [$((&self.$field).into_bound_py_any(py)?),*])
            }
        }

        #[pymethods]
        impl $name {
            fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                let py = other.py();
                match other.cast::<Self>() {
                    Ok(other) => self.fields(py)?.eq(other.get().fields(py)?)?.into_py_any(py),
                    Err(_) => Ok(py.NotImplemented()),
                }
            }

            fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
                self.fields(py)?.hash()
            }

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                let values = self.fields(py)?;
                let names = [$(stringify!($field).trim_start_matches("r#")),*];
                let shown = names
                    .iter()
                    .zip(values.iter())
                    .map(|(name, value)| Ok(format!("{name}={}", value.repr()?)))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(format!("{}({})", stringify!($name), shown.join(", ")))
            }

            $($($methods)*)?
        }
    };
}

type Str = Py<PyString>;
type Tuple = Py<PyTuple>;

/// The first item of `items` (a tuple of model objects) whose attribute `attr` equals `key`.
fn first_with(
    items: &Tuple,
    py: Python<'_>,
    attr: &Bound<'_, PyString>,
    key: &Bound<'_, PyAny>,
) -> PyResult<Option<Py<PyAny>>> {
    for item in items.bind(py).iter() {
        if item.getattr(attr)?.eq(key)? {
            return Ok(Some(item.unbind()));
        }
    }
    Ok(None)
}

model_class! {
    /// One end of a connection: operator (primitive or composite) index and port index.
    PortRef { oper_index: u64, port_index: u64, kind: Str }
}

model_class! {
    ThreadedPort { congestion_policy: Str, queue_size: Option<u64> }
}

model_class! {
    InputPort {
        index: u64, name: Str, tuple_type_index: u64, encoding: Str, transport: Str,
        is_mutable: bool, is_control: bool, connections: Tuple, threaded_port: Option<Py<ThreadedPort>>,
    }
}

model_class! {
    OutputPort {
        index: u64, name: Str, stream_name: Str, tuple_type_index: u64, encoding: Str, transport: Str,
        is_mutable: bool, viewable: bool, connections: Tuple,
    }
}

model_class! {
    /// SPL `placement` host constraints (ADL `resources`).
    HostPlacement {
        host: Option<Str>, pool_index: Option<u64>, inpool_index: Option<u64>,
        colocations: Tuple, exlocations: Tuple, isolation: bool,
    }
    methods {
        #[new]
        #[pyo3(signature = (host=None, pool_index=None, inpool_index=None, colocations=None, exlocations=None, isolation=false))]
        #[pyo3(text_signature = "(host=None, pool_index=None, inpool_index=None, colocations=(), exlocations=(), isolation=False)")]
        fn new(
            py: Python<'_>,
            host: Option<Str>,
            pool_index: Option<u64>,
            inpool_index: Option<u64>,
            colocations: Option<Tuple>,
            exlocations: Option<Tuple>,
            isolation: bool,
        ) -> Self {
            let empty = || PyTuple::empty(py).unbind();
            HostPlacement {
                host, pool_index, inpool_index,
                colocations: colocations.unwrap_or_else(empty),
                exlocations: exlocations.unwrap_or_else(empty),
                isolation,
            }
        }
    }
}

model_class! {
    /// SPL partition (fusion) constraints (ADL `partitions`).
    Partitions { colocations: Tuple, exlocations: Tuple, isolation: bool }
    methods {
        #[new]
        #[pyo3(signature = (colocations=None, exlocations=None, isolation=false))]
        #[pyo3(text_signature = "(colocations=(), exlocations=(), isolation=False)")]
        fn new(py: Python<'_>, colocations: Option<Tuple>, exlocations: Option<Tuple>, isolation: bool) -> Self {
            let empty = || PyTuple::empty(py).unbind();
            Partitions {
                colocations: colocations.unwrap_or_else(empty),
                exlocations: exlocations.unwrap_or_else(empty),
                isolation,
            }
        }
    }
}

model_class! {
    /// An annotation; `values` are (key, type, value).
    Annotation { tag: Str, values: Tuple, internal: bool }
    methods {
        /// The first value under `key`, None if there is none.
        fn get(&self, py: Python<'_>, key: &str) -> PyResult<Option<Py<PyAny>>> {
            for value in self.values.bind(py).iter() {
                if value.get_item(0)?.cast::<PyString>()?.to_str()? == key {
                    return Ok(Some(value.get_item(2)?.unbind()));
                }
            }
            Ok(None)
        }
    }
}

model_class! {
    Checkpointing { policy: Str, period: Option<f64> }
}

model_class! {
    RuntimeConstant { name: Str, value: Str, submission_time_value_index: Option<u64>, default_value: Option<Str> }
}

model_class! {
    /// Either name based (application + stream) or property based (subscription).
    AdlImport {
        application_name: Option<Str>, stream_name: Option<Str>, subscription: Option<Str>,
        application_scope: Option<Str>, filter: Option<Str>,
    }
}

model_class! {
    ExportProperty { name: Str, r#type: Str, values: Tuple }
}

model_class! {
    AdlExport { stream_name: Option<Str>, properties: Tuple, allow_filter: Option<bool>, congestion_policy: Option<Str> }
}

model_class! {
    /// A primitive operator instance; `composite` is the index of its enclosing composite instance.
    Operator {
        index: u64, name: Str, kind: Py<PyAny>, definition_index: u64, composite: u64,
        input_ports: Tuple, output_ports: Tuple,
        restartable: bool, relocatable: bool, optimized: bool, single_threaded_on_outputs: bool,
        placement: Py<HostPlacement>, partitions: Py<Partitions>, checkpointing: Option<Py<Checkpointing>>,
        jvm_arguments: Option<Tuple>, annotations: Tuple, runtime_constants: Tuple, env_vars: Tuple,
        wrapper: Str, shared_object_class: Str, shared_object_uri: Str, tracing_level: Option<Str>,
        import_spec: Option<Py<AdlImport>>, export_spec: Option<Py<AdlExport>>,
    }
    methods {
        /// The first annotation tagged `tag`.
        fn annotation(&self, tag: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
            first_with(&self.annotations, tag.py(), pyo3::intern!(tag.py(), "tag"), tag)
        }

        fn input_port(&self, index: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
            first_with(&self.input_ports, index.py(), pyo3::intern!(index.py(), "index"), index)
        }

        fn output_port(&self, index: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
            first_with(&self.output_ports, index.py(), pyo3::intern!(index.py(), "index"), index)
        }
    }
}

model_class! {
    CompositePort { index: u64, incoming: Tuple, outgoing: Tuple }
}

model_class! {
    Composite {
        index: u64, name: Str, definition_index: u64, kind: Str, parent: Option<u64>,
        input_ports: Tuple, output_ports: Tuple, annotations: Tuple,
    }
}

model_class! {
    AdlHostPool { index: u64, name: Str, exclusive: bool, size: Option<u64>, hosts: Tuple, tags: Tuple }
    methods {
        #[new]
        #[pyo3(signature = (index, name, exclusive, size=None, hosts=None, tags=None))]
        #[pyo3(text_signature = "(index, name, exclusive, size=None, hosts=(), tags=())")]
        fn new(
            py: Python<'_>,
            index: u64,
            name: Str,
            exclusive: bool,
            size: Option<u64>,
            hosts: Option<Tuple>,
            tags: Option<Tuple>,
        ) -> Self {
            let empty = || PyTuple::empty(py).unbind();
            AdlHostPool {
                index, name, exclusive, size,
                hosts: hosts.unwrap_or_else(empty),
                tags: tags.unwrap_or_else(empty),
            }
        }
    }
}

model_class! {
    Splitter { iport_index: u64, kind: Py<PyAny>, attributes: Tuple }
}

model_class! {
    /// `oper_index`: the parallel operator (primitive or composite); `width_value_index`: the
    /// submission-time value giving the width.
    AdlParallelRegion {
        index: u64, name: Str, oper_index: u64, splitters: Tuple,
        constant_width: Option<i64>, width_value_index: Option<i64>, replicate_host_tags: Tuple,
    }
}

model_class! {
    /// `kind`: named | namedList.
    SubmissionTimeValue { index: u64, name: Str, composite_name: Str, kind: Str, required: bool, default_value: Option<Str> }
}

model_class! {
    TupleType { index: u64, attributes: Tuple }
}

model_class! {
    OperatorDefinition { index: u64, kind: Str, runtime_type: Str, toolkit_index: u64, custom_metric_indices: Tuple }
}

model_class! {
    CustomMetric { index: u64, name: Str, kind: Str, description: Str }
}

model_class! {
    ToolkitRef { index: u64, name: Str, version: Str }
}

model_class! {
    /// A `@consistent` region as declared on a composite (`consistentRegion` annotation); None
    /// where the annotation leaves a setting out (the plan applies the defaults).
    AdlConsistentRegion {
        index: i64, trigger: Str, period: Option<f64>, drain_timeout: Option<f64>,
        reset_timeout: Option<f64>, max_consecutive_reset_attempts: Option<i64>,
    }
}

model_class! {
    /// The application an ADL describes; `adl_version` is "v4200" or "v4000".
    Application {
        name: Str, scope: Str, version: Str, build_id: Str, bundle: Str, product_version: Str,
        application_directory: Str, output_directory: Str, data_directory: Option<Str>,
        checkpoint_directory: Option<Str>, avoid_runtime_yield: Str, adl_version: Str, main_composite: u64,
        operators: Py<PyDict>, composites: Py<PyDict>, hostpools: Tuple, tuple_types: Tuple, definitions: Tuple,
        composite_kinds: Py<PyDict>, toolkits: Tuple, custom_metrics: Tuple, parallel_regions: Tuple,
        submission_time_values: Tuple, consistent_regions: Tuple,
    }
    methods {
        fn hostpool(&self, index: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
            first_with(&self.hostpools, index.py(), pyo3::intern!(index.py(), "index"), index)
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PortRef>()?;
    m.add_class::<ThreadedPort>()?;
    m.add_class::<InputPort>()?;
    m.add_class::<OutputPort>()?;
    m.add_class::<HostPlacement>()?;
    m.add_class::<Partitions>()?;
    m.add_class::<Annotation>()?;
    m.add_class::<Checkpointing>()?;
    m.add_class::<RuntimeConstant>()?;
    m.add_class::<AdlImport>()?;
    m.add_class::<ExportProperty>()?;
    m.add_class::<AdlExport>()?;
    m.add_class::<Operator>()?;
    m.add_class::<CompositePort>()?;
    m.add_class::<Composite>()?;
    m.add_class::<AdlHostPool>()?;
    m.add_class::<Splitter>()?;
    m.add_class::<AdlParallelRegion>()?;
    m.add_class::<SubmissionTimeValue>()?;
    m.add_class::<TupleType>()?;
    m.add_class::<OperatorDefinition>()?;
    m.add_class::<CustomMetric>()?;
    m.add_class::<ToolkitRef>()?;
    m.add_class::<AdlConsistentRegion>()?;
    m.add_class::<Application>()
}
