//! Durable background jobs for Rust, declared with attribute macros.
//!
//! Put `#[job(...)]` on an `async fn` and get a typed handle to enqueue it, a JSON Schema of
//! its input, a row in the [manifest](crate::manifest()), and a runtime that runs it at least
//! once, with durable steps, sleeps, event waits, retries with backoff and jitter, and dead
//! letters.
//!
//! # Example
//!
//! ```
//! use jobs::prelude::*;
//!
//! #[input]
//! pub struct Welcome { pub user_id: u64, pub org_id: String }
//!
//! #[job(key = "welcome:{user_id}", tenant = org_id, queue = "email", retry(attempts = 5))]
//! async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
//!     let message_id: String = run
//!         .step("send", async { Ok::<_, JobError>(format!("msg-{}", input.user_id)) })
//!         .await?;
//!     run.sleep("3d").await?;
//!     run.step("follow-up", async move { Ok::<_, JobError>(message_id) }).await?;
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), JobError> {
//! let jobs = Jobs::memory();
//! let queued = SendWelcome::enqueue(&jobs, Welcome { user_id: 1, org_id: "acme".into() }).await?;
//! let again = SendWelcome::enqueue(&jobs, Welcome { user_id: 1, org_id: "acme".into() }).await?;
//! assert!(again.deduped && again.id == queued.id);
//!
//! let worker = jobs.worker().build()?;
//! worker.tick().await?; // one pass: sends, then parks for three days
//! # Ok(()) }
//! ```
#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
// On docs.rs (`--cfg docsrs`, nightly), every feature-gated item is marked with its feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

// `#[job]` expansions name `::jobs`; this lets them compile inside this crate too.
#[allow(unused_extern_crates)]
extern crate self as jobs;

/// Whether the simulator planted the bug `$bug` ([`simulation::Plant`]) on this thread: always
/// false, and compiled away, without the feature `simulation`.
macro_rules! planted {
    ($bug:ident) => {{
        #[cfg(feature = "simulation")]
        let planted = crate::simulation::is_planted(crate::simulation::Plant::$bug);
        #[cfg(not(feature = "simulation"))]
        let planted = crate::never_planted();
        planted
    }};
}

/// No bug is planted in a build without the `simulation` feature. A call rather than `false`,
/// so a condition holding `planted!` reads the same to clippy with the feature on or off.
#[cfg(not(feature = "simulation"))]
#[inline(always)]
pub(crate) fn never_planted() -> bool {
    false
}

pub mod backfill;
mod batch;
#[cfg(feature = "cli")]
pub mod cli;
mod client;
pub mod clock;
#[cfg(feature = "codegen")]
pub mod codegen;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod consumer;
#[cfg(feature = "dashboard")]
pub mod dashboard;
mod descriptor;
pub mod driver;
pub mod duration;
mod enqueue;
mod entropy;
mod error;
mod execution;
#[cfg(feature = "export")]
pub mod export;
mod invoke;
mod job;
pub mod ledger;
pub mod limits;
mod lock;
mod maintenance;
mod manifest;
#[cfg(feature = "mcp")]
pub mod mcp;
mod operator;
pub mod outbox;
pub mod partitions;
pub mod purge;
mod registry;
pub mod retry;
mod run;
mod scheduler;
mod settled;
#[cfg(feature = "simulation")]
pub mod simulation;
mod task;
pub mod telemetry;
pub mod testing;
#[cfg(feature = "webhooks")]
pub mod webhook;
mod worker;

/// Declares a webhook delivery job (feature `webhooks`): see [`webhook`](mod@webhook).
#[cfg(feature = "webhooks")]
pub use jobs_macros::webhook;
#[doc(inline)]
pub use jobs_macros::{backfill, consumer, input, job, ledger, partitions, posting, purge, task};

/// The sqlx this crate is built with, so an app shares one version with it.
#[cfg(feature = "postgres")]
pub use sqlx;

pub use backfill::Backfills;
pub use batch::{Batch, BatchReport};
pub use client::{Enqueued, Jobs, ENVIRONMENT_VAR, MAX_CONCURRENCY_KEY_LENGTH};
pub use descriptor::{
    Backoff, Concurrency, Jitter, JobDescriptor, JobOutput, KeptResult, RateLimit, RetryPolicy,
    TenantMode, WhenBusy, DEFAULT_EVENT_POLL, DEFAULT_QUEUE,
};
pub use driver::{
    DependencyFailure, JobLinks, JobRecord, JobState, DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY,
};
pub use enqueue::EnqueueOptions;
pub use error::{ErrorClass, ErrorCode, JobError, StdJobError};
pub use execution::{ExecutionOutcome, JobExecution};
pub use invoke::{Invocable, Invoke, InvokeAll, InvokeFirst};
pub use job::{Job, JobInput, JobReturn};
pub use lock::{LockGuard, LockOptions};
pub use maintenance::Retention;
pub use manifest::{manifest, Manifest};
pub use operator::{redact, DrainReport, JobDetail, Operator};
pub use registry::{JobEntry, Registry};
pub use run::{Run, StepObserver, MAX_TRACE_NAMES};
pub use scheduler::{
    check_schedule, fire_now, next_run, Round, Scheduler, SchedulerBuilder, SchedulerHandle,
    SchedulerStats, Tasks, DEFAULT_LEADER_TTL, DEFAULT_TICK_INTERVAL, LEASE_RENEWALS_PER_TTL,
    PAUSE_RECHECK,
};
pub use settled::{Outcome, Settled, ON_SETTLED_ATTEMPTS};
pub use task::{CatchUp, Entry, Occurrence, Task, TaskDescriptor, TaskEntry, DEFAULT_MAX_CATCH_UP};
pub use worker::{
    Limits, QueueLimits, ShutdownReport, Worker, WorkerBuilder, WorkerHandle, WorkerStats,
    SHED_DELAY,
};

// Every Rust block of the README is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

// And every Rust block of the guides under docs/, one doc-test item per guide.
#[cfg(doctest)]
mod guide_doctests {
    #[doc = include_str!("../../docs/testing.md")]
    struct Testing;
    #[doc = include_str!("../../docs/stores.md")]
    struct Stores;
    #[doc = include_str!("../../docs/webhooks.md")]
    struct Webhooks;
    #[doc = include_str!("../../docs/dashboard.md")]
    struct Dashboard;
    #[doc = include_str!("../../docs/postgres.md")]
    struct Postgres;
    #[doc = include_str!("../../docs/cron.md")]
    struct Cron;
    #[doc = include_str!("../../docs/concurrency.md")]
    struct Concurrency;
    #[doc = include_str!("../../docs/backfills-and-ledgers.md")]
    struct BackfillsAndLedgers;
    #[doc = include_str!("../../docs/partitions.md")]
    struct Partitions;
    #[doc = include_str!("../../docs/consumers.md")]
    struct Consumers;
    #[doc = include_str!("../../docs/tenants.md")]
    struct Tenants;
    #[doc = include_str!("../../docs/outbox.md")]
    struct Outbox;
    #[doc = include_str!("../../docs/limits.md")]
    struct Limits;
    #[doc = include_str!("../../docs/operating.md")]
    struct Operating;
    #[doc = include_str!("../../docs/benchmarks.md")]
    struct Benchmarks;
    #[doc = include_str!("../../docs/manifest-codegen-mcp.md")]
    struct ManifestCodegenMcp;
    #[doc = include_str!("../../docs/telemetry.md")]
    struct Telemetry;
    #[doc = include_str!("../../docs/steps-and-events.md")]
    struct StepsAndEvents;
    #[doc = include_str!("../../docs/work-that-spans-jobs.md")]
    struct WorkThatSpansJobs;
    #[doc = include_str!("../../docs/retries-and-errors.md")]
    struct RetriesAndErrors;
    #[doc = include_str!("../../docs/sqlite.md")]
    struct Sqlite;
    #[doc = include_str!("../../docs/writing-a-driver.md")]
    struct WritingADriver;
    #[cfg(feature = "export")]
    #[doc = include_str!("../../docs/export-and-import.md")]
    struct ExportAndImport;
    #[cfg(feature = "redis")]
    #[doc = include_str!("../../docs/redis.md")]
    struct Redis;
}

/// Everything a file that declares or enqueues jobs needs.
pub mod prelude {
    pub use crate::backfill::{Page, Pass};
    pub use crate::ledger::{Money, Posting, PostingEntry};
    #[cfg(feature = "webhooks")]
    pub use crate::webhook;
    pub use crate::{
        backfill, consumer, input, job, ledger, partitions, posting, purge, task,
        DependencyFailure, EnqueueOptions, Enqueued, Entry, ErrorCode, Job, JobError, JobState,
        Jobs, Occurrence, Outcome, Run, Settled,
    };
    // The traits from serde and schemars, the derives from `jobs-macros`: they derive through
    // `jobs`' own copies, so they work in a crate with no serde or schemars dependency.
    // `serde::ser`/`serde::de` hold the traits alone; schemars has its trait and its derive
    // under one name, so the trait comes through a glob that the derive below shadows in the
    // macro namespace.
    pub use crate::schema_trait::*;
    pub use jobs_macros::{Deserialize, JsonSchema, Serialize};
    pub use serde::de::Deserialize;
    pub use serde::ser::Serialize;
}

/// schemars' `JsonSchema` (trait and derive), for the prelude's glob to take the trait from.
mod schema_trait {
    pub use schemars::JsonSchema;
}

/// Not public API: what `#[job]` expansions name. May change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::backfill::{
        join_count, join_page, run_backfill, Backfill, BackfillDescriptor, BackfillEntry,
        BackfillReport, BackfillRequest, BackfillTenant, PageDone, Pass,
    };
    pub use crate::client::{Enqueued, Jobs};
    pub use crate::clock::Timestamp;
    pub use crate::descriptor::{
        Backoff, Concurrency, DependencyFailure, Jitter, JobDescriptor, JobOutput, KeptResult,
        RateLimit, TenantMode, WhenBusy,
    };
    pub use crate::driver::JobId;
    pub use crate::enqueue::EnqueueOptions;
    pub use crate::error::JobError;
    pub use crate::invoke::Invocable;
    pub use crate::job::{Job, JobInput, JobReturn};
    pub use crate::ledger::{
        assert_balanced_posting, driver_book, posting_job_key, run_ledger, DeclaredLedger, Ledger,
        LedgerBook, LedgerDescriptor, LedgerTenant, Money, Posting, PostingEntry, PostingReceipt,
    };
    pub use crate::registry::JobEntry;
    pub use crate::run::Run;
    pub use crate::scheduler::{fire_now, next_run};
    pub use crate::settled::{Settled, SettledHookArg};
    pub use crate::task::{
        collect_entries, CatchUp, Entry, Occurrence, Task, TaskDescriptor, TaskEntry,
    };
    #[cfg(feature = "webhooks")]
    pub use crate::webhook::{
        run_webhook, webhook_key, WebhookDelivered, WebhookDelivery, WebhookOptions,
    };
    pub use core::option::Option::{self, None, Some};
    pub use core::time::Duration;
    pub use futures::future::BoxFuture;
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use std::sync::Arc;

    /// The JSON Schema of a job input, as a JSON value.
    pub fn input_schema<T: schemars::JsonSchema>() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
    }

    /// What `enqueue_in` takes: the caller's transaction or connection.
    pub use crate::driver::CallerConnection;

    /// A key or tenant part, from anything printable.
    pub fn to_key<T: ToString + ?Sized>(value: &T) -> String {
        value.to_string()
    }
}
