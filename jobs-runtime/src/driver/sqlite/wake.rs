//! The push wake across processes on one file. SQLite has no NOTIFY; instead a connection of
//! its own watches `PRAGMA data_version`, which moves when another connection commits to the
//! file and reads nothing of the tables. When it moves, one bounded read of the newest rows
//! (`x_jobs_created_idx`, those created since the last look) names the queues that received
//! jobs; each is announced as Postgres' NOTIFY announces it, and one bounded read of the due
//! hints written after the last one read (`x_job_due_hints`, filled by triggers in the same
//! transaction as a delayed enqueue, a retry or a park: `migrations/sqlite/0009_due_hints.sql`)
//! announces each later due time ([`WakeSignal::Due`]). A worker in the same process is woken
//! at once by [`Jobs`](crate::Jobs) itself; this is for the other processes. The outbox's
//! relay watches the same way for staged rows (`listen_outbox`).

use std::time::Duration;

use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::{ConnectOptions, Connection};

use crate::driver::{WakeReceiver, WakeSignal};
use crate::error::JobError;

use super::classify::{classify, Op};

/// How often the watcher asks `data_version`: the wake's added latency is at most this.
pub const DATA_VERSION_POLL: Duration = Duration::from_millis(5);

/// Rows read per look, at most: a burst larger than this may leave a queue to the poll.
const NEWEST_ROWS: i64 = 256;

/// Due hints read per look, at most (the table keeps about as many).
const NEWEST_HINTS: i64 = 256;

/// Starts the watcher of new jobs; it ends when the receiver is dropped.
pub(crate) async fn listen(reader: &SqlitePool) -> Result<WakeReceiver, JobError> {
    watch(
        reader,
        NewJobs {
            newest: None,
            hint: 0,
        },
    )
    .await
}

/// Starts the watcher of the outbox (`x_outbox` in the same kind of file): a signal each time a
/// commit leaves a staged row waiting unclaimed.
pub(crate) async fn listen_outbox(pool: &SqlitePool) -> Result<WakeReceiver, JobError> {
    watch(pool, OutboxRows).await
}

/// What a watcher looks for once `data_version` moved: the signals to send.
#[async_trait::async_trait]
trait Look: Send + 'static {
    /// Reads where the file stands before the first move.
    async fn start(&mut self, _conn: &mut SqliteConnection) -> Result<(), JobError> {
        Ok(())
    }

    /// The signals a move brings.
    async fn look(&mut self, conn: &mut SqliteConnection) -> Result<Vec<WakeSignal>, JobError>;
}

/// The queues of ready jobs created since the last look, and the due hints written since.
struct NewJobs {
    newest: Option<String>,
    /// The last due hint read.
    hint: i64,
}

#[async_trait::async_trait]
impl Look for NewJobs {
    async fn start(&mut self, conn: &mut SqliteConnection) -> Result<(), JobError> {
        self.newest = newest_created(conn).await?;
        self.hint = last_hint(conn).await?;
        Ok(())
    }

    async fn look(&mut self, conn: &mut SqliteConnection) -> Result<Vec<WakeSignal>, JobError> {
        let (queues, latest) = queues_since(conn, self.newest.as_deref()).await?;
        if latest.is_some() {
            self.newest = latest;
        }
        let mut signals: Vec<WakeSignal> = queues.into_iter().map(WakeSignal::Queue).collect();
        let (dues, hint) = dues_since(conn, self.hint).await?;
        self.hint = hint;
        signals.extend(dues);
        Ok(signals)
    }
}

/// Whether a committed outbox row waits unclaimed.
struct OutboxRows;

#[async_trait::async_trait]
impl Look for OutboxRows {
    async fn look(&mut self, conn: &mut SqliteConnection) -> Result<Vec<WakeSignal>, JobError> {
        let waiting: bool = sqlx::query_scalar(
            // Unclaimed: after the last row of the lease holder's latest claim, or any row
            // while no relay holds the lease.
            "select exists (select 1 from x_outbox o
             where o.published_at is null and o.refused_at is null
               and not exists (select 1 from x_outbox_lease l
                               where l.id = 1 and l.claimed_by is not null
                                 and (o.staged_at, o.id) <= (l.last_staged_at, l.last_id)))",
        )
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| classify(Op::WakeListen, e))?;
        Ok(if waiting {
            vec![WakeSignal::Queue(String::new())]
        } else {
            Vec::new()
        })
    }
}

/// Polls `data_version` on a connection of its own and sends what `look` finds at each move.
async fn watch(pool: &SqlitePool, mut look: impl Look) -> Result<WakeReceiver, JobError> {
    let options = pool.connect_options();
    let mut conn = options
        .connect()
        .await
        .map_err(|e| classify(Op::WakeListen, e))?;
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let mut version = data_version(&mut conn).await?;
    look.start(&mut conn).await?;
    tokio::spawn(async move {
        if tx.send(WakeSignal::Live).await.is_err() {
            return;
        }
        let mut tick = tokio::time::interval(DATA_VERSION_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if tx.is_closed() {
                break;
            }
            let Ok(now) = data_version(&mut conn).await else {
                let _ = tx.send(WakeSignal::Lost).await;
                break;
            };
            if now == version {
                continue;
            }
            version = now;
            let Ok(signals) = look.look(&mut conn).await else {
                continue;
            };
            for signal in signals {
                if tx.send(signal).await.is_err() {
                    return;
                }
            }
        }
        let _ = conn.close().await;
    });
    Ok(rx)
}

async fn data_version(conn: &mut SqliteConnection) -> Result<i64, JobError> {
    sqlx::query_scalar("pragma data_version")
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| classify(Op::WakeListen, e))
}

async fn newest_created(conn: &mut SqliteConnection) -> Result<Option<String>, JobError> {
    sqlx::query_scalar("select max(created_at) from x_jobs")
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| classify(Op::WakeListen, e))
}

/// The queues of ready rows created after `since`, and the newest `created_at` read.
async fn queues_since(
    conn: &mut SqliteConnection,
    since: Option<&str>,
) -> Result<(Vec<String>, Option<String>), JobError> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "select queue, state, created_at from x_jobs
         where created_at > ?1
         order by created_at desc, id desc
         limit ?2 + 0",
    )
    // A plain bound (every stored time sorts after ''), so the index is sought, not walked.
    .bind(since.unwrap_or(""))
    .bind(NEWEST_ROWS)
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| classify(Op::WakeListen, e))?;
    let latest = rows.first().map(|(_, _, at)| at.clone());
    let mut queues: Vec<String> = rows
        .into_iter()
        .filter(|(_, state, _)| state == "ready")
        .map(|(queue, _, _)| queue)
        .collect();
    queues.sort();
    queues.dedup();
    Ok((queues, latest))
}

async fn last_hint(conn: &mut SqliteConnection) -> Result<i64, JobError> {
    sqlx::query_scalar("select coalesce(max(seq), 0) from x_job_due_hints")
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| classify(Op::WakeListen, e))
}

/// The due times hinted after hint `after` (at most [`NEWEST_HINTS`], the newest), and the last
/// hint read. A range of the rowid: bounded whatever the table holds.
async fn dues_since(
    conn: &mut SqliteConnection,
    after: i64,
) -> Result<(Vec<WakeSignal>, i64), JobError> {
    let rows: Vec<(i64, String, String)> = sqlx::query_as(
        "select seq, queue, at from x_job_due_hints
         where seq > ?1
         order by seq desc
         limit ?2",
    )
    .bind(after)
    .bind(NEWEST_HINTS)
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| classify(Op::WakeListen, e))?;
    let last = rows.first().map_or(after, |(seq, _, _)| *seq);
    let dues = rows
        .into_iter()
        .rev()
        .filter_map(|(_, queue, at)| {
            let at = chrono::DateTime::parse_from_rfc3339(&at).ok()?.to_utc();
            Some(WakeSignal::Due { queue, at })
        })
        .collect();
    Ok((dues, last))
}
