//! The `jobs-mcp` binary as an MCP client meets it: spawned as a child process speaking the
//! protocol over its stdin and stdout, answering with the example jobs' manifest.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::Value;

/// A real process: every exchange is bounded so a hung server fails the test instead.
const BOUND: Duration = Duration::from_secs(60);

#[tokio::test]
async fn the_binary_serves_the_committed_manifest_over_stdio() {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_jobs-mcp"));
    command.env_remove("DATABASE_URL");
    let transport = TokioChildProcess::new(command).expect("jobs-mcp starts");
    let client = tokio::time::timeout(BOUND, ().serve(transport))
        .await
        .expect("the handshake finishes in time")
        .expect("the handshake succeeds");

    let tools = tokio::time::timeout(BOUND, client.list_all_tools())
        .await
        .unwrap()
        .unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "job.show",
            "jobs.dead",
            "jobs.inspect",
            "manifest.read",
            "queue.depth"
        ]
    );

    let read = tokio::time::timeout(
        BOUND,
        client.call_tool(CallToolRequestParams::new("manifest.read")),
    )
    .await
    .unwrap()
    .unwrap();
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(read.structured_content, Some(committed));

    let depth = tokio::time::timeout(
        BOUND,
        client.call_tool(CallToolRequestParams::new("queue.depth")),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(depth.is_error, Some(false));
    assert_eq!(
        depth.structured_content.unwrap()["queues"],
        Value::Array(vec![])
    );

    tokio::time::timeout(BOUND, client.cancel())
        .await
        .unwrap()
        .unwrap();
}
