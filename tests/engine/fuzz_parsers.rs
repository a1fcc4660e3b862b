//! Property tests of the parsers that take outside input: durations from configuration, stored
//! job states and step statuses, stored error codes, stored step records (as JSON and as
//! Postgres rows a newer or broken deploy wrote), and run ids given to enqueue. None may panic;
//! each accepts exactly what it documents and refuses the rest with its code.
//!
//! (Cron expressions and time zones from configuration are fuzzed at the end of this file; that
//! every cron the shared grammar accepts fires where it says is tests/engine/cron_grammar.rs.
//! Key templates are expanded at compile time by `#[job]`, so there is no runtime template parser
//! to fuzz; cursors: see the report of issue 9.)

use crate::support;

use std::time::Duration;

use jobs::driver::{StepListParams, StepRecord, StepStatus};
use jobs::duration::parse_duration;
use jobs::prelude::*;
use proptest::prelude::*;
use serde_json::Value;

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("completed"),
            Just("sleeping"),
            Just("waiting"),
            Just("failed"),
            Just("2030-01-01T00:00:00Z"),
            Just("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("run_id".to_string()),
                        Just("name".to_string()),
                        Just("status".to_string()),
                        Just("output".to_string()),
                        Just("attempts".to_string()),
                        Just("wait".to_string()),
                        Just("deadline".to_string()),
                        Just("updated_at".to_string()),
                        "[a-z_]{1,8}",
                    ],
                    inner
                ),
                0..8
            )
            .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// One of the reference's codes.
fn error_code() -> impl Strategy<Value = ErrorCode> {
    proptest::sample::select(ErrorCode::ALL)
}

/// What a stored `last_error_code` may hold: a real code, a near miss of one (another case, a
/// character cut or added), code-shaped text, or any text.
fn stored_error_code() -> impl Strategy<Value = String> {
    let code = || error_code().prop_map(|c| c.as_str().to_string());
    prop_oneof![
        code(),
        code().prop_map(|c| c.to_ascii_lowercase()),
        code().prop_map(|c| c[..c.len() - 1].to_string()),
        (code(), "[A-Z_ ]").prop_map(|(c, extra)| format!("{c}{extra}")),
        "X_[A-Z_]{0,24}",
        ".{0,12}",
    ]
}

const UNITS: [(&str, u64); 6] = [
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
    ("w", 604_800_000),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_text_as_a_duration_parses_positive_or_is_refused_with_x_invariant(text in ".{0,40}") {
        match parse_duration(&text) {
            Ok(d) => prop_assert!(!d.is_zero()),
            Err(e) => {
                prop_assert_eq!(e.code(), Some(ErrorCode::Invariant));
                prop_assert!(e.fix().is_some());
            }
        }
    }

    #[test]
    fn a_positive_amount_of_a_unit_parses_to_itself(n in 1u64..1_000_000, unit in 0usize..6, pad in " {0,3}") {
        let (name, ms) = UNITS[unit];
        let text = format!("{pad}{n}{name}{pad}");
        prop_assert_eq!(parse_duration(&text).unwrap(), Duration::from_millis(n * ms));
        let zero = format!("0{name}");
        prop_assert!(parse_duration(&zero).is_err());
    }

    #[test]
    fn a_stored_job_state_is_known_or_refused_by_name(text in "[a-z_]{0,12}|.{0,12}") {
        match JobState::parse(&text) {
            Ok(state) => prop_assert_eq!(state.as_str(), text.as_str()),
            Err(e) => {
                prop_assert_eq!(e.code(), Some(ErrorCode::JobRowStatusUnknown));
                prop_assert!(JobState::ALL.iter().all(|s| s.as_str() != text));
            }
        }
    }

    #[test]
    fn a_stored_step_status_is_known_or_refused(text in "[a-z]{0,10}|.{0,10}") {
        match StepStatus::parse(&text) {
            Ok(status) => prop_assert_eq!(status.as_str(), text.as_str()),
            Err(e) => prop_assert_eq!(e.code(), Some(ErrorCode::StepRecordInvalid)),
        }
    }

    #[test]
    fn a_stored_error_code_round_trips_or_is_none(code in error_code(), text in stored_error_code()) {
        // Every code's spelling reads back as that code (all of them, and the one drawn).
        for known in ErrorCode::ALL {
            prop_assert_eq!(ErrorCode::parse(known.as_str()), Some(*known));
        }
        prop_assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        // A text that parses is exactly a code's spelling; any other text is `None`.
        match ErrorCode::parse(&text) {
            Some(parsed) => {
                prop_assert_eq!(parsed.as_str(), text.as_str());
                prop_assert!(ErrorCode::ALL.contains(&parsed));
            }
            None => prop_assert!(
                ErrorCode::ALL.iter().all(|known| known.as_str() != text),
                "`{}` is a code's spelling but did not parse", text
            ),
        }
    }

    #[test]
    fn any_json_as_a_step_record_decodes_or_is_refused_and_round_trips(value in json()) {
        if let Ok(record) = serde_json::from_value::<StepRecord>(value) {
            let again = serde_json::to_value(&record).unwrap();
            prop_assert_eq!(serde_json::from_value::<StepRecord>(again).unwrap(), record);
        }
    }
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Item {
    id: u64,
}

#[job(key = "fuzz:{id}", tenant = none)]
async fn fuzzed(_run: Run, _input: Item) -> Result<(), JobError> {
    Ok(())
}

fn is_lower_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_digit() || ('a'..='f').contains(&c),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// A run id given to enqueue is taken only as a lowercase uuid; anything else is
    /// `X_ID_INVALID` and nothing is inserted.
    #[test]
    fn a_run_id_is_taken_only_as_a_lowercase_uuid(
        text in prop_oneof![
            "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            "[0-9a-f-]{30,40}",
            ".{0,40}",
        ]
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let jobs = Jobs::memory();
        let answer = runtime.block_on(Fuzzed::enqueue_with(
            &jobs,
            Item { id: 1 },
            EnqueueOptions::new().run_id(text.clone()),
        ));
        if is_lower_uuid(&text) {
            let queued = answer.unwrap();
            prop_assert_eq!(queued.run_id.to_string(), text);
        } else {
            let error = answer.unwrap_err();
            prop_assert_eq!(error.code(), Some(ErrorCode::IdInvalid));
            prop_assert!(!error.to_string().contains(&text) || text.len() < 4, "the bad id is echoed: {}", error);
        }
    }
}

/// Step rows as a newer or broken deploy may have left them in Postgres: any status string and
/// any `wait` JSON. Reading them back answers the records or `X_STEP_RECORD_INVALID`, never
/// anything else, never a panic.
#[test]
fn stored_step_rows_in_postgres_decode_or_are_refused_with_their_code() {
    use jobs::driver::{JobDriver, PostgresDriver};
    use jobs::sqlx::{self, AssertSqlSafe};
    use proptest::test_runner::{Config, TestCaseError, TestRunner};

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (pool, schema) = runtime.block_on(support::pg::schema("fuzz_step_rows"));
    let driver = PostgresDriver::new(pool.clone(), &schema).unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 128,
        failure_persistence: None,
        ..Config::default()
    });
    let status = prop_oneof![
        Just("completed".to_string()),
        Just("waiting".to_string()),
        Just("sleeping".to_string()),
        ".{0,10}",
    ];
    let result = runner.run(
        &(status, prop::option::of(json()), prop::option::of(json())),
        |(status, output, wait)| {
            runtime.block_on(async {
                let run_id = uuid::Uuid::new_v4();
                let insert = format!(
                    "insert into {schema}.x_job_steps (run_id, name, status, output, wait, attempts, updated_at) \
                     values ($1, 'fuzzed', $2, $3, $4, 1, now())"
                );
                sqlx::query(AssertSqlSafe(insert))
                    .bind(run_id)
                    .bind(status.replace('\0', ""))
                    // jsonb cannot hold `\u0000`: that refusal has its own test
                    // (tests/processes/chaos_bad_input.rs, a NUL in an input or a step output).
                    .bind(output.as_ref().map(strip_nul))
                    .bind(wait.as_ref().map(strip_nul))
                    .execute(&pool)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("insert: {e}")))?;
                match driver.step_list(&StepListParams { run_id }).await {
                    Ok(records) => {
                        prop_assert_eq!(records.len(), 1);
                        prop_assert_eq!(records[0].status.as_str(), status.as_str());
                    }
                    Err(e) => prop_assert_eq!(e.code(), Some(ErrorCode::StepRecordInvalid), "{}", e),
                }
                Ok(())
            })
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn strip_nul(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace('\0', "")),
        Value::Array(items) => Value::Array(items.iter().map(strip_nul).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.replace('\0', ""), strip_nul(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

// Cron and time zones from configuration: `jobs::check_schedule` never panics, refuses with
// X_INVARIANT, and accepts what a standard 5-field cron in an IANA zone is.
proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_cron_and_zone_text_is_answered_never_panics(cron in ".{0,40}", tz in ".{0,30}") {
        let now = chrono_now();
        match jobs::check_schedule(&cron, &tz, now) {
            Ok(_) => {}
            Err(error) => prop_assert_eq!(error.code(), Some(jobs::ErrorCode::Invariant)),
        }
    }

    #[test]
    fn well_formed_crons_in_real_zones_are_accepted(
        minute in 0u32..60,
        hour in 0u32..24,
        dow in prop::sample::select(vec!["*", "1-5", "0", "6,0", "*/2"]),
        tz in prop::sample::select(vec!["UTC", "Europe/Paris", "America/Bogota", "Asia/Kolkata", "America/New_York"]),
    ) {
        let cron = format!("{minute} {hour} * * {dow}");
        let next = jobs::check_schedule(&cron, tz, chrono_now());
        prop_assert!(matches!(next, Ok(Some(_))), "{} in {}: {:?}", cron, tz, next);
    }
}

fn chrono_now() -> jobs::clock::Timestamp {
    use jobs::clock::Clock;
    jobs::clock::SystemClock.now()
}
