//! Reading a Redis URL and connecting: one server (`redis://`, `rediss://`) or a cluster (the
//! seed nodes in one URL, `redis://h1:7000,h2:7001`), the driver's options from the query, and
//! the check of the server's persistence against `require_durability`.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;

use super::conn::{classify, Conn};
use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError};

/// How long a connect may take before a silent server is reported `X_DRIVER_UNAVAILABLE`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one command may wait for its answer.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// The prefix every key starts with when the URL names none.
pub const DEFAULT_PREFIX: &str = "jobs";

/// What the server must keep of an acknowledged write, checked at connect
/// (`?require_durability=` in the URL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Durability {
    /// Nothing is required (the default): a server keeping nothing on disk is accepted, with
    /// a warning in the log.
    #[default]
    None,
    /// `appendonly yes` with `appendfsync everysec` or `always`: a crash of the server loses
    /// at most about a second of acknowledged writes.
    EverySec,
    /// `appendonly yes` with `appendfsync always`: every acknowledged write is on disk.
    Always,
}

impl Durability {
    fn parse(text: &str) -> Option<Durability> {
        match text {
            "none" => Some(Durability::None),
            "everysec" => Some(Durability::EverySec),
            "always" => Some(Durability::Always),
            _ => None,
        }
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::EverySec => "everysec",
            Durability::Always => "always",
        }
    }
}

/// The options a Redis URL carries, or a caller sets on [`super::RedisDriver::connect_with`].
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// The server's URL (`redis://`, `rediss://`), one per seed node for a cluster.
    pub(super) nodes: Vec<String>,
    /// Whether the nodes are a Redis Cluster's.
    pub(super) cluster: bool,
    /// What every key starts with (inside its hash tag): one store per prefix.
    pub prefix: String,
    /// What the server must keep of an acknowledged write.
    pub require_durability: Durability,
    /// How long a connect may take.
    pub connect_timeout: Duration,
    /// How long one command may wait for its answer.
    pub response_timeout: Duration,
}

impl RedisOptions {
    /// Reads a URL: `redis://[user:password@]host:port[/db][?options]`, `rediss://...` for TLS,
    /// and for a cluster the seed nodes joined by commas (`redis://h1:7000,h2:7001`) or one
    /// node with `?cluster=true`. Options: `prefix` (default `jobs`; no braces),
    /// `require_durability` (`none`, `everysec`, `always`), `connect_timeout_ms`,
    /// `response_timeout_ms`, `cluster`. The URL is never repeated in an error (it may hold a
    /// password).
    pub fn from_url(url: &str) -> Result<RedisOptions, JobError> {
        let invalid = |why: &str| {
            JobError::new(
                ErrorCode::DriverUrlInvalid,
                format!("the Redis URL is malformed: {why}"),
            )
            .with_fix(
                "pass redis://[user:password@]host:port[/db][?prefix=...&require_durability=always], \
                 rediss:// for TLS, or the seed nodes of a cluster joined by commas \
                 (redis://host1:7000,host2:7001)",
            )
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| invalid("it has no `://`"))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "redis" && scheme != "rediss" {
            return Err(invalid("the scheme is neither redis nor rediss"));
        }
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = before_query
            .split_once('/')
            .map(|(a, p)| (a, format!("/{p}")))
            .unwrap_or((before_query, String::new()));
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((user, hosts)) => (Some(user), hosts),
            None => (None, authority),
        };
        if hosts.is_empty() {
            return Err(invalid("it names no host"));
        }
        let mut options = RedisOptions {
            nodes: Vec::new(),
            cluster: hosts.contains(','),
            prefix: DEFAULT_PREFIX.to_string(),
            require_durability: Durability::None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match name {
                "prefix" => options.prefix = value.to_string(),
                "require_durability" => {
                    options.require_durability = Durability::parse(value).ok_or_else(|| {
                        invalid("`require_durability` is none of none, everysec, always")
                    })?
                }
                "connect_timeout_ms" => {
                    options.connect_timeout = Duration::from_millis(
                        value
                            .parse()
                            .map_err(|_| invalid("`connect_timeout_ms` is not a number"))?,
                    )
                }
                "response_timeout_ms" => {
                    options.response_timeout = Duration::from_millis(
                        value
                            .parse()
                            .map_err(|_| invalid("`response_timeout_ms` is not a number"))?,
                    )
                }
                "cluster" => {
                    options.cluster = match value {
                        "true" | "1" | "" => true,
                        "false" | "0" => false,
                        _ => return Err(invalid("`cluster` is neither true nor false")),
                    }
                }
                // Left to redis-rs (e.g. `protocol`): passed through on each node's URL.
                _ => {}
            }
        }
        check_prefix(&options.prefix)?;
        let passthrough: Vec<&str> = query
            .split('&')
            .filter(|p| {
                let name = p.split_once('=').map_or(*p, |(n, _)| n);
                !p.is_empty()
                    && ![
                        "prefix",
                        "require_durability",
                        "connect_timeout_ms",
                        "response_timeout_ms",
                        "cluster",
                    ]
                    .contains(&name)
            })
            .collect();
        for host in hosts.split(',') {
            if host.is_empty() {
                return Err(invalid("a node in the list is empty"));
            }
            let mut node = format!("{scheme}://");
            if let Some(user) = userinfo {
                node.push_str(user);
                node.push('@');
            }
            node.push_str(host);
            node.push_str(&path);
            if !passthrough.is_empty() {
                node.push('?');
                node.push_str(&passthrough.join("&"));
            }
            redis::parse_redis_url(&node).ok_or_else(|| invalid("a node does not parse"))?;
            options.nodes.push(node);
        }
        if options.cluster && path.len() > 1 && path != "/0" {
            return Err(invalid("a cluster has only database 0"));
        }
        Ok(options)
    }

    /// The same options under another prefix (a test's own store on a shared server).
    pub fn with_prefix(mut self, prefix: &str) -> Result<RedisOptions, JobError> {
        check_prefix(prefix)?;
        self.prefix = prefix.to_string();
        Ok(self)
    }
}

/// A prefix is printable text without braces: a brace in it would change every key's hash tag.
fn check_prefix(prefix: &str) -> Result<(), JobError> {
    if prefix.is_empty()
        || prefix.len() > 64
        || prefix
            .chars()
            .any(|c| c == '{' || c == '}' || c.is_control() || c.is_whitespace())
    {
        return Err(JobError::new(
            ErrorCode::DriverUrlInvalid,
            "the Redis key prefix must be 1 to 64 printable characters without braces or spaces",
        )
        .with_fix("pass ?prefix=<name> with letters, digits, `-`, `_`, `.` or `:`"));
    }
    Ok(())
}

/// Connects to the nodes the options name, and checks the server's persistence.
pub(super) async fn connect(options: &RedisOptions) -> Result<Conn, JobError> {
    let conn = if options.cluster {
        // A redirect or a `TRYAGAIN` is retried a few times within half a second; past that
        // the call answers X_DRIVER_UNAVAILABLE and the worker's own backoff takes over
        // (redis-rs' defaults wait up to minutes inside one call).
        let client = ClusterClientBuilder::new(options.nodes.clone())
            .connection_timeout(options.connect_timeout)
            .response_timeout(options.response_timeout)
            .retries(4)
            .min_retry_wait(10)
            .max_retry_wait(200)
            .retry_wait_formula(10, 2)
            .build()
            .map_err(|e| classify(Op::Connect, e))?;
        let connection = tokio::time::timeout(
            options.connect_timeout + Duration::from_secs(1),
            client.get_async_connection(),
        )
        .await
        .map_err(|_| silent(options))?
        .map_err(|e| classify(Op::Connect, e))?;
        Conn::Cluster(connection)
    } else {
        let client =
            redis::Client::open(options.nodes[0].as_str()).map_err(|e| classify(Op::Connect, e))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.connect_timeout))
            .set_response_timeout(Some(options.response_timeout))
            .set_number_of_retries(2);
        let connection = tokio::time::timeout(
            options.connect_timeout + Duration::from_secs(1),
            ConnectionManager::new_with_config(client, config),
        )
        .await
        .map_err(|_| silent(options))?
        .map_err(|e| classify(Op::Connect, e))?;
        Conn::Single(connection)
    };
    load_functions(&conn).await?;
    check_eviction(&conn).await?;
    check_durability(&conn, options.require_durability).await?;
    Ok(conn)
}

/// A server that evicts any key under memory pressure (`allkeys-*`) would drop queued jobs
/// without a trace: refused. The `volatile-*` policies evict only keys with an expiry, and the
/// driver sets none, so they keep every job as `noeviction` does.
async fn check_eviction(conn: &Conn) -> Result<(), JobError> {
    let policies = conn.config_values("maxmemory-policy").await?;
    let evicting = policies
        .into_iter()
        .flatten()
        .find(|p| p.starts_with("allkeys"));
    if let Some(policy) = evicting {
        return Err(JobError::new(
            ErrorCode::DriverDurabilityInsufficient,
            format!(
                "the Redis server evicts any key when its memory is full (maxmemory-policy \
                 {policy}): queued jobs would vanish"
            ),
        )
        .with_fix(
            "set `maxmemory-policy noeviction` (in redis.conf and with CONFIG SET): a full \
             server then refuses new jobs (retryable) instead of dropping queued ones",
        ));
    }
    Ok(())
}

/// The largest value every master takes in one argument (`proto-max-bulk-len`; Redis'
/// default when `CONFIG` is renamed away).
pub(super) async fn largest_value(conn: &Conn) -> Result<usize, JobError> {
    const REDIS_DEFAULT: usize = 512 * 1024 * 1024;
    Ok(conn
        .config_values("proto-max-bulk-len")
        .await?
        .into_iter()
        .flatten()
        .filter_map(|v| v.parse().ok())
        .min()
        .unwrap_or(REDIS_DEFAULT))
}

/// The driver is a library of Redis functions, loaded here on every master: a server older
/// than Redis 7.0 (no functions), or a user without `+@scripting` (or `FUNCTION`/`FCALL`
/// renamed away), is refused at connect, not at the first enqueue. Other builds' libraries are
/// deleted (`Conn::prune_other_libraries`).
async fn load_functions(conn: &Conn) -> Result<(), JobError> {
    match conn.load_library(Op::Connect).await {
        Ok(()) => {
            conn.prune_other_libraries(Op::Connect).await;
            Ok(())
        }
        Err(error) if error.is(ErrorCode::DriverUnavailable) => Err(error),
        Err(error) if error.message().contains("unknown command") => Err(JobError::new(
            ErrorCode::DriverUrlInvalid,
            "the Redis server has no functions (`FUNCTION LOAD`), and the driver is a library of them",
        )
        .with_fix("point the URL at Redis 7.0 or newer, with FUNCTION and FCALL not renamed away")),
        Err(_) => Err(JobError::new(
            ErrorCode::DriverAuthFailed,
            "the Redis server refuses Lua functions to this user, and the driver is a library of them",
        )
        .with_fix(
            "grant the URL's user scripting (`ACL SETUSER <user> +@scripting`, beside the \
             commands on keys it needs: `+@all ~<prefix>*` or narrower), and do not rename \
             FUNCTION or FCALL away",
        )),
    }
}

fn silent(options: &RedisOptions) -> JobError {
    JobError::new(
        ErrorCode::DriverUnavailable,
        format!(
            "the Redis server did not answer within the connect timeout ({} ms)",
            options.connect_timeout.as_millis()
        ),
    )
}

/// What the server keeps: `appendonly` and `appendfsync`, read with `CONFIG GET` (or, where
/// `CONFIG` is renamed away, `INFO persistence`) on every node.
pub(super) async fn persistence(conn: &Conn) -> Result<Durability, JobError> {
    let infos: Vec<String> = conn.info_everywhere("persistence").await?;
    if infos
        .iter()
        .any(|info| !info.lines().any(|l| l.trim() == "aof_enabled:1"))
    {
        return Ok(Durability::None);
    }
    // AOF is on everywhere: the weakest master's fsync policy answers.
    let Some(policies) = conn.config_values("appendfsync").await? else {
        // CONFIG renamed away: the fsync policy is unknown; take the weaker.
        return Ok(Durability::EverySec);
    };
    Ok(policies
        .iter()
        .map(|policy| match policy.as_str() {
            "always" => Durability::Always,
            "everysec" => Durability::EverySec,
            // `no` leaves the flush to the kernel: up to 30 s on Linux.
            _ => Durability::None,
        })
        .min()
        .unwrap_or(Durability::EverySec))
}

async fn check_durability(conn: &Conn, required: Durability) -> Result<(), JobError> {
    let kept = persistence(conn).await?;
    if kept < required {
        return Err(JobError::new(
            ErrorCode::DriverDurabilityInsufficient,
            format!(
                "the Redis server keeps `{}` and the URL requires `{}`",
                kept.as_str(),
                required.as_str()
            ),
        ));
    }
    if kept == Durability::None {
        tracing::warn!(
            "the Redis server keeps nothing on disk (appendonly no): a restart loses every job; \
             see the guide `Redis in production`"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_one_server_or_a_cluster() {
        let one = RedisOptions::from_url("redis://:pw@127.0.0.1:6379/2?prefix=t1").unwrap();
        assert!(!one.cluster);
        assert_eq!(one.nodes, ["redis://:pw@127.0.0.1:6379/2"]);
        assert_eq!(one.prefix, "t1");
        let many = RedisOptions::from_url(
            "redis://127.0.0.1:7000,127.0.0.1:7001?require_durability=always",
        )
        .unwrap();
        assert!(many.cluster);
        assert_eq!(many.nodes.len(), 2);
        assert_eq!(many.require_durability, Durability::Always);
        assert!(
            RedisOptions::from_url("redis://127.0.0.1:7000?cluster=true")
                .unwrap()
                .cluster
        );
        let tls = RedisOptions::from_url("rediss://cache.example:6380").unwrap();
        assert_eq!(tls.nodes, ["rediss://cache.example:6380"]);
    }

    #[test]
    fn a_bad_url_is_refused_without_repeating_it() {
        for url in [
            "redis://",
            "http://127.0.0.1:6379",
            "redis://h:1?prefix={x}",
            "redis://h:1?prefix=",
            "redis://h:1?require_durability=maybe",
            "redis://secret-pw@h:1,h:2/3",
            "redis://h:1,,h:2",
        ] {
            let refused = RedisOptions::from_url(url).unwrap_err();
            assert!(refused.is(ErrorCode::DriverUrlInvalid), "{url}: {refused}");
            assert!(!refused.to_string().contains("secret-pw"), "{refused}");
        }
    }
}
