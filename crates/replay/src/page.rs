//! The page model: what a recorded page load asked for, in the order and with the dependencies
//! a browser would ask for it again.

use std::collections::HashSet;
use std::time::Duration;

use mpquic_h3_prio::{Priority, ResourceType};
use mpquic_sched::sim;
use mpquic_sched::Lead;

/// When the client requests an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discovery {
    /// The page request itself: object 0, requested at time zero.
    Document,
    /// When object `parent` (a lower index) has completed: its recorded initiator, the
    /// previous hop of the document's redirect chain, or the main document when the recorded
    /// initiator is not an earlier entry of the page.
    After {
        /// Index of the parent in [`Page::objects`].
        parent: usize,
    },
    /// At this offset after the main document has completed: the recorded start time relative
    /// to the recorded completion of the main document (zero if it started earlier).
    AfterDocument(Duration),
}

/// One recorded request and response.
#[derive(Debug, Clone, PartialEq)]
pub struct PageObject {
    /// The recorded URL.
    pub url: String,
    /// The path this object is served under: `/{page id}/{host}{path}{?query}`, percent-encoded
    /// where a URI needs it, unique inside the page (a repeated URL gets `~2`, `~3`, ...).
    pub key: String,
    /// Response body bytes the server sends (the recorded transfer size; 0 for an empty body).
    pub size: u64,
    /// The recorded MIME type (`application/octet-stream` when none was recorded).
    pub content_type: String,
    /// What kind of resource it is.
    pub resource_type: ResourceType,
    /// The RFC 9218 priority the browser sends for it.
    pub priority: Priority,
    /// Whether the first rendering waits for it (document, CSS, render-blocking script).
    pub critical: bool,
    /// When the client requests it.
    pub discovery: Discovery,
    /// Its recorded start, from the page's first request.
    pub recorded_start: Duration,
}

/// A recorded page: its objects, the document first.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Short identifier (the HAR file's stem), the first segment of every object's key.
    pub id: String,
    /// The page's title, or its identifier when the HAR has none.
    pub name: String,
    /// The objects, in recorded start order; object 0 is the page request.
    pub objects: Vec<PageObject>,
    /// Index of the main document (the first 2xx document; after any redirects).
    pub main_document: usize,
    /// What the reader had to guess, one line each (a recorded initiator that is not in the
    /// page, no 2xx document).
    pub warnings: Vec<String>,
}

impl Page {
    /// Total body bytes of the page.
    pub fn total_bytes(&self) -> u64 {
        self.objects.iter().map(|o| o.size).sum()
    }

    /// How many objects are critical.
    pub fn critical_count(&self) -> usize {
        self.objects.iter().filter(|o| o.critical).count()
    }

    /// Whether any object follows a recorded initiator (rather than a recorded time).
    pub fn has_initiator_graph(&self) -> bool {
        self.objects.iter().enumerate().any(|(i, o)| {
            matches!(o.discovery, Discovery::After { .. })
                && !self.is_redirect(i)
                && i != self.main_document
        })
    }

    /// Whether object `index` is a hop of the redirect chain before the main document (the
    /// page request, or a document before the main one): a request the browser's navigation
    /// makes, not a resource the page references.
    pub fn is_redirect(&self, index: usize) -> bool {
        index < self.main_document
            && (index == 0
                || self
                    .objects
                    .get(index)
                    .is_some_and(|o| o.resource_type == ResourceType::Document))
    }

    /// For each object that leads to further requests (descendants through
    /// [`Discovery::After`], and for the main document also the objects requested after it,
    /// [`Discovery::AfterDocument`]), the most urgent of them and their bytes in all: what a
    /// server that knows the page tells the scheduler
    /// ([`mpquic_core::Connection::set_stream_leads_to`]), so that a small script that leads to
    /// critical CSS does not wait behind images of its own urgency, and a script that starts a
    /// chain of requests goes before those that start none.
    pub fn leads_to(&self) -> Vec<Option<Lead>> {
        let mut below: Vec<Option<Lead>> = vec![None; self.objects.len()];
        // A parent has a lower index than its children: one pass from the end sees every
        // child's subtree before its parent.
        for child in (0..self.objects.len()).rev() {
            // What is requested after the main document completes, the document leads to.
            let parent = match self.objects[child].discovery {
                Discovery::After { parent } => Some(parent),
                Discovery::AfterDocument(_) => Some(self.main_document),
                Discovery::Document => None,
            };
            if let Some(parent) = parent.filter(|&parent| parent < child) {
                let object = &self.objects[child];
                let own = Lead {
                    urgency: object.priority.urgency(),
                    bytes: object.size,
                };
                let through = below[child].map_or(own, |lead| lead.and(own));
                if let Some(slot) = below.get_mut(parent) {
                    *slot = Some(slot.map_or(through, |lead| lead.and(through)));
                }
            }
        }
        below
    }

    /// The object served under `key`.
    pub fn object(&self, key: &str) -> Option<&PageObject> {
        self.objects.iter().find(|o| o.key == key)
    }

    /// The page as the simulator loads it: each object requested at its recorded start (from
    /// the first request), at least one byte (the stream's FIN has to travel).
    pub fn to_sim_page(&self) -> sim::Page {
        let mut page = sim::Page::new(self.name.clone());
        for o in &self.objects {
            page.push(
                sim::Object::new(o.url.clone(), o.size.max(1))
                    .with_urgency(o.priority.urgency())
                    .with_critical(o.critical)
                    .with_start(sim::Start::At(o.recorded_start)),
            );
        }
        page
    }
}

/// Makes keys for a page's URLs: `/{page}/{host}{path}{?query}`, unique.
#[derive(Debug)]
pub(crate) struct Keys {
    page: String,
    used: HashSet<String>,
}

impl Keys {
    pub(crate) fn new(page: &str) -> Self {
        Self {
            page: encode(page.trim_matches('/')),
            used: HashSet::new(),
        }
    }

    /// The key of `url`; the scheme and any fragment are dropped.
    pub(crate) fn key(&mut self, url: &str) -> String {
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        let rest = rest.split('#').next().unwrap_or_default();
        let base = format!("/{}/{}", self.page, encode(rest));
        let mut key = base.clone();
        let mut n = 1;
        while !self.used.insert(key.clone()) {
            n += 1;
            key = format!("{base}~{n}");
        }
        key
    }
}

/// Percent-encodes every byte a URI path or query may not hold as it is (RFC 3986's
/// unreserved and sub-delims characters, `:`, `@`, `/`, `?` and `%` stay).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpquic_sched::Urgency;

    fn object(name: &str, urgency: u8, kind: ResourceType, discovery: Discovery) -> PageObject {
        PageObject {
            url: format!("https://a.test/{name}"),
            key: format!("/t/{name}"),
            size: 1000,
            content_type: "application/octet-stream".to_owned(),
            resource_type: kind,
            priority: Priority::new(Urgency::new(urgency).unwrap(), false),
            critical: false,
            discovery,
            recorded_start: Duration::ZERO,
        }
    }

    /// A script leads to what it inserts, and to what that inserts: the most urgent of them
    /// and their bytes in all. The document also leads to what is requested after it
    /// completes.
    #[test]
    fn a_stream_leads_to_its_descendants() {
        let script = ResourceType::Script { blocking: false };
        let after = |parent| Discovery::After { parent };
        let page = Page {
            id: "t".to_owned(),
            name: "t".to_owned(),
            objects: vec![
                object("", 0, ResourceType::Document, Discovery::Document),
                object("img.jpg", 3, ResourceType::Image, after(0)),
                object("loader.js", 3, script, after(0)),
                object("config.js", 3, script, after(2)),
                object("theme.css", 0, ResourceType::Stylesheet, after(3)),
                object("tracker.js", 4, script, after(0)),
                object("pixel.gif", 5, ResourceType::Image, after(5)),
                object(
                    "late.png",
                    6,
                    ResourceType::Image,
                    Discovery::AfterDocument(Duration::ZERO),
                ),
            ],
            main_document: 0,
            warnings: Vec::new(),
        };
        let lead = |urgency, objects: u64| {
            Some(Lead {
                urgency: Urgency::new(urgency).unwrap(),
                bytes: objects * 1000,
            })
        };
        assert_eq!(
            page.leads_to(),
            vec![
                lead(0, 7),
                None,
                lead(0, 2),
                lead(0, 1),
                None,
                lead(5, 1),
                None,
                None
            ]
        );
    }

    #[test]
    fn keys_are_unique_and_uri_safe() {
        let mut keys = Keys::new("site");
        assert_eq!(
            keys.key("https://a.com/x.js?v=1#top"),
            "/site/a.com/x.js?v=1"
        );
        assert_eq!(keys.key("http://a.com/x.js?v=1"), "/site/a.com/x.js?v=1~2");
        assert_eq!(
            keys.key("https://b.com/a b|ü"),
            "/site/b.com/a%20b%7C%C3%BC"
        );
        for key in ["/site/a.com/x.js?v=1~2", "/site/b.com/a%20b%7C%C3%BC"] {
            let uri: http::Uri = format!("https://localhost{key}").parse().unwrap();
            assert_eq!(uri.path_and_query().unwrap().as_str(), key);
        }
    }
}
