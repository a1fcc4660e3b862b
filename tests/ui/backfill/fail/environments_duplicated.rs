// An environment named twice.
use jobs::prelude::*;

#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
}

pub async fn users_after(_pass: Pass, after: Option<i64>, _limit: u32) -> Result<Page<User, i64>, JobError> {
    let _ = after;
    Ok(Page::end())
}

#[backfill(name = "users.fill", tenant = none, source = users_after, environments = ["staging", "staging"])]
pub async fn fill(_pass: Pass, _rows: Vec<User>) -> Result<(), JobError> {
    Ok(())
}

fn main() {}
