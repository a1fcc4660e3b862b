//! `jobs errors explain <CODE>`: what an `X_...` code means, how a job returning it is retried,
//! and its fix, from the one table (`error.rs`); `jobs errors list`: every code with its class.
//! Neither needs a database.

use serde_json::json;

use crate::error::{ErrorCode, JobError};

use crate::cli::output::to_json;

/// `jobs errors explain <CODE>`: the code spelled as printed (`X_JOB_TIMEOUT`); its case and
/// the `X_` prefix may be left out. An unknown code is a usage error naming the near ones.
pub(in crate::cli) fn explain(code: &str, json: bool) -> Result<String, JobError> {
    let known = lookup(code)?;
    let class = known.class();
    Ok(if json {
        to_json(&json!({
            "code": known.as_str(),
            "meaning": known.meaning(),
            "class": class.as_str(),
            "retry": class.behaviour(),
            "fix": known.fix(),
        }))
    } else {
        format!(
            "{}\n  meaning: {}\n  retry:   {} ({})\n  fix:     {}\n",
            known.as_str(),
            known.meaning(),
            class.as_str(),
            class.behaviour(),
            known.fix()
        )
    })
}

/// `jobs errors list`: every code and its class, in the table's order.
pub(in crate::cli) fn list(json: bool) -> String {
    if json {
        let rows: Vec<_> = ErrorCode::ALL
            .iter()
            .map(|c| json!({ "code": c.as_str(), "class": c.class().as_str() }))
            .collect();
        return to_json(&rows);
    }
    let width = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for code in ErrorCode::ALL {
        out.push_str(&format!(
            "{:width$}  {}\n",
            code.as_str(),
            code.class().as_str()
        ));
    }
    out
}

fn lookup(code: &str) -> Result<ErrorCode, JobError> {
    let wanted = code.trim().to_ascii_uppercase().replace('-', "_");
    let wanted = if wanted.starts_with("X_") {
        wanted
    } else {
        format!("X_{wanted}")
    };
    if let Some(known) = ErrorCode::parse(&wanted) {
        return Ok(known);
    }
    // The codes sharing a word with the one asked for: a typo's neighbours.
    let words: Vec<&str> = wanted
        .trim_start_matches("X_")
        .split('_')
        .filter(|w| w.len() > 2)
        .collect();
    let near: Vec<&str> = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| words.iter().any(|w| c.split('_').any(|part| part == *w)))
        .take(8)
        .collect();
    let fix = if near.is_empty() {
        "list the codes with `jobs errors list`".to_string()
    } else {
        format!(
            "did you mean {}? (`jobs errors list` lists every code)",
            near.join(", ")
        )
    };
    Err(JobError::new(
        ErrorCode::CliBadFlag,
        "`jobs errors explain` was given a code the table does not hold",
    )
    .with_fix(fix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_explained_from_the_one_table() {
        let text = explain("X_JOB_TIMEOUT", false).unwrap();
        assert!(text.starts_with("X_JOB_TIMEOUT\n"), "{text}");
        assert!(text.contains(ErrorCode::JobTimeout.fix()), "{text}");
        assert!(text.contains("retry:   retryable"), "{text}");
        // Case and prefix may be left out.
        assert_eq!(explain("job_timeout", false).unwrap(), text);
        let json: serde_json::Value =
            serde_json::from_str(&explain("X_RATE_LIMITED", true).unwrap()).unwrap();
        assert_eq!(json["class"], "retry-after");
        assert_eq!(json["fix"], ErrorCode::RateLimited.fix());
    }

    #[test]
    fn an_unknown_code_is_a_usage_error_naming_its_neighbours() {
        let refused = explain("X_JOB_TIMEOTU", false).unwrap_err();
        assert!(refused.is(ErrorCode::CliBadFlag));
        let fix = refused.fix().unwrap();
        assert!(
            fix.contains("X_JOB_TIMEOUT") || fix.contains("X_JOB_NOT_FOUND"),
            "{fix}"
        );
        // The value asked for is not repeated.
        assert!(!refused.message().contains("TIMEOTU"));
    }
}
