-- introspect_worker_forget: deletes worker $1 registry row (a graceful stop).
delete from {schema}.x_job_workers where id = $1
