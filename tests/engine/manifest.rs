//! The manifest: every job linked into the binary, sorted by name, byte-stable. The binary
//! links other modules' jobs too: this module's three are checked by name, and the whole
//! manifest against the linked registry.

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

#[job(
    key = "digest:{day}",
    tenant = none,
    dead_letter = false,
    on_settled = digest_settled,
    priority = -2,
    unique(for = "1d")
)]
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

/// The three jobs of this module, registered in `order`.
fn this_module_s(order: [usize; 3]) -> jobs::Registry {
    let mut registry = jobs::Registry::new();
    for i in order {
        match i {
            0 => registry.register::<SyncOrg>(),
            1 => registry.register::<AlphaDigest>(),
            _ => registry.register::<MiddleJob>(),
        }
        .unwrap();
    }
    registry
}

fn names(manifest: &jobs::Manifest) -> Vec<&str> {
    manifest
        .jobs()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect()
}

#[test]
fn lists_every_job_sorted_by_name() {
    // Every job linked in, each once, sorted by name (byte order).
    let manifest = jobs::manifest().unwrap();
    let linked: Vec<&str> = jobs::Registry::global()
        .unwrap()
        .entries()
        .map(|e| e.descriptor().name)
        .collect();
    assert_eq!(names(&manifest), linked);
    assert!(names(&manifest).windows(2).all(|w| w[0] < w[1]));
    for ours in ["alpha_digest", "middle", "zeta-sync"] {
        assert!(names(&manifest).contains(&ours), "{ours} is listed");
    }
    assert_eq!(manifest.to_value()["version"], 1);
    // Exactly a registry's jobs, sorted, whatever the order they were registered in.
    let ours = jobs::Manifest::of(&this_module_s([0, 1, 2]));
    assert_eq!(names(&ours), ["alpha_digest", "middle", "zeta-sync"]);
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
    assert_eq!(sync["priority"], 0, "the default priority");
    assert_eq!(
        sync["on_dependency_failure"], "cancel",
        "the default policy"
    );
    assert_eq!(
        sync["unique_for_ms"],
        serde_json::Value::Null,
        "no unique period"
    );

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
    assert_eq!(digest["priority"], -2);
    assert_eq!(digest["unique_for_ms"], 86_400_000);

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
    // A registry built by hand gives the same bytes whatever its order, and the same rows as
    // the linked registry.
    let by_hand = jobs::Manifest::of(&this_module_s([0, 1, 2])).to_json();
    assert_eq!(
        jobs::Manifest::of(&this_module_s([2, 0, 1])).to_json(),
        by_hand
    );
    let by_hand: serde_json::Value = serde_json::from_str(&by_hand).unwrap();
    for row in by_hand["jobs"].as_array().unwrap() {
        let name = row["name"].as_str().unwrap();
        let linked = parsed["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["name"] == name)
            .unwrap_or_else(|| panic!("{name} is linked"));
        assert_eq!(linked, row);
    }
}
