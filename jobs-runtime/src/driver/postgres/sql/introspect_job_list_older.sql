-- introspect_job_list_older: one page of jobs, newest first by (created_at, id), optionally
-- after a cursor ($8 created_at, $9 id): the next, older page. Every filter is optional
-- ($1 queue, $2 name, $3 state, $4 tenant, $5 id prefix, $6 created from, $7 created before).
-- Reads x_jobs_created_idx backwards; $10 rows.
select {summary_columns}
from {schema}.x_jobs j
where ($1::text is null or j.queue = $1)
  and ($2::text is null or j.name = $2)
  and ($3::text is null or j.state = $3)
  and ($4::text is null or j.tenant_id = $4)
  and ($5::text is null or j.id::text like $5 || '%')
  and ($6::timestamptz is null or j.created_at >= $6)
  and ($7::timestamptz is null or j.created_at < $7)
  and ($8::timestamptz is null or (j.created_at, j.id) < ($8, $9::uuid))
order by j.created_at desc, j.id desc
limit $10
