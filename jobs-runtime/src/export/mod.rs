//! Export and import (feature `export`): a paged keyset read streamed into an object store,
//! one object per page, and the same objects read back page by page into an upsert.
//!
//! An export is a builder a `#[job]` body runs: [`Export::csv`] or [`Export::json_lines`]
//! over the columns, then [`Export::run`] with the run, the sink (any
//! [`object_store::ObjectStore`]), the object prefix, a keyset source (the same shape as a
//! `#[backfill]` source: `(Pass, Option<Cursor>, limit) -> Page<R, Cursor>`) and a row fn that
//! turns a source row into a [`Row`] of cells. The job keeps `#[job]`'s key, tenant, retry and
//! timeout; the builder checks its own values when it is built (`X_JOB_DECLARATION_INVALID`).
//!
//! ```
//! use std::sync::Arc;
//! use jobs::prelude::*;
//! use jobs::export::{object_store::memory::InMemory, Export, ExportReport, ObjectStore, Row};
//!
//! #[derive(Clone)]
//! struct Order { id: i64, total: f64 }
//!
//! async fn orders_after(_pass: Pass, after: Option<i64>, limit: u32) -> Result<Page<Order, i64>, JobError> {
//!     let from = after.unwrap_or(0);
//!     let rows: Vec<Order> = (from + 1..=from + i64::from(limit)).take_while(|id| *id <= 1_200)
//!         .map(|id| Order { id, total: id as f64 / 4.0 }).collect();
//!     Ok(Page::keyed(rows, |order| order.id))
//! }
//!
//! #[input]
//! struct Month { month: String }
//!
//! #[job(key = "orders-export:{month}", tenant = none)]
//! async fn export_orders(run: Run, input: Month) -> Result<ExportReport, JobError> {
//!     let sink = run.context::<Arc<dyn ObjectStore>>()?;
//!     Export::csv(["id", "total"])?
//!         .run(&run, (*sink).clone(), &format!("orders/{}", input.month), orders_after,
//!              |order: &Order| Row::new().set("id", order.id).set("total", order.total))
//!         .await
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let sink: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
//! let kit = jobs::testing::TestKit::with_worker(|w| w.context(Arc::new(sink.clone())));
//! let queued = ExportOrders::enqueue(kit.jobs(), Month { month: "2026-12".into() }).await.unwrap();
//! kit.run_to_completion().await;
//! assert_eq!(kit.job(queued.id).await.state, JobState::Done);
//! # }
//! ```
//!
//! # Parts, pages and steps
//!
//! Page `n` is read, encoded and written to `<prefix>/part-0000n.<ext>` inside the durable step
//! `part:n`, whose output is the cursor after the page and two counters (rows and bytes so
//! far), never the rows. A killed or failed export resumes on the page it stopped at: the pages
//! before it replay from their checkpoints, and only the page that had not checkpointed reads
//! and writes its part again (the part key is the page index, so the rewrite replaces it).
//! After the last page, the step `manifest` writes `<prefix>/manifest.json` ([`Manifest`]),
//! which counts the parts. The export ends after a page shorter than `batch` (default 500); an
//! empty page after the first writes no part.
//!
//! Every line ends with `\n` and a CSV export's header is in part 0 only, so the parts joined
//! in order (`cat part-*`) are one valid file.
//!
//! # Bounds and refusals
//!
//! - A page that encodes to more than `max_part_bytes` (default 8 MiB: a part is held in
//!   memory) fails with `X_EXPORT_PART_TOO_LARGE`.
//! - A row naming a column the export does not declare, naming one twice, or holding a number
//!   that is not finite fails with `X_EXPORT_ROW_INVALID`; the message names the column, never
//!   the value. Cells are text, finite numbers, booleans or null ([`Cell`]): the type admits
//!   nothing else.
//! - Both codes are terminal: the same page would fail the same way again.
//! - CSV text cells starting with `=`, `+`, `-`, `@`, a TAB or a CR (formula starts) get a
//!   `'` in front, and so do cells starting with `'` itself, so the import takes exactly one
//!   back. Numbers and booleans are never changed.
//!
//! # Tenants and pace
//!
//! The export runs in its job's tenant (`#[job(tenant = ..)]`): the source reads
//! [`Pass::tenant`] and the manifest records it. `tenant = none` opens no cross-tenant scope:
//! the pass has no tenant and nothing more. An import only reads an export of its own run's
//! tenant (`X_JOB_TENANT_MISMATCH` otherwise).
//!
//! `rate` (pages per second) has no default: an export runs unthrottled unless it says one.
//! The wait is spent inside each page's step on the run's clock, as a backfill's.

mod encode;
mod import;
mod pass;

pub use import::{Import, ImportReport};
pub use pass::ExportReport;

/// The object-store crate the sinks are built on, so an app names the same version.
pub use object_store;
pub use object_store::ObjectStore;

use serde::{Deserialize, Serialize};

pub use crate::backfill::{Page, Pass};
use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// Rows per page (and per part) unless set with [`Export::batch`].
pub const DEFAULT_EXPORT_BATCH: u32 = 500;
/// The largest part, encoded, unless set with `max_part_bytes`: 8 MiB.
pub const DEFAULT_MAX_PART_BYTES: usize = 8 * 1024 * 1024;
/// The most rows a page may ask for.
pub const MAX_EXPORT_BATCH: u32 = 100_000;
/// The most columns an export may declare.
pub const MAX_EXPORT_COLUMNS: usize = 1_000;
/// The manifest's version: what [`Manifest::version`] holds.
pub const MANIFEST_VERSION: u32 = 1;

/// How the parts are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// RFC 4180 CSV, `\n` line ends, the header in part 0.
    Csv,
    /// One JSON object per line, every column present (`null` when absent).
    JsonLines,
}

impl Format {
    /// The parts' file extension.
    pub const fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::JsonLines => "jsonl",
        }
    }
}

/// The key of part `index` under `prefix`: `<prefix>/part-00000.csv`, ...
///
/// ```
/// use jobs::export::{part_key, Format};
/// assert_eq!(part_key("orders/2026-12", 3, Format::JsonLines), "orders/2026-12/part-00003.jsonl");
/// ```
pub fn part_key(prefix: &str, index: u64, format: Format) -> String {
    format!(
        "{}/part-{index:05}.{}",
        prefix.trim_end_matches('/'),
        format.extension()
    )
}

/// The key of the manifest under `prefix`: `<prefix>/manifest.json`.
pub fn manifest_key(prefix: &str) -> String {
    format!("{}/manifest.json", prefix.trim_end_matches('/'))
}

/// One cell: text, a finite number, a boolean or null.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// No value (an empty unquoted CSV field, JSON `null`).
    Null,
    /// Text.
    Text(String),
    /// A whole number.
    Int(i64),
    /// A number; it must be finite when exported.
    Float(f64),
    /// A boolean.
    Bool(bool),
}

impl Cell {
    /// The text, when the cell is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Cell::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The cell as a whole number: an `Int`, or text that parses as one (CSV reads back text).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Cell::Int(n) => Some(*n),
            Cell::Text(text) => text.parse().ok(),
            _ => None,
        }
    }

    /// The cell as a number: a number, or text that parses as one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Int(n) => Some(*n as f64),
            Cell::Float(f) => Some(*f),
            Cell::Text(text) => text.parse().ok(),
            _ => None,
        }
    }

    /// The cell as a boolean: a `Bool`, or the text `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Cell::Bool(b) => Some(*b),
            Cell::Text(text) => text.parse().ok(),
            _ => None,
        }
    }

    /// Whether the cell is null.
    pub fn is_null(&self) -> bool {
        matches!(self, Cell::Null)
    }
}

macro_rules! cell_from {
    ($($ty:ty => $variant:ident via $conv:expr;)*) => {
        $(impl From<$ty> for Cell {
            fn from(value: $ty) -> Self {
                Cell::$variant($conv(value))
            }
        })*
    };
}

cell_from! {
    String => Text via |v| v;
    &str => Text via |v: &str| v.to_string();
    &String => Text via |v: &String| v.clone();
    i64 => Int via |v| v;
    i32 => Int via i64::from;
    u32 => Int via i64::from;
    f64 => Float via |v| v;
    f32 => Float via f64::from;
    bool => Bool via |v| v;
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(value: Option<T>) -> Self {
        value.map_or(Cell::Null, Into::into)
    }
}

/// One row: cells by column name, in the order they were set. A column the export declares
/// and the row leaves out is null.
///
/// ```
/// use jobs::export::{Cell, Row};
/// let row = Row::new().set("id", 7).set("note", None::<String>);
/// assert_eq!(row.get("id"), Some(&Cell::Int(7)));
/// assert!(row.get("note").unwrap().is_null());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    cells: Vec<(String, Cell)>,
}

impl Row {
    /// An empty row.
    pub fn new() -> Self {
        Row::default()
    }

    /// The row with `column` set to `cell`.
    pub fn set(mut self, column: impl Into<String>, cell: impl Into<Cell>) -> Self {
        self.cells.push((column.into(), cell.into()));
        self
    }

    /// The cell of `column`, if the row has one.
    pub fn get(&self, column: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|(name, _)| name == column)
            .map(|(_, cell)| cell)
    }

    /// The cells, in order.
    pub fn cells(&self) -> impl Iterator<Item = (&str, &Cell)> {
        self.cells.iter().map(|(name, cell)| (name.as_str(), cell))
    }

    pub(crate) fn into_cells(self) -> Vec<(String, Cell)> {
        self.cells
    }
}

/// What `<prefix>/manifest.json` holds: the parts it counts and what an import needs to read
/// them back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest's own version ([`MANIFEST_VERSION`]).
    pub version: u32,
    /// How the parts are encoded.
    pub format: Format,
    /// The columns, in order (the CSV header of part 0).
    pub columns: Vec<String>,
    /// How many parts there are: `part-00000` to `part-{parts - 1}`.
    pub parts: u64,
    /// Rows in each part, in order (its length is `parts`).
    pub part_rows: Vec<u64>,
    /// Rows in all parts.
    pub rows: u64,
    /// Bytes in all parts.
    pub bytes: u64,
    /// The tenant the export ran for (`None`: `tenant = none`).
    pub tenant: Option<String>,
    /// The job that wrote it.
    pub job: String,
    /// Its run.
    pub run_id: String,
    /// When the manifest was written, on the run's clock.
    pub created_at: Timestamp,
}

/// The export builder: format, columns, and the bounds, each checked when set.
///
/// ```
/// use jobs::export::Export;
/// use jobs::ErrorCode;
///
/// let export = Export::csv(["id", "total"]).unwrap().batch(1_000).unwrap().rate(20.0).unwrap();
/// assert_eq!(export.columns(), ["id", "total"]);
/// assert!(Export::csv(["id", "id"]).unwrap_err().is(ErrorCode::JobDeclarationInvalid));
/// assert!(Export::csv(["id"]).unwrap().batch(0).is_err());
/// assert!(Export::csv(["id"]).unwrap().rate(f64::NAN).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    format: Format,
    columns: Vec<String>,
    batch: u32,
    max_part_bytes: usize,
    rate: Option<f64>,
}

impl Export {
    /// A CSV export of `columns` (in order), with the defaults.
    pub fn csv<I, S>(columns: I) -> Result<Self, JobError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Export::new(Format::Csv, columns)
    }

    /// A JSON-lines export of `columns` (in order), with the defaults.
    pub fn json_lines<I, S>(columns: I) -> Result<Self, JobError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Export::new(Format::JsonLines, columns)
    }

    /// An export in `format` of `columns`: at least one, at most [`MAX_EXPORT_COLUMNS`], each
    /// non-blank, without control characters, and named once.
    pub fn new<I, S>(format: Format, columns: I) -> Result<Self, JobError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Ok(Export {
            format,
            columns: check_columns(columns)?,
            batch: DEFAULT_EXPORT_BATCH,
            max_part_bytes: DEFAULT_MAX_PART_BYTES,
            rate: None,
        })
    }

    /// Rows per page and per part: 1 to [`MAX_EXPORT_BATCH`] (default 500).
    pub fn batch(mut self, rows: u32) -> Result<Self, JobError> {
        if rows == 0 || rows > MAX_EXPORT_BATCH {
            return Err(invalid(format!(
                "an export's batch is 1 to {MAX_EXPORT_BATCH} rows per page, not {rows}"
            )));
        }
        self.batch = rows;
        Ok(self)
    }

    /// The largest part, encoded, in bytes: at least 1 (default 8 MiB).
    pub fn max_part_bytes(mut self, bytes: usize) -> Result<Self, JobError> {
        self.max_part_bytes = check_max_part_bytes(bytes)?;
        Ok(self)
    }

    /// At most `pages_per_second` pages a second (finite, above 0); no default.
    pub fn rate(mut self, pages_per_second: f64) -> Result<Self, JobError> {
        self.rate = Some(check_rate(pages_per_second)?);
        Ok(self)
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The columns, in order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Rows per page.
    pub fn batch_size(&self) -> u32 {
        self.batch
    }

    /// The bound on one part.
    pub fn part_bound(&self) -> usize {
        self.max_part_bytes
    }

    /// The pace, when set.
    pub fn pace(&self) -> Option<f64> {
        self.rate
    }
}

pub(crate) fn check_columns<I, S>(columns: I) -> Result<Vec<String>, JobError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let columns: Vec<String> = columns.into_iter().map(Into::into).collect();
    if columns.is_empty() || columns.len() > MAX_EXPORT_COLUMNS {
        return Err(invalid(format!(
            "an export declares 1 to {MAX_EXPORT_COLUMNS} columns, not {}",
            columns.len()
        )));
    }
    for (i, column) in columns.iter().enumerate() {
        if column.trim().is_empty() || column.chars().any(char::is_control) {
            return Err(invalid(format!(
                "column {i} of the export is blank or holds a control character"
            )));
        }
        if columns[..i].contains(column) {
            return Err(invalid(format!(
                "the column `{}` is declared twice",
                column.escape_debug()
            )));
        }
    }
    Ok(columns)
}

pub(crate) fn check_max_part_bytes(bytes: usize) -> Result<usize, JobError> {
    if bytes == 0 {
        return Err(invalid(
            "an export's max_part_bytes is at least 1 byte".to_string(),
        ));
    }
    Ok(bytes)
}

pub(crate) fn check_rate(rate: f64) -> Result<f64, JobError> {
    if !rate.is_finite() || rate <= 0.0 {
        return Err(invalid(format!(
            "an export's rate is pages per second, finite and above 0, not {rate}"
        )));
    }
    Ok(rate)
}

fn invalid(message: String) -> JobError {
    JobError::new(ErrorCode::JobDeclarationInvalid, message)
        .with_fix("fix the export's or import's builder value as the message says")
}

/// The object path of `key`, or the refusal of a prefix that is not a valid object path.
pub(crate) fn object_path(key: &str) -> Result<object_store::path::Path, JobError> {
    object_store::path::Path::parse(key).map_err(|_| {
        JobError::new(
            ErrorCode::JobInputInvalid,
            "the export's prefix is not a valid object path (empty segments, `.` or `..`)",
        )
        .with_fix("use a prefix of non-empty segments separated by `/`, e.g. `orders/2026-12`")
    })
}

/// A sink's failure: retried with the job's backoff (a store that blinked passes on retry).
pub(crate) fn sink_error(what: &str, key: &str, error: object_store::Error) -> JobError {
    let kind = match error {
        object_store::Error::NotFound { .. } => "not found",
        object_store::Error::AlreadyExists { .. } => "already exists",
        object_store::Error::Precondition { .. } => "precondition failed",
        object_store::Error::PermissionDenied { .. } => "permission denied",
        object_store::Error::Unauthenticated { .. } => "unauthenticated",
        _ => "failed",
    };
    JobError::retryable(format!("the object store: {what} `{key}`: {kind}"))
}
