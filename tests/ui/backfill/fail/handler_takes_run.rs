// §30 item 24: the handler gets the pass and the rows, never the step API of a `Run`.
use jobs::prelude::*;

#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
}

pub async fn users_after(_pass: Pass, after: Option<i64>, _limit: u32) -> Result<Page<User, i64>, JobError> {
    let _ = after;
    Ok(Page::end())
}

#[backfill(name = "users.fill", tenant = none, source = users_after)]
pub async fn fill(run: Run, _rows: Vec<User>) -> Result<(), JobError> {
    let _ = run;
    Ok(())
}

fn main() {}
