//! One direction of one path, as the pump moves it: the link, the packets it accepted and not
//! yet delivered, its counters, and the outlet its packets are handed to at their time.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use mpquic_scenario::events::EventAction;
use mpquic_scenario::link::{DropReason, Link, LinkConfig, Verdict};

/// Headroom on top of the computed queue + in-flight bound, so rounding never drops a packet
/// the link accepted.
const CAP_SLACK_BYTES: u64 = 64 * 1024;

/// How much a trace's peak rate is assumed to exceed its mean when sizing the hard cap.
const TRACE_PEAK_FACTOR: f64 = 4.0;

/// Counters of one direction of one path, since the relay started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// Datagrams read from the receiving socket.
    pub received: u64,
    /// Datagrams handed to the sending socket without error.
    pub forwarded: u64,
    /// UDP payload bytes of the forwarded datagrams.
    pub forwarded_bytes: u64,
    /// Dropped by the link's drop-tail queue.
    pub dropped_queue: u64,
    /// Dropped by the link's random loss.
    pub dropped_loss: u64,
    /// Dropped because the link was down.
    pub dropped_down: u64,
    /// Accepted by the link but dropped by the relay's hard memory cap (should stay 0; nonzero
    /// means a trace or event pushed more in flight than the cap allows for).
    pub dropped_overflow: u64,
    /// Downlink only: dropped because no client had sent anything on this path yet.
    pub dropped_no_client: u64,
    /// Datagrams the sending socket refused (e.g. nobody listening at the server).
    pub send_errors: u64,
    /// Sum over forwarded datagrams of how late the sender handed them to the socket after the
    /// link's delivery time, in nanoseconds: the relay's own timing error.
    pub late_total_ns: u64,
    /// The latest of them, in nanoseconds.
    pub late_max_ns: u64,
}

impl DirectionStats {
    /// Mean lateness of a forwarded datagram behind its delivery time.
    pub fn mean_lateness(&self) -> Duration {
        Duration::from_nanos(self.late_total_ns / self.forwarded.max(1))
    }
}

#[derive(Debug, Default)]
struct Counters {
    received: AtomicU64,
    forwarded: AtomicU64,
    forwarded_bytes: AtomicU64,
    dropped_queue: AtomicU64,
    dropped_loss: AtomicU64,
    dropped_down: AtomicU64,
    dropped_overflow: AtomicU64,
    dropped_no_client: AtomicU64,
    send_errors: AtomicU64,
    late_total_ns: AtomicU64,
    late_max_ns: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> DirectionStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DirectionStats {
            received: get(&self.received),
            forwarded: get(&self.forwarded),
            forwarded_bytes: get(&self.forwarded_bytes),
            dropped_queue: get(&self.dropped_queue),
            dropped_loss: get(&self.dropped_loss),
            dropped_down: get(&self.dropped_down),
            dropped_overflow: get(&self.dropped_overflow),
            dropped_no_client: get(&self.dropped_no_client),
            send_errors: get(&self.send_errors),
            late_total_ns: get(&self.late_total_ns),
            late_max_ns: get(&self.late_max_ns),
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// A datagram the link accepted, waiting for its delivery time.
#[derive(Debug)]
struct Pending {
    at: Duration,
    seq: u64,
    data: Vec<u8>,
    /// Bytes charged to the link and the hard cap: the data plus the direction's overhead.
    cost: u64,
}

impl Pending {
    fn cost(&self) -> u64 {
        self.cost
    }
}

// Reversed on (at, seq) so that `BinaryHeap` (a max-heap) pops the earliest delivery first and
// keeps the link's order among equal times.
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Pending {}

/// The link of one direction and the datagrams it has accepted but not yet delivered.
struct Queue {
    link: Link,
    heap: BinaryHeap<Pending>,
    bytes: u64,
    cap: u64,
    seq: u64,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("pending", &self.heap.len())
            .field("bytes", &self.bytes)
            .field("cap", &self.cap)
            .finish()
    }
}

/// One direction of one path: its queue and its counters.
#[derive(Debug)]
pub(crate) struct Direction {
    queue: Mutex<Queue>,
    counters: Counters,
    /// Bytes charged to the link on top of each packet's own length: the relay's
    /// `IP_UDP_OVERHEAD` for UDP payloads, 0 for whole IP packets read from a TUN device.
    overhead: usize,
}

impl Direction {
    /// A direction through `link`, charging `overhead` bytes per packet on top of its length.
    pub(crate) fn new(link: Link, overhead: usize) -> Self {
        let cap = hard_cap(link.config());
        Direction {
            queue: Mutex::new(Queue {
                link,
                heap: BinaryHeap::new(),
                bytes: 0,
                cap,
                seq: 0,
            }),
            counters: Counters::default(),
            overhead,
        }
    }

    /// Its counters so far.
    pub(crate) fn stats(&self) -> DirectionStats {
        self.counters.snapshot()
    }

    /// Poisoning only means another relay thread panicked mid-update; the queue is still
    /// consistent enough to keep forwarding (or to shut down).
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A datagram arrived at the link at `now`: offer it, and queue it for delivery if accepted.
    pub(crate) fn admit(&self, data: &[u8], now: Duration) {
        bump(&self.counters.received);
        let mut q = self.lock();
        let cost = data.len() + self.overhead;
        match q.link.offer(now, cost) {
            Verdict::Deliver(at) => {
                let pending = Pending {
                    at,
                    seq: q.seq,
                    data: data.to_vec(),
                    cost: cost as u64,
                };
                if q.bytes + pending.cost() > q.cap {
                    bump(&self.counters.dropped_overflow);
                    return;
                }
                q.seq += 1;
                q.bytes += pending.cost();
                q.heap.push(pending);
            }
            Verdict::Dropped(DropReason::Queue) => bump(&self.counters.dropped_queue),
            Verdict::Dropped(DropReason::Loss) => bump(&self.counters.dropped_loss),
            Verdict::Dropped(DropReason::Down) => bump(&self.counters.dropped_down),
        }
    }
}

impl Direction {
    /// When its earliest packet is due, if it holds any.
    pub(crate) fn next_due(&self) -> Option<Duration> {
        self.lock().heap.peek().map(|top| top.at)
    }

    /// Hands every packet due at `now` to `outlet` (in delivery order) and counts the
    /// outcome; `due` is scratch space kept by the caller. Returns how many it handed on.
    pub(crate) fn deliver_due(
        &self,
        now: Duration,
        outlet: &dyn Outlet,
        due: &mut Vec<(Vec<u8>, u64)>,
    ) -> usize {
        {
            let mut q = self.lock();
            while q.heap.peek().is_some_and(|top| top.at <= now) {
                if let Some(p) = q.heap.pop() {
                    q.bytes = q.bytes.saturating_sub(p.cost());
                    let late = u64::try_from((now - p.at).as_nanos()).unwrap_or(u64::MAX);
                    due.push((p.data, late));
                }
            }
        }
        let count = due.len();
        for (data, late) in due.drain(..) {
            match outlet.deliver(&data) {
                Delivery::Sent => {
                    bump(&self.counters.forwarded);
                    self.counters
                        .forwarded_bytes
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    self.counters
                        .late_total_ns
                        .fetch_add(late, Ordering::Relaxed);
                    self.counters.late_max_ns.fetch_max(late, Ordering::Relaxed);
                }
                Delivery::NoDestination => bump(&self.counters.dropped_no_client),
                Delivery::Failed => bump(&self.counters.send_errors),
            }
        }
        count
    }
}

/// The most the relay holds for one direction: the link's queue plus what is in flight over
/// the delay at the highest rate and delay the config can reach, plus slack.
fn hard_cap(config: &LinkConfig) -> u64 {
    let mut rate = config.rate_bps as f64;
    let mut delay = config.delay;
    if let Some(trace) = &config.trace {
        rate = rate.max(trace.mean_rate_bps() * TRACE_PEAK_FACTOR);
    }
    for event in &config.events {
        match event.action {
            EventAction::Rate(r) => rate = rate.max(r as f64),
            EventAction::Delay(d) => delay = delay.max(d),
            EventAction::Down | EventAction::Up => {}
        }
    }
    let rate_u64 = rate.min(u64::MAX as f64) as u64;
    let queue = config
        .queue_bytes
        .unwrap_or_else(|| mpquic_scenario::default_queue_bytes(rate_u64, delay));
    let in_flight = (rate * delay.as_secs_f64() / 8.0).ceil();
    queue
        .saturating_add(in_flight.min(u64::MAX as f64) as u64)
        .saturating_add(CAP_SLACK_BYTES)
}

/// What happened to one packet handed to an [`Outlet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Handed on.
    Sent,
    /// Nowhere to send it yet (the relay's downlink before a client spoke).
    NoDestination,
    /// The socket or device refused it.
    Failed,
}

/// Where a direction's sender hands packets at their delivery time: a UDP socket (the relay)
/// or a TUN device (the namespace topology).
pub(crate) trait Outlet {
    /// Hands `data` on, now.
    fn deliver(&self, data: &[u8]) -> Delivery;
}
