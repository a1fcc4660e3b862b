-- outbox_stats: the outbox as an operator sees it; each count reads its own partial index, and the lease its
-- one row.
select
    (select count(*) from {schema}.x_outbox
        where published_at is null and refused_at is null) as backlog,
    (select min(staged_at) from {schema}.x_outbox
        where published_at is null and refused_at is null) as oldest_staged_at,
    (select count(*) from {schema}.x_outbox
        where published_at is null and refused_at is null and publish_attempts > 0) as failing,
    (select last_error_code from {schema}.x_outbox
        where published_at is null and refused_at is null and last_error_at is not null
        order by last_error_at desc limit 1) as last_error_code,
    (select count(*) from {schema}.x_outbox where refused_at is not null) as refused,
    (select count(*) from {schema}.x_outbox where published_at is not null) as published,
    (select claimed_by from {schema}.x_outbox_lease where id = 1) as lease_holder,
    (select claimed_at from {schema}.x_outbox_lease where id = 1) as lease_claimed_at
