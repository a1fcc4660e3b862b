-- history_append: appends one row to job $1's history (tenant $2, at $3, actor $4, verb $5,
-- detail $6). Run inside the transaction of the act it records (job_cancel).
insert into {schema}.x_job_history (job_id, tenant_id, at, actor, verb, detail)
values ($1, $2, $3, $4, $5, $6)
