-- 0015: the outbox relay's lease as one row, as on Postgres (0032): a claim stamps its holder,
-- the time and the last row it took here, not on every row it takes, and the marks are fenced
-- on it. The per-row holder columns of files migrated before are dropped by the outbox's
-- column check (SQLite drops a column only when no index names it). SqliteOutbox::install
-- runs this file too: every statement is idempotent.
create table if not exists x_outbox_lease (
    id             integer primary key check (id = 1),
    claimed_by     text,
    claimed_at     text,
    last_staged_at text,
    last_id        blob
);
drop index if exists x_outbox_held_idx;
