//! The documented bounds on what the job system stores, checked in one place before anything is
//! written, so the memory and the Postgres driver refuse exactly the same values.
//!
//! Keys, tenants, queues and names are identifiers, never payloads: Postgres keeps them in btree
//! indexes, whose entries must fit in a third of a page (2,704 bytes). The live-key index holds
//! a job's name, tenant and key together, so their limits sum well below that (968 bytes), and
//! a value is refused on its length whatever its content (a compressible key is no longer
//! accepted where a random one of the same length is not). Lengths are counted in bytes of
//! UTF-8: an ASCII character is one byte, `é` two, an emoji four.
//!
//! Postgres cannot store a NUL character (`\0`, `\u0000`) in text nor in jsonb, so none is
//! accepted anywhere it would be stored: keys, tenants, queues, names, inputs, step outputs,
//! event payloads, progress notes.
//!
//! | What | Limit | Refused with |
//! |---|---|---|
//! | idempotency key | [`MAX_IDEMPOTENCY_KEY_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | tenant | [`MAX_TENANT_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | queue | [`MAX_QUEUE_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | job name | [`MAX_JOB_NAME_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | step name (including `sleep:..`, `wait:..`) | [`MAX_STEP_NAME_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | event name | [`MAX_EVENT_NAME_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | event key | [`MAX_EVENT_KEY_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | lock key (`with_lock`) | [`MAX_LOCK_KEY_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | actor (who asked for an enqueue, or did an operator act) | [`MAX_ACTOR_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | concurrency key | [`MAX_CONCURRENCY_KEY_LENGTH`] characters | `X_JOB_DECLARATION_INVALID` |
//! | NUL in any of the above | none allowed | `X_VALUE_UNSTORABLE` (concurrency key: `X_JOB_DECLARATION_INVALID`) |
//! | a job or queue name outside the name grammar (`jobs_grammar::name`: ASCII letters, digits, `_`, `-`, `.`) | the macros refuse the literal at compile time, the client the value | `X_JOB_DECLARATION_INVALID` |
//! | an empty or blank tenant | none allowed | `X_JOB_TENANT_REQUIRED` |
//! | any other control character in a tenant | none allowed | `X_VALUE_UNSTORABLE` |
//! | any other control character in an actor | none allowed | `X_VALUE_UNSTORABLE` |
//! | a job's priority (`#[job(priority = N)]`, `EnqueueOptions::priority`) | [`MIN_PRIORITY`]..=[`MAX_PRIORITY`] (-5..=5, default [`DEFAULT_PRIORITY`], 0); the macro refuses a literal outside at compile time | `X_INVARIANT` |
//! | a job's unique period (`#[job(unique(for = ".."))]`, `EnqueueOptions::unique_for`) | at least 1 ms, at most [`MAX_UNIQUE_FOR`] (10 years); the macro refuses a zero or longer literal at compile time | `X_INVARIANT` |
//! | NUL in a job input | none allowed | `X_JOB_INPUT_INVALID` |
//! | NUL in a step output | none allowed | `X_STEP_OUTPUT_UNSERIALIZABLE` |
//! | NUL in an event payload | none allowed | `X_JOB_EVENT_INVALID` |
//! | a kept result (`#[job(.., keep_result)]`), as compact JSON text | [`MAX_RESULT_BYTES`] | `X_LIMIT_EXCEEDED` |
//! | a kept result holding NUL, or one that does not serialise | none allowed | `X_VALUE_UNSTORABLE` |
//!
//! Every refusal is terminal and names the limit, never the value. A kept result is checked
//! when its body returns, before the ack: a refused one fails the attempt terminally (the job
//! is dead-lettered, or `failed` with `dead_letter = false`) and nothing is stored, since a job
//! that declares it keeps its result has not done what it promised until the result is kept.

use serde_json::Value;

use crate::driver::{EnqueueRequest, DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY};
use crate::error::{ErrorCode, JobError};

/// The longest unique period a job may hold its key for after its enqueue
/// (`#[job(unique(for = ".."))]`, [`EnqueueOptions::unique_for`](crate::EnqueueOptions::unique_for)):
/// 10 years, so the instant it ends is one every store keeps.
pub const MAX_UNIQUE_FOR: std::time::Duration =
    std::time::Duration::from_millis(jobs_grammar::duration::MAX_UNIQUE_FOR_MILLIS);

/// The longest idempotency key, in bytes of UTF-8 (a scheduled fire's key counts its
/// `<task>:<occurrence ms>:` prefix). Hash a longer natural key: a sha256 hex digest is 64.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 512;

/// The longest tenant, in bytes of UTF-8 (the grammar's, `jobs_grammar::name`).
pub const MAX_TENANT_BYTES: usize = jobs_grammar::name::MAX_TENANT_BYTES;

/// The longest queue name, in bytes (the grammar's, `jobs_grammar::name`).
pub const MAX_QUEUE_BYTES: usize = jobs_grammar::name::MAX_NAME_BYTES;

/// The longest job name, in bytes (the grammar's, `jobs_grammar::name`).
pub const MAX_JOB_NAME_BYTES: usize = jobs_grammar::name::MAX_NAME_BYTES;

/// The longest step name, in bytes of UTF-8. It has room for the names the runtime derives:
/// `wait:<event name>#<n>` from the longest event name, `sleep:<duration>#<n>`.
pub const MAX_STEP_NAME_BYTES: usize = 256;

/// The longest event name, in bytes of UTF-8.
pub const MAX_EVENT_NAME_BYTES: usize = 200;

/// The longest event key (the correlation key a wait matches on), in bytes of UTF-8.
pub const MAX_EVENT_KEY_BYTES: usize = 512;

/// The longest `with_lock` key, in bytes of UTF-8.
pub const MAX_LOCK_KEY_BYTES: usize = 512;

/// The longest actor (who asked for an enqueue), in bytes of UTF-8.
pub const MAX_ACTOR_BYTES: usize = 256;

/// The longest reason a cancel records (`Jobs::cancel_with_reason`, `jobs cancel --reason`),
/// in bytes of UTF-8.
pub const MAX_CANCEL_REASON_BYTES: usize = 512;

/// The largest result a job keeps (`#[job(.., keep_result)]`), in bytes of its compact JSON
/// text: 1 MiB. A result is read whole by whoever asks for it (an operator page, a parent
/// awaiting a child), so it is a summary of the work, not its data: store a larger payload
/// where the job wrote it and keep its address.
pub const MAX_RESULT_BYTES: usize = 1 << 20;

/// A concurrency key (or a `rate(key = ..)` key) longer than this many characters is refused at
/// enqueue (and at claim): it is an id, never a payload.
pub const MAX_CONCURRENCY_KEY_LENGTH: usize = 200;

/// A concurrency key as stored in the lease store: present, 1 to
/// [`MAX_CONCURRENCY_KEY_LENGTH`] characters, no NUL (`X_JOB_DECLARATION_INVALID`). Checked at
/// enqueue and again when a claimed run derives it.
pub(crate) fn check_concurrency_key(job: &str, key: Option<String>) -> Result<String, JobError> {
    check_lease_key("concurrency", job, key)
}

/// A `rate(key = ..)` key, held to the rule of a concurrency key (it is stored in the lease
/// store the same way): checked at enqueue and again when a claimed run derives it.
pub(crate) fn check_rate_key(job: &str, key: Option<String>) -> Result<String, JobError> {
    check_lease_key("rate", job, key)
}

/// A key derived from the input and stored in the lease store (`what`: `concurrency`, `rate`).
fn check_lease_key(what: &str, job: &str, key: Option<String>) -> Result<String, JobError> {
    let refuse = |why: &str| {
        Err(JobError::new(
            ErrorCode::JobDeclarationInvalid,
            format!("the {what} key of job `{job}` {why}"),
        )
        .with_fix(format!(
            "derive the {what} key from an id of the input (1 to 200 characters, no NUL)"
        )))
    };
    match key {
        None => refuse("is missing"),
        Some(k) if k.is_empty() => refuse("is empty"),
        Some(k) if k.chars().count() > MAX_CONCURRENCY_KEY_LENGTH => {
            refuse("is longer than 200 characters")
        }
        // It is stored as text in the lease store, which cannot hold a NUL.
        Some(k) if k.contains('\0') => refuse("holds a NUL character (\\u0000)"),
        Some(k) => Ok(k),
    }
}

/// An identifier the job system stores: its name in messages, its limit, and how to fix it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    what: &'static str,
    limit: usize,
    constant: &'static str,
    fix: &'static str,
}

/// The idempotency key.
pub(crate) const IDEMPOTENCY_KEY: Field = Field {
    what: "idempotency key",
    limit: MAX_IDEMPOTENCY_KEY_BYTES,
    constant: "MAX_IDEMPOTENCY_KEY_BYTES",
    fix: "derive the key from the input's ids, at most 512 bytes; hash a long natural key (a sha256 hex digest is 64 bytes)",
};

/// The tenant.
pub(crate) const TENANT: Field = Field {
    what: "tenant",
    limit: MAX_TENANT_BYTES,
    constant: "MAX_TENANT_BYTES",
    fix: "file the job under a tenant id of at most 256 bytes (an org id, not a name or a payload)",
};

/// The queue.
pub(crate) const QUEUE: Field = Field {
    what: "queue",
    limit: MAX_QUEUE_BYTES,
    constant: "MAX_QUEUE_BYTES",
    fix: "name the queue in at most 200 bytes",
};

/// The job name.
pub(crate) const JOB_NAME: Field = Field {
    what: "job name",
    limit: MAX_JOB_NAME_BYTES,
    constant: "MAX_JOB_NAME_BYTES",
    fix: "give the job a `name = \"..\"` of at most 200 bytes",
};

/// A step name.
pub(crate) const STEP_NAME: Field = Field {
    what: "step name",
    limit: MAX_STEP_NAME_BYTES,
    constant: "MAX_STEP_NAME_BYTES",
    fix: "name the step in at most 256 bytes; suffix names built in loops with a short item id, not the item",
};

/// An event name.
pub(crate) const EVENT_NAME: Field = Field {
    what: "event name",
    limit: MAX_EVENT_NAME_BYTES,
    constant: "MAX_EVENT_NAME_BYTES",
    fix: "name the event in at most 200 bytes (e.g. `invoice.paid`)",
};

/// An event key.
pub(crate) const EVENT_KEY: Field = Field {
    what: "event key",
    limit: MAX_EVENT_KEY_BYTES,
    constant: "MAX_EVENT_KEY_BYTES",
    fix: "correlate on an id of at most 512 bytes; hash a long natural key (a sha256 hex digest is 64 bytes)",
};

/// A `with_lock` key.
pub(crate) const LOCK_KEY: Field = Field {
    what: "lock key",
    limit: MAX_LOCK_KEY_BYTES,
    constant: "MAX_LOCK_KEY_BYTES",
    fix: "lock on an id of at most 512 bytes; hash a long natural key (a sha256 hex digest is 64 bytes)",
};

/// The actor of an enqueue.
pub(crate) const ACTOR: Field = Field {
    what: "actor",
    limit: MAX_ACTOR_BYTES,
    constant: "MAX_ACTOR_BYTES",
    fix: "name the actor by an id of at most 256 bytes (a user id, a service name), not a payload",
};

pub(crate) const CANCEL_REASON: Field = Field {
    what: "reason",
    limit: MAX_CANCEL_REASON_BYTES,
    constant: "MAX_CANCEL_REASON_BYTES",
    fix: "say why in at most 512 bytes (a ticket id, a sentence), not a payload",
};

/// Checks one stored identifier: within its limit, and free of NUL. `whose` says what it
/// belongs to (e.g. "job `send_welcome`"), never the value.
pub(crate) fn check_text(
    field: Field,
    whose: impl std::fmt::Display + Copy,
    value: &str,
) -> Result<(), JobError> {
    if value.len() > field.limit {
        return Err(JobError::new(
            ErrorCode::LimitExceeded,
            format!(
                "the {} of {whose} is {} bytes, over the limit of {} bytes (jobs::limits::{})",
                field.what,
                value.len(),
                field.limit,
                field.constant
            ),
        )
        .with_fix(field.fix));
    }
    if value.contains('\0') {
        return Err(JobError::new(
            ErrorCode::ValueUnstorable,
            format!(
                "the {} of {whose} holds a NUL character (\\u0000), which cannot be stored",
                field.what
            ),
        )
        .with_fix(format!(
            "remove NUL characters from the {}; it is stored as text, which cannot hold them",
            field.what
        )));
    }
    Ok(())
}

/// Checks a job, task or queue name: within its limit and free of NUL ([`check_text`]), then
/// the grammar the macros check the same literal with at compile time
/// (`jobs_grammar::name::check_name`): a refusal is `X_JOB_DECLARATION_INVALID`, naming the
/// character, never the whole value.
pub(crate) fn check_name(
    field: Field,
    whose: impl std::fmt::Display + Copy,
    value: &str,
) -> Result<(), JobError> {
    check_text(field, whose, value)?;
    jobs_grammar::name::check_name(value).map_err(|why| {
        JobError::new(
            ErrorCode::JobDeclarationInvalid,
            format!("the {} of {whose} {why}", field.what),
        )
        .with_fix(format!(
            "write the {} as {} (e.g. `billing.send-invoice`)",
            field.what,
            jobs_grammar::name::NAME_GRAMMAR
        ))
    })
}

/// Checks a tenant: within its limit and free of NUL ([`check_text`]), then the grammar
/// (`jobs_grammar::name::check_tenant`): an empty or blank tenant files the job under no one
/// (`X_JOB_TENANT_REQUIRED`), a control character is `X_VALUE_UNSTORABLE`, as in an actor.
pub(crate) fn check_tenant(
    whose: impl std::fmt::Display + Copy,
    tenant: &str,
) -> Result<(), JobError> {
    use jobs_grammar::name::InvalidName;
    check_text(TENANT, whose, tenant)?;
    match jobs_grammar::name::check_tenant(tenant) {
        Ok(()) => Ok(()),
        Err(InvalidName::Empty) => Err(JobError::new(
            ErrorCode::JobTenantRequired,
            format!("the tenant of {whose} is empty or blank, so the job would belong to no one"),
        )
        .with_fix(
            "file the job under the tenant's id (the org id the input names); a job that \
             belongs to no tenant declares `tenant = none`",
        )),
        Err(why) => Err(JobError::new(
            ErrorCode::ValueUnstorable,
            format!("the tenant of {whose} {why}"),
        )
        .with_fix(format!(
            "file the job under a printable tenant id: {}",
            jobs_grammar::name::TENANT_GRAMMAR
        ))),
    }
}

/// Checks everything an enqueue stores: the job name, queue, key, tenant and input. The client
/// and the scheduler call it on every request before it reaches a driver, so every driver
/// refuses the same values.
pub(crate) fn check_enqueue(request: &EnqueueRequest) -> Result<(), JobError> {
    check_name(JOB_NAME, "a job", &request.name)?;
    // Written into a message only when one is refused.
    let whose = JobNamed(&request.name);
    check_name(QUEUE, whose, &request.queue)?;
    check_text(IDEMPOTENCY_KEY, whose, &request.idempotency_key)?;
    if let Some(tenant) = &request.tenant_id {
        check_tenant(whose, tenant)?;
    }
    if let Some(actor) = &request.actor {
        check_actor(whose, actor)?;
    }
    check_priority(whose, request.priority)?;
    if let Some(period) = request.unique_for {
        check_unique_for(whose, period)?;
    }
    if let Some(dependencies) = &request.dependencies {
        crate::driver::check_dependencies(request.id, dependencies, request.run_at, request.now)?;
    }
    if holds_nul(&request.input) {
        return Err(JobError::new(
            ErrorCode::JobInputInvalid,
            format!("the input of {whose} holds a NUL character (\\u0000) in a string or a map key, which cannot be stored"),
        )
        .with_fix("remove NUL characters from the input's strings and map keys; Postgres' jsonb cannot hold them"));
    }
    Ok(())
}

/// "job `<name>`", as a refusal names the job it checked.
#[derive(Clone, Copy)]
struct JobNamed<'a>(&'a str);

impl std::fmt::Display for JobNamed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "job `{}`", self.0)
    }
}

/// Checks a priority: within [`MIN_PRIORITY`]..=[`MAX_PRIORITY`], else `X_INVARIANT`.
pub(crate) fn check_priority(
    whose: impl std::fmt::Display + Copy,
    priority: i16,
) -> Result<(), JobError> {
    if (MIN_PRIORITY..=MAX_PRIORITY).contains(&priority) {
        return Ok(());
    }
    Err(JobError::new(
        ErrorCode::Invariant,
        format!("the priority of {whose} is outside {MIN_PRIORITY}..={MAX_PRIORITY}"),
    )
    .with_fix(format!(
        "name a priority from {MIN_PRIORITY} (claimed last) to {MAX_PRIORITY} (claimed first); {DEFAULT_PRIORITY} is the default"
    )))
}

/// Checks a unique period: from 1 ms (stores keep it in whole milliseconds) to
/// [`MAX_UNIQUE_FOR`], else `X_INVARIANT`.
pub(crate) fn check_unique_for(
    whose: impl std::fmt::Display + Copy,
    period: std::time::Duration,
) -> Result<(), JobError> {
    const SHORTEST: std::time::Duration = std::time::Duration::from_millis(1);
    if (SHORTEST..=MAX_UNIQUE_FOR).contains(&period) {
        return Ok(());
    }
    let why = if period < SHORTEST {
        "is shorter than 1 ms, which would hold the key for no time at all"
    } else {
        "is longer than MAX_UNIQUE_FOR (10 years)"
    };
    Err(JobError::new(
        ErrorCode::Invariant,
        format!("the unique period of {whose} {why}"),
    )
    .with_fix("name a unique period from 1 ms to 10 years, or leave it out to hold the key only while the job is live"))
}

/// Checks an actor: within its limit, no NUL, and no other control character either, since it
/// is printed as is in operator tables, logs and span fields, where a newline or an escape
/// sequence would forge lines or repaint a terminal.
pub(crate) fn check_actor(
    whose: impl std::fmt::Display + Copy,
    actor: &str,
) -> Result<(), JobError> {
    check_text(ACTOR, whose, actor)?;
    if actor.chars().any(char::is_control) {
        return Err(JobError::new(
            ErrorCode::ValueUnstorable,
            format!("the actor of {whose} holds a control character, which an actor cannot hold"),
        )
        .with_fix("name the actor by a printable id (a user id, a service name): no newline, tab or escape"));
    }
    Ok(())
}

/// The actor of an operator act (a requeue, cancel, promote, remove, bulk verb or queue
/// pause), checked as an enqueue's is, and owned for the driver's params.
pub(crate) fn checked_operator_actor(actor: Option<&str>) -> Result<Option<String>, JobError> {
    match actor {
        Some(actor) => {
            check_actor("an operator action", actor)?;
            Ok(Some(actor.to_string()))
        }
        None => Ok(None),
    }
}

/// The reason of a cancel, checked as an actor is (within its limit, no control character:
/// it is printed in operator tables), and owned for the driver's params.
pub(crate) fn checked_cancel_reason(reason: &str) -> Result<String, JobError> {
    check_text(CANCEL_REASON, "a cancel", reason)?;
    if reason.chars().any(char::is_control) {
        return Err(JobError::new(
            ErrorCode::ValueUnstorable,
            "the reason of a cancel holds a control character, which a reason cannot hold",
        )
        .with_fix("write the reason on one line: no newline, tab or escape"));
    }
    if reason.trim().is_empty() {
        return Err(
            JobError::new(ErrorCode::Invariant, "the reason of a cancel is blank")
                .with_fix("say why the job is cancelled, or cancel without a reason"),
        );
    }
    Ok(reason.to_string())
}

/// Checks a step output before it is written.
pub(crate) fn check_step_output(job: &str, output: &Value) -> Result<(), JobError> {
    if holds_nul(output) {
        return Err(JobError::new(
            ErrorCode::StepOutputUnserializable,
            format!("a step output of job `{job}` holds a NUL character (\\u0000) in a string or a map key, which cannot be stored"),
        )
        .with_fix("remove NUL characters from the step's output; Postgres' jsonb cannot hold them"));
    }
    Ok(())
}

/// The result a job keeps, checked before the ack that stores it: it serialised, holds no NUL,
/// and its compact JSON text is at most [`MAX_RESULT_BYTES`]. Each refusal is terminal and
/// names the job, the size and the limit, never the value (nor serde's message, which a
/// `Serialize` impl may fill with it).
pub(crate) fn check_result(
    job: &str,
    serialised: Result<Value, serde_json::Error>,
) -> Result<Value, JobError> {
    let Ok(result) = serialised else {
        return Err(JobError::new(
            ErrorCode::ValueUnstorable,
            format!("the result of job `{job}` does not serialise to JSON, so it cannot be kept"),
        )
        .with_fix("return an output that serialises to JSON (string map keys, no NaN), or drop `keep_result`"));
    };
    if holds_nul(&result) {
        return Err(JobError::new(
            ErrorCode::ValueUnstorable,
            format!("the result of job `{job}` holds a NUL character (\\u0000) in a string or a map key, which cannot be stored"),
        )
        .with_fix("remove NUL characters from the output; Postgres' jsonb cannot hold them"));
    }
    let bytes = json_len(&result);
    if bytes > MAX_RESULT_BYTES {
        return Err(JobError::new(
            ErrorCode::LimitExceeded,
            format!(
                "the result of job `{job}` is {bytes} bytes of JSON, over the limit of {MAX_RESULT_BYTES} bytes (jobs::limits::MAX_RESULT_BYTES)"
            ),
        )
        .with_fix("keep a summary of the work as the result (counts, ids, the address of what the job wrote), not its data"));
    }
    Ok(result)
}

/// The length of `value`'s compact JSON text, counted without building it.
fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Checks an event's name and key (a publish, or a wait before it is recorded).
pub(crate) fn check_event_address(name: &str, key: &str) -> Result<(), JobError> {
    check_text(EVENT_NAME, "an event", name)?;
    check_text(EVENT_KEY, &format!("event `{name}`"), key)
}

/// Checks an event payload before it is published.
pub(crate) fn check_event_payload(name: &str, payload: &Value) -> Result<(), JobError> {
    if holds_nul(payload) {
        return Err(JobError::new(
            ErrorCode::JobEventInvalid,
            format!("the payload of event `{name}` holds a NUL character (\\u0000) in a string or a map key, which cannot be stored"),
        )
        .with_fix("remove NUL characters from the event's payload; Postgres' jsonb cannot hold them"));
    }
    Ok(())
}

/// Checks a progress note before it is written.
pub(crate) fn check_progress_note(job: &str, note: &str) -> Result<(), JobError> {
    if note.contains('\0') {
        return Err(JobError::new(
            ErrorCode::ValueUnstorable,
            format!("a progress note of job `{job}` holds a NUL character (\\u0000), which cannot be stored"),
        )
        .with_fix("remove NUL characters from the progress note"));
    }
    Ok(())
}

/// Whether any string or map key in `value` holds a NUL. Containers wait on a stack of its own,
/// so a deeply nested value cannot overflow the thread's; strings are checked as they are met,
/// so a flat input (the usual one) allocates nothing.
pub(crate) fn holds_nul(value: &Value) -> bool {
    let mut pending = Vec::new();
    let mut next = Some(value);
    while let Some(value) = next {
        let found = match value {
            Value::String(s) => s.contains('\0'),
            Value::Array(items) => items.iter().any(|item| met(item, &mut pending)),
            Value::Object(map) => map
                .iter()
                .any(|(key, item)| key.contains('\0') || met(item, &mut pending)),
            _ => false,
        };
        if found {
            return true;
        }
        next = pending.pop();
    }
    false
}

/// A member of a container: a string is checked now, a container waits on `pending`.
fn met<'a>(item: &'a Value, pending: &mut Vec<&'a Value>) -> bool {
    match item {
        Value::String(s) => s.contains('\0'),
        Value::Array(_) | Value::Object(_) => {
            pending.push(item);
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_is_bounded_by_its_json_length_and_never_echoed() {
        let at_limit = Value::String("r".repeat(MAX_RESULT_BYTES - 2));
        assert_eq!(json_len(&at_limit), MAX_RESULT_BYTES);
        assert!(check_result("j", Ok(at_limit)).is_ok());
        let over = Value::String("r".repeat(MAX_RESULT_BYTES - 1));
        let e = check_result("j", Ok(over)).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::LimitExceeded));
        assert_eq!(e.class(), crate::ErrorClass::Terminal);
        assert!(e.message().contains("1048577 bytes"), "{e}");
        assert!(!e.message().contains("rrr"), "{e}");
        let e = check_result("j", Ok(json!({ "k": "a\0b" }))).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::ValueUnstorable));
        let unserialisable = serde_json::to_value(std::collections::BTreeMap::from([((1, 2), 3)]));
        let e = check_result("j", unserialisable).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::ValueUnstorable));
    }

    #[test]
    fn a_value_over_its_limit_is_refused_by_length_never_echoed() {
        let key = "k".repeat(MAX_IDEMPOTENCY_KEY_BYTES + 1);
        let e = check_text(IDEMPOTENCY_KEY, "job `j`", &key).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::LimitExceeded));
        assert_eq!(e.class(), crate::ErrorClass::Terminal);
        assert!(e.message().contains("513 bytes"), "{}", e.message());
        assert!(e.message().contains("MAX_IDEMPOTENCY_KEY_BYTES"));
        assert!(!e.to_string().contains("kkkk"), "{e}");
        assert!(check_text(IDEMPOTENCY_KEY, "job `j`", &key[1..]).is_ok());
    }

    #[test]
    fn an_actor_is_bounded_and_printable() {
        assert!(check_actor("job `j`", "user:42").is_ok());
        assert!(check_actor("job `j`", &"é".repeat(MAX_ACTOR_BYTES / 2)).is_ok());
        let long = "a".repeat(MAX_ACTOR_BYTES + 1);
        let e = check_actor("job `j`", &long).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::LimitExceeded));
        for bad in ["a\0b", "a\nb", "a\u{1b}[2Jb", "a\tb", "a\u{85}b"] {
            let e = check_actor("job `j`", bad).unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::ValueUnstorable), "{bad:?}");
            assert!(!e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn names_follow_the_grammar_the_macros_check() {
        assert!(check_name(QUEUE, "job `j`", "billing.send-invoice").is_ok());
        for bad in ["Bad Queue!", "", "a:b", "é"] {
            let e = check_name(QUEUE, "job `j`", bad).unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::JobDeclarationInvalid), "{bad:?}");
            assert_eq!(e.class(), crate::ErrorClass::Terminal);
            assert!(e.fix().unwrap().contains("ASCII letters"), "{e}");
        }
        // The length is still reported as the limit it is.
        let e = check_name(JOB_NAME, "a job", &"n".repeat(201)).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::LimitExceeded));
    }

    #[test]
    fn a_tenant_is_a_printable_non_blank_id() {
        assert!(check_tenant("job `j`", "org 42 <b>").is_ok());
        for blank in ["", "   "] {
            let e = check_tenant("job `j`", blank).unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::JobTenantRequired), "{blank:?}");
            assert_eq!(e.class(), crate::ErrorClass::Terminal);
        }
        let e = check_tenant("job `j`", "org\n42").unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::ValueUnstorable));
        assert!(!e.to_string().contains("org"), "{e}");
    }

    #[test]
    fn limits_count_bytes_not_characters() {
        // 200 two-byte characters are 400 bytes: over the queue's 200.
        let queue = "é".repeat(200);
        let e = check_text(QUEUE, "job `j`", &queue).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::LimitExceeded));
        assert!(check_text(QUEUE, "job `j`", &"é".repeat(100)).is_ok());
    }

    #[test]
    fn nul_is_found_in_strings_keys_and_deep_nesting() {
        assert!(!holds_nul(&json!({ "a": ["b", 1, null, { "c": "d" }] })));
        assert!(holds_nul(&json!({ "a": ["b\u{0}"] })));
        assert!(holds_nul(&json!({ "a\u{0}": 1 })));
        assert!(holds_nul(&json!("a\u{0}")));
        assert!(holds_nul(&json!([{ "b": { "c\u{0}": 1 } }])));
        assert!(holds_nul(&json!({ "a": [1, [2, ["x\u{0}"]]] })));
        assert!(!holds_nul(&json!(["a", { "b": ["c", { "d": "e" }] }])));
        // serde_json drops a value recursively: build and drop the deep one on a thread with
        // room for that.
        let deep = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(|| {
                let mut deep = json!("x\u{0}");
                for _ in 0..100_000 {
                    deep = Value::Array(vec![deep]);
                }
                holds_nul(&deep)
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(deep);
    }
}
