//! One shared copy of each job name and queue name: a claim hands them to the worker by
//! reference count instead of copying two strings per job. A process has few distinct names,
//! and the set keeps every one it has seen (a name outlives its jobs).

use std::sync::Arc;

use rustc_hash::FxHashSet as HashSet;

#[derive(Debug, Default)]
pub(super) struct Names(HashSet<Arc<str>>);

impl Names {
    /// The shared copy of `name`, made the first time it is asked for.
    pub(super) fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = name.into();
        self.0.insert(shared.clone());
        shared
    }
}
