-- 0032: the outbox relay's lease as one row. A claim used to stamp its holder on every row it
-- took (a second write of each row, and an index entry of its own); now it stamps the holder,
-- the time and the last row it took on this row, in the statement that reads the head, and
-- the marks are fenced on it. One relay holds the head at a time, as before; the rows are
-- written once after their stage, when they are marked. PostgresOutbox::install runs this
-- file too: every statement is idempotent.
create table if not exists {schema}.x_outbox_lease (
    id             smallint    primary key check (id = 1),
    claimed_by     text,
    claimed_at     timestamptz,
    last_staged_at timestamptz,
    last_id        uuid
);
drop index if exists {schema}.x_outbox_held_idx;
alter table {schema}.x_outbox drop column if exists claimed_by;
alter table {schema}.x_outbox drop column if exists claimed_at;
-- The audit trail keeps which relay published a row, written by the mark.
alter table {schema}.x_outbox add column if not exists published_by text;
