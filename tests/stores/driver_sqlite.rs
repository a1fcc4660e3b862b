//! The driver conformance suite against the SQLite driver: each case on a file of its own.

use crate::support;

jobs::conformance_suite!(|case| support::sqlite::driver(case));
