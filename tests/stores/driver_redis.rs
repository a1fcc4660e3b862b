//! The driver conformance suite against the Redis driver on one server: each case under a key
//! prefix of its own on the test binary's own `redis-server`.

use crate::support;

jobs::conformance_suite!(|case| support::redis::driver(case));
