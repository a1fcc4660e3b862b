//! Runs the `jobs` command line (`jobs::cli::run`, what the binary calls) against a schema.

/// Runs `jobs <args>` against `schema`, answering the exit code, stdout and stderr.
pub async fn jobs_cli(schema: &str, args: &[&str]) -> (u8, String, String) {
    let url = super::pg::database_url();
    let mut argv = vec!["--schema", schema];
    argv.extend_from_slice(args);
    jobs_cli_on(url, &argv).await
}

/// Runs `jobs --database-url <url> <args>` (a SQLite file, a Redis URL with its prefix),
/// answering the exit code, stdout and stderr.
pub async fn jobs_cli_on(url: &str, args: &[&str]) -> (u8, String, String) {
    let mut argv = vec![
        "jobs".to_string(),
        "--database-url".to_string(),
        url.to_string(),
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
