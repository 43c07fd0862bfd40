//! Page loads on the simulated driver: complete, deterministic per seed, cheap.

use std::path::Path;
use std::time::Instant;

use mpquic_replay::sim::{load_simulated, load_simulated_with, HostTime};
use mpquic_replay::{har, Discovery, Page, RequestOrder, RunConfig};

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

/// Item 4 of the re-injection issue: a 1 kB script of low urgency that leads through two more
/// scripts to critical CSS, requested after 960 kB of images of its own urgency
/// (pages/inversion-synthetic.har). Strict buckets send it after every image. With the
/// server's dependency hint it goes in the CSS's bucket, arrives before the images have,
/// and the page paints sooner than without the hint. (Against lrf and SEC on the testbed:
/// docs/results/2026-11-24-inversion.)
#[test]
fn priority_bucket_does_not_starve_a_small_stream_that_leads_to_critical_css() {
    let page = page("inversion-synthetic.har");
    let index = |name: &str| {
        page.objects
            .iter()
            .position(|o| o.url.ends_with(name))
            .unwrap()
    };
    let loader = index("js/loader.js");
    let last_image = |report: &mpquic_replay::LoadReport| {
        report
            .objects
            .iter()
            .filter(|o| o.url.contains("/img/"))
            .map(|o| o.completed_ms)
            .fold(0.0, f64::max)
    };
    let (mut with_hints, mut without_hints) = (Vec::new(), Vec::new());
    for hints in [true, false] {
        let mut run = RunConfig::new("priority-bucket", "pb-high").unwrap();
        run.load.time_scale = 0.0;
        run.dependency_hints = hints;
        for seed in 1..=3 {
            let report = load_simulated(&page, &run, seed).unwrap();
            let (images_done, loaded) = (last_image(&report), report.objects[loader].completed_ms);
            eprintln!(
                "hints={hints} seed {seed}: loader.js at {loaded:.1} ms, images done at {images_done:.1}, FRT {:.1}",
                report.frt_ms
            );
            if hints {
                assert!(loaded < images_done, "the script waited for the images");
                with_hints.push(report.frt_ms);
            } else {
                without_hints.push(report.frt_ms);
            }
        }
    }
    for (with, without) in with_hints.iter().zip(&without_hints) {
        assert!(
            with < without,
            "FRT {with:.1} ms with the hint, {without:.1} without"
        );
    }
}

/// All at once, every object is requested at the start, none after another has arrived:
/// wikipedia.org's document comes only after a redirect, so loaded as a browser does, its
/// sub-resources are requested two round trips in; all at once they are not.
#[test]
fn all_at_once_requests_every_object_at_the_start() {
    let page = page("wikipedia.org.har");
    let mut run = RunConfig::new("priority-bucket", "pb-low").unwrap();
    run.load.time_scale = 0.0;
    let discovered = load_simulated(&page, &run, 1).unwrap();
    run.load.request_order = RequestOrder::AllAtOnce;
    let at_once = load_simulated(&page, &run, 1).unwrap();
    assert_eq!(at_once.bytes, page.total_bytes());
    assert!(at_once.objects.iter().all(|o| o.requested_ms == 0.0));
    let last_request = |r: &mpquic_replay::LoadReport| {
        r.objects.iter().map(|o| o.requested_ms).fold(0.0, f64::max)
    };
    assert!(last_request(&discovered) > 0.0);
    assert!(
        at_once.plt_ms < discovered.plt_ms,
        "{} ms all at once, {} ms as discovered",
        at_once.plt_ms,
        discovered.plt_ms
    );
}

/// bing.com-2024 ends with a chain of requests: `widget-initializer.js` (9.6 kB, urgency 1)
/// leads to `experience.js` (86 kB, urgency 3), which leads to 17 more scripts. With the
/// server's hint of what each response leads to, PriorityBucket sends the chain's links early
/// (`PriorityBucket::chain` in crates/sched/src/priority_bucket/mod.rs) and loads the page no
/// later than lrf (before that rule: 664 ms against lrf's 637), painting well before it.
#[test]
fn priority_bucket_sends_a_chain_of_requests_early() {
    let page = page("bing.com-2024.har");
    let load = |scheduler: &str| {
        let mut run = RunConfig::new(scheduler, "pb-high").unwrap();
        run.load.time_scale = 0.0;
        let reports: Vec<_> = (1..=3)
            .map(|seed| load_simulated(&page, &run, seed).unwrap())
            .collect();
        let mean = |f: fn(&mpquic_replay::LoadReport) -> f64| {
            reports.iter().map(f).sum::<f64>() / reports.len() as f64
        };
        (mean(|r| r.frt_ms), mean(|r| r.plt_ms))
    };
    let (frt, plt) = load("priority-bucket");
    let (lrf_frt, lrf_plt) = load("lrf");
    eprintln!("priority-bucket FRT {frt:.1} / PLT {plt:.1} ms, lrf {lrf_frt:.1} / {lrf_plt:.1}");
    assert!(plt <= lrf_plt, "PLT {plt:.1} ms, lrf's {lrf_plt:.1}");
    assert!(frt < lrf_frt, "FRT {frt:.1} ms, lrf's {lrf_frt:.1}");
}

/// The simulated hosts take the time traced on the testbed per round of requests
/// (`HostTime::TESTBED`): an object's requests leave `client_round` after it arrives, plus
/// `client_per_request` for each request of the round, and its server answers each request
/// `server_response` after reading it; with `HostTime::NONE` at once. The page request itself
/// leaves at time zero.
#[test]
fn each_round_of_requests_waits_for_the_hosts_time() {
    let page = page("bing.com-2024.har");
    let mut run = RunConfig::new("priority-bucket", "pb-high").unwrap();
    run.load.time_scale = 0.0;
    let none = load_simulated_with(&page, &run, 1, HostTime::NONE).unwrap();
    let host = HostTime::TESTBED;
    let testbed = load_simulated_with(&page, &run, 1, host).unwrap();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut checked = 0;
    for (i, object) in page.objects.iter().enumerate() {
        let Discovery::After { parent } = object.discovery else {
            continue;
        };
        let after = |r: &mpquic_replay::LoadReport| {
            r.objects[i].requested_ms - r.objects[parent].completed_ms
        };
        assert!(
            after(&none).abs() < 1e-9,
            "{}: {}",
            object.url,
            after(&none)
        );
        // At least the round's own time; at most that with every object of the page in it.
        let least = ms(host.client_round + host.client_per_request);
        let most = least + ms(host.client_per_request) * page.objects.len() as f64;
        assert!(
            (least - 1e-9..=most).contains(&after(&testbed)),
            "{}: requested {} ms after its initiator",
            object.url,
            after(&testbed)
        );
        checked += 1;
    }
    assert!(checked > 10, "{checked} objects started by others");
    assert_eq!(testbed.objects[0].requested_ms, 0.0);
    // The first paint waits for several rounds of requests (five deep on this page), each
    // slower by the hosts' time.
    assert!(
        testbed.frt_ms > none.frt_ms + 2.0 * ms(host.client_round + host.server_response),
        "FRT {} ms with the hosts' time, {} without",
        testbed.frt_ms,
        none.frt_ms
    );
}
