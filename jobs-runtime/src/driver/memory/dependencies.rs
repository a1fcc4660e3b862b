//! Dependencies between jobs: the edges, a dependent's state at its enqueue, and what a
//! dependency's settle does to its dependents ([`Verdict`]), all under the driver's one lock.

use rustc_hash::FxHashMap as HashMap;

use super::state::MemoryState;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

/// The edges, both ways.
#[derive(Debug, Default)]
pub(super) struct DependencyEdges {
    /// A dependent -> the jobs it depends on, and its policy.
    on: HashMap<JobId, (Vec<JobId>, DependencyFailure)>,
    /// A dependency -> the jobs depending on it.
    dependents: HashMap<JobId, Vec<JobId>>,
}

impl DependencyEdges {
    /// Whether any job depends on `id` (the common answer, no, costs one lookup).
    pub(super) fn has_dependents(&self, id: JobId) -> bool {
        !self.dependents.is_empty() && self.dependents.contains_key(&id)
    }

    /// Forgets a removed job's edges (retention, an `enqueue_many` taking an insert back).
    pub(super) fn forget(&mut self, id: JobId) {
        if let Some((on, _)) = self.on.remove(&id) {
            for dependency in on {
                if let Some(list) = self.dependents.get_mut(&dependency) {
                    list.retain(|d| *d != id);
                    if list.is_empty() {
                        self.dependents.remove(&dependency);
                    }
                }
            }
        }
    }
}

impl MemoryState {
    /// Where a dependent starts ([`Dependencies::start_among`]): blocked while a dependency
    /// is live, cancelled when its policy says so of one that failed, else as any job due at
    /// `run_at`. Refuses a dependency that does not exist in `tenant`.
    pub(super) fn dependent_start(
        &self,
        dependencies: &Dependencies,
        tenant: Option<&str>,
        run_at: Timestamp,
    ) -> Result<DependentStart, JobError> {
        let found = dependencies
            .on
            .iter()
            .filter_map(|id| self.jobs.get(id))
            .filter(|job| job.record.tenant_id.as_deref() == tenant)
            .map(|job| {
                let state = job.record.state;
                let state = if planted!(DependencyIgnored) {
                    JobState::Done
                } else {
                    state
                };
                (job.record.id, state)
            })
            .collect();
        dependencies.start_among(&found, run_at)
    }

    /// Files a new dependent's edges.
    pub(super) fn link(&mut self, id: JobId, dependencies: &Dependencies) {
        for dependency in &dependencies.on {
            self.edges
                .dependents
                .entry(*dependency)
                .or_default()
                .push(id);
        }
        self.edges
            .on
            .insert(id, (dependencies.on.clone(), dependencies.on_failure));
    }

    /// A job `id` stopped being live at `now`: each blocked dependent is released, cancelled
    /// (and its own dependents with it) or left waiting, as [`Verdict::of`] decides. The
    /// released ones' queues are noted in `released` for the driver's wake.
    pub(super) fn settle_dependents(&mut self, id: JobId, now: Timestamp) {
        let mut settled = vec![id];
        while let Some(dependency) = settled.pop() {
            let Some(dependents) = self.edges.dependents.get(&dependency).cloned() else {
                continue;
            };
            for dependent in dependents {
                let Some(job) = self.jobs.get(&dependent) else {
                    continue;
                };
                if !is_blocked(job.record.state, job.record.run_at) {
                    continue;
                }
                let Some((on, policy)) = self.edges.on.get(&dependent) else {
                    continue;
                };
                let states: Vec<_> = on
                    .iter()
                    .map(|d| (*d, self.jobs.get(d).map(|j| j.record.state)))
                    .collect();
                match Verdict::of(*policy, states) {
                    Verdict::Blocked => {}
                    Verdict::Release => {
                        self.released.push(job.queue.to_string());
                        self.set_state(dependent, |r| {
                            r.state = JobState::Ready;
                            r.run_at = now;
                            r.updated_at = now;
                        });
                    }
                    Verdict::Cancel { dependency, state } => {
                        let error = dependency_failed(dependency, state);
                        self.set_state(dependent, |r| {
                            r.state = JobState::Cancelled;
                            r.last_error = Some(error.summary());
                            r.last_error_code = error.code().map(|c| c.as_str().to_string());
                            r.updated_at = now;
                        });
                        settled.push(dependent);
                    }
                }
            }
            if !self.jobs.contains_key(&dependency) {
                self.edges.dependents.remove(&dependency);
            }
        }
    }

    /// The links of `id` an operator reads.
    pub(super) fn links(&self, id: JobId) -> JobLinks {
        let (depends_on, policy) = match self.edges.on.get(&id) {
            Some((on, policy)) => (
                on.iter()
                    .map(|d| (*d, self.jobs.get(d).map(|j| j.record.state)))
                    .collect(),
                Some(*policy),
            ),
            None => (Vec::new(), None),
        };
        let dependents = self
            .edges
            .dependents
            .get(&id)
            .map(|list| list.iter().take(MAX_DEPENDENCIES).copied().collect())
            .unwrap_or_default();
        let mut links = JobLinks {
            depends_on,
            dependents,
            on_dependency_failure: policy,
            ..JobLinks::default()
        };
        self.group_links(id, &mut links);
        links
    }
}
