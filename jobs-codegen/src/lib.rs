//! The manifest's generated outputs and the MCP server, as a crate of their own.
//!
//! Everything here lives in `jobs` itself (features `codegen` and `mcp`, both in `cli`), so an
//! app needs only the `jobs` dependency: its own `src/bin/jobs.rs` calling
//! `jobs::cli::main()` answers `jobs manifest [--out DIR | --check DIR]`, `jobs mcp` and the
//! operator verbs over the jobs linked into it. This crate re-exports them under their earlier
//! paths (`jobs_codegen::manifest_main`, `jobs_codegen::mcp::mcp_main`).
//!
//! ```no_run
//! use my_app as _; // link the crate that declares the jobs
//! # mod my_app {}
//!
//! fn main() -> std::process::ExitCode {
//!     jobs_codegen::manifest_main(std::env::args().skip(1))
//! }
//! ```

#![warn(missing_docs)]

pub use jobs::codegen::*;

/// The MCP server over stdio ([`jobs::mcp`]).
#[cfg(feature = "mcp")]
pub mod mcp {
    pub use jobs::mcp::*;
}
