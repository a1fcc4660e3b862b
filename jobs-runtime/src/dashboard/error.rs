//! A refused request as a page of the dashboard: the `X_...` code, the message and the fix,
//! under the HTTP status the code stands for, with the dashboard's layout and a way back.

use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use serde_json::json;

use super::access::Ctx;
use super::Shared;
use crate::error::{ErrorCode, JobError};

/// A handler's refusal; rendered as the error page.
#[derive(Debug)]
pub(crate) struct Refusal(pub JobError);

impl From<JobError> for Refusal {
    fn from(error: JobError) -> Self {
        Refusal(error)
    }
}

/// The status a code answers with.
fn status(code: Option<ErrorCode>) -> StatusCode {
    use ErrorCode::*;
    match code {
        Some(DashboardUnauthenticated) => StatusCode::UNAUTHORIZED,
        Some(DashboardForbidden | DashboardCsrf) => StatusCode::FORBIDDEN,
        Some(JobNotFound) => StatusCode::NOT_FOUND,
        Some(NotImplemented) => StatusCode::NOT_IMPLEMENTED,
        // A value the request carries is outside its documented bounds (a filter, an action,
        // a priority): a malformed request, the same one never succeeds. Not 409: nothing in
        // the stored state conflicts, and re-reading the job would change nothing.
        Some(Invariant) => StatusCode::BAD_REQUEST,
        // What the viewer sent does not hold, a tenant an input names among it.
        Some(JobInputInvalid | JobPageInvalid | IdInvalid | JobTenantMismatch) => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        // The job's state refuses the act.
        Some(
            JobNotRequeueable | JobNotRemovable | JobNotPromotable | JobNotCancellable
            | JobDuplicate,
        ) => StatusCode::CONFLICT,
        Some(DriverUnavailable) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A refusal on its way out: what the error page shows. A handler's [`Refusal`] leaves it
/// in the response's extensions; the guard, which knows where the dashboard is mounted and who
/// is looking, draws the page ([`Refused::page`]).
#[derive(Debug, Clone)]
pub(crate) struct Refused {
    status: StatusCode,
    code: &'static str,
    message: String,
    fix: Option<String>,
}

impl From<Refusal> for Refused {
    fn from(Refusal(error): Refusal) -> Self {
        let code = error.code();
        Refused {
            status: status(code),
            code: code.map_or("X_ERROR", ErrorCode::as_str),
            message: error.message().to_string(),
            fix: error
                .fix()
                .map(str::to_string)
                .or_else(|| default_fix(code).map(str::to_string)),
        }
    }
}

/// The fix a page names for a refusal of the operator API that carries none of its own.
fn default_fix(code: Option<ErrorCode>) -> Option<&'static str> {
    use ErrorCode::*;
    Some(match code? {
        JobNotFound => "open the job from the jobs list: this id is not stored (it may have been deleted or purged)",
        JobNotRequeueable => "wait until the job has finished, or cancel it first, then retry it",
        JobNotCancellable => "nothing to cancel: the job has already finished",
        JobNotPromotable => "only a ready or delayed job can be made due now",
        JobNotRemovable => "cancel the running job first, then delete it once it has stopped",
        JobDuplicate => "a live job holds the same key: open that job instead",
        DriverUnavailable => "check that the store is reachable, then reload the page",
        _ => return None,
    })
}

impl Refused {
    /// The error page in the dashboard's layout: the status, the code, the message, the fix,
    /// and a way back (`back`: the dashboard page the viewer came from, else the overview).
    /// Without a viewer (`ctx` none) the navigation is left out.
    pub(crate) fn page(
        &self,
        dash: &Shared,
        ctx: Option<&Ctx>,
        base: &str,
        back: Option<&str>,
    ) -> Response {
        let home = if base.is_empty() { "/" } else { base };
        let context = json!({
            "ctx": {
                "identity": ctx.map(|c| c.identity.as_str()),
                "access": ctx.map(|c| c.access),
                "manage": false,
                "base": base,
                "home": home,
                "csrf": "",
            },
            "now": dash.jobs.now(),
            "refresh_secs": 0,
            "tenant": dash.options.tenant,
            "note": null,
            "status": self.status.as_u16(),
            "reason": self.status.canonical_reason().unwrap_or("Error"),
            "code": self.code,
            "message": self.message,
            "fix": self.fix,
            "back": back,
        });
        let body = super::pages::pages()
            .and_then(|p| p.render_value("error.html", &context))
            .unwrap_or_else(|_| format!("{}: {}", self.code, self.message));
        (
            self.status,
            [(header::CACHE_CONTROL, "no-store")],
            Html(body),
        )
            .into_response()
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let refused = Refused::from(self);
        // A bare page, drawn again by the guard in the dashboard's layout.
        let body = format!("{}: {}", refused.code, refused.message);
        let mut response = (refused.status, body).into_response();
        response.extensions_mut().insert(refused);
        response
    }
}

/// A request parameter that does not read (a filter, an action, a form): `X_INVARIANT`, the
/// reference's code for a value outside its bounds (HTTP 400). `X_CLI_BAD_FLAG` is the
/// command line's, and a dashboard is not one.
pub(crate) fn bad_parameter(what: &str, fix: &str) -> Refusal {
    Refusal(
        JobError::new(ErrorCode::Invariant, format!("{what} is not valid"))
            .with_fix(fix.to_string()),
    )
}

/// A job id in the path or a form that is not a uuid: `X_ID_INVALID` (HTTP 422).
pub(crate) fn bad_id(what: &str, fix: &str) -> Refusal {
    Refusal(
        JobError::new(ErrorCode::IdInvalid, format!("{what} is not a uuid"))
            .with_fix(fix.to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_parameter_is_an_invariant_answered_400_never_a_cli_code() {
        let refused = Refused::from(bad_parameter("the state filter", "pick a state"));
        assert_eq!(refused.code, "X_INVARIANT");
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        let refused = Refused::from(bad_id("the job id", "open a job from the jobs list"));
        assert_eq!(refused.code, "X_ID_INVALID");
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        // A refusal of the job's state stays a conflict.
        assert_eq!(
            status(Some(ErrorCode::JobNotCancellable)),
            StatusCode::CONFLICT
        );
        assert_eq!(status(Some(ErrorCode::Invariant)), StatusCode::BAD_REQUEST);
    }
}
