//! The receiving side of [`Connection`] driven by random operation sequences from a peer (chunks,
//! fins, resets, in any order, legal or not) and the application (reads, stops), checking
//! after every step the flow-control invariants that a lost credit, a window that does not
//! follow reads, or an unchecked final size once broke.

use proptest::prelude::*;

use super::*;

const STREAM_WINDOW: u64 = 4096;
const WINDOW: u64 = 8192;
const STREAMS: u64 = 4;

/// The byte every sender puts at `offset`, so that overlapping chunks agree.
fn byte_at(offset: u64) -> u8 {
    (offset % 251) as u8
}

#[derive(Debug, Clone)]
enum Op {
    Chunk {
        stream: u64,
        offset: u64,
        len: u64,
    },
    Fin {
        stream: u64,
        final_size: u64,
    },
    Reset {
        stream: u64,
        final_size: u64,
    },
    Read {
        stream: u64,
        max: usize,
    },
    Stop {
        stream: u64,
    },
    /// The control frames go out, so the sender learns the raised limits.
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    let stream = 0..STREAMS;
    // Offsets and sizes reach past the windows, so that some operations break the rules.
    let offset = 0..3 * STREAM_WINDOW;
    prop_oneof![
        6 => (stream.clone(), offset.clone(), 0..1500u64)
            .prop_map(|(stream, offset, len)| Op::Chunk { stream, offset, len }),
        1 => (stream.clone(), offset.clone()).prop_map(|(stream, final_size)| Op::Fin { stream, final_size }),
        1 => (stream.clone(), offset).prop_map(|(stream, final_size)| Op::Reset { stream, final_size }),
        4 => (stream.clone(), 1..3000usize).prop_map(|(stream, max)| Op::Read { stream, max }),
        1 => stream.prop_map(|stream| Op::Stop { stream }),
        2 => Just(Op::Flush),
    ]
}

/// The client's `k`th unidirectional stream.
fn uni(k: u64) -> u64 {
    stream_id(Side::Client, UNI, k)
}

fn receiver(now: Instant) -> Connection {
    with_windows(WINDOW, STREAM_WINDOW, now)
}

/// A server whose peer and itself announce these data limits.
fn with_windows(max_data: u64, max_stream_data: u64, now: Instant) -> Connection {
    let config = TransportConfig {
        send_buffer: 1 << 20,
        idle_timeout: Duration::from_secs(30),
        delivery_reports: true,
        delivery_credit: false,
        path_failure_rtts: 4,
        path_failure_floor: Duration::from_secs(1),
        reinjection: Default::default(),
    };
    let params = Params {
        max_data,
        max_stream_data,
        max_bidi_streams: 100,
        max_uni_streams: 100,
    };
    let scheduler = mpquic_sched::SchedulerKind::PriorityBucket.build();
    Connection::new(Side::Server, config, scheduler, params, params, now)
}

/// What the peer may legally send, as the receiver announced it.
struct Announced {
    max_data: u64,
    max_stream_data: BTreeMap<u64, u64>,
    /// Highest offset the peer sent per stream, which the connection limit counts.
    sent: BTreeMap<u64, u64>,
    final_size: BTreeMap<u64, u64>,
}

impl Announced {
    fn stream_max(&self, id: u64) -> u64 {
        self.max_stream_data
            .get(&id)
            .copied()
            .unwrap_or(STREAM_WINDOW)
    }

    /// Whether a peer that respects every announced limit and final size may send
    /// `[.., end)` on `id`, with `fin` fixing the size there.
    fn allows(&self, id: u64, end: u64, fin: bool) -> bool {
        let sent = self.sent.get(&id).copied().unwrap_or(0);
        let total: u64 = self.sent.values().sum();
        let within_final = match self.final_size.get(&id) {
            Some(&f) => end <= f && (!fin || end == f),
            None => !fin || end >= sent,
        };
        within_final && end <= self.stream_max(id) && total - sent + sent.max(end) <= self.max_data
    }

    fn record(&mut self, id: u64, end: u64, fin: bool) {
        let sent = self.sent.entry(id).or_default();
        *sent = (*sent).max(end);
        if fin {
            self.final_size.insert(id, end);
        }
    }
}

/// The invariants, after any step that did not close the connection.
fn check(state: &Connection) -> Result<(), TestCaseError> {
    let (limit, received, consumed, footprint) = state.receive_window.counters();
    prop_assert!(
        received <= limit,
        "received {received} beyond the limit {limit}"
    );
    prop_assert!(consumed <= received);
    // The limit follows the reader: never an eighth of a window behind.
    prop_assert!(
        limit + WINDOW / 8 > consumed + WINDOW,
        "limit {limit}, consumed {consumed}"
    );
    let mut held = 0;
    let mut buffers = 0;
    for recv in state.streams.values().filter_map(|s| s.recv.as_ref()) {
        prop_assert!(recv.credited <= recv.counted_end);
        prop_assert!(recv.counted_end <= recv.max_stream_data);
        prop_assert!(recv.reasm.footprint() <= 2 * STREAM_WINDOW);
        if recv.stopped || recv.reset.is_some() {
            prop_assert_eq!(recv.reasm.footprint(), 0, "discarded bytes stay buffered");
        }
        held += recv.counted_end - recv.credited;
        buffers += recv.reasm.footprint();
    }
    // Every counted byte is either held by a live stream or given back: nothing leaks.
    prop_assert_eq!(received - consumed, held, "credit leaked");
    prop_assert_eq!(footprint, buffers);
    prop_assert!(footprint <= 2 * WINDOW);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn flow_control_holds_under_any_sequence(ops in prop::collection::vec(op(), 1..200)) {
        let now = Instant::now();
        let mut state = receiver(now);
        let mut announced = Announced {
            max_data: WINDOW,
            max_stream_data: BTreeMap::new(),
            sent: BTreeMap::new(),
            final_size: BTreeMap::new(),
        };
        for op in ops {
            let peer_result = match op {
                Op::Chunk { stream, offset, len } => {
                    let id = uni(stream);
                    let data: Vec<u8> = (offset..offset + len).map(byte_at).collect();
                    let legal = announced.allows(id, offset + len, false);
                    let result = state.on_chunk(PathId(0), id, offset, Bytes::from(data), now);
                    Some((legal, id, offset + len, false, result))
                }
                Op::Fin { stream, final_size } | Op::Reset { stream, final_size } => {
                    let id = uni(stream);
                    let legal = announced.allows(id, final_size, true);
                    let frame = if matches!(op, Op::Fin { .. }) {
                        Frame::Fin { stream: id, final_size }
                    } else {
                        Frame::ResetStream { stream: id, code: 1, final_size }
                    };
                    let result = state.on_frame(PathId(0), frame, now);
                    Some((legal, id, final_size, true, result))
                }
                Op::Read { stream, max } => {
                    let _ = state.read(uni(stream), max);
                    None
                }
                Op::Stop { stream } => {
                    let _ = state.stop(uni(stream), 0);
                    None
                }
                Op::Flush => {
                    for (_, frame) in state.poll_control(now) {
                        match frame {
                            Frame::MaxData { max } => announced.max_data = max,
                            Frame::MaxStreamData { stream, max } => {
                                announced.max_stream_data.insert(stream, max);
                            }
                            _ => {}
                        }
                    }
                    None
                }
            };
            if let Some((legal, id, end, fin, result)) = peer_result {
                match result {
                    Ok(()) => announced.record(id, end, fin),
                    // A peer within every announced limit is never refused.
                    Err(e) => {
                        prop_assert!(!legal, "a legal step refused: {e}");
                        return Ok(());
                    }
                }
            }
            check(&state)?;
        }
    }
}

// ---- bad input from the peer: pure input -> typed error, no panic ----

/// A path's transport with a fixed window, flight and round trip (10 ms unless set), and a
/// flight's tail the test sets.
#[derive(Debug, Default)]
struct Fixed {
    cwnd: u64,
    bytes_in_flight: u64,
    rtt: Option<Duration>,
    tail: Arc<std::sync::Mutex<Option<Tail>>>,
}

impl Fixed {
    fn rtt(&self) -> Duration {
        self.rtt.unwrap_or(Duration::from_millis(10))
    }
}

impl PathTelemetry for Fixed {
    fn snapshot(&self, id: PathId, status: PathStatus) -> PathSnapshot {
        let rate = mpquic_sched::Bandwidth::from_bits_per_sec(10e6).expect("positive");
        let mut snapshot = PathSnapshot::new(id, self.rtt(), rate, self.cwnd);
        snapshot.bytes_in_flight = self.bytes_in_flight;
        snapshot.status = status;
        snapshot
    }
    fn one_way_delay(&self) -> Duration {
        self.rtt() / 2
    }
    fn ack_wait(&self) -> (Option<Instant>, Duration) {
        (None, self.rtt())
    }
    fn probe_timeout(&self) -> Duration {
        Duration::from_millis(40)
    }
    fn lost_bytes(&self) -> u64 {
        0
    }
    fn tail(&self) -> Tail {
        self.tail.lock().unwrap().unwrap_or(Tail::Acked)
    }
    fn generation(&self) -> u64 {
        0
    }
    fn set_app_limited(&self, _: bool) {}
    fn datagram_bytes_received(&self) -> u64 {
        0
    }
}

/// A server on [`receiver`]'s windows that knows one path, whose transport holds
/// `bytes_in_flight` of a 100 kB window.
fn server_with_a_path_holding(bytes_in_flight: u64, now: Instant) -> Connection {
    let mut conn = receiver(now);
    let path = Fixed {
        cwnd: 100_000,
        bytes_in_flight,
        ..Fixed::default()
    };
    conn.add_path(PATH, Box::new(path), PathStatus::Available, now)
        .unwrap();
    conn
}

/// A server that knows one idle path, on [`receiver`]'s windows.
fn server_with_a_path(now: Instant) -> Connection {
    server_with_a_path_holding(0, now)
}

const PATH: PathId = PathId(0);

fn chunk(conn: &mut Connection, stream: u64, offset: u64, len: u64) -> Result<(), ProtocolError> {
    let data: Vec<u8> = (offset..offset + len).map(byte_at).collect();
    conn.on_chunk(PATH, stream, offset, Bytes::from(data), Instant::now())
}

#[test]
fn a_chunk_beyond_the_stream_window_is_refused() {
    let mut conn = server_with_a_path(Instant::now());
    let error = chunk(&mut conn, uni(0), STREAM_WINDOW - 10, 11).unwrap_err();
    assert_eq!(
        error,
        ProtocolError::StreamWindow {
            stream: uni(0),
            end: STREAM_WINDOW + 1,
            limit: STREAM_WINDOW
        }
    );
}

#[test]
fn overlapping_chunks_with_different_bytes_are_refused() {
    let mut conn = server_with_a_path(Instant::now());
    chunk(&mut conn, uni(0), 100, 50).unwrap();
    let other = Bytes::from(vec![!byte_at(120); 10]);
    let error = conn
        .on_chunk(PATH, uni(0), 120, other, Instant::now())
        .unwrap_err();
    assert!(matches!(error, ProtocolError::ConflictingData { stream, .. } if stream == uni(0)));
}

#[test]
fn a_chunk_for_a_stream_this_side_never_opened_is_refused() {
    let mut conn = server_with_a_path(Instant::now());
    let ours = stream_id(Side::Server, UNI, 0);
    assert_eq!(
        chunk(&mut conn, ours, 0, 10).unwrap_err(),
        ProtocolError::StreamState(ours)
    );
}

#[test]
fn a_stream_beyond_the_stream_limit_is_refused() {
    let mut conn = server_with_a_path(Instant::now());
    assert_eq!(
        chunk(&mut conn, uni(100), 0, 1).unwrap_err(),
        ProtocolError::StreamLimit(uni(100))
    );
}

#[test]
fn resets_beyond_the_window_or_the_varint_range_are_refused() {
    for final_size in [STREAM_WINDOW + 1, MAX_VARINT, u64::MAX] {
        let mut conn = server_with_a_path(Instant::now());
        let reset = Frame::ResetStream {
            stream: uni(0),
            code: 7,
            final_size,
        };
        let error = conn.on_frame(PATH, reset, Instant::now()).unwrap_err();
        assert!(
            matches!(error, ProtocolError::StreamWindow { end, .. } if end == final_size),
            "final size {final_size}: {error:?}"
        );
    }
}

#[test]
fn a_final_size_below_what_arrived_or_changed_is_refused() {
    let mut conn = server_with_a_path(Instant::now());
    chunk(&mut conn, uni(0), 0, 100).unwrap();
    let fin = |final_size| Frame::Fin {
        stream: uni(0),
        final_size,
    };
    assert_eq!(
        conn.on_frame(PATH, fin(50), Instant::now()).unwrap_err(),
        ProtocolError::FinalSize(uni(0))
    );
    conn.on_frame(PATH, fin(100), Instant::now()).unwrap();
    assert_eq!(
        conn.on_frame(PATH, fin(120), Instant::now()).unwrap_err(),
        ProtocolError::FinalSize(uni(0))
    );
    assert_eq!(
        chunk(&mut conn, uni(0), 100, 1).unwrap_err(),
        ProtocolError::FinalSize(uni(0))
    );
}

#[test]
fn session_frames_after_the_setup_are_refused() {
    let mut conn = server_with_a_path(Instant::now());
    let frame = Frame::Joined { path: 3 };
    assert!(matches!(
        conn.on_frame(PATH, frame, Instant::now()).unwrap_err(),
        ProtocolError::UnexpectedFrame(_)
    ));
}

#[test]
fn an_ack_of_data_never_sent_is_refused() {
    let now = Instant::now();
    let mut conn = server_with_a_path(now);
    let ours = conn.open(true, now).unwrap();
    conn.write(ours, &[1; 100], now).unwrap();
    let ack = Frame::DataAck {
        stream: ours,
        offset: 1_000,
        fin: false,
    };
    assert!(matches!(
        conn.on_frame(PATH, ack, now).unwrap_err(),
        ProtocolError::UnexpectedFrame(_)
    ));
}

/// The hardening issue's defect 2: single bytes behind a hole cost far more memory than they
/// count against the window; the receiver closes the connection before it holds more than
/// twice a window's worth.
#[test]
fn single_bytes_behind_a_hole_are_refused_before_they_cost_twice_the_window() {
    let mut conn = server_with_a_path(Instant::now());
    let error = (1..STREAM_WINDOW)
        .step_by(2)
        .find_map(|offset| chunk(&mut conn, uni(0), offset, 1).err())
        .expect("refused before the window is filled");
    assert!(
        matches!(error, ProtocolError::ExcessiveBuffering { limit, .. } if limit == 2 * STREAM_WINDOW),
        "{error:?}"
    );
}

/// The hardening issue's defect 3: the credit of a reset stream's buffered bytes comes back
/// when the application reads the reset, so later streams still fit the window.
#[test]
fn a_reset_streams_credit_returns_when_its_reset_is_read() {
    let now = Instant::now();
    let mut conn = server_with_a_path(now);
    let per_stream = WINDOW / 2;
    for k in 0..2 {
        chunk(&mut conn, uni(k), 0, per_stream.min(STREAM_WINDOW)).unwrap();
        let reset = Frame::ResetStream {
            stream: uni(k),
            code: 9,
            final_size: per_stream.min(STREAM_WINDOW),
        };
        conn.on_frame(PATH, reset, now).unwrap();
        assert_eq!(conn.accept(true), Some(uni(k)));
        assert_eq!(
            conn.read(uni(k), usize::MAX),
            Some(Err(ReadError::Reset(9)))
        );
    }
    // Whatever limit the receiver announces now, a stream of a window's worth fits it.
    let announced = conn
        .poll_control(now)
        .into_iter()
        .find_map(|(_, frame)| match frame {
            Frame::MaxData { max } => Some(max),
            _ => None,
        })
        .expect("the window was raised");
    assert!(announced >= 2 * per_stream.min(STREAM_WINDOW) + STREAM_WINDOW);
    chunk(&mut conn, uni(2), 0, STREAM_WINDOW).unwrap();
}

#[test]
fn a_path_with_a_full_window_takes_a_little_more_so_its_packets_leave_full() {
    let granted = |bytes_in_flight| {
        let now = Instant::now();
        let mut conn = with_windows(1 << 20, 1 << 20, now);
        let path = Fixed {
            cwnd: 100_000,
            bytes_in_flight,
            ..Fixed::default()
        };
        conn.add_path(PATH, Box::new(path), PathStatus::Available, now)
            .unwrap();
        let id = conn.open(true, now).unwrap();
        conn.write(id, &[7; 40_000], now).unwrap();
        match conn.poll_path(PATH, now).0 {
            Step::Send(batch) => batch.iter().map(ChunkWork::bytes).sum(),
            Step::Wait(_) | Step::Stop => 0,
        }
    };
    let ahead = AHEAD_OF_THE_WINDOW + GRANT_QUANTUM;
    assert_eq!(granted(100_000), ahead);
    assert_eq!(granted(99_000), ahead + 1000);
    // Bytes wait past the window: a grant is a quantum or nothing.
    assert_eq!(granted(100_000 + AHEAD_OF_THE_WINDOW), GRANT_QUANTUM);
    assert_eq!(granted(100_000 + AHEAD_OF_THE_WINDOW + 1), 0);
    assert_eq!(granted(100_000 + ahead), 0);
}

/// Writes 3 kB of a stream of `urgency` (and its end if `finish`) on a server with one path
/// (10 ms RTT, 10 Mbit/s, `in_flight` of a 200 kB window in flight) whose transport's tail
/// the returned handle sets, and has the path send it.
fn sent_with_urgency(
    urgency: u8,
    finish: bool,
    in_flight: u64,
    now: Instant,
) -> (Connection, Arc<std::sync::Mutex<Option<Tail>>>) {
    let mut conn = with_windows(1 << 20, 1 << 20, now);
    let path = Fixed {
        cwnd: 200_000,
        bytes_in_flight: in_flight,
        tail: Arc::new(std::sync::Mutex::new(Some(Tail::Queued))),
        ..Fixed::default()
    };
    let tail = path.tail.clone();
    conn.add_path(PATH, Box::new(path), PathStatus::Available, now)
        .unwrap();
    let id = conn.open(true, now).unwrap();
    let priority = Priority::new(Urgency::new(urgency).unwrap(), false);
    conn.set_priority(id, priority, now).unwrap();
    conn.write(id, &[7; 3000], now).unwrap();
    if finish {
        conn.finish(id, now).unwrap();
    }
    assert!(matches!(conn.poll_path(PATH, now).0, Step::Send(_)));
    (conn, tail)
}

/// The tail probes queued for [`PATH`]: pings, and tails that say what they follow.
fn probes(conn: &mut Connection, now: Instant) -> Vec<Frame> {
    conn.poll_control(now)
        .into_iter()
        .filter(|(path, frame)| {
            *path == Some(PATH) && matches!(frame, Frame::Ping | Frame::Tail { .. })
        })
        .map(|(_, frame)| frame)
        .collect()
}

fn probe_count(conn: &mut Connection, now: Instant) -> usize {
    probes(conn, now).len()
}

#[test]
fn urgent_bytes_that_end_a_flight_are_followed_by_a_ping_on_their_path() {
    let start = Instant::now();
    let (mut conn, tail) = sent_with_urgency(0, false, 0, start);
    // An eighth of the 10 ms RTT after the write, the transport still holds them: look again.
    let eighth = Duration::from_micros(1250);
    let first = conn.poll_timeout().unwrap();
    assert_eq!(first, start + eighth);
    conn.handle_timeout(first);
    assert_eq!(probe_count(&mut conn, first), 0);
    // They left and nothing followed: a probe does, once, saying where the stream's bytes on
    // the path end.
    *tail.lock().unwrap() = Some(Tail::Unacked);
    let second = conn.poll_timeout().unwrap();
    assert_eq!(second, first + eighth);
    conn.handle_timeout(second);
    let sent = probes(&mut conn, second);
    assert!(
        matches!(sent.as_slice(), [Frame::Tail { end: 3000, .. }]),
        "{sent:?}"
    );
    assert_eq!(conn.reinjection_stats().tail_probes, 1);
    let later = second + Duration::from_millis(5);
    conn.handle_timeout(later);
    assert_eq!(probe_count(&mut conn, later), 0);
}

#[test]
fn acknowledged_or_unurgent_tails_are_not_probed() {
    let start = Instant::now();
    let (mut conn, tail) = sent_with_urgency(0, false, 0, start);
    *tail.lock().unwrap() = Some(Tail::Acked);
    let due = conn.poll_timeout().unwrap();
    conn.handle_timeout(due);
    assert_eq!(probe_count(&mut conn, due), 0);

    let (mut conn, tail) = sent_with_urgency(3, false, 0, start);
    *tail.lock().unwrap() = Some(Tail::Unacked);
    assert_eq!(conn.poll_timeout(), None);
    let later = start + Duration::from_millis(50);
    conn.handle_timeout(later);
    assert_eq!(probe_count(&mut conn, later), 0);
}

#[test]
fn the_last_bytes_of_a_stream_of_any_urgency_are_probed() {
    let start = Instant::now();
    let (mut conn, tail) = sent_with_urgency(3, true, 0, start);
    *tail.lock().unwrap() = Some(Tail::Unacked);
    let due = conn.poll_timeout().unwrap();
    assert_eq!(due, start + Duration::from_micros(1250));
    conn.handle_timeout(due);
    assert_eq!(probe_count(&mut conn, due), 1);
}

/// Behind 100 kB in flight on a 10 Mbit/s path, the stream's bytes are expected to leave
/// about 70 ms after they were handed over: a probe due before that goes on the control
/// stream ahead of them, so it names none of them and is a ping.
#[test]
fn a_probe_names_no_bytes_still_expected_in_the_queue() {
    let start = Instant::now();
    let (mut conn, tail) = sent_with_urgency(0, false, 100_000, start);
    *tail.lock().unwrap() = Some(Tail::Unacked);
    let due = conn.poll_timeout().unwrap();
    assert!(due < start + Duration::from_millis(10));
    conn.handle_timeout(due);
    assert_eq!(probes(&mut conn, due), vec![Frame::Ping]);
}

const FAST: PathId = PathId(0);
const SLOW: PathId = PathId(1);

/// A server with a 10 ms path and a 50 ms one, both with a 100 kB window.
fn server_with_a_fast_and_a_slow_path(now: Instant) -> Connection {
    let mut conn = with_windows(1 << 20, 1 << 20, now);
    for (id, rtt) in [(FAST, 10), (SLOW, 50)] {
        let path = Fixed {
            cwnd: 100_000,
            rtt: Some(Duration::from_millis(rtt)),
            ..Fixed::default()
        };
        conn.add_path(id, Box::new(path), PathStatus::Available, now)
            .unwrap();
    }
    conn
}

#[test]
fn a_hole_on_a_slow_path_is_reported_on_the_fast_one() {
    let now = Instant::now();
    let mut conn = server_with_a_fast_and_a_slow_path(now);
    conn.on_missing(SLOW, 7, 1200);
    // One on the fast path itself would come no sooner than its own acknowledgements.
    conn.on_missing(FAST, 3, 0);
    let missing: Vec<_> = conn
        .poll_control(now)
        .into_iter()
        .filter(|(_, frame)| matches!(frame, Frame::Missing { .. }))
        .collect();
    let report = Frame::Missing {
        path: SLOW.0,
        transport_stream: 7,
        from: 1200,
    };
    assert_eq!(missing, vec![(None, report)]);
    assert_eq!(conn.control_path(), Some(FAST));
}

/// The server sends 30 kB of a stream of `urgency`, whose share on the slow path went on
/// transport stream 3 there; returns the stream and its first offset on the slow path.
fn sent_on_both_paths(urgency: u8, now: Instant) -> (Connection, u64, u64) {
    let mut conn = server_with_a_fast_and_a_slow_path(now);
    let id = conn.open(true, now).unwrap();
    let priority = Priority::new(Urgency::new(urgency).unwrap(), false);
    conn.set_priority(id, priority, now).unwrap();
    conn.set_size_hint(id, 30_000, now).unwrap();
    conn.write(id, &[7; 30_000], now).unwrap();
    conn.finish(id, now).unwrap();
    let Step::Send(batch) = conn.poll_path(SLOW, now).0 else {
        panic!("the slow path has a share");
    };
    let slow_start = batch[0].pieces[0].0;
    conn.on_chunk_stream_opened(SLOW, id, 3);
    assert!(matches!(conn.poll_path(FAST, now).0, Step::Send(_)));
    (conn, id, slow_start)
}

/// A report of a hole in the slow path's transport stream `transport_stream`, from `from`.
fn missing(transport_stream: u64, from: u64) -> Frame {
    Frame::Missing {
        path: SLOW.0,
        transport_stream,
        from,
    }
}

#[test]
fn urgent_bytes_behind_a_reported_hole_or_a_lost_tail_go_again_on_the_fast_path() {
    let start = Instant::now();
    for tail in [false, true] {
        let (mut conn, id, slow_start) = sent_on_both_paths(0, start);
        // The report comes when the slow path's next packet (or its tail probe) has arrived
        // and the fast path has carried the report: its one-way delay and the fast one's
        // after the bytes left.
        let now = start + Duration::from_millis(30);
        let from = slow_start + 1000;
        let report = if tail {
            Frame::MissingTail {
                path: SLOW.0,
                stream: id,
                from,
            }
        } else {
            missing(3, from)
        };
        conn.on_frame(FAST, report, now).unwrap();
        assert!(conn.reinjection_stats().on_missing > 0, "tail: {tail}");
        let Step::Send(batch) = conn.poll_path(FAST, now).0 else {
            panic!("the fast path re-sends");
        };
        let resent: Vec<u64> = batch
            .iter()
            .filter(|work| work.stream == id)
            .flat_map(|work| work.pieces.iter().map(|(offset, _)| *offset))
            .collect();
        assert_eq!(resent, vec![slow_start], "tail: {tail}");
    }
}

/// A tail probe on the slow path for bytes the receiver lacks: the path lost the stream's
/// last bytes there (nothing of the stream follows them to show a hole), and the fast path
/// carries the report. Bytes that arrived, or a probe on the fast path, make none.
#[test]
fn a_tail_the_slow_path_lost_is_reported_on_the_fast_one() {
    let now = Instant::now();
    let mut conn = server_with_a_fast_and_a_slow_path(now);
    let stream = uni(0);
    let bytes = |len: usize| Bytes::from(vec![1; len]);
    // 0..1000 came on the fast path and 2000..2500 on the slow one; 1000..2000 went on the
    // fast path too, and 2500..3000 was the slow path's tail.
    conn.on_chunk(FAST, stream, 0, bytes(1000), now).unwrap();
    conn.on_chunk(SLOW, stream, 2000, bytes(500), now).unwrap();
    for (path, end) in [(SLOW, 2500), (SLOW, 3000), (FAST, 2000)] {
        conn.on_frame(path, Frame::Tail { stream, end }, now)
            .unwrap();
    }
    let reports: Vec<_> = conn
        .poll_control(now)
        .into_iter()
        .filter(|(_, frame)| matches!(frame, Frame::MissingTail { .. }))
        .collect();
    let report = Frame::MissingTail {
        path: SLOW.0,
        stream,
        from: 2500,
    };
    assert_eq!(reports, vec![(None, report)]);
    assert_eq!(conn.reinjection_stats().holes_reported, 1);
}

#[test]
fn a_hole_in_an_unurgent_or_unknown_stream_is_left_to_its_path() {
    let start = Instant::now();
    let now = start + Duration::from_millis(30);
    let (mut unurgent, _, slow_start) = sent_on_both_paths(3, start);
    unurgent
        .on_frame(FAST, missing(3, slow_start), now)
        .unwrap();
    let (mut unknown, _, slow_start) = sent_on_both_paths(0, start);
    unknown
        .on_frame(FAST, missing(11, slow_start), now)
        .unwrap();
    assert_eq!(unurgent.reinjection_stats().on_missing, 0);
    assert_eq!(unknown.reinjection_stats().on_missing, 0);
}
