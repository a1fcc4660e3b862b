//! Example jobs.
