-- webhook_attempts_purge: at most $2 attempts sent before $1, oldest first, on
-- x_webhook_attempts_at_idx; endpoints keep their standing.
delete from {schema}.x_webhook_attempts
where id in (
    select id from {schema}.x_webhook_attempts
    where at < $1
    order by at
    limit $2
)
