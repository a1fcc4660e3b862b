-- job_enqueue: inserts the job unless a live row holds its (name, tenant, key) or its id already
-- names a row; then answers the row that holds the job, with deduped = true when it is not new.
-- "on conflict do nothing" without a target covers both the primary key and the partial unique
-- index x_jobs_name_tenant_idempotency_live_idx, whose expression the lookup below spells.
-- A new row due within a second announces its queue on the wake channel ($11), unless another
-- row of that queue created in the same 250 ms slot (from $12) is still waiting to be claimed:
-- the worker that wakes for that one takes this one in the same claim. The notification is
-- throttled here, in the statement, because every notifying commit queues behind one lock;
-- under load the slot always holds an unclaimed row and the queue is announced once per slot,
-- while a quiet queue announces every job, so an idle worker picks each one up at once.
-- The payload is the queue name, never an id, an input or a tenant.
-- same_id: the row is the request's own id (an outbox re-publish), which answers deduped whatever
-- the conflict policy; only another job holding the key is a duplicate.
-- When the conflicting row committed after this statement began, neither arm sees it and the
-- statement answers nothing: the caller runs it once more (an enqueue runs at most twice).
with inserted as (
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
    returning id, run_id, queue, run_at
)
select i.id, i.run_id, false as deduped, false as same_id,
       case
           when i.run_at <= $10 + interval '1 second'
            and not exists (
                select 1 from {schema}.x_jobs o
                where o.queue = i.queue
                  and o.created_at >= $12
                  and o.created_at <= $10
                  and o.state = 'ready'
                  and o.id <> i.id
            )
           then (select true from pg_notify($11, i.queue))
       end as woke
from inserted i
union all
(
    select j.id, j.run_id, true as deduped, j.id = $1 as same_id, null::boolean as woke
    from {schema}.x_jobs j
    where not exists (select 1 from inserted)
      and (
            (j.name = $3
             and coalesce(j.tenant_id, '') = coalesce($7, '')
             and j.idempotency_key = $6
             and j.state in ('ready', 'delayed', 'running', 'suspended'))
         or j.id = $1
      )
    order by j.id = $1 desc
    limit 1
)
