//! [`MemoryBook`]: the in-process twin of the Postgres book.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::driver::ledger_book::{
    posting_conflict, LedgerBook, LedgerLine, PostingLinesParams, PostingWrite, PostingWritten,
};
use crate::error::JobError;

type BookKey = (String, String, String);

/// A [`LedgerBook`] in memory: the memory driver's own book, and a book for tests.
///
/// ```
/// use jobs::ledger::{LedgerBook, MemoryBook};
/// let book = MemoryBook::new();
/// # let _: &dyn LedgerBook = &book;
/// ```
#[derive(Debug, Default)]
pub struct MemoryBook {
    postings: Mutex<HashMap<BookKey, Vec<LedgerLine>>>,
}

impl MemoryBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many lines the book holds, over every posting.
    pub fn line_count(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BookKey, Vec<LedgerLine>>> {
        self.postings.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn key(ledger: &str, tenant: Option<&str>, posting: &str) -> BookKey {
    (
        ledger.to_string(),
        tenant.unwrap_or_default().to_string(),
        posting.to_string(),
    )
}

#[async_trait]
impl LedgerBook for MemoryBook {
    async fn posting_write(&self, write: &PostingWrite) -> Result<PostingWritten, JobError> {
        let mut postings = self.lock();
        let key = key(&write.ledger, write.tenant.as_deref(), &write.key);
        match postings.get(&key) {
            Some(stored) if *stored == write.lines => Ok(PostingWritten::AlreadyPosted),
            Some(stored) => Err(posting_conflict(
                &write.ledger,
                stored.len(),
                write.lines.len(),
            )),
            None => {
                let mut lines = write.lines.clone();
                if planted!(PostingDropsALine) {
                    lines.pop();
                }
                postings.insert(key, lines);
                Ok(PostingWritten::Written)
            }
        }
    }

    async fn posting_lines(&self, p: &PostingLinesParams) -> Result<Vec<LedgerLine>, JobError> {
        Ok(self
            .lock()
            .get(&key(&p.ledger, p.tenant.as_deref(), &p.key))
            .cloned()
            .unwrap_or_default())
    }
}
