-- introspect_queue_pause: pauses queue $1 at $2, by actor $3 (idempotent: the first pause's
-- time and actor stay). The claim reads this row: every worker stops taking from the queue at
-- its next claim.
insert into {schema}.x_job_pauses (queue, paused_at, paused_by)
values ($1, $2, $3)
on conflict (queue) do nothing
