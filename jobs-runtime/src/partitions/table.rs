//! One declared range-partitioned table: its period, how many partitions to keep ready ahead
//! of the current one, how many past ones to keep, and the names and bounds of its partitions.

use chrono::{Datelike, Months, NaiveDate, TimeDelta};

use crate::driver::partition_store::PartitionRange;
use crate::error::{ErrorCode, JobError};

/// How much time one partition holds, from midnight UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// One day: partitions named `<table>_pYYYYMMDD`.
    Day,
    /// One calendar month: partitions named `<table>_pYYYYMM`.
    Month,
}

impl Period {
    /// The first day of the period holding `day`.
    pub fn start(self, day: NaiveDate) -> NaiveDate {
        match self {
            Period::Day => day,
            Period::Month => day.with_day(1).unwrap_or(day),
        }
    }

    /// The start of the period `n` periods after the one starting at `start` (`n` may be
    /// negative).
    pub fn shift(self, start: NaiveDate, n: i64) -> NaiveDate {
        match self {
            Period::Day => start + TimeDelta::days(n),
            Period::Month => {
                let months = Months::new(n.unsigned_abs().min(u64::from(u32::MAX)) as u32);
                let shifted = if n >= 0 {
                    start.checked_add_months(months)
                } else {
                    start.checked_sub_months(months)
                };
                shifted.unwrap_or(start)
            }
        }
    }

    fn suffix(self, start: NaiveDate) -> String {
        match self {
            Period::Day => start.format("%Y%m%d").to_string(),
            Period::Month => start.format("%Y%m").to_string(),
        }
    }

    /// The period start a partition's suffix names, if it is one of this period's.
    fn parse_suffix(self, suffix: &str) -> Option<NaiveDate> {
        if !suffix.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match (self, suffix.len()) {
            (Period::Day, 8) => NaiveDate::parse_from_str(suffix, "%Y%m%d").ok(),
            (Period::Month, 6) => NaiveDate::parse_from_str(&format!("{suffix}01"), "%Y%m%d").ok(),
            _ => None,
        }
    }
}

/// The partitions kept ahead of the current one unless told ([`PartitionedTable::ahead`]).
pub const DEFAULT_PARTITIONS_AHEAD: u32 = 3;

/// A range-partitioned table of the app's, by a timestamp or date column, and how the
/// partitions job keeps it: `ahead` partitions past the current period created, those older
/// than `retain` periods dropped (none unless `retain` is set).
///
/// ```
/// use jobs::partitions::PartitionedTable;
/// let events = PartitionedTable::daily("events").ahead(7).retain(90);
/// assert_eq!(events.table(), "events");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionedTable {
    table: String,
    period: Period,
    ahead: u32,
    retain: Option<u32>,
}

impl PartitionedTable {
    /// `table` (`events` or `schema.events`), one partition a day.
    pub fn daily(table: impl Into<String>) -> Self {
        Self::new(table, Period::Day)
    }

    /// `table`, one partition a calendar month.
    pub fn monthly(table: impl Into<String>) -> Self {
        Self::new(table, Period::Month)
    }

    /// `table`, one partition per `period`.
    pub fn new(table: impl Into<String>, period: Period) -> Self {
        PartitionedTable {
            table: table.into(),
            period,
            ahead: DEFAULT_PARTITIONS_AHEAD,
            retain: None,
        }
    }

    /// Keeps `n` partitions ready past the current one.
    pub fn ahead(mut self, n: u32) -> Self {
        self.ahead = n;
        self
    }

    /// Keeps the current partition and the `n` before it; drops older ones (the job's
    /// partitions only: names it did not make are left alone).
    pub fn retain(mut self, n: u32) -> Self {
        self.retain = Some(n);
        self
    }

    /// The table, as declared.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The period of one partition.
    pub fn period(&self) -> Period {
        self.period
    }

    /// The table's name without its schema: partitions are `<base>_p<period>`.
    fn base(&self) -> &str {
        self.table.rsplit('.').next().unwrap_or(&self.table)
    }

    /// The partition holding the period that starts at `start`.
    pub fn partition(&self, start: NaiveDate) -> PartitionRange {
        PartitionRange {
            name: format!("{}_p{}", self.base(), self.period.suffix(start)),
            from: start,
            to: self.period.shift(start, 1),
        }
    }

    /// The period start of a partition named by this table's pattern, if `name` is one.
    fn started(&self, name: &str) -> Option<NaiveDate> {
        let suffix = name.strip_prefix(self.base())?.strip_prefix("_p")?;
        self.period.parse_suffix(suffix)
    }

    /// Refuses what no run of the job could do, before any DDL: a name a partition name
    /// would not fit (63 bytes), more than ten years ahead, a `retain` of zero (which would
    /// drop the current partition's predecessors while rows still arrive late).
    pub(crate) fn check(&self) -> Result<(), JobError> {
        let refused = |why: String, fix: &str| {
            Err(JobError::new(ErrorCode::JobDeclarationInvalid, why).with_fix(fix.to_string()))
        };
        let longest = self.base().len() + 2 + 8;
        if longest > 63 {
            return refused(
                format!(
                    "partitioned table `{}`: its partitions' names would be {longest} bytes, over Postgres' 63",
                    self.table
                ),
                "shorten the table's name",
            );
        }
        let most = match self.period {
            Period::Day => 3_660,
            Period::Month => 120,
        };
        if self.ahead > most {
            return refused(
                format!(
                    "partitioned table `{}`: `ahead` is {}, more than ten years of partitions",
                    self.table, self.ahead
                ),
                "keep at most ten years of partitions ahead",
            );
        }
        if self.retain == Some(0) {
            return refused(
                format!(
                    "partitioned table `{}`: `retain(0)` would drop yesterday's partition at midnight",
                    self.table
                ),
                "retain at least one past period, or leave `retain` out to drop nothing",
            );
        }
        Ok(())
    }

    /// What to create and drop on `today`, given the partitions that exist. With `from`, every
    /// partition back to the one holding `from` is created and nothing is dropped.
    pub fn plan(&self, today: NaiveDate, from: Option<NaiveDate>, existing: &[String]) -> Plan {
        let current = self.period.start(today);
        let first = from.map_or(current, |day| self.period.start(day).min(current));
        let last = self.period.shift(current, i64::from(self.ahead));
        let mut create = Vec::new();
        let mut start = first;
        while start <= last {
            let partition = self.partition(start);
            if !existing.contains(&partition.name) {
                create.push(partition);
            }
            start = self.period.shift(start, 1);
        }
        let drop = match (self.retain, from) {
            (Some(retain), None) => {
                let cutoff = self.period.shift(current, -i64::from(retain));
                let mut old: Vec<(NaiveDate, String)> = existing
                    .iter()
                    .filter_map(|name| self.started(name).map(|start| (start, name.clone())))
                    .filter(|(start, _)| *start < cutoff)
                    .collect();
                old.sort();
                old.into_iter().map(|(_, name)| name).collect()
            }
            _ => Vec::new(),
        };
        Plan { create, drop }
    }
}

/// What one run does to one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Partitions to create, oldest first.
    pub create: Vec<PartitionRange>,
    /// Partitions to drop, oldest first.
    pub drop: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn names(plan: &Plan) -> Vec<&str> {
        plan.create.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn daily_creates_the_current_and_ahead_and_drops_past_retain() {
        let t = PartitionedTable::daily("app.events").ahead(2).retain(2);
        let existing: Vec<String> = ["events_p20261201", "events_p20261202", "events_p20261203"]
            .map(String::from)
            .into();
        let plan = t.plan(day("2026-12-05"), None, &existing);
        assert_eq!(
            names(&plan),
            ["events_p20261205", "events_p20261206", "events_p20261207"]
        );
        assert_eq!(plan.create[0].from, day("2026-12-05"));
        assert_eq!(plan.create[0].to, day("2026-12-06"));
        // The current day and the two before it stay: 3 Dec and 4 Dec are kept.
        assert_eq!(plan.drop, ["events_p20261201", "events_p20261202"]);
    }

    #[test]
    fn monthly_wraps_years_and_ignores_names_it_did_not_make() {
        let t = PartitionedTable::monthly("audit").ahead(2).retain(1);
        let existing: Vec<String> = ["audit_p202610", "audit_default", "audit_p2026101"]
            .map(String::from)
            .into();
        let plan = t.plan(day("2026-12-31"), None, &existing);
        assert_eq!(
            names(&plan),
            ["audit_p202612", "audit_p202701", "audit_p202702"]
        );
        assert_eq!(plan.create[1].to, day("2027-02-01"));
        assert_eq!(plan.drop, ["audit_p202610"]);
    }

    #[test]
    fn from_creates_back_to_its_period_and_drops_nothing() {
        let t = PartitionedTable::daily("events").ahead(0).retain(1);
        let existing = vec!["events_p20261101".to_string()];
        let plan = t.plan(day("2026-12-03"), Some(day("2026-12-01")), &existing);
        assert_eq!(
            names(&plan),
            ["events_p20261201", "events_p20261202", "events_p20261203"]
        );
        assert!(plan.drop.is_empty());
        // A `from` in the future is the current period.
        let plan = t.plan(day("2026-12-03"), Some(day("2027-01-01")), &existing);
        assert_eq!(names(&plan), ["events_p20261203"]);
    }

    #[test]
    fn a_second_run_plans_nothing() {
        let t = PartitionedTable::daily("events").ahead(3).retain(7);
        let first = t.plan(day("2026-12-05"), None, &[]);
        let existing: Vec<String> = first.create.iter().map(|p| p.name.clone()).collect();
        let again = t.plan(day("2026-12-05"), None, &existing);
        assert!(again.create.is_empty() && again.drop.is_empty());
    }

    #[test]
    fn refusals() {
        assert!(PartitionedTable::daily("a".repeat(60)).check().is_err());
        assert!(PartitionedTable::daily("events").retain(0).check().is_err());
        assert!(PartitionedTable::monthly("events")
            .ahead(121)
            .check()
            .is_err());
        assert!(PartitionedTable::daily("events")
            .ahead(7)
            .retain(90)
            .check()
            .is_ok());
    }
}
