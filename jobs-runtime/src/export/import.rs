//! The inverse of an export: its manifest read once (the step `import:manifest`), then each
//! part its own durable step (`import:n`) that reads it, decodes it and hands its rows to the
//! app's upsert.

use std::future::Future;
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};

use super::encode::{decode_part, row_invalid};
use super::{
    check_columns, check_max_part_bytes, check_rate, manifest_key, object_path, part_key,
    sink_error, Format, Manifest, Pass, Row, DEFAULT_MAX_PART_BYTES, MANIFEST_VERSION,
};
use crate::backfill::Pacer;
use crate::error::{ErrorCode, JobError};
use crate::run::Run;

/// The import builder: the columns the upsert takes and the bounds, each checked when set.
///
/// ```
/// use jobs::export::Import;
/// let import = Import::new(["id", "total"]).unwrap().max_part_bytes(1 << 20).unwrap();
/// assert_eq!(import.columns(), ["id", "total"]);
/// assert!(Import::new(Vec::<String>::new()).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    columns: Vec<String>,
    max_part_bytes: usize,
    rate: Option<f64>,
}

/// What an import reports (a good output for its job).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    /// The prefix the parts were read from.
    pub prefix: String,
    /// How the parts were encoded.
    pub format: Format,
    /// Parts read.
    pub parts: u64,
    /// Rows handed to the upsert.
    pub rows: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// The durable output of the step `import:n`: the rows and bytes read so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct Checkpoint {
    rows: u64,
    bytes: u64,
}

impl Import {
    /// An import whose upsert takes `columns`: every column of the export's manifest must be
    /// one of them (`X_EXPORT_ROW_INVALID` naming the first that is not).
    pub fn new<I, S>(columns: I) -> Result<Self, JobError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Ok(Import {
            columns: check_columns(columns)?,
            max_part_bytes: DEFAULT_MAX_PART_BYTES,
            rate: None,
        })
    }

    /// The largest part read, in bytes: at least 1 (default 8 MiB). A larger part fails with
    /// `X_EXPORT_PART_TOO_LARGE` before it is read.
    pub fn max_part_bytes(mut self, bytes: usize) -> Result<Self, JobError> {
        self.max_part_bytes = check_max_part_bytes(bytes)?;
        Ok(self)
    }

    /// At most `parts_per_second` parts a second (finite, above 0); no default.
    pub fn rate(mut self, parts_per_second: f64) -> Result<Self, JobError> {
        self.rate = Some(check_rate(parts_per_second)?);
        Ok(self)
    }

    /// The columns the upsert takes.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Reads the export under `prefix` from `sink` into `upsert`, one part per durable step:
    /// the manifest is read once (`import:manifest`), then part `n` in the step `import:n`,
    /// so a killed import resumes on the part it stopped at. `upsert` runs at least once per
    /// part: write with upserts, never `count + 1`. Each row holds the manifest's columns in
    /// order; a CSV export's cells read back as text (or null), a JSON-lines export's keep
    /// their types.
    pub async fn run<U, UFut, E>(
        &self,
        run: &Run,
        sink: Arc<dyn ObjectStore>,
        prefix: &str,
        mut upsert: U,
    ) -> Result<ImportReport, JobError>
    where
        U: FnMut(Pass, Vec<Row>) -> UFut,
        UFut: Future<Output = Result<(), E>>,
        E: Into<JobError>,
    {
        let prefix = prefix.trim_end_matches('/').to_string();
        let key = manifest_key(&prefix);
        let path = object_path(&key)?;
        let manifest: Manifest = run
            .step("import:manifest", async {
                let read = sink
                    .get(&path)
                    .await
                    .map_err(|e| sink_error("reading", &key, e))?;
                // The manifest has its own bound: a part's, but never under the default.
                let bound = self.max_part_bytes.max(DEFAULT_MAX_PART_BYTES);
                if read.meta.size > bound as u64 {
                    return Err(too_large("the manifest", bound));
                }
                let body = read
                    .bytes()
                    .await
                    .map_err(|e| sink_error("reading", &key, e))?;
                serde_json::from_slice::<Manifest>(&body).map_err(|_| {
                    JobError::new(
                        ErrorCode::JobInputInvalid,
                        format!("`{key}` is not an export's manifest"),
                    )
                })
            })
            .await?;
        self.check_manifest(run, &manifest)?;

        let mut pacer = self.rate.map(Pacer::new);
        let mut last = Checkpoint::default();
        for (part, &expected) in manifest.part_rows.iter().enumerate() {
            let part = part as u64;
            let before = last;
            let name = format!("import:{part}");
            let step = run.step(&name, async {
                if let Some(pacer) = pacer.as_mut() {
                    pacer.wait(run.clock(), run.cancel_token()).await?;
                }
                let key = part_key(&prefix, part, manifest.format);
                let read = sink
                    .get(&object_path(&key)?)
                    .await
                    .map_err(|e| sink_error("reading", &key, e))?;
                if read.meta.size > self.max_part_bytes as u64 {
                    return Err(too_large(&format!("part {part}"), self.max_part_bytes));
                }
                let body = read
                    .bytes()
                    .await
                    .map_err(|e| sink_error("reading", &key, e))?;
                let rows = decode_part(manifest.format, &manifest.columns, &body, part == 0, part)?;
                let count = rows.len() as u64;
                if count != expected {
                    return Err(JobError::new(
                        ErrorCode::ExportRowInvalid,
                        format!(
                            "part {part} of the export holds {count} rows; its manifest counts \
                             {expected}"
                        ),
                    ));
                }
                if count > 0 {
                    let pass = Pass::new(run.clone(), run.job_name(), part);
                    upsert(pass, rows).await.map_err(Into::into)?;
                }
                Ok::<_, JobError>(Checkpoint {
                    rows: before.rows + count,
                    bytes: before.bytes + body.len() as u64,
                })
            });
            last = step.await?;
            run.progress(last.rows, manifest.rows, None).await?;
        }
        Ok(ImportReport {
            prefix,
            format: manifest.format,
            parts: manifest.parts,
            rows: last.rows,
            bytes: last.bytes,
        })
    }

    /// The manifest is one this import can read: its version, its parts counted, its columns
    /// all declared, and its tenant the run's.
    fn check_manifest(&self, run: &Run, manifest: &Manifest) -> Result<(), JobError> {
        if manifest.version != MANIFEST_VERSION || manifest.part_rows.len() as u64 != manifest.parts
        {
            return Err(JobError::new(
                ErrorCode::JobInputInvalid,
                format!(
                    "the export's manifest is of version {} with {} parts and {} part counts; \
                     this import reads version {MANIFEST_VERSION} with one count per part",
                    manifest.version,
                    manifest.parts,
                    manifest.part_rows.len()
                ),
            ));
        }
        if let Some(column) = manifest.columns.iter().find(|c| !self.columns.contains(c)) {
            return Err(row_invalid(
                column,
                "of the export's manifest is not one of the import's columns",
            ));
        }
        if manifest.tenant.as_deref() != run.tenant() {
            return Err(JobError::new(
                ErrorCode::JobTenantMismatch,
                "the export was written for another tenant than the import's run",
            )
            .with_fix(
                "import an export in a run of the tenant it was written for; a `tenant = none` \
                 run imports only a `tenant = none` export",
            ));
        }
        Ok(())
    }
}

fn too_large(what: &str, max: usize) -> JobError {
    JobError::new(
        ErrorCode::ExportPartTooLarge,
        format!("{what} of the export is larger than the import's max_part_bytes of {max} bytes"),
    )
}
