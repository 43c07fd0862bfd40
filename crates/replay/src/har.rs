//! Reading a recorded page load (HAR 1.2, as Chrome, Firefox, chrome-har and WebPageTest export
//! it) into a [`Page`].
//!
//! # Rules
//!
//! - Page: the first of `log.pages`; its entries are those whose `pageref` is its `id` (all
//!   entries if the HAR lists no page). `data:` URLs are skipped: nothing crosses the network.
//!   Entries are ordered by `startedDateTime` (stable for equal times); the first is the page
//!   request.
//! - Size: the first positive of the entry's `_transferSize` (Chrome puts it on the entry or on
//!   the response), `response.bodySize`, `response.content.size`, the `content-length` response
//!   header, and WebPageTest's `_bytesIn` (a string there; it counts the headers too, so it comes
//!   last). Negative values (HAR's -1, "unknown") and missing ones fall through, and so does 0:
//!   a zero transfer with a non-empty body means the capture served it from cache, and a fresh
//!   load would send the body (the decoded size, an overestimate for compressed types). An
//!   entry whose sources are all 0 has an empty body; one with no source at all, or only
//!   negative ones, is an error ([`HarError::NoSize`]): its size was never recorded. So is
//!   one above [`MAX_OBJECT_BYTES`] (1 GiB), and a page of more than [`MAX_OBJECTS`] entries.
//! - Content type: `response.content.mimeType`, else the `content-type` header, else
//!   `application/octet-stream`.
//! - Resource type: `_resourceType`, else the MIME type
//!   ([`ResourceType::classify`], from `mpquic-h3-prio`); the URL is not used.
//! - Priority: Chrome's `_priority`, converted as Chrome converts it for HTTP/3
//!   ([`ChromePriority::urgency`]: VeryHigh, High, Medium, Low, VeryLow are 0, 1, 2, 3, 4),
//!   with Chrome's incremental flag for the type; without it, Chrome's default for the resource
//!   type ([`Browser::Chrome`]'s table: document, stylesheet and font 0, blocking script, xhr
//!   and fetch 1, manifest 2, async script, image and media 3, ping 4, anything else 3).
//! - Critical (the critical rendering path, [`CriticalPath`]): the main document and the
//!   redirects leading to it (document entries up to the first 2xx one; later documents are
//!   iframes), every stylesheet, and render-blocking scripts. Whether a script blocks rendering
//!   is [`ScriptEvidence::blocks_rendering`]: High or VeryHigh if Chrome recorded a priority;
//!   else not if `_initiator_type` says a script inserted it; else whether it was requested
//!   before the page's `onContentLoad`; and if that is not recorded either, every script
//!   counts, as in \[PB\].
//! - Discovery ([`Discovery`]): the page request first; the redirect chain hop by hop (each
//!   document of the chain after the previous one, not after whatever entry was recorded
//!   between them); then an object whose recorded initiator (`_initiator` as a URL or as an
//!   object with `url`, or `initiator.url`) is the URL of an earlier entry is requested when
//!   that entry completes; every other object at its recorded start relative to the main
//!   document's recorded completion (`startedDateTime` + `time`).
//! - Missing parent: an object whose recorded initiator is not an earlier entry (it is not in
//!   the page, or its entry started later) falls back to the main document: requested when
//!   the main document completes, or, if it started before the main document, at its recorded
//!   time as if it had no initiator. Each fallback is a line in [`Page::warnings`]; it never
//!   makes the page an error. With these rules every object's chain of parents reaches the
//!   page request, so a client following [`Discovery`] requests every object.
//!
//! \[PB\]: PriorityBucket (Shi, Zhang, Liu; e-Energy 2020).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use mpquic_h3_prio::{
    content_length, Browser, ChromePriority, CriticalPath, Priority, ResourceType, ScriptEvidence,
};
use serde::Deserialize;
use serde_json::Value;

use crate::page::{Discovery, Keys, Page, PageObject};
use crate::time::parse_time_ms;
pub use mpquic_sched::sim::{MAX_OBJECTS, MAX_OBJECT_BYTES};

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
    #[error("{page}: entry {index}: bad startedDateTime {value:?}")]
    Time {
        /// The page.
        page: String,
        /// The entry's index in `log.entries`.
        index: usize,
        /// The value found.
        value: String,
    },
    /// An entry with no usable size: every size field missing or negative.
    #[error(
        "{page}: entry {index} ({url}): no size recorded (every size field is missing or negative)"
    )]
    NoSize {
        /// The page.
        page: String,
        /// The entry's index in `log.entries`.
        index: usize,
        /// Its URL.
        url: String,
    },
    /// An entry larger than [`MAX_OBJECT_BYTES`].
    #[error("{page}: entry {index} ({url}): {size} bytes, more than the {MAX_OBJECT_BYTES} a replay serves")]
    TooLarge {
        /// The page.
        page: String,
        /// The entry's index in `log.entries`.
        index: usize,
        /// Its URL.
        url: String,
        /// The recorded size.
        size: u64,
    },
    /// More entries than [`MAX_OBJECTS`].
    #[error("{page}: more than {MAX_OBJECTS} network entries")]
    TooMany {
        /// The page.
        page: String,
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
    /// Total time of the request in milliseconds.
    #[serde(default)]
    time: Option<f64>,
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
    /// The initiator's URL (chrome-har, WebPageTest) or an object with a `url` (DevTools).
    #[serde(rename = "_initiator", default)]
    initiator: Option<Value>,
    /// The standard-looking spelling some exporters use.
    #[serde(rename = "initiator", default)]
    initiator_plain: Option<Value>,
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
    fn header<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.response
            .headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_str())
    }

    fn mime(&self) -> Option<&str> {
        self.response
            .content
            .as_ref()
            .and_then(|c| c.mime_type.as_deref())
            .filter(|m| !m.trim().is_empty())
            .or_else(|| self.header("content-type").next())
    }

    /// The resource type, with a script's `blocking` decided from the evidence the entry
    /// and the page give; `offset_ms` is when it was requested, from the page's first request.
    fn resource_type(&self, offset_ms: f64, on_content_load: Option<f64>) -> ResourceType {
        let ty = ResourceType::classify(self.resource_type.as_deref(), self.mime(), None);
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

    /// The first positive size, else 0 if some source said 0, else `None`.
    fn size(&self) -> Option<u64> {
        let content = self.response.content.as_ref().and_then(|c| c.size);
        let content_length = content_length(self.header("content-length")).map(|n| n as f64);
        let bytes_in = match &self.bytes_in {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        let sources = [
            self.transfer_size.or(self.response.transfer_size),
            self.response.body_size,
            content,
            content_length,
            bytes_in,
        ];
        let known = || sources.iter().flatten().filter(|v| v.is_finite());
        if let Some(v) = known().find(|v| **v > 0.0) {
            return Some(v.ceil().min(u64::MAX as f64) as u64);
        }
        known().any(|v| *v == 0.0).then_some(0)
    }

    fn chrome_priority(&self) -> Option<ChromePriority> {
        self.priority.as_deref().and_then(ChromePriority::parse)
    }

    fn priority(&self, ty: ResourceType) -> Priority {
        match self.chrome_priority() {
            Some(p) => p.priority_for(ty),
            None => Browser::Chrome.default_priority(ty),
        }
    }

    fn status(&self) -> Option<u16> {
        self.response
            .status
            .filter(|s| s.is_finite() && (0.0..=f64::from(u16::MAX)).contains(s))
            .map(|s| s as u16)
    }

    /// The initiator's URL, if one was recorded.
    fn initiator_url(&self) -> Option<&str> {
        [&self.initiator, &self.initiator_plain]
            .into_iter()
            .flatten()
            .find_map(|v| match v {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => o.get("url").and_then(Value::as_str),
                _ => None,
            })
            .filter(|u| !u.is_empty())
    }

    fn duration_ms(&self) -> f64 {
        self.time
            .filter(|t| t.is_finite() && *t > 0.0)
            .unwrap_or(0.0)
    }
}

/// Reads `path` and converts its first page; the page's id is the file's stem.
///
/// # Errors
/// [`HarError`]: the file cannot be read, is not HAR JSON, or its page is unusable.
pub fn load(path: &Path) -> Result<Page, HarError> {
    let text = std::fs::read_to_string(path).map_err(|source| HarError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let id = path
        .file_stem()
        .map_or_else(|| "page".to_owned(), |s| s.to_string_lossy().into_owned());
    parse(&text, &id).map_err(|e| match e {
        HarError::Json { source, .. } => HarError::Json {
            path: path.display().to_string(),
            source,
        },
        other => other,
    })
}

/// Every page at `path`: the file itself, or each `.har` file of a directory (by name).
///
/// # Errors
/// [`HarError::Io`] when the path cannot be read, [`HarError::Empty`] for a directory without
/// `.har` files, and the first file's error that fails [`load`].
pub fn load_all(path: &Path) -> Result<Vec<Page>, HarError> {
    let io = |source| HarError::Io {
        path: path.display().to_string(),
        source,
    };
    if !path.is_dir() {
        return load(path).map(|page| vec![page]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io)? {
        let file = entry.map_err(io)?.path();
        if file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("har"))
        {
            files.push(file);
        }
    }
    if files.is_empty() {
        return Err(HarError::Empty(path.display().to_string()));
    }
    files.sort();
    files.iter().map(|f| load(f)).collect()
}

/// Converts HAR JSON text; `id` names the page and prefixes its keys.
///
/// # Errors
/// [`HarError`]: not HAR JSON, or an unusable page.
pub fn parse(text: &str, id: &str) -> Result<Page, HarError> {
    let har: Har = serde_json::from_str(text).map_err(|source| HarError::Json {
        path: "<text>".into(),
        source,
    })?;
    convert(har, id)
}

fn convert(har: Har, id: &str) -> Result<Page, HarError> {
    let page_info = har.log.pages.first();
    let name = page_info
        .and_then(|p| p.title.clone())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| id.to_owned());
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
            page: name.clone(),
            index,
            value: entry.started.clone(),
        })?;
        let Some(size) = entry.size() else {
            return Err(HarError::NoSize {
                page: name,
                index,
                url: entry.request.url,
            });
        };
        if size > MAX_OBJECT_BYTES {
            return Err(HarError::TooLarge {
                page: name,
                index,
                url: entry.request.url,
                size,
            });
        }
        if entries.len() == MAX_OBJECTS {
            return Err(HarError::TooMany { page: name });
        }
        entries.push((started, size, entry));
    }
    // Stable: entries recorded at the same millisecond keep their order.
    entries.sort_by(|a, b| a.0.total_cmp(&b.0));
    let Some(first) = entries.first().map(|e| e.0) else {
        return Err(HarError::Empty(name));
    };

    let mut keys = Keys::new(id);
    let mut critical_path = CriticalPath::new();
    let mut objects: Vec<PageObject> = Vec::with_capacity(entries.len());
    // The first index of each URL, for initiators.
    let mut by_url: HashMap<&str, usize> = HashMap::new();
    let mut main_document = None;
    let mut document_end = 0.0;
    // The latest document of the redirect chain (or the page request).
    let mut last_hop = 0;
    let mut warnings = Vec::new();
    for (index, (started, size, entry)) in entries.iter().enumerate() {
        let offset_ms = started - first;
        let ty = entry.resource_type(offset_ms, on_content_load);
        let critical = critical_path.is_critical(ty, entry.status());
        let in_redirect_chain = main_document.is_none() && ty == ResourceType::Document;
        // Made relative to the main document's completion below.
        let timed = Discovery::AfterDocument(
            Duration::try_from_secs_f64(offset_ms.max(0.0) / 1e3).unwrap_or_default(),
        );
        let discovery = if index == 0 {
            Discovery::Document
        } else if in_redirect_chain {
            // Not `index - 1`: an entry recorded between two hops may itself wait for the
            // main document, and the chain would never reach it.
            Discovery::After { parent: last_hop }
        } else if let Some(initiator) = entry.initiator_url() {
            match by_url.get(initiator) {
                Some(&parent) => Discovery::After { parent },
                None => {
                    warnings.push(format!(
                        "{}: its recorded initiator {initiator} is not an earlier entry of the \
                         page; discovered by the main document instead",
                        entry.request.url
                    ));
                    main_document.map_or(timed, |parent| Discovery::After { parent })
                }
            }
        } else {
            timed
        };
        if in_redirect_chain {
            last_hop = index;
        }
        if main_document.is_none()
            && ty == ResourceType::Document
            && entry.status().is_some_and(|s| (200..300).contains(&s))
        {
            main_document = Some(index);
            document_end = offset_ms + entry.duration_ms();
        }
        by_url.entry(entry.request.url.as_str()).or_insert(index);
        objects.push(PageObject {
            url: entry.request.url.clone(),
            key: keys.key(&entry.request.url),
            size: *size,
            content_type: entry
                .mime()
                .unwrap_or("application/octet-stream")
                .to_owned(),
            resource_type: ty,
            priority: entry.priority(ty),
            critical,
            discovery,
            recorded_start: Duration::try_from_secs_f64(offset_ms.max(0.0) / 1e3)
                .unwrap_or_default(),
        });
    }
    // Without a 2xx document, times count from the first request's completion.
    let document_end = match main_document {
        Some(_) => document_end,
        None => entries[0].2.duration_ms(),
    };
    for o in &mut objects {
        if let Discovery::AfterDocument(at) = o.discovery {
            let after = (at.as_secs_f64() * 1e3 - document_end).max(0.0) / 1e3;
            o.discovery =
                Discovery::AfterDocument(Duration::try_from_secs_f64(after).unwrap_or_default());
        }
    }
    let main_document = main_document.unwrap_or_else(|| {
        warnings.push("no 2xx document: the first request is the main document".to_owned());
        0
    });
    Ok(Page {
        id: id.to_owned(),
        name,
        objects,
        main_document,
        warnings,
    })
}
