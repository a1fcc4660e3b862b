// `keep_result` puts the output type and its schema in the descriptor, and gives the handle a
// typed read of the kept result; a job without it keeps none.
#![deny(warnings)]
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Day {
    pub day: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tally {
    pub orders: u64,
    pub refunds: Vec<String>,
}

#[job(key = "tally:{day}", tenant = none, keep_result)]
pub async fn tally_orders(run: Run, input: Day) -> Result<Tally, JobError> {
    let _ = run;
    Ok(Tally {
        orders: input.day.len() as u64,
        refunds: vec!["r-1".into()],
    })
}

#[job(key = "forget:{day}", tenant = none, keep_result = false)]
pub async fn tally_nothing(run: Run, input: Day) -> Result<Tally, JobError> {
    let _ = (run, input);
    Ok(Tally {
        orders: 0,
        refunds: Vec::new(),
    })
}

#[test]
fn runs() {
    let kept = TallyOrders::descriptor()
        .result
        .expect("keep_result is in the descriptor");
    assert_eq!(kept.output_type, "Tally");
    assert_eq!(
        (kept.output_schema)()["properties"]["orders"]["type"],
        "integer"
    );
    assert!(TallyNothing::descriptor().result.is_none());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut registry = jobs::Registry::new();
        registry.register::<TallyOrders>().unwrap();
        registry.register::<TallyNothing>().unwrap();
        let kit = jobs::testing::TestKit::with_registry(registry);
        let done = kit
            .run::<TallyOrders>(Day {
                day: "2030-01-01".into(),
            })
            .await;
        assert_eq!(done.state, JobState::Done);
        let expected = Tally {
            orders: 10,
            refunds: vec!["r-1".into()],
        };
        assert_eq!(
            TallyOrders::result(kit.jobs(), done.id).await.unwrap(),
            Some(expected)
        );
        let untyped = kit.job(done.id).await.result.expect("the result is kept");
        assert_eq!(untyped["orders"], 10);
        assert_eq!(untyped["refunds"][0], "r-1");
        let other = kit
            .run::<TallyNothing>(Day {
                day: "2030-01-01".into(),
            })
            .await;
        assert_eq!(other.result, None);
        // A job of another name is not this handle's.
        let refused = TallyOrders::result(kit.jobs(), other.id).await.unwrap_err();
        assert_eq!(refused.code(), Some(ErrorCode::JobNotFound));
    });
}
