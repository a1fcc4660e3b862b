-- job_enqueue_in: the enqueue inside a transaction that is not the driver's own (the caller's
-- outbox transaction), where an error would abort the caller's work: inserts the job unless a
-- row holds its (name, tenant, key) in the live-key index (a live row, or one with a unique
-- period's mark, lapsed or not) or its id already names a row; answers the new row's ids, or
-- nothing when it inserted nothing (the caller then asks job_enqueue_holder which row holds the
-- job, which also clears a lapsed mark, so the next round inserts). $14: the new row's
-- unique_until. "on conflict do nothing" without a target covers both the primary key and
-- the partial unique index x_jobs_name_tenant_idempotency_live_idx. job_enqueue is the same
-- statement's silent form, for the driver's own one-statement transactions.
--
-- Parameters as job_enqueue.sql numbers them, and $15 the wake channel, $16 the wake slot's
-- start. The wake: fragment_wake_unless_waiting.sql.
{enqueue_insert}
returning id, run_id,
    {wake_unless_waiting} as woke
