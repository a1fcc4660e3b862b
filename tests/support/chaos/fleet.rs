//! Chaos worker processes (`tests/bin/chaos_worker.rs`) on one store (Postgres, SQLite, or
//! Redis through `on_redis/`), and the signals the scenarios send them. A worker still running when its handle drops is SIGKILLed, so a
//! failing test leaves no process behind.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

use crate::support::store::Store;

/// One worker process.
pub struct Worker {
    /// Its name on the database (Postgres' `application_name`, the SQLite audit's writer).
    pub app: String,
    pub child: Child,
    pub stdout: BufReader<ChildStdout>,
}

/// Starts the worker processes of one test.
pub struct Fleet {
    url: String,
    schema: String,
    /// Short and unique per test: application names are global to the server.
    tag: String,
    generation: u32,
    env: Vec<(&'static str, String)>,
}

impl Fleet {
    /// Workers on `store`, each with `env` added to its environment.
    pub fn new(store: &Store, env: &[(&'static str, &str)]) -> Self {
        Fleet::on(store.url(), store.schema(), env)
    }

    /// Workers on the queue at `url` (`DATABASE_URL`), with `schema` as `JOBS_SCHEMA`, each
    /// with `env` added to its environment.
    pub fn on(url: String, schema: &str, env: &[(&'static str, &str)]) -> Self {
        Fleet {
            url,
            schema: schema.to_string(),
            tag: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            generation: 0,
            env: env.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        }
    }

    /// Starts one worker process and waits (bounded by the process) for its `ready`.
    pub fn spawn(&mut self) -> Worker {
        self.generation += 1;
        let app = format!("chaos-{}-{}", self.tag, self.generation);
        let mut command = Command::new(env!("CARGO_BIN_EXE_chaos-worker"));
        command
            .env("DATABASE_URL", &self.url)
            .env("JOBS_SCHEMA", &self.schema)
            .env("CHAOS_APP", &app)
            .env("RUST_LOG", "off")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in &self.env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("the chaos worker starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("the chaos worker reports");
        assert_eq!(line.trim(), "ready", "worker {app} did not start");
        Worker { app, child, stdout }
    }
}

impl Worker {
    /// SIGKILL, and reap.
    pub fn sigkill(self) {
        drop(self);
    }

    pub fn sigterm(&self) {
        self.signal("TERM");
    }

    /// Sends `signal` (`TERM`, `STOP`, `CONT`, ...) with `kill`.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "SIG{signal} {}", self.app);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
