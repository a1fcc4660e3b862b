//! Durations between the test clock's timestamps.

use std::time::Duration;

use jobs::clock::Timestamp;

/// `to - from` as a std duration (panics when negative).
pub fn elapsed(from: Timestamp, to: Timestamp) -> Duration {
    (to - from)
        .to_std()
        .unwrap_or_else(|_| panic!("{to} is before {from}"))
}
