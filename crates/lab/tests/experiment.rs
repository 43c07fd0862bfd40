//! `cargo xtask experiment` end to end on the smallest matrix: one scenario, the smallest page,
//! two schedulers, one rep, loopback (no root), with the dev-profile page client `cargo test`
//! has built, then checks raw.jsonl, the summary, the report and an SVG, and that a second
//! invocation resumes (runs nothing again). No timing assertions.

use std::process::Command;

mod common;
use common::Scratch;

/// The smallest matrix with `reps` loads per cell, and `extra` arguments.
fn experiment(out: &std::path::Path, reps: &str, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lab"))
        .args([
            "experiment",
            "--scenarios",
            "pb-low",
            "--schedulers",
            "lrf,priority-bucket",
            "--pages",
            "bing-2013",
            "--reps",
            reps,
            "--mode",
            "loopback",
            "--profile",
            "dev",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .output()
        .expect("run the lab")
}

#[test]
fn smallest_matrix_writes_raw_summary_report_and_charts_and_resumes() {
    let out =
        Scratch(std::env::temp_dir().join(format!("mq-experiment-test-{}", std::process::id())));
    let first = experiment(&out.0, "1", &[]);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");

    let raw = std::fs::read_to_string(out.0.join("raw.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = raw
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // lrf, priority-bucket, each path alone and plain quinn (no tquic without the testbed).
    assert_eq!(lines.len(), 5, "{raw}");
    for line in &lines {
        assert_eq!(line["scenario"], "pb-low");
        assert_eq!(line["page"], "bing-2013");
        assert_eq!(line["mode"], "loopback");
        assert!(line["report"]["plt_ms"].as_f64().unwrap() > 0.0, "{line}");
    }
    for path in ["path0", "path1"] {
        assert!(lines.iter().any(|l| l["paths"] == path), "{raw}");
    }
    assert!(lines
        .iter()
        .any(|l| l["scheduler"] == "quinn" && l["report"]["transport"] == "quinn"));

    let summary = std::fs::read_to_string(out.0.join("summary.md")).unwrap();
    assert!(summary.contains("### pb-low / bing-2013"), "{summary}");
    assert!(summary.contains("| priority-bucket | 1 |"), "{summary}");
    assert!(summary.contains("oracle"), "{summary}");
    let report = std::fs::read_to_string(out.0.join("report.md")).unwrap();
    assert!(
        report.contains("- Command: `cargo xtask experiment"),
        "{report}"
    );
    let csv = std::fs::read_to_string(out.0.join("loads.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + lines.len(), "{csv}");
    assert!(
        csv.starts_with("scenario,page,scheduler,cc,paths,rep"),
        "{csv}"
    );
    let svg = std::fs::read_to_string(out.0.join("bars-bing-2013.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(out.0.join("cdf-pb-low-bing-2013.svg").is_file());

    let second = experiment(&out.0, "1", &[]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(stderr.contains("5 already in"), "{stderr}");
    let raw_again = std::fs::read_to_string(out.0.join("raw.jsonl")).unwrap();
    assert_eq!(raw_again, raw);

    // A second rep asked with --report-only: nothing runs, the report is written anyway.
    std::fs::remove_file(out.0.join("report.md")).unwrap();
    let report_only = experiment(&out.0, "2", &["--report-only"]);
    let stderr = String::from_utf8_lossy(&report_only.stderr);
    assert!(report_only.status.success(), "{stderr}");
    assert!(
        stderr.contains("5 run(s) of this matrix are not in raw.jsonl"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(out.0.join("raw.jsonl")).unwrap(),
        raw
    );
    assert!(out.0.join("report.md").is_file());
}

#[test]
fn bad_input_is_a_usage_error_not_a_panic() {
    for args in [
        &["experiment", "--scenarios", "nowhere"][..],
        &["experiment", "--schedulers", "fastest"],
        &["experiment", "--pages", "/no/such/page.har"],
        &["experiment", "--mode", "carrier-pigeon"],
        &["experiment", "--time-scale", "NaN"],
        &["experiment", "--reps", "0"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_lab"))
            .args(args)
            .output()
            .expect("run the lab");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
