//! The outbox cases on the memory store.

use std::sync::Arc;

use jobs::conformance::outbox::MemoryOutboxFixture;

jobs::outbox_suite!(async { Arc::new(MemoryOutboxFixture::default()) });
