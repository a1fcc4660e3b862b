-- 0002: the scheduler. One leader lease row, each task's watermark and last fire, task pauses.
-- Every name is qualified with the schema the driver was given (the {schema} placeholder).

-- The leader lease: one row, an expiring lease (never a session advisory lock, which a pool
-- cannot hold). Acquiring it IS renewing it; a graceful stop deletes it.
create table if not exists {schema}.x_scheduler_leader (
    name       text        primary key,
    holder     text        not null,
    expires_at timestamptz not null
);

-- Per task: the watermark (every occurrence at or before it was handled: fired or passed), and
-- the last occurrence that dispatched. The watermark is the fence of the atomic fire.
create table if not exists {schema}.x_scheduler_state (
    task            text        primary key,
    watermark       timestamptz not null,
    last_occurrence timestamptz,
    fired_at        timestamptz
);

-- A paused task is not dispatched; its watermark stays, so on resume its catch-up decides.
create table if not exists {schema}.x_task_pauses (
    task      text        primary key,
    paused_at timestamptz not null
);
