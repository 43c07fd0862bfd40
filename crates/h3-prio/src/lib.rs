//! HTTP priorities for mpquic's schedulers: what RFC 9218 (Extensible Prioritization Scheme for
//! HTTP) says a request's urgency and incremental flag are, what a browser would have asked for,
//! how big the response is, and whether the first rendering waits for it.
//!
//! The crate does no I/O and knows nothing of the transport: it turns bytes and names into
//! values. No input makes it panic, and the work per input is bounded (a `priority` field is
//! parsed only up to [`MAX_FIELD_LEN`] bytes).
//!
//! - [`Priority`] (urgency 0..=7 and incremental; the one type the schedulers and the transport
//!   use too, from `mpquic_sched`) parsed from a `priority` header field value with RFC 9218's
//!   rules ([`PriorityField::from_field`]: bad parameters fall back to their defaults, a bad
//!   field to the defaults) and written back ([`PriorityField::to_field`]).
//! - [`PriorityUpdate`]: the HTTP/3 PRIORITY_UPDATE frame (0xF0700) decoded and checked, with
//!   the HTTP/3 error code for each failure ([`UpdateError::code`]); [`PriorityUpdates`] holds
//!   the ones that arrive before their stream, bounded.
//! - [`ResourceType`] from a HAR `_resourceType`, a MIME type or a file name, and
//!   [`Browser::default_priority`]: Chrome's (the default) or Firefox's priority for each type.
//!   [`ChromePriority`] maps Chrome's recorded `_priority` (VeryHigh..VeryLow) to urgency.
//! - [`content_length`]: the response size, or `None` when unknown.
//! - The critical rendering path of \[PB\]: [`ResourceType::is_critical`] (document, CSS,
//!   render-blocking script), [`ScriptEvidence`] for deciding whether a script blocks
//!   rendering, and [`CriticalPath`] for a page's documents (redirects and the main document
//!   are critical, iframes are not).
//!
//! \[PB\]: PriorityBucket: A Multipath-QUIC Scheduler on Accelerating First Rendering Time in
//! Page Loading (Shi, Zhang, Liu; e-Energy 2020).
//!
//! # Example
//! ```
//! use mpquic_h3_prio::{
//!     content_length, Browser, ChromePriority, CriticalPath, Priority, PriorityField,
//!     PriorityUpdate, PriorityUpdates, ResourceType, Urgency, PRIORITY_UPDATE_REQUEST,
//! };
//!
//! // A request's header, with an out-of-range urgency: `u` falls back to 3, `i` still applies.
//! assert_eq!(Priority::from_field("u=9, i"), Priority::new(Urgency::DEFAULT, true));
//! let css = Priority::from_field("u=0");
//! assert_eq!((css.urgency(), css.incremental()), (Urgency::HIGHEST, false));
//! assert_eq!(css.to_field(), "u=0");
//!
//! // A PRIORITY_UPDATE for stream 8 arrives on the control stream before stream 8 opens.
//! let mut frame = Vec::new();
//! PriorityUpdate { stream_id: 8, priority: Priority::new(Urgency::new(1).unwrap(), false) }
//!     .encode_payload(&mut frame);
//! let update = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &frame).unwrap();
//! let mut waiting = PriorityUpdates::new();
//! waiting.insert(update);
//! // Stream 8 opens with `priority: u=5`; the update overrides it.
//! let header = Priority::from_field("u=5");
//! assert_eq!(waiting.take(8).unwrap_or(header).urgency().get(), 1);
//!
//! // No header at all: what would Chrome have asked for a stylesheet?
//! let ty = ResourceType::classify(None, Some("text/css; charset=utf-8"), None);
//! assert_eq!(Browser::Chrome.default_priority(ty).urgency(), Urgency::HIGHEST);
//! assert_eq!(Browser::Firefox.default_priority(ty).urgency().get(), 2);
//!
//! // A recorded Chrome priority, the response size, and the critical rendering path.
//! assert_eq!(ChromePriority::parse("High").map(ChromePriority::urgency), Some(1));
//! assert_eq!(content_length(["1234"]), Some(1234));
//! assert_eq!(content_length(["12, 13"]), None);
//! let mut page = CriticalPath::new();
//! assert!(page.is_critical(ResourceType::Document, Some(200)));
//! assert!(page.is_critical(ty, Some(200)));
//! assert!(!page.is_critical(ResourceType::Image, Some(200)));
//! ```

mod buffer;
mod critical;
mod priority;
mod resource;
mod size;
mod update;

pub use buffer::{PriorityUpdates, DEFAULT_CAPACITY};
pub use critical::{CriticalPath, ScriptEvidence};
pub use mpquic_sched::{Priority, Urgency};
pub use priority::{FieldError, PriorityField, MAX_FIELD_LEN};
pub use resource::{Browser, ChromePriority, ResourceType, UnknownBrowser, UnknownChromePriority};
pub use size::content_length;
pub use update::{
    decode_varint, encode_varint, H3ErrorCode, PriorityUpdate, UpdateError, MAX_VARINT,
    PRIORITY_UPDATE_PUSH, PRIORITY_UPDATE_REQUEST,
};
