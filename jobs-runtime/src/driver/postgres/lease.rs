//! The Postgres lease store: `x_job_leases` (primary key `(lease_key, slot)`) and the one fence
//! sequence `x_job_lease_fence`. An acquire also deletes a few long-lapsed grants of other keys
//! (`sql/lease_acquire.sql`).

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::FromRow;

use super::classify::{classify, Op};
use super::PostgresDriver;
use crate::clock::add;
use crate::driver::lease::{
    lease_sweep_before, HeldLease, LeaseAcquire, LeaseStore, LEASE_SWEEP_BATCH,
};
use crate::driver::lease::{LeaseHoldersParams, LeaseRenewParams};
use crate::error::JobError;

fn held(row: &PgRow) -> Result<HeldLease, JobError> {
    HeldLease::from_row(row).map_err(|e| classify(Op::DecodeLeaseRow, e))
}

fn slot(lease: &HeldLease) -> i32 {
    i32::try_from(lease.slot).unwrap_or(i32::MAX)
}

#[async_trait]
impl LeaseStore for PostgresDriver {
    async fn lease_acquire(&self, p: &LeaseAcquire) -> Result<Option<HeldLease>, JobError> {
        let failed = |e| classify(Op::LeaseAcquire, e);
        let mut tx = super::pooled::begin(&self.pool).await.map_err(failed)?;
        sqlx::query(self.sql.lease_acquire_lock.clone())
            .bind(&p.key)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        let row = sqlx::query(self.sql.lease_acquire.clone())
            .bind(&p.key)
            .bind(i32::try_from(p.limit).unwrap_or(i32::MAX))
            .bind(&p.holder)
            .bind(p.now)
            .bind(add(p.now, p.ttl))
            .bind(lease_sweep_before(p.now))
            .bind(i64::from(LEASE_SWEEP_BATCH))
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        row.as_ref().map(held).transpose()
    }

    async fn lease_renew(
        &self,
        params: &LeaseRenewParams<'_>,
    ) -> Result<Option<HeldLease>, JobError> {
        let LeaseRenewParams { lease, ttl, now } = *params;
        let row = sqlx::query(self.sql.lease_renew.clone())
            .bind(&lease.key)
            .bind(slot(lease))
            .bind(lease.fence)
            .bind(add(now, ttl))
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::LeaseRenew, e))?;
        row.as_ref().map(held).transpose()
    }

    async fn lease_release(&self, lease: &HeldLease) -> Result<bool, JobError> {
        let done = sqlx::query(self.sql.lease_release.clone())
            .bind(&lease.key)
            .bind(slot(lease))
            .bind(lease.fence)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::LeaseRelease, e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn lease_holders(
        &self,
        params: &LeaseHoldersParams<'_>,
    ) -> Result<Vec<HeldLease>, JobError> {
        let LeaseHoldersParams { key, now } = *params;
        let rows = sqlx::query(self.sql.lease_holders.clone())
            .bind(key)
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::LeaseHolders, e))?;
        rows.iter().map(held).collect()
    }
}
