//! The driver's own double-entry book (`lua/book.lua`): each ledger in a slot of its own,
//! `{<prefix>:book:<ledger>}`, so ledgers spread over a cluster's masters. A posting is one
//! hash, `<tag>:p:<tenant>\0<posting key>`, and one script compares and writes it: the same
//! lines answer already posted, other lines `X_LEDGER_POSTING_CONFLICT`, both writing nothing.
//!
//! Unlike the SQL drivers there is no separate book type: the book is this store's, reached
//! through the driver (`#[ledger(book = driver)]`).

use async_trait::async_trait;

use super::codec::micros;
use super::enqueue::malformed;
use super::scripts;
use super::RedisDriver;
use crate::driver::ledger_book::{
    posting_conflict, LedgerBook, LedgerLine, PostingLinesParams, PostingWrite, PostingWritten,
};
use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError};

impl RedisDriver {
    /// The hash of one posting.
    fn posting(&self, ledger: &str, tenant: Option<&str>, key: &str) -> String {
        format!(
            "{}:p:{}\0{key}",
            self.keys().area_of("book", ledger),
            tenant.unwrap_or_default()
        )
    }
}

fn lines_json(lines: &[LedgerLine]) -> Result<String, JobError> {
    serde_json::to_string(lines)
        .map_err(|_| JobError::new(ErrorCode::Driver, "a posting's lines did not serialize"))
}

#[async_trait]
impl LedgerBook for RedisDriver {
    async fn posting_write(&self, w: &PostingWrite) -> Result<PostingWritten, JobError> {
        let mut invocation = scripts::BOOK.key(self.keys().area_of("book", &w.ledger));
        invocation
            .arg("write")
            .arg(w.tenant.as_deref().unwrap_or_default())
            .arg(&w.key)
            .arg(lines_json(&w.lines)?)
            .arg(w.lines.len())
            .arg(w.run_id.to_string())
            .arg(micros(w.now));
        let answer: Vec<String> = self.conn().script(Op::LedgerInsert, &invocation).await?;
        match answer.first().map(String::as_str) {
            Some("written") => Ok(PostingWritten::Written),
            Some("posted") => Ok(PostingWritten::AlreadyPosted),
            Some("conflict") => {
                let stored = answer.get(1).and_then(|n| n.parse().ok()).unwrap_or(0);
                Err(posting_conflict(&w.ledger, stored, w.lines.len()))
            }
            _ => Err(malformed()),
        }
    }

    async fn posting_lines(&self, p: &PostingLinesParams) -> Result<Vec<LedgerLine>, JobError> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(self.posting(&p.ledger, p.tenant.as_deref(), &p.key))
            .arg("lines");
        let stored: Option<String> = self.conn().query(Op::LedgerLines, &cmd).await?;
        stored.map_or(Ok(Vec::new()), |json| {
            serde_json::from_str(&json).map_err(|_| {
                JobError::new(
                    ErrorCode::Driver,
                    format!(
                        "redis {}: a stored posting did not decode",
                        Op::DecodeLedgerLine
                    ),
                )
            })
        })
    }
}
