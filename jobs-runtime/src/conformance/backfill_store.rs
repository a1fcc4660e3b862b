//! The backfill store: a pass begins once, a retry adopts its own row, a completed pass blocks
//! another unless forced, and progress and the finish are recorded for the operator.

use std::sync::Arc;

use uuid::Uuid;

use super::{at, t0};
use crate::driver::backfill_store::{
    BackfillBegin, BackfillBeginParams, BackfillFinishParams, BackfillListParams,
    BackfillProgressParams, BackfillStore, PassStatus,
};
use crate::driver::JobDriver;

fn store(driver: &dyn JobDriver) -> &dyn BackfillStore {
    driver.backfill_store().unwrap_or_else(|| {
        panic!(
            "driver `{}` has no backfill store: the backfill cases need one",
            driver.name()
        )
    })
}

fn begin(run_id: Uuid, force: bool, now_secs: i64) -> BackfillBeginParams {
    BackfillBeginParams {
        id: Uuid::now_v7(),
        name: "users.normalize_email".into(),
        tenant: None,
        run_id,
        job_id: Uuid::now_v7(),
        checksum: "c1".into(),
        force,
        now: at(now_secs),
    }
}

/// `backfill_begin` inserts a running pass, adopts it on a retry of the same run, and refuses
/// a new run once a pass completed, unless forced (a new row).
pub async fn backfill_begin_adopts_its_run_and_skips_after_a_completed_pass(
    driver: Arc<dyn JobDriver>,
) {
    let store = store(driver.as_ref());
    let first = Uuid::now_v7();
    let started = store.backfill_begin(&begin(first, false, 0)).await.unwrap();
    assert_eq!(
        started,
        BackfillBegin::Started {
            adopted: false,
            previous_checksum: None
        }
    );
    let retried = store.backfill_begin(&begin(first, false, 5)).await.unwrap();
    assert!(
        matches!(retried, BackfillBegin::Started { adopted: true, .. }),
        "a retry adopts its own row: {retried:?}"
    );
    store
        .backfill_progress(&BackfillProgressParams {
            run_id: first,
            batches: 2,
            rows: 150,
            last_cursor: Some(serde_json::json!(150)),
            now: at(10),
        })
        .await
        .unwrap();
    store
        .backfill_finish(&BackfillFinishParams {
            run_id: first,
            status: PassStatus::Completed,
            batches: 3,
            rows: 200,
            last_cursor: Some(serde_json::json!(200)),
            now: at(20),
        })
        .await
        .unwrap();

    let second = Uuid::now_v7();
    let skipped = store
        .backfill_begin(&begin(second, false, 30))
        .await
        .unwrap();
    assert_eq!(
        skipped,
        BackfillBegin::Skipped {
            previous_run_id: first
        }
    );
    let forced = store
        .backfill_begin(&begin(second, true, 40))
        .await
        .unwrap();
    assert_eq!(
        forced,
        BackfillBegin::Started {
            adopted: false,
            previous_checksum: Some("c1".into())
        }
    );

    let passes = store
        .backfill_list(&BackfillListParams::default())
        .await
        .unwrap();
    assert_eq!(
        passes.len(),
        2,
        "a skip writes nothing; a forced pass is a new row"
    );
    assert_eq!(passes[0].run_id, second, "newest first");
    assert!(passes[0].forced && passes[0].status == PassStatus::Running);
    let done = &passes[1];
    assert_eq!(
        (done.status, done.batches, done.rows, done.finished_at),
        (PassStatus::Completed, 3, 200, Some(at(20)))
    );
    assert_eq!(done.last_cursor, Some(serde_json::json!(200)));
    assert_eq!(done.started_at, t0(), "a retry keeps the start");

    let only_done = store
        .backfill_list(&BackfillListParams {
            status: Some(PassStatus::Completed),
            ..BackfillListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(only_done.len(), 1);
    let by_run = store
        .backfill_list(&BackfillListParams {
            run_id: Some(second),
            ..BackfillListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(by_run.len(), 1);
    assert_eq!(by_run[0].run_id, second);
}

/// `backfill_migration_applied` answers `false` for a migration the store's database does not
/// record, without an error (on a fresh store: no sqlx table, no set, nothing recorded), and a
/// consumer's laps (`consumer:<name>`) are passes like any other: begun again each lap
/// (forced), listed newest first by name.
pub async fn backfill_store_answers_migrations_and_keeps_consumer_laps(driver: Arc<dyn JobDriver>) {
    let store = store(driver.as_ref());
    assert!(!store
        .backfill_migration_applied(20261201093000)
        .await
        .unwrap());
    assert!(!store.backfill_migration_applied(0).await.unwrap());
    let name = format!(
        "{}orders.feed",
        crate::driver::backfill_store::CONSUMER_LEDGER_PREFIX
    );
    let mut laps = Vec::new();
    for n in 0..3 {
        let run_id = Uuid::now_v7();
        let mut lap = begin(run_id, true, n * 10);
        lap.name = name.clone();
        store.backfill_begin(&lap).await.unwrap();
        store
            .backfill_finish(&BackfillFinishParams {
                run_id,
                status: PassStatus::Completed,
                batches: 1,
                rows: 10,
                last_cursor: Some(serde_json::json!((n + 1) * 10)),
                now: at(n * 10 + 1),
            })
            .await
            .unwrap();
        laps.push(run_id);
    }
    let listed = store
        .backfill_list(&BackfillListParams {
            name: Some(name),
            limit: Some(2),
            ..BackfillListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].run_id, laps[2], "newest first");
    assert_eq!(listed[0].last_cursor, Some(serde_json::json!(30)));
}
