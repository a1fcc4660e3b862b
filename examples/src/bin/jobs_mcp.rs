//! `jobs-mcp`: an MCP server over stdio for the example jobs. It serves the manifest and the
//! read verbs (`jobs.inspect`, `queue.depth`, `job.show`, `jobs.dead`) over the queue at
//! `DATABASE_URL` (schema `JOBS_SCHEMA`), or an empty in-memory queue without one.
//!
//! Register it with an MCP client as the command `cargo run -q --bin jobs-mcp`.

// Link the example jobs so their registrations are in this binary.
use jobs_examples as _;

fn main() -> std::process::ExitCode {
    jobs_codegen::mcp::mcp_main()
}
