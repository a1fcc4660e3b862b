-- job_links: a job's links, one row each: the jobs it depends on ('on', with their states;
-- null: the row is gone, and its own policy), then the jobs depending on it ('by', the first
-- $2); then its groups' links (0031): the job that invoked it ('parent', the first group that
-- made it a child), the jobs it invoked ('child', with their states, the first $2 in join
-- order), and its batch ('batch': one it is a member of, or whose callback it is).
(
    select 'on' as kind, e.depends_on as id, x.state, j.on_dependency_failure as policy
    from {schema}.x_job_dependencies e
    join {schema}.x_jobs j on j.id = e.job_id
    left join {schema}.x_jobs x on x.id = e.depends_on
    where e.job_id = $1
    order by e.depends_on
)
union all
(
    select 'by', e.job_id, null, null
    from {schema}.x_job_dependencies e
    where e.depends_on = $1
    order by e.job_id
    limit $2
)
union all
(
    select 'parent', g.parent_id, null, null
    from {schema}.x_job_group_members m
    join {schema}.x_job_groups g on g.id = m.group_id
    where m.job_id = $1 and g.parent_id is not null
    order by g.created_at, g.id
    limit 1
)
union all
(
    select 'child', m.job_id, x.state, null
    from {schema}.x_job_groups g
    join {schema}.x_job_group_members m on m.group_id = g.id
    left join {schema}.x_jobs x on x.id = m.job_id
    where g.parent_id = $1
    order by g.created_at, g.id, m.position
    limit $2
)
union all
(
    select 'batch', b.id, null, null
    from (
        select g.id, g.created_at
        from {schema}.x_job_group_members m
        join {schema}.x_job_groups g on g.id = m.group_id
        where m.job_id = $1 and g.parent_id is null
        union all
        select g.id, g.created_at
        from {schema}.x_job_groups g
        where g.waiter = $1 and g.parent_id is null
    ) b
    order by b.created_at, b.id
    limit 1
)
