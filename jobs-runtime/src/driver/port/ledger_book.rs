//! The `LedgerBook` port: where a `#[ledger]` job writes a posting's lines. An optional
//! capability of a [`JobDriver`](super::JobDriver) (its own book, in its own store:
//! [`JobDriver::ledger_book`](super::JobDriver::ledger_book)), and a trait an app may implement
//! over its own table.
//!
//! A book writes a posting key **once** per ledger and tenant: lines are keyed
//! `(ledger, tenant, posting key, line)`. Writing a key that is already stored with the same
//! lines answers [`PostingWritten::AlreadyPosted`] and writes nothing (a retry, a replay or a
//! second enqueue posts once); with other lines (another count, another line) it is
//! `X_LEDGER_POSTING_CONFLICT` and writes nothing either. The check and the write are atomic.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::records::RunId;
use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// One line of a posting, as a book stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerLine {
    /// The line's position in the posting, from 0.
    pub line: u32,
    /// The account (the app's own string).
    pub account: String,
    /// The amount in minor units (cents), signed: debits and credits sum to zero per currency.
    pub minor: i64,
    /// The ISO 4217 currency code.
    pub currency: String,
    /// The number of minor-unit digits, when the posting states it.
    pub scale: Option<u8>,
}

/// Write one posting's lines.
#[derive(Debug, Clone)]
pub struct PostingWrite {
    /// The ledger's declared name.
    pub ledger: String,
    /// The tenant (`None`: untenanted).
    pub tenant: Option<String>,
    /// The posting key: written once.
    pub key: String,
    /// Every line, in order.
    pub lines: Vec<LedgerLine>,
    /// The run that writes it.
    pub run_id: RunId,
    /// Now.
    pub now: Timestamp,
}

/// Read one posting's lines.
#[derive(Debug, Clone)]
pub struct PostingLinesParams {
    /// The ledger's name.
    pub ledger: String,
    /// The tenant.
    pub tenant: Option<String>,
    /// The posting key.
    pub key: String,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PostingWritten {
    /// The lines were written now.
    Written,
    /// The same lines were already stored under the key: nothing was written.
    AlreadyPosted,
}

/// A book of double-entry lines.
#[async_trait]
pub trait LedgerBook: Send + Sync {
    /// Writes the posting's lines once: see the module docs for the rules.
    async fn posting_write(&self, write: &PostingWrite) -> Result<PostingWritten, JobError>;

    /// The lines stored under a posting key, in line order (empty when none).
    async fn posting_lines(&self, params: &PostingLinesParams)
        -> Result<Vec<LedgerLine>, JobError>;
}

/// The refusal of a key already stored with other lines. Names the ledger, never the key.
pub fn posting_conflict(ledger: &str, stored: usize, posted: usize) -> JobError {
    JobError::new(
        ErrorCode::LedgerPostingConflict,
        format!(
            "ledger `{ledger}` already holds this posting key with other lines ({stored} stored, \
             {posted} posted); nothing was written"
        ),
    )
}
