-- dependency_link: files the edges of the new dependent $1 on the jobs $2.
insert into {schema}.x_job_dependencies (job_id, depends_on)
select $1, d from unnest($2::uuid[]) as d
on conflict do nothing
