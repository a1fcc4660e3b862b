// Closures without a parameter type get `&Input`; `{0}` reads a tuple struct's field, `{{`
// and `}}` are literal braces; a derived tenant is computed from the input.
#![deny(warnings)]
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Digest(pub String, pub u32);

#[job(key = "digest:{{{0}}}:{1}", tenant = |d| d.0.to_uppercase())]
async fn build_digest(run: Run, input: Digest) -> Result<u32, JobError> {
    let _ = run;
    Ok(input.1)
}

fn tenant_of(input: &Digest) -> &str {
    &input.0
}

#[job(key = |d| d.1, tenant = self::tenant_of, handle = OtherDigest, crate = "::jobs")]
async fn other_digest(run: Run, input: Digest) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[test]
fn runs() {
    let input = Digest("acme".into(), 3);
    assert_eq!(BuildDigest::idempotency_key(&input), "digest:{acme}:3");
    assert_eq!(BuildDigest::tenant(&input).as_deref(), Some("ACME"));
    assert_eq!(BuildDigest::descriptor().tenant, jobs::TenantMode::Derived);
    assert_eq!(OtherDigest::idempotency_key(&input), "3");
    assert_eq!(OtherDigest::tenant(&input).as_deref(), Some("acme"));
}
