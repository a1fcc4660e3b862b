-- 0015: who asked for the job (an enqueue's actor: a user id, a service name), shown by the
-- operator surface and passed to spans. Null when the enqueue named none.
alter table {schema}.x_jobs add column if not exists actor text;
