-- 0014: groups of jobs awaited together (`driver/port/records/group.rs`), as Postgres' 0031: the
-- children a parent invokes and the members of a batch. A group names its waiter, the job made
-- due once `need` of its members have settled.
--
-- SQLite has one writer, so a member is counted inline, in the transaction of the statement
-- that ends it: the join marks each live member `in_group`, and the trigger below (which only
-- such rows fire) counts it in every group still counting it, once (its member row's `settled`
-- flag), marks a group it completes done and makes the group's waiter due, announcing it with
-- a due hint (0009) so an idle worker of any process claims it. The trigger knows no clock:
-- the settling statement's `updated_at` is its now. A removal carries no `updated_at` of its
-- own, so a removed live member is noted in `x_job_releases` instead (0012), and the release
-- pass that follows every removal counts it at the removal's time
-- (driver/sqlite/groups.rs).
create table if not exists x_job_groups (
    id         blob    primary key,
    waiter     blob    not null,
    parent_id  blob,
    size       integer not null default 0,
    settled    integer not null default 0,
    need       integer,
    done_at    text,
    created_at text    not null
) without rowid;
create index if not exists x_job_groups_parent_idx
    on x_job_groups (parent_id) where parent_id is not null;
create index if not exists x_job_groups_batch_waiter_idx
    on x_job_groups (waiter) where parent_id is null;

-- A group's members in join order (`position` from 0); `settled` once counted. The second index
-- finds a job's groups and keeps a job in a group once. A member row outlives its job.
create table if not exists x_job_group_members (
    group_id blob    not null,
    position integer not null,
    job_id   blob    not null,
    settled  integer not null default 0,
    primary key (group_id, position)
) without rowid;
create unique index if not exists x_job_group_members_job_idx
    on x_job_group_members (job_id, group_id);

-- Whether some group counts this job when it stops being live.
alter table x_jobs add column in_group integer not null default 0;

create trigger if not exists x_jobs_count_group_member
    after update of state on x_jobs
    when new.in_group
     and old.state in ('ready', 'delayed', 'running', 'suspended')
     and new.state in ('done', 'failed', 'dead', 'cancelled')
begin
    update x_job_groups set settled = settled + 1
    where id in (
        select group_id from x_job_group_members where job_id = new.id and settled = 0
    );
    update x_job_group_members set settled = 1 where job_id = new.id and settled = 0;
    insert into x_job_due_hints (queue, at)
    select w.queue, new.updated_at from x_jobs w
    where w.state in ('suspended', 'delayed')
      and w.id in (
          select g.waiter from x_job_groups g
          where g.id in (select group_id from x_job_group_members where job_id = new.id)
            and g.done_at is null and g.need is not null and g.settled >= g.need
      );
    update x_jobs set state = 'ready', run_at = new.updated_at, updated_at = new.updated_at
    where state in ('suspended', 'delayed')
      and id in (
          select g.waiter from x_job_groups g
          where g.id in (select group_id from x_job_group_members where job_id = new.id)
            and g.done_at is null and g.need is not null and g.settled >= g.need
      );
    update x_job_groups set done_at = new.updated_at
    where id in (select group_id from x_job_group_members where job_id = new.id)
      and done_at is null and need is not null and settled >= need;
end;

create trigger if not exists x_jobs_note_group_member_removed
    after delete on x_jobs
    when old.in_group
     and old.state in ('ready', 'delayed', 'running', 'suspended')
begin
    insert or ignore into x_job_releases (job_id, at) values (old.id, old.updated_at);
end;
