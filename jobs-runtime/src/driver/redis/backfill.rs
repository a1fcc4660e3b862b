//! The ledger of backfill passes (`lua/backfill.lua`) in one slot of its own,
//! `{<prefix>:backfill}`: a pass's row is independent of every queue, and a begin reads the
//! run's row and the newest completed pass of its name and tenant and writes the new row in
//! one script, so two runs beginning at once cannot both pass the check.

use async_trait::async_trait;

use super::codec::{fields, micros, time, Fields};
use super::enqueue::malformed;
use super::scripts;
use super::RedisDriver;
use crate::driver::backfill_store::*;
use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError};

impl RedisDriver {
    fn backfills(&self) -> scripts::Call {
        scripts::BACKFILL.key(self.keys().area("backfill"))
    }
}

/// A cursor as stored: its JSON, or '' for none.
fn cursor(cursor: &Option<serde_json::Value>) -> Result<String, JobError> {
    cursor.as_ref().map_or(Ok(String::new()), |value| {
        serde_json::to_string(value)
            .map_err(|_| JobError::new(ErrorCode::Driver, "a backfill cursor did not serialize"))
    })
}

fn bad_row() -> JobError {
    JobError::new(
        ErrorCode::Driver,
        format!(
            "redis {}: a stored backfill pass carries a field this driver did not write",
            Op::DecodeBackfillRow
        ),
    )
}

fn text<'a>(f: &'a Fields, name: &str) -> Result<&'a str, JobError> {
    f.get(name).map(String::as_str).ok_or_else(bad_row)
}

fn uuid(f: &Fields, name: &str) -> Result<uuid::Uuid, JobError> {
    uuid::Uuid::parse_str(text(f, name)?).map_err(|_| bad_row())
}

fn count(f: &Fields, name: &str) -> Result<u64, JobError> {
    text(f, name)?.parse().map_err(|_| bad_row())
}

/// A stored pass's fields as the record.
fn pass(f: &Fields) -> Result<BackfillPass, JobError> {
    let tenant = text(f, "tenant")?;
    Ok(BackfillPass {
        id: uuid(f, "id")?,
        name: text(f, "name")?.to_string(),
        tenant: (!tenant.is_empty()).then(|| tenant.to_string()),
        run_id: uuid(f, "run")?,
        job_id: uuid(f, "job")?,
        checksum: text(f, "checksum")?.to_string(),
        status: PassStatus::parse(text(f, "status")?)?,
        forced: text(f, "forced")? == "1",
        batches: count(f, "batches")?,
        rows: count(f, "rows")?,
        last_cursor: f
            .get("cursor")
            .map(|c| serde_json::from_str(c).map_err(|_| bad_row()))
            .transpose()?,
        started_at: time(text(f, "started")?)?,
        updated_at: time(text(f, "updated")?)?,
        finished_at: f.get("finished").map(|t| time(t)).transpose()?,
    })
}

#[async_trait]
impl BackfillStore for RedisDriver {
    async fn backfill_begin(&self, p: &BackfillBeginParams) -> Result<BackfillBegin, JobError> {
        let mut invocation = self.backfills();
        invocation
            .arg("begin")
            .arg(p.run_id.to_string())
            .arg(&p.name)
            .arg(p.tenant.as_deref().unwrap_or_default())
            .arg(p.id.to_string())
            .arg(p.job_id.to_string())
            .arg(&p.checksum)
            .arg(if p.force { "1" } else { "0" })
            .arg(micros(p.now));
        let answer: Vec<String> = self.conn().script(Op::BackfillBegin, &invocation).await?;
        let [adopted, inserted, previous_run, previous_checksum] =
            <[String; 4]>::try_from(answer).map_err(|_| malformed())?;
        let (adopted, inserted) = (adopted == "1", inserted == "1");
        if !adopted && !inserted {
            let previous_run_id = uuid::Uuid::parse_str(&previous_run).map_err(|_| malformed())?;
            return Ok(BackfillBegin::Skipped { previous_run_id });
        }
        Ok(BackfillBegin::Started {
            adopted,
            previous_checksum: (!previous_run.is_empty()).then_some(previous_checksum),
        })
    }

    async fn backfill_progress(&self, p: &BackfillProgressParams) -> Result<(), JobError> {
        let mut invocation = self.backfills();
        invocation
            .arg("progress")
            .arg(p.run_id.to_string())
            .arg(p.batches)
            .arg(p.rows)
            .arg(cursor(&p.last_cursor)?)
            .arg(micros(p.now));
        self.conn()
            .script::<i64>(Op::BackfillProgress, &invocation)
            .await?;
        Ok(())
    }

    async fn backfill_finish(&self, p: &BackfillFinishParams) -> Result<(), JobError> {
        let mut invocation = self.backfills();
        invocation
            .arg("finish")
            .arg(p.run_id.to_string())
            .arg(p.status.as_str())
            .arg(p.batches)
            .arg(p.rows)
            .arg(cursor(&p.last_cursor)?)
            .arg(micros(p.now));
        self.conn()
            .script::<i64>(Op::BackfillFinish, &invocation)
            .await?;
        Ok(())
    }

    async fn backfill_list(&self, p: &BackfillListParams) -> Result<Vec<BackfillPass>, JobError> {
        let mut invocation = self.backfills();
        invocation
            .arg("list")
            .arg(p.name.as_deref().unwrap_or_default())
            .arg(p.status.map(PassStatus::as_str).unwrap_or_default())
            .arg(p.run_id.map(|r| r.to_string()).unwrap_or_default())
            .arg(p.limit.unwrap_or(DEFAULT_BACKFILL_LIST_LIMIT));
        let rows: Vec<Vec<String>> = self.conn().script(Op::BackfillList, &invocation).await?;
        rows.into_iter().map(|row| pass(&fields(row))).collect()
    }

    async fn backfill_migration_applied(&self, version: i64) -> Result<bool, JobError> {
        let key = self.keys().area(APPLIED_MIGRATIONS_KEY);
        let member: bool = self
            .conn()
            .query(
                Op::BackfillMigrationApplied,
                redis::cmd("SISMEMBER").arg(key).arg(version),
            )
            .await?;
        Ok(member)
    }
}
