//! The load of a chaos run: the jobs enqueued, the same keys enqueued again while it runs, the
//! ledger of every id an enqueue answered, and the seeded generator choosing what breaks.

use jobs::prelude::*;
use jobs::Enqueued;

use super::{Chaos, ChaosSteps};

/// Every id any enqueue answered, with the key it was asked under.
#[derive(Default)]
pub struct Ledger {
    pub ids: std::collections::BTreeMap<uuid::Uuid, u64>,
    pub reenqueued: u64,
    pub deduped: u64,
    pub inserted_again: u64,
    /// Keys whose enqueue failed: each may or may not have landed (a connection cut after the
    /// commit loses the answer, not the row).
    pub unanswered: std::collections::BTreeSet<u64>,
}

impl Ledger {
    pub fn note(&mut self, n: u64, answer: &Enqueued) {
        if let Some(previous) = self.ids.insert(answer.id, n) {
            assert_eq!(previous, n, "one id answered for two keys");
        }
    }
}

/// A small deterministic generator (xorshift), seeded and printed, so a failing run can be
/// replayed with `CHAOS_SEED`.
pub struct Rng(u64);

impl Rng {
    pub fn seeded() -> Self {
        let seed = std::env::var("CHAOS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(7, |d| d.as_nanos() as u64)
                    | 1
            });
        println!("chaos seed: {seed} (replay with CHAOS_SEED={seed})");
        Rng(seed)
    }

    /// A generator from `seed` (0 would stay 0: it is made odd), printed by the caller.
    pub fn from_seed(seed: u64) -> Self {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Enqueues `chaos_steps` jobs `0..n` in batches of 500, each a fresh key.
pub async fn enqueue_all(jobs: &Jobs, ledger: &mut Ledger, n: u64) {
    let mut start = 0;
    while start < n {
        let end = (start + 500).min(n);
        let answers = jobs
            .enqueue_many::<ChaosSteps, _>((start..end).map(|n| Chaos { n }))
            .await
            .expect("enqueue the load");
        for (n, answer) in (start..end).zip(&answers) {
            assert!(!answer.deduped, "fresh keys");
            ledger.note(n, answer);
        }
        start = end;
    }
}

/// Enqueues a few keys again: each answer is the live row holding the key, or a new row when
/// the key's job already finished. The answered job's key is read back through the driver, so
/// this serves every store.
pub async fn reenqueue_some(jobs: &Jobs, ledger: &mut Ledger, rng: &mut Rng, n: u64) {
    let keys: Vec<u64> = (0..8).map(|_| rng.below(n)).collect();
    // Concurrently: the same key from several tasks at once must still land one live row.
    let answers = futures_join(keys.iter().flat_map(|&k| {
        [k, k].map(|k| {
            let jobs = jobs.clone();
            async move { (k, jobs.enqueue::<ChaosSteps>(Chaos { n: k }).await) }
        })
    }))
    .await;
    for (k, answer) in answers {
        // The database may be cut (or locked) at any moment: a failed enqueue inserted nothing,
        // or (its connection cut after the commit) a job whose answer was lost: its key is
        // noted, and the invariants allow such a job under it.
        let Ok(answer) = answer else {
            ledger.unanswered.insert(k);
            continue;
        };
        ledger.reenqueued += 1;
        if answer.deduped {
            ledger.deduped += 1;
        } else if !ledger.ids.contains_key(&answer.id) {
            ledger.inserted_again += 1;
        }
        ledger.note(k, &answer);
        if let Ok(Some(row)) = jobs.job(answer.id).await {
            assert_eq!(
                row.idempotency_key,
                format!("chaos:{k}"),
                "an enqueue answered another key's job"
            );
        }
    }
}

/// Joins futures without a `futures` dependency: one task each.
pub async fn futures_join<F, T>(futures: impl IntoIterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        out.push(handle.await.expect("task"));
    }
    out
}
