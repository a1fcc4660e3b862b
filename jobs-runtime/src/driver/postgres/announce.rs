//! Which of the driver's own single enqueues announce their queue on the wake channel.
//!
//! Every notifying commit queues behind one lock on the server (the notify lock, held to the
//! end of the commit), so enqueues do not announce every job. A probe in the statement used to
//! decide it (is a row of this queue from the last 250 ms still unclaimed?), at about 15 us of
//! server time a call, a fifth of the statement. The decision is the client's now, at no server
//! cost: the first enqueue of a queue in a [`WINDOW`] announces it at once; one sent inside the
//! window does not, and once it has committed it owes one trailing announcement, sent through
//! the pool when the window ends (the worker the first announcement woke may have claimed before
//! it committed). So an idle worker in another process starts every job within a window of its
//! commit, and the server sees at most two announcements a window for each queue and process.
//!
//! Time here is the machine's (`Instant`), not the `Jobs` clock: the throttle bounds the
//! server's notify traffic, which a test clock's frozen time must not silence.
//!
//! An enqueue in a caller's transaction commits when the caller says, which the driver never
//! sees: it keeps the probe in its statement (`fragment_wake_unless_waiting.sql`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::postgres::PgPool;

/// How long after announcing a queue an enqueue of it stays silent.
pub(crate) const WINDOW: Duration = Duration::from_millis(25);

/// The windows of the queues this driver enqueued into.
#[derive(Debug, Default)]
pub(crate) struct Announcer {
    queues: Mutex<HashMap<Box<str>, QueueWindow>>,
}

#[derive(Debug, Default)]
struct QueueWindow {
    /// When the queue was last announced (by an enqueue as it was sent, or trailing).
    announced: Option<Instant>,
    /// When the latest job that committed unannounced did, until an announcement sent after
    /// it covers it.
    owed: Option<Instant>,
    /// A trailing announcement is scheduled.
    trailing: bool,
}

impl Announcer {
    /// Runs `f` on `queue`'s window, opened empty on the queue's first use (no key is allocated
    /// for a queue already known: this runs on every enqueue).
    fn with_window<R>(&self, queue: &str, f: impl FnOnce(&mut QueueWindow) -> R) -> R {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(window) = queues.get_mut(queue) {
            return f(window);
        }
        f(queues.entry(queue.into()).or_default())
    }

    /// Whether an enqueue of a job of `queue` that is due now, sent at `now`, announces the
    /// queue in its own statement (it opens a window when it does).
    pub(crate) fn at_send(&self, queue: &str, now: Instant) -> bool {
        self.with_window(queue, |window| {
            let open = window
                .announced
                .is_some_and(|at| now.saturating_duration_since(at) < WINDOW);
            if !open {
                window.announced = Some(now);
            }
            !open
        })
    }

    /// An enqueue of `queue` sent at `sent` announced it and committed: it covers every job
    /// that committed unannounced before it was sent.
    pub(crate) fn covered(&self, queue: &str, sent: Instant) {
        self.with_window(queue, |window| {
            if window.owed.is_some_and(|owed| owed < sent) {
                window.owed = None;
            }
        });
    }

    /// An enqueue of `queue` that did not announce it committed: its trailing announcement is
    /// scheduled on `channel`, through `pool`, unless one already is.
    pub(crate) fn owe(self: &Arc<Self>, queue: &str, pool: &PgPool, channel: &Arc<str>) {
        if let Some(at) = self.owe_at(queue, Instant::now()) {
            send_trailing(
                self.clone(),
                pool.clone(),
                channel.clone(),
                queue.to_string(),
                at,
            );
        }
    }

    /// [`Announcer::owe`] at `now`: answers when the trailing announcement is due (the window's
    /// end, or at once when it ended), or `None` when one is already scheduled.
    fn owe_at(&self, queue: &str, now: Instant) -> Option<Instant> {
        self.with_window(queue, |window| {
            window.owed = Some(now);
            if window.trailing {
                return None;
            }
            window.trailing = true;
            Some(window.announced.map_or(now, |at| (at + WINDOW).max(now)))
        })
    }

    /// The trailing announcement of `queue` is due at `now`: answers whether it is still owed
    /// (no announcement sent since covered the jobs that owe it). When it is, it goes out now,
    /// covers them and opens a window; a job that commits unannounced from now on owes another
    /// (this one may reach a worker before that job commits).
    fn trailing_due(&self, queue: &str, now: Instant) -> bool {
        self.with_window(queue, |window| {
            window.trailing = false;
            if window.owed.take().is_none() {
                return false;
            }
            window.announced = Some(now);
            true
        })
    }
}

/// Sends `queue`'s trailing announcement on `channel` at `at`, through the pool, unless an
/// enqueue's own announcement covered it first (under a steady stream of enqueues, the next
/// window's first one does). A failure is logged and dropped: the wake is an optimisation, the
/// workers' poll the guarantee.
fn send_trailing(
    announcer: Arc<Announcer>,
    pool: PgPool,
    channel: Arc<str>,
    queue: String,
    at: Instant,
) {
    tokio::spawn(async move {
        tokio::time::sleep_until(at.into()).await;
        if !announcer.trailing_due(&queue, Instant::now()) {
            return;
        }
        let sent = sqlx::query("select pg_notify($1, $2)")
            .bind(&*channel)
            .bind(&queue)
            .execute(&pool)
            .await;
        if let Err(error) = sent {
            tracing::debug!(target: "jobs.wake.trailing", %error, "a trailing wake announcement was not sent; the poll will find its jobs");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_first_enqueue_of_a_window_announces_and_the_rest_owe_one_trailing() {
        let announcer = Announcer::default();
        let t0 = Instant::now();
        assert!(announcer.at_send("email", t0));
        // Another queue has a window of its own.
        assert!(announcer.at_send("sms", t0));
        assert!(!announcer.at_send("email", t0 + ms(1)));
        assert!(!announcer.at_send("email", t0 + ms(2)));
        // The first silent one to commit schedules the trailing announcement at the window's
        // end; the second finds it scheduled.
        assert_eq!(announcer.owe_at("email", t0 + ms(3)), Some(t0 + WINDOW));
        assert_eq!(announcer.owe_at("email", t0 + ms(4)), None);
        // Due: still owed, so it goes out and opens a window; a silent job that commits after
        // it owes another.
        let sent = t0 + WINDOW;
        assert!(announcer.trailing_due("email", sent));
        assert!(!announcer.at_send("email", sent + ms(1)));
        assert_eq!(announcer.owe_at("email", sent + ms(2)), Some(sent + WINDOW));
    }

    #[test]
    fn an_announcement_sent_after_the_owing_commits_covers_them() {
        let announcer = Announcer::default();
        let t0 = Instant::now();
        assert!(announcer.at_send("email", t0));
        assert!(!announcer.at_send("email", t0 + ms(1)));
        assert_eq!(announcer.owe_at("email", t0 + ms(2)), Some(t0 + WINDOW));
        // The next window's first enqueue, sent after that commit, announced and committed:
        // the trailing one is no longer owed and stays unsent.
        let next = t0 + WINDOW + ms(1);
        assert!(announcer.at_send("email", next));
        announcer.covered("email", next);
        assert!(!announcer.trailing_due("email", next + ms(1)));
        // A silent job that committed after the announcement was sent is not covered by it.
        assert!(!announcer.at_send("email", next + ms(2)));
        assert_eq!(announcer.owe_at("email", next + ms(3)), Some(next + WINDOW));
        announcer.covered("email", next);
        assert!(announcer.trailing_due("email", next + WINDOW));
    }

    #[test]
    fn a_window_that_ended_announces_again_and_a_late_commit_owes_at_once() {
        let announcer = Announcer::default();
        let t0 = Instant::now();
        assert!(announcer.at_send("email", t0));
        assert!(!announcer.at_send("email", t0 + WINDOW / 2));
        // Committed after its window ended: the trailing one is due at once.
        let late = t0 + WINDOW * 3;
        assert_eq!(announcer.owe_at("email", late), Some(late));
        // A quiet queue: every enqueue a window apart announces itself.
        assert!(announcer.at_send("email", t0 + WINDOW * 4));
        assert!(announcer.at_send("email", t0 + WINDOW * 5));
    }
}
