//! The page builder on every bundled recording, its order check on hand-made browser logs, and
//! its directory on hostile URLs.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use mpquic_browser::metrics::{metrics_script, BEACON_PATH};
use mpquic_browser::site::can_reference;
use mpquic_browser::{ResourceTiming, Site};
use mpquic_replay::{har, Discovery, Page};

fn bundled() -> Vec<Page> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../pages");
    let pages = har::load_all(Path::new(dir)).unwrap();
    assert!(pages.len() >= 10, "the bundled pages are in {dir}");
    pages
}

/// Every double-quoted string in `text` (a backslash escapes the next character), as HTML,
/// JSON and CSS would read it: the candidates for a URL it references.
fn quoted(text: &str) -> Vec<HashSet<String>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('"') {
        let body = &rest[start + 1..];
        let mut end = None;
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let raw = &body[..end];
        let mut readings = HashSet::new();
        readings.insert(
            raw.replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&"),
        );
        if let Ok(json) = serde_json::from_str::<String>(&format!("\"{raw}\"")) {
            readings.insert(json);
        }
        readings.insert(raw.replace("\\\"", "\"").replace("\\\\", "\\"));
        out.push(readings);
        rest = &body[end + 1..];
    }
    out
}

/// For each URL of the site, the indices of the files whose bodies reference it.
fn references(site: &Site) -> HashMap<String, Vec<usize>> {
    let urls: HashSet<&str> = site.files.iter().map(|f| f.url.as_str()).collect();
    let mut found: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, file) in site.files.iter().enumerate() {
        for readings in quoted(&String::from_utf8_lossy(&file.body)) {
            let hits: Vec<&String> = readings
                .iter()
                .filter(|r| urls.contains(r.as_str()))
                .collect();
            assert!(hits.len() <= 1, "{hits:?}");
            if let Some(url) = hits.first() {
                found.entry((*url).clone()).or_default().push(i);
            }
        }
    }
    found
}

#[test]
fn every_bundled_page_references_each_object_once_from_its_parent_or_the_document() {
    for page in bundled() {
        let site = Site::build(&page);
        let id = &page.id;
        let main = page.main_document;
        // One file per object but the redirect hops, the main document first.
        let objects: Vec<usize> = std::iter::once(main)
            .chain((0..page.objects.len()).filter(|&i| i != main && !page.is_redirect(i)))
            .collect();
        assert_eq!(site.files.len(), objects.len(), "{id}");
        let file_of: HashMap<usize, usize> =
            objects.iter().enumerate().map(|(f, &o)| (o, f)).collect();
        for (file, &o) in site.files.iter().zip(&objects) {
            assert_eq!(file.key, page.objects[o].key, "{id}");
        }
        assert_eq!(site.start, site.files[0].url);

        // The metrics script waits for as many resource timing entries as the order check
        // expects the main document's log to list.
        let head = format!(
            "<!doctype html><html><head><meta charset=utf-8><script>{}</script>",
            metrics_script(site.check_order(&[]).expected)
        );
        assert!(site.files[0].body.starts_with(head.as_bytes()), "{id}");
        assert!(site.files[0].content_type.starts_with("text/html"), "{id}");

        let found = references(&site);
        assert!(
            !found.contains_key(&site.start),
            "{id}: the document is referenced"
        );
        for (&o, &f) in &file_of {
            if o == main {
                continue;
            }
            let url = &site.files[f].url;
            let holders = found.get(url).map_or(&[][..], Vec::as_slice);
            assert_eq!(holders.len(), 1, "{id}: {url} is referenced by {holders:?}");
            let holder = holders[0];
            let object = &page.objects[o];
            match object.discovery {
                Discovery::After { parent } if file_of.contains_key(&parent) => {
                    let parent_file = file_of[&parent];
                    let recorded = page.objects[parent].resource_type;
                    assert!(
                        holder == parent_file
                            || (holder == 0 && !can_reference(recorded, object.resource_type)),
                        "{id}: {url} is referenced by file {holder}, its parent is file \
                         {parent_file} ({recorded:?})"
                    );
                }
                _ => assert_eq!(holder, 0, "{id}: {url} is not referenced by the document"),
            }
        }

        // Recorded sizes, unless a warning names the file.
        for (file, &o) in site.files.iter().zip(&objects) {
            let recorded = page.objects[o].size;
            if file.body.len() as u64 != recorded {
                assert!(
                    site.warnings.iter().any(|w| w.contains(file.url.as_str())),
                    "{id}: {} is {} bytes, {recorded} recorded, and no warning says so",
                    file.url,
                    file.body.len()
                );
            }
        }

        // Every file is found by its URL, also as http and with a fragment.
        for file in &site.files {
            assert_eq!(site.file(&file.url).map(|f| &f.key), Some(&file.key));
            let http = file.url.replacen("https://", "http://", 1);
            assert_eq!(
                site.file(&format!("{http}#x")).map(|f| &f.key),
                Some(&file.key)
            );
        }
        let hosts = site.hosts();
        assert!(site.files.iter().all(|f| hosts
            .iter()
            .any(|h| f.url.starts_with(&format!("https://{h}/")))));
    }
}

/// A document with a stylesheet (a font and two background images), a script (a fetch and
/// an inserted image), an iframe (an image inside it) and an image; the image initiates a
/// beacon, which the document references instead.
const SMALL: &str = r#"{"log": {"entries": [
  {"startedDateTime": "2024-01-01T00:00:00.000Z", "time": 10, "request": {"url": "http://a.test/"},
   "_resourceType": "document", "response": {"status": 302, "bodySize": 0}},
  {"startedDateTime": "2024-01-01T00:00:00.010Z", "time": 50, "request": {"url": "https://www.a.test/"},
   "_resourceType": "document", "_priority": "VeryHigh",
   "response": {"status": 200, "bodySize": 30000, "content": {"mimeType": "text/html"}}},
  {"startedDateTime": "2024-01-01T00:00:00.070Z", "request": {"url": "https://www.a.test/s.css"},
   "_initiator": "https://www.a.test/", "_resourceType": "stylesheet",
   "response": {"status": 200, "bodySize": 4000, "content": {"mimeType": "text/css"}}},
  {"startedDateTime": "2024-01-01T00:00:00.071Z", "request": {"url": "https://www.a.test/app.js"},
   "_initiator": "https://www.a.test/", "_resourceType": "script", "_priority": "High",
   "response": {"status": 200, "bodySize": 5000, "content": {"mimeType": "text/javascript"}}},
  {"startedDateTime": "2024-01-01T00:00:00.072Z", "request": {"url": "https://www.a.test/hero.jpg"},
   "_initiator": "https://www.a.test/", "_resourceType": "image",
   "response": {"status": 200, "bodySize": 20000, "content": {"mimeType": "image/jpeg"}}},
  {"startedDateTime": "2024-01-01T00:00:00.073Z", "request": {"url": "https://ads.test/frame?a=1&b=2"},
   "_initiator": "https://www.a.test/", "_resourceType": "document",
   "response": {"status": 200, "bodySize": 3000, "content": {"mimeType": "text/html"}}},
  {"startedDateTime": "2024-01-01T00:00:00.120Z", "request": {"url": "https://fonts.test/f.woff2"},
   "_initiator": "https://www.a.test/s.css", "_resourceType": "font",
   "response": {"status": 200, "bodySize": 9000, "content": {"mimeType": "font/woff2"}}},
  {"startedDateTime": "2024-01-01T00:00:00.121Z", "request": {"url": "https://www.a.test/bg1.png"},
   "_initiator": "https://www.a.test/s.css", "_resourceType": "image",
   "response": {"status": 200, "bodySize": 700, "content": {"mimeType": "image/png"}}},
  {"startedDateTime": "2024-01-01T00:00:00.122Z", "request": {"url": "https://www.a.test/bg2.svg"},
   "_initiator": "https://www.a.test/s.css", "_resourceType": "image",
   "response": {"status": 200, "bodySize": 800, "content": {"mimeType": "image/svg+xml"}}},
  {"startedDateTime": "2024-01-01T00:00:00.130Z", "request": {"url": "https://api.test/data?x=\"1\""},
   "_initiator": "https://www.a.test/app.js", "_resourceType": "fetch",
   "response": {"status": 200, "bodySize": 600, "content": {"mimeType": "application/json"}}},
  {"startedDateTime": "2024-01-01T00:00:00.131Z", "request": {"url": "https://www.a.test/late.png"},
   "_initiator": "https://www.a.test/app.js", "_resourceType": "image",
   "response": {"status": 200, "bodySize": 900, "content": {"mimeType": "image/png"}}},
  {"startedDateTime": "2024-01-01T00:00:00.140Z", "request": {"url": "https://ads.test/pixel.gif"},
   "_initiator": "https://ads.test/frame?a=1&b=2", "_resourceType": "image",
   "response": {"status": 200, "bodySize": 43, "content": {"mimeType": "image/gif"}}},
  {"startedDateTime": "2024-01-01T00:00:00.150Z", "request": {"url": "https://www.a.test/beacon"},
   "_initiator": "https://www.a.test/hero.jpg", "_resourceType": "ping",
   "response": {"status": 204, "bodySize": 0}}
]}}"#;

fn small() -> Site {
    Site::build(&har::parse(SMALL, "small").unwrap())
}

fn timing(url: &str, start_ms: f64, end_ms: f64) -> ResourceTiming {
    ResourceTiming {
        url: url.to_owned(),
        start_ms,
        end_ms,
        initiator: "other".to_owned(),
    }
}

/// The main document's log of a load that follows the site: the files it fetches (not the
/// ones inside the iframe), each after its parent.
fn faithful_log() -> Vec<ResourceTiming> {
    vec![
        timing("https://www.a.test/s.css", 60.0, 80.0),
        timing("https://www.a.test/app.js", 60.1, 90.0),
        timing("https://www.a.test/hero.jpg", 61.0, 120.0),
        timing("https://ads.test/frame?a=1&b=2", 61.5, 100.0),
        timing("https://fonts.test/f.woff2", 85.0, 110.0),
        timing("https://www.a.test/bg1.png", 85.0, 95.0),
        timing("https://www.a.test/bg2.svg", 85.2, 96.0),
        // Chrome's coarsened clock may put the child a fraction of a millisecond early.
        timing("https://api.test/data?x=%221%22", 89.6, 130.0),
        timing("https://www.a.test/late.png", 91.0, 99.0),
        timing("https://www.a.test/beacon", 121.0, 125.0),
        timing(&format!("https://www.a.test{BEACON_PATH}"), 900.0, 901.0),
    ]
}

#[test]
fn a_small_page_is_built_by_the_rules() {
    let site = small();
    assert_eq!(site.start, "https://www.a.test/");
    // The redirect hop is no file.
    assert_eq!(site.files.len(), 12);
    assert!(site.file("http://a.test/").is_none());
    let text = |url: &str| String::from_utf8_lossy(&site.file(url).unwrap().body).into_owned();
    let html = text("https://www.a.test/");
    let body_at = html.find("<body>").unwrap();
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle} in {html}"))
    };
    // Head: the stylesheet and the blocking script; body: the image and the frame, and the
    // beacon the image "initiated".
    assert!(at("<link rel=stylesheet href=\"https://www.a.test/s.css\">") < body_at);
    assert!(at("<script src=\"https://www.a.test/app.js\"></script>") < body_at);
    assert!(at("<img src=\"https://www.a.test/hero.jpg\"") > body_at);
    assert!(at("<iframe src=\"https://ads.test/frame?a=1&amp;b=2\"") > body_at);
    assert!(at("fetch(\"https://www.a.test/beacon\"") > body_at);
    // The elements the stylesheet styles are in the document.
    assert!(html.contains("<p class=f6>") && html.contains("<div class=b2></div>"));

    let css = text("https://www.a.test/s.css");
    assert!(css.contains("@font-face{font-family:f6;src:url(\"https://fonts.test/f.woff2\")}"));
    assert!(css.contains(".f6{font-family:f6}"));
    assert!(css.contains(
        ".b2{background-image:url(\"https://www.a.test/bg1.png\"),url(\"https://www.a.test/bg2.svg\")"
    ));
    let js = text("https://www.a.test/app.js");
    assert!(
        js.contains("get(\"https://api.test/data?x=%221%22\");"),
        "{js}"
    );
    assert!(
        js.contains("image(\"https://www.a.test/late.png\");"),
        "{js}"
    );
    assert!(
        !js.contains("function sheet"),
        "only the helpers it uses: {js}"
    );
    let frame = text("https://ads.test/frame?a=1&b=2");
    assert!(frame.contains("<img src=\"https://ads.test/pixel.gif\""));
    assert!(
        !frame.contains("__mpquic"),
        "only the main document reports"
    );

    // Images: a GIF padded with zeros, an SVG padded with spaces.
    let png = &site.file("https://www.a.test/bg1.png").unwrap().body;
    assert!(png.starts_with(b"GIF89a") && png.ends_with(&[0, 0]) && png.len() == 700);
    let svg = &site.file("https://www.a.test/bg2.svg").unwrap().body;
    assert!(svg.starts_with(b"<svg") && svg.ends_with(b"  ") && svg.len() == 800);
    assert_eq!(
        site.file("https://www.a.test/hero.jpg")
            .unwrap()
            .content_type,
        "image/jpeg"
    );
    // Every body has its recorded size here.
    let page = &site.page;
    for file in &site.files {
        assert_eq!(
            Some(file.body.len() as u64),
            page.object(&file.key).map(|o| o.size)
        );
    }
    assert!(
        site.warnings
            .iter()
            .any(|w| w.contains("cannot reference") && w.contains("https://www.a.test/beacon")),
        "{:?}",
        site.warnings
    );
}

#[test]
fn a_load_in_dependency_order_passes_the_check() {
    let site = small();
    let check = site.check_order(&faithful_log());
    assert!(check.ok(), "{check:?}");
    // Everything but the document and the iframe's image.
    assert_eq!(
        (check.expected, check.requested, check.in_frames),
        (10, 10, 1)
    );
    // font, bg1, bg2 after the stylesheet; the fetch and late.png after the script.
    assert_eq!(check.ordered, 5);
}

#[test]
fn a_child_requested_before_its_parent_ended_is_out_of_order() {
    let site = small();
    let mut log = faithful_log();
    // The font starts 5 ms before the stylesheet's response ended.
    log[4].start_ms = 75.0;
    let check = site.check_order(&log);
    assert!(!check.ok());
    assert_eq!(check.out_of_order.len(), 1, "{check:?}");
    let v = &check.out_of_order[0];
    assert_eq!(v.url, "https://fonts.test/f.woff2");
    assert_eq!(v.parent, "https://www.a.test/s.css");
    assert_eq!((v.start_ms, v.parent_end_ms), (75.0, 80.0));
    assert!(check.missing.is_empty() && check.unexpected.is_empty());
}

#[test]
fn missing_unexpected_and_repeated_requests_are_listed() {
    let site = small();
    let mut log = faithful_log();
    log.retain(|r| !r.url.ends_with("late.png"));
    log.push(timing("https://www.a.test/favicon.ico", 70.0, 71.0));
    log.push(timing("https://www.a.test/hero.jpg", 200.0, 210.0));
    let check = site.check_order(&log);
    assert!(!check.ok());
    assert_eq!(check.missing, ["https://www.a.test/late.png"]);
    assert_eq!(check.unexpected, ["https://www.a.test/favicon.ico"]);
    assert_eq!(check.repeated, ["https://www.a.test/hero.jpg"]);
    assert_eq!((check.expected, check.requested), (10, 9));
    assert!(check.out_of_order.is_empty());
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn hostile_urls_are_written_inside_the_directory() {
    let long = "x".repeat(400);
    let urls = [
        "https://a.test/".to_owned(),
        "https://a.test/../../etc/passwd".to_owned(),
        "https://a.test/%2e%2e/%2E%2E/up".to_owned(),
        "https://a.test/x".to_owned(),
        "https://a.test/x/y.js".to_owned(),
        "https://a.test/x?q=/../../../z".to_owned(),
        "https://a.test//double//slash".to_owned(),
        "https://a.test/index.html".to_owned(),
        "https://manifest.json/".to_owned(),
        "https://a.test/nul%00byte".to_owned(),
        "https://a.test/back\\slash".to_owned(),
        format!("https://a.test/{long}/{long}?{long}"),
        "https://[::1]:8443/v6".to_owned(),
        "wss://a.test/socket".to_owned(),
    ];
    let entries: Vec<String> = urls
        .iter()
        .enumerate()
        .map(|(i, url)| {
            format!(
                r#"{{"startedDateTime": "2024-01-01T00:00:00.{i:03}Z", "request": {{"url": {}}},
                   "response": {{"status": 200, "bodySize": {}, "content": {{"mimeType": "text/html"}}}}}}"#,
                serde_json::to_string(url).unwrap(),
                3000 + i
            )
        })
        .collect();
    let text = format!(r#"{{"log": {{"entries": [{}]}}}}"#, entries.join(","));
    let site = Site::build(&har::parse(&text, "hostile").unwrap());
    assert_eq!(site.files.len(), urls.len());

    let dir = std::env::temp_dir().join(format!(
        "mpquic-site-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    site.write(&dir).unwrap();
    let root = dir.canonicalize().unwrap();
    let written = files_under(&dir);
    for path in &written {
        assert!(
            path.canonicalize().unwrap().starts_with(&root),
            "{}",
            path.display()
        );
    }
    // One file per site file, and the manifest.
    assert_eq!(written.len(), site.files.len() + 1);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let listed = manifest["files"].as_array().unwrap();
    assert_eq!(listed.len(), site.files.len());
    for (entry, file) in listed.iter().zip(&site.files) {
        assert_eq!(entry["url"], file.url.as_str());
        assert_eq!(entry["key"], file.key.as_str());
        assert_eq!(entry["size"], file.body.len());
        let on_disk = std::fs::read(dir.join(entry["file"].as_str().unwrap())).unwrap();
        assert_eq!(on_disk, file.body);
    }
    assert_eq!(manifest["start"], site.start.as_str());
    std::fs::remove_dir_all(&dir).unwrap();
}
