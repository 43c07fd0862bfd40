//! The simulation loop: a client that requests a page's objects and a server that answers them
//! over n emulated paths, with a [`Scheduler`] deciding which stream's bytes go on which path.
//!
//! # Model
//!
//! - Virtual time only. One `Instant` is read when a run starts, as the epoch the scheduler's
//!   `now` values are built from; everything after is the epoch plus a virtual offset, so the
//!   wall clock never influences a run.
//! - The client requests an object at its [`Start`] on the path with the lowest configured
//!   one-way delay; the request is negligible in size, is never lost and takes that delay.
//! - The server then opens a stream (client-initiated bidirectional ids 0, 4, 8, ... in page
//!   order) with the object's urgency and size, queues every byte and finishes it.
//! - After every batch of events at one instant, the scheduler hears about every path whose
//!   window or estimates changed (`on_path_updated`), then each path that can send a full
//!   packet now (window room, and pacing tokens when the run paces) is polled (`poll_send`)
//!   until it says `None` or the room is used, as the contract says, and a path that sent is
//!   reported again with its new bytes in flight. The paths are polled in turn, and all of
//!   them again while any of them sent, so a path refused because another had room is asked
//!   again once that room is used, and the outcome does not depend on the order the paths are
//!   listed in (beyond a scheduler's own tie-breaks).
//! - Grants are packed into packets of at most the MTU (frames of several streams share a
//!   packet, as in QUIC); a new packet is started only when a whole MTU fits in the window, as
//!   quinn does. Re-sent frames go first, on the path that lost them.
//! - Pacing (on by default, [`SimConfig::set_pacing`]) is quinn 0.11's token bucket
//!   (`pacing.rs`): the room offered is also bounded by the bucket, a new packet needs an MTU
//!   of tokens, and a path whose window has room that the bucket holds back gets a wake-up
//!   event at the instant the bucket is full again, when it is polled. The scheduler is never
//!   asked for bytes the path could not send at once. Probes after a timeout are not paced.
//! - Each delivered packet is acknowledged at once and the ack takes the path's one-way delay
//!   back; acks are never lost. `PathSender` (path.rs) does loss detection, probes, the window
//!   and the estimators.
//! - An object completes when the client holds all of its bytes; its children are requested
//!   then, after their delay.

use std::time::{Duration, Instant};

use super::events::{Event, EventQueue};
use super::link::Fate;
use super::packet::{Frame, PacketBuilder};
use super::path::PathSender;
use super::{ObjectResult, Page, PageResult, SimConfig, SimError, Start};
use crate::{Scheduler, StreamId, StreamMeta};

/// A scheduler whose `poll_timeout` is already due is asked again this much later: it was just
/// polled, and asking again at the same instant could loop forever.
const WAKE_GRANULARITY: Duration = Duration::from_millis(1);

/// Loads `page` once over the paths of `config`, with `scheduler` choosing where every stream's
/// bytes go, and reports what the client saw.
///
/// # Errors
/// An invalid configuration or page, a scheduler that refuses an input or breaks the grant
/// rules, or a run that exceeds its time or step limit or stalls (see [`SimError`]).
///
/// # Example
/// ```
/// use mpquic_sched::sim::{simulate, Page, Scenario, SimConfig};
/// use mpquic_sched::SchedulerKind;
///
/// let config = SimConfig::from_scenario(Scenario::by_name("pb-high")?);
/// let page = Page::builtin("bing-2013")?;
/// let result = simulate(&config, SchedulerKind::RoundRobin.build(), &page)?;
/// assert!(result.frt.unwrap() <= result.plt);
/// # Ok::<(), mpquic_sched::sim::SimError>(())
/// ```
pub fn simulate(
    config: &SimConfig,
    scheduler: Box<dyn Scheduler>,
    page: &Page,
) -> Result<PageResult, SimError> {
    Simulation::new(config, scheduler, page)?.run()
}

#[derive(Debug, Clone, Copy, Default)]
struct ObjectState {
    requested: Option<Duration>,
    completed: Option<Duration>,
    /// Client side: bytes received.
    received: u64,
    /// Server side: the stream is open.
    open: bool,
    /// Server side: bytes never granted yet.
    unsent: u64,
    /// Server side: bytes acknowledged.
    acked: u64,
}

struct Simulation<'a> {
    config: &'a SimConfig,
    page: &'a Page,
    scheduler: Box<dyn Scheduler>,
    epoch: Instant,
    now: Duration,
    queue: EventQueue,
    paths: Vec<PathSender>,
    frames: Vec<Frame>,
    objects: Vec<ObjectState>,
    children: Vec<Vec<usize>>,
    request_path: usize,
    incomplete: usize,
    steps: u64,
    wake: Option<Duration>,
}

fn stream_id(object: usize) -> StreamId {
    StreamId(object as u64 * 4)
}

impl<'a> Simulation<'a> {
    fn new(
        config: &'a SimConfig,
        scheduler: Box<dyn Scheduler>,
        page: &'a Page,
    ) -> Result<Self, SimError> {
        config.validate()?;
        page.validate()?;
        let paths = config
            .paths()
            .iter()
            .enumerate()
            .map(|(index, path)| PathSender::new(index, path, config))
            .collect::<Result<Vec<_>, _>>()?;
        let request_path = config
            .paths()
            .iter()
            .enumerate()
            .min_by_key(|(index, p)| (p.delay(), *index))
            .map_or(0, |(index, _)| index);
        let mut children = vec![Vec::new(); page.objects.len()];
        for (index, object) in page.objects.iter().enumerate() {
            if let Start::After { parent, .. } = object.start {
                children[parent].push(index);
            }
        }
        Ok(Self {
            config,
            page,
            scheduler,
            // The one clock reading of a run: the epoch virtual offsets are added to.
            epoch: Instant::now(),
            now: Duration::ZERO,
            queue: EventQueue::default(),
            paths,
            frames: Vec::new(),
            objects: vec![ObjectState::default(); page.objects.len()],
            children,
            request_path,
            incomplete: page.objects.len(),
            steps: 0,
            wake: None,
        })
    }

    fn at(&self) -> Instant {
        self.epoch + self.now
    }

    fn run(mut self) -> Result<PageResult, SimError> {
        for path in &self.paths {
            self.scheduler.on_path_added(self.epoch, &path.snapshot())?;
        }
        for (index, object) in self.page.objects.iter().enumerate() {
            if let Start::At(at) = object.start {
                self.queue.push(at, Event::Request(index));
            }
        }
        while self.incomplete > 0 {
            let Some(at) = self.queue.peek_time() else {
                return Err(SimError::Stalled {
                    at: self.now,
                    incomplete: self.incomplete,
                });
            };
            if at > self.config.time_limit() {
                return Err(SimError::TimeLimit {
                    limit: self.config.time_limit(),
                    incomplete: self.incomplete,
                });
            }
            self.now = at;
            while let Some(event) = self.queue.pop_at(at) {
                self.steps += 1;
                if self.steps > self.config.step_limit() {
                    return Err(SimError::StepLimit {
                        limit: self.config.step_limit(),
                        incomplete: self.incomplete,
                    });
                }
                self.handle(event)?;
            }
            if self.incomplete > 0 {
                self.after_batch()?;
            }
        }
        Ok(self.result())
    }

    fn handle(&mut self, event: Event) -> Result<(), SimError> {
        match event {
            Event::Request(object) => {
                self.objects[object].requested = Some(self.now);
                let delay = self.paths[self.request_path].delay;
                self.queue
                    .push(self.now + delay, Event::RequestArrives(object));
            }
            Event::RequestArrives(object) => self.open_stream(object)?,
            Event::PacketArrives {
                path,
                packet,
                frames,
            } => {
                for frame in frames {
                    self.deliver(frame);
                }
                let delay = self.paths[path].delay;
                self.queue
                    .push(self.now + delay, Event::AckArrives { path, packet });
            }
            Event::AckArrives { path, packet } => {
                let outcome = self.paths[path].on_ack(self.now, self.epoch, packet);
                self.acknowledge(&outcome.acked);
                self.requeue(path, &outcome.lost);
            }
            Event::PathTimer { path, generation } => {
                if self.paths[path].timer_generation == generation {
                    self.paths[path].timer = None;
                    let lost = self.paths[path].on_timer(self.now);
                    self.requeue(path, &lost);
                }
            }
            Event::PacingWake { path } => {
                if self.paths[path].pacing_timer == Some(self.now) {
                    self.paths[path].pacing_timer = None;
                }
            }
            Event::SchedulerWake => {
                if self.wake == Some(self.now) {
                    self.wake = None;
                }
            }
        }
        Ok(())
    }

    fn open_stream(&mut self, object: usize) -> Result<(), SimError> {
        let spec = &self.page.objects[object];
        let id = stream_id(object);
        let meta = StreamMeta::new(id)
            .with_urgency(spec.urgency)
            .with_size(spec.size);
        let at = self.at();
        self.scheduler.on_stream_opened(at, &meta)?;
        self.scheduler.on_data_queued(at, id, spec.size)?;
        self.scheduler.on_stream_finished(at, id)?;
        let state = &mut self.objects[object];
        state.open = true;
        state.unsent = spec.size;
        Ok(())
    }

    /// The client receives a frame; a duplicate (a spurious re-send) changes nothing.
    fn deliver(&mut self, frame: usize) {
        let Some(f) = self.frames.get_mut(frame) else {
            return;
        };
        if f.delivered {
            return;
        }
        f.delivered = true;
        let object = f.object;
        let state = &mut self.objects[object];
        state.received += f.len;
        // Frames partition the granted bytes and each counts once, so an object completes when
        // exactly its bytes have arrived.
        debug_assert!(state.received <= self.page.objects[object].size);
        if state.received == self.page.objects[object].size {
            state.completed = Some(self.now);
            self.incomplete -= 1;
            for &child in &self.children[object] {
                if let Start::After { delay, .. } = self.page.objects[child].start {
                    self.queue.push(self.now + delay, Event::Request(child));
                }
            }
        }
    }

    /// The server learns frames arrived; a stream whose every byte is acknowledged is closed.
    fn acknowledge(&mut self, frames: &[usize]) {
        for &frame in frames {
            let Some(f) = self.frames.get_mut(frame) else {
                continue;
            };
            if f.acked {
                continue;
            }
            f.acked = true;
            let object = f.object;
            let state = &mut self.objects[object];
            state.acked += f.len;
            debug_assert!(state.acked <= self.page.objects[object].size);
            if state.acked == self.page.objects[object].size && state.open {
                state.open = false;
                self.scheduler
                    .on_stream_closed(self.at(), stream_id(object));
            }
        }
    }

    /// Frames of lost packets wait for a re-send on the same path.
    fn requeue(&mut self, path: usize, frames: &[usize]) {
        for &frame in frames {
            if let Some(f) = self.frames.get_mut(frame) {
                if !f.acked && !f.pending {
                    f.pending = true;
                    self.paths[path].retransmit.push_back(frame);
                }
            }
        }
    }

    fn after_batch(&mut self) -> Result<(), SimError> {
        let at = self.at();
        for path in &mut self.paths {
            if path.dirty {
                path.dirty = false;
                self.scheduler.on_path_updated(at, &path.snapshot())?;
            }
        }
        // Poll every path, and poll them all again while any of them sent: the scheduler sees
        // the bytes just sent in flight before the next path is polled, and a path that was
        // refused because another one had room (LRF's slow path waits while a faster one has
        // room) is asked again once that room is used, so the result does not depend on the
        // order the paths are listed in. Ends: a pass that sends uses window room, and no
        // window grows within an instant.
        let mut sent_any = true;
        while sent_any {
            sent_any = false;
            for index in 0..self.paths.len() {
                if self.send_round(index)? {
                    sent_any = true;
                    let path = &mut self.paths[index];
                    path.dirty = false;
                    self.scheduler.on_path_updated(at, &path.snapshot())?;
                }
            }
        }
        for (index, path) in self.paths.iter_mut().enumerate() {
            let next = path.next_timer().map(|t| t.max(self.now));
            if next != path.timer {
                path.timer = next;
                path.timer_generation += 1;
                if let Some(t) = next {
                    self.queue.push(
                        t,
                        Event::PathTimer {
                            path: index,
                            generation: path.timer_generation,
                        },
                    );
                }
            }
        }
        // A path whose window has room that pacing holds back is polled again when its bucket
        // is full. Ends: the bucket is then full, so the path wakes again only after sending.
        let mtu = self.config.mtu();
        for (index, path) in self.paths.iter_mut().enumerate() {
            let wake = path.pacing_wake(self.now, mtu);
            if wake.is_some() && wake != path.pacing_timer {
                path.pacing_timer = wake;
                if let Some(t) = wake {
                    self.queue.push(t, Event::PacingWake { path: index });
                }
            }
        }
        if let Some(t) = self.scheduler.poll_timeout() {
            let mut due = t.saturating_duration_since(self.epoch);
            if due <= self.now {
                due = self.now + WAKE_GRANULARITY;
            }
            if self.wake != Some(due) {
                self.wake = Some(due);
                self.queue.push(due, Event::SchedulerWake);
            }
        }
        Ok(())
    }

    /// Fills one path's window: probes and re-sent frames first, then the scheduler's grants.
    /// Returns whether any packet left.
    fn send_round(&mut self, index: usize) -> Result<bool, SimError> {
        let mtu = self.config.mtu();
        let at = self.at();
        let mut builder = PacketBuilder::new(mtu);
        let path = &mut self.paths[index];
        let mut room = path.room(self.now, mtu);
        path.probes = 0;
        // A new packet needs a whole MTU of window; an open one takes what fits.
        let can_send =
            |room: u64, len: u64, space: u64| len <= room && (len <= space || room >= mtu);

        // After a probe timeout: copies of the oldest packets in flight, beyond the window.
        for frame in std::mem::take(&mut path.probe_frames) {
            let f = self.frames[frame];
            if f.acked {
                continue;
            }
            if !can_send(room, f.len, builder.space()) {
                break;
            }
            builder.push(frame, f.len);
            room -= f.len;
            path.stats.bytes_retransmitted += f.len;
        }

        while let Some(&frame) = path.retransmit.front() {
            let f = self.frames[frame];
            if f.acked {
                path.retransmit.pop_front();
                self.frames[frame].pending = false;
                continue;
            }
            if !can_send(room, f.len, builder.space()) {
                break;
            }
            path.retransmit.pop_front();
            self.frames[frame].pending = false;
            builder.push(frame, f.len);
            room -= f.len;
            path.stats.bytes_retransmitted += f.len;
        }

        let mut app_limited = false;
        if path.retransmit.is_empty() {
            while can_send(room, 1, builder.space()) {
                let Some(grant) = self.scheduler.poll_send(at, path.id, room) else {
                    app_limited = true;
                    break;
                };
                let bad = |reason| SimError::BadGrant {
                    path: path.id,
                    stream: grant.stream,
                    bytes: grant.bytes,
                    reason,
                };
                let object = usize::try_from(grant.stream.0 / 4)
                    .ok()
                    .filter(|o| grant.stream.0 % 4 == 0 && *o < self.objects.len())
                    .filter(|o| self.objects[*o].open)
                    .ok_or_else(|| bad("the stream is not open"))?;
                if grant.bytes == 0 {
                    return Err(bad("a grant carries at least one byte"));
                }
                if grant.bytes > room {
                    return Err(bad("more than the room offered"));
                }
                if grant.bytes > self.objects[object].unsent {
                    return Err(bad("more than the stream has left to send"));
                }
                self.objects[object].unsent -= grant.bytes;
                room -= grant.bytes;
                let mut left = grant.bytes;
                while left > 0 {
                    let space = match builder.space() {
                        0 => mtu,
                        space => space,
                    };
                    let len = left.min(space);
                    self.frames.push(Frame {
                        object,
                        len,
                        delivered: false,
                        acked: false,
                        pending: false,
                    });
                    builder.push(self.frames.len() - 1, len);
                    left -= len;
                }
            }
        }

        path.app_limited = app_limited;
        let packets = builder.finish();
        let sent = !packets.is_empty();
        for (bytes, frames) in packets {
            let packet = path.on_sent(self.now, self.epoch, bytes, frames.clone());
            match path.link.send(self.now, bytes) {
                Fate::Arrives(t) => self.queue.push(
                    t,
                    Event::PacketArrives {
                        path: index,
                        packet,
                        frames,
                    },
                ),
                Fate::Lost => path.stats.packets_lost += 1,
                Fate::Dropped => path.stats.packets_dropped += 1,
            }
        }
        Ok(sent)
    }

    fn result(self) -> PageResult {
        let objects: Vec<ObjectResult> = self
            .page
            .objects
            .iter()
            .zip(&self.objects)
            .map(|(spec, state)| ObjectResult {
                name: spec.name.clone(),
                size: spec.size,
                critical: spec.critical,
                requested: state.requested.unwrap_or_default(),
                completed: state.completed.unwrap_or_default(),
            })
            .collect();
        let frt = objects
            .iter()
            .filter(|o| o.critical)
            .map(|o| o.completed)
            .max();
        let plt = objects
            .iter()
            .map(|o| o.completed)
            .max()
            .unwrap_or_default();
        let seconds = plt.as_secs_f64();
        let goodput_bps = if seconds > 0.0 {
            self.page.total_bytes() as f64 * 8.0 / seconds
        } else {
            0.0
        };
        PageResult {
            scheduler: self.scheduler.name().to_owned(),
            objects,
            frt,
            plt,
            paths: self.paths.iter().map(|p| p.stats).collect(),
            goodput_bps,
            events: self.steps,
        }
    }
}
