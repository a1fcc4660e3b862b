//! The MCP tool list: the read tools `jobs-mcp` serves, and one enqueue tool per job whose
//! input schema is the job's own, which the server serves once opened for writes
//! (`jobs mcp --allow-enqueue`, `JobsMcp::allow_enqueue`).
//!
//! The file is a `tools/list` result (`{ "tools": [...] }`), sorted by tool name.

use crate::Manifest;
use serde_json::{json, Map, Value};

use super::text::{pretty, sorted};

/// `manifest.read`: the manifest, as committed.
pub const MANIFEST_READ: &str = "manifest.read";
/// `jobs.inspect`: job definitions (queue, retry policy, timeouts, concurrency, rate limit,
/// tenant).
pub const JOBS_INSPECT: &str = "jobs.inspect";
/// `queue.depth`: per-queue counts (ready, delayed, running, suspended, failed, dead).
pub const QUEUE_DEPTH: &str = "queue.depth";
/// `job.show`: one job, its steps, its last error and progress; its input redacted.
pub const JOB_SHOW: &str = "job.show";
/// `jobs.dead`: the dead letters, newest first, a page at a time.
pub const JOBS_DEAD: &str = "jobs.dead";

/// The prefix of every enqueue tool: `enqueue.<job name>`.
pub const ENQUEUE_PREFIX: &str = "enqueue.";

/// The read tools, sorted by name: what `jobs-mcp` serves.
pub fn read_tools() -> Vec<Value> {
    let read_only = json!({ "readOnlyHint": true, "openWorldHint": false });
    let mut tools = vec![
        tool(
            MANIFEST_READ,
            "Read the manifest",
            "The manifest: every declared job (queue, retry policy, timeouts, concurrency, rate limit, tenant, input schema) and task (cron, zone, catch-up, jobs fired). The build-time source of truth.",
            json!({ "type": "object", "properties": {}, "additionalProperties": false }),
            &read_only,
        ),
        tool(
            JOBS_INSPECT,
            "Inspect job definitions",
            "Job definitions from the manifest: queue, retry policy (attempts, backoff, delays, jitter, dead letter), timeouts, concurrency, rate limit and tenant. Steps are named at run time, so none are listed. Give `name` for one job.",
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "One job's name; all jobs when absent." }
                },
                "additionalProperties": false
            }),
            &read_only,
        ),
        tool(
            QUEUE_DEPTH,
            "Queue depth",
            "Per queue: jobs ready and due, delayed, running, suspended (sleeping or waiting for an event), done, failed, dead and cancelled, and the age of the oldest ready job in milliseconds.",
            json!({
                "type": "object",
                "properties": {
                    "queue": { "type": "string", "description": "One queue; every queue when absent." }
                },
                "additionalProperties": false
            }),
            &read_only,
        ),
        tool(
            JOB_SHOW,
            "Show one job",
            "One job by id: state, attempt, run time, last error and its code, progress, and every step of its run (status, attempts, error). The input is redacted, and so is the result a job that keeps one (`keep_result`) stored.",
            json!({
                "type": "object",
                "properties": {
                    "id": { "type": "string", "format": "uuid", "description": "The job's id." }
                },
                "required": ["id"],
                "additionalProperties": false
            }),
            &read_only,
        ),
        tool(
            JOBS_DEAD,
            "Dead letters",
            "Dead-lettered jobs, newest first, without their inputs. Answers a page and, when more remain, the `after` cursor of the next page.",
            json!({
                "type": "object",
                "properties": {
                    "queue": { "type": "string", "description": "Only this queue." },
                    "name": { "type": "string", "description": "Only this job." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 200, "description": "Rows per page (default 100, at most 200)." },
                    "after": { "type": "string", "description": "The cursor of the next page, from the previous answer." }
                },
                "additionalProperties": false
            }),
            &read_only,
        ),
    ];
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    tools
}

/// One enqueue tool per job: its arguments are `{ input, delay_ms?, run_at?, priority? }`, `input` being
/// the job's input schema (its `$defs` hoisted to the tool schema's root so `$ref`s resolve).
pub fn enqueue_tools(manifest: &Manifest) -> Vec<Value> {
    let mut tools: Vec<Value> = manifest
        .jobs()
        .iter()
        .filter_map(|job| {
            let name = job["name"].as_str()?;
            let mut input = job["input"]["schema"].clone();
            let mut defs = Map::new();
            if let Value::Object(object) = &mut input {
                object.remove("$schema");
                if let Some(Value::Object(inner)) = object.remove("$defs") {
                    defs = inner;
                }
            }
            let mut schema = json!({
                "type": "object",
                "properties": {
                    "input": input,
                    "delay_ms": { "type": "integer", "minimum": 0, "description": "Run no earlier than this many milliseconds from now." },
                    "run_at": { "type": "string", "format": "date-time", "description": "Run no earlier than this instant (RFC 3339)." },
                    "priority": { "type": "integer", "minimum": crate::driver::MIN_PRIORITY, "maximum": crate::driver::MAX_PRIORITY, "description": format!("Claimed before lower priorities within its tenant's turn, then by run time; default {} (the job's declared priority).", job["priority"]) }
                },
                "required": ["input"],
                "additionalProperties": false
            });
            if !defs.is_empty() {
                schema["$defs"] = Value::Object(defs);
            }
            let retry = &job["retry"];
            // A unique period holds the key past the job's end.
            let unique = job["unique_for_ms"]
                .as_u64()
                .map(|ms| {
                    format!(
                        " So does a job of the same key enqueued less than {} before, even once finished.",
                        crate::duration::shown(std::time::Duration::from_millis(ms))
                    )
                })
                .unwrap_or_default();
            let description = format!(
                "Enqueue `{name}` on queue `{}` ({} attempts, {} backoff, priority {}). Idempotent: a live job with the same key answers its own id with `deduped: true`.{unique}",
                job["queue"].as_str().unwrap_or_default(),
                retry["attempts"],
                retry["backoff"].as_str().unwrap_or_default(),
                job["priority"],
            );
            let annotations = json!({
                "readOnlyHint": false,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false
            });
            Some(tool(
                &enqueue_tool_name(name),
                &format!("Enqueue {name}"),
                &description,
                schema,
                &annotations,
            ))
        })
        .collect();
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    tools
}

/// `enqueue.<job name>`, with any character MCP tool names do not allow replaced by `_`.
pub fn enqueue_tool_name(job: &str) -> String {
    let safe: String = job
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{ENQUEUE_PREFIX}{safe}")
}

/// The whole list as a `tools/list` result value.
pub fn tool_list(manifest: &Manifest) -> Value {
    let mut tools = read_tools();
    tools.extend(enqueue_tools(manifest));
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    sorted(json!({ "tools": tools }))
}

/// The committed form: pretty JSON, keys sorted, tools sorted by name, final newline.
pub fn mcp_tools(manifest: &Manifest) -> String {
    pretty(&tool_list(manifest))
}

fn tool(name: &str, title: &str, description: &str, input: Value, annotations: &Value) -> Value {
    json!({
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": input,
        "annotations": annotations,
    })
}
