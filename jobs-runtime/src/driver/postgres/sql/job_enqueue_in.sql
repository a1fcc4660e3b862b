-- job_enqueue_in: the enqueue inside a transaction that is not the driver's own (the caller's
-- outbox transaction), where an error would abort the caller's work: inserts the job unless a
-- live row holds its (name, tenant, key) or its id already names a row; answers the new row's
-- ids, or nothing when it inserted nothing (the caller then asks job_enqueue_holder which row
-- holds the job). "on conflict do nothing" without a target covers both the primary key and
-- the partial unique index x_jobs_name_tenant_idempotency_live_idx. job_enqueue is the same
-- statement without the speculative insertion, for the driver's own one-statement transactions.
--
-- A new row due within a second announces its queue on the wake channel ($11), unless a row
-- of the same queue created in the same 250 ms slot (from $12) is still waiting to be claimed:
-- the worker that wakes for that one takes this one in the same claim. The notification is
-- throttled here, in the statement, because every notifying commit queues behind one lock;
-- under load the slot always holds an unclaimed row and the queue is announced about once per
-- slot, while a quiet queue announces every job, so an idle worker picks each one up at once.
-- Two index probes find such a row, each bounded whatever the backlog (a lookup by queue alone
-- once walked the whole backlog on every enqueue): one of the same tenant, seeking
-- x_jobs_fair_idx by (queue, tenant, due in the slot); else one of the slot among the table's
-- 16 newest rows of any tenant, read in x_jobs_created_idx's order (an ordered scan with a
-- limit, and no range the planner could turn into a bitmap scan of the whole slot), so many
-- tenants filling one queue still announce it about once per slot. A miss costs one more
-- notification, never a missed one. The statement's snapshot does not see the new row itself.
-- The payload is the queue name, never an id, an input or a tenant.
insert into {schema}.x_jobs (
    id, run_id, name, queue, input, idempotency_key, tenant_id, state,
    max_attempts, run_at, created_at, updated_at, traceparent
)
values (
    $1, $2, $3, $4, $5, $6, $7,
    case when $9 <= $10 then 'ready' else 'delayed' end,
    $8, $9, $10, $10, $13
)
on conflict do nothing
returning id, run_id,
    case
        when run_at <= $10 + interval '1 second'
         and not exists (
             select 1 from {schema}.x_jobs o
             where o.queue = $4
               and coalesce(o.tenant_id, '') = coalesce($7, '')
               and o.run_at >= $12
               and o.run_at <= $10
               and o.state = 'ready'
               and o.created_at >= $12
               and o.id <> $1
         )
         and not exists (
             select 1
             from (
                 select r.id, r.queue, r.state, r.created_at
                 from {schema}.x_jobs r
                 order by r.created_at desc, r.id desc
                 limit 16
             ) recent
             where recent.created_at >= $12
               and recent.queue = $4
               and recent.state = 'ready'
               and recent.id <> $1
         )
        then (select true from pg_notify($11, $4))
    end as woke
