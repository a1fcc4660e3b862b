-- Sets aside a row the job store refused for good, fenced on the outbox's lease, with the
-- code. $1 holder, $2 id, $3 code, $4 now.
update {schema}.x_outbox
set refused_at = $4, last_error_code = $3, last_error_at = $4
where id = $2 and published_at is null and refused_at is null
  and exists (select 1 from {schema}.x_outbox_lease where id = 1 and claimed_by = $1)
