-- 0022: x_jobs_created_idx in ascending order. Rows arrive in creation order, so each new entry
-- is the index's largest: ascending, it lands on the rightmost leaf, which Postgres inserts into
-- without a descent from the root and splits leaving the old page full; descending (0006), it
-- landed on the leftmost leaf, each insert descended, and every split left two half-full pages.
-- Measured in the server alone (pgbench, 1,000-row INSERT ... SELECT of job rows, every index,
-- three rounds): 92-99 batches/s against 74-85, and 41 bytes of index per row against 73. Every
-- reader orders both columns the same way (newest first or oldest first), which a scan of the
-- ascending index serves in either direction.
-- Rebuilding the index locks the table for writes while it builds.
drop index if exists {schema}.x_jobs_created_idx;
create index if not exists x_jobs_created_idx on {schema}.x_jobs (created_at, id);
