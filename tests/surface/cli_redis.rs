//! The `jobs` operator tool and the MCP server against a Redis store (`--database-url
//! redis://...`, the key prefix in the URL): the verbs reach the same operator surface as on
//! Postgres and SQLite.

use crate::support;

use support::cli::jobs_cli_on;

use jobs::prelude::*;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Account {
    account_id: u64,
}

/// Always refused: dead-lettered on its first attempt.
#[job(name = "cli_redis.crm.sync", key = "crm:{account_id}", tenant = none, queue = "crm-redis")]
async fn sync_crm_redis(_run: Run, _input: Account) -> Result<(), JobError> {
    Err(JobError::terminal("crm answered 422: account archived"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_verbs_and_the_mcp_server_work_on_a_redis_url() {
    let server = support::redis::shared_server();
    let url = format!(
        "{}/?prefix={}",
        server.url(),
        support::redis::prefix("cli_redis")
    );
    let (code, out, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("redis"), "{out}");

    let jobs = Jobs::open(&url).await.expect("open");
    let dead = SyncCrmRedis::enqueue(&jobs, Account { account_id: 3 })
        .await
        .expect("enqueue");
    let worker = jobs.worker().queues(["crm-redis"]).build().expect("worker");
    assert_eq!(worker.tick().await.expect("tick").len(), 1);

    let (code, out, _) = jobs_cli_on(&url, &["ls", "--state", "dead", "--json"]).await;
    assert_eq!(code, 0, "{out}");
    let page: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(page["jobs"][0]["id"], dead.id.to_string());

    let (code, out, _) = jobs_cli_on(&url, &["show", &dead.id.to_string()]).await;
    assert_eq!(code, 0);
    assert!(out.contains("state        dead"), "{out}");
    assert!(out.contains("crm answered 422"), "{out}");

    let mcp = jobs::mcp::JobsMcp::new(jobs::manifest().unwrap(), jobs.clone());
    let mut args = serde_json::Map::new();
    args.insert("id".into(), dead.id.to_string().into());
    let shown = mcp.call("job.show", &args).await.unwrap();
    assert_eq!(shown["job"]["state"], "dead");

    let (code, out, err) = jobs_cli_on(&url, &["retry", &dead.id.to_string()]).await;
    assert_eq!(code, 0, "{out}{err}");
    let row = jobs.job(dead.id).await.expect("read").expect("row");
    assert_eq!(row.state, JobState::Ready);
    let (code, out, _) = jobs_cli_on(&url, &["show", &dead.id.to_string()]).await;
    assert_eq!(code, 0);
    let history = &out[out.find("\nhistory\n").expect("a history table")..];
    assert!(
        history.contains("cli:") && history.contains("requeue"),
        "who retried it: {history}"
    );

    let (code, _, _) = jobs_cli_on(&url, &["pause", "crm-redis"]).await;
    assert_eq!(code, 0);
    assert!(
        worker.tick().await.expect("tick").is_empty(),
        "a paused queue yields nothing"
    );
    let (code, _, _) = jobs_cli_on(&url, &["resume", "crm-redis"]).await;
    assert_eq!(code, 0);
    assert_eq!(worker.tick().await.expect("tick").len(), 1);

    let (code, out, _) = jobs_cli_on(&url, &["stats"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("crm-redis"), "{out}");

    // Refusals exit 1 and print the code, as on the other stores.
    let (code, _, err) = jobs_cli_on(&url, &["promote", &dead.id.to_string()]).await;
    assert_eq!(code, 1);
    assert!(err.starts_with("error: X_JOB_NOT_PROMOTABLE: "), "{err}");
}
