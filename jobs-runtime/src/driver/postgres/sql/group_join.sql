-- group_join: appends to group $1, locked by group_open, the members $2 (in order, each once)
-- not already in it, at positions from its size $3, each settled already when $4 says so
-- (group_join_mark saw it ended, or gone); then counts them, sets the need ($5: 'keep' as it
-- is, 'count' to $6, 'all' to the size after the join) and, once settled reaches it, marks the
-- group done at $7. A replayed join finds its members in and changes nothing.
with fresh as (
    select m.id, m.settled, m.ord
    from unnest($2::uuid[], $4::boolean[]) with ordinality as m(id, settled, ord)
    where not exists (
        select 1 from {schema}.x_job_group_members e
        where e.job_id = m.id and e.group_id = $1
    )
),
joined as (
    insert into {schema}.x_job_group_members (group_id, position, job_id, settled)
    select $1, $3 + (row_number() over (order by f.ord))::integer - 1, f.id, f.settled
    from fresh f
    returning settled
),
counted as (
    select count(*)::integer as size, (count(*) filter (where settled))::integer as settled
    from joined
),
next as (
    select g.id,
           g.size + c.size as size,
           g.settled + c.settled as settled,
           case $5::text
               when 'count' then $6::integer
               when 'all' then g.size + c.size
               else g.need
           end as need
    from {schema}.x_job_groups g, counted c
    where g.id = $1
)
update {schema}.x_job_groups g
set size = n.size,
    settled = n.settled,
    need = n.need,
    done_at = case
        when g.done_at is null and n.need is not null and n.settled >= n.need then $7
        else g.done_at
    end
from next n
where g.id = n.id
returning g.id, g.waiter, g.parent_id, g.size, g.settled, g.need, g.done_at, g.created_at
