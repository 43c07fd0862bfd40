//! What a page load measured, in the JSON shape the page client prints.

use std::collections::BTreeMap;

use mpquic_core::ReinjectionStats;
use mpquic_netns::relay::PathStats;
use serde::{Deserialize, Serialize};

/// One object of a page load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectReport {
    /// The recorded URL.
    pub url: String,
    /// The path it was requested under.
    pub key: String,
    /// The recorded size.
    pub size: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// The response status.
    pub status: u16,
    /// Whether it is critical (counts for FRT).
    pub critical: bool,
    /// The RFC 9218 urgency it was requested with.
    pub urgency: u8,
    /// When it was requested, in milliseconds from the page request.
    pub requested_ms: f64,
    /// When its last byte arrived, in milliseconds from the page request.
    pub completed_ms: f64,
}

/// One page load: first rendering time, page load time, and every object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// The page's id.
    pub page: String,
    /// The transport: `mpquic`, or `quinn` for the plain-quinn baseline (h3-quinn over one
    /// path). Reports written before it existed read as `mpquic`.
    #[serde(default = "mpquic")]
    pub transport: String,
    /// The scheduler both ends ran (`quinn` for the plain-quinn baseline).
    pub scheduler: String,
    /// The scenario of the emulated links (empty when not emulated).
    pub scenario: String,
    /// `loopback` or `netns` (empty when the caller connected on its own).
    pub mode: String,
    /// How many paths the connection had (1 for quinn).
    pub paths: usize,
    /// First rendering time: the page request to the last byte of the last critical object
    /// (the PLT when the page has no critical object).
    pub frt_ms: f64,
    /// Page load time: the page request to the last byte of the last object.
    pub plt_ms: f64,
    /// Body bytes received in total.
    pub bytes: u64,
    /// Stream bytes the client received on each path (HTTP/3 framing included), by path id
    /// (the connection's own numbering, from 0); empty for quinn.
    pub per_path_bytes: BTreeMap<u64, u64>,
    /// Stream bytes the client received twice (a re-injected copy and its original); 0 for
    /// quinn.
    #[serde(default)]
    pub duplicate_bytes: u64,
    /// Summed over the chunks the client received twice: how long after the first copy the
    /// second came, in ms ([`ReinjectionStats::first_copy_lead`]): the time re-injection
    /// saved where its copy won the race.
    #[serde(default)]
    pub first_copy_lead_ms: f64,
    /// How many duplicate chunks `first_copy_lead_ms` sums.
    #[serde(default)]
    pub timed_duplicates: u64,
    /// How many holes in the server's chunk streams, and lost tails, the client reported on the
    /// fastest other path ([`ReinjectionStats::holes_reported`]).
    #[serde(default)]
    pub holes_reported: u64,
    /// Every object, in the page's order.
    pub objects: Vec<ObjectReport>,
    /// Datagrams the emulated links dropped during the load, per scenario path index, to tell
    /// what the queues and the random loss took. Loopback and namespace-testbed loads fill it;
    /// the simulation has its own counters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub link_drops: BTreeMap<usize, LinkDrops>,
}

impl LoadReport {
    /// The report of a load of `page` whose objects completed as `objects` say: PLT is the
    /// last completion, FRT the last of the critical objects (PLT if none is critical). Only
    /// what the page load sees is filled in: `transport`, `scheduler`, `scenario` and `mode`
    /// are empty, `paths` is 0 and `per_path_bytes` empty, for the caller.
    pub(crate) fn of_objects(page: &crate::Page, objects: Vec<ObjectReport>) -> Self {
        let plt_ms = objects.iter().map(|o| o.completed_ms).fold(0.0, f64::max);
        let frt_ms = objects
            .iter()
            .filter(|o| o.critical)
            .map(|o| o.completed_ms)
            .reduce(f64::max)
            .unwrap_or(plt_ms);
        Self {
            page: page.id.clone(),
            transport: String::new(),
            scheduler: String::new(),
            scenario: String::new(),
            mode: String::new(),
            paths: 0,
            frt_ms,
            plt_ms,
            bytes: objects.iter().map(|o| o.bytes).sum(),
            per_path_bytes: Default::default(),
            duplicate_bytes: 0,
            first_copy_lead_ms: 0.0,
            timed_duplicates: 0,
            holes_reported: 0,
            objects,
            link_drops: Default::default(),
        }
    }

    /// Takes the receiving end's re-injection counters: bytes received twice and how much
    /// sooner their first copies came.
    pub fn set_duplicates(&mut self, stats: &ReinjectionStats) {
        self.duplicate_bytes = stats.duplicate_received;
        self.first_copy_lead_ms = stats.first_copy_lead.as_secs_f64() * 1e3;
        self.timed_duplicates = stats.timed_duplicates;
        self.holes_reported = stats.holes_reported;
    }
}

/// What one emulated path dropped in each direction: at its drop-tail queue, and by its
/// configured random loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkDrops {
    /// Client to server, queue full.
    pub uplink_queue: u64,
    /// Client to server, random loss.
    pub uplink_loss: u64,
    /// Server to client, queue full.
    pub downlink_queue: u64,
    /// Server to client, random loss.
    pub downlink_loss: u64,
}

impl LinkDrops {
    /// What a path's emulator dropped between two readings of its counters.
    pub(crate) fn between(before: &PathStats, after: &PathStats) -> Self {
        Self {
            uplink_queue: after
                .uplink
                .dropped_queue
                .saturating_sub(before.uplink.dropped_queue),
            uplink_loss: after
                .uplink
                .dropped_loss
                .saturating_sub(before.uplink.dropped_loss),
            downlink_queue: after
                .downlink
                .dropped_queue
                .saturating_sub(before.downlink.dropped_queue),
            downlink_loss: after
                .downlink
                .dropped_loss
                .saturating_sub(before.downlink.dropped_loss),
        }
    }
}

/// What a report without `transport` (written before the quinn baseline) was loaded over.
fn mpquic() -> String {
    "mpquic".to_owned()
}

/// Mean and sample standard deviation (divisor n - 1; 0 for one value): the one place the
/// project computes them (the lab's statistics build on it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The mean.
    pub mean: f64,
    /// The sample standard deviation.
    pub sd: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there are none or any is not finite (a NaN or an
    /// infinity is a failed measurement, not a number to average).
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() < 2 {
            0.0
        } else {
            // Two passes: deviations from the mean, so large offsets do not cancel.
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        };
        Some(Self { mean, sd })
    }
}

/// Repeated loads of one page with one scheduler.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatedReport {
    /// The page's id.
    pub page: String,
    /// The transport: `mpquic` or `quinn`.
    pub transport: String,
    /// The scheduler.
    pub scheduler: String,
    /// The scenario.
    pub scenario: String,
    /// `loopback` or `netns`.
    pub mode: String,
    /// How many loads.
    pub reps: usize,
    /// FRT over the loads, milliseconds.
    pub frt_ms: Spread,
    /// PLT over the loads, milliseconds.
    pub plt_ms: Spread,
    /// Every load.
    pub runs: Vec<LoadReport>,
}

impl RepeatedReport {
    /// Summarises `runs` (at least one).
    pub fn new(runs: Vec<LoadReport>) -> Option<Self> {
        let first = runs.first()?;
        let frt: Vec<f64> = runs.iter().map(|r| r.frt_ms).collect();
        let plt: Vec<f64> = runs.iter().map(|r| r.plt_ms).collect();
        Some(Self {
            page: first.page.clone(),
            transport: first.transport.clone(),
            scheduler: first.scheduler.clone(),
            scenario: first.scenario.clone(),
            mode: first.mode.clone(),
            reps: runs.len(),
            frt_ms: Spread::of(&frt)?,
            plt_ms: Spread::of(&plt)?,
            runs,
        })
    }
}
