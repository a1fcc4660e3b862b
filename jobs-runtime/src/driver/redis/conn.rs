//! The connection: one server through redis-rs' `ConnectionManager` (multiplexed, reconnects
//! by itself) or a cluster through its async `ClusterConnection` (follows `MOVED` and `ASK`,
//! refreshes the slot map); the scripts and commands the driver sends; and a Redis error as
//! the crate's error, with its code and retry class.
//!
//! - a refused login (`WRONGPASS`, `NOAUTH`, `NOPERM`): `X_DRIVER_AUTH_FAILED`, terminal;
//! - a connection refused, dropped or timed out, a cluster that is down or resharding
//!   (`CLUSTERDOWN`, `TRYAGAIN`, `MOVED`/`ASK` after redis-rs' own retries), a server loading
//!   its data (`LOADING`), a replica answering a write (`READONLY`, during a failover):
//!   `X_DRIVER_UNAVAILABLE`, retryable;
//! - memory full (`OOM`, under the `noeviction` policy the guide requires):
//!   `X_DRIVER_UNAVAILABLE`, retryable (a value over `proto-max-bulk-len` never reaches the
//!   server: the driver refuses it first, `mod.rs`);
//! - a refusal a script raised itself (`X_...` as the reply's first word): that code;
//! - anything else: `X_DRIVER`, retryable, with Redis' own words (which name commands, never
//!   values).

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::{Cmd, ErrorKind, FromRedisValue, RedisError, ServerErrorKind, Value};

use super::scripts::{is_library_name, Call, LIBRARY};

use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError};

/// One server or a cluster; cloning is cheap (both multiplex one connection per node).
#[derive(Clone)]
pub(super) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conn::Single(_) => "Conn::Single",
            Conn::Cluster(_) => "Conn::Cluster",
        })
    }
}

impl Conn {
    /// Runs one of the library's functions in the slot of its first key. A server without the
    /// library (flushed, restarted without persistence, a master added to the cluster since
    /// this driver connected) answers "Function not found": the library is loaded on every
    /// master and the call made once more.
    pub(super) async fn script<T: FromRedisValue>(
        &self,
        op: Op,
        call: &Call,
    ) -> Result<T, JobError> {
        let cmd = call.command();
        match self.send(cmd).await {
            Err(error) if function_missing(&error) => {
                self.load_library(op).await?;
                self.send(cmd).await
            }
            result => result,
        }
        .map_err(|e| classify(op, e))
    }

    /// Loads this build's function library on every master. Its name carries its digest, so
    /// `REPLACE` only ever puts back the same library, and another build's stays as it is.
    pub(super) async fn load_library(&self, op: Op) -> Result<(), JobError> {
        let mut cmd = redis::cmd("FUNCTION");
        cmd.arg("LOAD").arg("REPLACE").arg(&LIBRARY.source);
        self.on_every_master(op, cmd).await.map(drop)
    }

    /// Deletes the libraries other builds of this driver loaded (named `jobs_<digest>`, but not
    /// this build's), so a server does not keep one for every deploy. A build still running
    /// finds its library gone at its next call and loads it again (`script`). Housekeeping: a
    /// failure is logged, not answered.
    pub(super) async fn prune_other_libraries(&self, op: Op) {
        let mut list = redis::cmd("FUNCTION");
        list.arg("LIST").arg("LIBRARYNAME").arg("jobs_*");
        let mut others: Vec<String> = match self.on_every_master(op, list).await {
            Ok(texts) => texts
                .into_iter()
                .filter(|t| is_library_name(t) && *t != LIBRARY.name)
                .collect(),
            Err(error) => {
                tracing::warn!(code = ?error.code(), "could not list the function libraries of other builds");
                return;
            }
        };
        others.sort_unstable();
        others.dedup();
        for name in others {
            let mut delete = redis::cmd("FUNCTION");
            delete.arg("DELETE").arg(&name);
            // A master without it answers "Library not found": nothing to do there.
            let _ = self.on_every_master(op, delete).await;
        }
    }

    async fn send<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T, RedisError> {
        match self.clone() {
            Conn::Single(mut c) => cmd.query_async(&mut c).await,
            Conn::Cluster(mut c) => cmd.query_async(&mut c).await,
        }
    }

    /// Runs one command.
    pub(super) async fn query<T: FromRedisValue>(&self, op: Op, cmd: &Cmd) -> Result<T, JobError> {
        self.send(cmd).await.map_err(|e| classify(op, e))
    }

    /// Runs one command on every master (one server: on it), answering each one's text.
    pub(super) async fn on_every_master(&self, op: Op, cmd: Cmd) -> Result<Vec<String>, JobError> {
        let value = match self.clone() {
            Conn::Single(mut c) => cmd.query_async::<Value>(&mut c).await,
            Conn::Cluster(mut c) => {
                c.route_command(
                    cmd,
                    RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None)),
                )
                .await
            }
        }
        .map_err(|e| classify(op, e))?;
        let mut texts = Vec::new();
        collect_texts(&value, &mut texts);
        Ok(texts)
    }

    /// `INFO <section>` of every master.
    pub(super) async fn info_everywhere(&self, section: &str) -> Result<Vec<String>, JobError> {
        let mut cmd = redis::cmd("INFO");
        cmd.arg(section);
        self.on_every_master(Op::Connect, cmd).await
    }

    /// `CONFIG GET <name>`: every master's value; `None` when `CONFIG` is renamed away. The
    /// caller decides what a difference between masters means.
    pub(super) async fn config_values(&self, name: &str) -> Result<Option<Vec<String>>, JobError> {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg(name);
        match self.on_every_master(Op::Connect, cmd).await {
            // Pairs of (name, value) per node: the values.
            Ok(texts) => Ok(Some(texts.into_iter().filter(|t| t != name).collect())),
            Err(e) if e.is(ErrorCode::Driver) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn collect_texts(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(bytes) => out.push(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => out.push(s.clone()),
        Value::Array(items) | Value::Set(items) => items.iter().for_each(|v| collect_texts(v, out)),
        Value::Map(pairs) => pairs.iter().for_each(|(_, v)| collect_texts(v, out)),
        _ => {}
    }
}

/// Whether a server answered that it has no such function (`ERR Function not found`).
fn function_missing(error: &RedisError) -> bool {
    error.code() == Some("ERR") && error.detail() == Some("Function not found")
}

/// The crate's error for a Redis failure in `op`.
pub(super) fn classify(op: Op, error: RedisError) -> JobError {
    // A refusal our own scripts raised: `X_CODE message`.
    if let Some(code) = error.code().and_then(ErrorCode::parse) {
        return JobError::new(code, error.detail().unwrap_or_default().to_string());
    }
    let code = match error.kind() {
        ErrorKind::AuthenticationFailed => ErrorCode::DriverAuthFailed,
        ErrorKind::Server(ServerErrorKind::NoPerm) => ErrorCode::DriverAuthFailed,
        ErrorKind::InvalidClientConfig => ErrorCode::DriverUrlInvalid,
        ErrorKind::Io | ErrorKind::ClusterConnectionNotFound => ErrorCode::DriverUnavailable,
        ErrorKind::Server(
            ServerErrorKind::BusyLoading
            | ServerErrorKind::TryAgain
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
            | ServerErrorKind::ReadOnly
            | ServerErrorKind::Moved
            | ServerErrorKind::Ask,
        ) => ErrorCode::DriverUnavailable,
        _ if error.is_timeout()
            || error.is_connection_dropped()
            || error.is_connection_refusal()
            || error.is_io_error() =>
        {
            ErrorCode::DriverUnavailable
        }
        _ => match error.code() {
            Some("WRONGPASS" | "NOAUTH") => ErrorCode::DriverAuthFailed,
            // Memory full under `noeviction`: writes come back once workers drain the queue.
            Some("OOM") => ErrorCode::DriverUnavailable,
            _ => ErrorCode::Driver,
        },
    };
    let detail = match (code, error.code()) {
        (ErrorCode::DriverAuthFailed, _) => {
            "the Redis server refused the URL's user or password".into()
        }
        (_, Some("OOM")) => "the Redis server is out of memory (`maxmemory`): it refuses \
             writes until memory is freed or raised"
            .into(),
        _ => format!(
            "{}: {}",
            error.category(),
            error.detail().unwrap_or_default()
        ),
    };
    JobError::new(code, format!("redis {op} failed: {detail}")).with_cause(error)
}
