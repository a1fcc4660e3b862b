//! Progress reports: [`Run::progress`] keeps the latest, writes it at most once a second, and
//! the worker flushes it before every settle.

use std::time::Duration;

use super::Run;
use crate::clock::add;
use crate::driver::{Progress, ProgressParams};
use crate::error::JobError;

/// Progress is written at most once a second per run, and flushed before every settle.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

impl Run {
    /// Reports how far the run has got. Written at most once a second, and always before the
    /// attempt settles.
    pub async fn progress(
        &self,
        done: u64,
        total: u64,
        note: Option<&str>,
    ) -> Result<(), JobError> {
        if let Some(note) = note {
            crate::limits::check_progress_note(self.job_name(), note)?;
        }
        let now = self.now();
        let due = {
            let mut state = self.state();
            state.progress = Some(Progress {
                done,
                total,
                note: note.map(str::to_string),
            });
            state.progress_dirty = true;
            state
                .progress_written_at
                .is_none_or(|at| now >= add(at, PROGRESS_EVERY))
        };
        if due {
            self.flush_progress().await?;
        }
        Ok(())
    }

    pub(crate) async fn flush_progress(&self) -> Result<(), JobError> {
        let now = self.now();
        let progress = {
            let mut state = self.state();
            if !state.progress_dirty {
                return Ok(());
            }
            state.progress_dirty = false;
            state.progress_written_at = Some(now);
            state.progress.clone()
        };
        if let Some(progress) = progress {
            self.inner
                .seed
                .driver
                .job_progress(&ProgressParams {
                    job_id: self.inner.seed.job_id,
                    by: self.inner.seed.fence.by.clone(),
                    progress,
                    now,
                })
                .await?;
        }
        Ok(())
    }
}
