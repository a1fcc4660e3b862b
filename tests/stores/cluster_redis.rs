//! The Redis driver on a Redis Cluster of the test's own: every key of a queue lives in the
//! queue's one slot (a brace in a tenant or key cannot move one), queues spread over the
//! masters, and a master killed after its replica caught up fails over with nothing lost while
//! the driver follows the new master.

use std::time::Duration;

use jobs::driver::redis::key_slot;
use jobs::driver::RedisDriver;
use jobs::prelude::*;
use jobs::{EnqueueOptions, ErrorCode, Jobs};

use crate::support;
use support::redis::{RedisCluster, RedisServer};
use support::wait::{until, within_blocking};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Note {
    key: String,
    org: String,
}

#[job(key = "{key}", tenant = org)]
async fn cluster_note(_run: Run, _input: Note) -> Result<(), JobError> {
    Ok(())
}

/// Every key under `prefix` on every node of `cluster`.
fn keys_under(cluster: &RedisCluster, prefix: &str) -> Vec<(u16, String)> {
    let pattern = format!("*{prefix}*");
    let mut out = Vec::new();
    for node in cluster.nodes() {
        let listed = node.cli(&["--scan", "--pattern", &pattern]);
        out.extend(
            listed
                .lines()
                .filter(|l| !l.is_empty())
                .map(|k| (node.port(), k.to_string())),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brace_in_a_tenant_or_key_cannot_move_a_queue_key_to_another_slot() {
    let cluster = support::redis::shared_cluster();
    let prefix = support::redis::prefix("braces");
    let url = format!("{}/?prefix={prefix}", cluster.url());
    let jobs = Jobs::new(RedisDriver::connect(&url).await.unwrap());
    for (tenant, key) in [("{evil}", "}{x"), ("a}b", "{"), ("}", "{orders}")] {
        let note = Note {
            key: key.into(),
            org: tenant.into(),
        };
        jobs.enqueue::<ClusterNote>(note)
            .await
            .expect("any tenant and key are stored");
    }
    let keys = keys_under(cluster, &prefix);
    let queue_tag = format!("{{{prefix}:q:default}}");
    let queue_keys: Vec<&String> = keys
        .iter()
        .map(|(_, k)| k)
        .filter(|k| k.starts_with(&queue_tag))
        .collect();
    assert!(
        queue_keys.len() >= 6,
        "jobs, due sets, live keys: {queue_keys:?}"
    );
    for key in &queue_keys {
        assert_eq!(key_slot(key), key_slot(&queue_tag), "{key}");
    }
    // A queue name with a brace is refused by the name grammar before any key is made.
    let options = EnqueueOptions::new().queue("a{b}");
    let refused = jobs
        .enqueue_with::<ClusterNote>(
            Note {
                key: "q".into(),
                org: "o".into(),
            },
            options,
        )
        .await
        .unwrap_err();
    assert!(refused.code().is_some(), "{refused}");
    assert!(!refused.is(ErrorCode::Driver), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_spread_over_the_masters() {
    let cluster = support::redis::shared_cluster();
    let prefix = support::redis::prefix("spread");
    let url = format!("{}/?prefix={prefix}", cluster.url());
    let jobs = Jobs::new(RedisDriver::connect(&url).await.unwrap());
    for i in 0..12 {
        let options = EnqueueOptions::new().queue(format!("q{i}"));
        jobs.enqueue_with::<ClusterNote>(
            Note {
                key: format!("k{i}"),
                org: "o".into(),
            },
            options,
        )
        .await
        .unwrap();
    }
    let mut holding: Vec<u16> = keys_under(cluster, &prefix)
        .iter()
        .filter(|(_, k)| k.contains(":q:"))
        .map(|(port, _)| *port)
        .collect();
    holding.sort_unstable();
    holding.dedup();
    assert!(
        holding.len() >= 2,
        "12 queues over 3 masters land on {holding:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_after_its_replica_caught_up_fails_over_with_nothing_lost() {
    let mut cluster = RedisCluster::start("failover", 3, 1);
    let url = format!("{}/?prefix=failover", cluster.url());
    let driver = RedisDriver::connect(&url).await.unwrap();
    let jobs = Jobs::new(driver.clone());
    let mut ids = Vec::new();
    for i in 0..50 {
        ids.push(
            jobs.enqueue::<ClusterNote>(Note {
                key: format!("k{i}"),
                org: "o".into(),
            })
            .await
            .unwrap()
            .id,
        );
    }
    let master = cluster.master_of("{failover:q:default}");
    // Replication is asynchronous: kill the master only once its replica has every write
    // (what the guide says a failover keeps; what it can lose is the writes not yet there).
    let node =
        |port: u16| -> &RedisServer { cluster.nodes().iter().find(|n| n.port() == port).unwrap() };
    let caught_up = within_blocking(Duration::from_secs(20), || {
        let info = node(master).cli(&["info", "replication"]);
        let offset = info
            .lines()
            .find_map(|l| l.strip_prefix("master_repl_offset:"))
            .unwrap_or("0")
            .trim()
            .to_string();
        info.lines()
            .filter(|l| l.starts_with("slave"))
            .any(|l| l.contains(&format!("offset={offset},")))
    });
    assert!(caught_up, "the replica caught up");
    cluster.kill_port(master);
    let promoted = within_blocking(Duration::from_secs(30), || {
        cluster
            .cli(&["cluster", "info"])
            .contains("cluster_state:ok")
            && cluster
                .live_master_of("{failover:q:default}")
                .is_some_and(|now| now != master)
    });
    assert!(promoted, "a replica took over the queue's slot");
    // The driver follows the new master (MOVED, slot refresh): every job is there, and new
    // work is taken. A call during the switch may be refused as unavailable (retryable).
    until(
        Duration::from_secs(30),
        "the driver reads through the new master",
        || {
            let jobs = jobs.clone();
            let ids = ids.clone();
            async move {
                for id in &ids {
                    match jobs.job(*id).await {
                        Ok(Some(_)) => {}
                        _ => return false,
                    }
                }
                true
            }
        },
    )
    .await;
    until(
        Duration::from_secs(30),
        "an enqueue lands on the new master",
        || {
            let jobs = jobs.clone();
            async move {
                jobs.enqueue::<ClusterNote>(Note {
                    key: "after".into(),
                    org: "o".into(),
                })
                .await
                .is_ok()
            }
        },
    )
    .await;
}
