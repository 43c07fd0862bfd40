//! Every bundled page replays to completion with every scheduler over loopback relays, and
//! every object's body is exactly its recorded size.

use std::path::Path;
use std::time::{Duration, Instant};

use mpquic_replay::{har, load_page, Page, RunConfig};
use mpquic_sched::SchedulerKind;

fn pages() -> Vec<Page> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pages");
    let pages = har::load_all(&dir).unwrap();
    assert!(
        pages.len() >= 9,
        "the bundled pages are in {}",
        dir.display()
    );
    pages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_with_every_scheduler() {
    let pages = pages();
    for kind in SchedulerKind::ALL {
        for page in &pages {
            let t = Instant::now();
            let mut run = RunConfig::new(kind.name(), "pb-low").unwrap();
            // Sub-resources without an initiator go when the document completes: the
            // recorded times (up to 23 s on youtube) would make this test take minutes.
            run.load.time_scale = 0.0;
            run.load.timeout = Duration::from_secs(60);
            let report = load_page(page, &run)
                .await
                .unwrap_or_else(|e| panic!("{} with {}: {e}", page.id, kind.name()));
            assert_eq!(report.objects.len(), page.objects.len());
            for (o, r) in page.objects.iter().zip(&report.objects) {
                assert_eq!((r.key.as_str(), r.bytes), (o.key.as_str(), o.size));
                assert_eq!(r.status, 200);
            }
            assert_eq!(report.bytes, page.total_bytes());
            assert!(report.frt_ms <= report.plt_ms);
            eprintln!(
                "{:<24} {:<22} frt {:>7.1} plt {:>7.1} wall {:?}",
                page.id,
                kind.name(),
                report.frt_ms,
                report.plt_ms,
                t.elapsed()
            );
        }
    }
}

/// `orphans.har` (a request recorded between two redirect hops, an initiator not in the page,
/// one recorded after its child) loads completely: before the fallback the client stopped
/// with "never requested: its parent is not in the page".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_with_orphans_loads_every_object() {
    let page = har::parse(include_str!("orphans.har"), "o").unwrap();
    let mut run = RunConfig::new("lrf", "pb-high").unwrap();
    run.load.time_scale = 0.0;
    run.load.timeout = Duration::from_secs(30);
    let report = load_page(&page, &run).await.unwrap();
    assert_eq!(report.objects.len(), page.objects.len());
    assert_eq!(report.bytes, page.total_bytes());
}
