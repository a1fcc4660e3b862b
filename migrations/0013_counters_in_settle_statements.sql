-- 0013: the settle statements (ack, batched ack, nack, the claim's burial) count what they
-- settle themselves, in a CTE (fragment_count_settled.sql), so the statement trigger 0006 added
-- no longer runs a plpgsql call, with transition tables of every updated row, after every claim,
-- heartbeat and progress write as well (about 7% of the server's time end to end, by perf).
drop trigger if exists x_job_counters_count on {schema}.x_jobs;
drop function if exists {schema}.x_job_counters_count();
