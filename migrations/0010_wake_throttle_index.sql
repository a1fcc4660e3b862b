-- 0010: the enqueue's wake throttle looks for an unclaimed ready row of the queue created in the
-- current slot. A partial index over exactly that (ready rows by queue and creation time) lets
-- it seek there in one probe, however long the queue; it replaces the unconditional
-- x_jobs_queue_created_idx, which the planner passed over for the fair index and then walked
-- the whole queue.
create index if not exists x_jobs_ready_created_idx
    on {schema}.x_jobs (queue, created_at)
    where state = 'ready';

drop index if exists {schema}.x_jobs_queue_created_idx;
