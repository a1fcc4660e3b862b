-- 0011: the enqueue's wake throttle now seeks x_jobs_fair_idx by queue, tenant and due time, so
-- the partial index 0010 added for it is one index fewer for every insert to maintain.
drop index if exists {schema}.x_jobs_ready_created_idx;
