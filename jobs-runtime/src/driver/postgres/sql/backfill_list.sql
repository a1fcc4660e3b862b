-- backfill_list: passes, newest first, filtered by name, status and run.
-- $1 name, $2 status, $3 run_id (each null for any), $4 limit
select id, name, tenant_id, run_id, job_id, checksum, status, forced, batches, rows_processed,
       last_cursor, started_at, updated_at, finished_at
from {schema}.x_backfills
where ($1::text is null or name = $1)
  and ($2::text is null or status = $2)
  and ($3::uuid is null or run_id = $3)
order by started_at desc, id desc
limit $4
