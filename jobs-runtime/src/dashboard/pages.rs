//! The templates, embedded in the binary and compiled once: minijinja escapes every value
//! rendered into a `.html` template, so what a job carries (names, errors, keys, inputs) is
//! text on the page, never markup.

use std::sync::OnceLock;

use axum::response::Html;
use minijinja::{Environment, Value};
use serde::Serialize;

use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// The compiled templates.
pub(crate) struct Pages {
    env: Environment<'static>,
}

/// Each template, by name: the name's `.html` turns autoescaping on.
const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("error.html", include_str!("templates/error.html")),
    ("overview.html", include_str!("templates/overview.html")),
    ("jobs.html", include_str!("templates/jobs.html")),
    ("job.html", include_str!("templates/job.html")),
    ("queues.html", include_str!("templates/queues.html")),
    ("workers.html", include_str!("templates/workers.html")),
    ("tasks.html", include_str!("templates/tasks.html")),
    ("backfills.html", include_str!("templates/backfills.html")),
    ("ledger.html", include_str!("templates/ledger.html")),
    ("manifest.html", include_str!("templates/manifest.html")),
    ("enqueue.html", include_str!("templates/enqueue.html")),
];

/// The templates, compiled on first use; `X_INVARIANT` names one that does not compile.
pub(crate) fn pages() -> Result<&'static Pages, JobError> {
    static PAGES: OnceLock<Result<Pages, String>> = OnceLock::new();
    PAGES.get_or_init(Pages::compile).as_ref().map_err(|e| {
        JobError::new(
            ErrorCode::Invariant,
            format!("a dashboard template does not compile: {e}"),
        )
    })
}

impl Pages {
    fn compile() -> Result<Pages, String> {
        let mut env = Environment::new();
        for (name, source) in TEMPLATES {
            env.add_template(name, source).map_err(|e| e.to_string())?;
        }
        env.add_filter("time", time);
        env.add_filter("ago", ago);
        env.add_filter("json", json);
        env.add_filter("window", window);
        Ok(Pages { env })
    }

    /// Renders `name` over `context` (anything serializable).
    pub(crate) fn render_value(
        &self,
        name: &str,
        context: &impl Serialize,
    ) -> Result<String, JobError> {
        let template = self.env.get_template(name).map_err(render_error)?;
        template
            .render(Value::from(minijinja::value::Serde(context)))
            .map_err(render_error)
    }

    /// [`Pages::render_value`] as an HTML response.
    pub(crate) fn render(
        &self,
        name: &str,
        context: &impl Serialize,
    ) -> Result<Html<String>, JobError> {
        self.render_value(name, context).map(Html)
    }
}

fn render_error(e: minijinja::Error) -> JobError {
    // The template's own error (a name, a line); never a rendered value.
    JobError::new(
        ErrorCode::Invariant,
        format!("a dashboard page failed to render: {}", e.kind()),
    )
}

fn parse(value: &str) -> Option<Timestamp> {
    value.parse::<Timestamp>().ok()
}

/// `2030-01-01 09:00:00Z` from a stored timestamp; `-` for none.
fn time(value: Option<String>) -> String {
    value
        .as_deref()
        .and_then(parse)
        .map_or("-".into(), |at| at.format("%Y-%m-%d %H:%M:%SZ").to_string())
}

/// `3s ago`, `in 2m`, relative to `now`.
fn ago(value: Option<String>, now: String) -> String {
    let (Some(at), Some(now)) = (value.as_deref().and_then(parse), parse(&now)) else {
        return "-".into();
    };
    let secs = (now - at).num_seconds();
    let n = secs.unsigned_abs();
    let amount = match n {
        0..=59 => format!("{n}s"),
        60..=3599 => format!("{}m", n / 60),
        3600..=86_399 => format!("{}h", n / 3600),
        _ => format!("{}d", n / 86_400),
    };
    if secs < 0 {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// A value as indented JSON text (escaped by the template like any text).
fn json(value: Value) -> String {
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// A window in milliseconds as declared: `60000` -> `1m`, `1500` -> `1500ms`.
fn window(ms: u64) -> String {
    crate::duration::shown(std::time::Duration::from_millis(ms))
}
