// A partitions job has a durable name.
use jobs::partitions::{PartitionedTable, Partitions};
use jobs::prelude::*;

#[partitions(cron = "17 3 * * *")]
pub fn app_partitions(_run: &Run) -> Result<Partitions, JobError> {
    Ok(Partitions::new().table(PartitionedTable::daily("events")))
}

fn main() {}
