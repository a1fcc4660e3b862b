// A step name may repeat across arms that exclude each other: a run takes one arm.
#![deny(warnings)]
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Order {
    pub id: u64,
    pub express: bool,
}

#[job(key = "ship:{id}", tenant = none)]
pub async fn ship(run: Run, input: Order) -> Result<(), JobError> {
    if input.express {
        run.step("label", async { Ok::<_, JobError>(1u8) }).await?;
    } else {
        run.step("label", async { Ok::<_, JobError>(2u8) }).await?;
    }
    match input.id % 3 {
        0 => run.step("notify", async { Ok::<_, JobError>(()) }).await?,
        1 if input.express => run.step("notify", async { Ok::<_, JobError>(()) }).await?,
        _ => run.step("notify", async { Ok::<_, JobError>(()) }).await?,
    }
    // Literal durations that read well compile.
    run.sleep("1h 30m").await?;
    let _paid: Option<u64> = run.wait_for_event("paid", "order", "3d").await?;
    Ok(())
}

#[test]
fn runs() {
    assert_eq!(Ship::descriptor().name, "ship");
}
