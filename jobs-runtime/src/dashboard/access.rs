//! Who is asking and what they may do: the [`Viewer`] the app's layers insert, the role it
//! holds, and the guard every request passes (the viewer, its role, the CSRF check of a change).

use axum::body::Body;
use axum::extract::{OriginalUri, Request, State};
use axum::http::{header, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::Refusal;
use super::{csrf, Shared};
use crate::error::{ErrorCode, JobError};

/// Who is looking at the dashboard, as the app's own authentication decided: an identity
/// (recorded with every action) and the roles it holds. Insert it as a request extension in a
/// layer before the dashboard's router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    identity: String,
    roles: Vec<String>,
}

impl Viewer {
    /// A viewer named `identity` holding `roles` (compared with
    /// [`DashboardOptions::read_role`](super::DashboardOptions::read_role) and
    /// [`manage_role`](super::DashboardOptions::manage_role)).
    pub fn new<R: Into<String>>(
        identity: impl Into<String>,
        roles: impl IntoIterator<Item = R>,
    ) -> Self {
        Viewer {
            identity: identity.into(),
            roles: roles.into_iter().map(Into::into).collect(),
        }
    }

    /// The identity actions are recorded under.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether the viewer holds `role`.
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }
}

/// What a viewer may do on a dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Look: every page, inputs redacted.
    Read,
    /// Look and act, and reveal inputs.
    Manage,
}

/// What a handler knows about the request beyond its own parameters.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Ctx {
    /// The viewer's identity.
    pub identity: String,
    /// What the viewer may do.
    pub access: Access,
    /// The path the dashboard is mounted at (`""` at the root), for links.
    pub base: String,
    /// The overview's path: the mount path, or `/` at the root.
    pub home: String,
    /// The token every form posts back.
    pub csrf: String,
    /// Whether the viewer may act.
    pub manage: bool,
}

/// The largest form body the guard reads (a bulk selection of a page's ids fits many times).
const MAX_FORM_BYTES: usize = 256 * 1024;

/// Every request but an asset's: a viewer with a role; a change also needs the manage role,
/// then the CSRF token and the dashboard's own origin. Sets the CSRF cookie on first visit.
pub(crate) async fn guard(State(dash): State<Shared>, request: Request, next: Next) -> Response {
    if request.uri().path().starts_with("/assets/") {
        return next.run(request).await;
    }
    match admit(&dash, request).await {
        Ok((request, fresh_cookie)) => {
            let mut response = next.run(request).await;
            harden(&mut response);
            if let Some(cookie) = fresh_cookie {
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    response.headers_mut().append(header::SET_COOKIE, value);
                }
            }
            response
        }
        Err(refusal) => {
            let mut response = refusal.into_response();
            harden(&mut response);
            response
        }
    }
}

/// No framing, no sniffing, and only the dashboard's own scripts and styles.
fn harden(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

async fn admit(dash: &Shared, request: Request) -> Result<(Request, Option<String>), Refusal> {
    let viewer = request
        .extensions()
        .get::<Viewer>()
        .cloned()
        .ok_or_else(|| {
            Refusal(JobError::new(
                ErrorCode::DashboardUnauthenticated,
                "the request names no viewer",
            ))
        })?;
    let options = &dash.options;
    let access = if viewer.has_role(&options.manage_role) {
        Access::Manage
    } else if viewer.has_role(&options.read_role) {
        Access::Read
    } else {
        return Err(Refusal(JobError::new(
            ErrorCode::DashboardForbidden,
            format!(
                "viewer `{}` holds neither the dashboard's read role nor its manage role",
                viewer.identity()
            ),
        )));
    };
    let base = mount_path(&request);
    let (token, fresh) = match csrf::cookie_token(request.headers()) {
        Some(token) => (token, None),
        None => {
            let token = csrf::new_token();
            let cookie = csrf::cookie(&token, &base);
            (token, Some(cookie))
        }
    };
    let changes = !matches!(*request.method(), Method::GET | Method::HEAD);
    let request = if changes {
        if access != Access::Manage {
            return Err(Refusal(JobError::new(
                ErrorCode::DashboardForbidden,
                format!(
                    "viewer `{}` may look but not act: acting needs the manage role",
                    viewer.identity()
                ),
            )));
        }
        let (parts, body) = request.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
            .await
            .map_err(|_| {
                Refusal(JobError::new(
                    ErrorCode::DashboardCsrf,
                    format!("the form is larger than {MAX_FORM_BYTES} bytes"),
                ))
            })?;
        // A fresh cookie means the browser sent none: nothing to match the form's token.
        csrf::check(
            &parts.headers,
            fresh.is_none().then_some(token.as_str()),
            &bytes,
        )
        .map_err(Refusal)?;
        Request::from_parts(parts, Body::from(bytes))
    } else {
        request
    };
    let mut request = request;
    request.extensions_mut().insert(Ctx {
        identity: viewer.identity().to_string(),
        access,
        home: if base.is_empty() {
            "/".into()
        } else {
            base.clone()
        },
        base,
        csrf: token,
        manage: access == Access::Manage,
    });
    Ok((request, fresh))
}

/// Where the dashboard is mounted: the original path less the path the router sees.
fn mount_path(request: &Request) -> String {
    let inner = request.uri().path();
    let Some(OriginalUri(original)) = request.extensions().get::<OriginalUri>() else {
        return String::new();
    };
    let outer = original.path();
    // Nested at `/admin`, the overview is `/admin` outside and `/` inside.
    let base = match outer.strip_suffix(inner) {
        Some(base) => base,
        None if inner == "/" => outer,
        None => "",
    };
    base.trim_end_matches('/').to_string()
}
