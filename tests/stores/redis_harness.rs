//! The Redis harness the Redis driver's tests will stand on (issue 39): a server of the test's
//! own on a free loopback port whose persistence is what it says, and a cluster made of such
//! servers whose hash tags keep a queue's keys in one slot. No driver yet: these check the
//! harness against the real binaries.

use crate::support;

use support::redis::{Persistence, RedisCluster, RedisServer};

/// With `appendfsync always`, what the server acknowledged is there after a SIGKILL.
#[test]
fn an_aof_always_server_keeps_acknowledged_writes_across_a_sigkill() {
    let mut server = RedisServer::start("aof_always", Persistence::AofAlways);
    assert_eq!(
        server.cli(&["config", "get", "appendfsync"]),
        "appendfsync\nalways"
    );
    for i in 0..20 {
        assert_eq!(
            server.cli(&["rpush", "acked", &i.to_string()]),
            (i + 1).to_string()
        );
    }
    server.kill();
    assert_eq!(server.cli(&["ping"]), "", "killed: nothing answers");
    server.restart();
    assert_eq!(server.cli(&["llen", "acked"]), "20");
}

/// Without persistence the same SIGKILL loses everything: the harness's settings are real.
#[test]
fn a_server_without_persistence_forgets_everything_on_a_sigkill() {
    let mut server = RedisServer::start("no_persistence", Persistence::None);
    assert_eq!(
        server.cli(&["config", "get", "appendonly"]),
        "appendonly\nno"
    );
    assert_eq!(server.cli(&["set", "k", "v"]), "OK");
    server.restart();
    assert_eq!(server.cli(&["exists", "k"]), "0");
}

/// Three masters share the 16,384 slots; keys with one hash tag land in one slot (one script
/// can touch them all), and a dropped cluster leaves no node listening.
#[test]
fn a_three_master_cluster_keeps_a_hash_tag_in_one_slot() {
    let ports: Vec<u16>;
    {
        let cluster = RedisCluster::start("cluster", 3, 0);
        assert!(cluster.cli(&["cluster", "info"]).contains("cluster_size:3"));
        let slot = |key: &str| cluster.cli(&["cluster", "keyslot", key]);
        assert_eq!(slot("{q:email}:ready"), slot("{q:email}:job:1"));
        assert_ne!(slot("{q:email}:ready"), slot("{q:billing}:ready"));
        assert!(cluster.url().starts_with("redis://127.0.0.1:"));
        for i in 0..30 {
            assert_eq!(cluster.cli(&["set", &format!("spread:{i}"), "x"]), "OK");
        }
        let holding = cluster
            .nodes()
            .iter()
            .filter(|n| n.cli(&["dbsize"]) != "0")
            .count();
        assert!(
            holding >= 2,
            "30 keys over three masters land on more than one"
        );
        ports = cluster.nodes().iter().map(RedisServer::port).collect();
    }
    for port in ports {
        let answer = std::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "ping"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        assert_ne!(answer, "PONG", "node {port} still answers after the drop");
    }
}

/// With a replica for each master (what a failover test needs), every master has its replica.
#[test]
fn a_cluster_with_replicas_gives_every_master_one() {
    let cluster = RedisCluster::start("cluster_replicas", 3, 1);
    assert_eq!(cluster.nodes().len(), 6);
    let nodes = cluster.cli(&["cluster", "nodes"]);
    assert_eq!(
        nodes.lines().filter(|l| l.contains("master")).count(),
        3,
        "{nodes}"
    );
    assert_eq!(
        nodes.lines().filter(|l| l.contains("slave")).count(),
        3,
        "{nodes}"
    );
}
