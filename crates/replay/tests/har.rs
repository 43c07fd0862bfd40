//! The HAR reader: its rules on small recordings, the bundled pages, and bad input.

use std::path::Path;
use std::time::Duration;

use mpquic_h3_prio::ResourceType;
use mpquic_replay::{har, Discovery, HarError};

#[test]
fn not_json_no_entries_and_a_missing_file_are_clear_errors() {
    let e = har::parse("this is not json", "p").unwrap_err();
    assert!(matches!(e, HarError::Json { .. }), "{e}");
    assert!(e.to_string().contains("is not a HAR file"), "{e}");

    let e = har::parse(r#"{"log": {"entries": []}}"#, "p").unwrap_err();
    assert!(matches!(e, HarError::Empty(_)), "{e}");
    assert_eq!(e.to_string(), r#"page "p" has no network entries"#);
    let e = har::parse(r#"{"log": {}}"#, "p").unwrap_err();
    assert!(matches!(e, HarError::Empty(_)), "{e}");
    // Valid JSON that is not HAR.
    let e = har::parse(r#"[1, 2, 3]"#, "p").unwrap_err();
    assert!(matches!(e, HarError::Json { .. }), "{e}");

    let missing = Path::new("/nonexistent/dir/page.har");
    let e = har::load(missing).unwrap_err();
    assert!(matches!(e, HarError::Io { .. }), "{e}");
    assert!(e.to_string().contains("/nonexistent/dir/page.har"), "{e}");

    let e = har::parse(
        r#"{"log": {"entries": [{"startedDateTime": "noon", "request": {"url": "https://a/"},
            "response": {"bodySize": 5}}]}}"#,
        "p",
    )
    .unwrap_err();
    assert!(matches!(e, HarError::Time { .. }), "{e}");
}

#[test]
fn negative_sizes_fall_through_and_no_size_at_all_is_an_error() {
    let entry = |response: &str| {
        format!(
            r#"{{"log": {{"entries": [{{"startedDateTime": "2020-01-01T00:00:00Z",
                "request": {{"url": "https://a/x"}}, "response": {response}}}]}}}}"#
        )
    };
    // -1 ("unknown") falls through to content.size.
    let page = har::parse(
        &entry(r#"{"status": 200, "bodySize": -1, "_transferSize": -1, "content": {"size": 321}}"#),
        "p",
    )
    .unwrap();
    assert_eq!(page.objects[0].size, 321);
    // Every source zero: an empty body.
    let page = har::parse(
        &entry(r#"{"status": 301, "bodySize": 0, "content": {"size": 0}}"#),
        "p",
    )
    .unwrap();
    assert_eq!(page.objects[0].size, 0);
    // Only negative or missing sizes: the entry never had a size.
    for response in [
        r#"{"status": 200, "bodySize": -1, "content": {"size": -5}}"#,
        r#"{"status": 200}"#,
    ] {
        let e = har::parse(&entry(response), "p").unwrap_err();
        assert!(matches!(e, HarError::NoSize { index: 0, .. }), "{e}");
        assert!(e.to_string().contains("https://a/x"), "{e}");
    }
}

#[test]
fn sizes_beyond_a_gibibyte_are_refused() {
    let text = r#"{"log": {"entries": [{"startedDateTime": "2020-01-01T00:00:00Z",
        "request": {"url": "https://a/huge"}, "response": {"status": 200, "bodySize": 1e30}}]}}"#;
    let e = har::parse(text, "p").unwrap_err();
    assert!(matches!(e, HarError::TooLarge { index: 0, .. }), "{e}");
}

/// WebPageTest writes bodySize and content.size as 0 and keeps the size in the
/// `content-length` header and in `_bytesIn` (a string).
#[test]
fn webpagetest_sizes_come_from_headers_then_bytes_in() {
    let text = r#"{"log": {"entries": [
        {"startedDateTime": "2020-01-01T00:00:00.000Z", "request": {"url": "https://w/"},
         "_bytesIn": "17283",
         "response": {"status": 200, "bodySize": 0, "content": {"size": 0, "mimeType": "text/html"},
                      "headers": [{"name": "Content-Length", "value": "16681"}]}},
        {"startedDateTime": "2020-01-01T00:00:00.100Z", "request": {"url": "https://w/a.png"},
         "_bytesIn": "2657",
         "response": {"status": 200, "bodySize": 0, "content": {"size": 0},
                      "headers": [{"name": "content-length", "value": "bogus"},
                                  {"name": "Content-Type", "value": "image/png"}]}}
      ]}}"#;
    let page = har::parse(text, "wpt").unwrap();
    let sizes: Vec<u64> = page.objects.iter().map(|o| o.size).collect();
    assert_eq!(sizes, [16_681, 2_657]);
    // The content type from the header when content.mimeType is missing.
    assert_eq!(page.objects[1].content_type, "image/png");
}

#[test]
fn rules_for_sizes_priorities_pages_data_urls_and_discovery() {
    let text = r#"{"log": {
      "pages": [{"id": "p1", "title": "t", "pageTimings": {"onContentLoad": 100}},
                {"id": "p2"}],
      "entries": [
        {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.000Z", "time": 40,
         "request": {"url": "https://a/"}, "_priority": "VeryHigh", "_resourceType": "document",
         "response": {"status": 301, "bodySize": -1, "content": {"size": 0}}},
        {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.050Z", "time": 30,
         "request": {"url": "https://b/"}, "_resourceType": "document",
         "response": {"status": 200, "bodySize": 5000, "_transferSize": 5300,
                      "content": {"size": 20000, "mimeType": "text/html"}}},
        {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.060Z",
         "request": {"url": "data:image/png;base64,xyz"},
         "response": {"status": 200, "bodySize": 10, "content": {"size": 10}}},
        {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.070Z",
         "request": {"url": "https://b/app.js"}, "_initiator": "https://b/",
         "response": {"status": 200, "bodySize": 0,
                      "content": {"size": 7000, "mimeType": "application/javascript"}}},
        {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.200Z",
         "request": {"url": "https://b/late.js"}, "_priority": "Low",
         "_initiator": {"type": "script", "url": "https://b/app.js"},
         "response": {"status": 200, "bodySize": 900,
                      "content": {"size": 900, "mimeType": "text/javascript"}}},
        {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.300Z",
         "request": {"url": "https://ads/frame"}, "_resourceType": "document",
         "response": {"status": 200, "bodySize": 800, "content": {"size": 800}}},
        {"pageref": "p2", "startedDateTime": "2020-01-01T00:00:01.000Z",
         "request": {"url": "https://other/"},
         "response": {"status": 200, "bodySize": 1, "content": {"size": 1}}}
      ]}}"#;
    let page = har::parse(text, "p").unwrap();
    assert_eq!(page.name, "t");
    let urls: Vec<_> = page.objects.iter().map(|o| o.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://a/",
            "https://b/",
            "https://b/app.js",
            "https://b/late.js",
            "https://ads/frame"
        ]
    );
    let o = &page.objects;
    // A redirect with no body is empty; _transferSize first; a cached body: content size.
    assert_eq!(
        [o[0].size, o[1].size, o[2].size, o[3].size],
        [0, 5300, 7000, 900]
    );
    // The redirect chain and the main document are critical, the iframe document is not;
    // the script before onContentLoad is, the Low one after it is not.
    let critical: Vec<_> = o.iter().map(|o| o.critical).collect();
    assert_eq!(critical, [true, true, true, false, false]);
    let urgency: Vec<_> = o.iter().map(|o| o.priority.urgency().get()).collect();
    assert_eq!(urgency, [0, 0, 1, 3, 0]);
    assert_eq!(o[3].recorded_start, Duration::from_millis(200));
    assert_eq!(page.main_document, 1);
    // Discovery: the page request, the redirect hop, initiators (a URL, and an object with
    // `url`), and the rest at the recorded time after the main document's completion (80 ms).
    let discovery: Vec<_> = o.iter().map(|o| o.discovery).collect();
    assert_eq!(
        discovery,
        [
            Discovery::Document,
            Discovery::After { parent: 0 },
            Discovery::After { parent: 1 },
            Discovery::After { parent: 2 },
            Discovery::AfterDocument(Duration::from_millis(220)),
        ]
    );
    assert!(page.has_initiator_graph());
    // Keys: the page id, the host and the path.
    assert_eq!(o[2].key, "/p/b/app.js");
    assert_eq!(o[2].content_type, "application/javascript");
}

#[test]
fn the_bundled_pages_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pages");
    let youtube = har::load(&dir.join("youtube.com-2013.har")).unwrap();
    assert_eq!(youtube.objects.len(), 68);
    assert_eq!(youtube.name, "http://www.youtube.com/");
    assert_eq!(youtube.id, "youtube.com-2013");
    // Document, the three stylesheets and the one script before DOMContentLoaded.
    assert_eq!(youtube.critical_count(), 5);
    assert!(!youtube.has_initiator_graph());
    youtube.to_sim_page().validate().unwrap();

    let bing = har::load(&dir.join("bing.com-2024.har")).unwrap();
    assert!(bing.has_initiator_graph());
    // bing.com redirects to cn.bing.com.
    assert_eq!(bing.main_document, 1);
    assert_eq!(bing.objects[1].discovery, Discovery::After { parent: 0 });

    // Firefox recorded aftonbladet.se's redirect with no content type: the page request is
    // a hop of the chain whatever its type.
    let aftonbladet = har::load(&dir.join("aftonbladet.se.har")).unwrap();
    assert_eq!(aftonbladet.main_document, 1);
    assert_ne!(aftonbladet.objects[0].resource_type, ResourceType::Document);
    assert!(aftonbladet.is_redirect(0) && !aftonbladet.is_redirect(1));
}

/// `orphans.har`: a request recorded between two redirect hops, and initiators that are not
/// earlier entries: the next hop waits for the previous hop, the orphans for the main
/// document, with a warning each.
#[test]
fn hops_follow_hops_and_a_missing_or_later_initiator_falls_back_to_the_document() {
    let page = har::parse(include_str!("orphans.har"), "o").unwrap();
    assert_eq!(page.main_document, 2);
    let discovery: Vec<_> = page.objects.iter().map(|o| o.discovery).collect();
    assert_eq!(
        discovery,
        [
            Discovery::Document,
            Discovery::AfterDocument(Duration::ZERO),
            // The hop after the previous hop, not after the favicon recorded between them.
            Discovery::After { parent: 0 },
            Discovery::After { parent: 2 },
            // Its initiator's entry started later: the document instead.
            Discovery::After { parent: 2 },
            Discovery::After { parent: 2 },
        ]
    );
    assert_eq!(page.warnings.len(), 2, "{:?}", page.warnings);
    assert!(page.warnings[0].contains("https://www.a.test/x.js"));
    assert!(page.warnings[0].contains("not-recorded.js"));
    assert!(page.warnings[1].contains("https://www.a.test/early.css"));
    assert!(page.is_redirect(0));
    assert!(!page.is_redirect(1) && !page.is_redirect(2));
    assert_eq!(unreachable(&page), Vec::<usize>::new());
}

/// The objects a client following [`Discovery`] never requests: object 0 first; an object
/// after its parent; a timed one after the main document.
fn unreachable(page: &mpquic_replay::Page) -> Vec<usize> {
    let n = page.objects.len();
    let mut reached = vec![false; n];
    reached[0] = true;
    loop {
        let mut changed = false;
        for i in 0..n {
            let by = match page.objects[i].discovery {
                Discovery::Document => i == 0,
                Discovery::After { parent } => parent < i && reached[parent],
                Discovery::AfterDocument(_) => reached[page.main_document],
            };
            if by && !reached[i] {
                reached[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    (0..n).filter(|&i| !reached[i]).collect()
}

#[test]
fn every_object_of_every_bundled_page_is_reachable_from_the_page_request() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pages");
    let pages = har::load_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert!(
        pages.len() >= 10,
        "the bundled pages are in {}",
        dir.display()
    );
    for page in pages {
        assert_eq!(unreachable(&page), Vec::<usize>::new(), "{}", page.id);
        for w in &page.warnings {
            eprintln!("{}: {w}", page.id);
        }
    }
}
