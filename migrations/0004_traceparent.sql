-- 0004: the W3C traceparent of the enqueue, so one trace spans the enqueue and every run.
alter table {schema}.x_jobs add column if not exists traceparent text;
