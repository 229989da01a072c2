//! The per-PE AADL (`augmentedPE`, valid against `augmentedApplicationModel.xsd`), byte for byte
//! what `lxml` serialises for the same tree: one line, attributes in a fixed order, so the same PE
//! always gives the same bytes and its sha256 is a stable content id.
//!
//! Sans-IO: [`render`] takes the job, where every port ended up ([`PortIndex`]) and the PEs to
//! render ([`Pe`], each with its nodes and their connections) and returns one document per PE.
//! The parts every PE of a job repeats (host pools, tuple types, metrics, toolkits) are
//! serialised once per call.

mod document;
mod input;
mod operator;
mod ports;
mod xml;

#[cfg(test)]
mod tests;

pub use input::*;
pub use xml::python_float_repr;

/// The strings of the input: `String`, or a borrowed Python string in the bindings.
pub trait Text: std::ops::Deref<Target = str> + AsRef<str> {}
impl<T: std::ops::Deref<Target = str> + AsRef<str>> Text for T {}

/// Why a PE's AADL cannot be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AadlError {
    /// A string with a character XML 1.0 cannot hold (a C0 control other than tab, newline or
    /// carriage return; U+FFFE; U+FFFF), as lxml refuses it.
    NotXml { value: String },
    /// The plan names a node or port it does not have (a PE port without its operator port, a
    /// connection to a port no PE owns).
    Inconsistent { what: String },
}

impl AadlError {
    fn not_xml(value: &str) -> Self {
        AadlError::NotXml {
            value: value.to_owned(),
        }
    }

    fn inconsistent(what: String) -> Self {
        AadlError::Inconsistent { what }
    }
}

impl std::fmt::Display for AadlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AadlError::NotXml { value } => {
                let refused = value
                    .chars()
                    .find(|&c| !xml::is_xml_char(c))
                    .unwrap_or('\0');
                write!(
                    f,
                    "'{}' cannot be written to the AADL: U+{:04X} is no XML 1.0 character (of the \
                     control characters only tab, newline and carriage return are)",
                    value.escape_default(),
                    u32::from(refused)
                )
            }
            AadlError::Inconsistent { what } => write!(f, "inconsistent plan: {what}"),
        }
    }
}

impl std::error::Error for AadlError {}

/// The AADL of each PE of `pes`, in order.
pub fn render<S: Text>(
    job: &Job<S>,
    ports: &PortIndex,
    pes: &[Pe<'_, S>],
) -> Result<Vec<String>, AadlError> {
    let shared = document::Shared::new(job)?;
    pes.iter()
        .map(|pe| document::render_pe(&shared, ports, pe))
        .collect()
}
