// The handle is named after the fn (`digest` -> `Digest`); beside a struct `Digest` that the
// fn builds, that is refused with the fix instead of rustc's "defined multiple times".
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Digest {
    pub day: String,
}

#[job(key = "digest:{day}", tenant = none)]
pub async fn send_digest(_run: Run, _input: Digest) -> Result<(), JobError> {
    Ok(())
}

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
pub fn digest(at: Occurrence) -> Vec<Entry> {
    vec![Entry::of::<SendDigest>(Digest {
        day: at.date().to_string(),
    })]
}

fn main() {}
