// Every error of one declaration is reported together, each at its argument.
use jobs::prelude::*;

#[task(
    cron = "0 0 9 * * *",
    tz = "Bogota",
    catch_up = later,
    max_catch_up = 0,
    retry(attempts = 3),
)]
async fn weekday_digest(_at: Occurrence, _extra: u32) {}

fn main() {}
