-- job_links: a job's links, one row each: the jobs it depends on ('on', with their states;
-- null: the row is gone, and its own policy), then the jobs depending on it ('by', the first
-- $2).
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
