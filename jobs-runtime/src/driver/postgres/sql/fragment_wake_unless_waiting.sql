-- fragment_wake_unless_waiting: spliced where a statement names wake_unless_waiting (in
-- braces), as the `woke` column of an enqueue's RETURNING over the new row ($1 id, $4 queue,
-- $7 tenant, $10 now, $13 priority, $15 wake channel, $16 the slot's start). Only the enqueue
-- in a caller's transaction (job_enqueue_in) decides here: the driver's own single enqueue
-- commits where the driver sees it, and the client decides (announce.rs) at no server time.
--
-- A new row due within a second announces its queue on the wake channel ($15), unless a row
-- of the same queue created in the same 250 ms slot (from $16) is still waiting to be claimed:
-- the worker that wakes for that one takes this one in the same claim. The notification is
-- throttled here, in the statement, because every notifying commit queues behind one lock;
-- under load the slot always holds an unclaimed row and the queue is announced about once per
-- slot, while a quiet queue announces every job, so an idle worker picks each one up at once.
-- Two index probes find such a row, each bounded whatever the backlog (a lookup by queue alone
-- once walked the whole backlog on every enqueue): one of the same tenant, seeking
-- x_jobs_fair_idx by (queue, tenant, priority, due in the slot: a row of the new row's own
-- priority, $13, so the seek stays one range); else one of the slot among the table's
-- 16 newest rows of any tenant, read in x_jobs_created_idx's order (an ordered scan with a
-- limit, and no range the planner could turn into a bitmap scan of the whole slot), so many
-- tenants filling one queue still announce it about once per slot. A miss costs one more
-- notification, never a missed one. The statement's snapshot does not see the new row itself.
-- The payload is the queue name, never an id, an input or a tenant.
--
-- A row due later ($10 < run_at) announces its due time instead (fragment_due_payload.sql),
-- unthrottled: one notification per delayed enqueue, so an idle worker starts it when due.
case
    when run_at > $10
    then (select true from pg_notify($15, {due_payload}))
    when run_at <= $10 + interval '1 second'
     and not exists (
         select 1 from {schema}.x_jobs o
         where o.queue = $4
           and coalesce(o.tenant_id, '') = coalesce($7, '')
           and -o.priority = -$13::smallint
           and o.run_at >= $16
           and o.run_at <= $10
           and o.state = 'ready'
           and o.created_at >= $16
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
         where recent.created_at >= $16
           and recent.queue = $4
           and recent.state = 'ready'
           and recent.id <> $1
     )
    then (select true from pg_notify($15, $4))
end
