//! The web dashboard (feature `dashboard`): an axum [`Router`] of server-rendered pages over
//! the operator API, which an app mounts behind its own authentication, or which `jobs
//! dashboard` serves standalone.
//!
//! Pages: the overview (queue depth by state, oldest ready age, paused flag, the last hour's
//! throughput drawn from the counters, and the transactional outbox's figures when the client
//! has an outbox installed), jobs (filters, keyset pages both ways, bulk retry,
//! cancel and delete), a job (its steps, last error, redacted input, and its actions), dead
//! letters, queues (pause and resume), workers, tasks, backfills, ledger postings, the manifest
//! with an enqueue form built from each job's input schema, and `/metrics`.
//!
//! Access: the app's layers name the viewer by inserting a [`Viewer`] request extension; its
//! roles decide what it may do ([`DashboardOptions::read_role`] to look,
//! [`DashboardOptions::manage_role`] to act). Every change is a `POST` carrying the page's CSRF
//! token (a double-submit cookie signed with the dashboard's secret) from the dashboard's own
//! origin.
//!
//! ```no_run
//! use jobs::dashboard::axum::{self, extract::Request, middleware::Next, response::Response};
//! use jobs::dashboard::{DashboardOptions, Viewer};
//!
//! // The app's own authentication decides who is asking and what they may do.
//! async fn who(mut request: Request, next: Next) -> Response {
//!     request.extensions_mut().insert(Viewer::new("ops@example.com", ["job:read", "job:manage"]));
//!     next.run(request).await
//! }
//!
//! # async fn app(jobs: jobs::Jobs) -> Result<(), jobs::JobError> {
//! let app: axum::Router = axum::Router::new()
//!     .nest("/admin/jobs", jobs::dashboard::router(jobs, DashboardOptions::default())?)
//!     .layer(axum::middleware::from_fn(who));
//! # let _ = app; Ok(()) }
//! ```

mod access;
mod chart;
pub(crate) mod cron_words;
mod csrf;
mod error;
mod graph;
mod metrics;
mod pages;
mod routes;
mod schema_form;
pub mod standalone;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use crate::client::Jobs;
use crate::error::JobError;

pub use access::{Access, Viewer};
/// The axum this crate is built with, so an app mounts the router with the same version.
pub use axum;

/// How a dashboard is mounted: its roles, its tenant, its refresh.
#[derive(Debug, Clone)]
pub struct DashboardOptions {
    /// The role a [`Viewer`] needs to look (default `job:read`).
    pub read_role: String,
    /// The role a [`Viewer`] needs to act: retry, cancel, delete, promote, pause, enqueue
    /// (default `job:manage`); it also lets the viewer look, and reveal inputs.
    pub manage_role: String,
    /// A dashboard for one tenant: it lists, shows and touches only that tenant's jobs, and
    /// leaves out what spans every tenant (queue counters, workers, queue and task pauses).
    pub tenant: Option<String>,
    /// How often an open page refreshes itself (default 5 s; zero: never). A refresh keeps
    /// what the viewer typed, ticked or opened: it only brings the figures up to date.
    pub refresh: Duration,
    /// The secret the CSRF tokens are signed with (HMAC-SHA256). `None` (the default): 32
    /// random bytes drawn when the router is made, so a restart, or another instance behind
    /// the same load balancer, asks the browser to reload before its next change. Give every
    /// instance the same secret to avoid that.
    pub csrf_secret: Option<CsrfSecret>,
}

/// The secret a dashboard signs its CSRF tokens with; its `Debug` never shows it.
#[derive(Clone)]
pub struct CsrfSecret(Vec<u8>);

impl CsrfSecret {
    /// A secret of these bytes (at least 32 random bytes are advised).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        CsrfSecret(bytes.into())
    }
}

impl std::fmt::Debug for CsrfSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CsrfSecret(..)")
    }
}

impl Default for DashboardOptions {
    fn default() -> Self {
        DashboardOptions {
            read_role: "job:read".into(),
            manage_role: "job:manage".into(),
            tenant: None,
            refresh: Duration::from_secs(5),
            csrf_secret: None,
        }
    }
}

impl DashboardOptions {
    /// These options, for one tenant's dashboard.
    pub fn for_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
}

/// What every handler shares: the client (scoped to the tenant, if any) and the options.
pub(crate) struct Dashboard {
    pub jobs: Jobs,
    pub options: DashboardOptions,
    /// Signs and checks the CSRF tokens.
    pub csrf: csrf::Signer,
}

pub(crate) type Shared = Arc<Dashboard>;

/// The dashboard's router, to mount (`Router::nest`) in an app or serve as is. Its pages link
/// to each other relative to where it is mounted. Every request needs a [`Viewer`] extension
/// (`X_DASHBOARD_UNAUTHENTICATED`, HTTP 401, without one).
///
/// Refused with `X_INVARIANT` when an embedded template does not compile (a build defect).
pub fn router(jobs: Jobs, options: DashboardOptions) -> Result<Router, JobError> {
    let jobs = match &options.tenant {
        Some(tenant) => jobs.for_tenant(tenant.clone()),
        None => jobs,
    };
    pages::pages()?;
    let csrf = csrf::Signer::new(options.csrf_secret.as_ref().map(|s| s.0.as_slice()));
    let shared = Arc::new(Dashboard {
        jobs,
        options,
        csrf,
    });
    Ok(routes::router(shared))
}
