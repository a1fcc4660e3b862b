//! Who is asking and what they may do: the [`Viewer`] the app's layers insert, the role it
//! holds, and the guard every request passes (the viewer, its role, the CSRF check of a change).

use axum::body::Body;
use axum::extract::{OriginalUri, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use serde::Serialize;

use super::error::{Refusal, Refused};
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
/// then the signed CSRF token and the dashboard's own origin. Sets the CSRF cookie on first
/// visit. A refusal, the guard's own or a handler's, is drawn here as a page of the dashboard
/// (its layout, the viewer, a way back), since only the guard knows where it is mounted.
pub(crate) async fn guard(State(dash): State<Shared>, request: Request, next: Next) -> Response {
    if request.uri().path().starts_with("/assets/") {
        return next.run(request).await;
    }
    let base = mount_path(&request);
    let back = back_link(request.headers(), &base, request.uri().path());
    match admit(&dash, request, &base).await {
        Ok((request, fresh_cookie, ctx)) => {
            let mut response = next.run(request).await;
            if let Some(refused) = response.extensions_mut().remove::<Refused>() {
                response = refused.page(&dash, Some(&ctx), &base, back.as_deref());
            }
            harden(&mut response);
            if let Some(cookie) = fresh_cookie {
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    response.headers_mut().append(header::SET_COOKIE, value);
                }
            }
            response
        }
        Err((refusal, ctx)) => {
            let mut response =
                Refused::from(refusal).page(&dash, ctx.as_ref(), &base, back.as_deref());
            harden(&mut response);
            response
        }
    }
}

/// The page the viewer came from, when it is a page of this dashboard (the `Referer` of our own
/// host, under the mount path) and not the refused page itself: the error page's way back.
fn back_link(headers: &HeaderMap, base: &str, path: &str) -> Option<String> {
    let referer = headers.get(header::REFERER)?.to_str().ok()?;
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let rest = referer
        .strip_prefix("http://")
        .or_else(|| referer.strip_prefix("https://"))?;
    let local = rest.strip_prefix(host)?;
    let under = local.strip_prefix(base)?;
    let refused_itself = under.split('?').next() == Some(path);
    (local.starts_with('/')
        && !local.starts_with("//")
        && (under.is_empty() || under.starts_with('/'))
        && !refused_itself)
        .then(|| local.to_string())
}

/// A viewer who may only look is refused what acts, with the same words whether it asks for
/// an action's form (`GET`) or posts the action.
pub(crate) fn may_act(identity: &str, access: Access) -> Result<(), Refusal> {
    if access == Access::Manage {
        return Ok(());
    }
    Err(Refusal(
        JobError::new(
            ErrorCode::DashboardForbidden,
            format!("viewer `{identity}` may look but not act: acting needs the manage role"),
        )
        .with_fix("ask for the dashboard's manage role, or have an operator who holds it act"),
    ))
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

/// A refusal of the guard, with the viewer's context once the viewer is known.
type Turned = (Refusal, Option<Ctx>);

async fn admit(
    dash: &Shared,
    request: Request,
    base: &str,
) -> Result<(Request, Option<String>, Ctx), Turned> {
    let viewer = request
        .extensions()
        .get::<Viewer>()
        .cloned()
        .ok_or_else(|| {
            Refusal(
                JobError::new(
                    ErrorCode::DashboardUnauthenticated,
                    "the request names no viewer",
                )
                .with_fix("sign in through the app that mounts the dashboard, then open it again"),
            )
        })
        .map_err(|refusal| (refusal, None))?;
    let options = &dash.options;
    let access = if viewer.has_role(&options.manage_role) {
        Access::Manage
    } else if viewer.has_role(&options.read_role) {
        Access::Read
    } else {
        return Err((
            Refusal(
                JobError::new(
                    ErrorCode::DashboardForbidden,
                    format!(
                        "viewer `{}` holds neither the dashboard's read role nor its manage role",
                        viewer.identity()
                    ),
                )
                .with_fix(format!(
                    "grant the viewer the `{}` role to look or `{}` to act",
                    options.read_role, options.manage_role
                )),
            ),
            None,
        ));
    };
    // The cookie's token counts only when this dashboard signed it for this viewer.
    let sent = csrf::cookie_token(request.headers());
    let signed = sent
        .clone()
        .filter(|token| dash.csrf.verify(token, viewer.identity()));
    let (token, fresh) = match &signed {
        Some(token) => (token.clone(), None),
        None => {
            let token = dash.csrf.issue(viewer.identity());
            let cookie = csrf::cookie(&token, base);
            (token, Some(cookie))
        }
    };
    let ctx = Ctx {
        identity: viewer.identity().to_string(),
        access,
        home: if base.is_empty() {
            "/".into()
        } else {
            base.to_string()
        },
        base: base.to_string(),
        csrf: token,
        manage: access == Access::Manage,
    };
    // From here a refusal is drawn for a known viewer: with the navigation.
    let with_ctx = |refusal: Refusal| (refusal, Some(ctx.clone()));
    let changes = !matches!(*request.method(), Method::GET | Method::HEAD);
    let request = if changes {
        may_act(viewer.identity(), access).map_err(with_ctx)?;
        let (parts, body) = request.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
            .await
            .map_err(|_| {
                with_ctx(Refusal(
                    JobError::new(
                        ErrorCode::DashboardCsrf,
                        format!("the form is larger than {MAX_FORM_BYTES} bytes"),
                    )
                    .with_fix("select fewer jobs at once"),
                ))
            })?;
        csrf::check(&parts.headers, signed.as_deref(), sent.is_some(), &bytes)
            .map_err(|e| with_ctx(Refusal(e)))?;
        Request::from_parts(parts, Body::from(bytes))
    } else {
        request
    };
    let mut request = request;
    request.extensions_mut().insert(ctx.clone());
    Ok((request, fresh, ctx))
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
