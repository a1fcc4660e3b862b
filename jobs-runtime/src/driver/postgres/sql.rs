//! The named statements of the Postgres driver, one `.sql` file each beside this module, so an
//! operator can read and run the exact statement. Each is rendered once per driver for its
//! schema; every value is a bound parameter.

use std::sync::Arc;

use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

use crate::error::{ErrorCode, JobError};

/// The job columns every read returns (never `*`). `job_claim_from.sql` spells one null per
/// column in its head and lapse rows: a column added here is added there too.
const JOB_COLUMNS: &[&str] = &[
    "id",
    "run_id",
    "name",
    "queue",
    "input",
    "idempotency_key",
    "tenant_id",
    "state",
    "attempt",
    "max_attempts",
    "run_at",
    "priority",
    "created_at",
    "updated_at",
    "last_error",
    "last_error_code",
    "claimed_by",
    "claims",
    "visible_at",
    "progress",
    "traceparent",
    "actor",
    "unique_until",
    "result",
];

/// The columns an operator list row carries (never the input).
const SUMMARY_COLUMNS: &str = "j.id, j.run_id, j.name, j.queue, j.tenant_id, j.state, j.attempt, \
     j.max_attempts, j.run_at, j.priority, j.created_at, j.updated_at, j.last_error, j.last_error_code, \
     j.progress";

/// Fixed SQL text shared by several statements, spliced where a statement names it in braces
/// (`sql/fragment_<name>.sql`), before the schema is.
const FRAGMENTS: &[(&str, &str)] = &[
    (
        "count_settled",
        include_str!("sql/fragment_count_settled.sql"),
    ),
    (
        "enqueue_insert",
        include_str!("sql/fragment_enqueue_insert.sql"),
    ),
    (
        "wake_unless_waiting",
        include_str!("sql/fragment_wake_unless_waiting.sql"),
    ),
    // After wake_unless_waiting, which names it.
    ("due_payload", include_str!("sql/fragment_due_payload.sql")),
    (
        "claim_running",
        include_str!("sql/fragment_claim_running.sql"),
    ),
    // Before next_class, which they name.
    (
        "floor_classes",
        include_str!("sql/fragment_floor_classes.sql"),
    ),
    (
        "tenant_classes",
        include_str!("sql/fragment_tenant_classes.sql"),
    ),
    ("next_class", include_str!("sql/fragment_next_class.sql")),
];

macro_rules! statements {
    ($($name:ident),* $(,)?) => {
        /// Every statement, rendered for one schema.
        #[derive(Debug)]
        pub(crate) struct Statements {
            $(pub $name: SqlStr,)*
        }

        impl Statements {
            pub(crate) fn new(schema: &str) -> Self {
                Statements {
                    $($name: safe(render(include_str!(concat!("sql/", stringify!($name), ".sql")), schema)),)*
                }
            }
        }
    };
}

statements!(
    job_enqueue,
    job_enqueue_announced,
    job_enqueue_in,
    job_enqueue_holder,
    job_unique_lapse,
    job_replace_queued,
    job_enqueue_many,
    job_enqueue_many_dedupe,
    job_ack_many,
    job_purge,
    job_claim,
    job_claim_from,
    job_claim_known,
    job_claim_one,
    job_enqueue_dependent,
    job_enqueue_dependent_one,
    dependency_lock,
    dependency_link,
    dependency_release_take,
    dependency_release_judge,
    dependency_release_apply,
    job_links,
    group_join_mark,
    group_join_unmarked,
    group_join_mark_one,
    group_note,
    group_open,
    group_join,
    group_get,
    group_members,
    group_wake,
    group_fold,
    group_wake_waiters,
    job_cancel_children,
    job_ack,
    job_nack,
    job_heartbeat,
    job_progress,
    job_get,
    job_cancel,
    queue_stats,
    queue_depth,
    queue_next_due,
    step_list,
    step_put,
    event_publish,
    event_mark,
    event_find,
    event_purge,
    scheduler_lead,
    scheduler_resign,
    scheduler_leader,
    task_watermarks,
    task_fire,
    task_pause,
    task_resume,
    task_paused,
    task_fires,
    lease_acquire_lock,
    lease_acquire,
    lease_renew,
    lease_release,
    lease_holders,
    introspect_counter_totals,
    introspect_counters,
    introspect_counters_rollup,
    introspect_job_history,
    introspect_job_list_newer,
    introspect_job_list_older,
    introspect_job_promote,
    introspect_job_promote_many,
    introspect_job_remove,
    introspect_job_remove_many,
    introspect_job_requeue,
    introspect_job_requeue_lapse,
    introspect_job_requeue_many,
    introspect_job_requeue_many_lapse,
    introspect_queue_pause,
    introspect_queue_paused,
    introspect_queue_resume,
    introspect_worker_announce,
    introspect_worker_forget,
    introspect_worker_list,
    history_append,
    history_purge,
    group_purge,
    backfill_lock,
    backfill_begin,
    backfill_progress,
    backfill_finish,
    backfill_list,
    backfill_migrations_table,
    backfill_migration_applied,
    ledger_insert,
    ledger_lines,
    webhook_standing,
    webhook_record,
    webhook_disable,
    webhook_enable,
    webhook_attempts,
    webhook_attempts_purge,
);

/// A rendered statement. Safe to run: the only text spliced into the `.sql` files is a schema
/// name that [`check_schema`] admitted and the fixed column list; every value is bound.
pub(crate) fn safe(sql: String) -> SqlStr {
    AssertSqlSafe(Arc::<str>::from(sql)).into_sql_str()
}

/// Whether `part` is a plain identifier Postgres need not fold or escape: a letter or `_`, then
/// letters, digits and `_`, at most 63 bytes.
pub(crate) fn plain_identifier(part: &str) -> bool {
    let mut chars = part.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && part.len() <= 63
}

/// `"app"."events"` of `app.events`: each part quoted (parts the caller checked plain).
pub(crate) fn quoted(table: &str) -> String {
    table
        .split('.')
        .map(|part| format!("\"{part}\""))
        .collect::<Vec<_>>()
        .join(".")
}

/// The partition `name` in the schema of `parent`, quoted.
pub(crate) fn quoted_partition(parent: &str, name: &str) -> String {
    match parent.rsplit_once('.') {
        Some((schema, _)) => format!("\"{schema}\".\"{name}\""),
        None => format!("\"{name}\""),
    }
}

/// The partitions job's DDL, the only statements built from values at run time: identifiers
/// cannot be bound, so each part of `parent` and `name` must be a plain identifier (refused
/// otherwise, before any text is built) and is quoted; the bounds are dates chrono formats.
pub(crate) enum PartitionDdl<'a> {
    /// `create table if not exists <name> partition of <parent> for values from .. to ..`.
    Create {
        parent: &'a str,
        name: &'a str,
        from: chrono::NaiveDate,
        to: chrono::NaiveDate,
    },
    /// `drop table if exists <name>`.
    Drop { parent: &'a str, name: &'a str },
}

impl PartitionDdl<'_> {
    pub(crate) fn statement(&self) -> Result<SqlStr, JobError> {
        let (parent, name) = match self {
            PartitionDdl::Create { parent, name, .. } | PartitionDdl::Drop { parent, name } => {
                (*parent, *name)
            }
        };
        let plain = parent.split('.').count() <= 2
            && parent.split('.').all(plain_identifier)
            && plain_identifier(name);
        if !plain {
            return Err(JobError::new(
                ErrorCode::JobDeclarationInvalid,
                "a partitioned table or partition name is not made of plain identifiers",
            )
            .with_fix("name tables with letters, digits and `_`, at most 63 bytes a part"));
        }
        let text = match self {
            // Midnight UTC, whatever the column's type (a date takes the day, a timestamp the
            // instant) and the session's time zone.
            PartitionDdl::Create { from, to, .. } => format!(
                "create table if not exists {} partition of {} \
                 for values from ('{} 00:00:00+00') to ('{} 00:00:00+00')",
                quoted_partition(parent, name),
                quoted(parent),
                from.format("%Y-%m-%d"),
                to.format("%Y-%m-%d"),
            ),
            PartitionDdl::Drop { .. } => {
                format!("drop table if exists {}", quoted_partition(parent, name))
            }
        };
        Ok(AssertSqlSafe(Arc::<str>::from(text)).into_sql_str())
    }
}

/// Fills the `{schema}` and column-list placeholders, and leaves out the comment lines.
///
/// A statement goes out as its code and its name: a file opens with `-- <name>:` and that line
/// is sent as `-- <name>`, so the server's activity view and logs still say which statement
/// runs. The rest of the explanation stays in the file: sqlx finds a connection's prepared
/// statement by hashing and comparing the whole text on every execution, and the server copies
/// the text into its activity view on every execution too (the enqueue's comments were over
/// 2 KB). No statement or migration has `--` after code on a line, so only whole lines go.
pub(crate) fn render(template: &str, schema: &str) -> String {
    let prefixed: Vec<String> = JOB_COLUMNS.iter().map(|c| format!("j.{c}")).collect();
    let spliced = FRAGMENTS
        .iter()
        .fold(template.to_string(), |text, (name, fragment)| {
            text.replace(&format!("{{{name}}}"), fragment)
        });
    let filled = spliced
        .replace("{schema}", schema)
        .replace("{job_columns}", &JOB_COLUMNS.join(", "))
        .replace("{j_job_columns}", &prefixed.join(", "))
        .replace("{summary_columns}", SUMMARY_COLUMNS);
    let mut text = String::with_capacity(filled.len());
    let name = filled
        .lines()
        .next()
        .and_then(|first| first.strip_prefix("-- "))
        .and_then(|first| first.split_once(':'))
        .map(|(name, _)| name)
        .filter(|name| plain_identifier(name));
    if let Some(name) = name {
        text.push_str("-- ");
        text.push_str(name);
        text.push('\n');
    }
    for line in filled.lines() {
        let code = line.trim_start();
        if !code.is_empty() && !code.starts_with("--") {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// A schema name the driver can splice into its statements: a plain lower-case identifier.
pub(crate) fn check_schema(schema: &str) -> Result<(), JobError> {
    let valid = !schema.is_empty()
        && schema.len() <= 48
        && schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if valid {
        Ok(())
    } else {
        // A configuration mistake, not a bug: terminal, with the driver's configuration code.
        Err(JobError::new(
            ErrorCode::DriverUrlInvalid,
            format!("`{schema}` is not a schema name the driver accepts"),
        )
        .with_fix("use lower-case letters, digits and underscores, starting with a letter (at most 48, so the wake channel name fits)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_is_rendered_for_its_schema() {
        let s = Statements::new("tenant_a");
        let statements = [
            &s.job_enqueue,
            &s.job_enqueue_announced,
            &s.job_enqueue_in,
            &s.job_claim,
            &s.job_claim_from,
            &s.job_claim_known,
            &s.job_claim_one,
            &s.job_ack_many,
            &s.step_put,
            &s.event_find,
        ];
        for text in statements.map(SqlStr::as_str) {
            assert!(
                !text.contains("{schema}")
                    && !text.contains("_columns}")
                    && FRAGMENTS
                        .iter()
                        .all(|(name, _)| !text.contains(&format!("{{{name}}}"))),
                "{text}"
            );
            assert!(text.contains("tenant_a."));
        }
    }

    #[test]
    fn a_statement_is_sent_without_its_comment_lines_and_named() {
        let text = render(
            "-- job_probe: what it does\n-- and why\n\nselect 1\n  -- within\n  from {schema}.x_jobs\n",
            "jobs",
        );
        assert_eq!(text, "-- job_probe\nselect 1\n  from jobs.x_jobs\n");
        // A first line that does not open with a name is left out like the rest.
        assert_eq!(
            render("-- Why not: because\nselect 2", "jobs"),
            "select 2\n"
        );
        let s = Statements::new("jobs");
        for (name, statement) in [("job_enqueue", &s.job_enqueue), ("job_claim", &s.job_claim)] {
            let text = statement.as_str();
            assert!(text.starts_with(&format!("-- {name}\n")), "{text}");
            assert_eq!(text.matches("--").count(), 1, "{text}");
        }
    }

    #[test]
    fn schema_names_are_checked() {
        assert!(check_schema("jobs_1").is_ok());
        for bad in ["", "Jobs", "1jobs", "a;drop", "a b", "\"x\""] {
            let error = check_schema(bad).unwrap_err();
            assert_eq!(error.code(), Some(ErrorCode::DriverUrlInvalid), "{bad}");
            assert_eq!(error.class(), crate::ErrorClass::Terminal, "{bad}");
            assert!(error.fix().unwrap().contains("lower-case"), "{bad}");
        }
    }
}
