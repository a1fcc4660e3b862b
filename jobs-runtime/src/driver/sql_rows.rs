//! How the SQL drivers read the port's records from a row, so the records themselves name no
//! database library: `sqlx::FromRow` for each record, once per database whose driver this
//! build has (Postgres' `PgRow`, SQLite's `SqliteRow`), from one list of columns.
//!
//! A column read as a wider integer than the field (`attempt` is an `int` column and a `u32`
//! field) is converted with `TryFrom`, and a value out of range is a decode error of that column,
//! never a wrapped number. A JSON column that may be null (`progress`, `result`) reads as an
//! `Option`.

use sqlx::error::BoxDynError;
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::introspect::{BulkResult, JobHistoryEntry, JobSummary};
use super::lease::HeldLease;
use super::records::{GroupMember, GroupRecord, JobEvent, JobRecord, StepRecord};

/// Reads `column` as `S` and converts it to the field's type.
fn narrowed<'r, S, T, R>(row: &'r R, column: &'static str) -> Result<T, sqlx::Error>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    S: Decode<'r, R::Database> + Type<R::Database>,
    T: TryFrom<S>,
    T::Error: Into<BoxDynError>,
{
    let stored: S = row.try_get(column)?;
    T::try_from(stored).map_err(|e| sqlx::Error::ColumnDecode {
        index: column.to_string(),
        source: e.into(),
    })
}

/// `impl FromRow<$row>` for each record, field by field: `field` reads the column of its name,
/// `field as i32` reads an `i32` and narrows it, `field as nullable_i32` a nullable one,
/// `field as json` reads a nullable JSON column, `field = "column"` reads another column.
macro_rules! from_rows {
    ($row:ty; $($record:ident { $($field:ident $(as $how:ident)? $(= $column:literal)?),* $(,)? })*) => {
        $(
            impl<'r> sqlx::FromRow<'r, $row> for $record {
                fn from_row(row: &'r $row) -> Result<Self, sqlx::Error> {
                    Ok($record {
                        $($field: from_rows!(@read row, $field $(as $how)? $(= $column)?),)*
                    })
                }
            }
        )*
    };
    (@read $row:ident, $field:ident) => {
        $row.try_get(stringify!($field))?
    };
    (@read $row:ident, $field:ident = $column:literal) => {
        $row.try_get($column)?
    };
    (@read $row:ident, $field:ident as nullable_i32) => {
        $row.try_get::<Option<i32>, _>(stringify!($field))?
            .map(|stored| {
                u32::try_from(stored).map_err(|e| sqlx::Error::ColumnDecode {
                    index: stringify!($field).to_string(),
                    source: e.into(),
                })
            })
            .transpose()?
    };
    (@read $row:ident, $field:ident as json) => {
        $row.try_get::<Option<sqlx::types::Json<_>>, _>(stringify!($field))?
            .map(|json| json.0)
    };
    (@read $row:ident, $field:ident as $stored:ident) => {
        narrowed::<$stored, _, _>($row, stringify!($field))?
    };
}

/// Every record a SQL driver reads from a row, for one database's row type.
macro_rules! records_from {
    ($row:ty) => {
        from_rows! { $row;
            JobRecord {
                id, run_id, name, queue, input, idempotency_key, tenant_id, state,
                attempt as i32, max_attempts as i32, run_at, priority, created_at, updated_at,
                last_error, last_error_code, claimed_by, claims, visible_at, progress as json,
                traceparent, actor, unique_until, result as json,
            }
            StepRecord {
                run_id, name, status, output, error, attempts as i32, wake_at, wait, updated_at,
            }
            JobEvent { id, name, key, payload, published_at }
            JobSummary {
                id, run_id, name, queue, tenant_id, state, attempt as i32, max_attempts as i32,
                run_at, priority, created_at, updated_at, last_error, last_error_code,
                progress as json,
            }
            BulkResult { affected as i64, remaining as i64 }
            JobHistoryEntry { job_id, at, actor, verb, detail }
            HeldLease { key = "lease_key", slot as i32, holder, fence, expires_at }
            GroupMember {
                position as i32, id = "job_id", state, result as json, last_error,
                last_error_code,
            }
            GroupRecord {
                id, waiter, parent = "parent_id", size as i32, settled as i32,
                need as nullable_i32, done_at, created_at,
            }
        }
    };
}

#[cfg(feature = "postgres")]
records_from!(sqlx::postgres::PgRow);

#[cfg(feature = "sqlite")]
records_from!(sqlx::sqlite::SqliteRow);

/// `impl FromRow<$row>` for an outbox row as the relay's claim returns it (`outbox_claim`).
macro_rules! outbox_record_from {
    ($row:ty) => {
        impl<'r> sqlx::FromRow<'r, $row> for super::outbox::OutboxRecord {
            fn from_row(row: &'r $row) -> Result<Self, sqlx::Error> {
                let on_conflict: String = row.try_get("on_conflict")?;
                Ok(super::outbox::OutboxRecord {
                    request: super::records::EnqueueRequest {
                        id: row.try_get("id")?,
                        run_id: row.try_get("run_id")?,
                        name: row.try_get("name")?,
                        queue: row.try_get("queue")?,
                        input: row.try_get("input")?,
                        idempotency_key: row.try_get("idempotency_key")?,
                        tenant_id: row.try_get("tenant_id")?,
                        max_attempts: narrowed::<i32, _, _>(row, "max_attempts")?,
                        run_at: row.try_get("run_at")?,
                        priority: row.try_get("priority")?,
                        on_conflict: super::records::ConflictPolicy::from_stored(&on_conflict),
                        traceparent: row.try_get("traceparent")?,
                        actor: row.try_get("actor")?,
                        unique_for: super::records::unique_for_of_ms(row.try_get("unique_for_ms")?),
                        dependencies: None,
                        now: row.try_get("staged_at")?,
                    },
                    publish_attempts: narrowed::<i32, _, _>(row, "publish_attempts")?,
                })
            }
        }
    };
}

#[cfg(feature = "postgres")]
outbox_record_from!(sqlx::postgres::PgRow);
#[cfg(feature = "sqlite")]
outbox_record_from!(sqlx::sqlite::SqliteRow);
