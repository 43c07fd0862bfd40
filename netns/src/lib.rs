//! The mpquic testbed (work in progress; see netns/README.md).

pub mod error;
pub mod events;
pub mod link;
pub mod probe;
pub mod relay;
pub mod trace;
