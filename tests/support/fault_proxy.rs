//! A fault-injecting TCP proxy on loopback, between the drivers and a real server (Postgres,
//! Redis): it listens on `127.0.0.1` on a free port and forwards each connection it accepts to
//! the server's loopback address, and on a seeded schedule it delays chunks of bytes, resets
//! connections at once (after forwarding a seeded part of the chunk: a torn message), stalls
//! them then resets them (a path that drops everything until it gives up), and refuses new
//! connections for a while.
//!
//! The schedule. Every decision is drawn from a [`SplitMix64`] stream derived from the seed and
//! what it decides about: stream 0 decides for each accepted connection, in accept order,
//! whether a refusal spell starts; connection `i` (counted from 1 in accept order) has streams
//! `2i` (its bytes towards the server) and `2i + 1` (towards the client), one draw per chunk
//! read. So the decision sequence is a pure function of the seed: the `k`-th chunk read towards
//! the server on the `i`-th connection always gets the same decision. The real-time
//! interleaving is not: which bytes make a chunk (how the kernel splits reads), which
//! connection is accepted `i`-th, which request a chunk carries, and how long a refusal spell
//! lasts in connections all follow the processes' timing. A seed replays the same schedule,
//! not the same run. Decisions are drawn while the proxy holds fire too (and not applied), so
//! the schedule does not depend on when it opened fire.
//!
//! Every fault applied is counted by kind ([`FaultCounts`]) and kept, with its monotonic time
//! since the proxy started, in a small log of the latest ([`FaultProxy::log`]), so a test can
//! print what it injected and assert faults actually happened. Dropping the handle stops the
//! proxy: its runtime is shut down, which aborts every task, closes the listener and every
//! connection. Traffic stays on loopback: the upstream must be a loopback address.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// The latest faults kept in the log.
const LOG_CAP: usize = 256;

/// The largest chunk one read forwards; each chunk read is one decision.
const CHUNK: usize = 16 * 1024;

/// A small seeded generator (SplitMix64). Its own, rather than `rand`'s `StdRng`, whose output
/// may change between `rand` versions: a printed seed must replay the same schedule later.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Stream `stream` of `seed`: distinct streams of one seed are unrelated.
    pub fn stream(seed: u64, stream: u64) -> SplitMix64 {
        let mut seeding = SplitMix64(seed);
        let base = seeding.next();
        let mut mixing = SplitMix64(stream.wrapping_add(0x5851_F42D_4C95_7F2D));
        SplitMix64(base ^ mixing.next())
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n` is 0); the modulo bias is nothing at these sizes.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }
}

/// How often each fault is chosen, and how long each lasts.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Per 10 000 chunks: reset both sides at once (after forwarding a seeded part).
    pub reset: u64,
    /// Per 10 000 chunks: hold the chunk for [`Schedule::stall_ms`], then reset both sides.
    pub stall: u64,
    /// Per 10 000 chunks: hold the chunk for a delay, then forward it.
    pub delay: u64,
    /// Per 1 000 new connections: refuse it, and every new one for [`Schedule::refuse_ms`].
    pub refuse: u64,
    /// A stall's length, in ms (inclusive bounds).
    pub stall_ms: (u64, u64),
    /// A refusal spell's length, in ms (inclusive bounds).
    pub refuse_ms: (u64, u64),
}

impl Default for Schedule {
    /// About one chunk in 400 reset at once, one in 1 000 stalled then reset, one in 20
    /// delayed; one new connection in 8 starts a refusal spell. Stalls reach past a 1.5 s
    /// lease, so some claims lapse while their holder waits.
    fn default() -> Self {
        Schedule {
            reset: 25,
            stall: 10,
            delay: 500,
            refuse: 125,
            stall_ms: (300, 2_500),
            refuse_ms: (100, 1_000),
        }
    }
}

/// What happens to one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Pass,
    /// Hold the chunk this many ms, then forward it.
    Delay(u64),
    /// Forward this many thousandths of the chunk, then reset both sides.
    Reset(u64),
    /// Hold the chunk this many ms, then reset both sides.
    StallReset(u64),
}

impl Schedule {
    /// The decision for one chunk: always three draws, so each decision takes the same room in
    /// its stream.
    fn chunk(&self, rng: &mut SplitMix64) -> Action {
        let roll = rng.below(10_000);
        let a = rng.next();
        let b = rng.next();
        if roll < self.reset {
            Action::Reset(a % 1_000)
        } else if roll < self.reset + self.stall {
            let (lo, hi) = self.stall_ms;
            Action::StallReset(lo + a % (hi - lo + 1))
        } else if roll < self.reset + self.stall + self.delay {
            // A few ms most often, up to a few hundred now and then.
            let (lo, hi) = match a % 4 {
                0 | 1 => (2, 20),
                2 => (20, 100),
                _ => (100, 400),
            };
            Action::Delay(lo + b % (hi - lo + 1))
        } else {
            Action::Pass
        }
    }

    /// The decision for one new connection: `Some(ms)` starts a refusal spell of `ms`. Always
    /// two draws.
    fn accept(&self, rng: &mut SplitMix64) -> Option<u64> {
        let roll = rng.below(1_000);
        let a = rng.next();
        let (lo, hi) = self.refuse_ms;
        (roll < self.refuse).then_some(lo + a % (hi - lo + 1))
    }
}

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A chunk held, then forwarded.
    Delay,
    /// Both sides reset at once (a part of the chunk forwarded first).
    Reset,
    /// A chunk held, then both sides reset.
    StallReset,
    /// A refusal spell began: this connection and every new one until it ends are reset as
    /// soon as accepted.
    RefusalSpell,
    /// A new connection reset as soon as accepted, inside a spell (its first included).
    Refused,
}

/// Which way the bytes of a chunk were going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// One fault applied.
#[derive(Debug, Clone)]
pub struct Fault {
    /// Monotonic time since the proxy started.
    pub at: Duration,
    /// The connection's ordinal (from 1, in accept order).
    pub connection: u64,
    /// `None` for a connection-level fault (a refusal).
    pub direction: Option<Direction>,
    pub kind: FaultKind,
    /// The delay, stall or spell in ms; for a reset, the thousandths of its chunk forwarded.
    pub amount: u64,
}

impl fmt::Display for Fault {
    /// `12.345 s conn 7 down: reset (forwarded 412/1000 of the chunk)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let way = match self.direction {
            Some(Direction::Up) => " up",
            Some(Direction::Down) => " down",
            None => "",
        };
        let what = match self.kind {
            FaultKind::Delay => format!("delay {} ms", self.amount),
            FaultKind::Reset => format!("reset (forwarded {}/1000 of the chunk)", self.amount),
            FaultKind::StallReset => format!("stall {} ms, then reset", self.amount),
            FaultKind::RefusalSpell => format!("refusal spell of {} ms begins", self.amount),
            FaultKind::Refused => "refused".to_string(),
        };
        write!(
            f,
            "{:.3} s conn {}{way}: {what}",
            self.at.as_secs_f64(),
            self.connection
        )
    }
}

/// What the proxy did, by kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct FaultCounts {
    pub seed: u64,
    pub connections: u64,
    pub chunks: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub delays: u64,
    pub delay_ms: u64,
    pub resets: u64,
    pub stall_resets: u64,
    pub refusal_spells: u64,
    pub refused: u64,
}

impl FaultCounts {
    /// Connections the proxy broke: reset at once, stalled then reset, or refused.
    pub fn broken(&self) -> u64 {
        self.resets + self.stall_resets + self.refused
    }
}

impl fmt::Display for FaultCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {}: {} delays ({} ms in all), {} resets, {} stalls then reset, {} connections \
             refused in {} refusal spells; {} connections, {} chunks, {} KiB up, {} KiB down",
            self.seed,
            self.delays,
            self.delay_ms,
            self.resets,
            self.stall_resets,
            self.refused,
            self.refusal_spells,
            self.connections,
            self.chunks,
            self.bytes_up / 1024,
            self.bytes_down / 1024
        )
    }
}

/// What the proxy's tasks share.
struct Shared {
    upstream: SocketAddr,
    seed: u64,
    schedule: Schedule,
    started: Instant,
    /// Whether decisions are applied (they are drawn either way).
    firing: AtomicBool,
    connections: AtomicU64,
    chunks: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    delays: AtomicU64,
    delay_ms: AtomicU64,
    resets: AtomicU64,
    stall_resets: AtomicU64,
    refusal_spells: AtomicU64,
    refused: AtomicU64,
    log: Mutex<VecDeque<Fault>>,
}

impl Shared {
    fn firing(&self) -> bool {
        self.firing.load(Ordering::Relaxed)
    }

    fn note(&self, connection: u64, direction: Option<Direction>, kind: FaultKind, amount: u64) {
        let counter = match kind {
            FaultKind::Delay => {
                self.delay_ms.fetch_add(amount, Ordering::Relaxed);
                &self.delays
            }
            FaultKind::Reset => &self.resets,
            FaultKind::StallReset => &self.stall_resets,
            FaultKind::RefusalSpell => &self.refusal_spells,
            FaultKind::Refused => &self.refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() == LOG_CAP {
            log.pop_front();
        }
        log.push_back(Fault {
            at: self.started.elapsed(),
            connection,
            direction,
            kind,
            amount,
        });
    }
}

/// A running proxy; dropping it stops it.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Its own runtime, so the test's load (and any blocking of the test's threads) does not
    /// pace the proxy, and so dropping the handle can end every task at once.
    runtime: Option<tokio::runtime::Runtime>,
}

impl FaultProxy {
    /// A proxy on a free port of `127.0.0.1` in front of `upstream` (a loopback address),
    /// faults drawn from `seed` on `schedule`. It holds fire (forwards everything untouched)
    /// until [`FaultProxy::fire`].
    pub fn start(upstream: SocketAddr, seed: u64, schedule: Schedule) -> FaultProxy {
        assert!(
            upstream.ip().is_loopback(),
            "the fault proxy forwards to loopback only, not {upstream}"
        );
        let listener = std::net::TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
            .expect("bind the fault proxy on 127.0.0.1");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the proxy's address");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fault-proxy")
            .enable_all()
            .build()
            .expect("the fault proxy's runtime");
        let shared = Arc::new(Shared {
            upstream,
            seed,
            schedule,
            started: Instant::now(),
            firing: AtomicBool::new(false),
            connections: AtomicU64::new(0),
            chunks: AtomicU64::new(0),
            bytes_up: AtomicU64::new(0),
            bytes_down: AtomicU64::new(0),
            delays: AtomicU64::new(0),
            delay_ms: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            stall_resets: AtomicU64::new(0),
            refusal_spells: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            log: Mutex::new(VecDeque::with_capacity(LOG_CAP)),
        });
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener).expect("register the listener")
        };
        runtime.spawn(accept_loop(listener, shared.clone()));
        FaultProxy {
            addr,
            shared,
            runtime: Some(runtime),
        }
    }

    /// Where clients connect: `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn seed(&self) -> u64 {
        self.shared.seed
    }

    /// Starts applying the schedule's faults.
    pub fn fire(&self) {
        self.shared.firing.store(true, Ordering::Relaxed);
    }

    /// Stops applying faults (faults under way run their course); everything passes again.
    pub fn hold_fire(&self) {
        self.shared.firing.store(false, Ordering::Relaxed);
    }

    /// What it did so far.
    pub fn counts(&self) -> FaultCounts {
        let s = &self.shared;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FaultCounts {
            seed: s.seed,
            connections: get(&s.connections),
            chunks: get(&s.chunks),
            bytes_up: get(&s.bytes_up),
            bytes_down: get(&s.bytes_down),
            delays: get(&s.delays),
            delay_ms: get(&s.delay_ms),
            resets: get(&s.resets),
            stall_resets: get(&s.stall_resets),
            refusal_spells: get(&s.refusal_spells),
            refused: get(&s.refused),
        }
    }

    /// The latest faults applied (at most 256), oldest first.
    pub fn log(&self) -> Vec<Fault> {
        let log = self.shared.log.lock().unwrap_or_else(|e| e.into_inner());
        log.iter().cloned().collect()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // Drops every task (the listener and all connections with them) without waiting:
        // allowed inside the test's own runtime, where a plain drop would panic.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Accepts connections, refusing those inside a refusal spell, and serves the others; the
/// connection tasks live in a `JoinSet`, so they end with this task.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut rng = SplitMix64::stream(shared.seed, 0);
    let mut connections = JoinSet::new();
    let mut refusing_until: Option<Instant> = None;
    let mut ordinal = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                ordinal += 1;
                shared.connections.fetch_add(1, Ordering::Relaxed);
                // Drawn for every connection, applied only while firing.
                let spell = shared.schedule.accept(&mut rng);
                let refuse = shared.firing() && {
                    let now = Instant::now();
                    if refusing_until.is_some_and(|until| now < until) {
                        true
                    } else if let Some(ms) = spell {
                        refusing_until = Some(now + Duration::from_millis(ms));
                        shared.note(ordinal, None, FaultKind::RefusalSpell, ms);
                        true
                    } else {
                        false
                    }
                };
                if refuse {
                    shared.note(ordinal, None, FaultKind::Refused, 0);
                    reset(&client);
                } else {
                    connections.spawn(serve(client, ordinal, shared.clone()));
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// How one direction of a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Its reader saw the end of the stream.
    Eof,
    /// A read or write failed (the peer went).
    Broken,
    /// The schedule reset the connection.
    Reset,
}

/// Forwards one connection both ways until either side ends it or the schedule resets it.
async fn serve(client: TcpStream, ordinal: u64, shared: Arc<Shared>) {
    // The server down: the client sees its connection closed, as it would the server's.
    let Ok(upstream) = TcpStream::connect(shared.upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let up = pump(&client, &upstream, ordinal, Direction::Up, &shared);
    let down = pump(&upstream, &client, ordinal, Direction::Down, &shared);
    // The first end closes both sides: neither protocol half-closes a connection it goes on
    // reading, and whatever was read before the end was forwarded.
    let end = tokio::select! {
        end = up => end,
        end = down => end,
    };
    if end == End::Reset {
        reset(&client);
        reset(&upstream);
    }
}

/// Reads chunks from `from` and writes them to `to`, applying each chunk's decision.
async fn pump(
    from: &TcpStream,
    to: &TcpStream,
    ordinal: u64,
    direction: Direction,
    shared: &Shared,
) -> End {
    let stream = 2 * ordinal + u64::from(direction == Direction::Down);
    let mut rng = SplitMix64::stream(shared.seed, stream);
    let bytes = match direction {
        Direction::Up => &shared.bytes_up,
        Direction::Down => &shared.bytes_down,
    };
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match read(from, &mut buf).await {
            Ok(0) => return End::Eof,
            Ok(n) => n,
            Err(_) => return End::Broken,
        };
        shared.chunks.fetch_add(1, Ordering::Relaxed);
        let action = shared.schedule.chunk(&mut rng);
        let mut forward = n;
        let mut then_reset = false;
        if shared.firing() {
            match action {
                Action::Pass => {}
                Action::Delay(ms) => {
                    shared.note(ordinal, Some(direction), FaultKind::Delay, ms);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Action::Reset(thousandths) => {
                    shared.note(ordinal, Some(direction), FaultKind::Reset, thousandths);
                    forward = n * thousandths as usize / 1_000;
                    then_reset = true;
                }
                Action::StallReset(ms) => {
                    shared.note(ordinal, Some(direction), FaultKind::StallReset, ms);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    forward = 0;
                    then_reset = true;
                }
            }
        }
        if write_all(to, &buf[..forward]).await.is_err() {
            return End::Broken;
        }
        bytes.fetch_add(forward as u64, Ordering::Relaxed);
        if then_reset {
            return End::Reset;
        }
    }
}

/// One read of at most `buf.len()` bytes (`Ok(0)` at the end of the stream).
async fn read(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        stream.readable().await?;
        match stream.try_read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

/// Writes all of `buf`.
async fn write_all(stream: &TcpStream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        stream.writable().await?;
        match stream.try_write(buf) {
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Makes the close of `stream` (when it drops) a reset (RST) rather than an orderly end (FIN).
fn reset(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

/// The loopback address a `scheme://[user[:password]@]host[:port][/...]` URL names (the port
/// `default_port` when it names none); panics when it is not loopback.
pub fn upstream_of(url: &str, default_port: u16) -> SocketAddr {
    let (host, port) = host_port(url);
    let ip = match host {
        "localhost" => Ipv4Addr::LOCALHOST,
        host => host
            .parse()
            .unwrap_or_else(|_| panic!("the fault proxy needs an IPv4 loopback host, not {host}")),
    };
    let addr = SocketAddr::from((ip, port.unwrap_or(default_port)));
    assert!(
        addr.ip().is_loopback(),
        "the fault proxy forwards to loopback only, not {addr}"
    );
    addr
}

/// `url` with its host and port replaced by the proxy's (user, path and query kept).
pub fn through(url: &str, proxy: SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let user = authority.rfind('@').map_or("", |at| &authority[..=at]);
    format!("{scheme}://{user}{proxy}{tail}")
}

/// The host and port of a URL's authority.
fn host_port(url: &str) -> (&str, Option<u16>) {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    match host_port.rsplit_once(':') {
        Some((host, port)) => (host, Some(port.parse().expect("a numeric port"))),
        None => (host_port, None),
    }
}
