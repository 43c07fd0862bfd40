//! Real page loads in headless Chromium through the proxy. They need a Chromium binary
//! (Debian's `chromium`; `.ci/run` installs it), so they are ignored by default; `cargo xtask
//! ci` runs them with the other ignored tests, and says so loudly where it found no Chromium.

use std::sync::Arc;

use mpquic_browser::{load_in_browser, BrowserOptions, Chromium, Site};
use mpquic_replay::{har, RunConfig, Transport};

/// A document, its stylesheet and an image on another host.
const SMALL_PAGE: &str = r#"{"log": {"pages": [{"id": "p", "title": "A small page"}], "entries": [
  {"pageref": "p", "startedDateTime": "2024-01-01T00:00:00.000Z", "time": 50, "request": {"url": "https://a.test/"},
   "_resourceType": "document",
   "response": {"status": 200, "bodySize": 6000, "content": {"mimeType": "text/html"}}},
  {"pageref": "p", "startedDateTime": "2024-01-01T00:00:00.060Z", "request": {"url": "https://a.test/s.css"},
   "_initiator": "https://a.test/", "_resourceType": "stylesheet",
   "response": {"status": 200, "bodySize": 5000, "content": {"mimeType": "text/css"}}},
  {"pageref": "p", "startedDateTime": "2024-01-01T00:00:00.070Z", "request": {"url": "http://img.a.test/i.png"},
   "_initiator": "https://a.test/", "_resourceType": "image",
   "response": {"status": 200, "bodySize": 30000, "content": {"mimeType": "image/png"}}}
]}}"#;

fn small_site() -> Arc<Site> {
    let page = har::parse(SMALL_PAGE, "small").unwrap();
    Arc::new(Site::build(&page))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn chromium_reports_the_first_contentful_paint_of_a_page_over_mpquic() {
    let chromium = Chromium::find().expect("a Chromium binary");
    let site = small_site();
    let run = RunConfig::new("priority-bucket", "pb-high").unwrap();
    let png = std::env::temp_dir().join(format!("mpquic-small-{}.png", std::process::id()));
    let options = BrowserOptions {
        screenshot: Some(png.clone()),
        ..BrowserOptions::default()
    };
    let load = load_in_browser(&site, &run, &chromium, &options).await;
    let shot = std::fs::metadata(&png).map(|m| m.len());
    let _ = std::fs::remove_file(&png);
    let load = load.unwrap();
    let paint = &load.paint;
    let fcp = paint.times.fcp_ms.expect("the browser reported FCP");
    let plt = paint.times.load_ms.expect("the browser reported load");
    assert!(fcp > 0.0 && plt > 0.0, "{paint:?}");
    // Every object came through the proxy, over both paths.
    assert_eq!(load.proxy.forwarded, 3, "{:?}", load.proxy);
    assert!(
        load.proxy.unknown.is_empty() && load.proxy.failed.is_empty(),
        "{:?}",
        load.proxy
    );
    let urls: Vec<&str> = paint.resources.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls, ["https://a.test/s.css", "https://img.a.test/i.png"]);
    assert_eq!(load.per_path_bytes.len(), 2, "{:?}", load.per_path_bytes);
    assert!(shot.expect("a screenshot") > 0);
    eprintln!(
        "requests with the browser's own priority header: {}",
        load.proxy.browser_priority
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn chromium_loads_the_same_page_over_plain_quinn() {
    let chromium = Chromium::find().expect("a Chromium binary");
    let site = small_site();
    let mut run = RunConfig::new("priority-bucket", "pb-high").unwrap();
    run.transport = Transport::Quinn;
    let load = load_in_browser(&site, &run, &chromium, &BrowserOptions::default())
        .await
        .unwrap();
    assert_eq!(load.transport, "quinn");
    assert!(load.paint.times.fcp_ms.is_some(), "{:?}", load.paint);
    assert_eq!(load.proxy.forwarded, 3, "{:?}", load.proxy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn chromium_requests_a_recorded_page_in_the_recording_s_dependency_order() {
    let chromium = Chromium::find().expect("a Chromium binary");
    // google.com's home page as Chrome recorded it: 20 objects, 13 with recorded initiators.
    let har = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../pages/google.com-2021.har"
    );
    let page = har::load(std::path::Path::new(har)).unwrap();
    let site = Arc::new(Site::build(&page));
    let run = RunConfig::new("priority-bucket", "pb-high").unwrap();
    let load = load_in_browser(&site, &run, &chromium, &BrowserOptions::default())
        .await
        .unwrap();
    let order = site.check_order(&load.paint.resources);
    assert!(order.ok(), "{order:#?}\n{:?}", load.proxy);
    // The check compared real dependencies, not an empty log.
    assert_eq!(order.requested, order.expected, "{order:#?}");
    assert!(order.ordered > 0, "{order:#?}");
    assert!(load.proxy.unknown.is_empty(), "{:?}", load.proxy.unknown);
}

/// Chromium's own temporary directories (`org.chromium.Chromium.*`) in the system's.
fn chromium_temp_dirs() -> std::collections::BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|entry| Some(entry.ok()?.file_name()))
        .filter(|name| name.to_string_lossy().starts_with("org.chromium.Chromium."))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn a_load_leaves_no_directory_of_chromium_s_behind() {
    let chromium = Chromium::find().expect("a Chromium binary");
    let before = chromium_temp_dirs();
    let run = RunConfig::new("priority-bucket", "pb-high").unwrap();
    load_in_browser(&small_site(), &run, &chromium, &BrowserOptions::default())
        .await
        .unwrap();
    let left: Vec<_> = chromium_temp_dirs().difference(&before).cloned().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
