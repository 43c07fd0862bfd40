//! Measuring an emulated path from its two ends: round-trip time, UDP goodput and loss, per
//! direction, so the testbed's fidelity is checked against what was configured.
//!
//! A [`ProbeServer`] sits where the server would (behind the relay, or in the server namespace)
//! and speaks a tiny protocol; a [`Prober`] at the client drives every measurement. Both ends
//! work from what crosses the path, so the same code measures the loopback relay and the
//! namespace testbed. Every loop is bounded in count and in time: a dead path gives an error,
//! never a hang.
//!
//! Wire format (little endian): `magic "MPQP" | kind u8 | session u32 | seq u32 | t1 u64 | t2 u64`
//! then padding; kinds are echo request/reply, data, report request/reply and blast request.

mod check;
mod client;
mod server;

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::NetnsError;
use mpquic_scenario::link::IP_UDP_OVERHEAD;

pub use check::{
    binomial_acceptance, check_path, wilson_interval, PathCheck, CHECK_GOODPUT_TIME,
    CHECK_LOSS_PACKETS, CHECK_RTT_PROBES, GOODPUT_TOLERANCE, LOSS_CONFIDENCE, RTT_TOLERANCE,
};
pub use client::{GoodputStats, LossStats, Prober, RttStats};
pub use server::ProbeServer;

const MAGIC: [u8; 4] = *b"MPQP";
/// Bytes of the probe header; the smallest probe datagram.
pub const HEADER_BYTES: usize = 29;
const MAX_DATAGRAM: usize = 65_507;

const ECHO_REQUEST: u8 = 1;
const ECHO_REPLY: u8 = 2;
const DATA: u8 = 3;
const REPORT_REQUEST: u8 = 4;
const REPORT_REPLY: u8 = 5;
const BLAST_REQUEST: u8 = 6;

/// How often blocked loops look at their stop flag or deadline.
const POLL: Duration = Duration::from_millis(10);
/// A pacer that fell further behind than this (descheduled) forgets the debt instead of
/// bursting it into the link's queue.
const MAX_LAG: Duration = Duration::from_millis(20);
/// Limits on what a peer may ask the server to send, so a bad request cannot tie it up.
const MAX_BLAST_PACKETS: u64 = 10_000_000;
const MAX_BLAST_TIME: Duration = Duration::from_secs(60);
const MAX_CONCURRENT_BLASTS: usize = 4;
/// Sessions the server remembers counts for (oldest forgotten first).
const MAX_SESSIONS: usize = 256;
/// Goodput probes offer this much more than the configured rate, so the link stays saturated.
pub const GOODPUT_OVERDRIVE: f64 = 1.1;

/// Which way a measurement crosses the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Uplink,
    /// Server to client.
    Downlink,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    kind: u8,
    session: u32,
    seq: u32,
    t1: u64,
    t2: u64,
}

impl Header {
    fn write(&self, buf: &mut [u8]) {
        if buf.len() < HEADER_BYTES {
            return;
        }
        buf[..4].copy_from_slice(&MAGIC);
        buf[4] = self.kind;
        buf[5..9].copy_from_slice(&self.session.to_le_bytes());
        buf[9..13].copy_from_slice(&self.seq.to_le_bytes());
        buf[13..21].copy_from_slice(&self.t1.to_le_bytes());
        buf[21..29].copy_from_slice(&self.t2.to_le_bytes());
    }

    /// `None` for anything that is not a probe datagram (strays are ignored, never trusted).
    fn read(buf: &[u8]) -> Option<Header> {
        if buf.get(..4)? != MAGIC {
            return None;
        }
        let u32_at = |i: usize| Some(u32::from_le_bytes(buf.get(i..i + 4)?.try_into().ok()?));
        let u64_at = |i: usize| Some(u64::from_le_bytes(buf.get(i..i + 8)?.try_into().ok()?));
        Some(Header {
            kind: *buf.get(4)?,
            session: u32_at(5)?,
            seq: u32_at(9)?,
            t1: u64_at(13)?,
            t2: u64_at(21)?,
        })
    }

    fn datagram(&self, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len.clamp(HEADER_BYTES, MAX_DATAGRAM)];
        self.write(&mut buf);
        buf
    }
}

/// Wall-clock nanoseconds: both ends of a path run on the same host (loopback or namespaces
/// share the kernel clock), so one-way delays can be read off it.
fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn io_err(context: impl Into<String>, source: io::Error) -> NetnsError {
    NetnsError::Io {
        context: context.into(),
        source,
    }
}

/// A measurement that got no answer: reported as a timed-out I/O error naming what was tried.
fn timeout(context: impl Into<String>) -> NetnsError {
    io_err(
        context,
        io::Error::new(io::ErrorKind::TimedOut, "no answer through the path"),
    )
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Sends `count` datagrams of `size` bytes at `rate_bps` (charging each [`IP_UDP_OVERHEAD`]
/// more, as the link does), sleeping between them. Returns how many the socket took.
fn pace(
    socket: &UdpSocket,
    to: Option<SocketAddr>,
    header: Header,
    count: u64,
    size: usize,
    rate_bps: f64,
    stop: &AtomicBool,
) -> u64 {
    let mut buf = header.datagram(size);
    let interval = Duration::from_secs_f64(((buf.len() + IP_UDP_OVERHEAD) * 8) as f64 / rate_bps);
    let mut next = Instant::now();
    let mut sent = 0;
    for seq in 0..count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > MAX_LAG {
            next = now;
        }
        next += interval;
        Header {
            seq: u32::try_from(seq).unwrap_or(u32::MAX),
            t1: wall_ns(),
            ..header
        }
        .write(&mut buf);
        let ok = match to {
            Some(addr) => socket.send_to(&buf, addr),
            None => socket.send(&buf),
        };
        if ok.is_ok() {
            sent += 1;
        }
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_strays() {
        let h = Header {
            kind: DATA,
            session: 7,
            seq: 9,
            t1: 11,
            t2: 13,
        };
        let d = h.datagram(100);
        assert_eq!(d.len(), 100);
        assert_eq!(Header::read(&d), Some(h));
        assert_eq!(Header::read(&d[..HEADER_BYTES - 1]), None);
        assert_eq!(Header::read(b"nope, not a probe at all......"), None);
    }
}
