//! A real MCP exchange: the SDK's client initializes against the server over an in-memory
//! duplex, lists the tools, and calls each one against a queue with a done job, a ready job
//! and a dead letter.

use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::{Manifest, Registry};
use jobs_codegen::mcp::JobsMcp;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Map, Value};

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Payment {
    pub payment_id: u64,
    pub card_token: String,
}

/// Declines every card: a terminal error, dead-lettered on its first attempt.
#[job(name = "payments.capture", key = "capture:{payment_id}", tenant = none, queue = "payments", retry(attempts = 1))]
pub async fn capture(run: Run, input: Payment) -> Result<(), JobError> {
    run.step("authorize", async { Ok::<_, JobError>(input.payment_id) })
        .await?;
    Err(JobError::terminal("card declined"))
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ReceiptInput {
    pub payment_id: u64,
}

#[job(name = "payments.receipt", key = "receipt:{payment_id}", tenant = none, queue = "mail")]
pub async fn receipt(_run: Run, _input: ReceiptInput) -> Result<(), JobError> {
    Ok(())
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RefundInput {
    pub refund_id: u64,
}

/// What a refund keeps: the processor's reference.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RefundReceipt {
    pub reference: String,
    pub cents: u64,
}

/// Keeps its result (`keep_result`).
#[job(name = "payments.refund", key = "refund:{refund_id}", tenant = none, queue = "refunds", keep_result)]
pub async fn refund(_run: Run, input: RefundInput) -> Result<RefundReceipt, JobError> {
    Ok(RefundReceipt {
        reference: format!("ref_secret_{}", input.refund_id),
        cents: 1250,
    })
}

fn manifest() -> Manifest {
    let mut registry = Registry::new();
    registry
        .register::<Capture>()
        .unwrap()
        .register::<Receipt>()
        .unwrap();
    Manifest::of(&registry)
}

async fn connect(server: JobsMcp) -> RunningService<RoleClient, ()> {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let running = server
            .serve(server_side)
            .await
            .expect("the server initializes");
        let _ = running.waiting().await;
    });
    ().serve(client_side).await.expect("the client initializes")
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> (bool, Value) {
    let mut params = CallToolRequestParams::new(tool.to_string());
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    let result = client
        .call_tool(params)
        .await
        .expect("the call is answered");
    let value = result
        .structured_content
        .clone()
        .expect("every answer is structured");
    (result.is_error.unwrap_or(false), value)
}

#[tokio::test]
async fn an_mcp_client_lists_the_tools_and_reads_the_queue() {
    let kit = TestKit::new();
    let dead = kit
        .enqueue::<Capture>(Payment {
            payment_id: 1,
            card_token: "tok_secret".into(),
        })
        .await;
    kit.run_until_idle().await;
    assert_eq!(kit.job(dead.id).await.state, JobState::Dead);
    kit.enqueue::<Receipt>(ReceiptInput { payment_id: 1 }).await;

    let client = connect(JobsMcp::new(manifest(), kit.jobs().clone())).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert_eq!(info.server_info.as_ref().unwrap().name, "jobs-mcp");

    // tools/list: exactly the read tools the committed tool list describes.
    let tools = client.list_all_tools().await.unwrap();
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
    assert!(tools
        .iter()
        .all(|t| t.annotations.as_ref().unwrap().read_only_hint == Some(true)));

    // manifest.read answers the manifest as committed.
    let (error, manifest_value) = call(&client, "manifest.read", json!({})).await;
    assert!(!error);
    let expected: Value = serde_json::from_str(&manifest().to_json()).unwrap();
    assert_eq!(manifest_value, expected);

    // jobs.inspect: one definition, with its retry policy; an unknown name is refused.
    let (error, inspected) = call(
        &client,
        "jobs.inspect",
        json!({ "name": "payments.capture" }),
    )
    .await;
    assert!(!error);
    assert_eq!(inspected["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(inspected["jobs"][0]["queue"], "payments");
    assert_eq!(inspected["jobs"][0]["retry"]["attempts"], 1);
    assert_eq!(inspected["jobs"][0]["input"], "Payment");
    let (error, refusal) = call(&client, "jobs.inspect", json!({ "name": "nope" })).await;
    assert!(error);
    assert_eq!(refusal["code"], "X_JOB_NOT_FOUND");

    // queue.depth: the ready receipt, the dead capture.
    let (_, depth) = call(&client, "queue.depth", json!({})).await;
    let queue = |name: &str| {
        depth["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["queue"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(queue("mail")["ready"], 1);
    assert_eq!(queue("payments")["dead"], 1);
    assert_eq!(queue("payments")["paused"], false);
    let (_, one) = call(&client, "queue.depth", json!({ "queue": "mail" })).await;
    assert_eq!(one["queues"].as_array().unwrap().len(), 1);

    // job.show: the dead job with its step and its error; the input redacted.
    let (error, shown) = call(&client, "job.show", json!({ "id": dead.id.to_string() })).await;
    assert!(!error);
    assert_eq!(shown["job"]["state"], "dead");
    assert_eq!(shown["job"]["input"], "[redacted]");
    assert_eq!(shown["job"]["result"], Value::Null, "it kept no result");
    assert!(shown["job"]["last_error"]
        .as_str()
        .unwrap()
        .contains("card declined"));
    assert_eq!(shown["steps"][0]["name"], "authorize");
    assert_eq!(shown["steps"][0]["status"], "completed");
    assert!(!shown.to_string().contains("tok_secret"));
    let (error, refusal) = call(&client, "job.show", json!({ "id": "not-a-uuid" })).await;
    assert!(error);
    assert_eq!(refusal["code"], "X_ID_INVALID");
    // An id no job has.
    let (error, refusal) = call(
        &client,
        "job.show",
        json!({ "id": uuid::Uuid::now_v7().to_string() }),
    )
    .await;
    assert!(error);
    assert_eq!(refusal["code"], "X_JOB_NOT_FOUND");

    // jobs.dead: the dead letter, and nothing else, through the introspection API.
    let (error, dead_page) = call(&client, "jobs.dead", json!({})).await;
    assert!(!error, "{dead_page}");
    let rows = dead_page["jobs"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], dead.id.to_string());
    assert!(!dead_page.to_string().contains("tok_secret"));
    let (error, refusal) = call(&client, "jobs.dead", json!({ "limit": 500 })).await;
    assert!(error);
    assert_eq!(refusal["code"], "X_JOB_PAGE_INVALID");

    // An unknown tool is a protocol error.
    let unknown = client
        .call_tool(CallToolRequestParams::new("jobs.drop_table"))
        .await;
    assert!(unknown.is_err());

    let _ = Map::<String, Value>::new();
    client.cancel().await.unwrap();
}

/// job.show redacts a kept result (`keep_result`) as it redacts the input: whether there is
/// one, never what it holds.
#[tokio::test]
async fn job_show_redacts_a_kept_result_as_the_input() {
    let kit = TestKit::new();
    let done = kit.run::<Refund>(RefundInput { refund_id: 9 }).await;
    assert_eq!(done.state, JobState::Done);
    assert!(done.result.is_some());

    let client = connect(JobsMcp::new(manifest(), kit.jobs().clone())).await;
    let (error, shown) = call(&client, "job.show", json!({ "id": done.id.to_string() })).await;
    assert!(!error, "{shown}");
    assert_eq!(shown["job"]["state"], "done");
    assert_eq!(shown["job"]["result"], "[redacted]");
    assert!(!shown.to_string().contains("ref_secret"), "{shown}");
    client.cancel().await.unwrap();
}

/// A read-only server (the default) knows the enqueue tools of `mcp-tools.json` but refuses
/// them with `X_FORBIDDEN`, and lists only the read tools.
#[tokio::test]
async fn a_read_only_server_refuses_an_enqueue_tool_with_a_code() {
    let kit = TestKit::new();
    let client = connect(JobsMcp::new(manifest(), kit.jobs().clone())).await;
    let (error, refusal) = call(
        &client,
        "enqueue.payments.receipt",
        json!({ "input": { "payment_id": 7 } }),
    )
    .await;
    assert!(error);
    assert_eq!(refusal["code"], "X_FORBIDDEN");
    assert!(
        refusal["fix"].as_str().unwrap().contains("--allow-enqueue"),
        "{refusal}"
    );
    assert!(kit
        .jobs()
        .stats()
        .await
        .unwrap()
        .iter()
        .all(|q| q.ready == 0));
    client.cancel().await.unwrap();
}

/// Opened for writes, the server lists and serves one enqueue tool per job of its manifest:
/// the input is checked as the job's input type (its schema's source), the job recorded under
/// the actor `mcp`, an enqueue of a held key deduped; a bad input is refused without its value.
#[tokio::test]
async fn a_server_opened_for_writes_enqueues_through_its_tools() {
    let kit = TestKit::new();
    let server = JobsMcp::new(manifest(), kit.jobs().clone()).allow_enqueue();
    let client = connect(server).await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert!(
        names.contains(&"enqueue.payments.receipt".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"enqueue.payments.capture".to_string()),
        "{names:?}"
    );
    // The served tools are the committed list's: read tools and one enqueue tool per job.
    let listed = jobs::codegen::mcp_tools::tool_list(&manifest());
    let mut committed: Vec<String> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    committed.sort();
    assert_eq!(names, committed);

    let (error, queued) = call(
        &client,
        "enqueue.payments.receipt",
        json!({ "input": { "payment_id": 7 }, "priority": 2 }),
    )
    .await;
    assert!(!error, "{queued}");
    assert_eq!(queued["deduped"], false);
    let id: uuid::Uuid = queued["id"].as_str().unwrap().parse().unwrap();
    let row = kit.job(id).await;
    assert_eq!(row.name, "payments.receipt");
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.priority, 2);
    assert_eq!(row.actor.as_deref(), Some("mcp"));
    // The same key again: the live job answers.
    let (error, again) = call(
        &client,
        "enqueue.payments.receipt",
        json!({ "input": { "payment_id": 7 } }),
    )
    .await;
    assert!(!error, "{again}");
    assert_eq!(again["deduped"], true);
    assert_eq!(again["id"], queued["id"]);

    // An input the job's type refuses names the field, never the value.
    let (error, refusal) = call(
        &client,
        "enqueue.payments.capture",
        json!({ "input": { "payment_id": 1, "card_token": 4111111111u64 } }),
    )
    .await;
    assert!(error);
    assert_eq!(refusal["code"], "X_JOB_INPUT_INVALID");
    assert!(!refusal.to_string().contains("4111111111"), "{refusal}");
    // No input, an argument the tool does not take, a priority out of range.
    let (error, refusal) = call(&client, "enqueue.payments.receipt", json!({})).await;
    assert!(error);
    assert_eq!(refusal["code"], "X_MCP_BAD_ARGUMENT");
    let (error, refusal) = call(
        &client,
        "enqueue.payments.receipt",
        json!({ "input": { "payment_id": 8 }, "queue": "elsewhere" }),
    )
    .await;
    assert!(error);
    assert_eq!(refusal["code"], "X_MCP_BAD_ARGUMENT");
    let (error, refusal) = call(
        &client,
        "enqueue.payments.receipt",
        json!({ "input": { "payment_id": 8 }, "priority": 9 }),
    )
    .await;
    assert!(error);
    assert_eq!(refusal["code"], "X_INVARIANT");
    // A job outside the manifest has no tool.
    let unknown = client
        .call_tool(CallToolRequestParams::new("enqueue.payments.refund"))
        .await;
    assert!(unknown.is_err());
    client.cancel().await.unwrap();
}
