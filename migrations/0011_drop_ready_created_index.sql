-- 0011: the enqueue's wake throttle now seeks x_jobs_fair_idx by queue, tenant and due time, and
-- the slot's newest rows on x_jobs_created_idx, so the partial index 0010 added for it is one
-- index fewer for every insert to maintain.
drop index if exists {schema}.x_jobs_ready_created_idx;
