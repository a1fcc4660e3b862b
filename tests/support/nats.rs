//! A throwaway `nats-server` with JetStream on a free loopback port, its store in a fresh temp
//! dir, killed with the test process (Debian's `nats-server`, installed when missing).

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{apt, wait};

const NATS_SERVER: &str = "/usr/sbin/nats-server";
const SETPRIV: &str = "/usr/bin/setpriv";

/// A running server; killed on drop.
pub struct NatsServer {
    port: u16,
    dir: PathBuf,
    child: Child,
}

impl NatsServer {
    /// A fresh server with JetStream, accepting connections.
    pub fn start(test: &str) -> NatsServer {
        apt::ensure(&[NATS_SERVER], &["nats-server"]);
        let random = uuid::Uuid::new_v4().simple().to_string();
        let dir = std::env::temp_dir().join(format!("jobs-nats-{test}-{}", &random[..12]));
        std::fs::create_dir_all(&dir).expect("the temp dir is writable");
        // The port is free when picked; another process may take it before the server binds.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free loopback port");
            let mut child = Command::new(SETPRIV)
                .args(["--pdeathsig", "KILL", "--", NATS_SERVER])
                .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("nats-server starts");
            let listening = wait::within_blocking(Duration::from_secs(10), || {
                TcpStream::connect(("127.0.0.1", port)).is_ok()
            });
            if listening && child.try_wait().is_ok_and(|status| status.is_none()) {
                return NatsServer { port, dir, child };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("nats-server did not listen on three free loopback ports");
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
