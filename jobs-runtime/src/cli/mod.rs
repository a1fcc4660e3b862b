//! The `jobs` command-line tool: an on-call engineer's view of a Postgres queue, without SQL,
//! and the manifest and MCP server of the jobs linked into the binary.
//!
//! An app gives itself the tool with one file, `src/bin/jobs.rs`, so that every verb sees the
//! app's own `#[job]`s and `#[task]`s (`jobs manifest`, `jobs mcp`, `jobs tasks`, `jobs
//! backfills --pending`):
//!
//! ```no_run
//! use my_app as _; // the library crate that declares the jobs: links them into this binary
//! # mod my_app {}
//!
//! fn main() -> std::process::ExitCode {
//!     jobs::cli::main()
//! }
//! ```
//!
//! `cargo run --bin jobs -- manifest --out generated`, `cargo run --bin jobs -- ls`. The queue
//! verbs read `DATABASE_URL` (or `--database-url`: `postgres://...`, or `sqlite://jobs.db` for
//! the SQLite store) and `JOBS_SCHEMA` (or `--schema`, default `public`, Postgres only); `manifest` needs no database. Every queue verb takes `--json`; otherwise it prints
//! readable tables. A verb that changes a job or a queue records who did it (the job's history,
//! shown by `jobs show`; a queue's pause) under `--actor` (or `JOBS_ACTOR`), by default
//! `cli:$USER`. Exit codes: `0` done, `1` refused (the `X_...` code is printed), `2` usage.

mod render;

use std::ffi::OsString;
use std::io::Write;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use serde_json::json;
use uuid::Uuid;

use crate::client::Jobs;
use crate::driver::introspect::{JobListParams, DEFAULT_JOB_PAGE};
use crate::driver::scheduler_store::{
    SchedulerLeaderParams, TaskFiresParams, TaskPausedParams, TaskWatermarksParams,
};
use crate::driver::JobState;
use crate::error::{ErrorCode, JobError};
use crate::registry::Registry;

use crate::driver::introspect::CounterTotalsParams;
use render::{table, time};

/// Exit code: the verb did what it was asked.
pub const EXIT_OK: u8 = 0;
/// Exit code: the queue refused (the `X_...` code is printed).
pub const EXIT_REFUSED: u8 = 1;
/// Exit code: the command line was wrong.
pub const EXIT_USAGE: u8 = 2;

/// Operate a jobs queue stored in Postgres.
#[derive(Debug, Parser)]
#[command(name = "jobs", version, about)]
struct Cli {
    /// The Postgres server.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    database_url: Option<String>,
    /// The schema the queue's tables live in.
    #[arg(long, env = "JOBS_SCHEMA", global = true, default_value = "public")]
    schema: String,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// Who the changes are recorded under, in each job's history and on a queue's pause
    /// (default `cli:$USER`).
    #[arg(long, env = "JOBS_ACTOR", global = true)]
    actor: Option<String>,
    #[command(subcommand)]
    verb: Option<Verb>,
}

#[derive(Debug, Subcommand)]
enum Verb {
    #[command(flatten)]
    Queue(QueueVerb),
    /// The manifest of the jobs and tasks linked into this binary; `--out DIR` writes every
    /// generated output, `--check DIR` fails when a committed copy is stale.
    Manifest(ManifestArgs),
    /// An MCP server over stdio: the manifest and the read verbs, for an agent (the queue at
    /// DATABASE_URL, or an empty in-memory one without it).
    Mcp,
    /// The web dashboard over the queue at DATABASE_URL. Credentials come from the environment
    /// (JOBS_DASHBOARD_TOKEN, or JOBS_DASHBOARD_USER and JOBS_DASHBOARD_PASSWORD;
    /// JOBS_DASHBOARD_READ_TOKEN for a read-only token); without any it listens on loopback only.
    Dashboard(DashboardArgs),
}

#[derive(Debug, clap::Args)]
struct DashboardArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    /// Show and touch only this tenant's jobs.
    #[arg(long)]
    tenant: Option<String>,
}

/// The verbs that read or change the queue (they need a database).
#[derive(Debug, Subcommand)]
enum QueueVerb {
    /// Queue depth per queue, then one page of jobs (newest first). A bare `jobs` is `ls`.
    Ls(LsArgs),
    /// One job: state, attempts, last error, progress, every step (input redacted).
    Show { id: Uuid },
    /// Re-queue a finished job (done, failed, dead or cancelled).
    Retry {
        id: Uuid,
        /// Run this step and every later step again.
        #[arg(long)]
        from_step: Option<String>,
    },
    /// Cancel a live job (a running one stops at its next heartbeat).
    Cancel { id: Uuid },
    /// Delete a job that is not running, and its steps.
    Rm { id: Uuid },
    /// Make a delayed (or backing-off) job due now.
    Promote { id: Uuid },
    /// Stop every worker claiming from a queue (enqueues still land).
    Pause { queue: String },
    /// Let workers claim from a paused queue again.
    Resume { queue: String },
    /// The live workers.
    Workers,
    /// Scheduled tasks: last fire, paused, next fire (for tasks linked into this binary).
    Tasks,
    /// Per-queue counts and per-job outcomes over the last 24 hours.
    Stats,
    /// Apply the embedded migrations.
    Migrate,
    /// The ledger of backfill passes; `--pending` reports declared vs run (and exits 1 with
    /// X_BACKFILL_PENDING while any is pending).
    Backfills(BackfillsArgs),
    /// A backfill by name: a dry run unless `--write`, which enqueues its pass.
    Backfill(BackfillArgs),
    /// The lines a `#[ledger]` posted under a key (in the driver's book).
    Posting(PostingArgs),
}

#[derive(Debug, clap::Args)]
#[group(multiple = false)]
struct ManifestArgs {
    /// Write manifest.json, schemas.json, mcp-tools.json, jobs.ts and JOBS.md into DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
    /// Exit 1 when a committed copy (a directory of outputs, or one file) is stale.
    #[arg(long, value_name = "PATH")]
    check: Option<std::path::PathBuf>,
    /// Print one output (manifest.json, schemas.json, mcp-tools.json, jobs.ts, JOBS.md).
    #[arg(long, value_name = "FILE")]
    print: Option<String>,
    /// Accept a manifest with no jobs (refused otherwise: the jobs' crate is not linked in).
    #[arg(long)]
    allow_empty: bool,
}

#[derive(Debug, clap::Args)]
struct PostingArgs {
    /// The ledger's declared name.
    ledger: String,
    /// The posting's key.
    key: String,
    /// The tenant, for a per-tenant ledger.
    #[arg(long)]
    tenant: Option<String>,
}

#[derive(Debug, Default, clap::Args)]
struct BackfillsArgs {
    /// Only this backfill.
    #[arg(long)]
    name: Option<String>,
    /// Only this status (running, completed, failed).
    #[arg(long)]
    status: Option<String>,
    /// Rows at most.
    #[arg(long)]
    limit: Option<u32>,
    /// Declared vs run, for the backfills linked into this binary.
    #[arg(long)]
    pending: bool,
}

#[derive(Debug, clap::Args)]
struct BackfillArgs {
    /// The backfill's declared name.
    name: String,
    /// Enqueue the pass (without it: say what would happen).
    #[arg(long)]
    write: bool,
    /// Run again although a completed pass exists (a new ledger row).
    #[arg(long)]
    force: bool,
    /// The tenant, for a per-tenant backfill.
    #[arg(long)]
    tenant: Option<String>,
}

#[derive(Debug, Default, clap::Args)]
struct LsArgs {
    /// Only this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Only this state (ready, delayed, running, suspended, done, failed, dead, cancelled).
    #[arg(long)]
    state: Option<String>,
    /// Only this job name.
    #[arg(long)]
    name: Option<String>,
    /// Only this tenant.
    #[arg(long)]
    tenant: Option<String>,
    /// Rows per page (at most 200).
    #[arg(long)]
    limit: Option<u32>,
    /// The next page: the `after` cursor a page printed.
    #[arg(long)]
    after: Option<String>,
    /// The previous page: the `before` cursor a page printed.
    #[arg(long)]
    before: Option<String>,
}

/// The tool as a binary's `main`: [`run`] over the process's arguments on a runtime of its own.
pub fn main() -> std::process::ExitCode {
    crate::mcp::exit_on_own_runtime(async {
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        run(std::env::args_os(), &mut out, &mut err).await
    })
}

/// Runs the tool over `args` (the program name first), writing the answer to `out` and
/// problems to `err`; answers the exit code.
pub async fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = if usage {
                write!(err, "{e}")
            } else {
                write!(out, "{e}")
            };
            return if usage { EXIT_USAGE } else { EXIT_OK };
        }
    };
    let json = cli.json;
    let verb = match cli.verb.take() {
        Some(Verb::Manifest(args)) => return manifest(args, out, err),
        Some(Verb::Dashboard(args)) => {
            return finish(dashboard(&cli, args, out).await, json, out, err)
        }
        Some(Verb::Mcp) => return crate::mcp::serve_linked().await,
        Some(Verb::Queue(verb)) => verb,
        None => QueueVerb::Ls(LsArgs::default()),
    };
    finish(execute(cli, verb, out).await, json, out, err)
}

/// The exit code of a verb's result, its refusal printed (as JSON with `--json`).
fn finish(
    result: Result<(), JobError>,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    match result {
        Ok(()) => EXIT_OK,
        Err(error) => {
            let code = error.code().map_or("X_ERROR", ErrorCode::as_str);
            let exit = if error.is(ErrorCode::CliBadFlag) {
                EXIT_USAGE
            } else {
                EXIT_REFUSED
            };
            if json {
                let body = json!({ "error": {
                    "code": code, "message": error.message(), "fix": error.fix(),
                }});
                let _ = writeln!(out, "{body:#}");
            } else {
                let _ = writeln!(err, "error: {code}: {}", error.message());
                if let Some(fix) = error.fix() {
                    let _ = writeln!(err, "  fix: {fix}");
                }
            }
            exit
        }
    }
}

/// `jobs dashboard`: the web dashboard over the queue, until the process is stopped.
async fn dashboard(cli: &Cli, args: DashboardArgs, out: &mut dyn Write) -> Result<(), JobError> {
    use crate::dashboard::standalone::{check_listen, serve, Credentials};
    let credentials = Credentials::from_env();
    // Refused before any connection: nothing is opened for a dashboard that would not start.
    check_listen(args.listen, &credentials)?;
    let jobs = connect(cli).await?;
    let options = crate::dashboard::DashboardOptions {
        tenant: args.tenant,
        ..Default::default()
    };
    serve(jobs, args.listen, options, credentials, |bound| {
        let _ = writeln!(out, "dashboard on http://{bound}/");
        let _ = out.flush();
    })
    .await
}

fn manifest(args: ManifestArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    use crate::codegen::{manifest_command, ManifestAction};
    let manifest = match crate::manifest() {
        Ok(manifest) => manifest,
        Err(error) => {
            let code = error.code().map_or("X_ERROR", ErrorCode::as_str);
            let _ = writeln!(err, "error: {code}: {}", error.message());
            return EXIT_REFUSED;
        }
    };
    let action = match (args.out, args.check, args.print) {
        (Some(dir), _, _) => ManifestAction::Write(dir),
        (_, Some(path), _) => ManifestAction::Check(path),
        (_, _, Some(file)) => ManifestAction::PrintOutput(file),
        _ => ManifestAction::Print,
    };
    let command = std::env::args()
        .next()
        .and_then(|p| {
            std::path::Path::new(&p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "jobs".into());
    manifest_command(
        &manifest,
        &action,
        args.allow_empty,
        &format!("{command} manifest"),
        out,
        err,
    )
}

async fn connect(cli: &Cli) -> Result<Jobs, JobError> {
    // An empty `--database-url ""` means none, whatever the environment holds.
    let url = cli
        .database_url
        .as_deref()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            JobError::new(
                ErrorCode::CliBadFlag,
                "no database: DATABASE_URL is not set",
            )
            .with_fix("set DATABASE_URL, or pass --database-url postgres://... or sqlite://...")
        })?;
    let driver = crate::driver::url::connect(url, Some(&cli.schema)).await?;
    Ok(Jobs::with_clock(
        driver,
        Arc::new(crate::clock::SystemClock),
    ))
}

fn emit(out: &mut dyn Write, text: &str) -> Result<(), JobError> {
    out.write_all(text.as_bytes())
        .map_err(|e| JobError::new(ErrorCode::Invariant, format!("cannot write: {e}")))
}

fn to_json(value: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

fn parse_state(state: Option<&str>) -> Result<Option<JobState>, JobError> {
    state
        .map(|s| {
            JobState::parse(s).map_err(|_| {
                JobError::new(
                    ErrorCode::CliBadFlag,
                    format!("`--state {s}` is not a state"),
                )
                .with_fix("use ready, delayed, running, suspended, done, failed, dead or cancelled")
            })
        })
        .transpose()
}

/// The actor the queue verbs act as: `--actor`, or `cli:` and the login name.
fn actor(cli: &Cli) -> String {
    cli.actor.clone().unwrap_or_else(|| {
        let user = ["USER", "LOGNAME", "USERNAME"]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|u| !u.is_empty()));
        format!("cli:{}", user.as_deref().unwrap_or("unknown"))
    })
}

async fn execute(cli: Cli, verb: QueueVerb, out: &mut dyn Write) -> Result<(), JobError> {
    let jobs = connect(&cli).await?.acting_as(actor(&cli));
    let json = cli.json;
    let text = match verb {
        QueueVerb::Ls(args) => ls(&jobs, args, json).await?,
        QueueVerb::Show { id } => {
            let detail = jobs.operator().inspect_job(id).await?;
            if json {
                to_json(&detail)
            } else {
                render::show(&detail, jobs.now())
            }
        }
        QueueVerb::Retry { id, from_step } => {
            let row = jobs.operator().requeue(id, from_step.as_deref()).await?;
            if json {
                to_json(&row)
            } else {
                let from = from_step.map_or(String::new(), |s| format!(" from step `{s}`"));
                format!(
                    "requeued {id}{from}: {} on `{}`, due now\n",
                    row.state, row.queue
                )
            }
        }
        QueueVerb::Cancel { id } => {
            let was = jobs.job(id).await?.map(|r| r.state);
            jobs.cancel(id).await?;
            // Re-read: exit 0 means the row is cancelled now.
            let row = jobs.job(id).await?.ok_or_else(|| {
                JobError::new(ErrorCode::JobNotCancellable, format!("job {id} vanished"))
            })?;
            if row.state != JobState::Cancelled {
                return Err(JobError::new(
                    ErrorCode::JobNotCancellable,
                    format!("job {id} is {} after the cancel", row.state),
                ));
            }
            if json {
                to_json(&row)
            } else if was == Some(JobState::Running) {
                format!(
                    "cancelled {id} (it was running: its worker stops it at its next heartbeat)\n"
                )
            } else {
                format!(
                    "cancelled {id} (was {})\n",
                    was.map_or("unknown".into(), |s| s.to_string())
                )
            }
        }
        QueueVerb::Rm { id } => {
            let row = jobs.operator().remove(id).await?;
            if json {
                to_json(&row)
            } else {
                format!(
                    "removed {id} ({} `{}`) and its steps\n",
                    row.state, row.name
                )
            }
        }
        QueueVerb::Promote { id } => {
            let row = jobs.operator().promote(id).await?;
            if json {
                to_json(&row)
            } else {
                format!("promoted {id}: due now on `{}`\n", row.queue)
            }
        }
        QueueVerb::Pause { queue } => {
            jobs.operator().pause_queue(&queue).await?;
            if json {
                to_json(&json!({ "queue": queue, "paused": true }))
            } else {
                format!("paused `{queue}`: no worker claims from it from its next claim on\n")
            }
        }
        QueueVerb::Resume { queue } => {
            let was = jobs.operator().resume_queue(&queue).await?;
            if json {
                to_json(&json!({ "queue": queue, "paused": false, "was_paused": was }))
            } else if was {
                format!("resumed `{queue}`\n")
            } else {
                format!("`{queue}` was not paused\n")
            }
        }
        QueueVerb::Workers => {
            let workers = jobs.operator().workers().await?;
            if json {
                to_json(&workers)
            } else {
                render::workers(&workers, jobs.now())
            }
        }
        QueueVerb::Tasks => tasks(&jobs, json).await?,
        QueueVerb::Backfills(args) => backfills(&jobs, args, json).await?,
        QueueVerb::Backfill(args) => backfill(&jobs, args, json).await?,
        QueueVerb::Posting(args) => posting(&jobs, args, json).await?,
        QueueVerb::Stats => stats(&jobs, json).await?,
        QueueVerb::Migrate => {
            let applied = jobs.driver().migrate().await?;
            // Only Postgres has schemas; a SQLite file is the store itself.
            let store = match jobs.driver().name() {
                "postgres" => format!("schema `{}`", cli.schema),
                other => format!("the {other} store"),
            };
            if json {
                to_json(&json!({ "schema": cli.schema, "applied": applied }))
            } else if applied.is_empty() {
                format!("{store} is up to date\n")
            } else {
                let list: Vec<String> = applied.iter().map(|v| format!("{v:04}")).collect();
                format!("{store}: applied {}\n", list.join(", "))
            }
        }
    };
    emit(out, &text)
}

async fn ls(jobs: &Jobs, args: LsArgs, json: bool) -> Result<String, JobError> {
    let params = JobListParams {
        queue: args.queue,
        name: args.name,
        state: parse_state(args.state.as_deref())?,
        tenant_id: args.tenant,
        limit: args.limit,
        after: args.after,
        before: args.before,
        ..JobListParams::default()
    };
    let page = jobs.operator().list_jobs(&params).await?;
    let queues = jobs.stats().await?;
    let paused = jobs.operator().introspect()?.queue_paused().await?;
    if json {
        return Ok(to_json(&json!({
            "queues": queues,
            "paused": paused,
            "jobs": page.jobs,
            "after": page.after,
            "before": page.before,
        })));
    }
    let mut text = render::queues(&queues, &paused);
    text.push('\n');
    text.push_str(&render::jobs(&page.jobs, jobs.now()));
    if page.jobs.len() as u32 >= params.limit.unwrap_or(DEFAULT_JOB_PAGE) {
        if let Some(after) = &page.after {
            text.push_str(&format!("next page: jobs ls --after {after}\n"));
        }
    }
    if let Some(before) = &page.before {
        text.push_str(&format!("previous page: jobs ls --before {before}\n"));
    }
    Ok(text)
}

async fn stats(jobs: &Jobs, json: bool) -> Result<String, JobError> {
    let queues = jobs.stats().await?;
    let since = jobs.now() - chrono::Duration::hours(24);
    let totals = jobs
        .operator()
        .introspect()?
        .counter_totals(&CounterTotalsParams { since })
        .await?;
    if json {
        return Ok(to_json(&json!({ "queues": queues, "last_24h": totals })));
    }
    let mut text = render::queues(&queues, &[]);
    text.push_str("\nlast 24 hours, per job\n");
    let rows: Vec<Vec<String>> = totals
        .iter()
        .map(|t| {
            let runs = t.done + t.failed + t.dead;
            let attempts = t.done + t.retried + t.failed + t.dead;
            let mean = t
                .duration_ms
                .checked_div(attempts)
                .map_or("-".to_string(), |ms| format!("{ms}ms"));
            vec![
                t.name.clone(),
                t.done.to_string(),
                t.retried.to_string(),
                t.failed.to_string(),
                t.dead.to_string(),
                runs.to_string(),
                mean,
            ]
        })
        .collect();
    text.push_str(&table(
        &[
            "JOB",
            "DONE",
            "RETRIED",
            "FAILED",
            "DEAD",
            "ENDED",
            "MEAN ATTEMPT",
        ],
        &rows,
    ));
    Ok(text)
}

async fn tasks(jobs: &Jobs, json: bool) -> Result<String, JobError> {
    let store = jobs.driver_part(|d| d.scheduler_store(), "has no scheduler store")?;
    let now = jobs.now();
    let fires = store.task_fires(&TaskFiresParams { now }).await?;
    let paused = store
        .task_paused(&TaskPausedParams { task: None, now })
        .await?;
    let watermarks = store.task_watermarks(&TaskWatermarksParams { now }).await?;
    let leader = store
        .scheduler_leader(&SchedulerLeaderParams { now })
        .await?;
    let registry = Registry::global().ok();
    let mut names: Vec<String> = watermarks.iter().map(|w| w.task.clone()).collect();
    names.extend(paused.iter().cloned());
    if let Some(registry) = registry {
        names.extend(registry.tasks().map(|t| t.descriptor().name.to_string()));
    }
    names.sort();
    names.dedup();
    let rows: Vec<serde_json::Value> = names
        .iter()
        .map(|name| {
            let declared = registry.and_then(|r| r.task(name)).map(|t| t.descriptor());
            let fire = fires.iter().find(|f| f.task == *name);
            json!({
                "task": name,
                "cron": declared.map(|d| d.cron),
                "tz": declared.map(|d| d.tz),
                "next": declared.and_then(|d| crate::scheduler::next_after(d, now)),
                "last_occurrence": fire.map(|f| f.occurrence),
                "last_fired_at": fire.map(|f| f.fired_at),
                "paused": paused.contains(name),
                "declared_here": declared.is_some(),
            })
        })
        .collect();
    if json {
        return Ok(to_json(&json!({ "leader": leader, "tasks": rows })));
    }
    let cell = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Bool(b) => {
            if *b {
                "yes".into()
            } else {
                "no".into()
            }
        }
        _ => "-".into(),
    };
    let stamp = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|s| s.parse::<crate::clock::Timestamp>().ok())
            .map_or("-".to_string(), time)
    };
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                cell(&r["task"]),
                cell(&r["cron"]),
                cell(&r["tz"]),
                stamp(&r["next"]),
                stamp(&r["last_occurrence"]),
                stamp(&r["last_fired_at"]),
                cell(&r["paused"]),
            ]
        })
        .collect();
    let mut text = match &leader {
        Some(l) => format!(
            "leader: scheduler {} since {} (lease until {})\n\n",
            l.holder,
            time(l.since),
            time(l.expires_at)
        ),
        None => "leader: none (no scheduler holds the lease: no task fires until one starts)\n\n"
            .to_string(),
    };
    text += &table(
        &[
            "TASK",
            "CRON",
            "TZ",
            "NEXT",
            "LAST OCCURRENCE",
            "FIRED AT",
            "PAUSED",
        ],
        &table_rows,
    );
    if rows.iter().any(|r| r["declared_here"] == false) {
        text.push_str(
            "(the store keeps fires and pauses, not cron or tz: a task's next fire shows when the \
             binary running this tool links its #[task])\n",
        );
    }
    Ok(text)
}

async fn backfills(jobs: &Jobs, args: BackfillsArgs, json: bool) -> Result<String, JobError> {
    if args.pending {
        let report = jobs.backfills().pending().await?;
        let text = if json {
            to_json(&report)
        } else {
            let rows: Vec<Vec<String>> = report
                .rows
                .iter()
                .map(|r| vec![r.name.clone(), format!("{:?}", r.state).to_lowercase()])
                .collect();
            let mut text = table(&["BACKFILL", "STATE"], &rows);
            for name in &report.orphaned {
                text.push_str(&format!(
                    "orphaned: `{name}` ran but is no longer declared\n"
                ));
            }
            text
        };
        // The report is printed either way; the exit code says whether anything is pending.
        return match report.check() {
            Ok(()) => Ok(text),
            Err(pending) => Err(pending.with_fix(text)),
        };
    }
    let status = args
        .status
        .as_deref()
        .map(|s| {
            crate::driver::backfill_store::PassStatus::parse(s).map_err(|_| {
                JobError::new(
                    ErrorCode::CliBadFlag,
                    format!("`--status {s}` is not a pass status"),
                )
                .with_fix("use running, completed or failed")
            })
        })
        .transpose()?;
    let passes = jobs
        .backfills()
        .list(crate::driver::backfill_store::BackfillListParams {
            name: args.name,
            status,
            limit: args.limit,
            ..Default::default()
        })
        .await?;
    if json {
        return Ok(to_json(&passes));
    }
    let rows: Vec<Vec<String>> = passes
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.tenant.clone().unwrap_or_else(|| "-".into()),
                p.status.as_str().to_string(),
                p.batches.to_string(),
                p.rows.to_string(),
                time(p.started_at),
                p.finished_at.map(time).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    Ok(table(
        &[
            "BACKFILL", "TENANT", "STATUS", "PAGES", "ROWS", "STARTED", "FINISHED",
        ],
        &rows,
    ))
}

async fn backfill(jobs: &Jobs, args: BackfillArgs, json: bool) -> Result<String, JobError> {
    let mut request = match &args.tenant {
        Some(tenant) => crate::backfill::BackfillRequest::tenant(tenant.clone()),
        None => crate::backfill::BackfillRequest::new(),
    };
    if args.force {
        request = request.forced();
    }
    if !args.write {
        let passes = jobs
            .backfills()
            .list(crate::driver::backfill_store::BackfillListParams {
                name: Some(args.name.clone()),
                limit: Some(1),
                ..Default::default()
            })
            .await?;
        let last = passes
            .first()
            .map(|p| p.status.as_str())
            .unwrap_or("never run");
        let plan = format!(
            "dry run: backfill `{}` (last pass: {last}); pass --write to enqueue it{}\n",
            args.name,
            if args.force { " (forced)" } else { "" }
        );
        return Ok(if json {
            to_json(&json!({ "name": args.name, "dry_run": true, "last_pass": last }))
        } else {
            plan
        });
    }
    let queued = jobs.backfills().enqueue(&args.name, request).await?;
    Ok(if json {
        to_json(&queued)
    } else {
        format!("enqueued backfill `{}`: job {}\n", args.name, queued.id)
    })
}

async fn posting(jobs: &Jobs, args: PostingArgs, json: bool) -> Result<String, JobError> {
    let book = jobs.driver().ledger_book().ok_or_else(|| {
        JobError::new(ErrorCode::NotImplemented, "this driver has no ledger book")
    })?;
    let lines = book
        .posting_lines(&crate::driver::ledger_book::PostingLinesParams {
            ledger: args.ledger.clone(),
            tenant: args.tenant.clone(),
            key: args.key.clone(),
        })
        .await?;
    if lines.is_empty() {
        return Err(JobError::new(
            ErrorCode::JobNotFound,
            format!("ledger `{}` holds no posting under that key", args.ledger),
        )
        .with_fix("check the ledger name, the key and --tenant"));
    }
    if json {
        return Ok(to_json(&lines));
    }
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|l| {
            vec![
                l.line.to_string(),
                l.account.clone(),
                l.minor.to_string(),
                l.currency.clone(),
            ]
        })
        .collect();
    Ok(table(&["LINE", "ACCOUNT", "MINOR", "CURRENCY"], &rows))
}
