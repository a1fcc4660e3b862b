// `on_dependency_failure = run_anyway | cancel` reads into the descriptor; leaving it out is the
// default, cancel.
#![deny(warnings)]
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Day {
    pub day: String,
}

#[job(key = "summary:{day}", tenant = none, on_dependency_failure = run_anyway)]
pub async fn summarise(run: Run, input: Day) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[job(key = "publish:{day}", tenant = none, on_dependency_failure = cancel)]
pub async fn publish(run: Run, input: Day) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[job(key = "plain:{day}", tenant = none)]
pub async fn plain(run: Run, input: Day) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[test]
fn runs() {
    assert_eq!(
        Summarise::descriptor().on_dependency_failure,
        DependencyFailure::RunAnyway
    );
    assert_eq!(
        Publish::descriptor().on_dependency_failure,
        DependencyFailure::Cancel
    );
    assert_eq!(
        Plain::descriptor().on_dependency_failure,
        DependencyFailure::Cancel
    );
}
