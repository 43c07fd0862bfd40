//! The far end: [`ProbeServer`] echoes probes, counts data per session and answers reports,
//! and sends data ([`Blast`]s) on request.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::{
    io_err, is_timeout, pace, wall_ns, Header, BLAST_REQUEST, DATA, ECHO_REPLY, ECHO_REQUEST,
    HEADER_BYTES, MAX_BLAST_PACKETS, MAX_BLAST_TIME, MAX_CONCURRENT_BLASTS, MAX_DATAGRAM,
    MAX_SESSIONS, POLL, REPORT_REPLY, REPORT_REQUEST,
};
use crate::error::NetnsError;
use mpquic_scenario::link::IP_UDP_OVERHEAD;

/// Data-packet arrivals of one session, as counted by whoever receives them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arrivals {
    pub(super) packets: u64,
    pub(super) bytes: u64,
    pub(super) first: Instant,
    pub(super) last: Instant,
    pub(super) first_len: u64,
}

impl Arrivals {
    pub(super) fn new(now: Instant, len: usize) -> Self {
        Arrivals {
            packets: 1,
            bytes: len as u64,
            first: now,
            last: now,
            first_len: len as u64,
        }
    }

    pub(super) fn add(&mut self, now: Instant, len: usize) {
        self.packets += 1;
        self.bytes += len as u64;
        self.last = now;
    }
}

/// The far end of every measurement: echoes probes, counts data, sends data on request.
#[derive(Debug)]
pub struct ProbeServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ProbeServer {
    /// Binds `bind` (port 0 = pick) and serves until stopped or dropped.
    pub fn start(bind: SocketAddr) -> Result<ProbeServer, NetnsError> {
        let socket = UdpSocket::bind(bind)
            .map_err(|e| io_err(format!("probe server: cannot bind {bind}"), e))?;
        socket
            .set_read_timeout(Some(POLL))
            .map_err(|e| io_err("probe server: read timeout", e))?;
        let addr = socket
            .local_addr()
            .map_err(|e| io_err("probe server: local address", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("probe-server".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || serve(&socket, &stop)
            })
            .map_err(|e| io_err("probe server: cannot spawn thread", e))?;
        Ok(ProbeServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens: the address to relay to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and joins its threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ProbeServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn serve(socket: &UdpSocket, stop: &Arc<AtomicBool>) {
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    let mut sessions: HashMap<u32, Arrivals> = HashMap::new();
    let mut order: VecDeque<u32> = VecDeque::new();
    let mut blasts: Vec<(u32, JoinHandle<()>)> = Vec::new();
    let mut blasted: VecDeque<u32> = VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        blasts.retain(|(_, h)| !h.is_finished());
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(_) => {
                std::thread::sleep(POLL);
                continue;
            }
        };
        let now = Instant::now();
        let Some(header) = Header::read(&buf[..n]) else {
            continue;
        };
        match header.kind {
            ECHO_REQUEST => {
                Header {
                    kind: ECHO_REPLY,
                    t2: wall_ns(),
                    ..header
                }
                .write(&mut buf[..n]);
                let _ = socket.send_to(&buf[..n], from);
            }
            DATA => match sessions.get_mut(&header.session) {
                Some(a) => a.add(now, n),
                None => {
                    if order.len() >= MAX_SESSIONS {
                        if let Some(old) = order.pop_front() {
                            sessions.remove(&old);
                        }
                    }
                    order.push_back(header.session);
                    sessions.insert(header.session, Arrivals::new(now, n));
                }
            },
            REPORT_REQUEST => {
                let reply = report_reply(header.session, sessions.get(&header.session));
                let _ = socket.send_to(&reply, from);
            }
            BLAST_REQUEST => {
                // Retried requests must not start a second blast of the same session.
                if blasted.contains(&header.session) || blasts.len() >= MAX_CONCURRENT_BLASTS {
                    continue;
                }
                let Some(blast) = Blast::parse(&header, &buf[..n]) else {
                    continue;
                };
                let Ok(tx) = socket.try_clone() else {
                    continue;
                };
                if blasted.len() >= MAX_SESSIONS {
                    blasted.pop_front();
                }
                blasted.push_back(header.session);
                let stop = Arc::clone(stop);
                let spawned = std::thread::Builder::new()
                    .name("probe-blast".into())
                    .spawn(move || {
                        pace(
                            &tx,
                            Some(from),
                            Header {
                                kind: DATA,
                                session: blast.session,
                                seq: 0,
                                t1: 0,
                                t2: 0,
                            },
                            blast.count,
                            blast.size,
                            blast.rate_bps,
                            &stop,
                        );
                    });
                if let Ok(h) = spawned {
                    blasts.push((header.session, h));
                }
            }
            _ => {}
        }
    }
    for (_, h) in blasts {
        let _ = h.join();
    }
}

/// Report reply: header, then packets, bytes, span ns, first_len (u64 each); all zero when the
/// session is unknown (nothing arrived).
fn report_reply(session: u32, arrivals: Option<&Arrivals>) -> Vec<u8> {
    let mut buf = Header {
        kind: REPORT_REPLY,
        session,
        seq: 0,
        t1: 0,
        t2: 0,
    }
    .datagram(HEADER_BYTES + 32);
    if let Some(a) = arrivals {
        let span = u64::try_from((a.last - a.first).as_nanos()).unwrap_or(u64::MAX);
        for (i, v) in [a.packets, a.bytes, span, a.first_len]
            .into_iter()
            .enumerate()
        {
            let at = HEADER_BYTES + 8 * i;
            buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
    buf
}

/// What a peer asked the server to send: `count` data packets of `size` bytes at `rate_bps`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Blast {
    pub(super) session: u32,
    pub(super) count: u64,
    pub(super) size: usize,
    pub(super) rate_bps: f64,
}

impl Blast {
    /// Request body after the header: count u64, size u64, rate bit/s u64. Rejects requests that
    /// would run too long or send nonsense.
    fn parse(header: &Header, buf: &[u8]) -> Option<Blast> {
        let u64_at = |i: usize| Some(u64::from_le_bytes(buf.get(i..i + 8)?.try_into().ok()?));
        let count = u64_at(HEADER_BYTES)?;
        let size = usize::try_from(u64_at(HEADER_BYTES + 8)?).ok()?;
        let rate = u64_at(HEADER_BYTES + 16)?;
        if count == 0 || count > MAX_BLAST_PACKETS || rate < 1_000 {
            return None;
        }
        if !(HEADER_BYTES..=MAX_DATAGRAM).contains(&size) {
            return None;
        }
        let secs = (count as f64) * ((size + IP_UDP_OVERHEAD) * 8) as f64 / rate as f64;
        if secs > MAX_BLAST_TIME.as_secs_f64() {
            return None;
        }
        Some(Blast {
            session: header.session,
            count,
            size,
            rate_bps: rate as f64,
        })
    }

    pub(super) fn request(&self) -> Vec<u8> {
        let mut buf = Header {
            kind: BLAST_REQUEST,
            session: self.session,
            seq: 0,
            t1: 0,
            t2: 0,
        }
        .datagram(HEADER_BYTES + 24);
        let rate = self.rate_bps.round().min(u64::MAX as f64) as u64;
        for (i, v) in [self.count, self.size as u64, rate].into_iter().enumerate() {
            let at = HEADER_BYTES + 8 * i;
            buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blast_requests_are_bounded() {
        let ok = Blast {
            session: 1,
            count: 1000,
            size: 1000,
            rate_bps: 1e6,
        };
        let h = Header::read(&ok.request()).expect("header");
        assert!(Blast::parse(&h, &ok.request()).is_some());
        let too_long = Blast {
            count: 1_000_000,
            ..ok
        };
        assert!(Blast::parse(&h, &too_long.request()).is_none());
        let truncated = ok.request();
        assert!(Blast::parse(&h, &truncated[..HEADER_BYTES + 10]).is_none());
    }
}
