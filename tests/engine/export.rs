//! `jobs::export` on the memory driver and a test clock: parts, the manifest, the header in
//! part 0 only, resume after a part whose write landed but whose step did not, CSV and JSON
//! lines, the part bound, refused rows, neutralised cells, tenants, the pace, and the import
//! back (round trip and resume), into an in-memory store and onto local files. Nothing here
//! sleeps on the wall clock.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use jobs::clock::Clock;
use jobs::export::object_store::{
    self, local::LocalFileSystem, memory::InMemory, path::Path, CopyOptions, GetOptions, GetResult,
    ListResult, MultipartUpload, ObjectMeta, ObjectStoreExt, PutMultipartOptions, PutOptions,
    PutPayload, PutResult,
};
use jobs::export::{
    manifest_key, part_key, Cell, Export, ExportReport, Format, Import, ImportReport, Manifest,
    ObjectStore, Row,
};
use jobs::prelude::*;
use jobs::testing::TestKit;

use crate::support::sqlite::TempDir;

#[derive(Debug, Clone, PartialEq)]
struct Order {
    id: i64,
    org: String,
    name: String,
    total: f64,
    paid: bool,
    note: Option<String>,
}

fn order(id: i64) -> Order {
    Order {
        id,
        org: if id % 2 == 0 { "acme" } else { "globex" }.to_string(),
        // Commas, quotes, line breaks and formula starts, on some rows.
        name: match id % 5 {
            0 => format!("=HYPERLINK(\"x\",\"{id}\")"),
            1 => format!("Smith, \"J\" {id}"),
            2 => format!("line\nbreak {id}"),
            3 => format!("-{id}"),
            _ => format!("plain {id}"),
        },
        total: id as f64 * 1.25,
        paid: id % 3 == 0,
        note: (id % 4 == 0).then(|| format!("note {id}")),
    }
}

/// The app: a table of orders, the sink, what the import wrote, and the test's levers.
struct App {
    orders: Mutex<BTreeMap<i64, Order>>,
    imported: Mutex<BTreeMap<i64, Order>>,
    sink: Arc<dyn ObjectStore>,
    reads: AtomicU32,
    /// Fail the import's upsert once on this part.
    fail_upsert_once_on: Mutex<Option<u64>>,
    upserts: AtomicU32,
}

impl App {
    fn new(rows: i64, sink: Arc<dyn ObjectStore>) -> Arc<App> {
        Arc::new(App {
            orders: Mutex::new((1..=rows).map(|id| (id, order(id))).collect()),
            imported: Mutex::new(BTreeMap::new()),
            sink,
            reads: AtomicU32::new(0),
            fail_upsert_once_on: Mutex::new(None),
            upserts: AtomicU32::new(0),
        })
    }

    fn in_memory(rows: i64) -> Arc<App> {
        App::new(rows, Arc::new(InMemory::new()))
    }
}

fn kit(app: &Arc<App>) -> TestKit {
    TestKit::with_worker(|w| w.context(app.clone()))
}

/// Keyset: the orders after `after`, of the pass's tenant when it has one.
async fn orders_after(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Order, i64>, JobError> {
    let app = pass.context::<App>()?;
    app.reads.fetch_add(1, Ordering::SeqCst);
    let rows: Vec<Order> = app
        .orders
        .lock()
        .unwrap()
        .range(after.unwrap_or(0) + 1..)
        .map(|(_, o)| o.clone())
        .filter(|o| pass.tenant().is_none_or(|t| o.org == t))
        .take(limit as usize)
        .collect();
    Ok(Page::keyed(rows, |o| o.id))
}

const COLUMNS: [&str; 6] = ["id", "org", "name", "total", "paid", "note"];

fn row(o: &Order) -> Row {
    Row::new()
        .set("id", o.id)
        .set("org", &o.org)
        .set("name", &o.name)
        .set("total", o.total)
        .set("paid", o.paid)
        .set("note", o.note.clone())
}

#[input]
struct Target {
    prefix: String,
}

#[job(key = "export-csv:{prefix}", tenant = none)]
async fn export_csv(run: Run, input: Target) -> Result<ExportReport, JobError> {
    let app = run.context::<App>()?;
    Export::csv(COLUMNS)?
        .batch(10)?
        .run(&run, app.sink.clone(), &input.prefix, orders_after, row)
        .await
}

#[job(key = "export-one-part:{prefix}", tenant = none)]
async fn export_one_part(run: Run, input: Target) -> Result<ExportReport, JobError> {
    let app = run.context::<App>()?;
    Export::csv(COLUMNS)?
        .batch(100_000)?
        .run(&run, app.sink.clone(), &input.prefix, orders_after, row)
        .await
}

#[job(key = "export-json:{prefix}", tenant = none)]
async fn export_json(run: Run, input: Target) -> Result<ExportReport, JobError> {
    let app = run.context::<App>()?;
    Export::json_lines(COLUMNS)?
        .batch(10)?
        .run(&run, app.sink.clone(), &input.prefix, orders_after, row)
        .await
}

#[job(key = "export-bounded:{prefix}", tenant = none)]
async fn export_bounded(run: Run, input: Target) -> Result<ExportReport, JobError> {
    let app = run.context::<App>()?;
    Export::csv(COLUMNS)?
        .batch(10)?
        .max_part_bytes(300)?
        .run(&run, app.sink.clone(), &input.prefix, orders_after, row)
        .await
}

#[job(key = "export-undeclared:{prefix}", tenant = none)]
async fn export_undeclared(run: Run, input: Target) -> Result<ExportReport, JobError> {
    let app = run.context::<App>()?;
    Export::csv(["id"])?
        .run(
            &run,
            app.sink.clone(),
            &input.prefix,
            orders_after,
            |o: &Order| {
                Row::new()
                    .set("id", o.id)
                    .set("card_number", "4111 1111 1111 1111")
            },
        )
        .await
}

#[job(key = "export-nan:{prefix}", tenant = none)]
async fn export_nan(run: Run, input: Target) -> Result<ExportReport, JobError> {
    let app = run.context::<App>()?;
    Export::csv(["id", "ratio"])?
        .run(
            &run,
            app.sink.clone(),
            &input.prefix,
            orders_after,
            |o: &Order| {
                Row::new()
                    .set("id", o.id)
                    .set("ratio", if o.id == 7 { f64::INFINITY } else { 0.5 })
            },
        )
        .await
}

#[job(key = "export-paced:{prefix}", tenant = none)]
async fn export_paced(run: Run, input: Target) -> Result<ExportReport, JobError> {
    let app = run.context::<App>()?;
    Export::csv(COLUMNS)?
        .batch(10)?
        .rate(5.0)?
        .run(&run, app.sink.clone(), &input.prefix, orders_after, row)
        .await
}

#[input]
struct TenantTarget {
    org: String,
    prefix: String,
}

#[job(key = "export-tenant:{org}:{prefix}", tenant = org)]
async fn export_for_tenant(run: Run, input: TenantTarget) -> Result<ExportReport, JobError> {
    let app = run.context::<App>()?;
    Export::csv(COLUMNS)?
        .batch(10)?
        .run(&run, app.sink.clone(), &input.prefix, orders_after, row)
        .await
}

/// The import's upsert: a CSV export reads back as text, so each cell is parsed.
async fn upsert(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let app = pass.context::<App>()?;
    app.upserts.fetch_add(1, Ordering::SeqCst);
    if *app.fail_upsert_once_on.lock().unwrap() == Some(pass.page()) {
        *app.fail_upsert_once_on.lock().unwrap() = None;
        return Err(JobError::retryable("the database blinked"));
    }
    let text = |row: &Row, c: &str| row.get(c).and_then(Cell::as_text).map(str::to_string);
    let mut imported = app.imported.lock().unwrap();
    for row in rows {
        let id = row.get("id").and_then(Cell::as_i64).expect("an id");
        imported.insert(
            id,
            Order {
                id,
                org: text(&row, "org").expect("an org"),
                name: text(&row, "name").expect("a name"),
                total: row.get("total").and_then(Cell::as_f64).expect("a total"),
                paid: row.get("paid").and_then(Cell::as_bool).expect("paid"),
                note: text(&row, "note"),
            },
        );
    }
    Ok(())
}

#[job(key = "import:{prefix}", tenant = none)]
async fn import_orders(run: Run, input: Target) -> Result<ImportReport, JobError> {
    let app = run.context::<App>()?;
    Import::new(COLUMNS)?
        .run(&run, app.sink.clone(), &input.prefix, upsert)
        .await
}

#[job(key = "import-narrow:{prefix}", tenant = none)]
async fn import_narrow(run: Run, input: Target) -> Result<ImportReport, JobError> {
    let app = run.context::<App>()?;
    Import::new(["id", "org"])?
        .run(&run, app.sink.clone(), &input.prefix, upsert)
        .await
}

#[job(key = "import-tenant:{org}:{prefix}", tenant = org)]
async fn import_for_tenant(run: Run, input: TenantTarget) -> Result<ImportReport, JobError> {
    let app = run.context::<App>()?;
    Import::new(COLUMNS)?
        .run(&run, app.sink.clone(), &input.prefix, upsert)
        .await
}

#[job(key = "import-bounded:{prefix}", tenant = none)]
async fn import_bounded(run: Run, input: Target) -> Result<ImportReport, JobError> {
    let app = run.context::<App>()?;
    Import::new(COLUMNS)?
        .max_part_bytes(200)?
        .run(&run, app.sink.clone(), &input.prefix, upsert)
        .await
}

#[job(key = "import-paced:{prefix}", tenant = none)]
async fn import_paced(run: Run, input: Target) -> Result<ImportReport, JobError> {
    let app = run.context::<App>()?;
    Import::new(COLUMNS)?
        .rate(4.0)?
        .run(&run, app.sink.clone(), &input.prefix, upsert)
        .await
}

fn target(prefix: &str) -> Target {
    Target {
        prefix: prefix.to_string(),
    }
}

async fn text_of(sink: &Arc<dyn ObjectStore>, key: &str) -> String {
    let bytes = sink
        .get(&Path::parse(key).unwrap())
        .await
        .unwrap_or_else(|e| panic!("{key}: {e}"))
        .bytes()
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

async fn manifest_of(sink: &Arc<dyn ObjectStore>, prefix: &str) -> Manifest {
    serde_json::from_str(&text_of(sink, &manifest_key(prefix)).await).unwrap()
}

/// Every object under `prefix`, by key.
async fn keys(sink: &Arc<dyn ObjectStore>, prefix: &str) -> Vec<String> {
    use futures::TryStreamExt;
    let mut keys: Vec<String> = sink
        .list(Some(&Path::parse(prefix).unwrap()))
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .unwrap();
    keys.sort();
    keys
}

async fn dead_with(kit: &TestKit, id: jobs::driver::JobId, code: ErrorCode) -> String {
    let job = kit.job(id).await;
    assert_eq!(job.state, JobState::Dead, "{job:?}");
    assert_eq!(job.attempt, 1, "{} is terminal", code.as_str());
    assert_eq!(job.last_error_code.as_deref(), Some(code.as_str()));
    job.last_error.unwrap_or_default()
}

#[tokio::test]
async fn one_part_per_page_a_manifest_counting_them_and_the_header_in_part_0_only() {
    let app = App::in_memory(25);
    let kit = kit(&app);
    let queued = ExportCsv::enqueue(kit.jobs(), target("orders/2026-12"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);

    assert_eq!(
        keys(&app.sink, "orders/2026-12").await,
        [
            "orders/2026-12/manifest.json",
            "orders/2026-12/part-00000.csv",
            "orders/2026-12/part-00001.csv",
            "orders/2026-12/part-00002.csv",
        ]
    );
    let manifest = manifest_of(&app.sink, "orders/2026-12").await;
    assert_eq!(manifest.version, 1);
    assert_eq!(manifest.format, Format::Csv);
    assert_eq!(manifest.parts, 3);
    assert_eq!(manifest.part_rows, [10, 10, 5]);
    assert_eq!(manifest.rows, 25);
    assert_eq!(manifest.columns, COLUMNS);
    assert_eq!(manifest.tenant, None);
    assert_eq!(manifest.job, "export_csv");

    let mut joined = String::new();
    let mut bytes = 0;
    for i in 0..3 {
        let part = text_of(&app.sink, &part_key("orders/2026-12", i, Format::Csv)).await;
        assert!(part.ends_with('\n'), "every line ends in a newline");
        assert_eq!(
            part.starts_with("id,org,name,total,paid,note\n"),
            i == 0,
            "the header is in part 0 only"
        );
        bytes += part.len() as u64;
        joined.push_str(&part);
    }
    assert_eq!(manifest.bytes, bytes);
    // `cat part-*` is the one file a single-part export of the same rows writes.
    let kit_one = self::kit(&app);
    ExportOnePart::enqueue(kit_one.jobs(), target("orders/whole"))
        .await
        .unwrap();
    kit_one.run_to_completion().await;
    assert_eq!(
        joined,
        text_of(&app.sink, "orders/whole/part-00000.csv").await
    );
    assert_eq!(manifest_of(&app.sink, "orders/whole").await.parts, 1);

    // The steps: one per page holding the cursor and two counters, then the manifest.
    let steps = kit.steps(queued.run_id).await;
    let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["manifest", "part:0", "part:1", "part:2"],
        "sorted by name"
    );
    assert_eq!(
        steps[3].output.clone().unwrap(),
        serde_json::json!({ "cursor": 25, "rows": 25, "bytes": bytes, "done": true })
    );
}

#[tokio::test]
async fn an_empty_source_writes_a_header_only_part_and_a_full_last_page_no_empty_part() {
    let app = App::in_memory(0);
    let kit = kit(&app);
    ExportCsv::enqueue(kit.jobs(), target("empty"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(
        text_of(&app.sink, "empty/part-00000.csv").await,
        "id,org,name,total,paid,note\n"
    );
    assert_eq!(manifest_of(&app.sink, "empty").await.part_rows, [0]);

    let app = App::in_memory(20);
    let kit = self::kit(&app);
    ExportCsv::enqueue(kit.jobs(), target("even"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    // Two full pages, then an empty read: no third part.
    assert_eq!(manifest_of(&app.sink, "even").await.part_rows, [10, 10]);
    assert_eq!(keys(&app.sink, "even").await.len(), 3);
}

/// An in-memory store that counts the writes of each key and, once, answers an error for the
/// write of one key after it landed: a worker killed between a part's write and its step.
#[derive(Debug)]
struct Flaky {
    inner: InMemory,
    puts: Mutex<BTreeMap<String, u32>>,
    fail_after_put: Mutex<Option<String>>,
}

impl fmt::Display for Flaky {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Flaky(InMemory)")
    }
}

#[async_trait::async_trait]
impl ObjectStore for Flaky {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let landed = self.inner.put_opts(location, payload, opts).await?;
        *self
            .puts
            .lock()
            .unwrap()
            .entry(location.to_string())
            .or_default() += 1;
        let mut fail = self.fail_after_put.lock().unwrap();
        if fail.as_deref() == Some(location.as_ref()) {
            *fail = None;
            return Err(object_store::Error::Generic {
                store: "Flaky",
                source: "the connection dropped after the write".into(),
            });
        }
        Ok(landed)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[tokio::test]
async fn a_run_that_failed_after_a_part_landed_resumes_on_that_page_and_rewrites_that_part_only() {
    let flaky = Arc::new(Flaky {
        inner: InMemory::new(),
        puts: Mutex::default(),
        fail_after_put: Mutex::new(Some("resume/part-00002.csv".to_string())),
    });
    let app = App::new(45, flaky.clone());
    let kit = kit(&app);
    let queued = ExportCsv::enqueue(kit.jobs(), target("resume"))
        .await
        .unwrap();
    kit.run_to_completion().await;

    let job = kit.job(queued.id).await;
    assert_eq!(job.state, JobState::Done);
    assert_eq!(job.attempt, 2, "page 2 failed once, the retry finished");
    for (step, runs) in [("part:0", 1), ("part:1", 1), ("part:2", 2), ("part:3", 1)] {
        assert_eq!(kit.step_runs(queued.run_id, step), runs, "{step}");
    }
    // Pages 0 and 1 replayed from their checkpoints: read once, written once.
    assert_eq!(app.reads.load(Ordering::SeqCst), 6);
    let puts = flaky.puts.lock().unwrap().clone();
    assert_eq!(
        puts,
        BTreeMap::from([
            ("resume/manifest.json".to_string(), 1),
            ("resume/part-00000.csv".to_string(), 1),
            ("resume/part-00001.csv".to_string(), 1),
            ("resume/part-00002.csv".to_string(), 2),
            ("resume/part-00003.csv".to_string(), 1),
            ("resume/part-00004.csv".to_string(), 1),
        ])
    );
    let manifest = manifest_of(&app.sink, "resume").await;
    assert_eq!(manifest.part_rows, [10, 10, 10, 10, 5]);
    assert_eq!(manifest.rows, 45, "the rewritten part was counted once");
}

#[tokio::test]
async fn json_lines_one_object_a_line_no_header_every_column_present() {
    let app = App::in_memory(12);
    let kit = kit(&app);
    ExportJson::enqueue(kit.jobs(), target("json"))
        .await
        .unwrap();
    kit.run_to_completion().await;

    assert_eq!(
        keys(&app.sink, "json").await,
        [
            "json/manifest.json",
            "json/part-00000.jsonl",
            "json/part-00001.jsonl"
        ]
    );
    let part0 = text_of(&app.sink, "json/part-00000.jsonl").await;
    let lines: Vec<&str> = part0.lines().collect();
    assert_eq!(lines.len(), 10);
    assert_eq!(
        lines[0],
        r#"{"id":1,"org":"globex","name":"Smith, \"J\" 1","total":1.25,"paid":false,"note":null}"#
    );
    // JSON lines neutralise nothing: the text is a JSON string.
    let fifth: serde_json::Value = serde_json::from_str(lines[4]).unwrap();
    assert_eq!(fifth["name"], "=HYPERLINK(\"x\",\"5\")");
    assert_eq!(
        manifest_of(&app.sink, "json").await.format,
        Format::JsonLines
    );
}

#[tokio::test]
async fn a_part_over_max_part_bytes_fails_terminally_with_export_part_too_large() {
    let app = App::in_memory(25);
    let kit = kit(&app);
    let queued = ExportBounded::enqueue(kit.jobs(), target("big"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    let error = dead_with(&kit, queued.id, ErrorCode::ExportPartTooLarge).await;
    assert!(error.contains("part 0") && error.contains("300"), "{error}");
    assert!(
        keys(&app.sink, "big").await.is_empty(),
        "nothing was written"
    );
}

#[tokio::test]
async fn a_row_key_outside_the_columns_is_refused_naming_the_column_not_the_value() {
    let app = App::in_memory(3);
    let kit = kit(&app);
    let queued = ExportUndeclared::enqueue(kit.jobs(), target("leak"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    let error = dead_with(&kit, queued.id, ErrorCode::ExportRowInvalid).await;
    assert!(error.contains("`card_number`"), "{error}");
    assert!(!error.contains("4111"), "the value never shows: {error}");
    assert!(keys(&app.sink, "leak").await.is_empty());
}

#[tokio::test]
async fn a_number_that_is_not_finite_is_refused_naming_its_column() {
    let app = App::in_memory(9);
    let kit = kit(&app);
    let queued = ExportNan::enqueue(kit.jobs(), target("nan")).await.unwrap();
    kit.run_to_completion().await;
    let error = dead_with(&kit, queued.id, ErrorCode::ExportRowInvalid).await;
    assert!(
        error.contains("`ratio`") && error.contains("not finite"),
        "{error}"
    );
}

#[tokio::test]
async fn csv_cells_that_start_like_a_formula_are_neutralised() {
    let app = App::in_memory(10);
    let kit = kit(&app);
    ExportCsv::enqueue(kit.jobs(), target("formulas"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    let part = text_of(&app.sink, "formulas/part-00000.csv").await;
    // Order 5's name is a formula, order 3's starts with `-`: each gets a `'` in front.
    assert!(
        part.contains("\"'=HYPERLINK(\"\"x\"\",\"\"5\"\")\""),
        "{part}"
    );
    assert!(part.contains(",'-3,"), "{part}");
    // Numbers are never touched, nor text that starts otherwise.
    assert!(part.contains(",3.75,true,"), "{part}");
    assert!(!part.contains("'plain"), "{part}");
}

#[tokio::test]
async fn a_tenant_export_reads_its_tenant_only_and_its_manifest_says_so() {
    let app = App::in_memory(30);
    let kit = kit(&app);
    let acme = kit.jobs().for_tenant("acme");
    let queued = ExportForTenant::enqueue(
        &acme,
        TenantTarget {
            org: "acme".into(),
            prefix: "t/acme".into(),
        },
    )
    .await
    .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    let manifest = manifest_of(&app.sink, "t/acme").await;
    assert_eq!(manifest.tenant.as_deref(), Some("acme"));
    assert_eq!(manifest.rows, 15);
    for i in 0..manifest.parts {
        let part = text_of(&app.sink, &part_key("t/acme", i, Format::Csv)).await;
        assert!(!part.contains("globex"), "another tenant's row: {part}");
    }

    // An import reads only an export of its own run's tenant: globex cannot, and a
    // `tenant = none` run has no cross-tenant escape either.
    let globex = ImportForTenant::enqueue(
        &kit.jobs().for_tenant("globex"),
        TenantTarget {
            org: "globex".into(),
            prefix: "t/acme".into(),
        },
    )
    .await
    .unwrap();
    let untenanted = ImportOrders::enqueue(kit.jobs(), target("t/acme"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    dead_with(&kit, globex.id, ErrorCode::JobTenantMismatch).await;
    dead_with(&kit, untenanted.id, ErrorCode::JobTenantMismatch).await;
    assert!(app.imported.lock().unwrap().is_empty());

    // acme's own import reads it.
    let own = ImportForTenant::enqueue(
        &acme,
        TenantTarget {
            org: "acme".into(),
            prefix: "t/acme".into(),
        },
    )
    .await
    .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(own.id).await.state, JobState::Done);
    let imported = app.imported.lock().unwrap();
    assert_eq!(imported.len(), 15);
    assert!(imported.values().all(|o| o.org == "acme"));
}

#[tokio::test]
async fn the_rate_spends_the_run_clock_instead_of_sleeping() {
    let app = App::in_memory(35);
    let kit = kit(&app);
    let start = kit.clock().now();
    let wall = std::time::Instant::now();
    ExportPaced::enqueue(kit.jobs(), target("paced"))
        .await
        .unwrap();
    kit.run_until_idle().await;
    // Four pages: the first at once, three more 200 ms apart on the test clock.
    assert_eq!(manifest_of(&app.sink, "paced").await.parts, 4);
    assert_eq!((kit.clock().now() - start).num_milliseconds(), 600);
    assert!(wall.elapsed() < std::time::Duration::from_secs(5));

    // Unpaced (no default rate): the clock does not move.
    let app = App::in_memory(35);
    let kit = self::kit(&app);
    let start = kit.clock().now();
    ExportCsv::enqueue(kit.jobs(), target("unpaced"))
        .await
        .unwrap();
    kit.run_until_idle().await;
    assert_eq!(manifest_of(&app.sink, "unpaced").await.parts, 4);
    assert_eq!(kit.clock().now(), start);
}

#[tokio::test]
async fn builder_values_are_refused_when_built() {
    for refused in [
        Export::csv(Vec::<String>::new()).unwrap_err(),
        Export::csv(["id", "id"]).unwrap_err(),
        Export::csv(["id", " "]).unwrap_err(),
        Export::csv(["id", "a\nb"]).unwrap_err(),
        Export::csv(["id"]).unwrap().batch(0).unwrap_err(),
        Export::csv(["id"]).unwrap().batch(100_001).unwrap_err(),
        Export::csv(["id"]).unwrap().max_part_bytes(0).unwrap_err(),
        Export::csv(["id"]).unwrap().rate(0.0).unwrap_err(),
        Export::csv(["id"]).unwrap().rate(-1.0).unwrap_err(),
        Export::csv(["id"])
            .unwrap()
            .rate(f64::INFINITY)
            .unwrap_err(),
        Import::new(["id", "id"]).unwrap_err(),
        Import::new(["id"]).unwrap().rate(f64::NAN).unwrap_err(),
        Import::new(["id"]).unwrap().max_part_bytes(0).unwrap_err(),
    ] {
        assert!(refused.is(ErrorCode::JobDeclarationInvalid), "{refused}");
    }
    let export = Export::json_lines(["id"]).unwrap();
    assert_eq!(
        (export.batch_size(), export.part_bound(), export.pace()),
        (500, 8 * 1024 * 1024, None),
        "the defaults: 500 rows, 8 MiB, no rate"
    );
}

#[tokio::test]
async fn export_then_import_gives_back_the_source_csv_and_json_lines() {
    for (format, prefix) in [
        (Format::Csv, "round/csv"),
        (Format::JsonLines, "round/json"),
    ] {
        let app = App::in_memory(47);
        let kit = kit(&app);
        match format {
            Format::Csv => ExportCsv::enqueue(kit.jobs(), target(prefix))
                .await
                .unwrap(),
            Format::JsonLines => ExportJson::enqueue(kit.jobs(), target(prefix))
                .await
                .unwrap(),
        };
        let queued = ImportOrders::enqueue(kit.jobs(), target(prefix))
            .await
            .unwrap();
        kit.run_to_completion().await;
        assert_eq!(kit.job(queued.id).await.state, JobState::Done);
        let steps = kit.steps(queued.run_id).await;
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "import:0",
                "import:1",
                "import:2",
                "import:3",
                "import:4",
                "import:manifest"
            ],
            "sorted by name"
        );
        assert_eq!(
            *app.imported.lock().unwrap(),
            *app.orders.lock().unwrap(),
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn a_failed_import_resumes_on_its_part() {
    let app = App::in_memory(30);
    *app.fail_upsert_once_on.lock().unwrap() = Some(1);
    let kit = kit(&app);
    ExportCsv::enqueue(kit.jobs(), target("again"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    let queued = ImportOrders::enqueue(kit.jobs(), target("again"))
        .await
        .unwrap();
    kit.run_to_completion().await;

    let job = kit.job(queued.id).await;
    assert_eq!((job.state, job.attempt), (JobState::Done, 2));
    for (step, runs) in [
        ("import:manifest", 1),
        ("import:0", 1),
        ("import:1", 2),
        ("import:2", 1),
    ] {
        assert_eq!(kit.step_runs(queued.run_id, step), runs, "{step}");
    }
    assert_eq!(app.upserts.load(Ordering::SeqCst), 4);
    assert_eq!(*app.imported.lock().unwrap(), *app.orders.lock().unwrap());
    let steps = kit.steps(queued.run_id).await;
    let last = steps.iter().find(|s| s.name == "import:2").unwrap();
    assert_eq!(last.output.clone().unwrap()["rows"], 30);
}

#[tokio::test]
async fn an_import_refuses_a_part_over_its_bound_and_a_column_it_does_not_take() {
    let app = App::in_memory(25);
    let kit = kit(&app);
    ExportCsv::enqueue(kit.jobs(), target("wide"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    let bounded = ImportBounded::enqueue(kit.jobs(), target("wide"))
        .await
        .unwrap();
    let narrow = ImportNarrow::enqueue(kit.jobs(), target("wide"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    let error = dead_with(&kit, bounded.id, ErrorCode::ExportPartTooLarge).await;
    assert!(error.contains("part 0"), "{error}");
    let error = dead_with(&kit, narrow.id, ErrorCode::ExportRowInvalid).await;
    assert!(error.contains("`name`"), "{error}");
    assert!(app.imported.lock().unwrap().is_empty());
}

#[tokio::test]
async fn local_files_hold_the_parts_and_cat_of_them_is_one_csv_file() {
    let dir = TempDir::new("export-local");
    let sink: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let app = App::new(23, sink);
    let kit = kit(&app);
    ExportCsv::enqueue(kit.jobs(), target("exports/orders"))
        .await
        .unwrap();
    ExportOnePart::enqueue(kit.jobs(), target("exports/whole"))
        .await
        .unwrap();
    kit.run_to_completion().await;

    let folder = dir.path().join("exports/orders");
    let mut files: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "manifest.json",
            "part-00000.csv",
            "part-00001.csv",
            "part-00002.csv"
        ]
    );
    // `cat part-*`, in the shell's order.
    let cat: Vec<u8> = files
        .iter()
        .filter(|f| f.starts_with("part-"))
        .flat_map(|f| std::fs::read(folder.join(f)).unwrap())
        .collect();
    let whole = std::fs::read(dir.path().join("exports/whole/part-00000.csv")).unwrap();
    assert_eq!(cat, whole);
    assert_eq!(
        String::from_utf8(cat)
            .unwrap()
            .matches("id,org,name")
            .count(),
        1
    );

    // And read back from the files.
    let queued = ImportOrders::enqueue(kit.jobs(), target("exports/orders"))
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert_eq!(*app.imported.lock().unwrap(), *app.orders.lock().unwrap());
}

#[tokio::test]
async fn an_import_rate_spends_the_run_clock_too() {
    let app = App::in_memory(25);
    let kit = kit(&app);
    ExportCsv::enqueue(kit.jobs(), target("slow-in"))
        .await
        .unwrap();
    kit.run_until_idle().await;
    let start = kit.clock().now();
    ImportPaced::enqueue(kit.jobs(), target("slow-in"))
        .await
        .unwrap();
    kit.run_until_idle().await;
    // Three parts: the first at once, two more 250 ms apart on the test clock.
    assert_eq!((kit.clock().now() - start).num_milliseconds(), 500);
    assert_eq!(app.imported.lock().unwrap().len(), 25);
}
