// An entry's input is the job's input type.
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
fn weekday_digest(at: Occurrence) -> Vec<Entry> {
    vec![Entry::of::<SendDigest>(at.date().to_string())]
}

fn main() {}
