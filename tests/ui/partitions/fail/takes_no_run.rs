// The fn builds one run's tables from the attempt's run, and returns them.
use jobs::partitions::{PartitionedTable, Partitions};
use jobs::prelude::*;

#[partitions(name = "app.partitions")]
pub fn app_partitions() -> Result<Partitions, JobError> {
    Ok(Partitions::new().table(PartitionedTable::daily("events")))
}

fn main() {}
