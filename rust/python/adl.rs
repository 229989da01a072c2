//! The ADL parse (`parse_adl`, `AdlParseError`): the document is parsed and read without the GIL,
//! then the model is built as the classes of `adl_model`.

use std::borrow::Cow;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use rustc_hash::FxHashMap;

use super::adl_model as py_model;
use super::error_with;
use crate::adl::{self, model};

create_exception!(
    _native,
    AdlParseError,
    PyValueError,
    "An ADL that is not a usable application description; `line` says where (None: the whole \
     document), `reason` what is wrong."
);

type Str = Py<PyString>;
type Tuple = Py<PyTuple>;

fn object<T: pyo3::PyClass + Into<pyo3::PyClassInitializer<T>>>(
    py: Python<'_>,
    value: T,
) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, value)?.into_any())
}

/// Builds the Python model. Strings that repeat across operators (encodings, port kinds, ...) are
/// made once; placements and partitions equal to one already made are shared (they are immutable).
struct Builder<'py, 'a> {
    py: Python<'py>,
    strings: FxHashMap<&'a str, Str>,
    placements: FxHashMap<&'a model::HostPlacement<'a>, Py<py_model::HostPlacement>>,
    partitions: FxHashMap<&'a model::Partitions<'a>, Py<py_model::Partitions>>,
    no_placement: Py<py_model::HostPlacement>,
    no_partitions: Py<py_model::Partitions>,
    operator_kinds: [Py<PyAny>; 3],
    splitter_kinds: [Py<PyAny>; 3],
}

impl<'py, 'a> Builder<'py, 'a> {
    fn new(
        py: Python<'py>,
        operator_kind: &Bound<'py, PyAny>,
        splitter_kind: &Bound<'py, PyAny>,
    ) -> PyResult<Self> {
        let member =
            |enum_: &Bound<'py, PyAny>, value: &str| enum_.call1((value,)).map(Bound::unbind);
        let empty = PyTuple::empty(py).unbind();
        Ok(Builder {
            py,
            strings: FxHashMap::default(),
            placements: FxHashMap::default(),
            partitions: FxHashMap::default(),
            no_placement: Py::new(
                py,
                py_model::HostPlacement {
                    host: None,
                    pool_index: None,
                    inpool_index: None,
                    colocations: empty.clone_ref(py),
                    exlocations: empty.clone_ref(py),
                    isolation: false,
                },
            )?,
            no_partitions: Py::new(
                py,
                py_model::Partitions {
                    colocations: empty.clone_ref(py),
                    exlocations: empty,
                    isolation: false,
                },
            )?,
            operator_kinds: [
                member(operator_kind, "primitive")?,
                member(operator_kind, "import")?,
                member(operator_kind, "export")?,
            ],
            splitter_kinds: [
                member(splitter_kind, model::SplitterKind::RoundRobin.name())?,
                member(splitter_kind, model::SplitterKind::Hash.name())?,
                member(splitter_kind, model::SplitterKind::Broadcast.name())?,
            ],
        })
    }

    /// A string that repeats (a name of a kind, an encoding): made once per parse.
    fn word(&mut self, s: &'a str) -> Str {
        let py = self.py;
        self.strings
            .entry(s)
            .or_insert_with(|| PyString::new(py, s).unbind())
            .clone_ref(py)
    }

    /// A string that seldom repeats (a name, a path).
    fn text(&self, s: &str) -> Str {
        PyString::new(self.py, s).unbind()
    }

    fn opt(&self, s: Option<&str>) -> Option<Str> {
        s.map(|s| self.text(s))
    }

    fn tuple<T, I: IntoIterator<Item = T>>(
        &mut self,
        items: I,
        mut convert: impl FnMut(&mut Self, T) -> PyResult<Py<PyAny>>,
    ) -> PyResult<Tuple>
    where
        I::IntoIter: ExactSizeIterator,
    {
        let items = items
            .into_iter()
            .map(|item| convert(self, item))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(self.py, items)?.unbind())
    }

    fn texts(&mut self, items: &[&'a str]) -> PyResult<Tuple> {
        self.tuple(items, |b, s| Ok(b.text(s).into_any()))
    }

    fn cows(&mut self, items: &[Cow<'a, str>]) -> PyResult<Tuple> {
        self.tuple(items, |b, s| Ok(b.text(s).into_any()))
    }
}

impl<'py, 'a> Builder<'py, 'a> {
    fn refs(&mut self, refs: &'a [model::PortRef<'a>]) -> PyResult<Tuple> {
        self.tuple(refs, |b, r| {
            let kind = b.word(r.kind);
            object(
                b.py,
                py_model::PortRef {
                    oper_index: r.oper_index,
                    port_index: r.port_index,
                    kind,
                },
            )
        })
    }

    fn input_port(&mut self, p: &'a model::InputPort<'a>) -> PyResult<Py<PyAny>> {
        let threaded_port = match &p.threaded_port {
            Some(t) => {
                let congestion_policy = self.word(t.congestion_policy);
                Some(Py::new(
                    self.py,
                    py_model::ThreadedPort {
                        congestion_policy,
                        queue_size: t.queue_size,
                    },
                )?)
            }
            None => None,
        };
        let port = py_model::InputPort {
            index: p.index,
            name: self.word(p.name),
            tuple_type_index: p.tuple_type_index,
            encoding: self.word(p.encoding),
            transport: self.word(p.transport),
            is_mutable: p.is_mutable,
            is_control: p.is_control,
            connections: self.refs(&p.connections)?,
            threaded_port,
        };
        object(self.py, port)
    }

    fn output_port(&mut self, p: &'a model::OutputPort<'a>) -> PyResult<Py<PyAny>> {
        let name = self.text(p.name);
        let port = py_model::OutputPort {
            index: p.index,
            stream_name: if p.stream_name == p.name {
                name.clone_ref(self.py)
            } else {
                self.text(p.stream_name)
            },
            name,
            tuple_type_index: p.tuple_type_index,
            encoding: self.word(p.encoding),
            transport: self.word(p.transport),
            is_mutable: p.is_mutable,
            viewable: p.viewable,
            connections: self.refs(&p.connections)?,
        };
        object(self.py, port)
    }

    fn placement(
        &mut self,
        p: &'a Option<model::HostPlacement<'a>>,
    ) -> PyResult<Py<py_model::HostPlacement>> {
        let Some(p) = p else {
            return Ok(self.no_placement.clone_ref(self.py));
        };
        if let Some(made) = self.placements.get(p) {
            return Ok(made.clone_ref(self.py));
        }
        let made = Py::new(
            self.py,
            py_model::HostPlacement {
                host: self.opt(p.host),
                pool_index: p.pool_index,
                inpool_index: p.inpool_index,
                colocations: self.texts(&p.colocations)?,
                exlocations: self.texts(&p.exlocations)?,
                isolation: p.isolation,
            },
        )?;
        self.placements.insert(p, made.clone_ref(self.py));
        Ok(made)
    }

    fn partitions(
        &mut self,
        p: &'a Option<model::Partitions<'a>>,
    ) -> PyResult<Py<py_model::Partitions>> {
        let Some(p) = p else {
            return Ok(self.no_partitions.clone_ref(self.py));
        };
        if let Some(made) = self.partitions.get(p) {
            return Ok(made.clone_ref(self.py));
        }
        let made = Py::new(
            self.py,
            py_model::Partitions {
                colocations: self.texts(&p.colocations)?,
                exlocations: self.texts(&p.exlocations)?,
                isolation: p.isolation,
            },
        )?;
        self.partitions.insert(p, made.clone_ref(self.py));
        Ok(made)
    }

    fn annotations(&mut self, annotations: &'a [model::Annotation<'a>]) -> PyResult<Tuple> {
        self.tuple(annotations, |b, a| {
            let values = b.tuple(&a.values, |b, (key, type_, value)| {
                let value = b.text(value);
                Ok(PyTuple::new(b.py, [b.word(key), b.word(type_), value])?
                    .into_any()
                    .unbind())
            })?;
            let tag = b.word(a.tag);
            object(
                b.py,
                py_model::Annotation {
                    tag,
                    values,
                    internal: a.internal,
                },
            )
        })
    }

    fn import(&self, i: &model::Import<'_>) -> PyResult<Py<py_model::AdlImport>> {
        let spec = py_model::AdlImport {
            application_name: self.opt(i.application_name),
            stream_name: self.opt(i.stream_name),
            subscription: self.opt(i.subscription),
            application_scope: self.opt(i.application_scope),
            filter: self.opt(i.filter),
        };
        Py::new(self.py, spec)
    }

    fn export(&mut self, e: &'a model::Export<'a>) -> PyResult<Py<py_model::AdlExport>> {
        let properties = self.tuple(&e.properties, |b, p| {
            let values = b.cows(&p.values)?;
            object(
                b.py,
                py_model::ExportProperty {
                    name: b.text(p.name),
                    r#type: b.word(p.type_),
                    values,
                },
            )
        })?;
        let spec = py_model::AdlExport {
            stream_name: self.opt(e.stream_name),
            properties,
            allow_filter: e.allow_filter,
            congestion_policy: self.opt(e.congestion_policy),
        };
        Py::new(self.py, spec)
    }

    fn operator(&mut self, op: &'a model::Operator<'a>) -> PyResult<Py<py_model::Operator>> {
        let py = self.py;
        let kind = match op.kind {
            model::OperatorKind::Primitive => &self.operator_kinds[0],
            model::OperatorKind::Import => &self.operator_kinds[1],
            model::OperatorKind::Export => &self.operator_kinds[2],
        }
        .clone_ref(py);
        let jvm_arguments = op
            .jvm_arguments
            .as_deref()
            .map(|a| self.cows(a))
            .transpose()?;
        let checkpointing = match &op.checkpointing {
            Some(c) => Some(Py::new(
                py,
                py_model::Checkpointing {
                    policy: self.word(c.policy),
                    period: c.period,
                },
            )?),
            None => None,
        };
        let name = self.text(op.name);
        // The compiler names an operator's class after the operator: one string for both.
        let shared_object_class = if op.shared_object_class == op.name {
            name.clone_ref(py)
        } else {
            self.text(op.shared_object_class)
        };
        let operator = py_model::Operator {
            index: op.index,
            name,
            kind,
            definition_index: op.definition_index,
            composite: op.composite,
            input_ports: self.tuple(&op.input_ports, Self::input_port)?,
            output_ports: self.tuple(&op.output_ports, Self::output_port)?,
            restartable: op.restartable,
            relocatable: op.relocatable,
            optimized: op.optimized,
            single_threaded_on_outputs: op.single_threaded_on_outputs,
            placement: self.placement(&op.placement)?,
            partitions: self.partitions(&op.partitions)?,
            checkpointing,
            jvm_arguments,
            annotations: self.annotations(&op.annotations)?,
            runtime_constants: self.tuple(&op.runtime_constants, |b, c| {
                object(
                    b.py,
                    py_model::RuntimeConstant {
                        name: b.text(c.name),
                        value: b.text(c.value),
                        submission_time_value_index: c.submission_time_value_index,
                        default_value: b.opt(c.default_value),
                    },
                )
            })?,
            env_vars: self.tuple(&op.env_vars, |b, (name, value)| {
                Ok(PyTuple::new(b.py, [b.text(name), b.text(value)])?
                    .into_any()
                    .unbind())
            })?,
            wrapper: match &op.wrapper {
                Cow::Borrowed(w) => self.word(w),
                Cow::Owned(w) => self.text(w),
            },
            shared_object_class,
            shared_object_uri: self.text(&op.shared_object_uri),
            tracing_level: op.tracing_level.map(|l| self.word(l)),
            import_spec: op
                .import_spec
                .as_ref()
                .map(|i| self.import(i))
                .transpose()?,
            export_spec: op
                .export_spec
                .as_ref()
                .map(|e| self.export(e))
                .transpose()?,
        };
        Py::new(py, operator)
    }

    fn composite_ports(&mut self, ports: &'a [model::CompositePort<'a>]) -> PyResult<Tuple> {
        self.tuple(ports, |b, p| {
            let incoming = b.refs(&p.incoming)?;
            let outgoing = b.refs(&p.outgoing)?;
            object(
                b.py,
                py_model::CompositePort {
                    index: p.index,
                    incoming,
                    outgoing,
                },
            )
        })
    }

    fn composite(&mut self, c: &'a model::Composite<'a>) -> PyResult<Py<py_model::Composite>> {
        let composite = py_model::Composite {
            index: c.index,
            name: self.text(c.name),
            definition_index: c.definition_index,
            kind: self.word(c.kind),
            parent: c.parent,
            input_ports: self.composite_ports(&c.input_ports)?,
            output_ports: self.composite_ports(&c.output_ports)?,
            annotations: self.annotations(&c.annotations)?,
        };
        Py::new(self.py, composite)
    }
}

impl<'py, 'a> Builder<'py, 'a> {
    fn regions(&mut self, regions: &'a [model::ParallelRegion<'a>]) -> PyResult<Tuple> {
        self.tuple(regions, |b, r| {
            let splitters = b.tuple(&r.splitters, |b, s| {
                let kind = match s.kind {
                    model::SplitterKind::RoundRobin => &b.splitter_kinds[0],
                    model::SplitterKind::Hash => &b.splitter_kinds[1],
                    model::SplitterKind::Broadcast => &b.splitter_kinds[2],
                }
                .clone_ref(b.py);
                let attributes = b.texts(&s.attributes)?;
                object(
                    b.py,
                    py_model::Splitter {
                        iport_index: s.iport_index,
                        kind,
                        attributes,
                    },
                )
            })?;
            object(
                b.py,
                py_model::AdlParallelRegion {
                    index: r.index,
                    name: b.text(r.name),
                    oper_index: r.oper_index,
                    splitters,
                    constant_width: r.constant_width,
                    width_value_index: r.width_value_index,
                    replicate_host_tags: b.texts(&r.replicate_host_tags)?,
                },
            )
        })
    }

    fn sections(&mut self, app: &'a model::Application<'a>) -> PyResult<[Tuple; 8]> {
        let hostpools = self.tuple(&app.hostpools, |b, h| {
            object(
                b.py,
                py_model::AdlHostPool {
                    index: h.index,
                    name: b.text(h.name),
                    exclusive: h.exclusive,
                    size: h.size,
                    hosts: b.texts(&h.hosts)?,
                    tags: b.texts(&h.tags)?,
                },
            )
        })?;
        let tuple_types = self.tuple(&app.tuple_types, |b, t| {
            let attributes = b.tuple(&t.attributes, |b, (name, type_)| {
                Ok(PyTuple::new(b.py, [b.word(name), b.word(type_)])?
                    .into_any()
                    .unbind())
            })?;
            object(
                b.py,
                py_model::TupleType {
                    index: t.index,
                    attributes,
                },
            )
        })?;
        let definitions = self.tuple(&app.definitions, |b, d| {
            object(
                b.py,
                py_model::OperatorDefinition {
                    index: d.index,
                    kind: b.word(d.kind),
                    runtime_type: b.word(d.runtime_type),
                    toolkit_index: d.toolkit_index,
                    custom_metric_indices: PyTuple::new(b.py, &d.custom_metric_indices)?.unbind(),
                },
            )
        })?;
        let toolkits = self.tuple(&app.toolkits, |b, t| {
            object(
                b.py,
                py_model::ToolkitRef {
                    index: t.index,
                    name: b.text(t.name),
                    version: b.text(t.version),
                },
            )
        })?;
        let custom_metrics = self.tuple(&app.custom_metrics, |b, m| {
            object(
                b.py,
                py_model::CustomMetric {
                    index: m.index,
                    name: b.text(m.name),
                    kind: b.word(m.kind),
                    description: b.text(&m.description),
                },
            )
        })?;
        let submission_time_values = self.tuple(&app.submission_time_values, |b, v| {
            object(
                b.py,
                py_model::SubmissionTimeValue {
                    index: v.index,
                    name: b.text(v.name),
                    composite_name: b.word(v.composite_name),
                    kind: b.word(v.kind),
                    required: v.required,
                    default_value: b.opt(v.default_value),
                },
            )
        })?;
        let consistent_regions = self.tuple(&app.consistent_regions, |b, r| {
            object(
                b.py,
                py_model::AdlConsistentRegion {
                    index: r.index,
                    trigger: b.text(&r.trigger),
                    period: r.period,
                    drain_timeout: r.drain_timeout,
                    reset_timeout: r.reset_timeout,
                    max_consecutive_reset_attempts: r.max_consecutive_reset_attempts,
                },
            )
        })?;
        let parallel_regions = self.regions(&app.parallel_regions)?;
        Ok([
            hostpools,
            tuple_types,
            definitions,
            toolkits,
            custom_metrics,
            parallel_regions,
            submission_time_values,
            consistent_regions,
        ])
    }

    fn application(&mut self, app: &'a model::Application<'a>) -> PyResult<py_model::Application> {
        let py = self.py;
        let operators = PyDict::new(py);
        for op in &app.operators {
            operators.set_item(op.index, self.operator(op)?)?;
        }
        let composites = PyDict::new(py);
        for c in &app.composites {
            composites.set_item(c.index, self.composite(c)?)?;
        }
        let composite_kinds = PyDict::new(py);
        for &(index, kind) in &app.composite_kinds {
            composite_kinds.set_item(index, self.word(kind))?;
        }
        let [hostpools, tuple_types, definitions, toolkits, custom_metrics, parallel_regions, submission_time_values, consistent_regions] =
            self.sections(app)?;
        Ok(py_model::Application {
            name: self.text(app.name),
            scope: self.text(app.scope),
            version: self.text(app.version),
            build_id: self.text(app.build_id),
            bundle: self.text(app.bundle),
            product_version: self.text(app.product_version),
            application_directory: self.text(app.application_directory),
            output_directory: self.text(app.output_directory),
            data_directory: self.opt(app.data_directory),
            checkpoint_directory: self.opt(app.checkpoint_directory),
            avoid_runtime_yield: self.text(app.avoid_runtime_yield),
            adl_version: self.text(app.adl_version),
            main_composite: app.main_composite,
            operators: operators.unbind(),
            composites: composites.unbind(),
            hostpools,
            tuple_types,
            definitions,
            composite_kinds: composite_kinds.unbind(),
            toolkits,
            custom_metrics,
            parallel_regions,
            submission_time_values,
            consistent_regions,
        })
    }
}

/// Parses ADL bytes into the model (`streams_k8s.app.model`); the XML rules are `safe_xml`'s.
#[pyfunction]
#[pyo3(signature = (data, *, what, max_bytes, operator_kind, splitter_kind))]
fn parse_adl(
    py: Python<'_>,
    data: &Bound<'_, PyBytes>,
    what: &str,
    max_bytes: usize,
    operator_kind: &Bound<'_, PyAny>,
    splitter_kind: &Bound<'_, PyAny>,
) -> PyResult<py_model::Application> {
    let bytes = data.as_bytes();
    let refused = |err: adl::AdlError| {
        error_with::<AdlParseError>(py, err.message(what), |e| {
            e.setattr("line", err.line)?;
            e.setattr("reason", &err.reason)
        })
    };
    let doc = py
        .detach(|| adl::document(bytes, max_bytes))
        .map_err(refused)?;
    let app = py.detach(|| adl::read(&doc)).map_err(refused)?;
    Builder::new(py, operator_kind, splitter_kind)?.application(&app)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("AdlParseError", m.py().get_type::<AdlParseError>())?;
    py_model::register(m)?;
    m.add_function(wrap_pyfunction!(parse_adl, m)?)
}
