//! The outbox cases on Postgres, each in a schema of its own.

use crate::support;

jobs::outbox_suite!(|case| support::outbox::postgres(case));
