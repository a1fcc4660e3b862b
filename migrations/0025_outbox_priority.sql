-- 0025: an outbox row carries its job's priority (0024) to the job store.
-- PostgresOutbox::install runs this same file on an app database of its own, after 0023: it
-- is idempotent.
alter table {schema}.x_outbox add column if not exists priority smallint not null default 0;
