//! Sans-IO native core of streams-k8s.
//!
//! Every module takes plain data and returns plain data; Python owns all I/O.
//! The Python bindings live in [`python`] behind the `python` feature so that
//! `cargo test` exercises the pure-Rust core without an interpreter.

pub mod aadl;
pub mod adl;
pub mod cr_fsm;
pub mod fusion;
pub mod name_table;
pub mod properties;
pub mod scheduler;

#[cfg(feature = "python")]
mod python;

/// Version of the native core, as built.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
