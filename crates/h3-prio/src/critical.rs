//! The critical rendering path: the objects the first rendering waits for.
//!
//! \[PB\] defines the first rendering time as the time until "the critical objects" have
//! arrived: the HTML document, the CSS, and the JavaScript that blocks rendering (browser
//! processing time ignored). Fonts and images are not on it.

use crate::resource::{ChromePriority, ResourceType};

impl ResourceType {
    /// Whether a resource of this type is on the critical rendering path: a document, a
    /// stylesheet, or a render-blocking script. Which documents count (the page's own, not its
    /// iframes) is up to the caller; [`CriticalPath`] decides it for a page load in order.
    pub const fn is_critical(self) -> bool {
        matches!(
            self,
            ResourceType::Document
                | ResourceType::Stylesheet
                | ResourceType::Script { blocking: true }
        )
    }
}

/// What is known about a script, to decide whether it blocks rendering. Every field is
/// optional; [`ScriptEvidence::blocks_rendering`] uses the first that is known, in field order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScriptEvidence {
    /// Whether the `<script>` element has `async` or `defer` (or is a module, which defers by
    /// default). Known to a page's own markup, rarely to a recording.
    pub async_or_defer: Option<bool>,
    /// The priority Chrome loaded it at (HAR `_priority`). Chrome loads parser-blocking
    /// scripts in the head at High, late-body ones found by the preload scanner at Medium, and
    /// async, deferred and script-inserted ones at Low (Blink's `TypeToPriority` and
    /// `ComputeLoadPriority`); so High or VeryHigh means blocking. A late-body script at Medium
    /// does block the parser, but only after the content above it can render, so it is not
    /// counted (as the recorded pages' replay has always done).
    pub chrome_priority: Option<ChromePriority>,
    /// Whether another script inserted it (HAR `_initiator_type` is `script` rather than
    /// `parser`). Script-inserted scripts are async unless the inserting script says otherwise,
    /// so they block nothing; a parser-initiated script could still be async, so `false` here
    /// decides nothing.
    pub script_inserted: Option<bool>,
    /// Whether it was requested before the page's DOMContentLoaded (HAR
    /// `pageTimings.onContentLoad`): DOMContentLoaded waits for every parser-blocking script,
    /// so one requested later cannot be one. (Deferred scripts also run before it, so this
    /// over-counts.)
    pub before_dom_content_loaded: Option<bool>,
}

impl ScriptEvidence {
    /// Whether the script blocks rendering, from the first piece of evidence known:
    ///
    /// 1. `async_or_defer`: blocking unless async or deferred;
    /// 2. `chrome_priority`: blocking if High or VeryHigh;
    /// 3. `script_inserted`: not blocking if a script inserted it (`false` falls through);
    /// 4. `before_dom_content_loaded`: blocking if requested before DOMContentLoaded;
    /// 5. nothing known: blocking, as \[PB\] counts every script.
    pub const fn blocks_rendering(&self) -> bool {
        if let Some(deferred) = self.async_or_defer {
            return !deferred;
        }
        if let Some(priority) = self.chrome_priority {
            return matches!(priority, ChromePriority::VeryHigh | ChromePriority::High);
        }
        if let Some(true) = self.script_inserted {
            return false;
        }
        if let Some(before) = self.before_dom_content_loaded {
            return before;
        }
        true
    }

    /// The script's resource type with `blocking` decided from this evidence.
    pub const fn resource_type(&self) -> ResourceType {
        ResourceType::Script {
            blocking: self.blocks_rendering(),
        }
    }
}

/// Decides, for the responses of one page load taken in request order, which are critical.
///
/// A page's documents are its redirect chain, its main document, and then iframes: the
/// documents up to and including the first successful (2xx) one are the page's own and
/// critical; later documents are iframes and are not. Everything else is critical by
/// [`ResourceType::is_critical`].
#[derive(Debug, Clone, Default)]
pub struct CriticalPath {
    main_document_done: bool,
}

impl CriticalPath {
    /// A page load that has seen no response yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the next response, of type `ty` and HTTP `status` (if known), is critical.
    /// A document without a status is taken as not (yet) the main document.
    pub fn is_critical(&mut self, ty: ResourceType, status: Option<u16>) -> bool {
        if ty != ResourceType::Document {
            return ty.is_critical();
        }
        let critical = !self.main_document_done;
        self.main_document_done |= status.is_some_and(|s| (200..300).contains(&s));
        critical
    }

    /// Whether the main document has been seen.
    pub fn main_document_seen(&self) -> bool {
        self.main_document_done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_css_and_blocking_scripts_are_critical() {
        assert!(ResourceType::Document.is_critical());
        assert!(ResourceType::Stylesheet.is_critical());
        assert!(ResourceType::BLOCKING_SCRIPT.is_critical());
        for ty in [
            ResourceType::ASYNC_SCRIPT,
            ResourceType::Font,
            ResourceType::Image,
            ResourceType::Media,
            ResourceType::Fetch,
            ResourceType::Manifest,
            ResourceType::Ping,
            ResourceType::Other,
        ] {
            assert!(!ty.is_critical(), "{ty:?}");
        }
    }

    #[test]
    fn render_blocking_follows_the_first_known_evidence() {
        let none = ScriptEvidence::default();
        assert!(none.blocks_rendering());
        let deferred = ScriptEvidence {
            async_or_defer: Some(true),
            chrome_priority: Some(ChromePriority::VeryHigh),
            ..none
        };
        assert!(!deferred.blocks_rendering());
        assert_eq!(deferred.resource_type(), ResourceType::ASYNC_SCRIPT);
        for (priority, blocking) in [
            (ChromePriority::VeryHigh, true),
            (ChromePriority::High, true),
            (ChromePriority::Medium, false),
            (ChromePriority::Low, false),
            (ChromePriority::VeryLow, false),
        ] {
            let e = ScriptEvidence {
                chrome_priority: Some(priority),
                script_inserted: Some(true),
                before_dom_content_loaded: Some(!blocking),
                ..none
            };
            assert_eq!(e.blocks_rendering(), blocking, "{priority:?}");
        }
        let inserted = ScriptEvidence {
            script_inserted: Some(true),
            before_dom_content_loaded: Some(true),
            ..none
        };
        assert!(!inserted.blocks_rendering());
        let by_parser_late = ScriptEvidence {
            script_inserted: Some(false),
            before_dom_content_loaded: Some(false),
            ..none
        };
        assert!(!by_parser_late.blocks_rendering());
        let by_parser = ScriptEvidence {
            script_inserted: Some(false),
            ..none
        };
        assert!(by_parser.blocks_rendering());
    }

    #[test]
    fn redirects_and_the_main_document_are_critical_iframes_are_not() {
        let mut page = CriticalPath::new();
        assert!(page.is_critical(ResourceType::Document, Some(301)));
        assert!(!page.main_document_seen());
        assert!(page.is_critical(ResourceType::Document, Some(200)));
        assert!(page.main_document_seen());
        assert!(page.is_critical(ResourceType::Stylesheet, Some(200)));
        assert!(!page.is_critical(ResourceType::Image, Some(200)));
        assert!(!page.is_critical(ResourceType::Document, Some(200)));
        assert!(page.is_critical(ResourceType::BLOCKING_SCRIPT, None));

        let mut unknown = CriticalPath::new();
        assert!(unknown.is_critical(ResourceType::Document, None));
        assert!(unknown.is_critical(ResourceType::Document, Some(204)));
        assert!(!unknown.is_critical(ResourceType::Document, Some(200)));
    }
}
