//! The driver conformance suite against the memory driver.

use std::sync::Arc;

use jobs::driver::MemoryDriver;

jobs::conformance_suite!(async { Arc::new(MemoryDriver::new()) });
