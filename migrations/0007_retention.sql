-- 0007: done rows are kept a shorter window than failed, dead and cancelled ones, so the done
-- sweep seeks on its own partial index (the others use x_jobs_finished_idx).
create index if not exists x_jobs_done_idx
    on {schema}.x_jobs (updated_at)
    where state = 'done';
