-- group_wake: a parent that just parked on group $1 asks for its wake: the group is read under
-- its row lock, which the fold of its members' settles takes too (group_fold.sql), so either
-- that fold ran first and this sees the group done, or it runs after and sees the parent
-- parked. A done group's waiter, if waiting (`suspended`, or a batch's callback `delayed`),
-- becomes ready, due at $2, and its queue is announced on the wake channel $3. The park committed before this statement began, so its
-- snapshot sees it; a fold that woke the waiter meanwhile leaves it not suspended, and this
-- changes nothing.
with g as (
    select id, waiter, parent_id, size, settled, need, done_at, created_at
    from {schema}.x_job_groups
    where id = $1
    for no key update
),
woke as (
    update {schema}.x_jobs j
    set state = 'ready', run_at = $2, updated_at = $2
    from g
    where j.id = g.waiter and g.done_at is not null and j.state in ('suspended', 'delayed')
    returning j.id as woken, j.queue, j.tenant_id, j.priority
)
select g.id, g.waiter, g.parent_id, g.size, g.settled, g.need, g.done_at, g.created_at,
       w.woken, w.queue, w.tenant_id, w.priority,
       case when w.queue is not null then (select true from pg_notify($3, w.queue)) end
           as announced
from g
left join woke w on true
