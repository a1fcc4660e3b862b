-- Hands rows back unpublished, fenced on the holder. $3, when not null, is the row whose
-- publish failed: its attempts go up and the failure's code ($4) is kept. $5 now.
update {schema}.x_outbox
set claimed_by = null, claimed_at = null,
    publish_attempts = publish_attempts + case when id = $3 then 1 else 0 end,
    last_error_code = case when id = $3 then $4 else last_error_code end,
    last_error_at = case when id = $3 then $5 else last_error_at end
where id = any($2) and claimed_by = $1
  and published_at is null and refused_at is null
