-- introspect_queue_pause: pauses queue $1 (idempotent: the first pause time stays). The claim
-- reads this row: every worker stops taking from the queue at its next claim.
insert into {schema}.x_job_pauses (queue, paused_at)
values ($1, $2)
on conflict (queue) do nothing
