//! The completer: acks go out in batches, one statement for many (each still fenced on its own
//! claim), the way River's batched completer does. No timer: the first ack goes at once, and
//! whatever finishes while a batch is in flight rides the next one.

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use crate::driver::{AckParams, JobDriver};
use crate::error::JobError;

/// Acks per statement, at most.
const MAX_BATCH: usize = 1_000;

struct Pending {
    params: AckParams,
    reply: oneshot::Sender<Result<bool, JobError>>,
}

/// Batches one worker's acks.
#[derive(Default)]
pub(crate) struct Completer {
    queue: Mutex<Option<mpsc::UnboundedSender<Pending>>>,
}

impl Completer {
    /// Settles one job `done` (fenced), in whatever batch is next.
    pub(crate) async fn ack(
        &self,
        driver: &Arc<dyn JobDriver>,
        params: AckParams,
    ) -> Result<bool, JobError> {
        if !driver.batches_acks() {
            return driver.job_ack(&params).await;
        }
        let (reply, answer) = oneshot::channel();
        let pending = Pending { params, reply };
        let sent = self.sender(driver).send(pending);
        match sent {
            Ok(()) => match answer.await {
                Ok(landed) => landed,
                // The batch task is gone (its runtime shut down): settle on our own.
                Err(_) => Err(JobError::new(
                    crate::error::ErrorCode::Driver,
                    "the completer stopped before answering",
                )),
            },
            Err(mpsc::error::SendError(pending)) => driver.job_ack(&pending.params).await,
        }
    }

    fn sender(&self, driver: &Arc<dyn JobDriver>) -> mpsc::UnboundedSender<Pending> {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        match &*queue {
            Some(sender) if !sender.is_closed() => sender.clone(),
            _ => {
                let (sender, receiver) = mpsc::unbounded_channel();
                tokio::spawn(complete(driver.clone(), receiver));
                *queue = Some(sender.clone());
                sender
            }
        }
    }
}

async fn complete(driver: Arc<dyn JobDriver>, mut queue: mpsc::UnboundedReceiver<Pending>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        // Moved, not copied: an ack may carry a kept result of up to a megabyte.
        let (params, replies): (Vec<AckParams>, Vec<_>) =
            batch.into_iter().map(|p| (p.params, p.reply)).unzip();
        match driver.job_ack_many(&params).await {
            Ok(landed) => {
                for (reply, landed) in replies.into_iter().zip(landed) {
                    let _ = reply.send(Ok(landed));
                }
            }
            Err(error) => {
                for reply in replies {
                    let each = JobError::new(
                        error.code().unwrap_or(crate::error::ErrorCode::Driver),
                        error.message().to_string(),
                    );
                    let _ = reply.send(Err(each));
                }
            }
        }
    }
}
