//! An MCP server over stdio: the manifest and the operator's read verbs, for an agent.
//!
//! | tool | answers |
//! |---|---|
//! | `manifest.read` | the manifest, as committed |
//! | `jobs.inspect` | job definitions: queue, retry policy, timeouts, concurrency, rate limit, tenant |
//! | `queue.depth` | per-queue counts, the oldest ready age, and whether the queue is paused |
//! | `job.show` | one job: state, attempt, last error, progress, its steps, its history (who did what); the input and any kept result redacted |
//! | `jobs.dead` | dead letters, newest first, a page at a time (the introspection API) |
//!
//! | `enqueue.<job>` | enqueues one declared job (writes: served only when allowed) |
//!
//! The read tools are always served. The enqueue tools, one per job, are served only by a
//! server opened for writes ([`JobsMcp::allow_enqueue`], `jobs mcp --allow-enqueue`); on any
//! other an enqueue tool is refused with `X_FORBIDDEN`. An enqueue's `input` must parse as the
//! job's input type, the type its input schema is derived from (else `X_JOB_INPUT_INVALID`,
//! naming the field, never its value); the job is recorded as enqueued by the actor `mcp`.
//! The tool definitions are the ones [`crate::codegen::mcp_tools()`] writes into
//! `mcp-tools.json`. A refusal (an unknown job, a bad cursor) is a tool result with
//! `isError: true` and `{ code, message, fix }`, so the agent reads why.
//!
//! An app serves it from its own operator binary (`jobs mcp`, see [`crate::cli`]), or from a
//! binary of its own that links its jobs:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     jobs::mcp::mcp_main()
//! }
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use crate::driver::introspect::JobListParams;
use crate::enqueue::EnqueueOptions;
use crate::registry::Registry;
use crate::{ErrorCode, JobError, JobState, Jobs, Manifest};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::codegen::mcp_tools::{
    enqueue_tool_name, enqueue_tools, read_tools, ENQUEUE_PREFIX, JOBS_DEAD, JOBS_INSPECT,
    JOB_SHOW, MANIFEST_READ, QUEUE_DEPTH,
};
use crate::driver::StepListParams;

/// The actor an enqueue through the MCP server is recorded under.
pub const MCP_ACTOR: &str = "mcp";

/// The server: a manifest and a client to read the queue through.
#[derive(Debug, Clone)]
pub struct JobsMcp {
    manifest: Arc<Manifest>,
    jobs: Jobs,
    allow_enqueue: bool,
}

impl JobsMcp {
    /// Serves `manifest`, reading jobs and queues through `jobs`. Read-only: its enqueue tools
    /// are refused until [`allow_enqueue`](Self::allow_enqueue).
    pub fn new(manifest: Manifest, jobs: Jobs) -> Self {
        JobsMcp {
            manifest: Arc::new(manifest),
            jobs,
            allow_enqueue: false,
        }
    }

    /// Opens the server for writes: it lists and serves one `enqueue.<job>` tool per job of
    /// the manifest (`jobs mcp --allow-enqueue`).
    pub fn allow_enqueue(mut self) -> Self {
        self.allow_enqueue = true;
        self
    }

    /// The read tools, as a read-only server's `tools/list` answers them.
    pub fn tools() -> Vec<Tool> {
        as_tools(read_tools())
    }

    /// The tools this server lists: the read tools, and the enqueue tools when it is open for
    /// writes.
    pub fn served_tools(&self) -> Vec<Tool> {
        let mut tools = read_tools();
        if self.allow_enqueue {
            tools.extend(enqueue_tools(&self.manifest));
        }
        as_tools(tools)
    }

    /// Runs one tool: `Ok(answer)`, or `Err(refusal)` for a tool-level error.
    pub async fn call(&self, tool: &str, args: &Map<String, Value>) -> Result<Value, Refusal> {
        match tool {
            MANIFEST_READ => Ok(self.manifest_read()),
            JOBS_INSPECT => self.jobs_inspect(args),
            QUEUE_DEPTH => self.queue_depth(args).await,
            JOB_SHOW => self.job_show(args).await,
            JOBS_DEAD => self.jobs_dead(args).await,
            other if self.enqueued_job(other).is_some() => self.enqueue(other, args).await,
            other => Err(Refusal::new(
                "X_MCP_UNKNOWN_TOOL",
                format!("no tool named `{other}`"),
                "list the tools with tools/list",
            )),
        }
    }

    /// The job of the manifest whose enqueue tool is `tool`.
    fn enqueued_job(&self, tool: &str) -> Option<&str> {
        if !tool.starts_with(ENQUEUE_PREFIX) {
            return None;
        }
        self.manifest
            .jobs()
            .iter()
            .filter_map(|job| job["name"].as_str())
            .find(|name| enqueue_tool_name(name) == tool)
    }

    /// `enqueue.<job>`: one job from `{ input, delay_ms?, run_at?, priority? }`, on a server
    /// open for writes.
    async fn enqueue(&self, tool: &str, args: &Map<String, Value>) -> Result<Value, Refusal> {
        let Some(name) = self.enqueued_job(tool) else {
            return Err(Refusal::new(
                "X_MCP_UNKNOWN_TOOL",
                format!("no tool named `{tool}`"),
                "list the tools with tools/list",
            ));
        };
        if !self.allow_enqueue {
            return Err(JobError::new(
                ErrorCode::Forbidden,
                format!("`{tool}` enqueues a job, and this MCP server was started read-only"),
            )
            .into());
        }
        if let Some(unknown) = args
            .keys()
            .find(|k| !matches!(k.as_str(), "input" | "delay_ms" | "run_at" | "priority"))
        {
            return Err(bad_argument(
                format!("`{unknown}` is not an argument of `{tool}`"),
                "pass `input` and, if wanted, `delay_ms`, `run_at` or `priority`",
            ));
        }
        let Some(input) = args.get("input") else {
            return Err(bad_argument(
                "`input` is required",
                "pass the job's input as `input`, shaped as its input schema",
            ));
        };
        let entry = Registry::global()?.get(name).ok_or_else(|| {
            Refusal::from(
                JobError::new(
                    ErrorCode::JobNotFound,
                    format!("job `{name}` is in the manifest but not linked into this server"),
                )
                .with_fix(
                    "serve the MCP server from a binary that links the crate declaring the job",
                ),
            )
        })?;
        let mut options = EnqueueOptions::new().actor(MCP_ACTOR);
        match args.get("delay_ms") {
            None | Some(Value::Null) => {}
            Some(value) => {
                let ms = value.as_u64().ok_or_else(|| {
                    bad_argument(
                        "`delay_ms` is not a whole number",
                        "pass milliseconds, 0 or more",
                    )
                })?;
                options = options.delay(std::time::Duration::from_millis(ms));
            }
        }
        if let Some(at) = optional_str(args, "run_at")? {
            let at = chrono::DateTime::parse_from_rfc3339(at).map_err(|_| {
                bad_argument(
                    "`run_at` is not an RFC 3339 instant",
                    "pass an instant such as 2030-01-01T09:00:00Z",
                )
            })?;
            options = options.run_at(at.with_timezone(&chrono::Utc));
        }
        match args.get("priority") {
            None | Some(Value::Null) => {}
            Some(value) => {
                let priority = value
                    .as_i64()
                    .and_then(|p| i16::try_from(p).ok())
                    .ok_or_else(|| {
                        Refusal::from(JobError::new(
                            ErrorCode::Invariant,
                            "`priority` is not a whole number in -5..=5",
                        ))
                    })?;
                options = options.priority(priority);
            }
        }
        let queued = self.jobs.enqueue_json(entry, input, options).await?;
        Ok(json!({ "id": queued.id, "run_id": queued.run_id, "deduped": queued.deduped }))
    }

    fn manifest_read(&self) -> Value {
        serde_json::from_str(&self.manifest.to_json()).unwrap_or(Value::Null)
    }

    fn jobs_inspect(&self, args: &Map<String, Value>) -> Result<Value, Refusal> {
        let wanted = optional_str(args, "name")?;
        let jobs: Vec<Value> = self
            .manifest
            .jobs()
            .iter()
            .filter(|job| wanted.is_none_or(|name| job["name"] == name))
            .map(|job| {
                let mut row = job.clone();
                if let Value::Object(object) = &mut row {
                    // The definition, not the schema: `manifest.read` has the schemas.
                    object.insert("input".into(), job["input"]["type"].clone());
                }
                row
            })
            .collect();
        if let (Some(name), true) = (wanted, jobs.is_empty()) {
            let known: Vec<&str> = self
                .manifest
                .jobs()
                .iter()
                .filter_map(|j| j["name"].as_str())
                .collect();
            return Err(Refusal::new(
                "X_JOB_NOT_FOUND",
                format!("no job named `{name}` is declared"),
                format!("declared jobs: {}", known.join(", ")),
            ));
        }
        Ok(json!({ "jobs": jobs, "tasks": self.manifest.tasks() }))
    }

    async fn queue_depth(&self, args: &Map<String, Value>) -> Result<Value, Refusal> {
        let wanted = optional_str(args, "queue")?;
        let stats = self.jobs.stats().await?;
        let paused: Vec<String> = match self.jobs.driver().introspect() {
            Some(operator) => operator
                .queue_paused()
                .await?
                .into_iter()
                .map(|p| p.queue)
                .collect(),
            None => Vec::new(),
        };
        let queues: Vec<Value> = stats
            .into_iter()
            .filter(|s| wanted.is_none_or(|q| s.queue == q))
            .map(|s| {
                let is_paused = paused.contains(&s.queue);
                let mut row = serde_json::to_value(&s).unwrap_or(Value::Null);
                row["paused"] = Value::Bool(is_paused);
                row
            })
            .collect();
        Ok(json!({ "queues": queues }))
    }

    async fn job_show(&self, args: &Map<String, Value>) -> Result<Value, Refusal> {
        let id = args.get("id").and_then(Value::as_str).ok_or_else(|| {
            Refusal::new(
                "X_MCP_BAD_ARGUMENT",
                "`id` is required",
                "pass the job's id",
            )
        })?;
        let id = Uuid::parse_str(id).map_err(|_| {
            Refusal::new(
                "X_ID_INVALID",
                "`id` is not a uuid",
                "pass the job's id as printed (lower-case uuid)",
            )
        })?;
        let Some(row) = self.jobs.job(id).await? else {
            return Err(Refusal::new(
                "X_JOB_NOT_FOUND",
                format!("no job {id}"),
                "list jobs with `jobs ls`, or the dead letters with jobs.dead",
            ));
        };
        let steps = self
            .jobs
            .driver()
            .step_list(&StepListParams { run_id: row.run_id })
            .await?;
        let steps: Vec<Value> = steps
            .into_iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "status": s.status.as_str(),
                    "attempts": s.attempts,
                    "error": s.error,
                    "wake_at": s.wake_at,
                    // The event a wait is for and its deadline; never its key or payload.
                    "waiting_for": s.wait.map(|w| json!({ "event": w.event, "deadline": w.deadline })),
                    "updated_at": s.updated_at,
                })
            })
            .collect();
        // Who requeued, cancelled or promoted it: an operator surface's history, when the
        // store has one.
        let history = match self.jobs.operator().history(id).await {
            Ok(history) => history,
            Err(e) if e.is(crate::ErrorCode::NotImplemented) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let links = self.jobs.links(id).await?;
        let batch = match links.batch {
            Some(batch) => Some(self.jobs.batch_report(batch).await?),
            None => None,
        };
        Ok(json!({
            "job": {
                "id": row.id,
                "run_id": row.run_id,
                "name": row.name,
                "queue": row.queue,
                "tenant_id": row.tenant_id,
                "actor": row.actor,
                "state": row.state,
                "attempt": row.attempt,
                "max_attempts": row.max_attempts,
                "run_at": row.run_at,
                "priority": row.priority,
                "created_at": row.created_at,
                "updated_at": row.updated_at,
                "last_error": row.last_error,
                "last_error_code": row.last_error_code,
                "claimed_by": row.claimed_by,
                "visible_at": row.visible_at,
                "progress": row.progress,
                "traceparent": row.traceparent,
                "input": "[redacted]",
                // A kept result (`keep_result`) is a payload as the input is: whether there is
                // one, never what it holds.
                "result": row.result.as_ref().map(|_| "[redacted]"),
            },
            "steps": steps,
            "history": history,
            // The jobs it depends on (with their states) and the jobs depending on it, the job
            // that invoked it, the jobs it invoked, and its batch with the batch's progress.
            "links": links,
            "batch": batch,
        }))
    }

    async fn jobs_dead(&self, args: &Map<String, Value>) -> Result<Value, Refusal> {
        let Some(operator) = self.jobs.driver().introspect() else {
            return Err(Refusal::new(
                "X_NOT_IMPLEMENTED",
                format!(
                    "the `{}` driver has no introspection API",
                    self.jobs.driver().name()
                ),
                "serve a driver with an operator surface (memory, Postgres or SQLite)",
            ));
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .and_then(|l| u32::try_from(l).ok())
                    .ok_or_else(|| {
                        Refusal::new(
                            "X_JOB_PAGE_INVALID",
                            "`limit` is not a whole number",
                            "pass 1 to 200",
                        )
                    })?,
            ),
        };
        let params = JobListParams {
            state: Some(JobState::Dead),
            queue: optional_str(args, "queue")?.map(str::to_string),
            name: optional_str(args, "name")?.map(str::to_string),
            after: optional_str(args, "after")?.map(str::to_string),
            limit,
            ..JobListParams::default()
        };
        let page = operator.job_list(&params).await?;
        Ok(json!({ "jobs": page.jobs, "after": page.after }))
    }
}

/// A tool-level refusal: `{ code, message, fix }` with `isError: true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The `X_...` code.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// What to do.
    pub fix: String,
}

impl Refusal {
    fn new(code: &str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Refusal {
            code: code.to_string(),
            message: message.into(),
            fix: fix.into(),
        }
    }

    fn to_value(&self) -> Value {
        json!({ "code": self.code, "message": self.message, "fix": self.fix })
    }
}

impl From<JobError> for Refusal {
    fn from(error: JobError) -> Self {
        Refusal {
            code: error
                .code()
                .map_or("X_INTERNAL", |c| c.as_str())
                .to_string(),
            message: error.to_string(),
            fix: error.fix().unwrap_or_default().to_string(),
        }
    }
}

fn as_tools(tools: Vec<Value>) -> Vec<Tool> {
    tools
        .into_iter()
        .map(|tool| serde_json::from_value(tool).expect("the generated tools are valid MCP tools"))
        .collect()
}

fn bad_argument(message: impl Into<String>, fix: impl Into<String>) -> Refusal {
    Refusal::new("X_MCP_BAD_ARGUMENT", message, fix)
}

fn optional_str<'a>(args: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, Refusal> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(Refusal::new(
            "X_MCP_BAD_ARGUMENT",
            format!("`{key}` must be a string"),
            "see the tool's input schema",
        )),
    }
}

impl ServerHandler for JobsMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("jobs-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "A view of a durable job queue: manifest.read and jobs.inspect for what the code \
                 declares, queue.depth for backlog per queue, job.show for one job and its steps, \
                 jobs.dead for dead letters. Inputs are never shown. When the server is open for \
                 writes, enqueue.<job> enqueues one job.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.served_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // An enqueue tool is known to a read-only server too: its call is refused with a code.
        let known = read_tools()
            .iter()
            .any(|t| t["name"] == request.name.as_ref())
            || self.enqueued_job(&request.name).is_some();
        if !known {
            return Err(ErrorData::invalid_params(
                format!("no tool named `{}`", request.name),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let result = match self.call(&request.name, &args).await {
            Ok(answer) => CallToolResult::structured(answer),
            Err(refusal) => CallToolResult::structured_error(refusal.to_value()),
        };
        Ok(result.into())
    }
}

/// Serves `server` on this process's stdin and stdout until the client hangs up.
pub async fn serve_stdio(server: JobsMcp) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// The `jobs-mcp` binary: [`serve_linked`] on a runtime of its own, open for writes when its
/// arguments hold `--allow-enqueue`.
pub fn mcp_main() -> ExitCode {
    let allow_enqueue = std::env::args().skip(1).any(|a| a == "--allow-enqueue");
    exit_on_own_runtime(serve_linked(allow_enqueue))
}

/// A binary's `main` over `work`, which answers its exit code, on a runtime of its own (2
/// when no runtime can be started).
pub(crate) fn exit_on_own_runtime(work: impl std::future::Future<Output = u8>) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => ExitCode::from(runtime.block_on(work)),
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            ExitCode::from(2)
        }
    }
}

/// Serves the manifest of the jobs linked into this binary, and the queue at `DATABASE_URL`
/// (schema `JOBS_SCHEMA`, default `public`); without `DATABASE_URL`, an empty in-memory queue
/// (the manifest tools still answer). Logs go to stderr; stdout is the protocol's. Answers the
/// exit code: 0 when the client hung up, 1 when serving failed, 2 when it could not start.
/// With `allow_enqueue` it also serves the enqueue tools ([`JobsMcp::allow_enqueue`]).
pub async fn serve_linked(allow_enqueue: bool) -> u8 {
    let manifest = match crate::manifest() {
        Ok(manifest) => manifest,
        Err(error) => {
            eprintln!("error: {error}");
            return 2;
        }
    };
    let jobs = match connect().await {
        Ok(jobs) => jobs,
        Err(error) => {
            eprintln!("error: {error}");
            return 2;
        }
    };
    let mut server = JobsMcp::new(manifest, jobs);
    if allow_enqueue {
        server = server.allow_enqueue();
    }
    match serve_stdio(server).await {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("error: {error}");
            1
        }
    }
}

async fn connect() -> Result<Jobs, JobError> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("jobs mcp: DATABASE_URL is not set; serving an empty in-memory queue");
        return Ok(Jobs::memory());
    };
    // Postgres' schema (`public` when unset), or the key prefix on Redis (the URL's when unset).
    let schema = std::env::var("JOBS_SCHEMA").ok();
    let driver = crate::driver::url::connect(&url, schema.as_deref()).await?;
    Ok(Jobs::with_clock(
        driver,
        std::sync::Arc::new(crate::clock::SystemClock),
    ))
}
