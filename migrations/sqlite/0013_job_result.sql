-- 0013: kept results (`#[job(.., keep_result)]`). A job that declares it keeps its body's `Ok`
-- value, as JSON text, in `result`, written by the ack that settles it `done` and cleared by a
-- requeue; null for every other job. It lives in the row, so it goes when the row is purged or
-- removed.
alter table x_jobs add column result text;
