-- group_join: appends to group $1, locked by group_open, the members $2 (in order, each once)
-- not already in it, at positions from its size $3, and sets the need ($4: 'keep' as it is,
-- 'count' to $5, 'all' to the size after the join). A replayed join finds its members in and
-- changes nothing. The members are counted by the release pass the join runs after it commits
-- (it noted the group: group_note.sql), which also marks the group done.
with fresh as (
    select m.id, m.ord
    from unnest($2::uuid[]) with ordinality as m(id, ord)
    where not exists (
        select 1 from {schema}.x_job_group_members e
        where e.job_id = m.id and e.group_id = $1
    )
),
joined as (
    insert into {schema}.x_job_group_members (group_id, position, job_id)
    select $1, $3 + (row_number() over (order by f.ord))::integer - 1, f.id
    from fresh f
    returning 1
),
next as (
    select g.id,
           g.size + (select count(*)::integer from joined) as size
    from {schema}.x_job_groups g
    where g.id = $1
)
update {schema}.x_job_groups g
set size = n.size,
    need = case $4::text
        when 'count' then $5::integer
        when 'all' then n.size
        else g.need
    end
from next n
where g.id = n.id
returning g.id, g.waiter, g.parent_id, g.size, g.settled, g.need, g.done_at, g.created_at
