-- group_members: up to $3 members of group $1 after position $2 (-1: from the first), in join
-- order, each with its job's state, kept result and last error (nulls: the row is gone). A
-- range of the primary key.
select m.position, m.job_id, j.state, j.result, j.last_error, j.last_error_code
from {schema}.x_job_group_members m
left join {schema}.x_jobs j on j.id = m.job_id
where m.group_id = $1 and m.position > $2
order by m.position
limit $3
