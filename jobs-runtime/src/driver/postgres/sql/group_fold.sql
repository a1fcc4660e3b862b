-- group_fold: the release pass's part for groups. Of the ids $1 it took, a settled job's are
-- counted in every group still counting them, and a group's (noted by a join, group_note.sql)
-- has the members that join filed (positions from `checked` to the size) checked: each member
-- among them that ended, or whose row is gone, is counted. Each member row is counted once
-- (`settled`), whichever way it is reached first. A group whose count reaches its need is
-- marked done at $2.
--
-- Locks: the member rows in (group, position) order, then the groups in id order, as every
-- fold takes them, so folds take turns instead of deadlocking; a join holds a group's row only
-- while it files members, and never waits on a member. The pass commits right after: a group's
-- row is held for one statement per pass, never by a settle. Answers each group folded with its
-- waiter and whether this fold made it done (the waiter is then woken by
-- group_wake_waiters.sql, a statement of its own, whose snapshot follows these locks).
with scope as (
    select g.id, g.checked, g.size
    from {schema}.x_job_groups g
    where g.id = any($1::uuid[])
),
candidates as (
    select m.group_id, m.position
    from {schema}.x_job_group_members m
    where m.job_id = any($1::uuid[])
    union
    select m.group_id, m.position
    from scope s
    join {schema}.x_job_group_members m
      on m.group_id = s.id and m.position >= s.checked and m.position < s.size
),
picked as materialized (
    select m.group_id, m.position
    from {schema}.x_job_group_members m
    join candidates c on c.group_id = m.group_id and c.position = m.position
    left join {schema}.x_jobs j on j.id = m.job_id
    where not m.settled
      and (j.id is null or j.state in ('done', 'failed', 'dead', 'cancelled'))
    order by m.group_id, m.position
    for no key update of m
),
counted as (
    update {schema}.x_job_group_members m
    set settled = true
    from picked p
    where m.group_id = p.group_id and m.position = p.position
    returning m.group_id
),
tally as (
    select group_id, count(*)::integer as n from counted group by group_id
),
touched as (
    select coalesce(t.group_id, s.id) as id, coalesce(t.n, 0) as n, s.size as checked_to
    from tally t
    full join scope s on s.id = t.group_id
),
locked as materialized (
    select g.id, g.done_at
    from {schema}.x_job_groups g
    where g.id in (select id from touched)
    order by g.id
    for no key update
)
update {schema}.x_job_groups g
set settled = g.settled + t.n,
    checked = greatest(g.checked, coalesce(t.checked_to, 0)),
    done_at = case
        when g.done_at is null and g.need is not null and g.settled + t.n >= g.need then $2
        else g.done_at
    end
from touched t
join locked l on l.id = t.id
where g.id = t.id
returning g.id, g.waiter, (l.done_at is null and g.done_at is not null) as done_now
