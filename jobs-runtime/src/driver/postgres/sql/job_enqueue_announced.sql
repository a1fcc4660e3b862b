-- job_enqueue_announced: job_enqueue with its wake announcement ($15 the wake channel), for a
-- job due later (every one: its due time, fragment_due_payload.sql, so an idle worker starts it
-- when due) and for a job due now that is the first of its queue in announce.rs' window (its
-- queue). Answers the new row, or nothing when it inserted nothing (then nothing is announced).
-- The payload is the queue name or a due time, never an id, an input or a tenant.
{enqueue_insert}
returning
    case
        when run_at > $10 then (select true from pg_notify($15, {due_payload}))
        else (select true from pg_notify($15, $4))
    end as woke
