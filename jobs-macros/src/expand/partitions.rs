//! `#[partitions]`: a scheduled pass like `#[purge]` (`super::purge` emits both), over
//! `jobs::partitions`: the fn names the range-partitioned tables one run keeps, the job runs
//! `Partitions::run(&run, &request)` (a request may carry `from`), and its task fires it by
//! default at `17 3 * * *` in UTC.

use syn::ItemFn;

use super::pipeline::impl_macro;
use super::purge::{quote_pass, stand_in_pass};
use crate::args::purge::PurgeArgs;
use crate::check;
use crate::model::{PartitionsDecl, PassKind, ScheduledPass};

/// The partitions task's default schedule; the runtime's
/// `jobs::partitions::DEFAULT_PARTITIONS_CRON` is the same (a test holds them together).
const DEFAULT_PARTITIONS_CRON: &str = "17 3 * * *";

/// `#[partitions]`, for the expansion pipeline.
pub struct Partitions;

/// What a partitions job is, as a kind of scheduled pass.
pub struct PartitionsKind;

impl PassKind for PartitionsKind {
    const PASS: &'static ScheduledPass = &ScheduledPass {
        attr: "partitions",
        module: "partitions",
        builder: "Partitions",
        input: "PartitionsRequest",
        report: "PartitionsReport",
        key: "partitions",
        default_cron: DEFAULT_PARTITIONS_CRON,
        takes_input: true,
        keeps_report: true,
        builds: "the tables one run keeps",
        example: "app.partitions",
        suffix: "Partitions",
    };
}

impl_macro! {
    impl Macro for Partitions {
        name: "partitions",
        wrong_item: "`#[partitions]` goes on the fn that names the tables one run keeps: \
            `fn tables(run: &Run) -> Result<Partitions, JobError>` (X_JOB_DECLARATION_INVALID)",
        item: ItemFn,
        args: PurgeArgs,
        decl: PartitionsDecl,
        refused: crate::args::purge::partitions_refused,
        check: check::scheduled_pass,
        emit: quote_pass,
        stand_in: stand_in_pass,
        rename: [handle, crate_path],
    }
}
