//! The dashboard on its own (`jobs dashboard --listen ADDR`): the same router behind
//! credentials from the environment. `JOBS_DASHBOARD_TOKEN` (sent as `Authorization: Bearer`,
//! or as the password of basic credentials) or `JOBS_DASHBOARD_USER` with
//! `JOBS_DASHBOARD_PASSWORD` grant the manage role; `JOBS_DASHBOARD_READ_TOKEN` the read role
//! only. Without any, it serves loopback only, to whoever can reach it there, as a manager;
//! asked to listen further away it refuses (`X_DASHBOARD_LISTEN_INSECURE`).

use std::fmt;
use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use base64::Engine;

use super::error::Refusal;
use super::{router, DashboardOptions, Viewer};
use crate::client::Jobs;
use crate::error::{ErrorCode, JobError};

/// Who may use a standalone dashboard.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// A bearer token granting the manage role.
    pub token: Option<String>,
    /// A bearer token granting the read role only.
    pub read_token: Option<String>,
    /// A user and password granting the manage role.
    pub basic: Option<(String, String)>,
}

impl fmt::Debug for Credentials {
    // Secrets are never printed: only which kinds are set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("token", &self.token.is_some())
            .field("read_token", &self.read_token.is_some())
            .field("basic", &self.basic.as_ref().map(|(user, _)| user))
            .finish()
    }
}

impl Credentials {
    /// `JOBS_DASHBOARD_TOKEN`, `JOBS_DASHBOARD_READ_TOKEN`, `JOBS_DASHBOARD_USER` and
    /// `JOBS_DASHBOARD_PASSWORD` (empty values count as unset).
    pub fn from_env() -> Credentials {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Credentials {
            token: var("JOBS_DASHBOARD_TOKEN"),
            read_token: var("JOBS_DASHBOARD_READ_TOKEN"),
            basic: var("JOBS_DASHBOARD_USER").zip(var("JOBS_DASHBOARD_PASSWORD")),
        }
    }

    /// Whether any credential is set.
    pub fn any(&self) -> bool {
        self.token.is_some() || self.read_token.is_some() || self.basic.is_some()
    }

    /// The viewer a request's `Authorization` header names, if it matches.
    fn viewer(&self, authorization: Option<&str>, options: &DashboardOptions) -> Option<Viewer> {
        let manage = [options.read_role.clone(), options.manage_role.clone()];
        let read = [options.read_role.clone()];
        if !self.any() {
            return Some(Viewer::new("local", manage));
        }
        let authorization = authorization?;
        let (user, secret) = if let Some(token) = authorization.strip_prefix("Bearer ") {
            ("token".to_string(), token.trim().to_string())
        } else {
            let encoded = authorization.strip_prefix("Basic ")?;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .ok()?;
            let text = String::from_utf8(decoded).ok()?;
            let (user, password) = text.split_once(':')?;
            (user.to_string(), password.to_string())
        };
        let matches =
            |expected: &Option<String>| expected.as_deref().is_some_and(|e| same(e, &secret));
        if let Some((u, p)) = &self.basic {
            if same(u, &user) && same(p, &secret) {
                return Some(Viewer::new(user, manage));
            }
        }
        if matches(&self.token) {
            return Some(Viewer::new(user, manage));
        }
        if matches(&self.read_token) {
            return Some(Viewer::new(user, read));
        }
        None
    }
}

/// Equal in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses to listen beyond loopback without credentials.
pub fn check_listen(addr: SocketAddr, credentials: &Credentials) -> Result<(), JobError> {
    if addr.ip().is_loopback() || credentials.any() {
        return Ok(());
    }
    Err(JobError::new(
        ErrorCode::DashboardListenInsecure,
        format!("the dashboard would listen on {addr}, beyond loopback, with no credentials"),
    ))
}

/// The dashboard's router behind `credentials`: each request's `Authorization` header names
/// its [`Viewer`], or it is refused with `X_DASHBOARD_UNAUTHENTICATED` (HTTP 401).
pub fn app(
    jobs: Jobs,
    options: DashboardOptions,
    credentials: Credentials,
) -> Result<Router, JobError> {
    let dashboard = router(jobs, options.clone())?;
    Ok(dashboard.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let credentials = credentials.clone();
            let options = options.clone();
            async move { authenticate(&credentials, &options, request, next).await }
        },
    )))
}

async fn authenticate(
    credentials: &Credentials,
    options: &DashboardOptions,
    mut request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match credentials.viewer(authorization, options) {
        Some(viewer) => {
            request.extensions_mut().insert(viewer);
            next.run(request).await
        }
        None => {
            let mut response = Refusal(JobError::new(
                ErrorCode::DashboardUnauthenticated,
                "the request carries no credentials the dashboard accepts",
            ))
            .into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static(
                    "Basic realm=\"jobs dashboard\", charset=\"UTF-8\"",
                ),
            );
            response
        }
    }
}

/// Serves [`app`] on `addr` until the process ends; `on_listen` is told the bound address
/// first (the port, when `addr` asked for any).
pub async fn serve(
    jobs: Jobs,
    addr: SocketAddr,
    options: DashboardOptions,
    credentials: Credentials,
    on_listen: impl FnOnce(SocketAddr),
) -> Result<(), JobError> {
    check_listen(addr, &credentials)?;
    let app = app(jobs, options, credentials)?;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        JobError::new(
            ErrorCode::DriverUnavailable,
            format!("cannot listen on {addr}: {e}"),
        )
        .with_fix("pick a free port, or an address of this host")
    })?;
    let bound = listener.local_addr().unwrap_or(addr);
    on_listen(bound);
    axum::serve(listener, app)
        .await
        .map_err(|e| JobError::new(ErrorCode::Invariant, format!("the dashboard stopped: {e}")))
}
