-- outbox_refused: sets aside a row the job store refused for good, fenced on the outbox's lease, with the
-- code. $1 holder, $2 id, $3 code, $4 now.
-- It writes the lease row as the mark does (outbox_published.sql), so a claim that read the
-- outbox before it does not answer the row again.
with held as (
    update {schema}.x_outbox_lease
    set claimed_by = claimed_by
    where id = 1 and claimed_by = $1
    returning 1
)
update {schema}.x_outbox
set refused_at = $4, last_error_code = $3, last_error_at = $4
where id = $2 and published_at is null and refused_at is null
  and exists (select 1 from held)
