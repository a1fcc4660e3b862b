-- backfill_finish: settles a pass completed or failed.
-- $1 run_id, $2 status, $3 batches, $4 rows, $5 last_cursor, $6 now
update {schema}.x_backfills
set status = $2, batches = $3, rows_processed = $4, last_cursor = $5,
    updated_at = $6, finished_at = $6
where run_id = $1
