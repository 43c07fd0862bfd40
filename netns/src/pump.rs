//! The one thread that moves every packet of a [`Relay`](crate::relay::Relay) or a
//! [`Topology`](crate::topology::Topology): it reads what arrived on each inlet (UDP socket or
//! TUN device), offers it to that inlet's link, and hands each link's packets to their outlet at
//! their delivery time.
//!
//! The emulator's cost is mostly wake-ups, not bytes: a thread per socket and direction woke
//! once per packet arrival and once per delivery (about 17,000 times a second for 2 x 50
//! Mbit/s). One thread waits on all inlets at once (epoll, through `mio`) and on a `timerfd`
//! armed for the earliest delivery, so at low packet rates it wakes exactly when something
//! arrives or is due (the RTT probes' case: delivery on time within the timer's ~50 us slack).
//! When packets come faster than one per [`QUANTUM`], it stops taking wake-ups and works in
//! rounds [`QUANTUM`] apart instead, each reading everything that arrived and delivering
//! everything due: at most 4,000 wake-ups a second however many paths are loaded, for a timing
//! error of at most one quantum on a busy link (packets are stamped when read, and delivered at
//! the first round at or after their time).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::direction::{Direction, Outlet};

/// The spacing of rounds while packets come faster than one per quantum: the most a busy
/// link's timing is off by, and what bounds the wake-ups.
pub const QUANTUM: Duration = Duration::from_micros(250);

/// Two rounds that moved packets at most this far apart mean a busy link: work in rounds.
const DENSE: Duration = Duration::from_micros(500);

/// How often an idle pump looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);

/// Most packets read from one inlet in one round, so that one busy inlet cannot starve the
/// others (what is left is read in the next round).
const BATCH: usize = 256;

/// Largest packet read: a UDP datagram or an IP packet from a TUN device.
const MAX_PACKET: usize = 65_535;

/// The timer's token; inlet `i` has token `i`.
const TIMER: Token = Token(usize::MAX);

/// What every thread of one relay (or one namespace topology) shares: the stop flag and the
/// links' clock.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Set once to make every thread return.
    pub(crate) stop: AtomicBool,
    /// Link time zero: links see `start.elapsed()`.
    pub(crate) start: Instant,
}

impl Shared {
    /// Not stopped, clock starting now.
    pub(crate) fn new() -> Self {
        Shared {
            stop: AtomicBool::new(false),
            start: Instant::now(),
        }
    }
}

/// Where packets come from: a non-blocking socket or device.
pub(crate) trait Inlet: Send {
    /// Its file descriptor, to wait on.
    fn raw_fd(&self) -> RawFd;
    /// One packet without blocking: its length and sender, `Ok(None)` when none is waiting.
    fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, Option<SocketAddr>)>>;
}

/// An inlet and the link its packets go to.
pub(crate) struct Input {
    /// Where packets are read.
    pub(crate) inlet: Box<dyn Inlet>,
    /// The link they are offered to.
    pub(crate) dir: Arc<Direction>,
    /// Which packets go on the link at all (the rest is dropped unseen).
    pub(crate) accept: fn(&[u8]) -> bool,
    /// Where to record the sender of each packet (the relay's client address), if anywhere.
    pub(crate) last_sender: Option<Arc<Mutex<Option<SocketAddr>>>>,
}

/// A link and where its packets are handed at their delivery time.
pub(crate) struct Output {
    /// The link.
    pub(crate) dir: Arc<Direction>,
    /// Where its packets go.
    pub(crate) outlet: Box<dyn Outlet + Send>,
}

/// Registers every inlet and the timer, then runs the pump in a thread named `name` until
/// `shared.stop` is set.
pub(crate) fn spawn(
    name: String,
    shared: Arc<Shared>,
    inputs: Vec<Input>,
    outputs: Vec<Output>,
) -> io::Result<JoinHandle<()>> {
    let poll = Poll::new()?;
    let timer = TimerFd::new(
        ClockId::CLOCK_MONOTONIC,
        TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
    )
    .map_err(io::Error::from)?;
    for (i, input) in inputs.iter().enumerate() {
        poll.registry().register(
            &mut SourceFd(&input.inlet.raw_fd()),
            Token(i),
            Interest::READABLE,
        )?;
    }
    poll.registry().register(
        &mut SourceFd(&timer.as_fd().as_raw_fd()),
        TIMER,
        Interest::READABLE,
    )?;
    std::thread::Builder::new()
        .name(name)
        .spawn(move || run(&shared, poll, &timer, &inputs, &outputs))
}

fn run(shared: &Shared, mut poll: Poll, timer: &TimerFd, inputs: &[Input], outputs: &[Output]) {
    let mut events = Events::with_capacity(inputs.len() + 1);
    let mut buf = vec![0u8; MAX_PACKET];
    let mut due = Vec::new();
    let mut last_active: Option<Duration> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        let now = shared.start.elapsed();
        let mut moved = 0;
        for input in inputs {
            moved += read(input, &mut buf, now);
        }
        let now = shared.start.elapsed();
        for output in outputs {
            moved += output.dir.deliver_due(now, &*output.outlet, &mut due);
        }
        if moved > 0 {
            let dense = last_active.is_some_and(|at| now.saturating_sub(at) <= DENSE);
            last_active = Some(now);
            if dense {
                // Busy: what arrives meanwhile waits in the kernel for the next round.
                std::thread::sleep(QUANTUM);
                continue;
            }
        }
        let next = outputs.iter().filter_map(|o| o.dir.next_due()).min();
        let armed = match next {
            Some(at) => {
                let wait = at.saturating_sub(shared.start.elapsed());
                if wait.is_zero() {
                    continue;
                }
                timer.set(
                    Expiration::OneShot(TimeSpec::from_duration(wait)),
                    TimerSetTimeFlags::empty(),
                )
            }
            None => timer.unset(),
        };
        if armed.is_err() {
            // Cannot happen with a valid timerfd; fall back to polling.
            std::thread::sleep(QUANTUM);
            continue;
        }
        match poll.poll(&mut events, Some(POLL)) {
            Ok(()) => {
                if events.iter().any(|e| e.token() == TIMER) {
                    // Consume the expiration (non-blocking), so the next one is a new edge.
                    let _ = timer.wait();
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Unexpected; back off instead of spinning on it.
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Reads what is waiting on `input` (at most [`BATCH`] packets) and offers it to its link at
/// `now`; returns how many packets it read.
fn read(input: &Input, buf: &mut [u8], now: Duration) -> usize {
    let mut count = 0;
    for _ in 0..BATCH {
        match input.inlet.try_recv(buf) {
            Ok(Some((n, from))) => {
                count += 1;
                let packet = &buf[..n];
                if !(input.accept)(packet) {
                    continue;
                }
                if let (Some(last), Some(from)) = (&input.last_sender, from) {
                    let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                    if *last != Some(from) {
                        *last = Some(from);
                    }
                }
                input.dir.admit(packet, now);
            }
            Ok(None) => break,
            // Refused/reset are ICMP errors from an earlier send to a closed port, reported on
            // this read; the next read goes on.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::Interrupted
                ) => {}
            // Anything else (a device going away at shutdown): try again next round.
            Err(_) => break,
        }
    }
    count
}
