//! The benchmark page's peer chart (`docs/benchmarks/peers.svg`), drawn from its results file
//! (`docs/benchmarks/peers.json`), so the picture and the table never disagree.
//!
//! The Redis peers have a results file and chart of their own (`redis-peers.json`,
//! `redis-peers.svg`), taken with `--store redis` before the other arguments.
//!
//! ```text
//! cargo run --bin bench-chart                      # redraw the SVG from the results file
//! cargo run --bin bench-chart -- --store redis --from-harness target/bench-peers/results-redis/<ts>/results.jsonl
//! cargo run --bin bench-chart -- --check           # fail when the committed SVG is stale (CI)
//! cargo run --bin bench-chart -- --from-harness target/bench-peers/results/<ts>/results.jsonl
//!                                                  # take a peer-harness run's figures, then redraw
//! ```
//!
//! The results file holds, per peer, the median and range over the run's repetitions of each
//! throughput and the pickup latencies; `--from-harness` computes them from the harness's raw
//! lines the way its summary does (median of the repetitions that finished, the worst max).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Value};

const WIDTH: f64 = 960.0;
const LABEL_W: f64 = 210.0;
const BAR_W: f64 = 560.0;
const ROW_H: f64 = 22.0;
const OURS: &str = "#2563eb";
const THEIRS: &str = "#9ca3af";

/// Which harness a results file comes from: the physical reference's rows differ.
#[derive(Clone, Copy)]
struct Harness {
    /// The file names' stem (`peers`, `redis-peers`).
    stem: &'static str,
    /// The reference's harness row (`pgbench`, `redis-benchmark`), its enqueue and bulk keys.
    reference: (&'static str, &'static str, &'static str),
}

const POSTGRES: Harness = Harness {
    stem: "peers",
    reference: ("pgbench", "insert_1c_tps", "batch1000_rows_per_s"),
};

const REDIS: Harness = Harness {
    stem: "redis-peers",
    reference: ("redis-benchmark", "lpush_1c", "lpush_p1000"),
};

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/benchmarks");
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let harness = match args.first().map(String::as_str) {
        Some("--store") => {
            let store = args.get(1).cloned().unwrap_or_default();
            args.drain(..2.min(args.len()));
            match store.as_str() {
                "redis" => REDIS,
                "postgres" => POSTGRES,
                other => {
                    eprintln!("error: unknown store `{other}`: use postgres or redis");
                    return ExitCode::FAILURE;
                }
            }
        }
        _ => POSTGRES,
    };
    let results = root.join(format!("{}.json", harness.stem));
    let chart = root.join(format!("{}.svg", harness.stem));
    match run(&args, &results, &chart, harness) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String], results: &Path, chart: &Path, harness: Harness) -> Result<(), String> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let mut data: Value = serde_json::from_str(&read(results)?)
        .map_err(|e| format!("{} is not JSON: {e}", results.display()))?;
    match args.first().map(String::as_str) {
        None => {}
        Some("--check") => {
            let committed = read(chart)?;
            return if committed == draw(&data)? {
                Ok(())
            } else {
                Err(format!(
                    "{} is stale against {}: run `cargo run --bin bench-chart` and commit it",
                    chart.display(),
                    results.display()
                ))
            };
        }
        Some("--from-harness") => {
            let lines = PathBuf::from(args.get(1).ok_or("--from-harness takes a results.jsonl")?);
            take_harness_run(&mut data, &read(&lines)?, harness)?;
            // The run's conditions, written by the harness beside its lines.
            let conditions = lines.with_file_name("conditions.txt");
            if let Ok(text) = std::fs::read_to_string(&conditions) {
                take_conditions(&mut data, &text);
            }
            let pretty = serde_json::to_string_pretty(&data).expect("JSON values serialize");
            std::fs::write(results, pretty + "\n").map_err(|e| e.to_string())?;
        }
        Some(other) => {
            return Err(format!(
                "unknown argument `{other}`: use --check or --from-harness FILE"
            ))
        }
    }
    std::fs::write(chart, draw(&data)?).map_err(|e| e.to_string())
}

/// Replaces each listed peer's figures (and pgbench's) with those of a harness run.
fn take_harness_run(data: &mut Value, lines: &str, harness: Harness) -> Result<(), String> {
    // (peer, mode) -> key -> the values of the repetitions that finished.
    let mut runs: BTreeMap<(String, String), BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let row: Value = serde_json::from_str(line).map_err(|e| format!("a results line: {e}"))?;
        if row["status"] != "ok" {
            continue;
        }
        let (Some(peer), Some(mode)) = (row["peer"].as_str(), row["mode"].as_str()) else {
            continue;
        };
        let keys = runs.entry((peer.into(), mode.into())).or_default();
        for (key, value) in row.as_object().into_iter().flatten() {
            if let Some(x) = value.as_f64() {
                keys.entry(key.clone()).or_default().push(x);
            }
        }
    }
    let stats = |peer: &str, mode: &str, key: &str| -> Value {
        match runs
            .get(&(peer.into(), mode.into()))
            .and_then(|k| k.get(key))
        {
            Some(xs) if !xs.is_empty() => {
                let mut xs = xs.clone();
                xs.sort_by(f64::total_cmp);
                json!({ "median": median(&xs).round(), "min": xs[0].round(), "max": xs[xs.len() - 1].round() })
            }
            _ => Value::Null,
        }
    };
    let pickup = |peer: &str, key: &str, worst: bool| -> Value {
        let xs = runs
            .get(&(peer.into(), "latency".into()))
            .and_then(|k| k.get(key));
        xs.filter(|xs| !xs.is_empty()).map_or(Value::Null, |xs| {
            let mut xs = xs.clone();
            xs.sort_by(f64::total_cmp);
            let x = if worst { xs[xs.len() - 1] } else { median(&xs) };
            json!((x * 10.0).round() / 10.0)
        })
    };
    for peer in data["peers"]
        .as_array_mut()
        .ok_or("peers.json has no peers list")?
    {
        let id = peer["harness"]
            .as_str()
            .ok_or("a peer without its harness name")?
            .to_owned();
        for mode in ["enqueue", "bulk", "e2e"] {
            peer[mode] = stats(&id, mode, "jobs_per_s");
        }
        peer["pickup_ms"] = json!({
            "p50": pickup(&id, "p50_ms", false),
            "p95": pickup(&id, "p95_ms", false),
            "max": pickup(&id, "max_ms", true),
        });
    }
    let reference = &mut data["reference"];
    let (row, enqueue_key, bulk_key) = harness.reference;
    for (mode, key) in [("enqueue", enqueue_key), ("bulk", bulk_key)] {
        let what = reference[mode]["what"].clone();
        reference[mode] = stats(row, "baseline", key);
        reference[mode]["what"] = what;
    }
    Ok(())
}

/// The run's date, server and repetitions from the harness's `conditions.txt` (`key=value`
/// lines); what the file does not say (the build, the machine) is left as it was.
fn take_conditions(data: &mut Value, text: &str) {
    for (key, value) in text.lines().filter_map(|l| l.split_once('=')) {
        let run = &mut data["run"];
        match key {
            "date_utc" => run["date_utc"] = json!(value.replace('T', " ").trim_end_matches('Z')),
            "postgres" => run["postgres"] = json!(format!("PostgreSQL {value}")),
            "redis" => run["redis"] = json!(format!("Redis {value}")),
            "params" => {
                if let Some(reps) = value.split(' ').find_map(|p| p.strip_prefix("REPS=")) {
                    run["repetitions"] = json!(reps.parse::<u32>().unwrap_or(0));
                }
            }
            _ => {}
        }
    }
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// A figure's median, min and max.
type Range = (f64, f64, f64);

/// One peer's bar: `None` where the peer has no figure; a note after its value.
type Bar<'a> = (&'a str, Option<Range>, Option<String>);

/// One panel: a bar per peer, its range as a whisker, the reference as a dashed line.
struct Panel<'a> {
    title: &'a str,
    bars: Vec<Bar<'a>>,
    reference: Option<(f64, String)>,
    unit: &'a str,
}

fn draw(data: &Value) -> Result<String, String> {
    let peers = data["peers"]
        .as_array()
        .ok_or("peers.json has no peers list")?;
    let range = |v: &Value| -> Option<Range> {
        Some((
            v["median"].as_f64()?,
            v["min"].as_f64()?,
            v["max"].as_f64()?,
        ))
    };
    let reference = |mode: &str| -> Option<(f64, String)> {
        let r = &data["reference"][mode];
        Some((
            r["median"].as_f64()?,
            format!(
                "{} {}",
                data["reference"]["name"]
                    .as_str()
                    .and_then(|n| n.split(',').next())
                    .unwrap_or("pgbench"),
                fmt_count(r["median"].as_f64()?)
            ),
        ))
    };
    let throughput = |title, mode: &str, with_reference: bool| Panel {
        title,
        bars: peers
            .iter()
            .map(|p| {
                (
                    p["peer"].as_str().unwrap_or("?"),
                    range(&p[mode]),
                    // A figure's note, or why there is none (`<mode>_note`).
                    p[mode]["note"]
                        .as_str()
                        .or(p[format!("{mode}_note")].as_str())
                        .map(str::to_owned),
                )
            })
            .collect(),
        reference: if with_reference {
            reference(mode)
        } else {
            None
        },
        unit: "/s",
    };
    let panels = [
        throughput("Single enqueue, jobs/s (higher is better)", "enqueue", true),
        throughput(
            "Bulk enqueue, 1,000 a call, jobs/s (higher is better)",
            "bulk",
            true,
        ),
        throughput(
            "End-to-end drain of 20,000 no-op jobs, jobs/s (higher is better)",
            "e2e",
            false,
        ),
        Panel {
            title: "Pickup from another process, p95 ms (lower is better)",
            bars: peers
                .iter()
                .map(|p| {
                    let l = &p["pickup_ms"];
                    let bar = l["p95"].as_f64().map(|p95| (p95, p95, p95));
                    let note = l["p50"]
                        .as_f64()
                        .map(|p50| format!("p50 {}", fmt_value(p50)));
                    (p["peer"].as_str().unwrap_or("?"), bar, note)
                })
                .collect(),
            reference: None,
            unit: " ms",
        },
    ];

    let run = &data["run"];
    let mut body = String::new();
    let mut y = 28.0;
    let _ = writeln!(
        body,
        r#"<text x="12" y="{y}" class="title">{}</text>"#,
        esc(run["title"]
            .as_str()
            .unwrap_or("jobs beside the Postgres job queues a Rust team would pick instead"))
    );
    y += 18.0;
    let _ = writeln!(
        body,
        r#"<text x="12" y="{y}" class="note">{}; build {}; {} repetitions, median with its range; {}</text>"#,
        esc(run["date_utc"].as_str().unwrap_or("?")),
        esc(run["build"].as_str().unwrap_or("?")),
        run["repetitions"],
        esc(run["postgres"]
            .as_str()
            .or(run["redis"].as_str())
            .unwrap_or("?")),
    );
    y += 16.0;
    for panel in &panels {
        y = draw_panel(&mut body, panel, y + 22.0);
    }
    let height = y + 16.0;
    Ok(format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">
<!-- Drawn by the bench-chart binary (examples/src/bin/bench_chart.rs) from its results file in docs/benchmarks/: edit that file, not this one. -->
<style>.title {{ font-size: 16px; font-weight: 600; fill: #111827 }} .note {{ fill: #6b7280 }} .head {{ font-weight: 600; fill: #111827 }} .label {{ fill: #374151 }} .value {{ fill: #111827 }} .ours {{ font-weight: 600 }}</style>
<rect width="100%" height="100%" fill="#ffffff"/>
{body}</svg>
"##
    ))
}

fn draw_panel(out: &mut String, panel: &Panel, top: f64) -> f64 {
    let bars_max = panel
        .bars
        .iter()
        .filter_map(|(_, b, _)| b.map(|(m, _, hi)| m.max(hi)))
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    // A reference far beyond every bar (pgbench's server-made batch) would squash them: it is
    // named in the heading instead of drawn.
    let reference = panel
        .reference
        .as_ref()
        .filter(|(r, _)| *r <= bars_max * 1.6);
    let scale_max = reference.map_or(bars_max, |(r, _)| bars_max.max(*r));
    let title = match (&panel.reference, reference) {
        (Some((_, label)), None) => format!("{} ({label}, off this scale)", panel.title),
        _ => panel.title.to_owned(),
    };
    let _ = writeln!(
        out,
        r#"<text x="12" y="{top}" class="head">{}</text>"#,
        esc(&title)
    );
    let x_of = |v: f64| LABEL_W + BAR_W * (v / scale_max);
    let mut y = top + 8.0;
    for (i, (peer, bar, note)) in panel.bars.iter().enumerate() {
        let ours = i == 0;
        let (fill, class) = if ours {
            (OURS, "label ours")
        } else {
            (THEIRS, "label")
        };
        let mid = y + ROW_H / 2.0 + 4.0;
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{mid}" text-anchor="end" class="{class}">{}</text>"#,
            LABEL_W - 8.0,
            esc(peer)
        );
        match bar {
            Some((median, lo, hi)) => {
                let w = (x_of(*median) - LABEL_W).max(1.0);
                let _ = writeln!(
                    out,
                    r#"<rect x="{LABEL_W}" y="{}" width="{w:.1}" height="{}" rx="2" fill="{fill}"/>"#,
                    y + 3.0,
                    ROW_H - 6.0
                );
                if hi > lo {
                    let _ = writeln!(
                        out,
                        r##"<line x1="{:.1}" x2="{:.1}" y1="{}" y2="{}" stroke="#111827" stroke-width="1.2"/>"##,
                        x_of(*lo),
                        x_of(*hi),
                        y + ROW_H / 2.0,
                        y + ROW_H / 2.0
                    );
                }
                let label = match note {
                    Some(note) => format!("{}{} ({note})", fmt_value(*median), panel.unit),
                    None => format!("{}{}", fmt_value(*median), panel.unit),
                };
                let _ = writeln!(
                    out,
                    r#"<text x="{:.1}" y="{mid}" class="value">{}</text>"#,
                    x_of(median.max(*hi)) + 6.0,
                    esc(&label)
                );
            }
            None => {
                let why = note.as_deref().unwrap_or("not offered");
                let _ = writeln!(
                    out,
                    r#"<text x="{}" y="{mid}" class="note">no figure ({})</text>"#,
                    LABEL_W + 4.0,
                    esc(why)
                );
            }
        }
        y += ROW_H;
    }
    if let Some((value, label)) = reference {
        let x = x_of(*value);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{y}" stroke="#dc2626" stroke-dasharray="4 3"/>"##,
            top + 6.0
        );
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{top}" text-anchor="end" fill="#dc2626">{}</text>"##,
            x - 4.0,
            esc(label)
        );
    }
    y
}

fn fmt_value(v: f64) -> String {
    if v < 100.0 && v.fract() != 0.0 {
        format!("{v:.1}")
    } else {
        fmt_count(v)
    }
}

fn fmt_count(v: f64) -> String {
    let digits = format!("{}", v.round() as i64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> Value {
        json!({
            "run": { "date_utc": "today", "build": "abc", "repetitions": 3, "postgres": "PostgreSQL" },
            "reference": {
                "enqueue": { "median": 1, "min": 1, "max": 1, "what": "bare INSERTs/s" },
                "bulk": { "median": 1, "min": 1, "max": 1, "what": "rows/s" }
            },
            "peers": [
                { "peer": "jobs", "harness": "jobs" },
                { "peer": "<other>", "harness": "other" }
            ]
        })
    }

    /// A harness run's lines become each peer's median and range over the repetitions that
    /// finished, the worst pickup max, and pgbench's reference.
    #[test]
    fn a_harness_run_becomes_medians_and_ranges() {
        let mut data = results();
        let lines = [
            r#"{"peer":"jobs","mode":"enqueue","rep":1,"status":"ok","jobs_per_s":100}"#,
            r#"{"peer":"jobs","mode":"enqueue","rep":2,"status":"ok","jobs_per_s":300}"#,
            r#"{"peer":"jobs","mode":"enqueue","rep":3,"status":"ok","jobs_per_s":200}"#,
            r#"{"peer":"jobs","mode":"bulk","rep":1,"status":"timeout","jobs_per_s":5}"#,
            r#"{"peer":"jobs","mode":"latency","rep":1,"status":"ok","p50_ms":0.61,"p95_ms":0.9,"max_ms":7.0}"#,
            r#"{"peer":"jobs","mode":"latency","rep":2,"status":"ok","p50_ms":0.71,"p95_ms":1.1,"max_ms":9.04}"#,
            r#"{"peer":"pgbench","mode":"baseline","rep":1,"status":"ok","insert_1c_tps":2000,"batch1000_rows_per_s":90000}"#,
        ]
        .join("\n");
        take_harness_run(&mut data, &lines, POSTGRES).unwrap();
        let jobs = &data["peers"][0];
        assert_eq!(
            jobs["enqueue"],
            json!({ "median": 200.0, "min": 100.0, "max": 300.0 })
        );
        assert_eq!(
            jobs["bulk"],
            Value::Null,
            "a timed-out repetition is no figure"
        );
        assert_eq!(
            jobs["pickup_ms"],
            json!({ "p50": 0.7, "p95": 1.0, "max": 9.0 })
        );
        assert_eq!(data["reference"]["enqueue"]["median"], json!(2000.0));
        assert_eq!(data["reference"]["bulk"]["what"], json!("rows/s"));
        assert_eq!(data["peers"][1]["e2e"], Value::Null);

        take_conditions(
            &mut data,
            "date_utc=2026-12-04T21:01:11Z\npostgres=15.20\nparams=REPS=3 N_SINGLE=500\n",
        );
        assert_eq!(data["run"]["date_utc"], json!("2026-12-04 21:01:11"));
        assert_eq!(data["run"]["postgres"], json!("PostgreSQL 15.20"));
        assert_eq!(data["run"]["repetitions"], json!(3));
        assert_eq!(
            data["run"]["build"],
            json!("abc"),
            "what the file does not say is kept"
        );
    }

    /// The chart names every peer, escaped, and says where a figure is missing.
    #[test]
    fn the_chart_names_every_peer_and_each_missing_figure() {
        let mut data = results();
        data["peers"][0]["enqueue"] = json!({ "median": 10, "min": 9, "max": 11 });
        let svg = draw(&data).unwrap();
        assert!(svg.starts_with("<svg "));
        assert!(svg.contains(">jobs</text>") && svg.contains("&lt;other&gt;"));
        assert!(svg.contains("no figure"));
        assert!(!svg.contains("<other>"));
    }
}
