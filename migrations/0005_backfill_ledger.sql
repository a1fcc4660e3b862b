-- 0005: the ledger of backfill passes, and the driver's own double-entry book.

-- One row per backfill pass (one run of a #[backfill]). A report, never a resume source: a
-- killed pass resumes from its durable steps. Only a `completed` row blocks a new pass of the
-- same name and tenant; a forced pass writes a new row; a retry adopts its own (run_id).
create table if not exists {schema}.x_backfills (
    id             uuid        primary key,
    name           text        not null,
    -- '' for a pass over every tenant.
    tenant_id      text        not null default '',
    run_id         uuid        not null unique,
    job_id         uuid        not null,
    checksum       text        not null,
    status         text        not null check (status in ('running', 'completed', 'failed')),
    forced         boolean     not null default false,
    batches        bigint      not null default 0,
    rows_processed bigint      not null default 0,
    -- The source's cursor after the last page: a key, never a row.
    last_cursor    jsonb,
    started_at     timestamptz not null,
    updated_at     timestamptz not null,
    finished_at    timestamptz
);

-- backfill_begin looks up the newest completed pass of a name and tenant; backfill_list reads
-- newest first.
create index if not exists x_backfills_name_idx
    on {schema}.x_backfills (name, tenant_id, status, finished_at desc);
create index if not exists x_backfills_started_idx
    on {schema}.x_backfills (started_at desc, id desc);

-- The driver's double-entry book (`#[ledger(book = driver)]`): a posting key is written once per
-- ledger and tenant, one row per line.
create table if not exists {schema}.x_ledger_lines (
    ledger      text        not null,
    -- '' for an untenanted posting.
    tenant_id   text        not null default '',
    posting_key text        not null,
    line        integer     not null check (line >= 0),
    account     text        not null check (btrim(account) <> ''),
    minor       bigint      not null,
    currency    text        not null check (currency ~ '^[A-Z]{3}$'),
    scale       smallint,
    run_id      uuid        not null,
    posted_at   timestamptz not null,
    primary key (ledger, tenant_id, posting_key, line)
);
