-- 0030: kept results (`#[job(.., keep_result)]`). A job that declares it keeps its body's `Ok`
-- value, serialised, in `result`, written by the ack that settles it `done` (job_ack.sql,
-- job_ack_many.sql) and cleared by a requeue; null for every other job. It lives in the row, so
-- it goes when the row is purged or removed. A nullable column without a default is added
-- without rewriting the table. A row a claim takes is live, so its result is null: the claims
-- carry nothing more.
alter table {schema}.x_jobs add column if not exists result jsonb;
