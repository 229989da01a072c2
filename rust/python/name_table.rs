//! `NameTableIndex`: the parsed name table kept native; lookups create Python objects, the parse does not.

use pyo3::prelude::*;

use crate::name_table::{self, NameTable, OperatorPort, PePort};

use super::properties_error;

type Entry = (u64, u64, u64, u64, u64, u64);

#[pyclass(module = "streams_k8s._native", frozen)]
pub struct NameTableIndex {
    table: NameTable,
}

#[pymethods]
impl NameTableIndex {
    /// A table from `(job, operator, port, pe, pe_port, pe_job)` entries.
    #[new]
    fn new(entries: Vec<Entry>) -> Self {
        let table = NameTable::from_entries(
            entries
                .into_iter()
                .map(|(j, o, p, e, i, k)| ((j, o, p), (e, i, k))),
        );
        NameTableIndex { table }
    }

    /// Parses the Java-properties text of a name table; raises PropertiesError listing every bad line.
    #[staticmethod]
    fn parse(py: Python<'_>, text: &str) -> PyResult<Self> {
        match py.detach(|| name_table::parse(text)) {
            Ok(table) => Ok(NameTableIndex { table }),
            Err(errors) => Err(properties_error(py, errors)),
        }
    }

    /// The PE port of an operator port, or None.
    fn get(&self, job: u64, operator: u64, port: u64) -> Option<PePort> {
        self.table.get(&(job, operator, port))
    }

    /// Every entry in file order, as `(job, operator, port, pe, pe_port, pe_job)`.
    fn entries(&self) -> Vec<Entry> {
        self.table
            .entries()
            .iter()
            .map(|&((j, o, p), (e, i, k)): &(OperatorPort, PePort)| (j, o, p, e, i, k))
            .collect()
    }

    fn __len__(&self) -> usize {
        self.table.len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NameTableIndex>()
}
