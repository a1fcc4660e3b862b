//! Work that spans jobs, declared with `#[job]`: a parent invokes a child that keeps its result
//! and gets its output typed; fans out over many and fans in; a child in another tenant than
//! the parent's is refused before anything is written; a batch's callback reads its counts.

use jobs::prelude::*;
use jobs::testing::TestKit;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Quote {
    sku: String,
    org: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Price {
    sku: String,
    cents: u64,
}

#[job(key = "invoke.price:{sku}", tenant = org, keep_result)]
async fn invoke_price(_run: Run, quote: Quote) -> Result<Price, JobError> {
    if quote.sku == "discontinued" {
        return Err(JobError::terminal("no such product"));
    }
    Ok(Price {
        cents: quote.sku.len() as u64 * 100,
        sku: quote.sku,
    })
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Cart {
    id: u64,
    org: String,
    skus: Vec<String>,
    /// Invoke the first sku in this tenant instead of the cart's.
    foreign_org: Option<String>,
}

#[job(key = "invoke.checkout:{id}", tenant = org, keep_result)]
async fn invoke_checkout(run: Run, cart: Cart) -> Result<Vec<String>, JobError> {
    if let Some(other) = &cart.foreign_org {
        let quote = Quote {
            sku: cart.skus[0].clone(),
            org: other.clone(),
        };
        run.invoke(InvokePrice, quote).await?;
        return Ok(Vec::new());
    }
    let first = Quote {
        sku: cart.skus[0].clone(),
        org: cart.org.clone(),
    };
    let single: Price = run.invoke(InvokePrice, first).timeout("1h").await?;
    let quotes = cart.skus.iter().map(|sku| Quote {
        sku: sku.clone(),
        org: cart.org.clone(),
    });
    let all = run.invoke_all(InvokePrice, quotes).await?;
    let mut told = vec![format!("first:{}", single.cents)];
    for price in all {
        told.push(match price {
            Ok(p) => format!("{}:{}", p.sku, p.cents),
            Err(e) => format!("failed:{}", e.code().map_or("-", |c| c.as_str())),
        });
    }
    Ok(told)
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Month {
    month: String,
}

#[job(key = "invoke.report:{month}", tenant = none, keep_result)]
async fn invoke_report(run: Run, _month: Month) -> Result<String, JobError> {
    let batch = run.batch().await?.expect("a batch's callback");
    Ok(format!("{} of {} done", batch.done, batch.size))
}

#[tokio::test]
async fn a_parent_gets_typed_outputs_and_errors_of_its_children() {
    let kit = TestKit::new();
    let cart = Cart {
        id: 1,
        org: "acme".into(),
        skus: vec!["tea".into(), "discontinued".into(), "coffee".into()],
        foreign_org: None,
    };
    let queued = InvokeCheckout::enqueue(kit.jobs(), cart).await.unwrap();
    kit.run_to_completion().await;
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done, "{:?}", row.last_error);
    let told = InvokeCheckout::result(kit.jobs(), queued.id).await.unwrap();
    assert_eq!(
        told,
        Some(vec![
            "first:300".to_string(),
            "tea:300".into(),
            "failed:X_JOB_CHILD_FAILED".into(),
            "coffee:600".into(),
        ])
    );
    // One child per invoke position: the first invoke's `tea` and the fan-out's three. The
    // fan-out's `tea` has the same key as the first child, which is done: a fresh job.
    let links = kit.jobs().links(queued.id).await.unwrap();
    assert_eq!(links.children.len(), 4);
    for (child, _) in &links.children {
        assert_eq!(kit.job(*child).await.tenant_id.as_deref(), Some("acme"));
    }
}

#[tokio::test]
async fn a_child_in_another_tenant_is_refused_before_anything_is_written() {
    let kit = TestKit::new();
    let cart = Cart {
        id: 2,
        org: "acme".into(),
        skus: vec!["tea".into()],
        foreign_org: Some("globex".into()),
    };
    let queued = InvokeCheckout::enqueue(kit.jobs(), cart).await.unwrap();
    kit.run_to_completion().await;
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_JOB_TENANT_MISMATCH")
    );
    assert!(kit
        .jobs()
        .links(queued.id)
        .await
        .unwrap()
        .children
        .is_empty());
}

/// Found by the deterministic simulator (`jobs-sim`): an open whose first try enqueued the
/// callback and failed before writing the batch was refused on every retry (`X_JOB_DUPLICATE`),
/// its callback left due in 9999.
#[tokio::test]
async fn an_open_retried_after_its_callback_was_enqueued_opens_the_same_batch() {
    let kit = TestKit::new();
    let jobs = kit.jobs();
    let month = |m: &str| Month { month: m.into() };
    let half = jobs
        .enqueue_with::<InvokeReport>(
            month("2026-12"),
            EnqueueOptions::new().run_at(jobs::driver::blocked_until()),
        )
        .await
        .unwrap();
    let batch = jobs.batch::<InvokeReport>(month("2026-12")).await.unwrap();
    assert_eq!(batch.callback(), half.id);
    let again = jobs.batch::<InvokeReport>(month("2026-12")).await.unwrap();
    assert_eq!((again.id(), again.callback()), (batch.id(), half.id));
    let quote = Quote {
        sku: "a".into(),
        org: "acme".into(),
    };
    batch.add::<InvokePrice, _>([quote]).await.unwrap();
    batch.close().await.unwrap();
    kit.run_to_completion().await;
    let said = InvokeReport::result(jobs, batch.callback()).await.unwrap();
    assert_eq!(said.as_deref(), Some("1 of 1 done"));

    // A live job holding the key that is no batch's callback is still refused.
    jobs.enqueue::<InvokeReport>(month("2027-01"))
        .await
        .unwrap();
    let refused = jobs
        .batch::<InvokeReport>(month("2027-01"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::JobDuplicate));
}

#[tokio::test]
async fn a_batch_callback_runs_once_every_member_settled() {
    let kit = TestKit::new();
    let jobs = kit.jobs();
    let batch = jobs
        .batch::<InvokeReport>(Month {
            month: "2026-11".into(),
        })
        .await
        .unwrap();
    let quotes = ["a", "discontinued", "c"].map(|sku| Quote {
        sku: sku.into(),
        org: "acme".into(),
    });
    batch.add::<InvokePrice, _>(quotes).await.unwrap();
    batch.close().await.unwrap();
    kit.run_to_completion().await;
    let said = InvokeReport::result(jobs, batch.callback()).await.unwrap();
    assert_eq!(said.as_deref(), Some("2 of 3 done"));
    // The MCP server's job.show carries the batch and its progress.
    let mcp = jobs::mcp::JobsMcp::new(jobs::manifest().unwrap(), jobs.clone());
    let mut args = serde_json::Map::new();
    args.insert("id".into(), batch.callback().to_string().into());
    let shown = mcp.call("job.show", &args).await.unwrap();
    assert_eq!(shown["links"]["batch"], batch.id().to_string());
    assert_eq!(shown["batch"]["size"], 3);
    assert_eq!(shown["batch"]["done"], 2);
    assert_eq!(shown["batch"]["failed"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn children_of_one_invoke_sharing_a_key_are_refused_before_any_is_enqueued() {
    let kit = TestKit::new();
    let cart = Cart {
        id: 3,
        org: "acme".into(),
        skus: vec!["tea".into(), "tea".into()],
        foreign_org: None,
    };
    let queued = InvokeCheckout::enqueue(kit.jobs(), cart).await.unwrap();
    kit.run_to_completion().await;
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.last_error_code.as_deref(), Some("X_INVARIANT"));
    let error = row.last_error.unwrap_or_default();
    assert!(error.contains("children 0 and 1"), "{error}");
    assert!(!error.contains("tea"), "never the key: {error}");
    // Only the first invoke's child exists.
    assert_eq!(kit.jobs().links(queued.id).await.unwrap().children.len(), 1);
}
