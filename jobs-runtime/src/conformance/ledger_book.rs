//! The driver's double-entry book: a posting key is written once per ledger and tenant, the
//! same lines again are answered as already posted, other lines are refused.

use std::sync::Arc;

use uuid::Uuid;

use super::t0;
use crate::driver::ledger_book::{
    LedgerBook, LedgerLine, PostingLinesParams, PostingWrite, PostingWritten,
};
use crate::driver::JobDriver;
use crate::error::ErrorCode;

fn book(driver: &dyn JobDriver) -> &dyn LedgerBook {
    driver.ledger_book().unwrap_or_else(|| {
        panic!(
            "driver `{}` has no ledger book: the ledger cases need one",
            driver.name()
        )
    })
}

fn line(line: u32, account: &str, minor: i64) -> LedgerLine {
    LedgerLine {
        line,
        account: account.into(),
        minor,
        currency: "EUR".into(),
        scale: Some(2),
    }
}

fn write(tenant: Option<&str>, lines: Vec<LedgerLine>) -> PostingWrite {
    PostingWrite {
        ledger: "payments".into(),
        tenant: tenant.map(str::to_string),
        key: "pay_1".into(),
        lines,
        run_id: Uuid::now_v7(),
        now: t0(),
    }
}

fn read(tenant: Option<&str>) -> PostingLinesParams {
    PostingLinesParams {
        ledger: "payments".into(),
        tenant: tenant.map(str::to_string),
        key: "pay_1".into(),
    }
}

/// `posting_write` stores the lines once; the same lines again write nothing; other lines
/// under the key are `X_LEDGER_POSTING_CONFLICT`; the key is per tenant.
pub async fn posting_write_stores_a_key_once_per_tenant(driver: Arc<dyn JobDriver>) {
    let book = book(driver.as_ref());
    let lines = vec![
        line(0, "assets:cash", 1_250),
        line(1, "income:sales", -1_250),
    ];
    assert_eq!(
        book.posting_write(&write(Some("acme"), lines.clone()))
            .await
            .unwrap(),
        PostingWritten::Written
    );
    assert_eq!(
        book.posting_write(&write(Some("acme"), lines.clone()))
            .await
            .unwrap(),
        PostingWritten::AlreadyPosted
    );
    let other = vec![line(0, "assets:cash", 999), line(1, "income:sales", -999)];
    let refused = book
        .posting_write(&write(Some("acme"), other.clone()))
        .await
        .expect_err("other lines under a stored key");
    assert_eq!(refused.code(), Some(ErrorCode::LedgerPostingConflict));
    assert_eq!(
        book.posting_lines(&read(Some("acme"))).await.unwrap(),
        lines
    );

    assert_eq!(
        book.posting_write(&write(Some("globex"), other.clone()))
            .await
            .unwrap(),
        PostingWritten::Written,
        "another tenant's key is another posting"
    );
    assert_eq!(
        book.posting_lines(&read(Some("globex"))).await.unwrap(),
        other
    );
    assert!(book.posting_lines(&read(None)).await.unwrap().is_empty());
}
