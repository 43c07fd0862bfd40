//! Reading a recorded page load (HAR 1.2, as Chrome, Firefox and WebPageTest export it) into a
//! simulator [`Page`].
//!
//! # Rules
//!
//! - Page: the first of `log.pages`; its entries are those whose `pageref` is its `id` (all
//!   entries if the HAR lists no page). `data:` URLs are skipped: nothing crosses the network.
//! - Size: the first positive of the entry's `_transferSize` (Chrome puts it on the entry or on
//!   the response), `response.bodySize`, `response.content.size`, the `content-length` response
//!   header, and WebPageTest's `_bytesIn` (a string there; it counts the headers too, so it comes
//!   last). Missing and negative values
//!   (HAR's -1, "unknown") fall through, and so does 0: a zero transfer with a non-empty body
//!   means the capture served it from cache, and a fresh load would send the body (the decoded
//!   size, an overestimate for compressed types). A response with no body at all still costs
//!   the simulator one byte (the stream's FIN has to travel).
//! - Resource type: `_resourceType`, else the MIME type
//!   ([`ResourceType::classify`], from `mpquic-h3-prio`); the URL is not used.
//! - Urgency: Chrome's `_priority`, converted as Chrome converts it for HTTP/3
//!   ([`ChromePriority::urgency`]: VeryHigh, High, Medium, Low, VeryLow are 0, 1, 2, 3, 4).
//!   Without it, Chrome's default for the resource type ([`Browser::Chrome`]'s table:
//!   document, stylesheet and font 0, blocking script, xhr and fetch 1, manifest 2, async
//!   script, image and media 3, ping 4, anything else 3, RFC 9218's default).
//! - Critical (the critical rendering path, [`CriticalPath`]): the main document and the
//!   redirects leading to it (document entries up to the first 2xx one; later documents are
//!   iframes), every stylesheet, and render-blocking scripts. Whether a script blocks rendering
//!   is [`ScriptEvidence::blocks_rendering`]: High or VeryHigh if Chrome recorded a priority
//!   (parser-blocking scripts in the head); else not if `_initiator_type` says a script
//!   inserted it; else whether it was requested before the page's `onContentLoad`
//!   (DOMContentLoaded waits for parser-blocking scripts); and if that is not recorded either,
//!   every script counts, as in \[PB\].
//! - Start: each entry's `startedDateTime` as an offset from the first entry's, so the replay
//!   keeps the recorded discovery order and browser delays (which include the recording's own
//!   network).

use std::path::Path;
use std::time::Duration;

use mpquic_h3_prio::{
    content_length, Browser, ChromePriority, CriticalPath, ResourceType, ScriptEvidence,
};
use mpquic_sched::sim::{Object, Page, Start};
use mpquic_sched::Urgency;
use serde::Deserialize;
use serde_json::Value;

/// Why a HAR file could not become a page.
#[derive(Debug, thiserror::Error)]
pub enum HarError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a HAR document.
    #[error("{path} is not a HAR file: {source}")]
    Json {
        /// The file.
        path: String,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A `startedDateTime` that is not an ISO 8601 date and time.
    #[error("entry {index}: bad startedDateTime {value:?}")]
    Time {
        /// The entry's index in `log.entries`.
        index: usize,
        /// The value found.
        value: String,
    },
    /// The page has no entry that crosses the network.
    #[error("page {0:?} has no network entries")]
    Empty(String),
}

#[derive(Debug, Deserialize)]
struct Har {
    log: Log,
}

#[derive(Debug, Deserialize)]
struct Log {
    #[serde(default)]
    pages: Vec<HarPage>,
    #[serde(default)]
    entries: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
struct HarPage {
    id: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(rename = "pageTimings", default)]
    timings: Option<PageTimings>,
}

#[derive(Debug, Deserialize)]
struct PageTimings {
    #[serde(rename = "onContentLoad", default)]
    on_content_load: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    pageref: Option<String>,
    #[serde(rename = "startedDateTime")]
    started: String,
    request: Request,
    response: Response,
    #[serde(rename = "_transferSize", default)]
    transfer_size: Option<f64>,
    /// WebPageTest's received bytes, a number written as a string.
    #[serde(rename = "_bytesIn", default)]
    bytes_in: Option<Value>,
    #[serde(rename = "_priority", default)]
    priority: Option<String>,
    #[serde(rename = "_resourceType", default)]
    resource_type: Option<String>,
    /// What started the request: `parser`, `script`, `other`, ... (Chrome, chrome-har).
    #[serde(rename = "_initiator_type", default)]
    initiator_type: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Request {
    url: String,
}

#[derive(Debug, Deserialize)]
struct Response {
    #[serde(default)]
    status: Option<f64>,
    #[serde(rename = "bodySize", default)]
    body_size: Option<f64>,
    #[serde(default)]
    content: Option<Content>,
    #[serde(rename = "_transferSize", default)]
    transfer_size: Option<f64>,
    #[serde(default)]
    headers: Vec<Header>,
}

#[derive(Debug, Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Debug, Deserialize)]
struct Content {
    #[serde(default)]
    size: Option<f64>,
    #[serde(rename = "mimeType", default)]
    mime_type: Option<String>,
}

impl Entry {
    /// The resource type, with a script's `blocking` decided from the evidence the entry
    /// and the page give; `offset_ms` is when it was requested, from the page's first request.
    fn resource_type(&self, offset_ms: f64, on_content_load: Option<f64>) -> ResourceType {
        let mime = self
            .response
            .content
            .as_ref()
            .and_then(|c| c.mime_type.as_deref());
        let ty = ResourceType::classify(self.resource_type.as_deref(), mime, None);
        if !matches!(ty, ResourceType::Script { .. }) {
            return ty;
        }
        ScriptEvidence {
            async_or_defer: None,
            chrome_priority: self.chrome_priority(),
            script_inserted: self
                .initiator_type
                .as_deref()
                .map(|t| t.eq_ignore_ascii_case("script")),
            before_dom_content_loaded: on_content_load.map(|dcl| offset_ms < dcl),
        }
        .resource_type()
    }

    fn size(&self) -> u64 {
        let content = self.response.content.as_ref().and_then(|c| c.size);
        let content_length = content_length(
            self.response
                .headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
                .map(|h| h.value.as_str()),
        )
        .map(|n| n as f64);
        let bytes_in = match &self.bytes_in {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        [
            self.transfer_size.or(self.response.transfer_size),
            self.response.body_size,
            content,
            content_length,
            bytes_in,
        ]
        .into_iter()
        .flatten()
        .find(|v| v.is_finite() && *v > 0.0)
        .map_or(1, |v| (v.ceil() as u64).max(1))
    }

    fn chrome_priority(&self) -> Option<ChromePriority> {
        self.priority.as_deref().and_then(ChromePriority::parse)
    }

    fn urgency(&self, ty: ResourceType) -> Urgency {
        let value = self.chrome_priority().map_or_else(
            || Browser::Chrome.default_priority(ty).urgency(),
            ChromePriority::urgency,
        );
        Urgency::new(value).unwrap_or_default()
    }

    fn status(&self) -> Option<u16> {
        self.response
            .status
            .filter(|s| s.is_finite() && (0.0..=f64::from(u16::MAX)).contains(s))
            .map(|s| s as u16)
    }
}

/// Reads `path` and converts its first page.
pub fn load(path: &Path) -> Result<Page, HarError> {
    let text = std::fs::read_to_string(path).map_err(|source| HarError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let har: Har = serde_json::from_str(&text).map_err(|source| HarError::Json {
        path: path.display().to_string(),
        source,
    })?;
    let fallback = path
        .file_stem()
        .map_or_else(|| "page".to_owned(), |s| s.to_string_lossy().into_owned());
    convert(har, fallback)
}

/// Parses HAR JSON text (for tests and callers that already hold the text).
#[cfg(test)]
fn parse(text: &str) -> Result<Page, HarError> {
    let har: Har = serde_json::from_str(text).map_err(|source| HarError::Json {
        path: "<text>".into(),
        source,
    })?;
    convert(har, "page".into())
}

fn convert(har: Har, fallback_name: String) -> Result<Page, HarError> {
    let page_info = har.log.pages.first();
    let name = page_info
        .and_then(|p| p.title.clone())
        .filter(|t| !t.is_empty())
        .unwrap_or(fallback_name);
    let on_content_load = page_info
        .and_then(|p| p.timings.as_ref())
        .and_then(|t| t.on_content_load)
        .filter(|t| t.is_finite() && *t > 0.0);

    let mut entries = Vec::new();
    for (index, entry) in har.log.entries.into_iter().enumerate() {
        if let Some(page) = page_info {
            if entry.pageref.as_deref() != Some(page.id.as_str()) {
                continue;
            }
        }
        if entry
            .request
            .url
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("data:"))
        {
            continue;
        }
        let started = parse_time_ms(&entry.started).ok_or_else(|| HarError::Time {
            index,
            value: entry.started.clone(),
        })?;
        entries.push((started, entry));
    }
    // Stable: entries recorded at the same millisecond keep their order.
    entries.sort_by(|a, b| a.0.total_cmp(&b.0));
    let Some(first) = entries.first().map(|e| e.0) else {
        return Err(HarError::Empty(name));
    };

    let mut page = Page::new(name);
    let mut critical_path = CriticalPath::new();
    for (started, entry) in &entries {
        let offset_ms = started - first;
        let ty = entry.resource_type(offset_ms, on_content_load);
        let critical = critical_path.is_critical(ty, entry.status());
        let start = Duration::try_from_secs_f64(offset_ms.max(0.0) / 1e3).unwrap_or_default();
        page.push(
            Object::new(entry.request.url.clone(), entry.size())
                .with_urgency(entry.urgency(ty))
                .with_critical(critical)
                .with_start(Start::At(start)),
        );
    }
    Ok(page)
}

/// Milliseconds since the Unix epoch of an ISO 8601 date and time such as
/// `2013-07-04T15:41:49.145Z` or `2015-08-29T14:43:42.037+00:00`.
fn parse_time_ms(text: &str) -> Option<f64> {
    let (date, rest) = text.split_once('T')?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: i64 = date_parts.next()?.parse().ok()?;
    let day: i64 = date_parts.next()?.parse().ok()?;
    // The time ends where the zone begins: 'Z', '+' or '-'.
    let zone_at = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (time, zone) = rest.split_at(zone_at);
    let mut time_parts = time.splitn(3, ':');
    let hour: f64 = time_parts.next()?.parse().ok()?;
    let minute: f64 = time_parts.next()?.parse().ok()?;
    let second: f64 = time_parts.next().unwrap_or("0").parse().ok()?;
    let offset_minutes = match zone {
        "" | "Z" | "z" => 0.0,
        _ => {
            let sign = if zone.starts_with('-') { -1.0 } else { 1.0 };
            let digits = zone.get(1..)?.replace(':', "");
            let hours: f64 = digits.get(..2)?.parse().ok()?;
            let minutes: f64 = digits
                .get(2..)
                .filter(|m| !m.is_empty())
                .unwrap_or("0")
                .parse()
                .ok()?;
            sign * (hours * 60.0 + minutes)
        }
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month, day) as f64;
    let seconds = days * 86_400.0 + hour * 3_600.0 + minute * 60.0 + second - offset_minutes * 60.0;
    Some(seconds * 1e3)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_with_zones() {
        assert_eq!(parse_time_ms("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_time_ms("1970-01-02T00:00:01.5Z"), Some(86_401_500.0));
        assert_eq!(
            parse_time_ms("2015-08-29T14:43:42.037+02:00"),
            parse_time_ms("2015-08-29T12:43:42.037Z")
        );
        let a = parse_time_ms("2013-07-04T15:41:49.145Z").unwrap();
        let b = parse_time_ms("2013-07-04T15:41:49.838Z").unwrap();
        assert!((b - a - 693.0).abs() < 1e-6);
        assert_eq!(parse_time_ms("yesterday"), None);
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
             "response": {"status": 200, "bodySize": 0, "content": {"size": 0, "mimeType": "image/png"},
                          "headers": [{"name": "content-length", "value": "bogus"}]}}
          ]}}"#;
        let page = parse(text).unwrap();
        let sizes: Vec<u64> = page.objects.iter().map(|o| o.size).collect();
        assert_eq!(sizes, [16_681, 2_657]);
    }

    #[test]
    fn rules_for_sizes_priorities_pages_and_data_urls() {
        let text = r#"{"log": {
          "pages": [{"id": "p1", "title": "t", "pageTimings": {"onContentLoad": 100}},
                    {"id": "p2"}],
          "entries": [
            {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.000Z",
             "request": {"url": "https://a/"}, "_priority": "VeryHigh", "_resourceType": "document",
             "response": {"status": 301, "bodySize": -1, "content": {"size": 0}}},
            {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.050Z",
             "request": {"url": "https://b/"}, "_resourceType": "document",
             "response": {"status": 200, "bodySize": 5000, "_transferSize": 5300,
                          "content": {"size": 20000, "mimeType": "text/html"}}},
            {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.060Z",
             "request": {"url": "data:image/png;base64,xyz"},
             "response": {"status": 200, "bodySize": 10, "content": {"size": 10}}},
            {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.070Z",
             "request": {"url": "https://b/app.js"},
             "response": {"status": 200, "bodySize": 0,
                          "content": {"size": 7000, "mimeType": "application/javascript"}}},
            {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.200Z",
             "request": {"url": "https://b/late.js"}, "_priority": "Low",
             "response": {"status": 200, "bodySize": 900,
                          "content": {"size": 900, "mimeType": "text/javascript"}}},
            {"pageref": "p1", "startedDateTime": "2020-01-01T00:00:00.300Z",
             "request": {"url": "https://ads/frame"}, "_resourceType": "document",
             "response": {"status": 200, "bodySize": 800, "content": {"size": 800}}},
            {"pageref": "p2", "startedDateTime": "2020-01-01T00:00:01.000Z",
             "request": {"url": "https://other/"},
             "response": {"status": 200, "bodySize": 1, "content": {"size": 1}}}
          ]}}"#;
        let page = parse(text).unwrap();
        let names: Vec<_> = page.objects.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "https://a/",
                "https://b/",
                "https://b/app.js",
                "https://b/late.js",
                "https://ads/frame"
            ]
        );
        let o = &page.objects;
        // Redirect with no body: one byte; _transferSize first; a cached body: content size.
        assert_eq!(
            [o[0].size, o[1].size, o[2].size, o[3].size],
            [1, 5300, 7000, 900]
        );
        // The redirect chain and the main document are critical, the iframe document is not;
        // the script before onContentLoad is, the Low one after it is not.
        let critical: Vec<_> = o.iter().map(|o| o.critical).collect();
        assert_eq!(critical, [true, true, true, false, false]);
        let urgency: Vec<_> = o.iter().map(|o| o.urgency.get()).collect();
        assert_eq!(urgency, [0, 0, 1, 3, 0]);
        assert_eq!(o[3].start, Start::At(Duration::from_millis(200)));
    }

    #[test]
    fn the_bundled_youtube_recording_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pages/youtube.com-2013.har");
        let page = load(&path).unwrap();
        assert_eq!(page.objects.len(), 68);
        assert_eq!(page.name, "http://www.youtube.com/");
        page.validate().unwrap();
        // Document, the three stylesheets and the one script before DOMContentLoaded.
        assert_eq!(page.critical_count(), 5);
    }
}
