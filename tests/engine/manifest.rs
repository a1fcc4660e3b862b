//! The manifest: every job linked into the binary, sorted by name, byte-stable.

use jobs::prelude::*;
use serde_json::json;

/// An org to sync.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct OrgSync {
    /// The org.
    org_id: String,
    /// How many pages.
    pages: u32,
}

#[job(
    name = "zeta-sync",
    key = "sync:{org_id}",
    tenant = org_id,
    queue = "sync",
    retry(attempts = 5, backoff = linear, delay = "2s", max_delay = "10m", jitter = full),
    timeout = "10m",
    step_timeout = "30s",
    event_poll = "5s",
)]
async fn sync_org(_run: Run, _input: OrgSync) -> Result<(), JobError> {
    Ok(())
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Digest {
    day: String,
}

async fn digest_settled(_settled: Settled<Digest, ()>) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "digest:{day}", tenant = none, dead_letter = false, on_settled = digest_settled)]
async fn alpha_digest(_run: Run, _input: Digest) -> Result<(), JobError> {
    Ok(())
}

#[job(name = "middle", key = |input| input.day.clone(), tenant = |input| format!("org-{}", input.day))]
async fn middle_job(_run: Run, _input: Digest) -> Result<(), JobError> {
    Ok(())
}

fn row<'a>(manifest: &'a jobs::Manifest, name: &str) -> &'a serde_json::Value {
    manifest
        .jobs()
        .iter()
        .find(|j| j["name"] == name)
        .unwrap_or_else(|| panic!("no job `{name}` in the manifest"))
}

#[test]
fn lists_every_job_sorted_by_name() {
    let manifest = jobs::manifest().unwrap();
    let names: Vec<&str> = manifest
        .jobs()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha_digest", "middle", "zeta-sync"]);
    assert_eq!(manifest.to_value()["version"], 1);
}

#[test]
fn describes_queue_retry_timeouts_and_tenant() {
    let manifest = jobs::manifest().unwrap();
    let sync = row(&manifest, "zeta-sync");
    assert_eq!(sync["kind"], "job");
    assert_eq!(sync["queue"], "sync");
    assert_eq!(sync["idempotent"], true);
    assert_eq!(
        sync["retry"],
        json!({
            "attempts": 5,
            "backoff": "linear",
            "delay_ms": 2000,
            "max_delay_ms": 600_000,
            "jitter": "full",
            "dead_letter": true,
        })
    );
    assert_eq!(sync["timeout_ms"], 600_000);
    assert_eq!(sync["step_timeout_ms"], 30_000);
    assert_eq!(sync["event_poll_ms"], 5_000);
    assert_eq!(sync["concurrency"], serde_json::Value::Null);
    assert_eq!(
        sync["tenant"],
        json!({ "mode": "field", "field": "org_id" })
    );
    assert_eq!(sync["on_settled"], false);

    let digest = row(&manifest, "alpha_digest");
    assert_eq!(digest["queue"], "default");
    assert_eq!(
        digest["retry"],
        json!({
            "attempts": 3,
            "backoff": "exponential",
            "delay_ms": 1000,
            "max_delay_ms": 3_600_000,
            "jitter": "equal",
            "dead_letter": false,
        })
    );
    assert_eq!(digest["timeout_ms"], serde_json::Value::Null);
    assert_eq!(digest["step_timeout_ms"], serde_json::Value::Null);
    assert_eq!(digest["event_poll_ms"], 30_000);
    assert_eq!(digest["tenant"], json!({ "mode": "none" }));
    assert_eq!(digest["on_settled"], true);

    assert_eq!(
        row(&manifest, "middle")["tenant"],
        json!({ "mode": "derived" })
    );
}

#[test]
fn publishes_the_input_schema() {
    let manifest = jobs::manifest().unwrap();
    let input = &row(&manifest, "zeta-sync")["input"];
    assert_eq!(input["type"], "OrgSync");
    let schema = &input["schema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["org_id"]["type"], "string");
    assert_eq!(schema["properties"]["pages"]["type"], "integer");
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort();
    assert_eq!(required, ["org_id", "pages"]);
}

#[test]
fn never_carries_a_key() {
    let text = jobs::manifest().unwrap().to_json();
    assert!(!text.contains("sync:{org_id}"));
    assert!(!text.contains("digest:"));
}

#[test]
fn is_byte_stable() {
    let first = jobs::manifest().unwrap().to_json();
    let second = jobs::manifest().unwrap().to_json();
    assert_eq!(first, second);
    assert!(first.ends_with("}\n"));
    // Keys are sorted at every level.
    let parsed: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(parsed, jobs::manifest().unwrap().to_value());
    let job_keys: Vec<&String> = parsed["jobs"][0].as_object().unwrap().keys().collect();
    let mut sorted = job_keys.clone();
    sorted.sort();
    assert_eq!(job_keys, sorted);
    // The same registry built by hand gives the same bytes.
    let mut registry = jobs::Registry::new();
    registry
        .register::<SyncOrg>()
        .unwrap()
        .register::<AlphaDigest>()
        .unwrap()
        .register::<MiddleJob>()
        .unwrap();
    assert_eq!(jobs::Manifest::of(&registry).to_json(), first);
}
