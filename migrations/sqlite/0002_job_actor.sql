-- 0002: who asked for the job (an enqueue's actor: a user id, a service name), shown by the
-- operator surface and passed to spans. Null when the enqueue named none.
alter table x_jobs add column actor text;
