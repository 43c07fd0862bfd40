//! `cargo xtask peers page` end to end (needs root): a small page (bing-2013's 10 kB document
//! and 100 kB image, plus a stylesheet and an empty object) loaded by tquic over pb-low's two
//! emulated paths must print one JSON line that reads as `mpquic_replay::LoadReport`, with
//! every object back with its recorded size, 0 < FRT <= PLT, and no namespace left behind.
//! Ignored unless asked for (`cargo test -- --ignored`, as root, with tquic_tools installed
//! under `target/peers/tquic` by `cargo xtask peers bulk --peers tquic`); asked for without
//! them, it fails. `cargo xtask ci` leaves it out: installing tquic takes minutes.

use mpquic_netns::topology::unavailable;
use mpquic_replay::LoadReport;
use std::path::{Path, PathBuf};

mod common;
mod in_testbed;
use common::Scratch;
use in_testbed::{assert_no_namespace_left, run_lab};

const LAB: &str = env!("CARGO_BIN_EXE_lab");

const PAGE: &str = r#"{"log": {"entries": [
  {"startedDateTime": "2013-01-01T00:00:00.000Z", "time": 50, "request": {"url": "https://www.bing.com/"},
   "_resourceType": "document",
   "response": {"status": 200, "bodySize": 10000, "content": {"mimeType": "text/html"}}},
  {"startedDateTime": "2013-01-01T00:00:00.060Z", "request": {"url": "https://www.bing.com/s.css"},
   "_initiator": "https://www.bing.com/",
   "response": {"status": 200, "bodySize": 5000, "content": {"mimeType": "text/css"}}},
  {"startedDateTime": "2013-01-01T00:00:00.070Z", "request": {"url": "https://www.bing.com/az/hprichbg.jpg?w=1"},
   "_initiator": "https://www.bing.com/",
   "response": {"status": 200, "bodySize": 100000, "content": {"mimeType": "image/jpeg"}}},
  {"startedDateTime": "2013-01-01T00:00:00.080Z", "request": {"url": "https://www.bing.com/fd/ls/l?IG=1"},
   "_initiator": "https://www.bing.com/",
   "response": {"status": 204, "bodySize": 0, "content": {"mimeType": "text/plain"}}}
]}}"#;

#[test]
#[ignore = "needs root and tquic_tools installed"]
fn tquic_loads_a_small_page_over_pb_low() {
    assert_eq!(unavailable(), None, "the namespace testbed cannot run here");
    // target/debug/lab -> target
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            Path::new(LAB)
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
        })
        .unwrap_or_default();
    let bin = target.join("peers").join("tquic").join("bin");
    assert!(
        bin.join("tquic_client").is_file() && bin.join("tquic_server").is_file(),
        "tquic_tools is not installed in {} (`cargo xtask peers bulk --peers tquic` installs it)",
        bin.display()
    );
    let dir = Scratch(std::env::temp_dir().join(format!("mq-page-test-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).expect("scratch directory");
    let har = dir.0.join("bing-2013.har");
    std::fs::write(&har, PAGE).expect("write the HAR");
    let har = har.display().to_string();
    let (pid, output) = run_lab([
        "peers",
        "page",
        "--scenario",
        "pb-low",
        "--timeout",
        "60",
        "--har",
        &har,
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);

    // The testbed is gone whatever happened: no namespace of that lab process is left.
    assert_no_namespace_left(pid);

    assert!(
        output.status.success(),
        "peers page failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one JSON line: {stdout}");
    let report: LoadReport = serde_json::from_str(lines[0]).expect("a LoadReport");
    let extra: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON");
    assert_eq!(report.page, "bing-2013");
    assert_eq!(report.scheduler, "tquic minrtt");
    assert_eq!(extra["cc"], "bbr");
    assert_eq!(report.scenario, "pb-low");
    assert_eq!((report.mode.as_str(), report.paths), ("netns", 2));
    assert_eq!(report.objects.len(), 4);
    for o in &report.objects {
        assert_eq!((o.status, o.bytes), (200, o.size), "{o:?}");
        assert!(o.completed_ms >= o.requested_ms, "{o:?}");
    }
    let sizes: Vec<u64> = report.objects.iter().map(|o| o.size).collect();
    assert_eq!(sizes, [10_000, 5_000, 100_000, 0]);
    assert_eq!(report.bytes, 115_000);
    assert!(
        report.frt_ms > 0.0 && report.frt_ms <= report.plt_ms,
        "FRT {} PLT {}",
        report.frt_ms,
        report.plt_ms
    );
    // 115 kB over 50 Mbit/s with 10 ms RTTs: well under a second.
    assert!(report.plt_ms < 2_000.0, "PLT {}", report.plt_ms);
    assert_eq!(report.per_path_bytes.len(), 2);
}
