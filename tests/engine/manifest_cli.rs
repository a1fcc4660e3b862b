//! A crate's own jobs through one dependency: `#[input]` derives through `jobs`, and the
//! operator tool's `manifest` verb prints and checks the manifest of the jobs linked in.

use jobs::prelude::*;
use serde_json::json;

/// An input declared with `#[input]` alone: serde and schemars come through `jobs`.
#[input]
#[serde(rename_all = "camelCase")]
struct Invite {
    /// Who is invited.
    user_id: u64,
}

#[job(key = "invite:{user_id}", tenant = none)]
async fn send_invite(_run: Run, _input: Invite) -> Result<(), JobError> {
    Ok(())
}

#[test]
fn an_input_attribute_derives_through_the_jobs_crate() {
    let manifest = jobs::manifest().unwrap();
    let row = manifest
        .jobs()
        .iter()
        .find(|j| j["name"] == "send_invite")
        .expect("send_invite is in the manifest");
    let schema = &row["input"]["schema"];
    assert_eq!(
        schema["properties"]["userId"]["description"],
        "Who is invited."
    );
    let input: Invite = serde_json::from_value(json!({ "userId": 7 })).unwrap();
    assert_eq!(
        serde_json::to_value(&input).unwrap(),
        json!({ "userId": 7 })
    );
}

#[tokio::test]
async fn the_operator_tool_prints_and_checks_the_manifest_of_the_jobs_linked_in() {
    let dir = std::env::temp_dir().join(format!("jobs-manifest-cli-{}", std::process::id()));
    let dir_arg = dir.display().to_string();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = jobs::cli::run(["jobs", "manifest"], &mut out, &mut err).await;
    let printed = String::from_utf8(out).unwrap();
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    assert_eq!(printed, jobs::manifest().unwrap().to_json());

    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = jobs::cli::run(["jobs", "manifest", "--out", &dir_arg], &mut out, &mut err).await;
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = jobs::cli::run(
        ["jobs", "manifest", "--check", &dir_arg],
        &mut out,
        &mut err,
    )
    .await;
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));

    std::fs::write(dir.join("JOBS.md"), "edited by hand\n").unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = jobs::cli::run(
        ["jobs", "manifest", "--check", &dir_arg],
        &mut out,
        &mut err,
    )
    .await;
    let err = String::from_utf8(err).unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("JOBS.md is stale") && err.contains("manifest --out"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
