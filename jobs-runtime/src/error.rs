//! One error type for the whole crate: a reference code, a message, a fix, a retry class.
//!
//! Messages name ids and codes, never payloads, keys or secrets.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// How the worker treats an error a body returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Retried with the job's backoff (also what an unclassified error gets).
    Retryable,
    /// Dead-lettered on the attempt it happened, remaining attempts unspent.
    Terminal,
    /// Retried after the delay the error states, clamped by `max_delay`.
    RetryAfter(Duration),
}

macro_rules! error_codes {
    ($( $(#[doc = $doc:literal])* $variant:ident = $code:literal, $class:expr, $fix:literal; )*) => {
        /// The reference's error codes (`X_...`), each with its retry class and a default fix.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl ErrorCode {
            /// Every code, for documentation and `jobs errors explain`.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The code as the reference spells it, e.g. `X_JOB_TIMEOUT`.
            pub const fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code,)* }
            }

            /// How a body returning this code is retried.
            pub const fn class(self) -> ErrorClass {
                match self { $(ErrorCode::$variant => $class,)* }
            }

            /// What to do about it.
            pub const fn fix(self) -> &'static str {
                match self { $(ErrorCode::$variant => $fix,)* }
            }

            /// What it means: the code's documentation, its lines as written (`jobs errors
            /// explain`). Read it joined with [`ErrorCode::meaning`].
            pub const fn meaning_lines(self) -> &'static [&'static str] {
                match self { $(ErrorCode::$variant => &[$($doc),*],)* }
            }

            /// Reads a code back from its spelling (a stored `last_error_code`).
            pub fn parse(code: &str) -> Option<ErrorCode> {
                match code { $($code => Some(ErrorCode::$variant),)* _ => None }
            }
        }
    };
}

use ErrorClass::{Retryable as R, Terminal as T};

/// The class of a code whose errors state their own delay (`JobError::retry_after`): the code
/// carries none, each error carries the delay its responder stated.
const RA: ErrorClass = ErrorClass::RetryAfter(Duration::ZERO);

error_codes! {
    /// Nothing of a kind is registered in this binary: a manifest with no job or task (the
    /// crate declaring them is not linked in).
    RegistrarMissing = "X_REGISTRAR_MISSING", T,
        "link the crate that declares the jobs into this binary (`use my_app as _;`)";
    /// A job was declared without an idempotency key (or it evaluated to an empty string).
    IdempotencyRequired = "X_IDEMPOTENCY_REQUIRED", T,
        "return a non-empty key from the job's `key = ..`; it must be derived from the input only";
    /// A job declares no tenant decision.
    JobTenantRequired = "X_JOB_TENANT_REQUIRED", T,
        "add `tenant = <field>` or `tenant = none` to the `#[job]`";
    /// An enqueue made in one tenant's context (the call's tenant, or its client's) whose input
    /// derives another tenant, without saying it crosses tenants on purpose; or an operator
    /// verb on a client scoped to one tenant that names another.
    JobTenantMismatch = "X_JOB_TENANT_MISMATCH", T,
        "enqueue the job in the tenant its input names (`jobs.for_tenant(..)` of that tenant), or say the cross-tenant enqueue is meant: `EnqueueOptions::new().cross_tenant()`";
    /// A declaration no worker can honour, or a derived key out of bounds.
    JobDeclarationInvalid = "X_JOB_DECLARATION_INVALID", T,
        "fix the `#[job]` declaration as the message says";
    /// Two jobs share one name, or a live job holds the key.
    JobDuplicate = "X_JOB_DUPLICATE", T,
        "give each `#[job]` its own `name = \"..\"`, or wait until the live job holding the key finishes";
    /// An enqueue outside a transaction while the outbox is installed with
    /// `OutboxMode::Required`.
    OutboxNoTx = "X_OUTBOX_NO_TX", T,
        "enqueue inside the caller's transaction (`enqueue_in(&mut tx, ..)`, which stages the job in the outbox), or say this call publishes directly: `EnqueueOptions::new().direct()`";
    /// A value broke an invariant (a bad duration, zero attempts, ...).
    Invariant = "X_INVARIANT", T,
        "pass a value within the documented bounds";
    /// Two steps share one name in one run.
    StepDuplicate = "X_STEP_DUPLICATE", T,
        "give every `run.step(..)` in one job a distinct name; suffix names built in loops with the item id";
    /// The attempt outran the job's `timeout`, a step its `step_timeout`, or a required wait its timeout.
    JobTimeout = "X_JOB_TIMEOUT", R,
        "raise the job's `timeout`/`step_timeout`, or make the body honour `run.cancelled()`";
    /// Retries exhausted; the job is dead-lettered. The last attempt failed with an error that
    /// would have been retried and no attempt remained: the code of the settle (the row's
    /// `last_error_code`, `on_settled`'s `code`), the last error quoted in its message; also
    /// with `dead_letter = false`, where the row ends `failed`.
    JobMaxAttempts = "X_JOB_MAX_ATTEMPTS", T,
        "inspect `last_error`, fix the cause, then requeue the job";
    /// A stored event the wait refuses.
    JobEventInvalid = "X_JOB_EVENT_INVALID", T,
        "publish events whose payload matches the type the wait asks for";
    /// The stored input no longer parses as the job's input type.
    JobInputInvalid = "X_JOB_INPUT_INVALID", T,
        "make the input type accept the stored payload (add `#[serde(default)]` to new fields), then requeue the job";
    /// A step output could not be serialized.
    StepOutputUnserializable = "X_STEP_OUTPUT_UNSERIALIZABLE", T,
        "return a step output that serializes to JSON (no non-string map keys, no NaN)";
    /// A stored step record could not be read back.
    StepRecordInvalid = "X_STEP_RECORD_INVALID", T,
        "the step's output type changed since it was stored: rename the step or requeue from it";
    /// A kept result (`#[job(.., keep_result)]`) no longer parses as the job's output type: the
    /// type changed since the result was stored.
    JobResultInvalid = "X_JOB_RESULT_INVALID", T,
        "make the output type accept the stored result (add `#[serde(default)]` to new fields), or read it untyped (`Jobs::job(id)`'s `result`)";
    /// A cancelled or timed-out attempt tried to write a step.
    Aborted = "X_ABORTED", R,
        "stop work when `run.cancelled()` fires";
    /// The worker is shutting down; the attempt goes back uncounted.
    Draining = "X_DRAINING", R,
        "nothing: the job is handed back and runs again on another worker";
    /// A deadline passed.
    Timeout = "X_TIMEOUT", R,
        "retry later, or raise the deadline";
    /// A responder asked to slow down. Classed retry-after: state the delay with
    /// [`JobError::with_retry_after`]; without one the job's backoff applies.
    RateLimited = "X_RATE_LIMITED", RA,
        "the job retries after the stated delay (`JobError::with_retry_after`), clamped by `max_delay`";
    /// A responder is overloaded. Classed retry-after, as `X_RATE_LIMITED`.
    Overloaded = "X_OVERLOADED", RA,
        "the job retries after the stated delay (`JobError::with_retry_after`), clamped by `max_delay`";
    /// The run no longer holds its claim (cancelled, or re-delivered after its lease lapsed).
    JobLeaseLost = "X_JOB_LEASE_LOST", T,
        "raise the worker's visibility timeout past the longest gap between heartbeats";
    /// The fleet concurrency slot was lost while the run held it (renewal refused or lapsed).
    JobSlotLost = "X_JOB_SLOT_LOST", R,
        "raise the worker's visibility timeout past the longest gap between heartbeats";
    /// `with_lock` waited its whole `wait` and the lock stayed held.
    LockNotAcquired = "X_LOCK_NOT_ACQUIRED", R,
        "retry later, or raise `wait`; the message names the holder";
    /// `with_lock` lost its lock: a renewal was refused or none landed within the ttl.
    LockLost = "X_LOCK_LOST", T,
        "raise the lock's ttl past the longest pause the closure can take, and write the fencing token beside the data";
    /// `with_lock` on a driver with no lease store.
    LockStoreMissing = "X_LOCK_STORE_MISSING", T,
        "run on a driver with a lease store (memory, postgres or sqlite)";
    /// Claimed under `when_busy = fail` while the key was busy.
    JobKeyBusy = "X_JOB_KEY_BUSY", T,
        "requeue the job once the key's other run finishes, or declare `when_busy = wait`";
    /// A job declared `expires_in` was reached by a worker after its expiry, before its first
    /// attempt started: discarded (`failed`, uncounted), its body never run.
    JobExpired = "X_JOB_EXPIRED", T,
        "raise the job's `expires_in`, or give its queue more workers so jobs start in time; requeue the job if it should still run";
    /// A job it depends on ended `failed`, `dead` or `cancelled`, and its policy
    /// (`DependencyFailure::Cancel`, the default) cancelled it; the message names the dependency.
    JobDependencyFailed = "X_JOB_DEPENDENCY_FAILED", T,
        "requeue the dependency and enqueue the dependent again, or enqueue dependents with `on_dependency_failure(DependencyFailure::RunAnyway)`";
    /// A job was cancelled: by an operator, by its parent's cancel, by a dependency's
    /// failure, or past an invoke's first `n`. A parent awaiting it (`run.invoke`) resumes
    /// with this code.
    JobCancelled = "X_JOB_CANCELLED", T,
        "requeue the job to run it again; a parent that must go on without it matches this code";
    /// An invoked child ended without completing and its error carried no code of its own (or
    /// its row was removed before the parent read it).
    JobChildFailed = "X_JOB_CHILD_FAILED", T,
        "read the child's `last_error` (`jobs show <id>`), fix the cause, then requeue the parent";
    /// A job declares `concurrency` and the driver has no lease store.
    JobConcurrencyUnenforceable = "X_JOB_CONCURRENCY_UNENFORCEABLE", T,
        "run the worker on a driver with a lease store (memory, postgres or sqlite)";
    /// A claim named no queue.
    JobClaimQueuesEmpty = "X_JOB_CLAIM_QUEUES_EMPTY", T,
        "name at least one queue";
    /// A row carries a state this build does not know.
    JobRowStatusUnknown = "X_JOB_ROW_STATUS_UNKNOWN", T,
        "upgrade this worker: a newer version wrote the row";
    /// The database server cannot be reached (refused, unreachable, no answer within the
    /// connect timeout, or the session was lost), or no driver is installed.
    DriverUnavailable = "X_DRIVER_UNAVAILABLE", R,
        "check that the database is up and reachable from this host (for Postgres, at the host and port the message names); a worker retries its own operations with backoff, while a call of yours returns this error: retry it once the database answers";
    /// A DDL statement of the partitions job waited past its `lock_timeout` for a table that
    /// writers held; nothing was changed, and the next attempt tries again.
    DbLockTimeout = "X_DB_LOCK_TIMEOUT", R,
        "let the attempt retry (it will, with backoff); if it keeps timing out, run the partitions job at a quieter hour or give it a longer `lock_timeout`";
    /// The driver's configuration is wrong: the database URL does not parse, or the schema
    /// name is not one the driver accepts (a configuration error: never retried).
    DriverUrlInvalid = "X_DRIVER_URL_INVALID", T,
        "pass a URL of the form postgres://user:password@host:port/database (percent-encode special characters in the password)";
    /// The database the URL names does not exist on the server (sqlstate 3D000).
    DriverDatabaseUnknown = "X_DRIVER_DATABASE_UNKNOWN", T,
        "create the database (`createdb <name>`), or name an existing one in the URL's path";
    /// The server refused the URL's user or password (sqlstate 28P01 or 28000).
    DriverAuthFailed = "X_DRIVER_AUTH_FAILED", T,
        "check the user and password in the URL, that the role exists, and that pg_hba.conf lets it connect from this host";
    /// The store keeps less than the driver was told to require (Redis: `appendonly` off, or
    /// an `appendfsync` weaker than `require_durability` asks): acknowledged jobs could be lost
    /// in a crash the user said must lose nothing.
    DriverDurabilityInsufficient = "X_DRIVER_DURABILITY_INSUFFICIENT", T,
        "turn the server's persistence up to what the URL requires (`CONFIG SET appendonly yes` and `CONFIG SET appendfsync always` for `require_durability=always`; put it in redis.conf too), or lower `require_durability` in the URL knowingly";
    /// The driver's schema or tables do not exist: the migrations were not applied there
    /// (sqlstate 3F000 or 42P01).
    DriverSchemaMissing = "X_DRIVER_SCHEMA_MISSING", T,
        "apply the migrations to this schema (`PostgresDriver::migrate()`), or give the driver the schema they were applied to (`with_schema`)";
    /// A run id is not a lowercase uuid.
    IdInvalid = "X_ID_INVALID", T,
        "pass a lowercase uuid";
    /// `on_settled` threw on every try.
    JobOnSettledFailed = "X_JOB_ON_SETTLED_FAILED", T,
        "make the `on_settled` hook idempotent and let it succeed; it is retried 3 times back to back";
    /// The driver does not implement this verb.
    NotImplemented = "X_NOT_IMPLEMENTED", T,
        "use a driver that implements it";
    /// Cancel reached a job that is not live.
    JobNotCancellable = "X_JOB_NOT_CANCELLABLE", T,
        "only ready, delayed, running or suspended jobs can be cancelled";
    /// No job under that id.
    JobNotFound = "X_JOB_NOT_FOUND", T,
        "check the job id";
    /// Requeue of a live job.
    JobNotRequeueable = "X_JOB_NOT_REQUEUEABLE", T,
        "only done, failed, dead or cancelled jobs can be requeued";
    /// Remove reached a running job.
    JobNotRemovable = "X_JOB_NOT_REMOVABLE", T,
        "cancel the running job first (it stops at its next heartbeat), then remove it";
    /// Promote reached a job that is not waiting on its run time.
    JobNotPromotable = "X_JOB_NOT_PROMOTABLE", T,
        "only delayed jobs, or ready jobs backing off, can be promoted";
    /// A job list asked for more than 200 rows, or passed a cursor no list wrote.
    JobPageInvalid = "X_JOB_PAGE_INVALID", T,
        "ask for at most 200 rows, and pass a page's `after`/`before` value unchanged";
    /// The act is not allowed to whoever asked: an MCP server's enqueue tool on a server not
    /// opened for writes.
    Forbidden = "X_FORBIDDEN", T,
        "ask for the act where it is allowed: an agent's enqueue needs a server started with writes allowed (`jobs mcp --allow-enqueue`, `JobsMcp::allow_enqueue`)";
    /// A command-line flag or argument the tool does not accept.
    CliBadFlag = "X_CLI_BAD_FLAG", T,
        "see `jobs --help` for the verbs and their flags";
    /// A statement failed on a reachable database (a serialization failure, a deadlock, a
    /// statement timeout, ...): the message carries the database's own error.
    Driver = "X_DRIVER", R,
        "read the database error in the message; a transient one (deadlock, serialization failure, timeout) passes on retry, which the operation gets";
    /// A key, tenant, queue, name or actor is longer than its documented limit (`jobs::limits`).
    LimitExceeded = "X_LIMIT_EXCEEDED", T,
        "shorten the value to the limit the message names (see `jobs::limits`); hash a long natural key (a sha256 hex digest is 64 bytes)";
    /// A key, tenant, queue, name or note holds a character the store cannot hold (NUL, `\u0000`),
    /// or an actor holds a control character.
    ValueUnstorable = "X_VALUE_UNSTORABLE", T,
        "remove NUL characters (\\u0000) from keys, tenants, queues, names and notes, and control characters from actors: text columns cannot hold them";
    /// A declared backfill has never completed (the pending report's verdict, not a refusal).
    BackfillPending = "X_BACKFILL_PENDING", T,
        "run each pending backfill (`jobs backfill <name> --write`, or `jobs.backfills().enqueue(\"<name>\", BackfillRequest::new())`), or remove the declarations that are no longer wanted";
    /// A completed pass exists and the enqueue did not force a new one.
    BackfillApplied = "X_BACKFILL_APPLIED", T,
        "nothing to do; to run the pass again anyway, enqueue it with `force`";
    /// The backfill is not declared for this environment.
    BackfillEnvironment = "X_BACKFILL_ENVIRONMENT", T,
        "run the backfill in an environment it declares, or add this one to its declaration";
    /// The backfill requires a migration that is not applied yet.
    BackfillMigrationPending = "X_BACKFILL_MIGRATION_PENDING", T,
        "apply the migration the backfill requires, then run it";
    /// A live pass under this name already exists; the enqueue deduped onto it.
    BackfillRunning = "X_BACKFILL_RUNNING", T,
        "wait for the live pass to finish (its job id is in the message)";
    /// The source ran out while rows still match.
    BackfillStalled = "X_BACKFILL_STALLED", T,
        "make the handler change every row the source selects, so the source drains";
    /// No declaration carries this backfill name.
    BackfillUnknown = "X_BACKFILL_UNKNOWN", T,
        "name a declared `#[backfill]` (see the manifest's `backfill` rows)";
    /// An export row (or an imported part's line) does not match the declared columns: a key
    /// outside them, a key twice, a cell that is not text, a finite number, a boolean or null,
    /// or a part whose lines do not match its manifest. The message names the column, never
    /// the value.
    ExportRowInvalid = "X_EXPORT_ROW_INVALID", T,
        "make the row fn answer only the declared columns, each once, with text, finite numbers, booleans or null (map NaN and infinities to null or text); on import, declare every column the export's manifest lists";
    /// One encoded page (one part) came out larger than `max_part_bytes` (8 MiB unless set):
    /// the bound on what a part holds in memory.
    ExportPartTooLarge = "X_EXPORT_PART_TOO_LARGE", T,
        "lower the export's `batch` so a page encodes under the bound, or raise `max_part_bytes` (the part is held in memory while it is written or read)";
    /// A posting's entries do not sum to zero in some currency.
    LedgerUnbalanced = "X_LEDGER_UNBALANCED", T,
        "make every currency's entries sum to zero on their own (an FX posting balances in each currency)";
    /// A posting entry is malformed (fewer than 2 entries, blank account, unsafe minor, unknown currency, mixed scale).
    LedgerEntryInvalid = "X_LEDGER_ENTRY_INVALID", T,
        "post at least two entries, each with a non-blank account, integer minor units within 2^53 - 1, an ISO 4217 currency and one scale per currency";
    /// The posting key is already stored with other lines.
    LedgerPostingConflict = "X_LEDGER_POSTING_CONFLICT", T,
        "a posting key is written once: post a correction under a new key";
    /// The webhook ledger has no endpoint under the id.
    WebhookEndpointUnknown = "X_WEBHOOK_ENDPOINT_UNKNOWN", T,
        "register the endpoint in the webhook ledger before delivering to it, or check the endpoint id";
    /// A webhook endpoint is unusable: an empty secret, a URL that does not parse, a scheme
    /// other than http/https, `http://` outside development, or a host that resolves to a
    /// loopback, private, link-local or metadata address without `allow_private`.
    WebhookEndpointInvalid = "X_WEBHOOK_ENDPOINT_INVALID", T,
        "give the endpoint a non-empty secret and a public https:// URL (set `allow_private` only for receivers on your own network)";
    /// The endpoint was disabled by the app, or this delivery reached `disable_after`
    /// consecutive failures.
    WebhookEndpointDisabled = "X_WEBHOOK_ENDPOINT_DISABLED", T,
        "fix the receiver, then re-enable the endpoint in the webhook ledger (`enable`) and requeue the dead deliveries";
    /// No event under the id (it was enqueued outside the event's transaction).
    WebhookEventUnknown = "X_WEBHOOK_EVENT_UNKNOWN", T,
        "enqueue the delivery in the transaction that stores the event, so the event exists when it runs";
    /// An event id or topic would make the signed string ambiguous (empty, over 200
    /// characters, a `:` or a control character).
    WebhookEventInvalid = "X_WEBHOOK_EVENT_INVALID", T,
        "use event ids and topics of 1-200 characters without `:` or control characters (e.g. `order.paid`)";
    /// The receiver answered 5xx, 408, 425 or a 429 without a delay, or never answered.
    WebhookDeliveryFailed = "X_WEBHOOK_DELIVERY_FAILED", R,
        "nothing: the delivery is retried with the job's backoff; check the receiver if it keeps failing";
    /// The receiver answered a retryable status and stated a delay (`Retry-After`).
    WebhookDeliveryThrottled = "X_WEBHOOK_DELIVERY_THROTTLED", RA,
        "nothing: the delivery is retried after the receiver's `Retry-After`, clamped by the job's `max_delay`";
    /// The receiver answered a 4xx that is not a throttle, or a redirect (never followed).
    WebhookDeliveryRejected = "X_WEBHOOK_DELIVERY_REJECTED", T,
        "fix the request the receiver refuses, or point the endpoint at the final URL instead of one that redirects";
    /// A webhook receiver's declaration is refused: its path is not absolute or lies under
    /// `/api` or `/_x`, its secret is empty, or its `max_bytes` is 0.
    WebhookReceiverInvalid = "X_WEBHOOK_RECEIVER_INVALID", T,
        "mount the receiver at an absolute path outside /api and /_x, with a non-empty secret and a positive max_bytes";
    /// An inbound webhook's signature header is missing, malformed, or does not match.
    WebhookSignatureInvalid = "X_WEBHOOK_SIGNATURE_INVALID", T,
        "check that sender and receiver share the secret and that the body reaches the verifier unchanged (HTTP 401)";
    /// An inbound webhook's signed timestamp is outside the tolerance.
    WebhookSignatureStale = "X_WEBHOOK_SIGNATURE_STALE", T,
        "check both clocks; a replayed delivery is refused on purpose (HTTP 401)";
    /// A dashboard request carries no viewer: the app's layers inserted no
    /// `jobs::dashboard::Viewer`, or the standalone dashboard's credentials were missing or wrong.
    DashboardUnauthenticated = "X_DASHBOARD_UNAUTHENTICATED", T,
        "sign in (standalone: the token or basic credentials from JOBS_DASHBOARD_TOKEN or JOBS_DASHBOARD_USER/JOBS_DASHBOARD_PASSWORD); mounted in an app, insert a `Viewer` request extension in a layer before the dashboard (HTTP 401)";
    /// The viewer's roles do not allow the request: reading needs the read (or manage) role,
    /// any change the manage role.
    DashboardForbidden = "X_DASHBOARD_FORBIDDEN", T,
        "grant the viewer the dashboard's manage role (`DashboardOptions::manage_role`, `job:manage` by default) to act, or its read role to look (HTTP 403)";
    /// A state-changing dashboard request without the page's CSRF token, or from another origin.
    DashboardCsrf = "X_DASHBOARD_CSRF", T,
        "submit the form from a dashboard page (it carries the token and its cookie); reload the page if its token is stale (HTTP 403)";
    /// The standalone dashboard was asked to listen beyond loopback without credentials.
    DashboardListenInsecure = "X_DASHBOARD_LISTEN_INSECURE", T,
        "set JOBS_DASHBOARD_TOKEN, or JOBS_DASHBOARD_USER and JOBS_DASHBOARD_PASSWORD, before listening on a non-loopback address, or listen on 127.0.0.1";
}

impl ErrorCode {
    /// What the code means, in one paragraph (its documentation).
    pub fn meaning(self) -> String {
        self.meaning_lines()
            .iter()
            .map(|line| line.trim())
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl ErrorClass {
    /// The class as the reference names it: `terminal`, `retryable` or `retry-after`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Retryable => "retryable",
            ErrorClass::Terminal => "terminal",
            ErrorClass::RetryAfter(_) => "retry-after",
        }
    }

    /// What the worker does with a body's error of this class.
    pub const fn behaviour(self) -> &'static str {
        match self {
            ErrorClass::Retryable => {
                "a job body returning it is retried with the job's backoff, while attempts remain"
            }
            ErrorClass::Terminal => {
                "a job body returning it is dead-lettered on that attempt, its remaining attempts unspent; a call returning it fails the same way again until the fix is applied"
            }
            ErrorClass::RetryAfter(_) => {
                "a job body returning it is retried after the delay the error states (clamped by `max_delay`), while attempts remain"
            }
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The error of the job system, and what a job body returns.
///
/// It carries a reference code (`X_...`) when the runtime raised it, a message, a fix and a
/// retry class. Any `std::error::Error` converts into it (class: retryable), so `?` works in a
/// body on any error type.
///
/// ```
/// use jobs::{JobError, ErrorCode};
/// use std::time::Duration;
///
/// let e = JobError::terminal("card declined");
/// assert_eq!(e.code(), None);
/// let e = JobError::retry_after("provider throttled us", Duration::from_secs(30));
/// let e = JobError::new(ErrorCode::JobNotFound, "no job 42");
/// assert_eq!(e.code(), Some(ErrorCode::JobNotFound));
/// ```
pub struct JobError {
    code: Option<ErrorCode>,
    message: Cow<'static, str>,
    fix: Option<Cow<'static, str>>,
    class: ErrorClass,
    cause: Option<Cause>,
}

impl JobError {
    /// An error with a reference code; class and fix come from the code.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        JobError {
            code: Some(code),
            message: message.into(),
            fix: None,
            class: code.class(),
            cause: None,
        }
    }

    /// An app error retried with the job's backoff.
    pub fn retryable(message: impl Into<Cow<'static, str>>) -> Self {
        JobError {
            code: None,
            message: message.into(),
            fix: None,
            class: ErrorClass::Retryable,
            cause: None,
        }
    }

    /// An app error that must not be retried: the job is dead-lettered now.
    pub fn terminal(message: impl Into<Cow<'static, str>>) -> Self {
        JobError {
            class: ErrorClass::Terminal,
            ..JobError::retryable(message)
        }
    }

    /// An app error retried after `after` (clamped by the job's `max_delay`), e.g. a 429.
    pub fn retry_after(message: impl Into<Cow<'static, str>>, after: Duration) -> Self {
        JobError {
            class: ErrorClass::RetryAfter(after),
            ..JobError::retryable(message)
        }
    }

    /// States the delay before the retry (a responder's `Retry-After`): the class becomes
    /// retry-after, so the retry comes after `after` (clamped by the job's `max_delay`) instead
    /// of the backoff. Still an attempt, still under the job's ceiling.
    ///
    /// ```
    /// use jobs::{ErrorClass, ErrorCode, JobError};
    /// use std::time::Duration;
    ///
    /// let e = JobError::new(ErrorCode::RateLimited, "the provider answered 429")
    ///     .with_retry_after(Duration::from_secs(30));
    /// assert_eq!(e.class(), ErrorClass::RetryAfter(Duration::from_secs(30)));
    /// ```
    pub fn with_retry_after(self, after: Duration) -> Self {
        self.with_class(ErrorClass::RetryAfter(after))
    }

    /// Replaces the fix.
    pub fn with_fix(mut self, fix: impl Into<Cow<'static, str>>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// The same error, its message followed by `context` (where it happened, never a value).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn with_context(mut self, context: impl std::fmt::Display) -> Self {
        self.message = format!("{} ({context})", self.message).into();
        self
    }

    /// Attaches the underlying error.
    pub fn with_cause(mut self, cause: impl Into<Cause>) -> Self {
        self.cause = Some(cause.into());
        self
    }

    /// Replaces the retry class.
    pub fn with_class(mut self, class: ErrorClass) -> Self {
        self.class = class;
        self
    }

    /// The reference code, if the runtime raised it or the app chose one.
    pub fn code(&self) -> Option<ErrorCode> {
        self.code
    }

    /// The message (never a payload).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What to do about it.
    pub fn fix(&self) -> Option<&str> {
        match &self.fix {
            Some(fix) => Some(fix),
            None => self.code.map(ErrorCode::fix),
        }
    }

    /// How the worker retries it.
    pub fn class(&self) -> ErrorClass {
        self.class
    }

    /// The underlying error.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.cause.as_deref()
    }

    /// Whether this is the given code.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.code == Some(code)
    }

    /// The error as an `std::error::Error` (this type is not one, so that any error converts
    /// into it with `?`).
    pub fn into_std(self) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        Box::new(StdJobError(self))
    }

    /// The one-line form stored as a job's `last_error`.
    pub(crate) fn summary(&self) -> String {
        let mut out = String::new();
        if let Some(code) = self.code {
            out.push_str(code.as_str());
            out.push_str(": ");
        }
        out.push_str(&self.message);
        if let Some(cause) = &self.cause {
            // `?` on an app's error makes the message from the cause's own text: write it once.
            let cause = cause.to_string();
            if !self.message.ends_with(&cause) {
                out.push_str(": ");
                out.push_str(&cause);
            }
        }
        // An app's message may hold a NUL, which no text column stores: the write recording
        // the error must not fail on it.
        storable_text(out)
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())?;
        if let Some(fix) = self.fix() {
            write!(f, " (fix: {fix})")?;
        }
        Ok(())
    }
}

impl fmt::Debug for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobError")
            .field("code", &self.code)
            .field("message", &self.message)
            .field("class", &self.class)
            .field("cause", &self.cause)
            .finish()
    }
}

impl<E> From<E> for JobError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        JobError::retryable(error.to_string()).with_cause(Box::new(error) as Cause)
    }
}

// `JobError` is not an `std::error::Error` (so that every error converts into it), but it goes
// into the boxed errors `main` and libraries return, as anyhow's error does.
impl From<JobError> for Box<dyn std::error::Error + Send + Sync + 'static> {
    fn from(error: JobError) -> Self {
        error.into_std()
    }
}

impl From<JobError> for Box<dyn std::error::Error + 'static> {
    fn from(error: JobError) -> Self {
        error.into_std()
    }
}

/// [`JobError`] as an `std::error::Error`.
#[derive(Debug)]
pub struct StdJobError(pub JobError);

impl fmt::Display for StdJobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for StdJobError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .cause()
            .map(|cause| cause as &(dyn std::error::Error + 'static))
    }
}

/// A serde error as it may appear in a message: the shape of the problem, never the value.
///
/// serde quotes the offending value ("invalid type: string \"4111...\", expected u64"), which
/// may be a payload; this keeps the field names and what was expected, and drops the value.
pub(crate) fn redact_serde(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let expected = text
        .find(", expected ")
        .map(|at| &text[at + 2..])
        .unwrap_or("");
    let kind = [
        "invalid type",
        "invalid value",
        "invalid length",
        "unknown variant",
    ]
    .into_iter()
    .find(|k| text.starts_with(k));
    match kind {
        Some(kind) if !expected.is_empty() => format!("{kind}, {expected}"),
        Some(kind) => kind.to_string(),
        None => text,
    }
}

/// The text a stored error message keeps: NUL characters become U+FFFD, since text columns
/// cannot hold them and an error message must never fail the write that records it.
pub(crate) fn storable_text(text: String) -> String {
    if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_error_text_loses_its_nul() {
        assert_eq!(storable_text("a\u{0}b".into()), "a\u{FFFD}b");
        assert_eq!(storable_text("ab".into()), "ab");
    }

    #[test]
    fn codes_round_trip_and_carry_their_class() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
            assert!(code.as_str().starts_with("X_"));
            assert!(!code.fix().is_empty());
            assert!(!code.meaning().is_empty(), "{code} has no meaning");
        }
        assert!(ErrorCode::JobMaxAttempts
            .meaning()
            .starts_with("Retries exhausted; the job is dead-lettered. The last attempt"));
        assert_eq!(ErrorCode::RateLimited.class().as_str(), "retry-after");
        assert_eq!(ErrorCode::JobKeyBusy.class(), ErrorClass::Terminal);
        assert_eq!(ErrorCode::Draining.class(), ErrorClass::Retryable);
    }

    #[test]
    fn any_std_error_converts_and_is_retryable() {
        fn body() -> Result<(), JobError> {
            let _: u32 = "x".parse()?;
            Ok(())
        }
        let e = body().unwrap_err();
        assert_eq!(e.class(), ErrorClass::Retryable);
        assert_eq!(e.code(), None);
        assert!(e.cause().is_some());
    }

    #[derive(Debug)]
    struct Outage;

    impl fmt::Display for Outage {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("ledger service unavailable")
        }
    }

    impl std::error::Error for Outage {}

    #[test]
    fn an_error_converted_by_question_mark_states_its_text_once() {
        fn body() -> Result<(), JobError> {
            Err(Outage)?;
            Ok(())
        }
        let e = body().unwrap_err();
        assert_eq!(e.summary(), "ledger service unavailable");
        assert_eq!(e.to_string(), "ledger service unavailable");
        // A message of its own still names its cause after it.
        let e = JobError::retryable("posting failed").with_cause(Box::new(Outage) as Cause);
        assert_eq!(e.summary(), "posting failed: ledger service unavailable");
    }

    #[test]
    fn the_std_adapter_chains_the_cause() {
        let e = JobError::retryable("posting failed").with_cause(Box::new(Outage) as Cause);
        let std = e.into_std();
        let source = std.source().expect("the cause is the source");
        assert_eq!(source.to_string(), "ledger service unavailable");
        assert!(source.source().is_none());
        let bare = JobError::terminal("card declined").into_std();
        assert!(bare.source().is_none());
    }

    #[test]
    fn serde_errors_lose_the_value() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Card {
            number: u64,
        }
        let e = serde_json::from_value::<Card>(serde_json::json!({ "number": "4111-secret" }))
            .unwrap_err();
        let text = redact_serde(&e);
        assert!(!text.contains("4111"), "{text}");
        assert!(text.contains("expected u64"), "{text}");
        let e = serde_json::from_value::<Card>(serde_json::json!({})).unwrap_err();
        assert_eq!(redact_serde(&e), "missing field `number`");
    }

    /// A fix names only what exists: the backfill's names the verb and the handle that run one.
    #[test]
    fn the_backfill_pending_fix_names_the_real_api() {
        let fix = ErrorCode::BackfillPending.fix();
        assert!(!fix.contains("enqueue_backfill"), "{fix}");
        assert!(fix.contains("jobs backfill <name> --write"), "{fix}");
        assert!(fix.contains("backfills().enqueue("), "{fix}");
    }

    #[test]
    fn display_names_code_and_fix() {
        let e = JobError::new(ErrorCode::JobNotFound, "no job with id 7");
        let text = e.to_string();
        assert!(text.starts_with("X_JOB_NOT_FOUND: no job with id 7"));
        assert!(text.contains("fix: check the job id"));
    }
}
