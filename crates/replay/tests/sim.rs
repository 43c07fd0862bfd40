//! Page loads on the simulated driver: complete, deterministic per seed, cheap.

use std::path::Path;
use std::time::Instant;

use mpquic_replay::sim::load_simulated;
use mpquic_replay::{har, Page, RunConfig};

fn page(file: &str) -> Page {
    har::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../pages")
            .join(file),
    )
    .unwrap()
}

#[test]
fn a_simulated_load_completes_and_repeats_exactly() {
    let page = page("youtube.com-2013.har");
    let mut run = RunConfig::new("priority-bucket", "pb-high-lossy").unwrap();
    // As the experiments run: every object requested as soon as its initiator arrived.
    run.load.time_scale = 0.0;
    let started = Instant::now();
    let first = load_simulated(&page, &run, 3).unwrap();
    eprintln!(
        "{}: FRT {:.1} ms, PLT {:.1} ms, {:?} per path, {:?} of wall time",
        first.scheduler,
        first.frt_ms,
        first.plt_ms,
        first.per_path_bytes,
        started.elapsed()
    );
    assert_eq!(first.objects.len(), page.objects.len());
    assert_eq!(first.bytes, page.total_bytes());
    assert_eq!(first.per_path_bytes.len(), 2, "both paths carried the page");
    assert!(first.frt_ms > 0.0 && first.frt_ms <= first.plt_ms);
    assert_eq!(first, load_simulated(&page, &run, 3).unwrap());
}
