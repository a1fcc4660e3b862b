-- backfill_progress: the counts and cursor after a processed page (a replayed page writes none).
-- $1 run_id, $2 batches, $3 rows, $4 last_cursor, $5 now
update {schema}.x_backfills
set batches = $2, rows_processed = $3, last_cursor = $4, updated_at = $5
where run_id = $1
