//! `job_purge`: each queue's finished rows past their cutoffs and the history of its jobs no
//! longer stored, one script per queue; then the purged jobs' ids and run ids, and the ids of
//! removed jobs whose history is gone, leave the id index (in other slots on a cluster, so
//! after the script: an index entry without its job answers "no such job" meanwhile).

use std::collections::BTreeMap;

use super::codec::micros;
use super::scripts;
use super::RedisDriver;
use crate::driver::records::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

pub(super) async fn purge(driver: &RedisDriver, params: &JobPurgeParams) -> Result<u64, JobError> {
    let mut gone = 0u64;
    // The script's `now` stamps the history of a job it deletes, which it deletes too.
    let now = micros(params.done_before.max(params.finished_before));
    for queue in driver.queues(Op::JobPurge).await? {
        let mut invocation = scripts::on_queue(&scripts::PURGE, driver.keys(), &queue);
        invocation
            .arg(micros(params.done_before))
            .arg(micros(params.finished_before))
            .arg(params.limit)
            .arg(&now);
        let answer: Vec<String> = driver.conn().script(Op::JobPurge, &invocation).await?;
        let Some((count, forgotten)) = answer.split_first() else {
            continue;
        };
        gone += count.parse::<u64>().unwrap_or(0);
        let mut by_shard: BTreeMap<String, redis::Cmd> = BTreeMap::new();
        for id in forgotten
            .iter()
            .filter_map(|id| uuid::Uuid::parse_str(id).ok())
        {
            driver.forget(&id);
            by_shard
                .entry(driver.keys().id_index(&id))
                .or_insert_with_key(|shard| {
                    let mut cmd = redis::cmd("HDEL");
                    cmd.arg(shard);
                    cmd
                })
                .arg(id.to_string());
        }
        for cmd in by_shard.values() {
            driver.conn().query::<()>(Op::JobPurge, cmd).await?;
        }
    }
    Ok(gone)
}
