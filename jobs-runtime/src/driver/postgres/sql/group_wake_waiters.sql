-- group_wake_waiters: the waiters $1 of groups just done become ready, due at $2, those that
-- wait (`suspended`, or a batch's callback `delayed`; a waiter still running is woken by its own park, group_wake.sql); each
-- queue is announced on the wake channel $3. Run after the statement that locked the groups,
-- so its snapshot sees a park that committed before those locks were granted.
with woke as (
    update {schema}.x_jobs
    set state = 'ready', run_at = $2, updated_at = $2
    where id = any($1::uuid[]) and state in ('suspended', 'delayed')
    returning id, queue, tenant_id, priority
)
select w.id, w.queue, w.tenant_id, w.priority,
       (select true from pg_notify($3, w.queue)) as announced
from woke w
