// The tables are values the fn builds per run, not arguments.
use jobs::partitions::{PartitionedTable, Partitions};
use jobs::prelude::*;

#[partitions(name = "app.partitions", ahead = 7)]
pub fn app_partitions(_run: &Run) -> Result<Partitions, JobError> {
    Ok(Partitions::new().table(PartitionedTable::daily("events")))
}

fn main() {}
