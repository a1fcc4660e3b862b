-- group_purge: up to $1 groups whose waiter is no longer stored and whose every member was
-- counted go, with their member rows: run after job_purge in its transaction. A group still
-- counting a live member stays until a purge after its last count; a member row's job may be
-- gone already (it reads back as gone until then).
with gone as (
    select g.id from {schema}.x_job_groups g
    where g.settled >= g.size
      and not exists (select 1 from {schema}.x_jobs j where j.id = g.waiter)
    limit $1
    for update of g skip locked
),
members as (
    delete from {schema}.x_job_group_members m
    using gone
    where m.group_id = gone.id
)
delete from {schema}.x_job_groups g
using gone
where g.id = gone.id
