//! The plain-quinn baseline and single-path mpquic: the same page, every byte, one path.

use std::path::Path;
use std::time::Duration;

use mpquic_replay::{har, load_page, LoadReport, Page, RunConfig, Transport};

fn page() -> Page {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pages/youtube.com-2013.har");
    har::load(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn run(scheduler: &str, scenario: &str) -> RunConfig {
    let mut run = RunConfig::new(scheduler, scenario).unwrap();
    run.load.time_scale = 0.0;
    run.load.timeout = Duration::from_secs(60);
    run
}

fn assert_complete(page: &Page, report: &LoadReport) {
    assert_eq!(report.objects.len(), page.objects.len());
    for (o, r) in page.objects.iter().zip(&report.objects) {
        assert_eq!((r.key.as_str(), r.bytes), (o.key.as_str(), o.size));
        assert_eq!(r.status, 200);
    }
    assert_eq!(report.bytes, page.total_bytes());
    assert!(report.frt_ms > 0.0 && report.frt_ms <= report.plt_ms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_quinn_loads_every_byte_over_one_path() {
    let page = page();
    let mut run = run("priority-bucket", "pb-high");
    run.transport = Transport::Quinn;
    let report = load_page(&page, &run).await.unwrap();
    assert_complete(&page, &report);
    assert_eq!(report.transport, "quinn");
    assert_eq!(report.scheduler, "quinn");
    assert_eq!(report.paths, 1);
    assert_eq!(
        (report.scenario.as_str(), report.mode.as_str()),
        ("pb-high", "loopback")
    );
    eprintln!("quinn frt {:.1} plt {:.1}", report.frt_ms, report.plt_ms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_path_mpquic_on_path_one() {
    let page = page();
    let mut run = run("lrf", "pb-high");
    run.path = Some(1);
    let report = load_page(&page, &run).await.unwrap();
    assert_complete(&page, &report);
    assert_eq!(report.transport, "mpquic");
    assert_eq!(report.scheduler, "lrf");
    assert_eq!(report.paths, 1);
    assert_eq!(
        report.per_path_bytes.len(),
        1,
        "{:?}",
        report.per_path_bytes
    );
    let on_path: u64 = report.per_path_bytes.values().sum();
    assert!(on_path >= page.total_bytes(), "{on_path} bytes on the path");
    // The loopback relays count drops for the scenario path the load used, by its index.
    assert_eq!(
        report.link_drops.keys().copied().collect::<Vec<_>>(),
        [1],
        "{:?}",
        report.link_drops
    );
    eprintln!(
        "mpquic path 1 frt {:.1} plt {:.1}",
        report.frt_ms, report.plt_ms
    );
}

#[test]
fn reports_without_transport_are_mpquic() {
    let line = r#"{"page":"p","scheduler":"lrf","scenario":"pb-low","mode":"loopback","paths":2,
        "frt_ms":1.0,"plt_ms":2.0,"bytes":3,"per_path_bytes":{"0":3},"objects":[]}"#;
    let report: LoadReport = serde_json::from_str(line).unwrap();
    assert_eq!(report.transport, "mpquic");
    assert!(report.link_drops.is_empty());
    let again: LoadReport = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
    assert_eq!(again, report);
}
