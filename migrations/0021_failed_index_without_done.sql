-- 0021: done rows have their own index for the retention sweep (x_jobs_done_idx, 0007), so the
-- index the failed, dead and cancelled sweep reads no longer carries them too: an ack wrote an
-- entry into both, and that sweep walked every done row on its way.
create index if not exists x_jobs_failed_idx
    on {schema}.x_jobs (updated_at)
    where state in ('failed', 'dead', 'cancelled');

drop index if exists {schema}.x_jobs_finished_idx;
