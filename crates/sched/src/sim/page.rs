//! A web page as a page-load experiment loads it: objects with a size, an urgency, whether they block
//! the first rendering, and when the browser asks for them.

use std::time::Duration;

use super::SimError;
use crate::Urgency;

/// The largest object a page may have (1 GiB): far beyond any web object, and small enough
/// that no sum of sizes can overflow.
pub const MAX_OBJECT_BYTES: u64 = 1 << 30;

/// The most objects a page may have.
pub const MAX_OBJECTS: usize = 100_000;

/// When the client requests an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// At this offset from the page request (e.g. a recorded start time).
    At(Duration),
    /// When object `parent` has completed at the client, plus `delay`: the browser discovers
    /// the object while it processes its parent (a stylesheet in the HTML, an image in a CSS).
    After {
        /// Index of the parent in [`Page::objects`]; must be lower than the child's.
        parent: usize,
        /// Time between the parent's completion and the request (browser work; 0 to ignore it).
        delay: Duration,
    },
}

/// One object of a page: one request, one response stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Its name or URL, for reports.
    pub name: String,
    /// Response body bytes the server sends (at least 1).
    pub size: u64,
    /// Its RFC 9218 urgency, as the browser would signal it.
    pub urgency: Urgency,
    /// Whether it is on the critical rendering path (document, CSS, render-blocking
    /// JavaScript): the first rendering time waits for every critical object.
    pub critical: bool,
    /// When the client requests it.
    pub start: Start,
}

impl Object {
    /// An object requested with the page, not critical, of the default urgency.
    pub fn new(name: impl Into<String>, size: u64) -> Self {
        Self {
            name: name.into(),
            size,
            urgency: Urgency::DEFAULT,
            critical: false,
            start: Start::At(Duration::ZERO),
        }
    }

    /// Sets the urgency.
    pub fn with_urgency(mut self, urgency: Urgency) -> Self {
        self.urgency = urgency;
        self
    }

    /// Marks the object critical (or not).
    pub fn with_critical(mut self, critical: bool) -> Self {
        self.critical = critical;
        self
    }

    /// Sets when it is requested.
    pub fn with_start(mut self, start: Start) -> Self {
        self.start = start;
        self
    }
}

/// A page: the objects a browser fetches to render and load it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The page's name, for reports.
    pub name: String,
    /// Its objects; a parent always comes before its children.
    pub objects: Vec<Object>,
}

impl Page {
    /// The builtin pages' names, selectable with [`Page::builtin`].
    pub const BUILTIN: &'static [&'static str] = &["bing-2013", "youtube-2013"];

    /// A page with no objects yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            objects: Vec::new(),
        }
    }

    /// Appends an object and returns its index (to name it as a parent).
    pub fn push(&mut self, object: Object) -> usize {
        self.objects.push(object);
        self.objects.len() - 1
    }

    /// A builtin page by name: see [`Page::BUILTIN`].
    pub fn builtin(name: &str) -> Result<Page, SimError> {
        match name {
            "bing-2013" => Ok(super::builtin::bing_2013()),
            "youtube-2013" => Ok(super::builtin::youtube_2013()),
            _ => Err(SimError::UnknownPage {
                name: name.to_owned(),
                known: Self::BUILTIN.join(", "),
            }),
        }
    }

    /// Sum of every object's size.
    pub fn total_bytes(&self) -> u64 {
        self.objects
            .iter()
            .fold(0, |sum: u64, o| sum.saturating_add(o.size))
    }

    /// Number of critical objects.
    pub fn critical_count(&self) -> usize {
        self.objects.iter().filter(|o| o.critical).count()
    }

    /// Checks that the page can be loaded: 1 to [`MAX_OBJECTS`] objects, every object
    /// of 1 to [`MAX_OBJECT_BYTES`] bytes, every parent listed before its child (which also
    /// rules out cycles), start offsets and delays within an hour.
    pub fn validate(&self) -> Result<(), SimError> {
        let fail = |reason: String| SimError::InvalidPage {
            page: self.name.clone(),
            reason,
        };
        if self.objects.is_empty() {
            return Err(fail("a page needs at least one object".into()));
        }
        if self.objects.len() > MAX_OBJECTS {
            return Err(fail(format!("at most {MAX_OBJECTS} objects")));
        }
        for (index, object) in self.objects.iter().enumerate() {
            if object.size > MAX_OBJECT_BYTES {
                return Err(fail(format!(
                    "object {index} ({}) has {} bytes; at most {MAX_OBJECT_BYTES} are allowed",
                    object.name, object.size
                )));
            }
            if object.size == 0 {
                return Err(fail(format!(
                    "object {index} ({}) is empty; a response carries at least one byte",
                    object.name
                )));
            }
            match object.start {
                Start::After { parent, .. } if parent >= index => {
                    return Err(fail(format!(
                        "object {index} ({}) depends on object {parent}, which does not come \
                         before it",
                        object.name
                    )));
                }
                Start::At(at) | Start::After { delay: at, .. }
                    if at > Duration::from_secs(3600) =>
                {
                    return Err(fail(format!(
                        "object {index} ({}) starts more than an hour in",
                        object.name
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_pages_validate_and_unknown_names_list_them() {
        for name in Page::BUILTIN {
            let page = Page::builtin(name).unwrap();
            assert_eq!(page.name, *name);
            page.validate().unwrap();
        }
        let err = Page::builtin("amazon").unwrap_err().to_string();
        assert!(
            err.contains("bing-2013") && err.contains("youtube-2013"),
            "{err}"
        );
    }

    #[test]
    fn bad_pages_are_refused() {
        assert!(Page::new("empty").validate().is_err());
        let mut page = Page::new("zero");
        page.push(Object::new("a", 0));
        assert!(page.validate().is_err());
        let mut page = Page::new("forward");
        page.push(Object::new("a", 1).with_start(Start::After {
            parent: 0,
            delay: Duration::ZERO,
        }));
        assert!(page.validate().is_err());
    }
}
