-- group_get: one group.
select id, waiter, parent_id, size, settled, need, done_at, created_at
from {schema}.x_job_groups
where id = $1
