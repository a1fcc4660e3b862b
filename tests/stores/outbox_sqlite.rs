//! The outbox cases on SQLite, each in a file of its own.

use crate::support;

jobs::outbox_suite!(|case| support::outbox::sqlite(case));
