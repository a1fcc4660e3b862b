-- introspect_job_list_newer: the page before a cursor ($8 created_at, $9 id): the rows just
-- newer than it, read oldest first (the caller turns the page back to newest first). Filters
-- as in introspect_job_list_older; $10 rows.
select {summary_columns}
from {schema}.x_jobs j
where ($1::text is null or j.queue = $1)
  and ($2::text is null or j.name = $2)
  and ($3::text is null or j.state = $3)
  and ($4::text is null or j.tenant_id = $4)
  and ($5::text is null or j.id::text like $5 || '%')
  and ($6::timestamptz is null or j.created_at >= $6)
  and ($7::timestamptz is null or j.created_at < $7)
  and (j.created_at, j.id) > ($8::timestamptz, $9::uuid)
order by j.created_at asc, j.id asc
limit $10
