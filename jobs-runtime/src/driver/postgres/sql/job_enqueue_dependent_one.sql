-- job_enqueue_dependent_one: a job with dependencies in one statement, the common case: marks
-- the jobs it names ($17, in its tenant $7) as having dependents, under their row locks (as
-- dependency_lock.sql, whose note on the locks holds here), and inserts it blocked (suspended
-- until $9 = 9999-12-31) while one of them is live, else ready, with its edges and its policy
-- ($16). It inserts nothing, and answers why, when a job named is not found in the tenant, or
-- when one ended failed, dead or cancelled under the policy `cancel` (the driver then takes the
-- transactional path, which names the error: job_enqueue_dependent.sql), or when a row holds
-- its key or id (the driver asks job_enqueue_holder). A ready one announces its queue.
with named as (
    update {schema}.x_jobs
    set has_dependents = true
    where id = any($17::uuid[]) and coalesce(tenant_id, '') = coalesce($7, '')
    returning state
),
judged as (
    select count(*) = cardinality($17::uuid[]) as found,
           coalesce(bool_or(state in ('ready', 'delayed', 'running', 'suspended')), false) as live,
           coalesce(bool_or(state in ('failed', 'dead', 'cancelled')), false) as failed
    from named
),
inserted as (
    insert into {schema}.x_jobs (
        id, run_id, name, queue, input, idempotency_key, tenant_id, state,
        max_attempts, run_at, created_at, updated_at, traceparent, actor, priority, unique_until,
        on_dependency_failure
    )
    select $1, $2, $3, $4, $5, $6, $7,
           case when j.live then 'suspended' else 'ready' end,
           $8, case when j.live then $9 else $10 end, $10, $10, $12, $13, $14, $15, $16
    from judged j
    where j.found and not (j.failed and $16 = 'cancel')
    on conflict do nothing
    returning id, run_id, state, queue
),
edges as (
    insert into {schema}.x_job_dependencies (job_id, depends_on)
    select i.id, d from inserted i cross join unnest($17::uuid[]) as d
    on conflict do nothing
)
select j.found, j.failed and $16 = 'cancel' as failed,
       i.id, i.run_id, i.state,
       case when i.state = 'ready' then (select true from pg_notify($11, i.queue)) end as woke
from judged j
left join inserted i on true
