-- event_mark: the snapshot a new wait begins under. Every event this snapshot cannot see
-- (committed after it, whatever its stamp) belongs to the wait.
select pg_current_snapshot()::text
