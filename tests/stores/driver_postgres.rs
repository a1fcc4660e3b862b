//! The driver conformance suite against the Postgres driver: each case on its own schema of the
//! shared test server (`DATABASE_URL`, or a throwaway cluster; see `tests/support/pg.rs`).

use crate::support;

jobs::conformance_suite!(|case| support::pg::driver(case));
