-- job_replace_queued: debounce. After job_enqueue_holder named a live holder of the key ($1)
-- that is another job, a debounced enqueue gives it its input ($2) and run time ($3) as of $4,
-- only while it is still queued (ready or delayed): one that started meanwhile is left as it
-- is, and the enqueue answers it deduped all the same. One primary-key probe. A run time after
-- $4 is announced on the wake channel ($5, fragment_due_payload.sql), so an idle worker starts
-- the job when due.
update {schema}.x_jobs
set input = $2,
    run_at = $3,
    state = case when $3 <= $4 then 'ready' else 'delayed' end,
    updated_at = $4
where id = $1
  and state in ('ready', 'delayed')
returning id, priority,
    case when run_at > $4 then (select true from pg_notify($5, {due_payload})) end as woke
