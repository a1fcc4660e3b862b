//! A refused request as a page: the `X_...` code, the message and the fix, under the HTTP
//! status the code stands for.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde_json::json;

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
        Some(JobInputInvalid | JobPageInvalid | CliBadFlag | IdInvalid) => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Some(
            JobNotRequeueable | JobNotRemovable | JobNotPromotable | JobNotCancellable
            | JobDuplicate | JobTenantMismatch | Invariant,
        ) => StatusCode::CONFLICT,
        Some(DriverUnavailable) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let error = self.0;
        let code = error.code();
        let status = status(code);
        let context = json!({
            "status": status.as_u16(),
            "code": code.map_or("X_ERROR", ErrorCode::as_str),
            "message": error.message(),
            "fix": error.fix(),
        });
        let body = super::pages::pages()
            .and_then(|p| p.render_value("error.html", &context))
            .unwrap_or_else(|_| "the dashboard's error page failed to render".into());
        (status, Html(body)).into_response()
    }
}

/// A request parameter that does not read; `X_CLI_BAD_FLAG` is the operator surface's code
/// for a bad filter.
pub(crate) fn bad_parameter(what: &str, fix: &str) -> Refusal {
    Refusal(
        JobError::new(ErrorCode::CliBadFlag, format!("{what} is not valid"))
            .with_fix(fix.to_string()),
    )
}
