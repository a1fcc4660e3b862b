-- outbox_purge: deletes published and refused rows settled before $1, oldest first, at most $2.
delete from {schema}.x_outbox
where id in (
    (select id from {schema}.x_outbox where published_at < $1 order by published_at limit $2)
    union all
    (select id from {schema}.x_outbox where refused_at < $1 order by refused_at limit $2)
    limit $2
)
