-- job_get: one job row.
select {job_columns} from {schema}.x_jobs where id = $1
