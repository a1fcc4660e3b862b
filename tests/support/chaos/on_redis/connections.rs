//! Cutting worker processes' Redis connections with `CLIENT KILL`. The driver names no client
//! (redis-rs sets no `CLIENT SETNAME`), so a worker's connections are found by their address:
//! the loopback ports of the process's own TCP sockets to the server's port (its
//! `/proc/<pid>/fd` sockets, looked up in `/proc/<pid>/net/tcp`), which `CLIENT LIST` shows as
//! `addr=127.0.0.1:<port>`. That takes every connection of the process: the driver's commands
//! and its wake subscription alike.

use std::collections::HashSet;

use crate::support::redis::RedisServer;

/// The `ip:port` of each TCP connection process `pid` holds to `127.0.0.1:server_port`.
pub fn addresses_of(pid: u32, server_port: u16) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let sockets: HashSet<String> = fds
        .filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            target
                .strip_prefix("socket:[")
                .and_then(|rest| rest.strip_suffix(']'))
                .map(str::to_string)
        })
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    let server = format!("0100007F:{server_port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, remote, inode) = (fields.get(1)?, fields.get(2)?, fields.get(9)?);
            if *remote != server || !sockets.contains(*inode) {
                return None;
            }
            let port = u16::from_str_radix(local.split(':').nth(1)?, 16).ok()?;
            Some(format!("127.0.0.1:{port}"))
        })
        .collect()
}

/// `CLIENT KILL ADDR` for each connection of process `pid`: answers how many went.
pub fn kill_process_connections(server: &RedisServer, pid: u32) -> u64 {
    addresses_of(pid, server.port())
        .iter()
        .map(|addr| killed(&server.cli(&["client", "kill", "addr", addr])))
        .sum()
}

/// `CLIENT KILL TYPE normal`: every ordinary connection but `redis-cli`'s own, the test's too
/// (not the wake subscriptions, which are `pubsub`). Answers how many went.
pub fn kill_every_normal_connection(server: &RedisServer) -> u64 {
    killed(&server.cli(&["client", "kill", "type", "normal"]))
}

/// The count a filtered `CLIENT KILL` answers (0 for an error: the connection was gone).
fn killed(answer: &str) -> u64 {
    answer.trim().parse().unwrap_or(0)
}
