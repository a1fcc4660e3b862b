-- job_claim: per queue ($1 queues, $2 free slots), takes the due rows in claim order and marks
-- them running under worker $3 until $5; one statement, however many queues and slots.
-- Rows are locked FOR UPDATE SKIP LOCKED over x_jobs_claim_idx and x_jobs_lapsed_idx, so
-- concurrent claimers never wait on each other and never take the same row, and the cost does
-- not grow with the number of rows queued behind the ones taken.
-- A running row whose lease lapsed ($4 = now) is taken again; if it already used its final
-- attempt it is buried instead (dead, or failed for the names in $6), with
-- LEASE_LAPSED_FINAL_ATTEMPT, and never handed out. A paused queue yields nothing.
with demand as (
    select d.queue, d.slots
    from unnest($1::text[], $2::int[]) as d(queue, slots)
    where not exists (select 1 from {schema}.x_job_pauses p where p.queue = d.queue)
),
lapsed as (
    select l.id, l.queue, l.visible_at as due, l.attempt >= l.max_attempts as exhausted
    from demand d
    cross join lateral (
        select j.id, j.queue, j.visible_at, j.attempt, j.max_attempts
        from {schema}.x_jobs j
        where j.queue = d.queue and j.state = 'running' and j.visible_at <= $4
        order by j.visible_at, j.id
        limit d.slots
        for update skip locked
    ) l
),
queued as (
    select q.id, q.queue, q.run_at as due, false as exhausted
    from demand d
    cross join lateral (
        select j.id, j.queue, j.run_at
        from {schema}.x_jobs j
        where j.queue = d.queue
          and j.state in ('ready', 'delayed', 'suspended')
          and j.run_at <= $4
        order by j.run_at, j.id
        limit d.slots
        for update skip locked
    ) q
),
ranked as (
    select c.id, row_number() over (partition by c.queue order by c.due, c.id) as n, d.slots
    from (
        select id, queue, due from lapsed where not exhausted
        union all
        select id, queue, due from queued
    ) c
    join demand d on d.queue = c.queue
),
buried as (
    update {schema}.x_jobs j
    set state = case when j.name = any($6::text[]) then 'failed' else 'dead' end,
        visible_at = null,
        last_error = 'LEASE_LAPSED_FINAL_ATTEMPT',
        last_error_code = null,
        updated_at = $4
    from lapsed l
    where l.exhausted and j.id = l.id
    returning {j_job_columns}
),
claimed as (
    update {schema}.x_jobs j
    set state = 'running',
        attempt = j.attempt + 1,
        claims = j.claims + 1,
        claimed_by = $3,
        visible_at = $5,
        updated_at = $4
    from ranked r
    where r.n <= r.slots and j.id = r.id
    returning {j_job_columns}
)
select false as buried, {job_columns} from claimed
union all
select true as buried, {job_columns} from buried
