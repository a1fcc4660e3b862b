//! One export: every page its own durable step (`part:n`) that reads, encodes and writes its
//! part, then the step `manifest`.

use std::future::Future;
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use super::encode::encode_page;
use super::{
    manifest_key, object_path, part_key, sink_error, Export, Format, Manifest, Page, Pass, Row,
    MANIFEST_VERSION,
};
use crate::backfill::Pacer;
use crate::error::{redact_serde, ErrorCode, JobError};
use crate::run::Run;

/// What an export reports (a good output for its job).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportReport {
    /// The prefix the parts and the manifest are under.
    pub prefix: String,
    /// How the parts are encoded.
    pub format: Format,
    /// Parts written.
    pub parts: u64,
    /// Rows exported.
    pub rows: u64,
    /// Bytes in all parts.
    pub bytes: u64,
    /// The manifest's key.
    pub manifest: String,
}

/// The durable output of the step `part:n`: the cursor after page `n` and two counters, the
/// rows and the bytes written so far. Never the rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Checkpoint {
    cursor: Option<serde_json::Value>,
    rows: u64,
    bytes: u64,
    done: bool,
}

impl Export {
    /// Runs the export inside `run`: pages from `source` (a keyset read, as a backfill's),
    /// each row made a [`Row`] by `row`, parts and the manifest written to `sink` under
    /// `prefix`. Uses the step names `part:0`, `part:1`, ... and `manifest`; a job that runs an
    /// export takes no other steps of those names.
    pub async fn run<S, SFut, R, C, E, M>(
        &self,
        run: &Run,
        sink: Arc<dyn ObjectStore>,
        prefix: &str,
        mut source: S,
        row: M,
    ) -> Result<ExportReport, JobError>
    where
        S: FnMut(Pass, Option<C>, u32) -> SFut,
        SFut: Future<Output = Result<Page<R, C>, E>>,
        M: Fn(&R) -> Row,
        C: Serialize + DeserializeOwned,
        E: Into<JobError>,
    {
        let prefix = prefix.trim_end_matches('/').to_string();
        object_path(&manifest_key(&prefix))?;
        let mut pacer = self.rate.map(Pacer::new);
        let mut last = Checkpoint::default();
        let mut part_rows = Vec::new();
        for page in 0u64.. {
            let before = last.clone();
            let name = format!("part:{page}");
            let step = run.step(&name, async {
                if let Some(pacer) = pacer.as_mut() {
                    pacer.wait(run.clock(), run.cancel_token()).await?;
                }
                let after: Option<C> = before
                    .cursor
                    .clone()
                    .map(serde_json::from_value)
                    .transpose()
                    .map_err(|e| {
                        JobError::new(
                            ErrorCode::StepRecordInvalid,
                            format!(
                                "the stored cursor of export `{}` no longer parses as the \
                                 source's cursor: {}",
                                run.job_name(),
                                redact_serde(&e)
                            ),
                        )
                    })?;
                let pass = Pass::new(run.clone(), run.job_name(), page);
                let read = source(pass, after, self.batch).await.map_err(Into::into)?;
                let next = read
                    .next
                    .as_ref()
                    .map(serde_json::to_value)
                    .transpose()
                    .map_err(|_| {
                        JobError::new(
                            ErrorCode::StepOutputUnserializable,
                            format!(
                                "the cursor of export `{}` does not serialize to JSON",
                                run.job_name()
                            ),
                        )
                    })?;
                let count = read.rows.len() as u64;
                let done = next.is_none() || count < u64::from(self.batch);
                let mut bytes = 0;
                // An empty page after the first ends the export without a part.
                if page == 0 || count > 0 {
                    let mut out = Vec::new();
                    encode_page(
                        self.format,
                        &self.columns,
                        read.rows.iter().map(&row),
                        page == 0,
                        self.max_part_bytes,
                        page,
                        &mut out,
                    )?;
                    bytes = out.len() as u64;
                    let key = part_key(&prefix, page, self.format);
                    sink.put(&object_path(&key)?, PutPayload::from(out))
                        .await
                        .map_err(|e| sink_error("writing", &key, e))?;
                }
                Ok::<_, JobError>(Checkpoint {
                    cursor: next.or(before.cursor.clone()),
                    rows: before.rows + count,
                    bytes: before.bytes + bytes,
                    done,
                })
            });
            last = step.await?;
            let rows = last.rows - before.rows;
            if page == 0 || rows > 0 {
                part_rows.push(rows);
            }
            run.progress(last.rows, 0, None).await?;
            if last.done {
                break;
            }
        }

        let key = manifest_key(&prefix);
        let manifest = Manifest {
            version: MANIFEST_VERSION,
            format: self.format,
            columns: self.columns.clone(),
            parts: part_rows.len() as u64,
            part_rows,
            rows: last.rows,
            bytes: last.bytes,
            tenant: run.tenant().map(str::to_string),
            job: run.job_name().to_string(),
            run_id: run.run_id().to_string(),
            created_at: run.now(),
        };
        let parts = manifest.parts;
        run.step("manifest", async {
            let mut body = serde_json::to_vec_pretty(&manifest)
                .map_err(|_| JobError::new(ErrorCode::Invariant, "the manifest serializes"))?;
            body.push(b'\n');
            sink.put(&object_path(&key)?, PutPayload::from(body))
                .await
                .map_err(|e| sink_error("writing", &key, e))?;
            Ok::<_, JobError>(parts)
        })
        .await?;

        Ok(ExportReport {
            prefix,
            format: self.format,
            parts,
            rows: last.rows,
            bytes: last.bytes,
            manifest: key,
        })
    }
}
