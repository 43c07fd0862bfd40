//! The page builder: a recorded [`Page`] as real files a browser loads the way the original
//! did, as far as the recording tells.
//!
//! # Rules
//!
//! - Files: one per object of the page except the hops of the redirect chain before the main
//!   document ([`Page::is_redirect`]): the browser opens the main document's URL
//!   ([`Site::start`]) and never requests those hops. The main document comes first in
//!   [`Site::files`], the others follow in recorded start order. Each file is served under its
//!   object's key ([`PageObject::key`]).
//! - URLs: the recorded URL as `url` writes it (WHATWG parsing), with `http` rewritten to
//!   `https` (the browser reaches every host through a TLS proxy), the fragment, any
//!   credentials (Chrome blocks sub-resources that carry them) and any explicit port (the proxy
//!   listens on 443) dropped. An IP address becomes the name `ip-{address}.mpquic.test` (a host
//!   resolver rule cannot map an address). A URL that is not `http(s)` with a host (`wss:`,
//!   `blob:`, unparseable) becomes `https://{main document's host}/__mpquic/object/{index}`.
//!   A URL the recording requested more than once gets `mpquic-dup={n}` appended to its query
//!   from its second request on, so every object is its own file and request. Each rewrite but
//!   the scheme's is a warning.
//! - Who references an object: its recorded parent ([`Discovery::After`]) when that parent is a
//!   file that can reference it: an HTML document references anything, a script anything, a
//!   stylesheet other stylesheets, fonts and images. Every other object is referenced by the
//!   main document: one without an initiator ([`Discovery::AfterDocument`]: the inference rule
//!   is document → everything it could reference), one whose parent cannot reference (an image
//!   or a font recorded as an initiator, a warning), and one whose parent is a redirect hop.
//!   Each object is referenced exactly once, and a file's references are in recorded start
//!   order.
//! - How an HTML document (the main document, and every other `Document` object: an iframe)
//!   references: a stylesheet by `<link rel=stylesheet>`, a blocking script
//!   (`ResourceType::Script { blocking: true }`, which the HAR reader decides from Chrome's
//!   priority, the initiator type, or the request before `DOMContentLoaded`) by a
//!   parser-blocking `<script src>` and a font by `<link rel=preload as=font crossorigin>`,
//!   all three in `<head>`; in `<body>`, a non-blocking script by `<script async src>` (the
//!   recording cannot tell `defer` from `async`: Chrome gives both the same priority), an
//!   image by `<img src width height>`, a document by `<iframe src>`, anything else by an
//!   inline script's fetch (below).
//! - A stylesheet references a stylesheet by `@import`, a font by `@font-face` and a rule that
//!   gives an element of the document the stylesheet applies in that family (so the browser
//!   lays out text in it and fetches it), its images as the layers of one `background-image`
//!   (every layer loads) on an element of that document. The document holds those elements.
//! - A script, when it runs, inserts a `<script>` for a script, a `<link rel=stylesheet>` for
//!   a stylesheet and an `<iframe>` for a document, sets `new Image().src` for an image, loads
//!   a `FontFace` for a font, and fetches anything else (fetch, XHR, beacons, media, other).
//! - A fetch is `fetch(url, {mode: "cors", credentials: "omit"})` whose body the script reads:
//!   Chrome lists a fetch in its request log only once the body has been read, and blocks a
//!   `no-cors` response of HTML, JSON or XML from another origin (opaque response blocking),
//!   which then never appears there (seen with Chromium 156). A plain GET without credentials
//!   needs no preflight; whoever serves the files must answer `Access-Control-Allow-Origin: *`
//!   (web fonts are CORS requests anyway), or cross-origin fetches and fonts fail after their
//!   request.
//! - The main document's `<head>` begins with `<meta charset=utf-8>` and the metrics script
//!   ([`metrics_script`]). Documents show the page's title (the frame's URL in an iframe) as a
//!   heading, then filler paragraphs, so a screenshot shows text; images have a background
//!   colour so their placeholders show.
//! - Bodies: exactly the recorded size ([`PageObject::size`]): HTML padded with paragraphs
//!   (the first 16 KiB) and a comment, CSS and JavaScript with a comment, an image is a 1×1
//!   GIF (an SVG when recorded as `image/svg+xml`; the browser sniffs raster formats, so a GIF
//!   served as `image/jpeg` decodes) padded with zeros (spaces for SVG), anything else zeros
//!   (spaces for a textual content type). A file that references others and cannot hold its
//!   references in its recorded size is larger, never truncated; one that references nothing
//!   and cannot hold its minimal content (a 20-byte image) is blank at its recorded size. Both
//!   are one warning line each, naming every such URL. Every body is in memory: up to the
//!   page's [`Page::total_bytes`]; the HAR reader bounds each object (1 GiB,
//!   [`MAX_OBJECT_BYTES`]), a page built by hand beyond that is cut to it with a warning.
//! - Content type: the recorded one, except for a file whose references the browser would not
//!   read under it (an HTML document, a stylesheet or a script that references something,
//!   recorded as another kind), which is served as `text/html`, `text/css` or
//!   `text/javascript`, and a recorded value that is not a valid header value, which becomes
//!   `application/octet-stream`; each is a warning.
//! - Escaping: every recorded string put in HTML is HTML-escaped, every URL in CSS a CSS
//!   string, every URL in JavaScript a JSON string with `<` and `>` escaped.
//!
//! [`Site::check_order`] checks a real browser's load against these rules: every file
//! requested once, each after the file that references it has arrived.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use mpquic_h3_prio::ResourceType;
use mpquic_replay::har::MAX_OBJECT_BYTES;
use mpquic_replay::{Discovery, Page, PageObject};
use serde::Serialize;
use url::{Host, Url};

use crate::metrics::{metrics_script, ResourceTiming, BEACON_PATH};

/// One file of a [`Site`]: what the browser asks for and what the page server answers.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteFile {
    /// The absolute `https` URL the browser requests, as it writes it (normalised).
    pub url: String,
    /// The page server's key for it ([`mpquic_replay::PageObject::key`]).
    pub key: String,
    /// The content type it is served with.
    pub content_type: String,
    /// Its body.
    pub body: Bytes,
}

/// A recorded page rebuilt as real files (the rules are in the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Site {
    /// The page the files were built from.
    pub page: Page,
    /// The URL the browser opens: the main document's.
    pub start: String,
    /// One file per object the browser requests, the main document first.
    pub files: Vec<SiteFile>,
    /// What the builder (and the HAR reader before it, [`Page::warnings`]) had to guess or
    /// change, one line each.
    pub warnings: Vec<String>,
}

/// How far a parent's end may follow its child's start in a browser's request log before the
/// child counts as requested too early, in milliseconds. Chrome coarsens the times it reports
/// to 100 µs (with jitter of the same order); a real dependency costs at least the parent's
/// delivery to the renderer, parsing and a new request, so 1 ms only absorbs the rounding.
pub const ORDER_TOLERANCE_MS: f64 = 1.0;

/// What [`Site::check_order`] found in a browser's request log.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OrderCheck {
    /// Files the main document's log should list: every file except the main document and
    /// those fetched inside an iframe (which the iframe's own log lists).
    pub expected: usize,
    /// Of the expected files, those the log lists.
    pub requested: usize,
    /// Files fetched inside an iframe: not checked unless the log lists them.
    pub in_frames: usize,
    /// Logged files whose parent (the file that references them, other than the main
    /// document) is logged too: the dependencies the check could compare.
    pub ordered: usize,
    /// Expected files the log does not list.
    pub missing: Vec<String>,
    /// Logged URLs that are no file of the site (the metrics beacon aside).
    pub unexpected: Vec<String>,
    /// Files the log lists more than once.
    pub repeated: Vec<String>,
    /// Files requested before their parent's response had ended.
    pub out_of_order: Vec<OutOfOrder>,
}

/// A file requested before the file that references it had arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfOrder {
    /// The file.
    pub url: String,
    /// When the browser started it.
    pub start_ms: f64,
    /// The file that references it.
    pub parent: String,
    /// When the parent's response ended.
    pub parent_end_ms: f64,
}

impl OrderCheck {
    /// Whether the load followed the site: nothing missing, unexpected, repeated or out of
    /// order.
    pub fn ok(&self) -> bool {
        self.missing.is_empty()
            && self.unexpected.is_empty()
            && self.repeated.is_empty()
            && self.out_of_order.is_empty()
    }
}

impl Site {
    /// Builds the files of `page`. It never fails: what the recording lacks is inferred and
    /// said in [`Site::warnings`].
    pub fn build(page: &Page) -> Site {
        let plan = Plan::new(page);
        let mut warnings = page.warnings.clone();
        warnings.extend(plan.warnings.iter().cloned());
        let Some(main) = plan.main else {
            warnings.push("the page has no objects".to_owned());
            return Site {
                page: page.clone(),
                start: format!("https://{FALLBACK_HOST}/"),
                files: Vec::new(),
                warnings,
            };
        };
        let mut sizes = Sizes::default();
        let mut files = Vec::with_capacity(page.objects.len());
        for i in std::iter::once(main).chain((0..page.objects.len()).filter(|&i| i != main)) {
            let (Some(object), Some(Some(url))) = (page.objects.get(i), plan.urls.get(i)) else {
                continue;
            };
            let (content_type, body) = plan.file(page, i, &mut sizes, &mut warnings);
            files.push(SiteFile {
                url: url.clone(),
                key: object.key.clone(),
                content_type,
                body,
            });
        }
        warnings.extend(sizes.warnings());
        Site {
            page: page.clone(),
            start: files.first().map(|f| f.url.clone()).unwrap_or_default(),
            files,
            warnings,
        }
    }

    /// Every host the browser will ask for.
    pub fn hosts(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .filter_map(|f| Url::parse(&f.url).ok()?.host_str().map(str::to_owned))
            .collect()
    }

    /// The file the browser gets for `url` (`https://{authority}{path}{?query}`), normalised
    /// the way the builder writes URLs: `http` is `https`, fragment, credentials and port do
    /// not count. If no URL matches exactly, the first whose percent-decoded form does (a
    /// browser may escape a character `url` leaves alone).
    pub fn file(&self, url: &str) -> Option<&SiteFile> {
        self.position(url).and_then(|i| self.files.get(i))
    }

    fn position(&self, url: &str) -> Option<usize> {
        let url = normalise(url)?;
        let url = url.as_str();
        self.files.iter().position(|f| f.url == url).or_else(|| {
            let wanted = percent_decoded(url);
            self.files
                .iter()
                .position(|f| percent_decoded(&f.url) == wanted)
        })
    }

    /// Checks a browser's own request log (the metrics script's
    /// [`PaintReport::resources`](crate::PaintReport::resources)) against the site: (a) every
    /// file but the main document requested, once, and nothing else (the beacon,
    /// [`BEACON_PATH`], aside); (b) each file requested no earlier than the response of the
    /// file that references it ended, within [`ORDER_TOLERANCE_MS`]: the recording's
    /// dependency order. The main document is not in the log, so its own references are not
    /// ordered; files fetched inside an iframe are in the iframe's log, not the main
    /// document's, and are only counted ([`OrderCheck::in_frames`]).
    pub fn check_order(&self, resources: &[ResourceTiming]) -> OrderCheck {
        let plan = Plan::new(&self.page);
        let Some(main) = plan.main else {
            return OrderCheck {
                unexpected: resources.iter().map(|r| r.url.clone()).collect(),
                ..OrderCheck::default()
            };
        };
        // The object each file was built from, by file index (files follow `Plan::urls`).
        let by_url: HashMap<&str, usize> = plan
            .urls
            .iter()
            .enumerate()
            .filter_map(|(i, u)| Some((u.as_deref()?, i)))
            .collect();
        let mut check = OrderCheck::default();
        let mut logged: HashMap<usize, &ResourceTiming> = HashMap::new();
        for entry in resources {
            if normalise(&entry.url).is_some_and(|u| u.path() == BEACON_PATH) {
                continue;
            }
            let object = self
                .position(&entry.url)
                .and_then(|f| self.files.get(f))
                .and_then(|f| by_url.get(f.url.as_str()).copied());
            match object {
                None => check.unexpected.push(entry.url.clone()),
                Some(i) => {
                    if logged.insert(i, entry).is_some() {
                        check.repeated.push(entry.url.clone());
                    }
                }
            }
        }
        for (i, url) in plan.urls.iter().enumerate() {
            let Some(url) = url else { continue };
            if i == main {
                continue;
            }
            if plan.document.get(i) == Some(&main) {
                check.expected += 1;
                if logged.contains_key(&i) {
                    check.requested += 1;
                } else {
                    check.missing.push(url.clone());
                }
            } else {
                check.in_frames += 1;
            }
            let parent = plan.holder.get(i).copied().flatten().filter(|&p| p != main);
            let (Some(child), Some(p)) = (logged.get(&i), parent) else {
                continue;
            };
            let Some(parent) = logged.get(&p) else {
                continue;
            };
            check.ordered += 1;
            // A NaN time is incomparable: out of order too.
            let in_order = parent
                .end_ms
                .partial_cmp(&(child.start_ms + ORDER_TOLERANCE_MS))
                .is_some_and(|o| o.is_le());
            if !in_order {
                check.out_of_order.push(OutOfOrder {
                    url: url.clone(),
                    start_ms: child.start_ms,
                    parent: plan.urls.get(p).cloned().flatten().unwrap_or_default(),
                    parent_end_ms: parent.end_ms,
                });
            }
        }
        check
    }

    /// Writes the files under `dir`: each at `dir/{host}/{path}` (`index.html` for a path
    /// ending in `/`, the query appended to the file name as `%3F{query}`), every component
    /// reduced to characters a file name can hold (others percent-encoded, `.` and `..`
    /// encoded, at most 200 bytes), so nothing lands outside `dir`. A file whose path another
    /// file needs as a directory, or that another file already took, gets `~2`, `~3`, ...
    /// on its name. `dir/manifest.json` lists every file: its URL, key, content type, size
    /// and path under `dir`, with the start URL and the warnings.
    ///
    /// # Errors
    /// The first I/O error.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let paths = file_paths(&self.files);
        std::fs::create_dir_all(dir)?;
        let mut manifest = Manifest {
            page: &self.page.id,
            start: &self.start,
            warnings: &self.warnings,
            files: Vec::with_capacity(self.files.len()),
        };
        for (file, path) in self.files.iter().zip(&paths) {
            let full = dir.join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&full, &file.body)?;
            manifest.files.push(ManifestFile {
                url: &file.url,
                key: &file.key,
                content_type: &file.content_type,
                size: file.body.len(),
                file: path
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            });
        }
        let json = serde_json::to_vec_pretty(&manifest).map_err(io::Error::other)?;
        std::fs::write(dir.join(MANIFEST), json)
    }
}

/// The host of URLs the recording gives no usable host for.
const FALLBACK_HOST: &str = "mpquic-page.test";

/// The manifest's name in the written directory.
const MANIFEST: &str = "manifest.json";

#[derive(Serialize)]
struct Manifest<'a> {
    page: &'a str,
    start: &'a str,
    warnings: &'a [String],
    files: Vec<ManifestFile<'a>>,
}

#[derive(Serialize)]
struct ManifestFile<'a> {
    url: &'a str,
    key: &'a str,
    content_type: &'a str,
    size: usize,
    file: String,
}

/// Who references whom: what [`Site::build`] writes and [`Site::check_order`] checks.
struct Plan {
    /// The main document's index; `None` for a page without objects.
    main: Option<usize>,
    /// Per object, the URL the browser requests; `None` for a redirect hop.
    urls: Vec<Option<String>>,
    /// Per object, the object whose file references it; `None` for the main document and
    /// redirect hops.
    holder: Vec<Option<usize>>,
    /// Per object, the HTML document it is fetched in (whose request log lists it).
    document: Vec<usize>,
    /// Per object, the objects its file references, in recorded order.
    children: Vec<Vec<usize>>,
    /// Per HTML document, the stylesheets fetched in it (whose elements it holds).
    sheets: Vec<Vec<usize>>,
    /// Per object, the type it is built as ([`built_types`]).
    types: Vec<ResourceType>,
    warnings: Vec<String>,
}

impl Plan {
    fn new(page: &Page) -> Plan {
        let n = page.objects.len();
        let mut warnings = Vec::new();
        let main = if page.main_document < n {
            page.main_document
        } else {
            if n > 0 {
                warnings.push(format!(
                    "main document {} is not an object of the page: object 0 is",
                    page.main_document
                ));
            }
            0
        };
        let hop = |i: usize| main == page.main_document && page.is_redirect(i);
        let urls = browser_urls(page, main, &hop, &mut warnings);

        let types = built_types(page, main, &mut warnings);
        let is_html = |i: usize| types.get(i) == Some(&ResourceType::Document);
        let mut holder = vec![None; n];
        let mut not_earlier = Vec::new();
        let mut cannot = Vec::new();
        for (i, object) in page.objects.iter().enumerate() {
            if i == main || hop(i) {
                continue;
            }
            let recorded = match object.discovery {
                Discovery::After { parent } => Some(parent),
                _ => None,
            };
            holder[i] = Some(match recorded {
                Some(p) if p >= i => {
                    not_earlier.push(object.url.clone());
                    main
                }
                Some(p) if hop(p) => main,
                Some(p) => {
                    let child = types.get(i).copied().unwrap_or(ResourceType::Other);
                    if types.get(p).is_some_and(|&t| can_reference(t, child)) {
                        p
                    } else {
                        cannot.push(object.url.clone());
                        main
                    }
                }
                None => main,
            });
        }
        warnings.extend(list(
            "objects whose recorded parent is not an earlier object are referenced by the main \
             document",
            &not_earlier,
        ));
        warnings.extend(list(
            "objects whose recorded parent cannot reference them (not a document, script or \
             stylesheet, or a stylesheet and not a stylesheet, font or image) are referenced \
             by the main document",
            &cannot,
        ));

        // A holder is an earlier object or the main document (which has no holder), so index
        // order sees every holder's document before its objects'.
        let mut document = vec![main; n];
        let mut children = vec![Vec::new(); n];
        let mut sheets = vec![Vec::new(); n];
        for (i, &ty) in types.iter().enumerate() {
            let Some(h) = holder[i] else { continue };
            let d = if is_html(h) { h } else { document[h] };
            document[i] = d;
            children[h].push(i);
            if ty == ResourceType::Stylesheet {
                sheets[d].push(i);
            }
        }
        Plan {
            main: (n > 0).then_some(main),
            urls,
            holder,
            document,
            children,
            sheets,
            types,
            warnings,
        }
    }

    /// The type object `i` is built as.
    fn ty(&self, i: usize) -> ResourceType {
        self.types.get(i).copied().unwrap_or(ResourceType::Other)
    }

    /// The content type and body of object `i`'s file.
    fn file(
        &self,
        page: &Page,
        i: usize,
        sizes: &mut Sizes,
        warnings: &mut Vec<String>,
    ) -> (String, Bytes) {
        let Some(object) = page.objects.get(i) else {
            return (String::new(), Bytes::new());
        };
        let url = self.url(i);
        let size = usize::try_from(object.size.min(MAX_OBJECT_BYTES)).unwrap_or(usize::MAX);
        if object.size > MAX_OBJECT_BYTES {
            warnings.push(format!(
                "{url}: {} bytes recorded, cut to {MAX_OBJECT_BYTES}",
                object.size
            ));
        }
        let children = self.children.get(i).map_or(&[][..], Vec::as_slice);
        let main = self.main == Some(i);
        let kind = self.ty(i);
        let references = main || !children.is_empty();
        let (content, tail, filler, canonical) = match kind {
            ResourceType::Document => {
                let (head, tail) = self.html(page, i, main);
                (
                    head.into_bytes(),
                    tail,
                    Filler::Text,
                    Some("text/html; charset=utf-8"),
                )
            }
            ResourceType::Stylesheet => (
                self.css(i).into_bytes(),
                "",
                Filler::Comment,
                Some("text/css"),
            ),
            ResourceType::Script { .. } => (
                self.js(i).into_bytes(),
                "",
                Filler::Comment,
                Some("text/javascript"),
            ),
            ResourceType::Image if is_svg(&object.content_type) => {
                (SVG.to_vec(), "", Filler::Spaces, None)
            }
            ResourceType::Image => (GIF.to_vec(), "", Filler::Zeros, None),
            _ => (Vec::new(), "", Filler::Zeros, None),
        };
        let content_type = content_type(object, canonical, references, &url, warnings);
        let filler = match filler {
            Filler::Zeros if is_textual(&content_type) => Filler::Spaces,
            other => other,
        };
        let minimal = content.len().saturating_add(tail.len());
        let body = if minimal <= size {
            let mut body = Vec::with_capacity(size);
            body.extend_from_slice(&content);
            fill(&mut body, size - minimal, filler);
            body.extend_from_slice(tail.as_bytes());
            body
        } else if references {
            sizes.larger.push(format!("{url} ({minimal} > {size})"));
            let mut body = content;
            body.extend_from_slice(tail.as_bytes());
            body
        } else {
            if size > 0 {
                sizes.blank.push(url);
            }
            let mut body = Vec::with_capacity(size);
            fill(&mut body, size, filler.blank());
            body
        };
        (content_type, Bytes::from(body))
    }

    /// How many files document `doc`'s resource timing log lists: those fetched in it, not in
    /// an iframe of it, the document itself aside.
    fn logged_by(&self, doc: usize) -> usize {
        (0..self.urls.len())
            .filter(|&j| j != doc && self.urls[j].is_some() && self.document.get(j) == Some(&doc))
            .count()
    }

    fn url(&self, i: usize) -> String {
        self.urls.get(i).cloned().flatten().unwrap_or_default()
    }

    /// Object `i`'s document, up to the filler, and what follows the filler.
    fn html(&self, page: &Page, i: usize, main: bool) -> (String, &'static str) {
        let title = if main { page.name.clone() } else { self.url(i) };
        let title = escape_html(&title);
        let mut head = String::from("<!doctype html><html><head><meta charset=utf-8>");
        if main {
            let _ = write!(
                head,
                "<script>{}</script><link rel=icon href=\"data:,\">",
                metrics_script(self.logged_by(i))
            );
        }
        let _ = write!(head, "<title>{title}</title><style>{STYLE}</style>");
        let mut body = format!("<body><h1>{title}</h1>");
        for &c in self.children.get(i).map_or(&[][..], Vec::as_slice) {
            let u = escape_html(&self.url(c));
            let _ = match self.ty(c) {
                ResourceType::Stylesheet => write!(head, "<link rel=stylesheet href=\"{u}\">"),
                ResourceType::Script { blocking: true } => {
                    write!(head, "<script src=\"{u}\"></script>")
                }
                ResourceType::Font => {
                    write!(head, "<link rel=preload as=font crossorigin href=\"{u}\">")
                }
                ResourceType::Script { blocking: false } => {
                    write!(body, "<script async src=\"{u}\"></script>")
                }
                ResourceType::Image => {
                    write!(body, "<img src=\"{u}\" width=64 height=48 alt=\"\">")
                }
                ResourceType::Document => {
                    write!(body, "<iframe src=\"{u}\" width=320 height=120></iframe>")
                }
                _ => write!(
                    body,
                    "<script>fetch({},{{mode:\"cors\",credentials:\"omit\"}}).then(function(r){{return r.arrayBuffer()}}).catch(function(){{}})</script>",
                    js_string(&self.url(c))
                ),
            };
        }
        // The elements the stylesheets fetched in this document style.
        for &s in self.sheets.get(i).map_or(&[][..], Vec::as_slice) {
            let mut images = false;
            for &c in self.children.get(s).map_or(&[][..], Vec::as_slice) {
                match self.ty(c) {
                    ResourceType::Font => {
                        let _ = write!(body, "<p class=f{c}>Text in font {c}</p>");
                    }
                    ResourceType::Image => images = true,
                    _ => {}
                }
            }
            if images {
                let _ = write!(body, "<div class=b{s}></div>");
            }
        }
        (format!("{head}</head>{body}"), "</body></html>")
    }

    /// Object `s`'s stylesheet: imports, font faces and the rules that use them, one rule
    /// with every image as a background layer.
    fn css(&self, s: usize) -> String {
        let children = self.children.get(s).map_or(&[][..], Vec::as_slice);
        let of =
            |t: fn(ResourceType) -> bool| children.iter().copied().filter(move |&c| t(self.ty(c)));
        let mut css = String::new();
        for c in of(|t| t == ResourceType::Stylesheet) {
            let _ = writeln!(css, "@import url({});", css_string(&self.url(c)));
        }
        for c in of(|t| t == ResourceType::Font) {
            let _ = writeln!(
                css,
                "@font-face{{font-family:f{c};src:url({})}}.f{c}{{font-family:f{c}}}",
                css_string(&self.url(c))
            );
        }
        let layers: Vec<String> = of(|t| t == ResourceType::Image)
            .map(|c| format!("url({})", css_string(&self.url(c))))
            .collect();
        if !layers.is_empty() {
            let _ = writeln!(
                css,
                ".b{s}{{background-image:{};width:64px;height:48px}}",
                layers.join(",")
            );
        }
        css
    }

    /// Object `s`'s script: what it requests, with only the helpers it uses.
    fn js(&self, s: usize) -> String {
        let mut calls = String::new();
        let mut used = BTreeSet::new();
        for &c in self.children.get(s).map_or(&[][..], Vec::as_slice) {
            let helper = match self.ty(c) {
                ResourceType::Script { .. } => "script",
                ResourceType::Stylesheet => "sheet",
                ResourceType::Image => "image",
                ResourceType::Font => "font",
                ResourceType::Document => "frame",
                _ => "get",
            };
            used.insert(helper);
            let u = js_string(&self.url(c));
            let _ = match helper {
                "font" => writeln!(calls, "font({u},\"f{c}\");"),
                _ => writeln!(calls, "{helper}({u});"),
            };
        }
        if calls.is_empty() {
            return String::new();
        }
        let mut js = String::from("(function(){var d=document;\n");
        if ["script", "sheet", "frame"]
            .iter()
            .any(|h| used.contains(h))
        {
            js.push_str(JS_ADD);
        }
        for (name, code) in JS_HELPERS {
            if used.contains(name) {
                js.push_str(code);
            }
        }
        js.push_str(&calls);
        js.push_str("})();\n");
        js
    }
}

/// The page's style: visible placeholders for images and frames.
const STYLE: &str = "body{font:16px sans-serif;margin:8px}img,iframe{background:#9ab;border:0;\
margin:2px}p{max-width:60em}";

/// Appends an element to `<head>` (or `<body>`), or to the root before that exists.
const JS_ADD: &str =
    "function add(e,head){((head?d.head:d.body)||d.documentElement).appendChild(e)}\n";

/// What a script uses to request each kind of object.
const JS_HELPERS: [(&str, &str); 6] = [
    (
        "script",
        "function script(u){var e=d.createElement(\"script\");e.src=u;add(e,true)}\n",
    ),
    (
        "sheet",
        "function sheet(u){var e=d.createElement(\"link\");e.rel=\"stylesheet\";e.href=u;\
         add(e,true)}\n",
    ),
    ("image", "function image(u){new Image().src=u}\n"),
    (
        "font",
        "function font(u,f){new FontFace(f,\"url(\"+JSON.stringify(u)+\")\").load()\
         .catch(function(){})}\n",
    ),
    (
        "frame",
        "function frame(u){var e=d.createElement(\"iframe\");e.src=u;add(e,false)}\n",
    ),
    (
        "get",
        "function get(u){fetch(u,{mode:\"cors\",credentials:\"omit\"}).then(function(r){return r.arrayBuffer()}).catch(function(){})}\n",
    ),
];

/// A 1×1 transparent GIF: the smallest image every browser decodes.
const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff\x21\xf9\x04\x01\
\x00\x00\x00\x00\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x01\x44\x00\x3b";

/// A small SVG image (an SVG is parsed as XML: trailing spaces are allowed, zeros are not).
const SVG: &[u8] = b"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"64\" height=\"48\">\
<rect width=\"64\" height=\"48\" fill=\"#9ab\"/></svg>";

/// One paragraph of the text that fills a document.
const PARAGRAPH: &str = "<p>This page was rebuilt from a recording: its size, references and \
content types are the original's, its text is filler.</p>\n";

/// How much of a document's filler is visible paragraphs; the rest is a comment.
const TEXT_BYTES: usize = 16 * 1024;

/// What fills a body up to its recorded size.
#[derive(Debug, Clone, Copy)]
enum Filler {
    /// Paragraphs (up to [`TEXT_BYTES`]), then an HTML comment.
    Text,
    /// A CSS and JavaScript comment.
    Comment,
    Zeros,
    Spaces,
}

impl Filler {
    /// The filler of a file that holds nothing else.
    fn blank(self) -> Filler {
        match self {
            Filler::Zeros => Filler::Zeros,
            _ => Filler::Spaces,
        }
    }
}

fn fill(out: &mut Vec<u8>, n: usize, filler: Filler) {
    let comment = |out: &mut Vec<u8>, n: usize, open: &[u8], close: &[u8]| {
        let marks = open.len() + close.len();
        if n >= marks {
            out.extend_from_slice(open);
            out.resize(out.len() + (n - marks), b' ');
            out.extend_from_slice(close);
        } else {
            out.resize(out.len() + n, b' ');
        }
    };
    match filler {
        Filler::Text => {
            let mut left = n;
            let mut text = 0;
            while left >= PARAGRAPH.len() && text + PARAGRAPH.len() <= TEXT_BYTES {
                out.extend_from_slice(PARAGRAPH.as_bytes());
                left -= PARAGRAPH.len();
                text += PARAGRAPH.len();
            }
            comment(out, left, b"<!--", b"-->");
        }
        Filler::Comment => comment(out, n, b"/*", b"*/"),
        Filler::Zeros => out.resize(out.len() + n, 0),
        Filler::Spaces => out.resize(out.len() + n, b' '),
    }
}

/// The files whose size is not the recorded one, for the warnings.
#[derive(Default)]
struct Sizes {
    /// Larger, to hold their references.
    larger: Vec<String>,
    /// Blank, too small for their minimal content.
    blank: Vec<String>,
}

impl Sizes {
    fn warnings(&self) -> Vec<String> {
        let larger = list(
            "files are larger than recorded to hold their references (bytes, recorded)",
            &self.larger,
        );
        let blank = list(
            "files are too small for their minimal content and are blank at their recorded size",
            &self.blank,
        );
        larger.into_iter().chain(blank).collect()
    }
}

/// One warning line: `{n} {what}: {items}`, or none for no items.
fn list(what: &str, items: &[String]) -> Option<String> {
    (!items.is_empty()).then(|| format!("{} {what}: {}", items.len(), items.join(", ")))
}

/// The type each object is built as: the recorded one, except that the main document is a
/// document whatever was recorded, and an object recorded as fetched data or other that
/// initiated requests and whose content type (or, if that says nothing, URL extension) is a
/// script's or stylesheet's is built and referenced as an async script or a stylesheet: it
/// evidently ran (a script fetched and evaluated, a preload), and its requests need a file
/// that can make them. Each such change is a warning.
fn built_types(page: &Page, main: usize, warnings: &mut Vec<String>) -> Vec<ResourceType> {
    let mut initiated = vec![false; page.objects.len()];
    for object in &page.objects {
        if let Discovery::After { parent } = object.discovery {
            if let Some(flag) = initiated.get_mut(parent) {
                *flag = true;
            }
        }
    }
    let mut changed = Vec::new();
    let types = page
        .objects
        .iter()
        .zip(initiated)
        .enumerate()
        .map(|(i, (object, initiated))| {
            let recorded = object.resource_type;
            if i == main {
                return ResourceType::Document;
            }
            if !initiated || !matches!(recorded, ResourceType::Fetch | ResourceType::Other) {
                return recorded;
            }
            let evidence = ResourceType::from_mime(&object.content_type)
                .or_else(|| ResourceType::from_path(&object.url));
            let built = match evidence {
                Some(ResourceType::Script { .. }) => ResourceType::ASYNC_SCRIPT,
                Some(ResourceType::Stylesheet) => ResourceType::Stylesheet,
                _ => return recorded,
            };
            changed.push(object.url.clone());
            built
        })
        .collect();
    warnings.extend(list(
        "objects recorded as fetched data or other initiated requests and have a script's or \
         stylesheet's content type or extension: built and referenced as one",
        &changed,
    ));
    types
}

/// Whether a parent of type `parent` can reference a child of type `child`: an HTML document
/// or a script anything, a stylesheet other stylesheets, fonts and images, nothing else
/// anything (the builder's rule of who references an object).
pub fn can_reference(parent: ResourceType, child: ResourceType) -> bool {
    match parent {
        ResourceType::Document | ResourceType::Script { .. } => true,
        ResourceType::Stylesheet => matches!(
            child,
            ResourceType::Stylesheet | ResourceType::Font | ResourceType::Image
        ),
        _ => false,
    }
}

/// The served content type of `object`: the recorded one, or `canonical` (the type of the
/// kind it is built as, for a document, stylesheet or script) when it references others and
/// the recorded type would not let the browser read them.
fn content_type(
    object: &PageObject,
    canonical: Option<&str>,
    references: bool,
    url: &str,
    warnings: &mut Vec<String>,
) -> String {
    let recorded = object.content_type.as_str();
    let valid = !recorded.is_empty()
        && recorded
            .bytes()
            .all(|b| b == b'\t' || (0x20..0x7f).contains(&b));
    // A document must be text/html: served as XHTML it would be parsed as XML.
    let readable = |canonical: &str| {
        let wanted = essence(canonical);
        match ResourceType::from_mime(recorded) {
            _ if wanted == "text/html" => essence(recorded) == wanted,
            Some(ResourceType::Script { .. }) => wanted == "text/javascript",
            Some(ResourceType::Stylesheet) => wanted == "text/css",
            _ => false,
        }
    };
    match canonical {
        Some(canonical) if references && !readable(canonical) => {
            warnings.push(format!(
                "{url}: recorded as {recorded:?}, served as {canonical} so the browser reads \
                 its references"
            ));
            canonical.to_owned()
        }
        _ if !valid => {
            warnings.push(format!(
                "{url}: recorded content type {recorded:?} is not a header value, served as \
                 application/octet-stream"
            ));
            "application/octet-stream".to_owned()
        }
        _ => recorded.to_owned(),
    }
}

fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn is_svg(content_type: &str) -> bool {
    essence(content_type) == "image/svg+xml"
}

/// Whether spaces suit a body of this type better than zeros.
fn is_textual(content_type: &str) -> bool {
    let e = essence(content_type);
    e.starts_with("text/") || ["json", "xml", "javascript"].iter().any(|t| e.contains(t))
}

/// Every object's URL as the browser requests it (`None` for redirect hops), unique.
fn browser_urls(
    page: &Page,
    main: usize,
    hop: &dyn Fn(usize) -> bool,
    warnings: &mut Vec<String>,
) -> Vec<Option<String>> {
    let fallback_host = page
        .objects
        .get(main)
        .and_then(|o| browser_url(&o.url).ok())
        .and_then(|(u, _)| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| FALLBACK_HOST.to_owned());
    let mut used = HashSet::new();
    let mut rewritten: HashMap<Rewrite, Vec<String>> = HashMap::new();
    let mut urls = Vec::with_capacity(page.objects.len());
    for (i, object) in page.objects.iter().enumerate() {
        if hop(i) {
            urls.push(None);
            continue;
        }
        let base = match browser_url(&object.url) {
            Ok((url, changes)) => {
                for why in changes {
                    rewritten.entry(why).or_default().push(object.url.clone());
                }
                String::from(url)
            }
            Err(why) => {
                rewritten.entry(why).or_default().push(object.url.clone());
                format!("https://{fallback_host}/__mpquic/object/{i}")
            }
        };
        // No fragment is left, so the query is the end of the URL.
        let mut url = base.clone();
        let mut n = 1;
        while used.contains(&url) {
            n += 1;
            let separator = match base.split_once('?') {
                Some((_, "")) => "",
                Some(_) => "&",
                None => "?",
            };
            url = format!("{base}{separator}mpquic-dup={n}");
        }
        if n > 1 {
            rewritten.entry(Rewrite::Duplicate).or_default().push(base);
        }
        used.insert(url.clone());
        urls.push(Some(url));
    }
    let mut kinds: Vec<_> = rewritten.into_iter().collect();
    kinds.sort_by_key(|(why, _)| *why);
    warnings.extend(
        kinds
            .iter()
            .filter_map(|(why, urls)| list(why.describe(), urls)),
    );
    urls
}

/// A change the builder makes to a recorded URL (besides `http` to `https`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Rewrite {
    /// Not `http(s)` with a host: a URL on the main document's host instead.
    Unusable,
    /// An IP address for a host.
    Address,
    /// An explicit port.
    Port,
    /// A user name or password.
    Credentials,
    /// Requested before.
    Duplicate,
}

impl Rewrite {
    fn describe(self) -> &'static str {
        match self {
            Rewrite::Unusable => {
                "URLs are not http(s) with a host and are served as \
                 https://{main host}/__mpquic/object/{index}"
            }
            Rewrite::Address => {
                "URLs have an IP address for a host, which becomes ip-{address}.mpquic.test"
            }
            Rewrite::Port => "URLs lose their port (the proxy listens on 443)",
            Rewrite::Credentials => "URLs lose their credentials (Chrome blocks them)",
            Rewrite::Duplicate => {
                "URLs were requested more than once and get mpquic-dup={n} in their query \
                 from the second request on"
            }
        }
    }
}

/// `raw` as the builder writes it, with the changes made beyond `http` to `https` and the
/// fragment; the error says why it cannot be a URL the browser requests.
fn browser_url(raw: &str) -> Result<(Url, Vec<Rewrite>), Rewrite> {
    let mut url = Url::parse(raw).map_err(|_| Rewrite::Unusable)?;
    match url.scheme() {
        "https" => {}
        "http" => url.set_scheme("https").map_err(|()| Rewrite::Unusable)?,
        _ => return Err(Rewrite::Unusable),
    }
    url.set_fragment(None);
    let mut changes = Vec::new();
    if !url.username().is_empty() || url.password().is_some() {
        url.set_username("").map_err(|()| Rewrite::Unusable)?;
        url.set_password(None).map_err(|()| Rewrite::Unusable)?;
        changes.push(Rewrite::Credentials);
    }
    if url.port().is_some() {
        url.set_port(None).map_err(|()| Rewrite::Unusable)?;
        changes.push(Rewrite::Port);
    }
    let address = match url.host() {
        Some(Host::Domain(_)) => None,
        Some(Host::Ipv4(a)) => Some(a.to_string()),
        Some(Host::Ipv6(a)) => Some(a.to_string()),
        None => return Err(Rewrite::Unusable),
    };
    if let Some(address) = address {
        let name = format!("ip-{}.mpquic.test", address.replace(['.', ':'], "-"));
        url.set_host(Some(&name)).map_err(|_| Rewrite::Unusable)?;
        changes.push(Rewrite::Address);
    }
    Ok((url, changes))
}

/// A requested URL the way the builder writes URLs, to look it up.
fn normalise(url: &str) -> Option<Url> {
    browser_url(url).ok().map(|(url, _)| url)
}

/// `text` with every `%XX` decoded.
fn percent_decoded(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// `text` for HTML text or a quoted attribute value.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` as a quoted CSS string.
fn css_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\{:x} ", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` as a quoted JavaScript string that can sit in an HTML `<script>` element.
fn js_string(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_else(|_| "\"\"".to_owned())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
}

/// Where each file goes under the written directory (see [`Site::write`]).
fn file_paths(files: &[SiteFile]) -> Vec<PathBuf> {
    let natural: Vec<(PathBuf, String)> = files.iter().map(|f| natural_path(&f.url)).collect();
    let mut dirs = HashSet::new();
    for (dir, _) in &natural {
        for ancestor in dir.ancestors() {
            dirs.insert(ancestor.to_path_buf());
        }
    }
    let mut taken = HashSet::new();
    natural
        .iter()
        .map(|(dir, name)| {
            let mut path = dir.join(name);
            let mut n = 1;
            while dirs.contains(&path) || !taken.insert(path.clone()) {
                n += 1;
                path = dir.join(format!("{name}~{n}"));
            }
            path
        })
        .collect()
}

/// A URL's directory (`{host}/{segments}`) and file name, before collisions.
fn natural_path(url: &str) -> (PathBuf, String) {
    let Ok(url) = Url::parse(url) else {
        return (PathBuf::from("_"), file_name(url));
    };
    let host = match file_name(url.host_str().unwrap_or_default()) {
        host if host == MANIFEST => format!("{host}~host"),
        host => host,
    };
    let mut dir = PathBuf::from(host);
    let mut segments: Vec<&str> = url.path_segments().map_or_else(Vec::new, Iterator::collect);
    let last = segments.pop().unwrap_or_default();
    for segment in segments {
        dir.push(file_name(segment));
    }
    let last = if last.is_empty() { "index.html" } else { last };
    let name = match url.query() {
        Some(query) => file_name(&format!("{last}?{query}")),
        None => file_name(last),
    };
    (dir, name)
}

/// One path component for `text`: bytes a file name holds plainly kept, others `%XX`, never
/// empty, `.` or `..`, at most 200 bytes.
fn file_name(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~!$&'()+,;=@%".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out.truncate(200);
    match out.as_str() {
        "" => "_".to_owned(),
        "." | ".." => out.replace('.', "%2E"),
        _ => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpquic_replay::har;

    #[test]
    fn recorded_strings_are_escaped_for_html_css_and_javascript() {
        assert_eq!(
            escape_html(r#"<a href="x">Tom & 'Jerry'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
        assert_eq!(css_string("a\"b\\c\nd"), r#""a\"b\\c\a d""#);
        let js = js_string("</script><!--\"\\");
        assert_eq!(js, r#""\u003c/script\u003e\u003c!--\"\\""#);
        assert_eq!(
            serde_json::from_str::<String>(&js).unwrap(),
            "</script><!--\"\\"
        );
    }

    #[test]
    fn urls_become_https_without_port_credentials_fragment_or_address() {
        let url = |raw: &str| browser_url(raw).map(|(u, why)| (u.to_string(), why));
        assert_eq!(
            url("http://A.test/x#f"),
            Ok(("https://a.test/x".into(), vec![]))
        );
        assert_eq!(
            url("http://u:p@a.test:8080/x"),
            Ok((
                "https://a.test/x".into(),
                vec![Rewrite::Credentials, Rewrite::Port]
            ))
        );
        assert_eq!(
            url("https://10.0.0.1/x"),
            Ok((
                "https://ip-10-0-0-1.mpquic.test/x".into(),
                vec![Rewrite::Address]
            ))
        );
        for bad in [
            "wss://a.test/s",
            "blob:https://a.test/1",
            "not a url",
            "data:,x",
        ] {
            assert_eq!(url(bad), Err(Rewrite::Unusable), "{bad}");
        }
    }

    #[test]
    fn lookup_matches_the_url_a_browser_escapes_differently() {
        let text = r#"{"log": {"entries": [
          {"startedDateTime": "2024-01-01T00:00:00.000Z", "request": {"url": "https://a.test/"},
           "response": {"status": 200, "bodySize": 5000, "content": {"mimeType": "text/html"}}},
          {"startedDateTime": "2024-01-01T00:00:00.010Z", "request": {"url": "https://a.test/{x}|^"},
           "response": {"status": 200, "bodySize": 50, "content": {"mimeType": "image/png"}}}
        ]}}"#;
        let site = Site::build(&har::parse(text, "p").unwrap());
        let key = site.files[1].key.clone();
        // Whatever `url` leaves alone, the browser may percent-encode, and the reverse.
        assert_eq!(
            site.file("https://a.test/%7Bx%7D%7C%5E").map(|f| &f.key),
            Some(&key)
        );
        assert_eq!(
            site.file("https://a.test:443/").map(|f| f.body.len()),
            Some(5000)
        );
        assert!(site.file("https://a.test/other").is_none());
        assert!(site.file("no url").is_none());
    }

    #[test]
    fn file_names_hold_no_separator_dot_segment_or_overlong_component() {
        assert_eq!(file_name("a b/c?d"), "a%20b%2Fc%3Fd");
        assert_eq!(file_name(".."), "%2E%2E");
        assert_eq!(file_name("."), "%2E");
        assert_eq!(file_name(""), "_");
        assert_eq!(file_name(&"x".repeat(300)).len(), 200);
        let (dir, name) = natural_path("https://h.test/a/b/?q=1");
        assert_eq!(
            (dir, name.as_str()),
            (PathBuf::from("h.test/a/b"), "index.html%3Fq=1")
        );
    }

    #[test]
    fn fillers_are_exact_and_keep_the_file_valid() {
        for (filler, n) in [
            (Filler::Text, 0),
            (Filler::Text, 6),
            (Filler::Text, 7),
            (Filler::Text, 100_000),
            (Filler::Comment, 3),
            (Filler::Comment, 4),
            (Filler::Comment, 999),
            (Filler::Zeros, 10),
        ] {
            let mut out = b"x".to_vec();
            fill(&mut out, n, filler);
            assert_eq!(out.len(), n + 1, "{filler:?} {n}");
        }
        let mut html = Vec::new();
        fill(&mut html, 100_000, Filler::Text);
        let html = String::from_utf8(html).unwrap();
        assert!(html.starts_with("<p>") && html.ends_with("-->"));
        assert!(html.find("<!--").unwrap() <= TEXT_BYTES);
        let mut css = Vec::new();
        fill(&mut css, 50, Filler::Comment);
        assert!(css.starts_with(b"/*") && css.ends_with(b"*/"));
    }

    /// A 300-byte document that references 40 images keeps every reference and says so; a
    /// 10-byte image is blank at 10 bytes; a script that references something but was
    /// recorded as plain text is served as JavaScript.
    #[test]
    fn what_does_not_fit_grows_or_goes_blank_with_a_warning() {
        let mut entries = vec![
            r#"{"startedDateTime": "2024-01-01T00:00:00.000Z", "request": {"url": "https://a.test/"},
               "response": {"status": 200, "bodySize": 300, "content": {"mimeType": "text/html"}}}"#
                .to_owned(),
            r#"{"startedDateTime": "2024-01-01T00:00:00.001Z", "request": {"url": "https://a.test/s.js"},
               "_resourceType": "script", "_initiator": "https://a.test/",
               "response": {"status": 200, "bodySize": 5000, "content": {"mimeType": "text/plain"}}}"#
                .to_owned(),
            r#"{"startedDateTime": "2024-01-01T00:00:00.002Z", "request": {"url": "https://a.test/x.json"},
               "_resourceType": "xhr", "_initiator": "https://a.test/s.js",
               "response": {"status": 200, "bodySize": 10, "content": {"mimeType": "application/json"}}}"#
                .to_owned(),
        ];
        for i in 0..40 {
            entries.push(format!(
                r#"{{"startedDateTime": "2024-01-01T00:00:01.{i:03}Z", "request": {{"url": "https://a.test/{i}.png"}},
                   "response": {{"status": 200, "bodySize": 10, "content": {{"mimeType": "image/png"}}}}}}"#
            ));
        }
        let text = format!(r#"{{"log": {{"entries": [{}]}}}}"#, entries.join(","));
        let site = Site::build(&har::parse(&text, "p").unwrap());
        let main = &site.files[0];
        assert!(main.body.len() > 300);
        let html = String::from_utf8_lossy(&main.body);
        assert_eq!(html.matches("<img src=").count(), 40);
        assert!(site
            .warnings
            .iter()
            .any(|w| w.starts_with("1 files are larger") && w.contains("https://a.test/ (")));
        let image = site.file("https://a.test/7.png").unwrap();
        assert_eq!(image.body.as_ref(), &[0; 10]);
        assert!(site
            .warnings
            .iter()
            .any(|w| w.starts_with("40 files are too small") && w.contains("/7.png")));
        let script = site.file("https://a.test/s.js").unwrap();
        assert_eq!(script.content_type, "text/javascript");
        assert_eq!(script.body.len(), 5000);
        // JSON data is padded with spaces, not zeros.
        assert_eq!(
            site.file("https://a.test/x.json").unwrap().body.as_ref(),
            b"          "
        );
    }

    #[test]
    fn a_page_without_objects_builds_an_empty_site() {
        let page = Page {
            id: "empty".into(),
            name: "empty".into(),
            objects: Vec::new(),
            main_document: 3,
            warnings: Vec::new(),
        };
        let site = Site::build(&page);
        assert!(site.files.is_empty());
        assert_eq!(site.warnings, ["the page has no objects"]);
        let check = site.check_order(&[]);
        assert_eq!(check, OrderCheck::default());
        assert!(check.ok());
    }
}
