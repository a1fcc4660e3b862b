//! Real Redis for the tests: each test starts its own `redis-server` processes on free loopback
//! ports, in a directory of their own, and they are killed and removed when the guard drops; a
//! cluster is made from such servers by `redis-cli --cluster create`. Never a shared server.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use jobs::driver::{JobDriver, RedisDriver};

use super::apt;
use super::wait::within_blocking as within;

const REDIS_SERVER: &str = "/usr/bin/redis-server";
const REDIS_CLI: &str = "/usr/bin/redis-cli";
const SETPRIV: &str = "/usr/bin/setpriv";

/// How long a server is given to answer its first PING, and a cluster to agree.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// What a server keeps on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persistence {
    /// No AOF, no RDB: everything is lost with the process.
    None,
    /// AOF with `appendfsync always`: every acknowledged write is on disk.
    AofAlways,
    /// AOF with `appendfsync everysec`: up to a second of writes may be lost.
    AofEverySec,
}

/// One `redis-server` on a loopback port.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    persistence: Persistence,
    cluster: bool,
    /// Further `redis-server` arguments (`start_with`).
    extra: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// A fresh server with `persistence`, answering PING.
    pub fn start(test: &str, persistence: Persistence) -> RedisServer {
        RedisServer::start_in(fresh_dir(test), persistence, false, &[])
    }

    /// A fresh server with `persistence` and further `redis-server` arguments (`extra`, such as
    /// `--rename-command FUNCTION ""`), answering PING.
    pub fn start_with(test: &str, persistence: Persistence, extra: &[&str]) -> RedisServer {
        RedisServer::start_in(fresh_dir(test), persistence, false, extra)
    }

    fn start_in(
        dir: PathBuf,
        persistence: Persistence,
        cluster: bool,
        extra: &[&str],
    ) -> RedisServer {
        apt::ensure(&[REDIS_SERVER, REDIS_CLI], &["redis-server", "redis-tools"]);
        let mut server = RedisServer {
            port: free_port(),
            dir,
            persistence,
            cluster,
            extra: extra.iter().map(|a| a.to_string()).collect(),
            child: None,
        };
        // The port is free when picked; another process may take it before the server binds.
        for _ in 0..3 {
            if server.spawn() {
                return server;
            }
            server.kill();
            server.port = free_port();
        }
        panic!("redis-server did not answer PING on three free loopback ports");
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its `redis://` URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Runs `redis-cli` against it with `args`; answers its output, trimmed.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(self.port, args)
    }

    /// Kills the process with SIGKILL (no shutdown save) and waits for it to be gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and directory, with what it kept on disk.
    pub fn restart(&mut self) {
        self.kill();
        assert!(
            self.spawn(),
            "redis-server did not come back on 127.0.0.1:{} within {READY_WITHIN:?}",
            self.port
        );
    }

    /// Starts the process; answers whether it answered PING in time.
    fn spawn(&mut self) -> bool {
        let port = self.port.to_string();
        let mut args: Vec<&str> = vec![
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--protected-mode",
            "yes",
            "--save",
            "",
            "--maxmemory-policy",
            "noeviction",
        ];
        match self.persistence {
            Persistence::None => args.extend(["--appendonly", "no"]),
            Persistence::AofAlways => {
                args.extend(["--appendonly", "yes", "--appendfsync", "always"])
            }
            Persistence::AofEverySec => {
                args.extend(["--appendonly", "yes", "--appendfsync", "everysec"])
            }
        }
        if self.cluster {
            args.extend([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
            ]);
        }
        args.extend(self.extra.iter().map(String::as_str));
        // `setpriv --pdeathsig KILL`: the server dies with the thread that started it, so a
        // test process that exits (or is killed) leaves no server behind.
        let child = Command::new(SETPRIV)
            .args(["--pdeathsig", "KILL", "--", REDIS_SERVER])
            .args(&args)
            .current_dir(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let port = self.port;
        let mut child_alive = || {
            self.child
                .as_mut()
                .is_some_and(|c| c.try_wait().is_ok_and(|status| status.is_none()))
        };
        within(READY_WITHIN, || {
            child_alive() && cli(port, &["ping"]) == "PONG"
        })
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster of `masters` masters with `replicas` replicas each, on loopback ports.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    root: PathBuf,
}

impl RedisCluster {
    /// Starts the nodes, joins them with `redis-cli --cluster create`, and waits until every
    /// node reports `cluster_state:ok`.
    pub fn start(test: &str, masters: usize, replicas: usize) -> RedisCluster {
        let root = fresh_dir(test);
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas))
            .map(|i| {
                let dir = root.join(format!("node-{i}"));
                std::fs::create_dir_all(&dir).expect("the node's directory");
                RedisServer::start_in(dir, Persistence::AofEverySec, true, &[])
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let replicas_arg = replicas.to_string();
        let mut args = vec!["--cluster", "create"];
        args.extend(addresses.iter().map(String::as_str));
        args.extend(["--cluster-replicas", &replicas_arg, "--cluster-yes"]);
        let created = Command::new(REDIS_CLI)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli runs");
        assert!(created.success(), "redis-cli --cluster create failed");
        let cluster = RedisCluster { nodes, root };
        // `cluster_state:ok` can come before every node has heard which nodes are replicas:
        // ready when every node also sees each replica as one.
        let expected_replicas = masters * replicas;
        let settled = |node: &RedisServer| {
            node.cli(&["cluster", "info"]).contains("cluster_state:ok")
                && node
                    .cli(&["cluster", "nodes"])
                    .lines()
                    .filter(|l| l.contains("slave"))
                    .count()
                    == expected_replicas
        };
        assert!(
            within(READY_WITHIN, || cluster.nodes.iter().all(settled)),
            "the cluster did not settle (cluster_state:ok, every replica known) within \
             {READY_WITHIN:?}"
        );
        cluster
    }

    /// Every node, masters and replicas.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// SIGKILLs the node listening on `port`.
    pub fn kill_port(&mut self, port: u16) {
        let node = self
            .nodes
            .iter_mut()
            .find(|n| n.port == port)
            .expect("a node of this cluster");
        node.kill();
    }

    /// The port of the master serving `key`'s slot, as the first live node sees it.
    pub fn master_of(&self, key: &str) -> u16 {
        self.live_master_of(key)
            .unwrap_or_else(|| panic!("no live master serves the slot of {key}"))
    }

    /// The port of the live master serving `key`'s slot; `None` while none does (a failover).
    pub fn live_master_of(&self, key: &str) -> Option<u16> {
        let slot: u16 = self
            .cli(&["cluster", "keyslot", key])
            .parse()
            .expect("a slot");
        let live = self
            .nodes
            .iter()
            .find(|n| n.cli(&["ping"]) == "PONG")
            .expect("a live node");
        for line in live.cli(&["cluster", "nodes"]).lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if !fields.get(2).is_some_and(|f| f.contains("master")) || fields[2].contains("fail") {
                continue;
            }
            let owns = fields[8..].iter().any(|range| {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                match (a.parse::<u16>(), b.parse::<u16>()) {
                    (Ok(a), Ok(b)) => a <= slot && slot <= b,
                    _ => false,
                }
            });
            if owns {
                let address = fields[1].split('@').next().unwrap_or_default();
                return address.rsplit(':').next().and_then(|p| p.parse().ok());
            }
        }
        None
    }

    /// One URL naming every node as a seed (`redis://127.0.0.1:a,127.0.0.1:b,...`).
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis://{}", seeds.join(","))
    }

    /// Runs `redis-cli -c` (following redirections) against the first live node.
    pub fn cli(&self, args: &[&str]) -> String {
        let mut all = vec!["-c"];
        all.extend_from_slice(args);
        let node = self
            .nodes
            .iter()
            .find(|n| n.child.is_some())
            .expect("a live node");
        cli(node.port, &all)
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The test binary's own server, started once on a thread that lives as long as the process
/// (the server dies with that thread): the conformance cases share it, each under a key prefix
/// of its own, as the Postgres cases each take a schema.
pub fn shared_server() -> &'static RedisServer {
    static SERVER: OnceLock<RedisServer> = OnceLock::new();
    SERVER
        .get_or_init(|| on_keeper_thread(|| RedisServer::start("shared", Persistence::AofEverySec)))
}

/// The test binary's own cluster of three masters, started as [`shared_server`] is.
pub fn shared_cluster() -> &'static RedisCluster {
    static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| on_keeper_thread(|| RedisCluster::start("shared_cluster", 3, 0)))
}

/// Runs `start` on a thread that then parks for the rest of the process, so servers it
/// started (with their parent-death signal) live until the process ends.
fn on_keeper_thread<T: Send + 'static>(start: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        tx.send(start()).expect("the starter waits");
        loop {
            std::thread::park();
        }
    });
    rx.recv().expect("the keeper thread starts its servers")
}

/// A prefix no other test uses, from the test's name.
pub fn prefix(test: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let short: String = test
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(40)
        .collect();
    format!(
        "t{}_{}_{short}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A driver on the shared server under a prefix of the test's own.
pub async fn driver(test: &str) -> Arc<dyn JobDriver> {
    let url = format!("{}/?prefix={}", shared_server().url(), prefix(test));
    Arc::new(
        RedisDriver::connect(&url)
            .await
            .expect("the shared Redis server answers"),
    )
}

/// A driver on the shared cluster under a prefix of the test's own.
pub async fn cluster_driver(test: &str) -> Arc<dyn JobDriver> {
    let url = format!("{}/?prefix={}", shared_cluster().url(), prefix(test));
    Arc::new(
        RedisDriver::connect(&url)
            .await
            .expect("the shared Redis cluster answers"),
    )
}

/// `redis-cli -h 127.0.0.1 -p port args...`, its output trimmed ("" when it cannot run).
fn cli(port: u16, args: &[&str]) -> String {
    Command::new(REDIS_CLI)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// A port nothing listens on now: the kernel's pick for a listener that is closed at once.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn fresh_dir(test: &str) -> PathBuf {
    let random = uuid::Uuid::new_v4().simple().to_string();
    let dir = std::env::temp_dir().join(format!("jobs-redis-{test}-{}", &random[..12]));
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    dir
}
