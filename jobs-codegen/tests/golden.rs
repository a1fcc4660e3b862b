//! Every output against a committed golden file, from a registry with nested types, enums,
//! optional and repeated fields, a keyed concurrency cap, a rate limit, and a task; and
//! byte-stability.
//!
//! `UPDATE_GOLDEN=1 cargo test -p jobs-codegen --test golden` rewrites the golden files; a
//! reviewer reads their diff like a `.stderr` change.

use std::path::PathBuf;

use jobs::prelude::*;
use jobs::{Manifest, Registry};
use jobs_codegen::{CheckResult, OUTPUTS};

/// How a shipment travels.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Carrier {
    /// By post.
    Post,
    /// By courier.
    Courier,
}

/// One line of an order.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Line {
    /// The product's SKU.
    pub sku: String,
    /// How many.
    pub quantity: u32,
}

/// Ships an order.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Shipment {
    /// The organisation.
    pub org_id: String,
    /// The order.
    pub order_id: u64,
    /// What is in the box.
    pub lines: Vec<Line>,
    /// How it travels.
    pub carrier: Carrier,
    /// A note for the driver, if any.
    pub note: Option<String>,
    /// Free-form labels.
    pub labels: std::collections::BTreeMap<String, String>,
}

/// Ships an order, one at a time per organisation, at most 30 a minute.
#[job(
    name = "shipping.ship",
    key = "ship:{order_id}",
    tenant = org_id,
    queue = "shipping",
    retry(attempts = 3, backoff = linear, delay = "30s", max_delay = "5m"),
    timeout = "2m",
    concurrency(key = "{org_id}", limit = 1, when_busy = wait),
    rate(limit = 30, per = "1m"),
)]
pub async fn ship(_run: Run, _input: Shipment) -> Result<(), JobError> {
    Ok(())
}

/// A daily report.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// The day.
    pub day: String,
}

/// Builds the daily report.
#[job(
    key = "report:{day}",
    tenant = none,
    queue = "reports",
    dead_letter = false,
    unique(for = "1d")
)]
pub async fn daily_report(_run: Run, _input: Report) -> Result<(), JobError> {
    Ok(())
}

/// Every morning, the report.
#[task(cron = "0 6 * * *", tz = "Europe/Paris")]
fn morning(at: Occurrence) -> Vec<Entry> {
    vec![Entry::of::<DailyReport>(Report {
        day: at.date().to_string(),
    })]
}

fn manifest() -> Manifest {
    let mut registry = Registry::new();
    registry
        .register::<Ship>()
        .unwrap()
        .register::<DailyReport>()
        .unwrap()
        .register_task::<Morning>()
        .unwrap();
    Manifest::of(&registry)
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn every_output_matches_its_golden_file() {
    let manifest = manifest();
    let dir = golden_dir();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        jobs_codegen::write_all(&dir, &manifest).unwrap();
    }
    for (file, result) in jobs_codegen::check_all(&dir, &manifest) {
        assert_eq!(
            result,
            CheckResult::Fresh,
            "{file} differs from tests/golden/{file}; rerun with UPDATE_GOLDEN=1 and review the diff"
        );
    }
}

#[test]
fn outputs_are_byte_stable() {
    let first = manifest();
    let second = manifest();
    for output in OUTPUTS {
        let a = (output.render)(&first);
        assert_eq!(a, (output.render)(&second), "{}", output.file);
        assert!(a.ends_with('\n') && !a.ends_with("\n\n"), "{}", output.file);
    }
}

#[test]
fn registration_order_does_not_change_a_byte() {
    let mut reversed = Registry::new();
    reversed
        .register_task::<Morning>()
        .unwrap()
        .register::<DailyReport>()
        .unwrap()
        .register::<Ship>()
        .unwrap();
    let reversed = Manifest::of(&reversed);
    for output in OUTPUTS {
        assert_eq!(
            (output.render)(&manifest()),
            (output.render)(&reversed),
            "{}",
            output.file
        );
    }
}

#[test]
fn the_schema_bundle_keys_inputs_by_job_name_with_their_own_ids() {
    let bundle = jobs_codegen::schema_bundle(&manifest());
    let ship = &bundle["$defs"]["shipping.ship"];
    assert_eq!(ship["$id"], "urn:jobs:input:shipping.ship");
    assert!(ship.get("$schema").is_none());
    // The nested types stay inside the input's own resource, where its `$ref`s point.
    assert!(ship["$defs"]["Line"].is_object());
    assert_eq!(ship["properties"]["lines"]["items"]["$ref"], "#/$defs/Line");
}

#[test]
fn the_tool_list_has_the_read_tools_and_one_enqueue_tool_per_job() {
    let list = jobs_codegen::tool_list(&manifest());
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "enqueue.daily_report",
            "enqueue.shipping.ship",
            "job.show",
            "jobs.dead",
            "jobs.inspect",
            "manifest.read",
            "queue.depth",
        ]
    );
    let ship = &list["tools"][1];
    assert_eq!(ship["inputSchema"]["required"][0], "input");
    // The input's `$defs` are hoisted to the tool schema's root, where `#/$defs/Line` points.
    assert!(ship["inputSchema"]["$defs"]["Line"].is_object());
    assert_eq!(
        ship["inputSchema"]["properties"]["input"]["properties"]["lines"]["items"]["$ref"],
        "#/$defs/Line"
    );
}

#[test]
fn check_finds_a_stale_file_in_a_directory() {
    let manifest = manifest();
    let dir = std::env::temp_dir().join(format!("jobs-codegen-golden-{}", std::process::id()));
    jobs_codegen::write_all(&dir, &manifest).unwrap();
    assert!(jobs_codegen::check_all(&dir, &manifest)
        .iter()
        .all(|(_, r)| *r == CheckResult::Fresh));
    std::fs::write(dir.join("jobs.ts"), "// edited by hand\n").unwrap();
    let stale: Vec<&str> = jobs_codegen::check_all(&dir, &manifest)
        .into_iter()
        .filter(|(_, r)| *r != CheckResult::Fresh)
        .map(|(file, _)| file)
        .collect();
    assert_eq!(stale, ["jobs.ts"]);
    let code = jobs_codegen::run(
        &manifest,
        &["--check".to_string(), dir.display().to_string()],
    );
    assert_eq!(code, std::process::ExitCode::FAILURE);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_empty_manifest_is_refused_unless_asked_for() {
    use jobs_codegen::{manifest_command, ManifestAction, EXIT_FAILED, EXIT_OK};
    let empty = Manifest::of(&Registry::new());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = manifest_command(
        &empty,
        &ManifestAction::Print,
        false,
        "jobs manifest",
        &mut out,
        &mut err,
    );
    let err = String::from_utf8(err).unwrap();
    assert_eq!(code, EXIT_FAILED, "{err}");
    assert!(out.is_empty(), "nothing printed to commit");
    assert!(err.contains("X_REGISTRAR_MISSING"), "{err}");
    assert!(err.contains("use my_app as _;"), "the fix is named: {err}");
    assert!(err.contains("--allow-empty"), "{err}");

    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = manifest_command(
        &empty,
        &ManifestAction::Print,
        true,
        "jobs manifest",
        &mut out,
        &mut err,
    );
    assert_eq!(code, EXIT_OK);
    assert!(String::from_utf8(out).unwrap().contains("\"jobs\": []"));

    // The operator binary's verb is the same command.
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = manifest_command(
        &manifest(),
        &ManifestAction::Print,
        false,
        "jobs manifest",
        &mut out,
        &mut err,
    );
    assert_eq!(code, EXIT_OK);
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("\"shipping.ship\""));
}
