//! A scheduler of your own, run on the real transport on simulated time: "urgent streams take
//! the fast lane" keeps streams of urgency 0 and 1 on the path with the lowest smoothed RTT and
//! sends everything else, first come first served, on whichever path has room. A 2 MB download
//! shares two paths with a 20 kB urgent response that starts 100 ms later; the table says how
//! long each took from its first write, with this scheduler, PriorityBucket and lrf.
//!
//! ```text
//! cargo run --example custom_scheduler
//! ```

// An example: its result is stdout.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use mpquic::sched::{
    Grant, PathId, PathSnapshot, PathTable, SchedError, Scheduler, StreamId, StreamMeta,
    StreamTable, Urgency,
};
use mpquic::sim::{FixedLink, Link, Pair, PathLinks};
use mpquic::{Config, Priority, SchedulerKind};

/// Urgent streams on the fastest path only; the rest on any path, oldest first.
#[derive(Debug, Default)]
struct FastLane {
    paths: PathTable,
    streams: StreamTable,
}

impl FastLane {
    /// The most urgent level still kept to the fast lane.
    const URGENT: Urgency = Urgency::HIGHEST;

    fn fastest(&self) -> Option<PathId> {
        self.paths.usable().min_by_key(|p| p.srtt).map(|p| p.id)
    }
}

impl Scheduler for FastLane {
    fn name(&self) -> &str {
        "fast-lane"
    }
    fn on_path_added(&mut self, _: Instant, path: &PathSnapshot) -> Result<(), SchedError> {
        self.paths.add(*path)
    }
    fn on_path_updated(&mut self, _: Instant, path: &PathSnapshot) -> Result<(), SchedError> {
        self.paths.update(*path).map(drop)
    }
    fn on_path_removed(&mut self, _: Instant, path: PathId) {
        self.paths.remove(path);
    }
    fn on_stream_opened(&mut self, _: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
        self.streams.open(*meta).map(drop)
    }
    fn on_stream_updated(&mut self, _: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
        self.streams.update(*meta).map(drop)
    }
    fn on_data_queued(&mut self, _: Instant, id: StreamId, bytes: u64) -> Result<(), SchedError> {
        self.streams.queue(id, bytes).map(drop)
    }
    fn on_stream_finished(&mut self, _: Instant, id: StreamId) -> Result<(), SchedError> {
        self.streams.finish(id).map(drop)
    }
    fn on_stream_closed(&mut self, _: Instant, id: StreamId) {
        self.streams.remove(id);
    }
    fn poll_send(&mut self, _: Instant, path: PathId, room: u64) -> Option<Grant> {
        let on_fast_lane = self.fastest() == Some(path);
        let next = self
            .streams
            .iter()
            .filter(|s| s.queued > 0 && s.meta.allows(path))
            .filter(|s| on_fast_lane || s.meta.effective_urgency() > Self::URGENT)
            // Urgent first, then by arrival.
            .min_by_key(|s| (s.meta.effective_urgency(), s.seq))?;
        let stream = next.meta.id;
        self.streams.grant(stream, room)
    }
}

/// Two paths both ways: 20 Mbit/s with 10 ms one way, and 20 Mbit/s with 60 ms.
fn links() -> Vec<PathLinks> {
    [10, 60]
        .into_iter()
        .map(|ms| {
            let link = || Box::new(FixedLink::new(20_000_000, Duration::from_millis(ms)));
            (link() as Box<dyn Link>, link() as Box<dyn Link>)
        })
        .collect()
}

/// How long the urgent response and the download took from their first write, in simulated
/// time.
fn run(config: &Config) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    let mut pair = Pair::new(config, config, links(), 1)?;
    if !pair.connect(Duration::from_secs(1)) {
        return Err("the simulated handshake did not complete".into());
    }
    let start = pair.elapsed();
    let download = pair.client.core.open(true, pair.now()).ok_or("no stream")?;
    pair.client
        .core
        .set_size_hint(download, 2_000_000, pair.now())?;
    pair.client
        .core
        .write(download, &vec![1; 2_000_000], pair.now())?;
    pair.client.core.finish(download, pair.now())?;
    pair.run_until(Duration::from_millis(100), |_| false);
    let starts = [pair.elapsed(), start];
    let urgent = pair.client.core.open(true, pair.now()).ok_or("no stream")?;
    let priority = Priority::new(Urgency::HIGHEST, false);
    pair.client
        .core
        .set_priority(urgent, priority, pair.now())?;
    pair.client.core.set_size_hint(urgent, 20_000, pair.now())?;
    pair.client
        .core
        .write(urgent, &vec![2; 20_000], pair.now())?;
    pair.client.core.finish(urgent, pair.now())?;

    let (mut received, mut done) = ([0; 2], [None; 2]);
    pair.run_until(Duration::from_secs(10), |pair| {
        for (k, stream) in [urgent, download].into_iter().enumerate() {
            pair.server.core.accept(true);
            while let Some(Ok(Some(data))) = pair.server.core.read(stream, usize::MAX) {
                received[k] += data.len();
            }
            if received[k] == [20_000, 2_000_000][k] && done[k].is_none() {
                done[k] = Some(pair.elapsed() - starts[k]);
            }
        }
        done.iter().all(Option::is_some)
    });
    match done {
        [Some(urgent), Some(download)] => Ok((urgent, download)),
        _ => Err("not delivered within 10 s".into()),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut fast_lane = Config::default();
    fast_lane.scheduler_factory("fast-lane", || Box::new(FastLane::default()));
    let mut configs = vec![("fast-lane", fast_lane)];
    for kind in [SchedulerKind::PriorityBucket, SchedulerKind::Lrf] {
        let mut config = Config::default();
        config.scheduler(kind);
        configs.push((kind.name(), config));
    }
    println!(
        "{:<16} {:>12} {:>12}",
        "scheduler", "urgent ms", "download ms"
    );
    for (name, config) in configs {
        let (urgent, download) = run(&config)?;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!("{name:<16} {:>12.1} {:>12.1}", ms(urgent), ms(download));
    }
    Ok(())
}
