//! The Redis driver on a Redis Cluster of the test's own: every key of a queue lives in the
//! queue's one slot (a brace in a tenant or key cannot move one), queues spread over the
//! masters, other builds' function libraries are deleted from every master at connect and
//! masters that lost this build's are given it again, and a master killed after its replica
//! caught up fails over with nothing lost while the driver follows the new master; a queue's
//! slot migrated to another master while the driver works (`MOVED`, `ASK`, `TRYAGAIN`) loses
//! nothing, and every refusal meanwhile is retryable.

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
async fn masters_lose_other_builds_libraries_and_are_given_this_ones_again() {
    let cluster = RedisCluster::start("functions_lost", 3, 0);
    // Another build's library on every master: the connect deletes it everywhere.
    let other_build = "jobs_00000000000000aa";
    let source = format!(
        "#!lua name={other_build}\nredis.register_function('{other_build}_enqueue', function() return 1 end)"
    );
    for node in cluster.nodes() {
        assert_eq!(node.cli(&["function", "load", &source]), other_build);
    }
    let jobs = Jobs::new(RedisDriver::connect(&cluster.url()).await.unwrap());
    for node in cluster.nodes() {
        let list = node.cli(&["function", "list"]);
        assert!(!list.contains(other_build), "{list}");
        assert_eq!(node.cli(&["function", "flush"]), "OK");
    }
    // Queues on every master: each call finds its master without the library and loads it.
    for i in 0..12 {
        let options = EnqueueOptions::new().queue(format!("q{i}"));
        let note = Note {
            key: format!("k{i}"),
            org: "o".into(),
        };
        jobs.enqueue_with::<ClusterNote>(note, options)
            .await
            .expect("the call loads the library again and runs");
    }
    for node in cluster.nodes() {
        assert!(node.cli(&["function", "list"]).contains("jobs_"));
    }
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

/// A node's id (`CLUSTER MYID`).
fn node_id(node: &RedisServer) -> String {
    node.cli(&["cluster", "myid"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_slot_migrated_while_the_driver_works_loses_nothing() {
    let cluster = RedisCluster::start("reshard", 3, 0);
    let url = format!("{}/?prefix=reshard", cluster.url());
    let jobs = Jobs::new(RedisDriver::connect(&url).await.unwrap());
    let tag = "{reshard:q:default}";
    let mut ids = Vec::new();
    for i in 0..40 {
        let note = Note {
            key: format!("before{i}"),
            org: "o".into(),
        };
        ids.push(jobs.enqueue::<ClusterNote>(note).await.unwrap().id);
    }
    let slot = cluster.cli(&["cluster", "keyslot", tag]);
    let from_port = cluster.master_of(tag);
    let node = |port: u16| cluster.nodes().iter().find(|n| n.port() == port).unwrap();
    let to_port = cluster
        .nodes()
        .iter()
        .map(RedisServer::port)
        .find(|p| *p != from_port)
        .unwrap();
    let (from, to) = (node(from_port), node(to_port));
    let (from_id, to_id) = (node_id(from), node_id(to));
    assert_eq!(
        to.cli(&["cluster", "setslot", &slot, "importing", &from_id]),
        "OK"
    );
    assert_eq!(
        from.cli(&["cluster", "setslot", &slot, "migrating", &to_id]),
        "OK"
    );
    // Keys move a few at a time; between moves the driver enqueues, claims and reads. A
    // script whose keys are split between the two nodes is refused (`TRYAGAIN`): retryable.
    let worker = jobs.worker().queues(["default"]).build().unwrap();
    let mut refused = 0;
    let mut enqueued_during = 0;
    loop {
        let keys = from.cli(&["cluster", "getkeysinslot", &slot, "5"]);
        let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
        if keys.is_empty() {
            break;
        }
        let mut migrate = vec!["migrate", "127.0.0.1"];
        let port = to_port.to_string();
        migrate.extend([port.as_str(), "", "0", "5000", "KEYS"]);
        migrate.extend(keys.iter().copied());
        assert_eq!(from.cli(&migrate), "OK");
        let note = Note {
            key: format!("during{enqueued_during}"),
            org: "o".into(),
        };
        match jobs.enqueue::<ClusterNote>(note).await {
            Ok(e) => {
                ids.push(e.id);
                enqueued_during += 1;
            }
            Err(error) => {
                assert_eq!(error.class(), jobs::ErrorClass::Retryable, "{error}");
                refused += 1;
            }
        }
        if let Err(error) = worker.tick().await {
            assert_eq!(error.class(), jobs::ErrorClass::Retryable, "{error}");
            refused += 1;
        }
    }
    for n in cluster.nodes() {
        assert_eq!(n.cli(&["cluster", "setslot", &slot, "node", &to_id]), "OK");
    }
    assert_eq!(cluster.master_of(tag), to_port);
    // Everything is on the new master, and the driver reads and works it there.
    until(
        Duration::from_secs(30),
        "every job readable after the move",
        || {
            let jobs = jobs.clone();
            let ids = ids.clone();
            async move {
                for id in &ids {
                    if !matches!(jobs.job(*id).await, Ok(Some(_))) {
                        return false;
                    }
                }
                true
            }
        },
    )
    .await;
    until(
        Duration::from_secs(60),
        "every job done on the new master",
        || {
            let (jobs, ids, worker) = (jobs.clone(), ids.clone(), worker.clone());
            async move {
                let _ = worker.tick().await;
                for id in &ids {
                    match jobs.job(*id).await {
                        Ok(Some(job)) if job.state == jobs::driver::JobState::Done => {}
                        _ => return false,
                    }
                }
                true
            }
        },
    )
    .await;
    println!(
        "reshard: {} jobs, {enqueued_during} enqueued during the move, {refused} retryable refusals",
        ids.len()
    );
}
