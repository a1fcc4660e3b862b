-- group_fold: the release pass's part for groups. The settled jobs $1 it took are counted, once
-- each, in every group still counting them: their member rows are marked settled, each group's
-- count moves by its members among them, and a group whose count reaches its need is marked
-- done at $2. The groups are locked in id order first, so two passes folding the same groups
-- take turns instead of deadlocking; the pass commits right after, so a group's row is held
-- for one short statement per pass, never by a settle. Answers each group folded with its
-- waiter, and whether this fold made it done (its waiter is then woken by
-- group_wake_waiters.sql, a statement of its own, whose snapshot follows these locks).
with counted as (
    update {schema}.x_job_group_members m
    set settled = true
    where m.job_id = any($1::uuid[]) and not m.settled
    returning m.group_id
),
tally as (
    select group_id, count(*)::integer as n from counted group by group_id
),
locked as materialized (
    select g.id, g.done_at
    from {schema}.x_job_groups g
    where g.id in (select group_id from tally)
    order by g.id
    for no key update
)
update {schema}.x_job_groups g
set settled = g.settled + t.n,
    done_at = case
        when g.done_at is null and g.need is not null and g.settled + t.n >= g.need then $2
        else g.done_at
    end
from tally t
join locked l on l.id = t.group_id
where g.id = t.group_id
returning g.id, g.waiter, (l.done_at is null and g.done_at is not null) as done_now
