//! The live-key index: `(name, tenant or "", key)` -> the job holding it, the memory driver's
//! partial unique index. A live job holds its key; a finished one keeps its entry when it has a
//! unique period, and whether that period still holds is the reader's question
//! (`MemoryState::key_holder`).
//!
//! Keyed by a hash of the three fields, not by a copy of them: every settle frees its row's key,
//! and a map keyed by the strings made it copy three of them to find the entry (and the enqueue
//! copy them to file it). The rows' own fields tell a hash collision apart, so the index answers
//! exactly what a map keyed by the strings would.

use std::hash::{BuildHasher, Hash, Hasher};

use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};

use crate::driver::records::{JobId, JobRecord};

/// A live key, borrowed from a request or a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct LiveKey<'a> {
    pub name: &'a str,
    /// `None` and `Some("")` are one namespace, as in the SQL drivers' unique index.
    pub tenant: &'a str,
    pub key: &'a str,
}

impl<'a> LiveKey<'a> {
    pub(super) fn of(record: &'a JobRecord) -> Self {
        LiveKey {
            name: &record.name,
            tenant: LiveKey::tenant_of(record.tenant_id.as_deref()),
            key: &record.idempotency_key,
        }
    }

    /// The tenant part of a key: `None` and `Some("")` are one namespace.
    pub(super) fn tenant_of(tenant: Option<&str>) -> &str {
        if planted!(DedupeIgnoresTenant) {
            return "";
        }
        tenant.unwrap_or("")
    }

    /// The index's hash of the key: a row keeps it, so freeing its key reads none of its
    /// strings (they are rarely in cache by the time the row settles).
    pub(super) fn hash(&self) -> u64 {
        let mut hasher = FxBuildHasher.build_hasher();
        self.hash_into(&mut hasher);
        hasher.finish()
    }

    fn hash_into(&self, hasher: &mut impl Hasher) {
        self.name.hash(hasher);
        self.tenant.hash(hasher);
        self.key.hash(hasher);
    }
}

/// The jobs a key hash names: nearly always one.
#[derive(Debug)]
enum Holders {
    One(JobId),
    /// Different keys whose hashes collide.
    Many(Vec<JobId>),
}

impl Holders {
    fn ids(&self) -> &[JobId] {
        match self {
            Holders::One(id) => std::slice::from_ref(id),
            Holders::Many(ids) => ids,
        }
    }
}

/// The index. Its methods read the rows through `record`, which answers a stored job's row.
#[derive(Debug, Default)]
pub(super) struct LiveKeys {
    by_hash: HashMap<u64, Holders>,
}

impl LiveKeys {
    /// The job filed under `key` (of hash `hash`), if any.
    pub(super) fn holder_at<'r>(
        &self,
        hash: u64,
        key: LiveKey<'_>,
        record: impl Fn(&JobId) -> Option<&'r JobRecord>,
    ) -> Option<JobId> {
        let holders = self.by_hash.get(&hash)?;
        holders
            .ids()
            .iter()
            .find(|id| record(id).is_some_and(|r| LiveKey::of(r) == key))
            .copied()
    }

    /// Files `id` as the holder of `key` (of hash `hash`), in place of any job that held it.
    pub(super) fn insert<'r>(
        &mut self,
        hash: u64,
        key: LiveKey<'_>,
        id: JobId,
        record: impl Fn(&JobId) -> Option<&'r JobRecord>,
    ) {
        let Some(holders) = self.by_hash.get_mut(&hash) else {
            self.by_hash.insert(hash, Holders::One(id));
            return;
        };
        let same_key = |other: &JobId| record(other).is_some_and(|r| LiveKey::of(r) == key);
        match holders {
            Holders::One(other) if *other == id || same_key(other) => *other = id,
            Holders::One(other) => *holders = Holders::Many(vec![*other, id]),
            Holders::Many(ids) => {
                ids.retain(|other| *other != id && !same_key(other));
                ids.push(id);
            }
        }
    }

    /// Frees the key of hash `hash` ([`LiveKey::hash`]) if `id` holds it (a row leaving the
    /// live states without a unique period, or removed).
    pub(super) fn release(&mut self, hash: u64, id: JobId) {
        let Some(holders) = self.by_hash.get_mut(&hash) else {
            return;
        };
        match holders {
            Holders::One(other) if *other == id => {
                self.by_hash.remove(&hash);
            }
            Holders::One(_) => {}
            Holders::Many(ids) => {
                ids.retain(|other| *other != id);
                if let [last] = ids[..] {
                    *holders = Holders::One(last);
                }
            }
        }
    }
}
