// `#[input]` goes on the input type, not on the job.
use jobs::prelude::*;

#[input]
async fn send_welcome() {}

fn main() {}
