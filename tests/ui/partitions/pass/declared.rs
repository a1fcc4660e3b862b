// A partitions job with the defaults and one with every option; the fn may be async.
use jobs::partitions::{PartitionedTable, Partitions, PartitionsRequest};
use jobs::prelude::*;
use jobs::Task;

#[partitions(name = "app.partitions")]
pub fn app_partitions(_run: &Run) -> Result<Partitions, JobError> {
    Ok(Partitions::new().table(PartitionedTable::daily("events").ahead(7).retain(90)))
}

#[partitions(name = "app.partitions.audit", cron = "5 2 * * *", tz = "Europe/Paris", task = "app.partitions.night", queue = "maintenance", timeout = "10m", handle = AuditPartitions)]
pub async fn audit(_run: &Run) -> Result<Partitions, JobError> {
    Ok(Partitions::new().table(PartitionedTable::monthly("audit_log")))
}

#[test]
fn runs() {
    assert_eq!(
        <AppPartitionsSchedule as Task>::DESCRIPTOR.cron,
        jobs::partitions::DEFAULT_PARTITIONS_CRON
    );
    assert_eq!(
        <AuditPartitionsSchedule as Task>::DESCRIPTOR.name,
        "app.partitions.night"
    );
    assert_eq!(AppPartitions::descriptor().name, "app.partitions");
    assert_eq!(AuditPartitions::descriptor().queue, "maintenance");
    let _ = PartitionsRequest::default();
}
