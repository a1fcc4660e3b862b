//! The command line as clap types: the global flags, the verbs and each verb's arguments.
//! Apart from the verbs so that what the tool accepts reads in one place, and a verb's code
//! only what it does with it.

use clap::{Parser, Subcommand};
use uuid::Uuid;

/// Operate a jobs queue stored in Postgres.
#[derive(Debug, Parser)]
#[command(name = "jobs", version, about)]
pub(super) struct Cli {
    /// The Postgres server.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub(super) database_url: Option<String>,
    /// The schema the queue's tables live in (Postgres; `public` when not given), or the key
    /// prefix on Redis (the URL's `prefix`, or `jobs`, when not given).
    #[arg(long, env = "JOBS_SCHEMA", global = true)]
    pub(super) schema: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub(super) json: bool,
    /// Who the changes are recorded under, in each job's history and on a queue's pause
    /// (default `cli:$USER`).
    #[arg(long, env = "JOBS_ACTOR", global = true)]
    pub(super) actor: Option<String>,
    /// The app's database holding the transactional outbox (`postgres://...` or
    /// `sqlite://...`), when it is not the job store's own (`outbox`, `dashboard`).
    #[arg(long, env = "JOBS_OUTBOX_URL", global = true, hide_env_values = true)]
    pub(super) outbox_url: Option<String>,
    /// The schema `x_outbox` lives in at `--outbox-url` (Postgres; `public` when not given).
    #[arg(long, env = "JOBS_OUTBOX_SCHEMA", global = true)]
    pub(super) outbox_schema: Option<String>,
    #[command(subcommand)]
    pub(super) verb: Option<Verb>,
}

#[derive(Debug, Subcommand)]
pub(super) enum Verb {
    #[command(flatten)]
    Queue(QueueVerb),
    /// The transactional outbox: the backlog, the age of the oldest staged row, failing rows
    /// and the last error code, refused rows, published rows kept, the relay holding the lease
    /// and its last claim. It is read beside the jobs (DATABASE_URL and --schema), or in the
    /// app's database at --outbox-url.
    Outbox,
    /// The manifest of the jobs and tasks linked into this binary; `--out DIR` writes every
    /// generated output, `--check DIR` fails when a committed copy is stale.
    Manifest(ManifestArgs),
    /// An MCP server over stdio: the manifest and the read verbs, for an agent (the queue at
    /// DATABASE_URL, or an empty in-memory one without it); `--allow-enqueue` also serves one
    /// enqueue tool per job.
    Mcp(McpArgs),
    /// The error codes: `explain <CODE>` says what one means, how a job returning it is
    /// retried, and its fix; `list` lists every code.
    #[command(subcommand)]
    Errors(ErrorsVerb),
    /// Run one job linked into this binary against a throwaway in-memory store and a frozen
    /// clock, and print the trace: each attempt, the steps, the jobs it enqueued. Exit 0 when
    /// it completed, 1 (with its code) when it did not. No database.
    Test(TestArgs),
    /// The web dashboard over the queue at DATABASE_URL. Credentials come from the environment
    /// (JOBS_DASHBOARD_TOKEN, or JOBS_DASHBOARD_USER and JOBS_DASHBOARD_PASSWORD;
    /// JOBS_DASHBOARD_READ_TOKEN for a read-only token); without any it listens on loopback only.
    Dashboard(DashboardArgs),
}

#[derive(Debug, Subcommand)]
pub(super) enum TasksVerb {
    /// Every task: last fire, paused, next fire (a bare `jobs tasks`).
    List,
    /// One declared task: its next fires in its zone (and in UTC) and its cron in words. Reads
    /// the declaration linked into this binary: no database.
    Show {
        /// The task's name.
        name: String,
        /// How many fires (1 to 1000).
        #[arg(long, default_value_t = 5)]
        count: usize,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum ErrorsVerb {
    /// What a code means, its retry class and its fix.
    Explain {
        /// The code, e.g. X_JOB_TIMEOUT.
        code: String,
    },
    /// Every code and its retry class.
    List,
}

#[derive(Debug, clap::Args)]
pub(super) struct TestArgs {
    /// The job's name.
    pub(super) job: String,
    /// The job's input, as JSON.
    #[arg(long)]
    pub(super) input: String,
}

#[derive(Debug, clap::Args)]
pub(super) struct McpArgs {
    /// Serve the `enqueue.<job>` tools too, so the agent may enqueue jobs (recorded under the
    /// actor `mcp`); without it they are refused with X_FORBIDDEN.
    #[arg(long)]
    pub(super) allow_enqueue: bool,
}

#[derive(Debug, clap::Args)]
pub(super) struct DashboardArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(super) listen: std::net::SocketAddr,
    /// Show and touch only this tenant's jobs.
    #[arg(long)]
    pub(super) tenant: Option<String>,
}

/// The verbs that read or change the queue (they need a database).
#[derive(Debug, Subcommand)]
pub(super) enum QueueVerb {
    /// Queue depth per queue, then one page of jobs (newest first). A bare `jobs` is `ls`.
    Ls(LsArgs),
    /// One job: state, attempts, last error, progress, every step (input and kept result
    /// redacted).
    Show { id: Uuid },
    /// One batch: its callback, whether it is closed, its counts, the members that failed or
    /// were cancelled.
    Batch { id: Uuid },
    /// Re-queue a finished job (done, failed, dead or cancelled).
    Retry {
        id: Uuid,
        /// Run this step and every later step again.
        #[arg(long)]
        from_step: Option<String>,
    },
    /// Cancel a live job (a running one stops at its next heartbeat); exit 0 means the job
    /// is cancelled now.
    Cancel {
        id: Uuid,
        /// Why: recorded in the job's history beside the actor (one line, at most 512 bytes).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Delete a job that is not running, and its steps.
    Rm { id: Uuid },
    /// Make a delayed (or backing-off) job due now.
    Promote { id: Uuid },
    /// Deal with a queue's lapsed runs now: those on their final attempt buried dead, the
    /// others back to ready, due now; runs under a live lease are left alone.
    Drain { queue: String },
    /// Stop every worker claiming from a queue (enqueues still land).
    Pause { queue: String },
    /// Let workers claim from a paused queue again.
    Resume { queue: String },
    /// The live workers.
    Workers,
    /// Scheduled tasks: last fire, paused, next fire (for tasks linked into this binary);
    /// `tasks show <name>` one task's next fires and its cron in words.
    Tasks {
        #[command(subcommand)]
        verb: Option<TasksVerb>,
    },
    /// Per-queue counts and per-job outcomes over the last 24 hours.
    Stats,
    /// Apply the embedded migrations.
    Migrate,
    /// The checks before a deploy: step names, the committed manifest (`--manifest`), the
    /// migrations applied, the store's persistence. Exit 1 with the first failure's code.
    Verify {
        /// A committed manifest.json, or a directory of generated outputs, to check as fresh.
        #[arg(long, value_name = "PATH")]
        manifest: Option<std::path::PathBuf>,
    },
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
pub(super) struct ManifestArgs {
    /// Write manifest.json, schemas.json, mcp-tools.json, jobs.ts and JOBS.md into DIR.
    #[arg(long, value_name = "DIR")]
    pub(super) out: Option<std::path::PathBuf>,
    /// Exit 1 when a committed copy (a directory of outputs, or one file) is stale.
    #[arg(long, value_name = "PATH")]
    pub(super) check: Option<std::path::PathBuf>,
    /// Print one output (manifest.json, schemas.json, mcp-tools.json, jobs.ts, JOBS.md).
    #[arg(long, value_name = "FILE")]
    pub(super) print: Option<String>,
    /// Accept a manifest with no jobs (refused otherwise: the jobs' crate is not linked in).
    #[arg(long)]
    pub(super) allow_empty: bool,
}

#[derive(Debug, clap::Args)]
pub(super) struct PostingArgs {
    /// The ledger's declared name.
    pub(super) ledger: String,
    /// The posting's key.
    pub(super) key: String,
    /// The tenant, for a per-tenant ledger.
    #[arg(long)]
    pub(super) tenant: Option<String>,
}

#[derive(Debug, Default, clap::Args)]
pub(super) struct BackfillsArgs {
    /// Only this backfill.
    #[arg(long)]
    pub(super) name: Option<String>,
    /// Only this status (running, completed, failed).
    #[arg(long)]
    pub(super) status: Option<String>,
    /// Rows at most.
    #[arg(long)]
    pub(super) limit: Option<u32>,
    /// Declared vs run, for the backfills linked into this binary.
    #[arg(long)]
    pub(super) pending: bool,
    /// Every pending backfill: what `--write` would enqueue, each through the gate.
    #[arg(long)]
    pub(super) all: bool,
    /// With `--all`: enqueue a pass of each pending backfill (one refusal does not stop the
    /// rest; the exit code says whether any was refused).
    #[arg(long, requires = "all")]
    pub(super) write: bool,
}

#[derive(Debug, clap::Args)]
pub(super) struct BackfillArgs {
    /// The backfill's declared name.
    pub(super) name: String,
    /// Enqueue the pass (without it: say what would happen).
    #[arg(long)]
    pub(super) write: bool,
    /// Run again although a completed pass exists (a new ledger row).
    #[arg(long)]
    pub(super) force: bool,
    /// The tenant, for a per-tenant backfill.
    #[arg(long)]
    pub(super) tenant: Option<String>,
}

#[derive(Debug, Default, clap::Args)]
pub(super) struct LsArgs {
    /// Only this queue.
    #[arg(long)]
    pub(super) queue: Option<String>,
    /// Only this state (ready, delayed, running, suspended, done, failed, dead, cancelled).
    #[arg(long)]
    pub(super) state: Option<String>,
    /// Only this job name.
    #[arg(long)]
    pub(super) name: Option<String>,
    /// Only this tenant.
    #[arg(long)]
    pub(super) tenant: Option<String>,
    /// Rows per page (at most 200).
    #[arg(long)]
    pub(super) limit: Option<u32>,
    /// The next page: the `after` cursor a page printed.
    #[arg(long)]
    pub(super) after: Option<String>,
    /// The previous page: the `before` cursor a page printed.
    #[arg(long)]
    pub(super) before: Option<String>,
}
