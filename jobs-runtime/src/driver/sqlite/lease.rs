//! The SQLite lease store: `x_job_leases` (primary key `(lease_key, slot)`) and the one fence
//! counter `x_job_lease_fence`, as on Postgres.
//!
//! An acquire reads the key's live slots, takes the lowest free one and draws its fence, all in
//! one `BEGIN IMMEDIATE` transaction: SQLite lets one writer in at a time, so acquirers of every
//! key take turns (what Postgres' advisory lock per key does), no slot is granted twice, and a
//! later grant always carries a larger fence than an earlier one. A grant also deletes up to
//! [`LEASE_SWEEP_BATCH`] grants of other keys that lapsed long before (`x_job_leases_expiry_idx`),
//! in the same transaction, so the keys a keyed rate saw once leave no rows behind.

use async_trait::async_trait;
use sqlx::sqlite::SqliteRow;
use sqlx::{Connection, FromRow};

use super::classify::{classify, Op};
use super::time::ts;
use super::SqliteDriver;
use crate::clock::add;
use crate::driver::lease::{
    lease_sweep_before, HeldLease, LeaseAcquire, LeaseStore, LEASE_SWEEP_BATCH,
};
use crate::driver::lease::{LeaseHoldersParams, LeaseRenewParams};
use crate::error::JobError;

fn held(row: &SqliteRow) -> Result<HeldLease, JobError> {
    HeldLease::from_row(row).map_err(|e| classify(Op::DecodeLeaseRow, e))
}

fn slot(lease: &HeldLease) -> i64 {
    i64::from(lease.slot)
}

/// The lowest slot of `0..limit` missing from `live` (the held slots, ascending).
fn lowest_free(live: &[i64], limit: u32) -> Option<i64> {
    let mut next = 0_i64;
    for &held in live {
        if held != next {
            break;
        }
        next += 1;
    }
    (next < i64::from(limit)).then_some(next)
}

#[async_trait]
impl LeaseStore for SqliteDriver {
    async fn lease_acquire(&self, p: &LeaseAcquire) -> Result<Option<HeldLease>, JobError> {
        let failed = |e| classify(Op::LeaseAcquire, e);
        let mut conn = self.writer.acquire(Op::LeaseAcquire).await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        // At most `limit` rows: the key's slots below the limit that have not lapsed.
        let live: Vec<i64> = sqlx::query_scalar(
            "select slot from x_job_leases
             where lease_key = ?1 and slot < ?2 and expires_at > ?3
             order by slot",
        )
        .bind(&p.key)
        .bind(i64::from(p.limit))
        .bind(ts(p.now))
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
        let Some(free) = lowest_free(&live, p.limit) else {
            return Ok(None);
        };
        let fence: i64 = sqlx::query_scalar(
            "update x_job_lease_fence set value = value + 1 where id = 1 returning value",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(failed)?;
        // The row of a lapsed grant is taken over; a live one cannot be (the read above, in
        // this transaction, found the slot free).
        let row = sqlx::query(
            "insert into x_job_leases (lease_key, slot, holder, expires_at, fence)
             values (?1, ?2, ?3, ?4, ?5)
             on conflict (lease_key, slot) do update
             set holder = excluded.holder, expires_at = excluded.expires_at, fence = excluded.fence
             where x_job_leases.expires_at <= ?6
             returning lease_key, slot, holder, fence, expires_at",
        )
        .bind(&p.key)
        .bind(free)
        .bind(&p.holder)
        .bind(ts(add(p.now, p.ttl)))
        .bind(fence)
        .bind(ts(p.now))
        .fetch_optional(&mut *tx)
        .await
        .map_err(failed)?;
        let Some(row) = row else {
            // Unreachable while the read and the write share the transaction; drawing no
            // fence for a refused grant keeps the counter's meaning.
            return Ok(None);
        };
        let lease = held(&row)?;
        // Long-lapsed grants of other keys: one bounded range of the expiry index.
        sqlx::query(
            "delete from x_job_leases
             where (lease_key, slot) in (
                 select lease_key, slot from x_job_leases
                 where expires_at <= ?1 and lease_key <> ?2
                 order by expires_at
                 limit ?3)",
        )
        .bind(ts(lease_sweep_before(p.now)))
        .bind(&p.key)
        .bind(i64::from(LEASE_SWEEP_BATCH))
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(Some(lease))
    }

    async fn lease_renew(
        &self,
        params: &LeaseRenewParams<'_>,
    ) -> Result<Option<HeldLease>, JobError> {
        let LeaseRenewParams { lease, ttl, now } = *params;
        let rows = sqlx::query(
            "update x_job_leases set expires_at = ?4
             where lease_key = ?1 and slot = ?2 and fence = ?3
             returning lease_key, slot, holder, fence, expires_at",
        )
        .bind(&lease.key)
        .bind(slot(lease))
        .bind(lease.fence)
        .bind(ts(add(now, ttl)))
        .fetch_all(&mut *self.writer.acquire(Op::LeaseRenew).await?)
        .await
        .map_err(|e| classify(Op::LeaseRenew, e))?;
        rows.first().map(held).transpose()
    }

    async fn lease_release(&self, lease: &HeldLease) -> Result<bool, JobError> {
        let done = sqlx::query(
            "delete from x_job_leases where lease_key = ?1 and slot = ?2 and fence = ?3",
        )
        .bind(&lease.key)
        .bind(slot(lease))
        .bind(lease.fence)
        .execute(&mut *self.writer.acquire(Op::LeaseRelease).await?)
        .await
        .map_err(|e| classify(Op::LeaseRelease, e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn lease_holders(
        &self,
        params: &LeaseHoldersParams<'_>,
    ) -> Result<Vec<HeldLease>, JobError> {
        let LeaseHoldersParams { key, now } = *params;
        let rows = sqlx::query(
            "select lease_key, slot, holder, fence, expires_at from x_job_leases
             where lease_key = ?1 and expires_at > ?2
             order by slot",
        )
        .bind(key)
        .bind(ts(now))
        .fetch_all(&self.reader)
        .await
        .map_err(|e| classify(Op::LeaseHolders, e))?;
        rows.iter().map(held).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::lowest_free;

    #[test]
    fn the_lowest_free_slot_is_the_first_gap_below_the_limit() {
        assert_eq!(lowest_free(&[], 2), Some(0));
        assert_eq!(lowest_free(&[0, 2], 3), Some(1));
        assert_eq!(lowest_free(&[0, 1], 3), Some(2));
        assert_eq!(lowest_free(&[0, 1], 2), None);
        assert_eq!(lowest_free(&[], 0), None);
    }
}
