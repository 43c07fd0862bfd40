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

/// Loads `page` once on simulated time, over the paths and with the settings of `run` (its
/// mode is ignored; plain quinn is refused), links and quinn-proto seeded from `seed`. Times
/// count from the page request, sent once every path is up at both ends.
///
/// # Errors
/// [`RunError`]: bad configuration, or a load that does not finish within
/// [`LoadOptions::timeout`](crate::LoadOptions::timeout) of simulated time.
pub fn load_simulated(page: &Page, run: &RunConfig, seed: u64) -> Result<LoadReport, RunError> {
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
    let mut to_request = plan.first.clone();
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
        // The next instant the browser acts on its own: a timed request falling due.
        let due = document_done
            .zip(plan.timed.get(next_timed))
            .map(|(at, (after, _))| at + *after);
        let limit = due.unwrap_or(timeout).min(timeout).saturating_sub(elapsed);
        pair.run_until(limit, |pair| {
            let now = pair.now();
            let elapsed = now - start;
            // The browser: new requests, then what arrived.
            for index in to_request.drain(..) {
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
            // The server: new requests, then responses as their buffers take them.
            while let Some(stream) = pair.server.core.accept(false) {
                server_reads.insert(stream, Vec::new());
            }
            let mut answered = Vec::new();
            for (&stream, request) in &mut server_reads {
                while let Some(result) = pair.server.core.read(stream, usize::MAX) {
                    match result {
                        Ok(Some(data)) => request.extend_from_slice(&data),
                        Ok(None) => {
                            answered.push(stream);
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
            for stream in answered {
                let request = server_reads.remove(&stream).unwrap_or_default();
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
            // Back to the outer loop when the browser may have new requests to time.
            progress || !to_request.is_empty()
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
