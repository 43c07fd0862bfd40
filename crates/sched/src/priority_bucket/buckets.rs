//! The per-path priority buckets of \[PB\] section 3.3.
//!
//! \[PB\] "Streams of equal priority value are divided into the same bucket. Inside the same
//! bucket, the transmission order of streams follows the exclusive and first come first served
//! (FCFS) nature. [...] the transmission of in-flight lower-priority buckets can be pre-empted by
//! critical streams in higher-priority buckets."

use std::collections::BTreeMap;

use crate::{StreamId, Urgency};

/// Where a stream waits on a path: by bucket (urgency), then by arrival (FCFS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct BucketKey {
    pub urgency: Urgency,
    pub seq: u64,
    pub stream: StreamId,
}

/// One path's buckets: each stream's remaining sending limit d_i on this path.
#[derive(Debug, Clone, Default)]
pub(crate) struct PathBuckets {
    /// Ordered so that the first entry is the most urgent, earliest stream.
    quotas: BTreeMap<BucketKey, u64>,
    /// Each stream's limit here as allocated, while some of it is left: less its quota, what
    /// the path sent of it since.
    planned: BTreeMap<BucketKey, u64>,
    /// Sum of quotas per urgency, so h_i + e_i costs eight additions.
    bytes_by_urgency: [u64; Urgency::LEVELS],
}

impl PathBuckets {
    /// Raises a stream's sending limit on this path.
    pub fn add(&mut self, key: BucketKey, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let quota = self.quotas.entry(key).or_insert(0);
        *quota = quota.saturating_add(bytes);
        let planned = self.planned.entry(key).or_insert(0);
        *planned = planned.saturating_add(bytes);
        let total = &mut self.bytes_by_urgency[usize::from(key.urgency.get())];
        *total = total.saturating_add(bytes);
    }

    /// Lowers a stream's limit after `bytes` of it were sent here.
    pub fn take(&mut self, key: BucketKey, bytes: u64) {
        let Some(quota) = self.quotas.get_mut(&key) else {
            return;
        };
        let bytes = bytes.min(*quota);
        *quota -= bytes;
        if *quota == 0 {
            self.quotas.remove(&key);
            self.planned.remove(&key);
        }
        let total = &mut self.bytes_by_urgency[usize::from(key.urgency.get())];
        *total = total.saturating_sub(bytes);
    }

    /// Drops a stream from this path, returning its unsent limit.
    pub fn remove(&mut self, key: BucketKey) -> u64 {
        let bytes = self.quotas.remove(&key).unwrap_or(0);
        self.planned.remove(&key);
        let total = &mut self.bytes_by_urgency[usize::from(key.urgency.get())];
        *total = total.saturating_sub(bytes);
        bytes
    }

    /// A stream's remaining limit here.
    pub fn quota(&self, key: BucketKey) -> u64 {
        self.quotas.get(&key).copied().unwrap_or(0)
    }

    /// A stream's limit here as allocated and its remaining limit; (0, 0) once it is used up.
    pub fn plan(&self, key: BucketKey) -> (u64, u64) {
        (
            self.planned.get(&key).copied().unwrap_or(0),
            self.quota(key),
        )
    }

    /// h_i + e_i: bytes of streams at least as urgent as `urgency` still to send here.
    pub fn queued_at_or_above(&self, urgency: Urgency) -> u64 {
        self.bytes_by_urgency[..=usize::from(urgency.get())]
            .iter()
            .fold(0, |sum, &bytes| sum.saturating_add(bytes))
    }

    /// Every stream with a limit here and that limit, the most urgent and earliest first
    /// (strict priority: a lower bucket comes after every higher stream).
    pub fn iter(&self) -> impl Iterator<Item = (BucketKey, u64)> + '_ {
        self.quotas.iter().map(|(&key, &quota)| (key, quota))
    }

    /// Forgets every limit (before a re-allocation).
    pub fn clear(&mut self) {
        self.quotas.clear();
        self.planned.clear();
        self.bytes_by_urgency = [0; Urgency::LEVELS];
    }
}
