//! One end of a simulated connection: the multipath core, a quinn-proto connection per path,
//! and what the quinn driver's tasks do, done in turn at a given instant instead of awaited.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use mpquic_proto::wire::{self, ChunkReader, Frame, FrameDecoder, Params, SessionId};
use mpquic_proto::{Action, ChunkWork, PathEvent, Side, Step};
use mpquic_sched::{PathId, PathStatus};
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, Event, ReadError, StreamEvent, StreamId,
    VarInt, WriteError,
};

use crate::chunk_limit::ChunkStreamLimit;
use crate::config::Config;
use crate::connection::{session_end, Rejoin, CONTROL_PRIORITY, REJOIN_FOR};
use crate::error::{codes, varint, ConnectionError, ProtocolError};
use crate::telemetry::{CoreTelemetry, ReceivedBytes, Telemetry};

/// The most read from a quinn-proto stream at once, as the quinn driver does.
const READ_PIECE: usize = 64 * 1024;

/// A datagram on its way: from, to, bytes.
pub(crate) type Datagram = (SocketAddr, SocketAddr, Bytes);

/// Something the sender of a path still has to hand to quinn-proto, in order.
#[derive(Debug)]
enum Write {
    /// Bytes of a logical stream's chunk stream (opened at the first write).
    Chunk {
        stream: u64,
        priority: i32,
        bytes: Bytes,
    },
    /// The chunk stream is done: finish it.
    Finish(u64),
}

/// How far a path's control stream has come.
#[derive(Debug, PartialEq, Eq)]
enum Setup {
    /// The client waits for quinn's handshake.
    Handshake,
    /// The first frame (a new session or a join) is written; its answer is awaited.
    Asked,
    /// The path is in the core.
    Up(PathId),
    /// The core let the path go; its connection drains.
    Gone,
}

/// One path's quinn-proto connection and what the driver keeps beside it.
#[derive(Debug)]
struct SimPath {
    conn: quinn_proto::Connection,
    local: SocketAddr,
    telemetry: Arc<Telemetry>,
    received: Arc<AtomicU64>,
    setup: Setup,
    control: Option<StreamId>,
    control_in: FrameDecoder,
    control_out: Vec<u8>,
    chunks_in: BTreeMap<StreamId, ChunkReader>,
    chunk_limit: ChunkStreamLimit,
    readable: BTreeSet<StreamId>,
    chunks_out: BTreeMap<u64, StreamId>,
    /// Chunk streams opened since the core last heard of them, with their logical streams.
    opened: Vec<(u64, StreamId)>,
    writes: VecDeque<Write>,
    writer_blocked: bool,
    send_window: u64,
    /// The scheduler's own deadline, from [`Step::Wait`].
    wait_until: Option<Instant>,
}

/// One end of a simulated connection.
#[derive(Debug)]
pub struct End {
    side: Side,
    /// The multipath core, for the application's calls (open, write, read, finish, ...).
    pub core: mpquic_proto::Connection,
    config: Arc<Config>,
    endpoint: Endpoint,
    server_config: Option<Arc<quinn_proto::ServerConfig>>,
    paths: BTreeMap<ConnectionHandle, SimPath>,
    session: SessionId,
    inbox: Vec<Datagram>,
    events: Vec<PathEvent>,
    buf: Vec<u8>,
    /// The client's TLS settings, kept for opening failed paths again.
    client_tls: Option<quinn_proto::ClientConfig>,
    /// Failed paths being opened again, as the quinn driver's `rejoin` does.
    rejoins: Vec<Rejoining>,
}

/// A failed path the client opens again: one attempt at a time, each given `path.attempt`,
/// until one joins or `give_up`.
#[derive(Debug)]
struct Rejoining {
    path: Rejoin,
    give_up: Instant,
    /// The attempt under way and when it is abandoned, or when the next one starts.
    current: Result<(ConnectionHandle, Instant), Instant>,
}

impl End {
    pub(crate) fn new(
        side: Side,
        config: Arc<Config>,
        peer: Params,
        server_config: Option<Arc<quinn_proto::ServerConfig>>,
        rng_seed: [u8; 32],
        now: Instant,
    ) -> Self {
        let core = mpquic_proto::Connection::new(
            side,
            config.transport(),
            (config.scheduler)(),
            config.params(),
            peer,
            now,
        );
        let endpoint = Endpoint::new(
            Arc::new(quinn_proto::EndpointConfig::default()),
            server_config.clone(),
            true,
            Some(rng_seed),
        );
        Self {
            side,
            core,
            config,
            endpoint,
            server_config,
            paths: BTreeMap::new(),
            session: SessionId(1),
            inbox: Vec::new(),
            events: Vec::new(),
            buf: Vec::new(),
            client_tls: None,
            rejoins: Vec::new(),
        }
    }

    /// The path events so far (taken).
    pub fn take_events(&mut self) -> Vec<PathEvent> {
        std::mem::take(&mut self.events)
    }

    /// Starts a path from `local` to `remote` (client only).
    pub(crate) fn connect(
        &mut self,
        local: SocketAddr,
        remote: SocketAddr,
        client_config: &quinn_proto::ClientConfig,
        now: Instant,
    ) -> Result<ConnectionHandle, quinn_proto::ConnectError> {
        self.client_tls.get_or_insert_with(|| client_config.clone());
        let telemetry = self.config.new_telemetry();
        let mut client_config = client_config.clone();
        client_config.transport_config(self.config.quinn_transport(&telemetry, None));
        let (handle, conn) = self
            .endpoint
            .connect(now, client_config, remote, "localhost")?;
        let chunk_limit = self.config.chunk_stream_limit();
        self.paths
            .insert(handle, SimPath::new(conn, local, telemetry, chunk_limit));
        Ok(handle)
    }

    /// Starts, abandons and retires the attempts to open failed paths again. `true` if any
    /// started.
    fn run_rejoins(&mut self, now: Instant) -> bool {
        let mut progress = false;
        let mut rejoins = std::mem::take(&mut self.rejoins);
        rejoins.retain_mut(|r| {
            if let Ok((handle, abandon_at)) = r.current {
                match self.paths.get_mut(&handle) {
                    Some(path) if matches!(path.setup, Setup::Up(_)) => return false,
                    Some(path) if now >= abandon_at => {
                        path.conn.close(
                            now,
                            varint(codes::PATH_CLOSED),
                            Bytes::from_static(b"rejoin attempt"),
                        );
                        r.current = Err(abandon_at);
                    }
                    None => r.current = Err(now),
                    Some(_) => return true,
                }
            }
            if now >= r.give_up || self.core.error().is_some() {
                return false;
            }
            if r.current.is_err_and(|next| now >= next) {
                let Some(tls) = self.client_tls.clone() else {
                    return false;
                };
                let (local, remote, attempt) = (r.path.local, r.path.remote, r.path.attempt);
                r.current = match self.connect(local, remote, &tls, now) {
                    Ok(handle) => Ok((handle, now + attempt)),
                    Err(_) => Err(now + attempt),
                };
                progress = true;
            }
            true
        });
        self.rejoins = rejoins;
        progress
    }

    pub(crate) fn deliver(&mut self, datagram: Datagram) {
        self.inbox.push(datagram);
    }

    /// Does everything due at `now`; the datagrams to send go to `out`. `false`: nothing
    /// happened.
    pub(crate) fn drive(&mut self, now: Instant, out: &mut Vec<Datagram>) -> bool {
        let mut progress = !self.inbox.is_empty();
        for (from, to, data) in std::mem::take(&mut self.inbox) {
            self.receive(now, from, to, data, out);
        }
        let handles: Vec<ConnectionHandle> = self.paths.keys().copied().collect();
        for handle in &handles {
            progress |= self.drive_connection(*handle, now);
        }
        if self.core.poll_timeout().is_some_and(|t| t <= now) {
            self.core.handle_timeout(now);
        }
        progress |= self.dispatch(now);
        progress |= self.run_rejoins(now);
        progress |= self.flush_control(now);
        for handle in &handles {
            progress |= self.run_sender(*handle, now);
        }
        progress |= self.dispatch(now);
        for path in self.paths.values_mut() {
            while let Some(t) = path.conn.poll_transmit(now, 1, &mut self.buf) {
                out.push((
                    path.local,
                    t.destination,
                    Bytes::copy_from_slice(&self.buf[..t.size]),
                ));
                self.buf.clear();
                progress = true;
            }
        }
        self.paths.retain(|_, p| !p.conn.is_drained());
        progress
    }

    /// The earliest time after which [`End::drive`] has something to do without input.
    pub(crate) fn next_timeout(&mut self) -> Option<Instant> {
        let mut next = self.core.poll_timeout();
        for r in &self.rejoins {
            let at = match r.current {
                Ok((_, abandon_at)) => abandon_at,
                Err(next_try) => next_try,
            };
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        for path in self.paths.values_mut() {
            for t in [path.conn.poll_timeout(), path.wait_until] {
                next = match (next, t) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        next
    }

    fn receive(
        &mut self,
        now: Instant,
        from: SocketAddr,
        to: SocketAddr,
        data: Bytes,
        out: &mut Vec<Datagram>,
    ) {
        let len = data.len() as u64;
        let event = self.endpoint.handle(
            now,
            from,
            Some(to.ip()),
            None,
            BytesMut::from(&data[..]),
            &mut self.buf,
        );
        match event {
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(path) = self.paths.get_mut(&handle) {
                    path.received.fetch_add(len, Ordering::Relaxed);
                    path.conn.handle_event(event);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                let telemetry = self.config.new_telemetry();
                let Some(server_config) = &self.server_config else {
                    return;
                };
                let mut server_config = (**server_config).clone();
                server_config.transport_config(self.config.quinn_transport(&telemetry, None));
                let accepted = self.endpoint.accept(
                    incoming,
                    now,
                    &mut self.buf,
                    Some(Arc::new(server_config)),
                );
                match accepted {
                    Ok((handle, conn)) => {
                        let chunk_limit = self.config.chunk_stream_limit();
                        let mut path = SimPath::new(conn, to, telemetry, chunk_limit);
                        path.received.fetch_add(len, Ordering::Relaxed);
                        path.setup = Setup::Asked;
                        self.paths.insert(handle, path);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            out.push((
                                to,
                                t.destination,
                                Bytes::copy_from_slice(&self.buf[..t.size]),
                            ));
                        }
                    }
                }
                self.buf.clear();
            }
            Some(DatagramEvent::Response(t)) => {
                out.push((
                    to,
                    t.destination,
                    Bytes::copy_from_slice(&self.buf[..t.size]),
                ));
                self.buf.clear();
            }
            None => {}
        }
    }

    /// Runs one quinn-proto connection's timers and events, and feeds what arrived on its
    /// streams to the core.
    fn drive_connection(&mut self, handle: ConnectionHandle, now: Instant) -> bool {
        let Some(path) = self.paths.get_mut(&handle) else {
            return false;
        };
        let mut progress = false;
        if path.conn.poll_timeout().is_some_and(|t| t <= now) {
            path.conn.handle_timeout(now);
            progress = true;
        }
        while let Some(event) = path.conn.poll_endpoint_events() {
            if let Some(event) = self.endpoint.handle_event(handle, event) {
                path.conn.handle_event(event);
            }
            progress = true;
        }
        let mut events = Vec::new();
        while let Some(event) = path.conn.poll() {
            events.push(event);
        }
        progress |= !events.is_empty();
        let mut lost = None;
        for event in events {
            match event {
                Event::Connected if self.side == Side::Client => self.ask(handle),
                Event::ConnectionLost { reason } => lost = Some(reason),
                Event::Stream(StreamEvent::Opened { dir }) => {
                    let path = self.paths.get_mut(&handle).expect("looked up above");
                    while let Some(id) = path.conn.streams().accept(dir) {
                        match dir {
                            Dir::Bi if path.control.is_none() => {
                                path.control = Some(id);
                                path.prioritize_control();
                            }
                            Dir::Bi => {}
                            Dir::Uni => {
                                path.chunks_in.insert(id, self.core.chunk_reader());
                                if let Some(raised) = path.chunk_limit.on_open(path.chunks_in.len())
                                {
                                    path.conn.set_max_concurrent_streams(Dir::Uni, raised);
                                }
                            }
                        }
                        path.readable.insert(id);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    let path = self.paths.get_mut(&handle).expect("looked up above");
                    path.readable.insert(id);
                }
                _ => {}
            }
        }
        if let Some(reason) = lost {
            self.path_lost(handle, reason, now);
            return true;
        }
        if let Err(e) = self.read_streams(handle, now) {
            self.protocol_error(e, now);
        }
        progress
    }

    /// The client's path is up at quinn's level: open its control stream with a new session
    /// (the first path) or a join.
    fn ask(&mut self, handle: ConnectionHandle) {
        let first = if self.paths_asked() == 0 {
            Frame::NewSession {
                params: self.config.params(),
            }
        } else {
            Frame::Join {
                session: self.session,
                // The simulation has no join secret to prove.
                proof: [0; 32],
                params: self.config.params(),
            }
        };
        let path = self.paths.get_mut(&handle).expect("the caller holds it");
        path.control = path.conn.streams().open(Dir::Bi);
        path.prioritize_control();
        path.setup = Setup::Asked;
        let _ = first.encode(&mut path.control_out);
    }

    fn paths_asked(&self) -> usize {
        self.paths
            .values()
            .filter(|p| p.setup != Setup::Handshake)
            .count()
    }

    /// Feeds what arrived on the path's streams to the core: the control stream first, and
    /// chunk streams once the path is in the core (until then they wait in quinn-proto).
    fn read_streams(
        &mut self,
        handle: ConnectionHandle,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        let Some(path) = self.paths.get_mut(&handle) else {
            return Ok(());
        };
        if let Some(control) = path.control.filter(|id| path.readable.remove(id)) {
            let (pieces, _) = read_stream(&mut path.conn, control, true);
            for piece in pieces {
                let mut input = &piece.bytes[..];
                loop {
                    let path = self.paths.get_mut(&handle).expect("looked up above");
                    let Some(frame) = path.control_in.decode(&mut input)? else {
                        break;
                    };
                    self.on_control_frame(handle, frame, now)?;
                }
            }
        }
        let path = self.paths.get_mut(&handle).expect("looked up above");
        let Setup::Up(path_id) = path.setup else {
            return Ok(());
        };
        for id in std::mem::take(&mut path.readable) {
            // Out of order, so that bytes past a hole show it (`ChunkReader`).
            let (pieces, finished) = read_stream(&mut path.conn, id, false);
            let Some(reader) = path.chunks_in.get_mut(&id) else {
                continue;
            };
            for piece in pieces {
                let core = &mut self.core;
                let hole = reader.read(piece.offset, piece.bytes, |chunk| {
                    core.on_chunk(path_id, chunk.stream, chunk.offset, chunk.data, now)
                })?;
                if let Some(from) = hole {
                    self.core.on_missing(path_id, u64::from(id), from);
                }
            }
            if finished {
                path.chunks_in.remove(&id);
            }
        }
        Ok(())
    }

    /// A control frame: the session setup is the driver's, the rest the core's.
    fn on_control_frame(
        &mut self,
        handle: ConnectionHandle,
        frame: Frame,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        let path = self.paths.get_mut(&handle).expect("the caller holds it");
        match (&path.setup, frame) {
            (Setup::Up(id), frame) => self.core.on_frame(*id, frame, now),
            (Setup::Asked, first @ (Frame::NewSession { .. } | Frame::Join { .. }))
                if self.side == Side::Server =>
            {
                // Ids in order of arrival, the first path 0, as on the quinn server.
                let id = self.core.next_path_id();
                let answer = match first {
                    Frame::NewSession { .. } => Frame::Welcome {
                        session: self.session,
                        secret: [0; 16],
                        path: id.0,
                        params: self.config.params(),
                    },
                    _ => Frame::Joined { path: id.0 },
                };
                let _ = answer.encode(&mut path.control_out);
                self.path_up(handle, id, now);
                Ok(())
            }
            (Setup::Asked, Frame::Welcome { path: id, .. } | Frame::Joined { path: id })
                if self.side == Side::Client =>
            {
                self.path_up(handle, PathId(id), now);
                Ok(())
            }
            _ => Err(ProtocolError::UnexpectedFrame("not a session frame")),
        }
    }

    fn path_up(&mut self, handle: ConnectionHandle, id: PathId, now: Instant) {
        let path = self.paths.get_mut(&handle).expect("the caller holds it");
        path.setup = Setup::Up(id);
        let telemetry = CoreTelemetry::new(
            path.telemetry.clone(),
            ReceivedBytes::Counted(path.received.clone()),
        );
        if self
            .core
            .add_path(id, Box::new(telemetry), PathStatus::Available, now)
            .is_err()
        {
            path.conn.close(
                now,
                varint(codes::PATH_CLOSED),
                Bytes::from_static(b"closed"),
            );
        }
    }

    fn path_lost(
        &mut self,
        handle: ConnectionHandle,
        reason: quinn_proto::ConnectionError,
        now: Instant,
    ) {
        let Some(path) = self.paths.get_mut(&handle) else {
            return;
        };
        if let Some(ended) = session_end(&reason) {
            self.core.fail(ended);
        }
        if let Setup::Up(id) = path.setup {
            self.core.on_path_down(id, reason.to_string(), now);
        }
    }

    fn protocol_error(&mut self, error: ProtocolError, now: Instant) {
        let code = error.code();
        self.core.fail(ConnectionError::Protocol(error));
        for path in self.paths.values_mut() {
            path.conn
                .close(now, varint(code), Bytes::from_static(b"protocol error"));
        }
    }

    fn handle_of(&self, id: PathId) -> Option<ConnectionHandle> {
        self.paths
            .iter()
            .find(|(_, p)| p.setup == Setup::Up(id))
            .map(|(h, _)| *h)
    }

    /// Carries out what the core asked for. `true` if it asked for anything.
    fn dispatch(&mut self, now: Instant) -> bool {
        let mut any = false;
        while let Some(action) = self.core.poll_action() {
            any = true;
            match action {
                Action::Event(event) => self.events.push(event),
                Action::PathDown {
                    path,
                    reason,
                    failed,
                    ..
                } => {
                    if let Some(handle) = self.handle_of(path) {
                        let entry = self.paths.get_mut(&handle).expect("just found");
                        // Its connection drains on its own; the core has forgotten it.
                        entry.setup = Setup::Gone;
                        entry.writes.clear();
                        if failed && self.side == Side::Client {
                            let srtt = entry.telemetry.lock().rtt.srtt();
                            self.rejoins.push(Rejoining {
                                path: Rejoin::new(entry.local, entry.conn.remote_address(), srtt),
                                give_up: now + REJOIN_FOR,
                                current: Err(now),
                            });
                        }
                    }
                    self.events.push(PathEvent::Down { path, reason });
                }
                Action::ClosePath { path, code, reason } => {
                    if let Some(handle) = self.handle_of(path) {
                        let entry = self.paths.get_mut(&handle).expect("just found");
                        entry
                            .conn
                            .close(now, varint(code), Bytes::from_static(reason.as_bytes()));
                    }
                }
                Action::DeliveryReport { path, received } => {
                    if let Some(handle) = self.handle_of(path) {
                        let entry = self.paths.get_mut(&handle).expect("just found");
                        let window = entry
                            .telemetry
                            .on_peer_report(&entry.conn.stats(), received);
                        entry.conn.set_send_window(window);
                    }
                }
                // Every sender runs on every drive, and the application polls the core.
                Action::WakePath(_) | Action::WakeReader(_) | Action::WakeWriter(_) => {}
            }
        }
        any
    }

    /// Takes the core's control frames, unless a control stream still has bytes queued (the
    /// core coalesces them meanwhile, as with the quinn driver's one-slot queue), and writes
    /// what each control stream has queued.
    fn flush_control(&mut self, now: Instant) -> bool {
        let mut progress = false;
        let idle = self.paths.values().all(|p| p.control_out.is_empty());
        if idle && self.core.error().is_none() && self.core.has_control(now) {
            let default_path = self.core.control_path();
            for (target, frame) in self.core.poll_control(now) {
                let Some(handle) = target.or(default_path).and_then(|p| self.handle_of(p)) else {
                    continue;
                };
                let path = self.paths.get_mut(&handle).expect("just found");
                let _ = frame.encode(&mut path.control_out);
                progress = true;
            }
        }
        for path in self.paths.values_mut() {
            let Some(control) = path.control else {
                continue;
            };
            if path.control_out.is_empty() {
                continue;
            }
            if let Ok(n) = path.conn.send_stream(control).write(&path.control_out) {
                path.control_out.drain(..n);
                progress |= n > 0;
                if n > 0 {
                    // As the quinn driver's control writer: control frames want acks too.
                    path.telemetry.data_written(now, n as u64);
                }
            }
        }
        progress
    }

    /// A path's sender, as the quinn driver's `send_loop`: writes what it has queued, and
    /// asks the core for more once all of it is in quinn-proto.
    fn run_sender(&mut self, handle: ConnectionHandle, now: Instant) -> bool {
        let mut progress = false;
        loop {
            let Some(path) = self.paths.get_mut(&handle) else {
                return progress;
            };
            let Setup::Up(id) = path.setup else {
                return progress;
            };
            if !path.writes.is_empty() {
                let drained = path.write_queued();
                for (stream, transport) in path.opened.drain(..) {
                    self.core
                        .on_chunk_stream_opened(id, stream, u64::from(transport));
                }
                if path.writer_blocked == drained {
                    path.writer_blocked = !drained;
                    self.core.set_writer_blocked(id, !drained, now);
                }
                if !drained {
                    return progress;
                }
            }
            let path = self.paths.get_mut(&handle).expect("looked up above");
            let (step, retire) = self.core.poll_path(id, now);
            for (stream, reset) in retire {
                if let Some(quinn_stream) = path.chunks_out.remove(&stream) {
                    let mut send = path.conn.send_stream(quinn_stream);
                    // A stream already gone needs neither.
                    let _ = if reset {
                        send.reset(VarInt::from_u32(0)).is_ok()
                    } else {
                        send.finish().is_ok()
                    };
                }
            }
            let target = path.telemetry.send_window();
            if target != path.send_window {
                path.conn.set_send_window(target);
                path.send_window = target;
            }
            path.wait_until = None;
            match step {
                Step::Stop => return progress,
                Step::Wait(deadline) => {
                    path.wait_until = deadline;
                    return progress;
                }
                Step::Send(batch) => {
                    path.telemetry
                        .data_written(now, batch.iter().map(ChunkWork::bytes).sum());
                    path.queue(batch);
                    progress = true;
                }
            }
        }
    }
}

impl SimPath {
    fn new(
        conn: quinn_proto::Connection,
        local: SocketAddr,
        telemetry: Arc<Telemetry>,
        chunk_limit: ChunkStreamLimit,
    ) -> Self {
        Self {
            conn,
            local,
            telemetry,
            received: Arc::new(AtomicU64::new(0)),
            setup: Setup::Handshake,
            control: None,
            control_in: FrameDecoder::default(),
            control_out: Vec::new(),
            chunks_in: BTreeMap::new(),
            chunk_limit,
            readable: BTreeSet::new(),
            chunks_out: BTreeMap::new(),
            opened: Vec::new(),
            writes: VecDeque::new(),
            writer_blocked: false,
            send_window: 0,
            wait_until: None,
        }
    }

    /// Control frames before any chunk, as in the quinn driver ([`CONTROL_PRIORITY`]).
    fn prioritize_control(&mut self) {
        if let Some(control) = self.control {
            let _ = self
                .conn
                .send_stream(control)
                .set_priority(CONTROL_PRIORITY);
        }
    }

    /// Queues a batch of the core's chunks, framed as the quinn driver frames them.
    fn queue(&mut self, batch: Vec<ChunkWork>) {
        for work in batch {
            for (offset, parts) in work.pieces {
                let len: usize = parts.iter().map(|p| p.len()).sum();
                let mut header = Vec::new();
                if wire::encode_chunk_header(offset, len as u64, &mut header).is_err() {
                    continue;
                }
                for bytes in std::iter::once(Bytes::from(header)).chain(parts) {
                    self.writes.push_back(Write::Chunk {
                        stream: work.stream,
                        priority: work.priority,
                        bytes,
                    });
                }
            }
            if work.all_granted {
                self.writes.push_back(Write::Finish(work.stream));
            }
        }
    }

    /// Hands queued writes to quinn-proto until one does not fit. `true`: all went.
    fn write_queued(&mut self) -> bool {
        while let Some(write) = self.writes.front_mut() {
            match write {
                Write::Finish(stream) => {
                    if let Some(id) = self.chunks_out.remove(stream) {
                        let _ = self.conn.send_stream(id).finish();
                    }
                }
                Write::Chunk {
                    stream,
                    priority,
                    bytes,
                } => {
                    let Some(&id) = self.chunks_out.get(stream) else {
                        let Some(id) = self.conn.streams().open(Dir::Uni) else {
                            return false;
                        };
                        let (stream, priority) = (*stream, *priority);
                        self.chunks_out.insert(stream, id);
                        self.opened.push((stream, id));
                        let mut header = Vec::new();
                        let _ = wire::encode_chunk_stream_header(stream, &mut header);
                        self.writes.push_front(Write::Chunk {
                            stream,
                            priority,
                            bytes: header.into(),
                        });
                        continue;
                    };
                    let mut send = self.conn.send_stream(id);
                    let _ = send.set_priority(*priority);
                    match send.write(bytes) {
                        Ok(n) if n == bytes.len() => {}
                        Ok(n) => {
                            let _ = bytes.split_to(n);
                            return false;
                        }
                        Err(WriteError::Blocked) => return false,
                        // The peer stopped it, or it is gone: the core re-sends what matters.
                        Err(_) => {}
                    }
                }
            }
            self.writes.pop_front();
        }
        true
    }
}

/// Everything readable on a stream now, in order if `ordered` (else as it arrived), and
/// whether it ended (finished or reset).
fn read_stream(
    conn: &mut quinn_proto::Connection,
    id: StreamId,
    ordered: bool,
) -> (Vec<quinn_proto::Chunk>, bool) {
    let mut pieces = Vec::new();
    let mut stream = conn.recv_stream(id);
    let Ok(mut chunks) = stream.read(ordered) else {
        return (pieces, true);
    };
    let finished = loop {
        match chunks.next(READ_PIECE) {
            Ok(Some(chunk)) => pieces.push(chunk),
            Ok(None) | Err(ReadError::Reset(_)) => break true,
            Err(ReadError::Blocked) => break false,
        }
    };
    // Whether quinn-proto should send flow control credit: it finds out when it next polls.
    let _ = chunks.finalize();
    (pieces, finished)
}
