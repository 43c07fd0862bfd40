//! Page loads over the simulated driver ([`mpquic_core::sim`]): the real multipath core,
//! quinn-proto connections and scheduler at both ends, the scenario's links through the
//! link model the testbed emulates ([`mpquic_scenario::link`]), on simulated time.
//!
//! The browser's side requests objects in the order of the loopback and namespace runs
//! (`RequestPlan` in `client.rs`); the server answers each request with its recorded size,
//! after telling the core the object's urgency, the response's size and what it leads to, as
//! the page server does. HTTP/3 itself is not run: a request is one bidirectional stream
//! carrying bytes the size of its HEADERS frame, and a response the size of its HEADERS
//! frame, the DATA frame's header and the body ([`request_len`], [`response_len`]). A load takes a fraction of a second of CPU, so every
//! scheduler over every preset takes minutes, not hours.

use std::collections::BTreeMap;
use std::time::Duration;

use mpquic_core::sim::{emulated_path, Pair, PathLinks};
use mpquic_h3_prio::PriorityField;

use crate::client::{RequestPlan, Transport};
use crate::error::RunError;
use crate::report::{LoadReport, ObjectReport};
use crate::run::RunConfig;
use crate::{LoadError, Page, PageObject};

/// Bytes of an object's request: its HEADERS frame with QPACK's literal encoding of
/// `:authority`, `:path` and `priority` (the static table covers `:method` and `:scheme`).
pub fn request_len(object: &PageObject) -> usize {
    const FIXED: usize = 30;
    FIXED + object.key.len() + object.priority.to_field().len()
}

/// Bytes of an object's response: its HEADERS frame (status, content type, content length,
/// priority), the DATA frame's header and the body.
pub fn response_len(object: &PageObject) -> u64 {
    const FIXED: u64 = 20;
    let digits = object.size.to_string().len() as u64;
    let data_header = 1 + varint_len(object.size);
    FIXED
        + object.content_type.len() as u64
        + digits
        + object.priority.to_field().len() as u64
        + data_header
        + object.size
}

fn varint_len(value: u64) -> u64 {
    match value {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// The scenario's links for the paths `run` uses, seeded from `seed`.
fn links(run: &RunConfig, seed: u64) -> Result<Vec<PathLinks>, RunError> {
    run.path_indices()?
        .into_iter()
        .map(|k| {
            emulated_path(&run.scenario.paths[k], seed, k)
                .map_err(|e| RunError::Connect(e.to_string()))
        })
        .collect()
}

/// A response being written: the object and how much of it went.
struct Response {
    stream: u64,
    left: u64,
}

/// The time the testbed's hosts take per round of requests, which the simulated ends, acting
/// in zero time, do not: the page client from a response's end to its requests leaving, and
/// the page server from a request's end to its response being written.
///
/// [`HostTime::TESTBED`] is what a trace of the namespace testbed showed for one youtube-2013
/// load in pb-low, every step on the wall clock (`docs/results/2026-12-04-host-time/`):
/// the client read the response's last chunk 0.32 ms after its datagram arrived and handed
/// it to the page 0.06 ms later, spawned and ran its 67 request tasks in 1.24 ms (0.42 ms, then
/// about 12 us each), its paths' send loops wrote them into quinn in 0.73 ms, and the first
/// datagrams left 0.44 ms later: 2.8 ms, 12 us per request and 2.0 ms besides. The server
/// resolved the first request of a burst 0.5 ms after its datagram arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostTime {
    /// From a response's last byte to the round of requests it starts leaving, besides what
    /// each request of the round adds.
    pub client_round: Duration,
    /// What each request of a round adds to it (the round's requests leave together).
    pub client_per_request: Duration,
    /// From a request's last byte to its response being written.
    pub server_response: Duration,
}

impl HostTime {
    /// Hosts that take no time: requests and responses at the instant that allows them.
    pub const NONE: Self = Self {
        client_round: Duration::ZERO,
        client_per_request: Duration::ZERO,
        server_response: Duration::ZERO,
    };

    /// The namespace testbed's hosts, as traced (see the type's documentation).
    pub const TESTBED: Self = Self {
        client_round: Duration::from_micros(2_000),
        client_per_request: Duration::from_micros(12),
        server_response: Duration::from_micros(500),
    };
}

impl Default for HostTime {
    /// [`HostTime::TESTBED`]: the simulation predicts the testbed.
    fn default() -> Self {
        Self::TESTBED
    }
}

/// Requests and responses waiting for their host's time to pass, by when they are due (time
/// since the page request).
#[derive(Debug, Default)]
struct HostQueue<T> {
    due: Vec<(Duration, T)>,
}

impl<T> HostQueue<T> {
    fn push(&mut self, at: Duration, item: T) {
        self.due.push((at, item));
    }

    /// The earliest instant something falls due.
    fn next(&self) -> Option<Duration> {
        self.due.iter().map(|(at, _)| *at).min()
    }

    /// What is due by `now`, in the order it was queued.
    fn take_due(&mut self, now: Duration) -> Vec<T> {
        let (due, later): (Vec<_>, Vec<_>) = self.due.drain(..).partition(|(at, _)| *at <= now);
        self.due = later;
        due.into_iter().map(|(_, item)| item).collect()
    }
}

/// Loads `page` once on simulated time, over the paths and with the settings of `run` (its
/// mode is ignored; plain quinn is refused), links and quinn-proto seeded from `seed`, the
/// hosts taking [`HostTime::TESTBED`]. Times count from the page request, sent once every
/// path is up at both ends.
///
/// # Errors
/// [`RunError`]: bad configuration, or a load that does not finish within
/// [`LoadOptions::timeout`](crate::LoadOptions::timeout) of simulated time.
pub fn load_simulated(page: &Page, run: &RunConfig, seed: u64) -> Result<LoadReport, RunError> {
    load_simulated_with(page, run, seed, HostTime::TESTBED)
}

/// [`load_simulated`] with the hosts taking `host` per round of requests.
///
/// # Errors
/// As [`load_simulated`].
pub fn load_simulated_with(
    page: &Page,
    run: &RunConfig,
    seed: u64,
    host: HostTime,
) -> Result<LoadReport, RunError> {
    if run.transport == Transport::Quinn {
        return Err(RunError::Connect(
            "the simulation runs mpquic only".to_owned(),
        ));
    }
    if page.objects.is_empty() {
        return Err(LoadError::Empty(page.id.clone()).into());
    }
    let config = crate::transport_config(
        &run.scheduler,
        run.paths,
        &run.congestion,
        run.delivery_reports,
        run.reinjection,
    )?;
    let links = links(run, seed)?;
    let paths = links.len();
    let mut pair =
        Pair::new(&config, &config, links, seed).map_err(|e| RunError::Connect(e.to_string()))?;
    if !pair.connect(Duration::from_secs(10)) {
        return Err(RunError::Connect("paths not up after 10 s".to_owned()));
    }
    let timeout = run.load.timeout;
    let start = pair.now();
    let plan = RequestPlan::new(page, &run.load);
    let leads_to = page.leads_to();
    let n = page.objects.len();
    // Client: request stream -> object, bytes received per object, completion times.
    let mut requests: BTreeMap<u64, usize> = BTreeMap::new();
    let mut received = vec![0u64; n];
    let mut requested = vec![Duration::ZERO; n];
    let mut completed: Vec<Option<Duration>> = vec![None; n];
    let mut document_done: Option<Duration> = None;
    let mut next_timed = 0;
    let mut to_request = Vec::new();
    // Requests and responses whose host has not had its time yet. The page request leaves at
    // time zero: the load is timed from it.
    let mut client_due: HostQueue<usize> = HostQueue::default();
    for &index in &plan.first {
        client_due.push(Duration::ZERO, index);
    }
    let mut server_due: HostQueue<(u64, Vec<u8>)> = HostQueue::default();
    // Server: requests being read, responses being written.
    let mut server_reads: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut responses: Vec<Response> = Vec::new();
    let mut error: Option<String> = None;

    loop {
        let elapsed = pair.now() - start;
        if let Some(done_at) = document_done {
            while let Some(&(after, index)) = plan.timed.get(next_timed) {
                if done_at + after > elapsed {
                    break;
                }
                to_request.push(index);
                next_timed += 1;
            }
        }
        if completed.iter().all(Option::is_some) || error.is_some() || elapsed >= timeout {
            break;
        }
        // The next instant a host acts on its own: a timed request, or a request or response
        // whose host time has passed.
        let due = [
            document_done
                .zip(plan.timed.get(next_timed))
                .map(|(at, (after, _))| at + *after),
            client_due.next(),
            server_due.next(),
        ]
        .into_iter()
        .flatten()
        .min();
        let limit = due.unwrap_or(timeout).min(timeout).saturating_sub(elapsed);
        pair.run_until(limit, |pair| {
            let now = pair.now();
            let elapsed = now - start;
            // The browser: new requests after its time per round, then what arrived.
            let mut queued = false;
            // A round's requests leave together: the page client's send loop writes them into
            // quinn as one batch once their tasks have run.
            let round = to_request.len();
            let due =
                elapsed + host.client_round + host.client_per_request.saturating_mul(round as u32);
            for index in to_request.drain(..) {
                client_due.push(due, index);
                queued |= due > elapsed;
            }
            for index in client_due.take_due(elapsed) {
                let Some(stream) = pair.client.core.open(false, now) else {
                    error = Some("the server's stream limit was reached".to_owned());
                    return true;
                };
                let object = &page.objects[index];
                let mut request = vec![0u8; request_len(object).max(8)];
                request[..8].copy_from_slice(&(index as u64).to_le_bytes());
                // A request is far below the send buffer: it is taken whole.
                let _ = pair.client.core.write(stream, &request, now);
                let _ = pair.client.core.finish(stream, now);
                requests.insert(stream, index);
                requested[index] = elapsed;
            }
            let mut progress = false;
            for (&stream, &index) in &requests {
                if completed[index].is_some() {
                    continue;
                }
                while let Some(result) = pair.client.core.read(stream, usize::MAX) {
                    match result {
                        Ok(Some(data)) => received[index] += data.len() as u64,
                        Ok(None) => {
                            completed[index] = Some(elapsed);
                            progress = true;
                            if index == plan.main_document {
                                document_done = Some(elapsed);
                            }
                            to_request.extend(&plan.children[index]);
                            break;
                        }
                        Err(e) => {
                            error = Some(format!("{}: {e}", page.objects[index].url));
                            return true;
                        }
                    }
                }
            }
            // The server: new requests, then responses after its time, as their buffers take
            // them.
            while let Some(stream) = pair.server.core.accept(false) {
                server_reads.insert(stream, Vec::new());
            }
            let mut read = Vec::new();
            for (&stream, request) in &mut server_reads {
                while let Some(result) = pair.server.core.read(stream, usize::MAX) {
                    match result {
                        Ok(Some(data)) => request.extend_from_slice(&data),
                        Ok(None) => {
                            read.push(stream);
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
            for stream in read {
                let request = server_reads.remove(&stream).unwrap_or_default();
                server_due.push(elapsed + host.server_response, (stream, request));
                queued |= !host.server_response.is_zero();
            }
            for (stream, request) in server_due.take_due(elapsed) {
                let index = request
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes)
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|i| *i < n);
                let Some(index) = index else {
                    error = Some("the server read a malformed request".to_owned());
                    return true;
                };
                let object = &page.objects[index];
                let core = &mut pair.server.core;
                let priority = object.priority;
                let _ = core.set_priority(stream, priority, now);
                let len = response_len(object);
                let _ = core.set_size_hint(stream, len, now);
                if let Some(lead) = leads_to[index].filter(|_| run.dependency_hints) {
                    let _ = core.set_leads_to(stream, lead, now);
                }
                responses.push(Response { stream, left: len });
            }
            static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
            responses.retain_mut(|response| {
                let core = &mut pair.server.core;
                while response.left > 0 {
                    let piece = &ZEROS[..ZEROS.len().min(response.left as usize)];
                    match core.write(response.stream, piece, now) {
                        Ok(0) => return true,
                        Ok(written) => response.left -= written as u64,
                        Err(_) => return false,
                    }
                }
                let _ = core.finish(response.stream, now);
                false
            });
            // Back to the outer loop when the browser may have new requests to time, or a
            // host has something to do later.
            progress || queued || !to_request.is_empty()
        });
        if pair.now() - start >= timeout && completed.iter().any(Option::is_none) {
            break;
        }
    }
    if let Some(reason) = error {
        return Err(LoadError::Request {
            url: String::new(),
            reason,
        }
        .into());
    }
    if completed.iter().any(Option::is_none) {
        return Err(LoadError::Timeout(timeout).into());
    }
    if let Some((i, object)) = page
        .objects
        .iter()
        .enumerate()
        .find(|(i, object)| received[*i] != response_len(object))
    {
        return Err(LoadError::Size {
            url: object.url.clone(),
            received: received[i],
            recorded: response_len(object),
        }
        .into());
    }
    let objects = page
        .objects
        .iter()
        .enumerate()
        .map(|(i, object)| ObjectReport {
            url: object.url.clone(),
            key: object.key.clone(),
            size: object.size,
            bytes: object.size,
            status: 200,
            critical: object.critical,
            urgency: object.priority.urgency().get(),
            requested_ms: requested[i].as_secs_f64() * 1e3,
            completed_ms: completed[i].unwrap_or_default().as_secs_f64() * 1e3,
        })
        .collect();
    let mut report = LoadReport::of_objects(page, objects);
    report.transport = Transport::Mpquic.name().to_owned();
    report.scheduler = pair.client.core.scheduler_name().to_owned();
    report.scenario = run.scenario.name.to_owned();
    report.mode = "sim".to_owned();
    report.paths = paths;
    report.per_path_bytes = pair
        .client
        .core
        .path_ids()
        .filter_map(|id| Some((u64::from(id.0), pair.client.core.path(id)?.1.bytes_received)))
        .collect();
    report.set_duplicates(&pair.client.core.reinjection_stats());
    Ok(report)
}
