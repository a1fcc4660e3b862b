-- 0027: an outbox row carries its job's unique period (0026) to the job store, in whole
-- milliseconds (null: none); the job store counts it from the job's creation, when the relay
-- publishes the row. PostgresOutbox::install runs this same file on an app database of its
-- own, after 0023 and 0025: it is idempotent.
alter table {schema}.x_outbox add column if not exists unique_for_ms bigint;
