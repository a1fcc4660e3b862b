//! The manifest: what the code declares, as byte-stable JSON for dashboards, MCP and CI.

use serde_json::{json, Value};

use crate::descriptor::{JobDescriptor, TenantMode};
use crate::error::JobError;
use crate::registry::Registry;
use crate::task::{Occurrence, TaskEntry};

/// Every declared job and task, sorted by name. Its JSON is byte-stable: keys sorted, no
/// timestamps.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    jobs: Vec<Value>,
    tasks: Vec<Value>,
}

/// The manifest of every `#[job]` linked into this binary. `X_JOB_DUPLICATE` when two jobs
/// share a name.
///
/// ```
/// let manifest = jobs::manifest().unwrap();
/// assert!(manifest.to_json().starts_with("{"));
/// ```
pub fn manifest() -> Result<Manifest, JobError> {
    Ok(Manifest::of(Registry::global()?))
}

impl Manifest {
    /// The manifest of the jobs and tasks in `registry`.
    pub fn of(registry: &Registry) -> Self {
        Manifest {
            jobs: registry
                .entries()
                .map(|e| factory_kind(describe(e.descriptor())))
                .collect(),
            tasks: registry.tasks().map(describe_task).collect(),
        }
    }

    /// The job rows, sorted by name.
    pub fn jobs(&self) -> &[Value] {
        &self.jobs
    }

    /// The task rows, sorted by name.
    pub fn tasks(&self) -> &[Value] {
        &self.tasks
    }

    /// Whether it declares nothing: no job and no task is linked into this binary.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty() && self.tasks.is_empty()
    }

    /// The manifest as a JSON value.
    pub fn to_value(&self) -> Value {
        json!({ "version": 1, "jobs": self.jobs, "tasks": self.tasks })
    }

    /// Pretty JSON with sorted keys and a final newline: the committed form.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&sorted(self.to_value()))
            .expect("a JSON value always serializes");
        text.push('\n');
        text
    }
}

fn ms(d: std::time::Duration) -> u64 {
    d.as_millis() as u64
}

/// One job's row. It never carries a key: keys are app data.
fn describe(d: &JobDescriptor) -> Value {
    let tenant = match d.tenant {
        TenantMode::None => json!({ "mode": "none" }),
        TenantMode::Field(field) => json!({ "mode": "field", "field": field }),
        TenantMode::Derived => json!({ "mode": "derived" }),
    };
    json!({
        "kind": "job",
        "name": d.name,
        "queue": d.queue,
        "idempotent": true,
        "retry": {
            "attempts": d.retry.attempts,
            "backoff": d.retry.backoff.as_str(),
            "delay_ms": ms(d.retry.delay),
            "max_delay_ms": ms(d.retry.max_delay),
            "jitter": d.retry.jitter.as_str(),
            "dead_letter": d.dead_letter,
        },
        "timeout_ms": d.timeout.map(ms),
        "step_timeout_ms": d.step_timeout.map(ms),
        "event_poll_ms": ms(d.event_poll),
        "expires_in_ms": d.expires_in.map(ms),
        "debounce_ms": d.debounce.map(ms),
        "unique_for_ms": d.unique_for.map(ms),
        "concurrency": d.concurrency.map(|c| json!({
            "limit": c.limit,
            "keyed": c.keyed,
            "when_busy": if c.keyed { Some(c.when_busy.as_str()) } else { None },
        })),
        "rate": d.rate.map(|r| json!({
            "limit": r.limit,
            "per_ms": ms(r.per),
            "keyed": r.keyed,
        })),
        "tenant": tenant,
        "on_settled": d.on_settled,
        "priority": d.priority,
        "on_dependency_failure": d.on_dependency_failure.as_str(),
        // Step names are chosen at run time, so the manifest lists none by design.
        "steps": [],
        "input": { "type": d.input_type, "schema": (d.input_schema)() },
        // `keep_result`: the output type and its schema; null when the output is not kept.
        "result": d.result.map(|kept| json!({
            "type": kept.output_type,
            "schema": (kept.output_schema)(),
        })),
    })
}

/// A job that a factory attribute declared (`#[backfill]`, `#[ledger]`) shows that attribute's
/// kind and its own fields next to the job's.
fn factory_kind(mut row: Value) -> Value {
    let name = row["name"].as_str().unwrap_or_default().to_string();
    if let Some(fields) = crate::backfill::manifest_fields(&name) {
        row["kind"] = json!("backfill");
        row["backfill"] = fields;
    } else if let Some(fields) = crate::ledger::manifest_fields(&name) {
        row["kind"] = json!("ledger");
        row["ledger"] = fields;
    }
    row
}

/// One task's row: its schedule, its catch-up, and the jobs it fires in declaration order,
/// learnt I/O-free by asking its entries for one fixed occurrence (the first after
/// 2030-01-01T00:00:00Z), so the row is the same on every run.
fn describe_task(entry: &TaskEntry) -> Value {
    let d = entry.descriptor();
    let epoch = chrono::DateTime::from_timestamp(1_893_456_000, 0).expect("a valid instant");
    let tz: chrono_tz::Tz = d.tz.parse().unwrap_or(chrono_tz::UTC);
    let at = crate::scheduler::next_after(d, epoch).unwrap_or(epoch);
    let jobs: Vec<&str> = entry
        .entries(&Occurrence::new(at, tz))
        .iter()
        .map(|e| e.job_name())
        .collect();
    json!({
        "kind": "task",
        "name": d.name,
        "cron": d.cron,
        "tz": d.tz,
        "catch_up": d.catch_up.as_str(),
        "max_catch_up": d.max_catch_up,
        "jobs": jobs,
    })
}

/// Rebuilds every object with its keys in byte order, whatever map the JSON library uses.
pub(crate) fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
