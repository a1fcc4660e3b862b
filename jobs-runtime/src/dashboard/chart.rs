//! The overview's throughput chart: the last hour's one-minute counter buckets, summed over
//! every job name, as the geometry of an SVG bar chart the template draws. Drawn from the
//! counters the settles keep, never from a count over the jobs table.

use serde::Serialize;

use crate::clock::Timestamp;
use crate::driver::introspect::CounterBucket;

/// Minutes the chart spans.
pub(crate) const MINUTES: i64 = 60;
const WIDTH: u32 = 600;
const HEIGHT: u32 = 120;
const BAR: u32 = WIDTH / MINUTES as u32;

/// One minute's bar: the completed runs stacked under the failed and dead ones.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Bar {
    pub x: u32,
    pub width: u32,
    pub done_y: u32,
    pub done_height: u32,
    pub failed_y: u32,
    pub failed_height: u32,
    /// The bar's tooltip: the minute and its counts.
    pub title: String,
}

/// The chart: its size, its bars and its totals.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Chart {
    pub width: u32,
    pub height: u32,
    pub bars: Vec<Bar>,
    /// The tallest minute's runs (the scale).
    pub peak: u64,
    pub done: u64,
    pub failed: u64,
    pub retried: u64,
}

/// The chart of `buckets` (any job's one-minute buckets) over the hour before `now`.
pub(crate) fn throughput(buckets: &[CounterBucket], now: Timestamp) -> Chart {
    let end = crate::driver::introspect::bucket_start(now, 60);
    let start = end - chrono::Duration::minutes(MINUTES - 1);
    let mut minutes = vec![(0u64, 0u64); MINUTES as usize];
    let (mut done, mut failed, mut retried) = (0, 0, 0);
    for b in buckets.iter().filter(|b| b.width_secs == 60) {
        let Some(at) = b.bucket else { continue };
        let index = (at - start).num_minutes();
        if !(0..MINUTES).contains(&index) {
            continue;
        }
        let slot = &mut minutes[index as usize];
        slot.0 += b.done;
        slot.1 += b.failed + b.dead;
        done += b.done;
        failed += b.failed + b.dead;
        retried += b.retried;
    }
    let peak = minutes.iter().map(|(d, f)| d + f).max().unwrap_or(0);
    let scale = |n: u64| -> u32 { (n * u64::from(HEIGHT)).checked_div(peak).unwrap_or(0) as u32 };
    let bars = minutes
        .iter()
        .enumerate()
        .map(|(i, (d, f))| {
            let done_height = scale(*d);
            let failed_height = scale(*f).min(HEIGHT - done_height);
            let minute = start + chrono::Duration::minutes(i as i64);
            Bar {
                x: i as u32 * BAR,
                width: BAR.saturating_sub(1).max(1),
                done_y: HEIGHT - done_height,
                done_height,
                failed_y: HEIGHT - done_height - failed_height,
                failed_height,
                title: format!("{}: {d} done, {f} failed or dead", minute.format("%H:%M")),
            }
        })
        .collect();
    Chart {
        width: WIDTH,
        height: HEIGHT,
        bars,
        peak,
        done,
        failed,
        retried,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_minute_is_the_tallest_bar() {
        let now: Timestamp = "2030-01-01T10:00:30Z".parse().unwrap();
        let bucket = |at: &str, done, dead| CounterBucket {
            bucket: Some(at.parse().unwrap()),
            width_secs: 60,
            done,
            dead,
            ..CounterBucket::default()
        };
        let chart = throughput(
            &[
                bucket("2030-01-01T10:00:00Z", 4, 0),
                bucket("2030-01-01T09:30:00Z", 1, 1),
                bucket("2030-01-01T08:00:00Z", 100, 0), // over an hour ago: left out
            ],
            now,
        );
        assert_eq!((chart.peak, chart.done, chart.failed), (4, 5, 1));
        let last = chart.bars.last().unwrap();
        assert_eq!(last.done_height, HEIGHT);
        assert_eq!(chart.bars.len(), MINUTES as usize);
    }
}
