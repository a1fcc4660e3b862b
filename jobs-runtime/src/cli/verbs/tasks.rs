//! `jobs tasks`: the scheduled tasks, the store's fires and pauses joined to the cron and zone
//! of the tasks linked into this binary, under the scheduler leader. `jobs tasks show <name>
//! [--count N]`: one declared task's next fires in its zone and its cron in words (no database).

use serde_json::json;

use crate::client::Jobs;
use crate::driver::scheduler_store::{
    SchedulerLeaderParams, TaskFiresParams, TaskPausedParams, TaskWatermarksParams,
};
use crate::error::JobError;
use crate::registry::Registry;

use crate::cli::output::to_json;
use crate::cli::render::{table, time};

pub(in crate::cli) async fn tasks(jobs: &Jobs, json: bool) -> Result<String, JobError> {
    let store = jobs.driver_part(|d| d.scheduler_store(), "has no scheduler store")?;
    let now = jobs.now();
    let fires = store.task_fires(&TaskFiresParams { now }).await?;
    let paused = store
        .task_paused(&TaskPausedParams { task: None, now })
        .await?;
    let watermarks = store.task_watermarks(&TaskWatermarksParams { now }).await?;
    let leader = store
        .scheduler_leader(&SchedulerLeaderParams { now })
        .await?;
    let registry = Registry::global().ok();
    let mut names: Vec<String> = watermarks.iter().map(|w| w.task.clone()).collect();
    names.extend(paused.iter().cloned());
    if let Some(registry) = registry {
        names.extend(registry.tasks().map(|t| t.descriptor().name.to_string()));
    }
    names.sort();
    names.dedup();
    let rows: Vec<serde_json::Value> = names
        .iter()
        .map(|name| {
            let declared = registry.and_then(|r| r.task(name)).map(|t| t.descriptor());
            let fire = fires.iter().find(|f| f.task == *name);
            json!({
                "task": name,
                "cron": declared.map(|d| d.cron),
                "tz": declared.map(|d| d.tz),
                "next": declared.and_then(|d| crate::scheduler::next_after(d, now)),
                "last_occurrence": fire.map(|f| f.occurrence),
                "last_fired_at": fire.map(|f| f.fired_at),
                "paused": paused.contains(name),
                "declared_here": declared.is_some(),
            })
        })
        .collect();
    if json {
        return Ok(to_json(&json!({ "leader": leader, "tasks": rows })));
    }
    let cell = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Bool(b) => {
            if *b {
                "yes".into()
            } else {
                "no".into()
            }
        }
        _ => "-".into(),
    };
    let stamp = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|s| s.parse::<crate::clock::Timestamp>().ok())
            .map_or("-".to_string(), time)
    };
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                cell(&r["task"]),
                cell(&r["cron"]),
                cell(&r["tz"]),
                stamp(&r["next"]),
                stamp(&r["last_occurrence"]),
                stamp(&r["last_fired_at"]),
                cell(&r["paused"]),
            ]
        })
        .collect();
    let mut text = match &leader {
        Some(l) => format!(
            "leader: scheduler {} since {} (lease until {})\n\n",
            l.holder,
            time(l.since),
            time(l.expires_at)
        ),
        None => "leader: none (no scheduler holds the lease: no task fires until one starts)\n\n"
            .to_string(),
    };
    text += &table(
        &[
            "TASK",
            "CRON",
            "TZ",
            "NEXT",
            "LAST OCCURRENCE",
            "FIRED AT",
            "PAUSED",
        ],
        &table_rows,
    );
    if rows.iter().any(|r| r["declared_here"] == false) {
        text.push_str(
            "(the store keeps fires and pauses, not cron or tz: a task's next fire shows when the \
             binary running this tool links its #[task])\n",
        );
    }
    Ok(text)
}

/// The most fires `jobs tasks show --count` lists.
pub(in crate::cli) const MAX_SHOWN_FIRES: usize = 1000;

/// `jobs tasks show <name> [--count N]`: the task's next `count` fires after `now` (default 5),
/// each in the task's zone and in UTC, and its cron in words. Reads the declaration linked into
/// this binary, so it needs no database.
pub(in crate::cli) fn show(
    name: &str,
    count: usize,
    now: crate::clock::Timestamp,
    json: bool,
) -> Result<String, JobError> {
    use crate::error::ErrorCode;
    if count == 0 || count > MAX_SHOWN_FIRES {
        return Err(JobError::new(
            ErrorCode::CliBadFlag,
            format!("--count must be 1 to {MAX_SHOWN_FIRES}"),
        )
        .with_fix("pass --count from 1 to 1000, or leave it out for the next 5 fires"));
    }
    let registry = Registry::global()?;
    let Some(task) = registry.task(name) else {
        let mut known: Vec<&str> = registry.tasks().map(|t| t.descriptor().name).collect();
        known.sort_unstable();
        let fix = if known.is_empty() {
            "no #[task] is linked into this binary: run the app's own `jobs` binary".to_string()
        } else {
            format!("name a declared task: {}", known.join(", "))
        };
        return Err(JobError::new(
            ErrorCode::CliBadFlag,
            "`jobs tasks show` was given a task no #[task] linked into this binary declares",
        )
        .with_fix(fix));
    };
    let d = task.descriptor();
    let fires = crate::scheduler::next_fires(d, now, count)?;
    let zone: chrono_tz::Tz = d.tz.parse().map_err(|_| {
        JobError::new(
            ErrorCode::Invariant,
            format!("the tz of task `{}` is not an IANA time zone", d.name),
        )
    })?;
    let words = crate::dashboard::cron_words::describe(d.cron);
    if json {
        let rows: Vec<_> = fires
            .iter()
            .map(|at| json!({ "at": at, "local": at.with_timezone(&zone).to_rfc3339() }))
            .collect();
        return Ok(to_json(&json!({
            "task": d.name,
            "cron": d.cron,
            "tz": d.tz,
            "cron_in_words": words,
            "catch_up": d.catch_up.as_str(),
            "next": rows,
        })));
    }
    let mut text = format!(
        "task      {}\ncron      {} ({words}, {})\ncatch-up  {}\n\nnext {} fire(s)\n",
        d.name,
        d.cron,
        d.tz,
        d.catch_up.as_str(),
        fires.len()
    );
    let rows: Vec<Vec<String>> = fires
        .iter()
        .map(|at| {
            vec![
                at.with_timezone(&zone)
                    .format("%a %Y-%m-%d %H:%M %Z")
                    .to_string(),
                time(*at),
            ]
        })
        .collect();
    text += &table(&[&format!("IN {}", d.tz), "UTC"], &rows);
    if fires.len() < count {
        text.push_str("(the schedule has no later occurrence)\n");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_out_of_bounds_is_a_usage_error() {
        let now = "2030-01-01T00:00:00Z".parse().unwrap();
        for count in [0, MAX_SHOWN_FIRES + 1] {
            let refused = show("any", count, now, false).unwrap_err();
            assert!(refused.is(crate::error::ErrorCode::CliBadFlag), "{refused}");
        }
    }
}
