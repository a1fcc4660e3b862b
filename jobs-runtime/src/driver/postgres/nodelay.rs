//! `TCP_NODELAY` on the driver's connections.
//!
//! sqlx 0.9.0 stopped setting it (transact-rs/sqlx#4335), and offers no way to reach the socket.
//! Without it, Nagle's algorithm holds back the tail of any message longer than one write (an
//! `enqueue_many`'s arrays, sent as 16 KB TLS records) until the server acknowledges the rest,
//! and the server delays that acknowledgement by up to 40 ms on Linux: measured here, one
//! 1,000-job `enqueue_many` took 9 ms in the server and 40-50 ms at the caller.
//!
//! So the connection asks the server which port it came from (`inet_client_port()`), and the
//! one socket of this process bound to that port and connected to the server's port gets the
//! option. Nothing else is touched: a socket is changed only after both of its addresses match.
//! Where the ports do not match (a proxy or NAT between the two), nothing is found and nothing
//! changes. Remove this when sqlx sets the option again.

use sqlx::postgres::PgConnection;

/// Sets `TCP_NODELAY` on `conn`'s socket when it can be found; a failure changes nothing.
pub(super) async fn apply(conn: &mut PgConnection, server_port: u16) {
    if let Some(local_port) = client_port(conn).await {
        with_socket(local_port, server_port, |socket| {
            let _ = socket.set_tcp_nodelay(true);
        });
    }
}

/// Whether `conn`'s socket has `TCP_NODELAY`; `None` when it cannot be found.
pub(super) async fn is_set(conn: &mut PgConnection, server_port: u16) -> Option<bool> {
    let local_port = client_port(conn).await?;
    with_socket(local_port, server_port, |socket| socket.tcp_nodelay().ok()).flatten()
}

/// The port this connection left from, as the server saw it; `None` over a Unix socket.
async fn client_port(conn: &mut PgConnection) -> Option<u16> {
    let port = sqlx::query_scalar::<_, Option<i32>>("select inet_client_port()")
        .fetch_one(conn)
        .await
        .ok()??;
    u16::try_from(port).ok()
}

/// Runs `f` on the one socket of this process bound to `local_port` and connected to
/// `server_port`.
#[cfg(unix)]
fn with_socket<T>(
    local_port: u16,
    server_port: u16,
    f: impl FnOnce(socket2::SockRef<'_>) -> T,
) -> Option<T> {
    use std::os::fd::{BorrowedFd, RawFd};

    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    for entry in entries.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<RawFd>().ok())
        else {
            continue;
        };
        // SAFETY: the descriptor is only read (its addresses) and given one socket option for
        // the duration of this borrow; if another thread closes it meanwhile, the calls fail.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&fd);
        let port_is = |addr: std::io::Result<socket2::SockAddr>, port| {
            addr.ok()
                .and_then(|a| a.as_socket())
                .is_some_and(|a| a.port() == port)
        };
        if port_is(socket.local_addr(), local_port) && port_is(socket.peer_addr(), server_port) {
            return Some(f(socket));
        }
    }
    None
}

#[cfg(not(unix))]
fn with_socket<T>(
    _local_port: u16,
    _server_port: u16,
    _f: impl FnOnce(socket2::SockRef<'_>) -> T,
) -> Option<T> {
    None
}
