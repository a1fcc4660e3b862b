-- introspect_job_promote: makes job $1, waiting on its run time (delayed, or ready and backing
-- off), due at $2, and announces its queue on channel $3. Not waiting: no row.
update {schema}.x_jobs
set state = 'ready', run_at = $2, updated_at = $2
where id = $1 and state in ('delayed', 'ready') and run_at > $2
returning {job_columns}, (select true from pg_notify($3, queue)) as woke
