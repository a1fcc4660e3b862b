-- 0031: groups of jobs awaited together (`driver/port/records/group.rs`): the children a parent
-- invokes (`Run::invoke`, `Run::invoke_all`) and the members of a batch. A group names its
-- waiter, the job made due once `need` of its members have settled.
--
-- How each member is counted once, crash-safe, without a hot row (driver/postgres/groups.rs):
-- a join first marks every member `has_dependents` (0029), each mark committed on its own, so a
-- settle that follows (an ack, a nack to dead or failed, a cancel, a dependency's cancel, a
-- burial, a removal alike) notes the member in `x_job_releases` by 0029's triggers in the
-- settling transaction itself. The join then files the members and notes the group itself in
-- `x_job_releases` (a noted id is a settled job's or a group's), in one transaction. The
-- release pass that takes the notes (run right after the join and after such settles, and by
-- every worker's sweep once a minute for what a dead process left) folds them: a noted job is
-- counted in the groups it belongs to, and a noted group has the members its joins filed
-- checked once (`checked`: positions below it were), each one that ended counted. A member's
-- `settled` flag makes each count happen once, whichever way reaches it first; a requeued and
-- settled-again member is not counted twice. A settle itself never touches the group row: its
-- children settle in parallel, and a group's row is updated once per pass.

-- A group. `size` and `settled` count members; `need` is null while it is open (a batch being
-- added to); `done_at` is when `settled` first reached `need`; `checked` is how many of its
-- members (by position) the release pass has checked since their join. The parent index finds
-- a job's children (the cancel cascade, the links); the waiter index a batch callback's batch.
create table if not exists {schema}.x_job_groups (
    id         uuid        primary key,
    waiter     uuid        not null,
    parent_id  uuid,
    size       integer     not null default 0,
    settled    integer     not null default 0,
    need       integer,
    done_at    timestamptz,
    checked    integer     not null default 0,
    created_at timestamptz not null
);
create index if not exists x_job_groups_parent_idx
    on {schema}.x_job_groups (parent_id) where parent_id is not null;
create index if not exists x_job_groups_batch_waiter_idx
    on {schema}.x_job_groups (waiter) where parent_id is null;

-- A group's members in join order (`position` from 0); `settled` once it was counted. The
-- second index finds a settled job's groups (the fold) and keeps a job in a group once.
-- A member row outlives its job: a member whose row retention removed reads back without a
-- state.
create table if not exists {schema}.x_job_group_members (
    group_id uuid    not null,
    position integer not null,
    job_id   uuid    not null,
    settled  boolean not null default false,
    primary key (group_id, position)
);
create unique index if not exists x_job_group_members_job_idx
    on {schema}.x_job_group_members (job_id, group_id);
