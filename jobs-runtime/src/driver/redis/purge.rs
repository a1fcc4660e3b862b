//! `job_purge`: each queue's finished rows past their cutoffs and the history of its jobs no
//! longer stored, one script per queue, until the batch's limit is spent; the purged ids leave
//! the id index afterwards (an index entry without its job answers "no such job").

use super::codec::micros;
use super::scripts;
use super::RedisDriver;
use crate::driver::records::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

pub(super) async fn purge(driver: &RedisDriver, params: &JobPurgeParams) -> Result<u64, JobError> {
    let mut gone = 0u64;
    let now = micros(chrono::Utc::now());
    for queue in driver.queues(Op::JobPurge).await? {
        let mut invocation = scripts::on_queue(&scripts::PURGE, driver.keys(), &queue);
        invocation
            .arg(micros(params.done_before))
            .arg(micros(params.finished_before))
            .arg(params.limit)
            .arg(&now);
        let answer: Vec<String> = driver.conn().script(Op::JobPurge, &invocation).await?;
        let deleted = &answer[1..];
        gone += deleted.len() as u64;
        for id in deleted {
            if let Ok(id) = uuid::Uuid::parse_str(id) {
                let mut cmd = redis::cmd("HDEL");
                cmd.arg(driver.keys().id_index(&id)).arg(id.to_string());
                driver.conn().query::<()>(Op::JobPurge, &cmd).await?;
                driver.forget(&id);
            }
        }
    }
    Ok(gone)
}
