//! `#[ledger]`: double-entry postings as a job.
//!
//! A ledger job's input is a [`Posting`]: a key, and at least two entries of an account and an
//! integer minor-unit amount in an ISO 4217 currency. The run refuses, before a line is
//! written, anything that does not balance per currency (`X_LEDGER_UNBALANCED`) or is
//! malformed (`X_LEDGER_ENTRY_INVALID`), both terminal; then it writes every line in **one**
//! durable step (`post`) through a [`LedgerBook`]. A key is posted once per ledger and tenant:
//! a retry, a replay or a second enqueue of `pay_123` posts once, and the same key with other
//! lines is `X_LEDGER_POSTING_CONFLICT` (terminal) and writes nothing. A correction is a new key.
//!
//! ```
//! use jobs::prelude::*;
//! use jobs::ledger::{MemoryBook, LedgerBook};
//!
//! // The driver's own book: Postgres' `x_ledger_lines`, or the memory driver's twin.
//! #[ledger(name = "payments", tenant = per_tenant, book = driver)]
//! pub struct PostPayment;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let kit = jobs::testing::TestKit::new();
//! let paid = posting!("pay_123", [
//!     "assets:cash" => 1_000 EUR,
//!     "income:sales" => -1_000 EUR,
//! ])
//! .for_tenant("acme");
//! let queued = PostPayment::enqueue(kit.jobs(), paid).await.unwrap();
//! kit.run_to_completion().await;
//! assert_eq!(kit.job(queued.id).await.state, JobState::Done);
//! # }
//! ```
//!
//! No provider, account plan or currency policy ships: accounts are strings and the lines are
//! the app's data. `book = driver` writes through the driver's own book; `book = path` names a
//! `fn(&Run) -> Result<Arc<dyn LedgerBook>, JobError>` that returns the app's.

mod posting;

pub use crate::driver::ledger_book::{
    LedgerBook, LedgerLine, PostingLinesParams, PostingWrite, PostingWritten,
};
pub use crate::driver::MemoryBook;
/// The ISO 4217 codes a posting may use; `posting!` checks literal postings against the same
/// list at compile time.
pub use jobs_grammar::currency::{is_iso_4217, ISO_4217};
pub use posting::{assert_balanced_posting, Money, Posting, PostingEntry, MAX_SAFE_MINOR};

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::driver::JobDriver;
use crate::error::{ErrorCode, JobError};
use crate::job::Job;
use crate::run::Run;

/// Who a posting belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerTenant {
    /// `tenant = none`: postings are untenanted (and carry no tenant).
    None,
    /// `tenant = per_tenant`: every posting names its tenant; keys are unique per tenant.
    PerTenant,
}

impl LedgerTenant {
    /// The spelling in the declaration and the manifest.
    pub const fn as_str(self) -> &'static str {
        match self {
            LedgerTenant::None => "none",
            LedgerTenant::PerTenant => "per_tenant",
        }
    }
}

/// A ledger's declaration, as the manifest shows it.
#[derive(Debug, Clone, Copy)]
pub struct LedgerDescriptor {
    /// The ledger's name: the job's name, and the book's ledger column.
    pub name: &'static str,
    /// Who a posting belongs to.
    pub tenant: LedgerTenant,
    /// The book, as declared (`driver`, or the path of the fn that returns it).
    pub book: &'static str,
}

/// A declared ledger. `#[ledger]` implements it (and [`Job`]) on the handle.
pub trait Ledger: Job<Input = Posting, Output = PostingReceipt> {
    /// The declaration.
    const LEDGER: LedgerDescriptor;

    /// The book the run writes through.
    fn book(run: &Run) -> Result<Arc<dyn LedgerBook>, JobError>;
}

/// What a posting run reports (the job's output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostingReceipt {
    /// The ledger.
    pub ledger: String,
    /// Lines in the posting.
    pub lines: u32,
    /// Whether this run wrote them, or found them already posted.
    pub written: PostingWritten,
}

/// Not public API: the body `#[ledger]` generates for its job.
#[doc(hidden)]
pub async fn run_ledger<L: Ledger>(run: Run, posting: Posting) -> Result<PostingReceipt, JobError> {
    let d = L::LEDGER;
    assert_balanced_posting(&posting)?;
    check_tenant(d, &posting)?;
    let book = L::book(&run)?;
    let write = PostingWrite {
        ledger: d.name.to_string(),
        tenant: posting.tenant.clone(),
        key: posting.key.clone(),
        lines: lines(&posting),
        run_id: run.run_id(),
        now: run.now(),
    };
    let written = run
        .step("post", async { book.posting_write(&write).await })
        .await?;
    Ok(PostingReceipt {
        ledger: d.name.to_string(),
        lines: write.lines.len() as u32,
        written,
    })
}

/// The job's idempotency key: `<ledger>:<posting key>`.
#[doc(hidden)]
pub fn posting_job_key(ledger: &str, posting: &Posting) -> String {
    format!("{ledger}:{}", posting.key)
}

/// The lines a posting writes: entry `n` is line `n`.
pub fn lines(posting: &Posting) -> Vec<LedgerLine> {
    posting
        .entries
        .iter()
        .enumerate()
        .map(|(n, e)| LedgerLine {
            line: n as u32,
            account: e.account.clone(),
            minor: e.amount.minor,
            currency: e.amount.currency.clone(),
            scale: e.amount.scale,
        })
        .collect()
}

fn check_tenant(d: LedgerDescriptor, posting: &Posting) -> Result<(), JobError> {
    let named = posting
        .tenant
        .as_deref()
        .is_some_and(|t| !t.trim().is_empty());
    match (d.tenant, named, &posting.tenant) {
        (LedgerTenant::PerTenant, false, _) => Err(JobError::new(
            ErrorCode::JobTenantRequired,
            format!(
                "ledger `{}` is declared `tenant = per_tenant`: a posting names its tenant",
                d.name
            ),
        )
        .with_fix("set the posting's tenant: `posting.for_tenant(org_id)`")),
        (LedgerTenant::None, _, Some(_)) => Err(JobError::new(
            ErrorCode::LedgerEntryInvalid,
            format!(
                "ledger `{}` is declared `tenant = none`: its postings carry no tenant",
                d.name
            ),
        )),
        _ => Ok(()),
    }
}

/// Not public API: `book = driver`, the run's driver's own book.
#[doc(hidden)]
pub fn driver_book(run: &Run) -> Result<Arc<dyn LedgerBook>, JobError> {
    let driver = run.driver().clone();
    if driver.ledger_book().is_none() {
        return Err(JobError::new(
            ErrorCode::NotImplemented,
            format!("the `{}` driver has no ledger book", driver.name()),
        )
        .with_fix(
            "declare `book = <fn returning your book>`, or run on the memory, Postgres or SQLite driver",
        ));
    }
    Ok(Arc::new(DriverBook(driver)))
}

/// A driver's own book, owned.
struct DriverBook(Arc<dyn JobDriver>);

impl DriverBook {
    fn book(&self) -> Result<&dyn LedgerBook, JobError> {
        self.0.ledger_book().ok_or_else(|| {
            JobError::new(
                ErrorCode::NotImplemented,
                format!("the `{}` driver has no ledger book", self.0.name()),
            )
        })
    }
}

#[async_trait]
impl LedgerBook for DriverBook {
    async fn posting_write(&self, write: &PostingWrite) -> Result<PostingWritten, JobError> {
        self.book()?.posting_write(write).await
    }

    async fn posting_lines(&self, p: &PostingLinesParams) -> Result<Vec<LedgerLine>, JobError> {
        self.book()?.posting_lines(p).await
    }
}

/// One declared ledger, for the manifest. `#[ledger]` submits `DeclaredLedger::of::<Handle>()`.
#[derive(Debug, Clone, Copy)]
pub struct DeclaredLedger {
    descriptor: LedgerDescriptor,
}

inventory::collect!(DeclaredLedger);

impl DeclaredLedger {
    /// The entry for ledger `L`.
    pub const fn of<L: Ledger>() -> Self {
        DeclaredLedger {
            descriptor: L::LEDGER,
        }
    }

    /// The declaration.
    pub fn descriptor(&self) -> &LedgerDescriptor {
        &self.descriptor
    }
}

/// The manifest's fields of a ledger job, when `name` is one.
pub(crate) fn manifest_fields(name: &str) -> Option<serde_json::Value> {
    let d = inventory::iter::<DeclaredLedger>
        .into_iter()
        .find(|e| e.descriptor.name == name)?
        .descriptor;
    Some(serde_json::json!({
        "tenant": d.tenant.as_str(),
        "book": d.book,
        "balance": "per_currency",
    }))
}
