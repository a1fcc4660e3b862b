//! Events: a bounded bus ([`MAX_MEMORY_EVENTS`](super::MAX_MEMORY_EVENTS), oldest evicted
//! first); a publish wakes the runs parked on it.

use rustc_hash::FxHashSet as HashSet;

use super::state::StoredEvent;
use super::{MemoryDriver, MAX_MEMORY_EVENTS};
use crate::clock::{add, Timestamp};
use crate::driver::records::*;
use crate::driver::EventFindParams;
use crate::error::JobError;

impl MemoryDriver {
    pub(super) async fn publish_event(&self, event: &EventPublish) -> Result<EventId, JobError> {
        if planted!(EventDropped) {
            return Ok(event.id);
        }
        let mut state = self.lock();
        let now = event.now;
        state.events.retain(|e| e.expires_at > now);
        while state.events.len() >= MAX_MEMORY_EVENTS {
            state.events.pop_front();
        }
        state.event_seq += 1;
        let mark = state.event_seq;
        state.events.push_back(StoredEvent {
            mark,
            expires_at: add(now, event.ttl),
            event: JobEvent {
                id: event.id,
                name: event.name.clone(),
                key: event.key.clone(),
                payload: event.payload.clone(),
                published_at: now,
            },
        });
        // Wake the runs parked on this event so they resume now, not at their next poll.
        let parked: Vec<JobId> = state
            .jobs
            .values()
            .filter(|j| j.record.state == JobState::Suspended && j.record.run_at > now)
            .filter(|j| {
                state.steps.get(&j.record.run_id).is_some_and(|steps| {
                    steps.values().any(|s| {
                        s.status == StepStatus::Waiting
                            && s.wait
                                .as_ref()
                                .is_some_and(|w| w.event == event.name && w.key == event.key)
                    })
                })
            })
            .map(|j| j.record.id)
            .collect();
        for id in parked {
            state.update(id, |r| r.run_at = now);
        }
        Ok(event.id)
    }

    pub(super) async fn purge_events(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        let mut state = self.lock();
        // Oldest expiry first, as the stores with an expiry index delete them.
        let mut expired: Vec<(Timestamp, i64)> = state
            .events
            .iter()
            .filter(|e| e.expires_at <= params.now)
            .map(|e| (e.expires_at, e.mark))
            .collect();
        expired.sort_unstable();
        expired.truncate(params.limit as usize);
        let doomed: HashSet<i64> = expired.into_iter().map(|(_, mark)| mark).collect();
        state.events.retain(|e| !doomed.contains(&e.mark));
        Ok(doomed.len() as u64)
    }

    pub(super) async fn mark_events(&self) -> Result<String, JobError> {
        Ok(self.lock().event_seq.to_string())
    }

    pub(super) async fn find_event(
        &self,
        params: &EventFindParams<'_>,
    ) -> Result<Option<JobEvent>, JobError> {
        let EventFindParams {
            name,
            key,
            since,
            now,
        } = *params;
        // A mark this driver did not write matches every stored event of the name and key.
        let mark: i64 = since.mark.parse().unwrap_or(0);
        Ok(self
            .lock()
            .events
            .iter()
            .find(|e| {
                e.mark > mark && e.expires_at > now && e.event.name == name && e.event.key == key
            })
            .map(|e| e.event.clone()))
    }
}
