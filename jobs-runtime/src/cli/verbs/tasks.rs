//! `jobs tasks`: the scheduled tasks, the store's fires and pauses joined to the cron and zone
//! of the tasks linked into this binary, under the scheduler leader.

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
