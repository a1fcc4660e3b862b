// `#[task]` is a placeholder until it is built.
#[jobs::task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
fn weekday_digest() {}

fn main() {}
