-- outbox_release: hands the head back at once, fenced on the outbox's lease: frees the lease, and counts the
-- rows of $2 still unpublished (found by their primary key, as the mark finds them). $3, when
-- not null, is the row whose publish failed: its attempts go up and the failure's code ($4) is
-- kept. $1 holder, $5 now.
with freed as (
    update {schema}.x_outbox_lease
    set claimed_by = null, claimed_at = null
    where id = 1 and claimed_by = $1
    returning 1
)
update {schema}.x_outbox
set publish_attempts = publish_attempts + case when id = $3 then 1 else 0 end,
    last_error_code = case when id = $3 then $4 else last_error_code end,
    last_error_at = case when id = $3 then $5 else last_error_at end
where id = any($2) and coalesce(published_at, refused_at) is null
  and exists (select 1 from freed)
