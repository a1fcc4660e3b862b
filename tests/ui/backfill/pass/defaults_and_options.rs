// The defaults, and every option: a keyset source, a handler with the pass and the rows.
#![deny(warnings)]
use jobs::prelude::*;

#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
}

pub async fn users_after(
    _pass: Pass,
    after: Option<i64>,
    _limit: u32,
) -> Result<Page<User, i64>, JobError> {
    let _ = after;
    Ok(Page::end())
}

/// Fills display names.
#[backfill(name = "users.display-name", tenant = none, source = users_after)]
pub async fn fill_display_name(pass: Pass, rows: Vec<User>) -> Result<(), JobError> {
    let _ = (pass.tenant(), pass.is_cancelled(), rows.len());
    Ok(())
}

#[backfill(
    name = "users.email",
    tenant = per_tenant,
    source = users_after,
    batch = 250,
    rate = 0.5,
    queue = "backfills",
    retry(attempts = 10, backoff = fixed, delay = "5s"),
    timeout = "2h",
    handle = EmailBackfill,
    requires = "20261201093000_add_email",
    environments = ["staging", "production"],
    count = emails_left,
)]
pub async fn fill_email(_pass: Pass, _rows: Vec<User>) -> Result<(), JobError> {
    Ok(())
}

/// The rows still to do: the source's predicate, counted.
pub async fn emails_left(_pass: Pass) -> Result<i64, JobError> {
    Ok(0)
}

#[test]
fn runs() {
    let d = FillDisplayName::backfill();
    assert_eq!((d.batch, d.rate), (1_000, 5.0));
    assert_eq!(FillDisplayName::descriptor().name, "users.display-name");
    let e = EmailBackfill::backfill();
    assert_eq!((e.batch, e.rate), (250, 0.5));
    assert_eq!(EmailBackfill::descriptor().queue, "backfills");
    assert_eq!(EmailBackfill::descriptor().retry.attempts, 10);
    assert_eq!(d.requires, None);
    assert!(d.environments.is_empty() && !d.counts);
    assert_eq!(e.requires, Some("20261201093000_add_email"));
    assert_eq!(e.required_version(), Some(20261201093000));
    assert_eq!(e.environments, ["staging", "production"]);
    assert!(e.counts);
}

pub async fn enqueue_them(jobs: &Jobs) -> Result<(), JobError> {
    FillDisplayName::enqueue(jobs).await?;
    FillDisplayName::force(jobs).await?;
    EmailBackfill::enqueue_for(jobs, "acme").await?;
    EmailBackfill::force_for(jobs, String::from("acme")).await?;
    Ok(())
}
