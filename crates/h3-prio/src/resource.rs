//! What a response is (its resource type), how to tell from what a recording or a request
//! says, and the priority a browser gives each type by default.

use std::fmt;
use std::str::FromStr;

use mpquic_sched::{Priority, Urgency};

/// The kind of a web resource, as far as its priority and the critical rendering path care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceType {
    /// An HTML (or XHTML) document: the page itself, a redirect on the way to it, or an iframe.
    Document,
    /// A CSS stylesheet.
    Stylesheet,
    /// A script. `blocking` says whether it blocks the parser and so rendering (a classic
    /// script without `async` or `defer`); see [`ScriptEvidence`](crate::ScriptEvidence) for
    /// how it is decided. Classification from a type name, MIME type or file name cannot tell
    /// and says `blocking: true`, as \[PB\] counts every script.
    Script {
        /// Whether the script blocks rendering.
        blocking: bool,
    },
    /// A web font.
    Font,
    /// An image.
    Image,
    /// Audio, video or a text track.
    Media,
    /// Data fetched by a script: `XMLHttpRequest`, `fetch()`, `EventSource`.
    Fetch,
    /// A web app manifest.
    Manifest,
    /// A beacon, `<a ping>` or report: the page does not wait for its response.
    Ping,
    /// Anything else (or unknown).
    Other,
}

impl ResourceType {
    /// A script that blocks rendering.
    pub const BLOCKING_SCRIPT: ResourceType = ResourceType::Script { blocking: true };
    /// A script that does not (`async`, `defer`, or inserted by another script).
    pub const ASYNC_SCRIPT: ResourceType = ResourceType::Script { blocking: false };

    /// The type from Chrome DevTools' resource type name, as HAR files exported by Chrome and
    /// chrome-har write it in `_resourceType` (`document`, `stylesheet`, `script`, `font`,
    /// `image`, `media`, `xhr`, `fetch`, ...; case is ignored). Names it does not know are
    /// [`ResourceType::Other`]. Scripts are `blocking: true` (the name does not tell).
    pub fn from_devtools(name: &str) -> ResourceType {
        let name = name.trim();
        let is = |s: &str| name.eq_ignore_ascii_case(s);
        if is("document") {
            ResourceType::Document
        } else if is("stylesheet") {
            ResourceType::Stylesheet
        } else if is("script") {
            ResourceType::BLOCKING_SCRIPT
        } else if is("font") {
            ResourceType::Font
        } else if is("image") {
            ResourceType::Image
        } else if is("media") || is("texttrack") {
            ResourceType::Media
        } else if is("xhr") || is("fetch") || is("eventsource") {
            ResourceType::Fetch
        } else if is("manifest") {
            ResourceType::Manifest
        } else if is("ping") || is("cspviolationreport") || is("csp-violation-report") {
            ResourceType::Ping
        } else {
            ResourceType::Other
        }
    }

    /// The type from a `content-type` value such as `text/html; charset=utf-8` (parameters
    /// and case ignored), or `None` when the MIME type does not say. JSON, XML and plain text
    /// say nothing: a script may fetch them or a document may link them.
    pub fn from_mime(mime: &str) -> Option<ResourceType> {
        let essence = mime.split(';').next().unwrap_or_default().trim();
        let mime = essence.to_ascii_lowercase();
        let (top, sub) = mime.split_once('/')?;
        Some(match (top, sub) {
            ("text", "html") | ("application", "xhtml+xml") => ResourceType::Document,
            ("text", "css") => ResourceType::Stylesheet,
            (_, s) if s.contains("javascript") || s.contains("ecmascript") => {
                ResourceType::BLOCKING_SCRIPT
            }
            ("font", _) => ResourceType::Font,
            ("application", s) if s.contains("font") || s == "vnd.ms-fontobject" => {
                ResourceType::Font
            }
            ("image", _) => ResourceType::Image,
            ("video" | "audio", _) | ("text", "vtt") => ResourceType::Media,
            ("application", "manifest+json") => ResourceType::Manifest,
            _ => return None,
        })
    }

    /// The type from the extension of a URL's or file's last path segment (query and fragment
    /// ignored), or `None` when there is none or it is not a known one.
    pub fn from_path(path: &str) -> Option<ResourceType> {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let last = path.rsplit('/').next().unwrap_or_default();
        let (_, ext) = last.rsplit_once('.')?;
        let ext = ext.to_ascii_lowercase();
        Some(match ext.as_str() {
            "html" | "htm" | "xhtml" => ResourceType::Document,
            "css" => ResourceType::Stylesheet,
            "js" | "mjs" => ResourceType::BLOCKING_SCRIPT,
            "woff" | "woff2" | "ttf" | "otf" | "eot" => ResourceType::Font,
            "png" | "jpg" | "jpeg" | "gif" | "webp" | "avif" | "svg" | "ico" | "bmp" => {
                ResourceType::Image
            }
            "mp4" | "webm" | "mp3" | "ogg" | "m4a" | "wav" | "vtt" => ResourceType::Media,
            "webmanifest" => ResourceType::Manifest,
            _ => return None,
        })
    }

    /// The type from whatever is known, in order of trust: a recorded DevTools type name,
    /// then the MIME type, then the URL's extension; [`ResourceType::Other`] if none tells.
    pub fn classify(devtools: Option<&str>, mime: Option<&str>, url: Option<&str>) -> Self {
        if let Some(name) = devtools.filter(|n| !n.trim().is_empty()) {
            return ResourceType::from_devtools(name);
        }
        mime.and_then(ResourceType::from_mime)
            .or_else(|| url.and_then(ResourceType::from_path))
            .unwrap_or(ResourceType::Other)
    }
}

/// A priority recorded by Chrome: DevTools' `ResourcePriority` (`VeryHigh`, `High`, `Medium`,
/// `Low`, `VeryLow`), which HAR files exported by Chrome carry as `_priority` (and
/// `_initialPriority`). DevTools' network panel labels the two ends "Highest" and "Lowest";
/// those names are accepted too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChromePriority {
    /// `VeryHigh`: `net::HIGHEST`, urgency 0.
    VeryHigh,
    /// `High`: `net::MEDIUM`, urgency 1.
    High,
    /// `Medium`: `net::LOW`, urgency 2.
    Medium,
    /// `Low`: `net::LOWEST`, urgency 3.
    Low,
    /// `VeryLow`: `net::IDLE`, urgency 4.
    VeryLow,
}

/// A `_priority` string that is not one of Chrome's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a Chrome priority (VeryHigh, High, Medium, Low, VeryLow)")]
pub struct UnknownChromePriority(pub String);

impl ChromePriority {
    /// Parses a recorded priority. Case, spaces, `-` and `_` are ignored, so `VeryHigh`,
    /// `veryhigh` and `Very High` are the same; `Highest` is `VeryHigh` and `Lowest` is
    /// `VeryLow`.
    pub fn parse(name: &str) -> Option<ChromePriority> {
        let mut key = [0u8; 16];
        let mut len = 0;
        for b in name.bytes().filter(|b| !matches!(b, b' ' | b'-' | b'_')) {
            *key.get_mut(len)? = b.to_ascii_lowercase();
            len += 1;
        }
        Some(match &key[..len] {
            b"veryhigh" | b"highest" => ChromePriority::VeryHigh,
            b"high" => ChromePriority::High,
            b"medium" => ChromePriority::Medium,
            b"low" => ChromePriority::Low,
            b"verylow" | b"lowest" => ChromePriority::VeryLow,
            _ => return None,
        })
    }

    /// The urgency Chrome sends for it over HTTP/3. Blink's load priorities map onto
    /// `net::RequestPriority` (`VeryHigh` = `HIGHEST`, `High` = `MEDIUM`, `Medium` = `LOW`,
    /// `Low` = `LOWEST`, `VeryLow` = `IDLE`), and Chromium's
    /// `ConvertRequestPriorityToQuicPriority` (net/quic/quic_http_utils.cc) returns
    /// `HIGHEST - priority`: 0, 1, 2, 3, 4.
    pub const fn urgency(self) -> u8 {
        match self {
            ChromePriority::VeryHigh => 0,
            ChromePriority::High => 1,
            ChromePriority::Medium => 2,
            ChromePriority::Low => 3,
            ChromePriority::VeryLow => 4,
        }
    }

    /// The name of Chromium's `net::RequestPriority` it maps to.
    pub const fn net_priority(self) -> &'static str {
        match self {
            ChromePriority::VeryHigh => "HIGHEST",
            ChromePriority::High => "MEDIUM",
            ChromePriority::Medium => "LOW",
            ChromePriority::Low => "LOWEST",
            ChromePriority::VeryLow => "IDLE",
        }
    }

    /// The name as DevTools writes it (`VeryHigh`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ChromePriority::VeryHigh => "VeryHigh",
            ChromePriority::High => "High",
            ChromePriority::Medium => "Medium",
            ChromePriority::Low => "Low",
            ChromePriority::VeryLow => "VeryLow",
        }
    }

    /// The priority Chrome sends for a resource of type `ty` loaded at this priority: this
    /// urgency, and the incremental flag of `ty` in [`Browser::Chrome`]'s table (Chrome
    /// decides incrementality by type alone).
    pub fn priority_for(self, ty: ResourceType) -> Priority {
        let incremental = Browser::Chrome.default_priority(ty).incremental();
        Urgency::new(self.urgency()).map_or(Priority::DEFAULT, |u| Priority::new(u, incremental))
    }
}

impl FromStr for ChromePriority {
    type Err = UnknownChromePriority;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ChromePriority::parse(s).ok_or_else(|| UnknownChromePriority(s.to_owned()))
    }
}

impl fmt::Display for ChromePriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whose default priorities to use for a resource type. Chrome's is the default, as Chrome
/// recorded the pages this project replays.
///
/// # Chrome
///
/// Blink gives each resource type a load priority (`TypeToPriority` in
/// third_party/blink/renderer/platform/loader/fetch/resource_fetcher.cc; scripts and images
/// are adjusted in `ComputeLoadPriority`), which maps to an urgency as in
/// [`ChromePriority::urgency`]. Main-frame navigations are requested at `net::HIGHEST`. The
/// incremental flag is Blink's `ShouldLoadIncremental` (false for CSS, scripts, fonts and
/// manifests, true for images, media and `kRaw` fetches); navigations use
/// `net::kDefaultPriorityIncremental`, which is true.
///
/// | type | Blink priority | urgency | incremental |
/// |---|---|---|---|
/// | document | navigation, `HIGHEST` | 0 | yes |
/// | stylesheet | VeryHigh | 0 | no |
/// | font | VeryHigh | 0 | no |
/// | script, blocking | High | 1 | no |
/// | script, async/defer | Low | 3 | no |
/// | fetch / XHR | High (`kRaw`) | 1 | yes |
/// | image | Low (High once layout finds it in the viewport) | 3 | yes |
/// | media | Low | 3 | yes |
/// | manifest | Medium | 2 | no |
/// | ping / beacon | VeryLow | 4 | yes (uncertain) |
/// | other | (RFC 9218 default) | 3 | no |
///
/// Uncertain: pings are VeryLow in every recording here, but which Blink type (and so which
/// incremental flag) beacons take was not checked; "other" has no Chrome value and takes
/// RFC 9218's default. Late-body parser-blocking scripts found by the preload scanner are
/// Medium (urgency 2) in Chrome; the table gives the head case.
///
/// # Firefox
///
/// From "Firefox Network Scheduling and Prioritization" (firefox-source-docs,
/// networking/http/prioritization, for Firefox 132 and later), whose table derives urgency
/// from each request's class of service through `nsHttpHandler::UrgencyFromCoSFlags`
/// (UrgentStart 1, Leader 2, Unblocked 3, Follower 4, Background and Speculative 6, no flag 4;
/// then adjusted by the `nsISupportsPriority` value, e.g. `PRIORITY_HIGHEST` by -2):
///
/// | type | class of service, priority | urgency | incremental |
/// |---|---|---|---|
/// | document | UrgentStart, HIGHEST | 0 | yes |
/// | stylesheet | Leader, NORMAL | 2 | no |
/// | font | TailForbidden, HIGH | 3 | no |
/// | script, blocking | Leader, NORMAL | 2 | no |
/// | script, async/defer | Unblocked, NORMAL | 3 | no |
/// | fetch / XHR | none, NORMAL | 4 | no |
/// | image | none, LOW | 5 | yes |
/// | media | not in the table | 4 | yes (assumed) |
/// | manifest | not in the table | 4 | no (assumed) |
/// | ping / beacon | not in the table | 4 | no (assumed) |
/// | other | none, NORMAL | 4 | no |
///
/// Rows marked "not in the table" are assumptions: a request with no class-of-service flag at
/// normal priority gets 4 from `UrgencyFromCoSFlags`; media is taken as incremental like
/// images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Browser {
    /// Chrome (Chromium, Blink).
    #[default]
    Chrome,
    /// Firefox (Gecko).
    Firefox,
}

impl Browser {
    /// The priority this browser requests a resource of type `ty` with by default (see the
    /// tables above).
    pub fn default_priority(self, ty: ResourceType) -> Priority {
        let (urgency, incremental) = match self {
            Browser::Chrome => match ty {
                ResourceType::Document => (0, true),
                ResourceType::Stylesheet | ResourceType::Font => (0, false),
                ResourceType::Script { blocking: true } => (1, false),
                ResourceType::Script { blocking: false } => (3, false),
                ResourceType::Fetch => (1, true),
                ResourceType::Image | ResourceType::Media => (3, true),
                ResourceType::Manifest => (2, false),
                ResourceType::Ping => (4, true),
                ResourceType::Other => (3, false),
            },
            Browser::Firefox => match ty {
                ResourceType::Document => (0, true),
                ResourceType::Stylesheet => (2, false),
                ResourceType::Font => (3, false),
                ResourceType::Script { blocking: true } => (2, false),
                ResourceType::Script { blocking: false } => (3, false),
                ResourceType::Fetch => (4, false),
                ResourceType::Image => (5, true),
                ResourceType::Media => (4, true),
                ResourceType::Manifest | ResourceType::Ping | ResourceType::Other => (4, false),
            },
        };
        Urgency::new(urgency).map_or(Priority::DEFAULT, |u| Priority::new(u, incremental))
    }

    /// The browser's name, lower case (`chrome`, `firefox`).
    pub const fn name(self) -> &'static str {
        match self {
            Browser::Chrome => "chrome",
            Browser::Firefox => "firefox",
        }
    }
}

/// A browser name that is neither `chrome` nor `firefox`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown browser {0:?} (chrome or firefox)")]
pub struct UnknownBrowser(pub String);

impl FromStr for Browser {
    type Err = UnknownBrowser;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("chrome") || s.eq_ignore_ascii_case("chromium") {
            Ok(Browser::Chrome)
        } else if s.eq_ignore_ascii_case("firefox") {
            Ok(Browser::Firefox)
        } else {
            Err(UnknownBrowser(s.to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ResourceType; 11] = [
        ResourceType::Document,
        ResourceType::Stylesheet,
        ResourceType::Font,
        ResourceType::BLOCKING_SCRIPT,
        ResourceType::ASYNC_SCRIPT,
        ResourceType::Fetch,
        ResourceType::Image,
        ResourceType::Media,
        ResourceType::Manifest,
        ResourceType::Ping,
        ResourceType::Other,
    ];

    fn table(browser: Browser) -> Vec<(u8, bool)> {
        ALL.iter()
            .map(|ty| {
                let p = browser.default_priority(*ty);
                (p.urgency().get(), p.incremental())
            })
            .collect()
    }

    #[test]
    fn chrome_default_table() {
        assert_eq!(
            table(Browser::Chrome),
            [
                (0, true),  // document
                (0, false), // stylesheet
                (0, false), // font
                (1, false), // blocking script
                (3, false), // async script
                (1, true),  // fetch
                (3, true),  // image
                (3, true),  // media
                (2, false), // manifest
                (4, true),  // ping
                (3, false), // other
            ]
        );
        assert_eq!(Browser::default(), Browser::Chrome);
    }

    #[test]
    fn firefox_default_table() {
        assert_eq!(
            table(Browser::Firefox),
            [
                (0, true),  // document
                (2, false), // stylesheet
                (3, false), // font
                (2, false), // blocking script
                (3, false), // async script
                (4, false), // fetch
                (5, true),  // image
                (4, true),  // media
                (4, false), // manifest
                (4, false), // ping
                (4, false), // other
            ]
        );
        assert_eq!("Firefox".parse(), Ok(Browser::Firefox));
        assert_eq!(" chrome ".parse(), Ok(Browser::Chrome));
        assert!("safari".parse::<Browser>().is_err());
    }

    /// Both tables put the critical rendering path ahead of images.
    #[test]
    fn both_tables_rank_render_blocking_before_images() {
        for browser in [Browser::Chrome, Browser::Firefox] {
            let u = |ty| browser.default_priority(ty).urgency();
            let image = u(ResourceType::Image);
            for ty in [ResourceType::Stylesheet, ResourceType::BLOCKING_SCRIPT] {
                assert!(u(ty) < image, "{browser:?} {ty:?}");
            }
            assert!(u(ResourceType::BLOCKING_SCRIPT) < u(ResourceType::ASYNC_SCRIPT));
        }
    }

    #[test]
    fn chrome_priorities_map_to_urgencies() {
        let names = ["VeryHigh", "High", "Medium", "Low", "VeryLow"];
        for (urgency, name) in names.iter().enumerate() {
            let p = ChromePriority::parse(name).unwrap();
            assert_eq!(usize::from(p.urgency()), urgency);
            assert_eq!(p.name(), *name);
            assert_eq!(p.to_string().parse(), Ok(p));
        }
        assert_eq!(
            ChromePriority::parse("Highest"),
            Some(ChromePriority::VeryHigh)
        );
        assert_eq!(
            ChromePriority::parse("lowest"),
            Some(ChromePriority::VeryLow)
        );
        assert_eq!(
            ChromePriority::parse("very high"),
            Some(ChromePriority::VeryHigh)
        );
        assert_eq!(
            ChromePriority::parse("VERY_LOW"),
            Some(ChromePriority::VeryLow)
        );
        for bad in [
            "",
            "Urgent",
            "VeryVeryHigh",
            "Higher",
            "veryhighveryhighveryhigh",
            "0",
        ] {
            assert_eq!(ChromePriority::parse(bad), None, "{bad:?}");
        }
        assert!("Urgent".parse::<ChromePriority>().is_err());
        assert_eq!(ChromePriority::VeryHigh.net_priority(), "HIGHEST");
        assert_eq!(ChromePriority::VeryLow.net_priority(), "IDLE");
        // An image boosted to High keeps its incremental flag.
        let boosted = ChromePriority::High.priority_for(ResourceType::Image);
        assert_eq!((boosted.urgency().get(), boosted.incremental()), (1, true));
    }

    #[test]
    fn classification_from_devtools_mime_and_path() {
        use ResourceType as T;
        for (name, ty) in [
            ("document", T::Document),
            ("Stylesheet", T::Stylesheet),
            ("script", T::BLOCKING_SCRIPT),
            ("font", T::Font),
            ("image", T::Image),
            ("media", T::Media),
            ("xhr", T::Fetch),
            ("fetch", T::Fetch),
            ("manifest", T::Manifest),
            ("ping", T::Ping),
            ("preflight", T::Other),
            ("other", T::Other),
            ("", T::Other),
        ] {
            assert_eq!(T::from_devtools(name), ty, "{name:?}");
        }
        for (mime, ty) in [
            ("text/html; charset=utf-8", Some(T::Document)),
            ("application/xhtml+xml", Some(T::Document)),
            ("TEXT/CSS", Some(T::Stylesheet)),
            ("application/javascript", Some(T::BLOCKING_SCRIPT)),
            ("text/javascript;charset=UTF-8", Some(T::BLOCKING_SCRIPT)),
            ("application/x-javascript", Some(T::BLOCKING_SCRIPT)),
            ("font/woff2", Some(T::Font)),
            ("application/font-woff", Some(T::Font)),
            ("image/svg+xml", Some(T::Image)),
            ("video/mp4", Some(T::Media)),
            ("application/json", None),
            ("text/plain", None),
            ("nonsense", None),
            ("", None),
        ] {
            assert_eq!(T::from_mime(mime), ty, "{mime:?}");
        }
        for (path, ty) in [
            ("https://a.example/style.css?v=3", Some(T::Stylesheet)),
            ("/index.HTML", Some(T::Document)),
            ("app.min.js#x", Some(T::BLOCKING_SCRIPT)),
            ("https://a.example/img/logo.png", Some(T::Image)),
            ("https://a.example/", None),
            ("https://a.example/api", None),
            ("https://a.example.com/v1.2/data", None),
            ("", None),
        ] {
            assert_eq!(T::from_path(path), ty, "{path:?}");
        }
        assert_eq!(T::classify(Some("xhr"), Some("text/html"), None), T::Fetch);
        assert_eq!(
            T::classify(None, Some("application/json"), Some("/a.js")),
            T::BLOCKING_SCRIPT
        );
        assert_eq!(T::classify(Some(" "), None, None), T::Other);
    }
}
