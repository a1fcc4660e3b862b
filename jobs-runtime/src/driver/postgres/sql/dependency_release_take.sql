-- dependency_release_take: takes up to $1 settled jobs whose dependents are still to be
-- judged (0029's x_job_releases), oldest first, skipping those another pass holds; the
-- taking transaction judges them and commits, or rolls back and leaves them.
delete from {schema}.x_job_releases r
where r.job_id in (
    select job_id from {schema}.x_job_releases
    order by at
    limit $1
    for update skip locked
)
returning r.job_id
