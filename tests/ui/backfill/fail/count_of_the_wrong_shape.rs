// A `count` fn answers the rows still to do as `Result<i64, _>`.
use jobs::prelude::*;

#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
}

pub async fn users_after(_pass: Pass, after: Option<i64>, _limit: u32) -> Result<Page<User, i64>, JobError> {
    let _ = after;
    Ok(Page::end())
}

pub async fn rows_left(_pass: Pass) -> Result<u64, JobError> {
    Ok(0)
}

#[backfill(name = "users.fill", tenant = none, source = users_after, count = rows_left)]
pub async fn fill(_pass: Pass, _rows: Vec<User>) -> Result<(), JobError> {
    Ok(())
}

fn main() {}
