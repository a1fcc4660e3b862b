//! Runs the `jobs` command line (`jobs::cli::run`, what the binary calls) against a schema.

/// Runs `jobs <args>` against `schema`, answering the exit code, stdout and stderr.
pub async fn jobs_cli(schema: &str, args: &[&str]) -> (u8, String, String) {
    let mut argv = vec![
        "jobs".to_string(),
        "--database-url".to_string(),
        super::pg::database_url().to_string(),
        "--schema".to_string(),
        schema.to_string(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = jobs::cli::run(argv, &mut out, &mut err).await;
    (
        code,
        String::from_utf8(out).expect("utf-8"),
        String::from_utf8(err).expect("utf-8"),
    )
}
