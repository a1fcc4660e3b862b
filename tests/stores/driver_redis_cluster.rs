//! The driver conformance suite against the Redis driver on a Redis Cluster of three masters
//! (the test binary's own), each case under a key prefix of its own: every script of a queue
//! runs in the queue's one slot, and the queues of a case spread over the masters.

use crate::support;

jobs::conformance_suite!(|case| support::redis::cluster_driver(case));
