-- 0016: the purge job deletes expired events oldest expiry first, in bounded batches
-- (event_purge.sql). Without an index on the expiry each batch would scan the whole events
-- table; with it, a batch seeks to the oldest expired rows and stops at its limit.
create index if not exists x_job_events_expiry_idx
    on {schema}.x_job_events (expires_at);
