// Several errors of one declaration are reported together.
use jobs::prelude::*;

#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
}

pub async fn users_after(_pass: Pass, after: Option<i64>, _limit: u32) -> Result<Page<User, i64>, JobError> {
    let _ = after;
    Ok(Page::end())
}

#[backfill(batch = 0, rate = -1.0, key = "users", concurrency = 2)]
pub fn fill(run: Run, rows: User) {
    let _ = (run, rows);
}

fn main() {}
