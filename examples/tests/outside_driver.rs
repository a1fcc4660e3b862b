//! The conformance suite against a driver written outside the `jobs` crate
//! (`examples/src/outside_driver.rs`), and its URL scheme opened like a built-in one.

use std::sync::Arc;

use jobs::Jobs;
use jobs_examples::outside_driver::OutsideDriver;

jobs::conformance_suite!(async { Arc::new(OutsideDriver::new()) });

#[tokio::test]
async fn its_registered_scheme_opens_it() {
    let driver = jobs::driver::url::connect("outside:", None).await.unwrap();
    assert_eq!(driver.name(), "outside");
    let jobs = Jobs::open("OUTSIDE:").await.unwrap();
    assert_eq!(jobs.driver().name(), "outside");
}
