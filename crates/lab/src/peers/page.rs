//! `cargo xtask peers page`: tquic's page-level baseline, one recorded page loaded by
//! `tquic_client` from `tquic_server` over a scenario's emulated paths (needs root).
//!
//! ```text
//! cargo xtask peers page --scenario pb-high --har pages/youtube.com-2013.har
//!                        [--scheduler minrtt|roundrobin|redundant] [--cc bbr|bbr3|cubic|copa]
//!                        [--timeout 60] [--logs DIR]
//! ```
//!
//! It brings the scenario's testbed up ([`Bed`]), writes one file per page object with exactly
//! its recorded size under a directory `tquic_server` serves (in the server namespace, bound to
//! path 0's server address, multipath on, the scheduler and congestion control asked for), and
//! runs `tquic_client` in the client namespace with a local address per path, the same
//! scheduler and congestion control, on ONE connection (`-t 1 --max-concurrent-conns 1`,
//! `--max-concurrent-requests`, `--max-requests-per-conn` and `--total-requests-per-thread`
//! all the object count). Defaults are tquic's own: minrtt and BBR, the bulk run's "default".
//!
//! **Request order.** `tquic_client` cannot wait for one response before sending the next
//! request, so the page is NOT loaded document first: every object, the document first in
//! order (stream 0), is requested at once as concurrent requests (beyond the server's 200
//! concurrent streams, the rest follow as streams free up). No `priority` header is sent (the
//! client has none); an object's `urgency` in the report is the page's, for reference.
//!
//! **Request paths.** An object is requested under its key, and the file sits where
//! `tquic_server` looks for that path (the root plus the path's normal components, the query
//! part of the last one). Where the file system cannot hold that (a key that is a directory of
//! another key, like a document `/p/www.example.com/` beside `/p/www.example.com/a.js`; the
//! same file for two keys; a component over 255 bytes; a `.`/`..` segment the client's URL
//! parser would resolve), the object is requested under `/_tquic/{index}` instead; the report
//! keeps the page's key in `key` and gives the path requested as `path` on such objects.
//! (`tquic_client` percent-encodes `'` in a query; the request path does the same.)
//!
//! **Per-object times.** Both programs log at DEBUG into files (millisecond timestamps of
//! `env_logger`). The server's `got request [.. ":path: P" ..] on stream id S` maps streams to
//! objects; the client's `send request URL current index I` gives each request's time, its
//! `got response headers [..] on stream id S` the status and content length, and its `got N
//! bytes of response data on stream S` the body bytes; an object completes at its last
//! response-data line (its headers line for an empty body). Times are milliseconds from the
//! first request line (1 ms resolution). They are checked against the client's own statistics:
//! the PLT must lie between its longest request time (measured from each request's own start)
//! and its `finished in` wall time (connection set-up included), each within 2 ms of rounding.
//! The DEBUG logging costs no measurable time: youtube-2013 over pb-high, minrtt + CUBIC, the
//! client's own longest request time was 484-491 ms in 5 runs at INFO and 481-534 ms in 5
//! interleaved runs at DEBUG. FRT is the completion of the last critical object (the PLT when there is none), PLT that of
//! the last object. Every object must come back 200 with a content length and body bytes equal
//! to its recorded size; anything else is an error.
//!
//! **Output.** One JSON line that deserialises as `mpquic_replay::LoadReport`: `page` the
//! page's id, `scheduler` `"tquic minrtt"` etc., `scenario`, `mode` `"netns"`, `paths`,
//! `frt_ms`, `plt_ms`, `bytes` (body bytes), `per_path_bytes` (by path index: the UDP payload
//! bytes the emulated downlink of each path forwarded during the load, i.e. all QUIC packets
//! server to client, not stream bytes as mpquic's client counts them), `objects`. Extra fields
//! (ignored by `LoadReport`, or read by it where it has them): `transport` `"tquic"`, `peer`, `cc`, `multipath_algor`, `request_order`, `timing`,
//! `aliased`, `tquic` (the client's own statistics), and `path` on aliased objects.
//!
//! The run is bounded by `--timeout` (the client is killed after it), the testbed is torn down
//! on success, error and Ctrl-C, and the exit code is 1 on any failure with the reason on
//! stderr.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use mpquic_netns::topology::{self, Side};
use mpquic_replay::{har, ObjectReport, Page};
use mpquic_scenario::Scenario;
use serde_json::{json, Value};

use super::bed::{addrs, Bed, Proc};
use super::peer::write_pem_certificate;
use crate::testbed::{catch_signals, interrupted, stop_signal};
use crate::Failure;

/// The port tquic_server listens on (the namespaces are the run's own).
const PORT: u16 = 4433;
/// Where aliased objects are served.
const ALIAS_DIR: &str = "_tquic";
/// Rounding slack of the log's millisecond timestamps in the consistency checks.
const SLACK_MS: f64 = 2.0;

/// tquic's multipath schedulers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scheduler {
    /// The lowest-RTT path with room (tquic's default).
    Minrtt,
    /// The paths in turn.
    Roundrobin,
    /// Every packet on every path.
    Redundant,
}

/// tquic's congestion controllers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Cc {
    /// BBR (tquic's default).
    Bbr,
    /// BBRv3.
    Bbr3,
    /// CUBIC.
    Cubic,
    /// COPA.
    Copa,
}

impl Scheduler {
    fn name(self) -> &'static str {
        match self {
            Scheduler::Minrtt => "minrtt",
            Scheduler::Roundrobin => "roundrobin",
            Scheduler::Redundant => "redundant",
        }
    }
}

impl Cc {
    fn name(self) -> &'static str {
        match self {
            Cc::Bbr => "bbr",
            Cc::Bbr3 => "bbr3",
            Cc::Cubic => "cubic",
            Cc::Copa => "copa",
        }
    }
}

/// The options of `peers page`.
#[derive(Debug, Args)]
pub struct PageArgs {
    /// The scenario preset (pb-high, pb-low, ...).
    #[arg(long)]
    scenario: String,
    /// The HAR file of the page.
    #[arg(long)]
    har: PathBuf,
    /// tquic's multipath scheduler.
    #[arg(long, value_enum, default_value = "minrtt")]
    scheduler: Scheduler,
    /// tquic's congestion control.
    #[arg(long, value_enum, default_value = "bbr")]
    cc: Cc,
    /// Bound on the load in seconds (the client is killed after it).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    timeout: u64,
    /// Keep the client's and the server's logs in this directory.
    #[arg(long)]
    logs: Option<PathBuf>,
    /// Which random losses the emulated links draw (as page_client's `--loss-seed`).
    #[arg(long, default_value_t = 0)]
    loss_seed: u64,
}

/// Runs `cargo xtask peers page`.
pub fn run(args: &PageArgs) -> Result<ExitCode, Failure> {
    if let Some(why) = topology::unavailable() {
        return Err(Failure::Testbed(format!(
            "peers page runs on the namespace testbed, which cannot run here: {why}"
        )));
    }
    let scenario = Scenario::by_name(&args.scenario).map_err(|e| Failure::Usage(e.to_string()))?;
    let page =
        har::load(&args.har).map_err(|e| Failure::Usage(format!("{}: {e}", args.har.display())))?;
    if page.objects.is_empty() {
        return Err(Failure::Usage(format!(
            "{}: the page has no objects",
            args.har.display()
        )));
    }
    let (server_bin, client_bin) = super::tquic().map_err(Failure::Testbed)?;
    // Before any thread of ours: the signals are blocked in every thread spawned after this.
    catch_signals()?;
    let scratch = crate::target_dir()
        .join("peers")
        .join(format!("page-{}", std::process::id()));
    let bed = Bed::up_with(scenario, &[], args.loss_seed, scratch).map_err(Failure::Testbed)?;
    eprintln!(
        "{scenario}: testbed up ({}); {} objects, {} bytes, tquic {} + {}",
        bed.client_ns(),
        page.objects.len(),
        page.total_bytes(),
        args.scheduler.name(),
        args.cc.name()
    );
    let outcome = load(&bed, &page, args, &server_bin, &client_bin);
    // Torn down whatever the outcome (a signal too: the bed is dropped on the way out).
    if let Some(signal) = stop_signal() {
        drop(bed);
        return Ok(interrupted(signal));
    }
    bed.down().map_err(Failure::Testbed)?;
    let report = outcome.map_err(Failure::Testbed)?;
    println!("{report}");
    Ok(ExitCode::SUCCESS)
}

/// Where one object is served and under which request path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Served {
    /// The request path (`/…`, query included).
    path: String,
    /// The file, relative to the served root.
    file: PathBuf,
    /// Whether `path` is `/_tquic/{index}` rather than the object's key.
    aliased: bool,
}

/// The path `tquic_client`'s URL parser sends for `key`, or `None` when it would change its
/// segments (`.`, `..` and their percent-encoded forms are resolved).
fn request_path(key: &str) -> Option<String> {
    if !key.starts_with('/') {
        return None;
    }
    let (path, query) = match key.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (key, None),
    };
    let dotted = path.split('/').any(|seg| {
        let s = seg.to_ascii_lowercase().replace("%2e", ".");
        s == "." || s == ".."
    });
    if dotted {
        return None;
    }
    Some(match query {
        // Special schemes percent-encode `'` in the query.
        Some(q) => format!("{path}?{}", q.replace('\'', "%27")),
        None => path.to_owned(),
    })
}

/// The file `tquic_server` reads for request path `path`: the normal components of it as a
/// file path (the query is part of the last one).
fn server_file(path: &str) -> PathBuf {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(v) => Some(v),
            _ => None,
        })
        .collect()
}

/// Where every object of `page` is served (see the module docs).
fn plan(page: &Page) -> Vec<Served> {
    let direct: Vec<Option<(String, PathBuf)>> = page
        .objects
        .iter()
        .map(|o| {
            let path = request_path(&o.key)?;
            let file = server_file(&path);
            let ok = file.components().next().is_some()
                && file.components().all(|c| c.as_os_str().len() <= 255)
                && !file.starts_with(ALIAS_DIR);
            ok.then_some((path, file))
        })
        .collect();
    // Every proper ancestor directory of a direct file.
    let mut dirs: HashSet<PathBuf> = HashSet::new();
    for (_, file) in direct.iter().flatten() {
        let mut dir = file.clone();
        while dir.pop() && dir.components().next().is_some() {
            dirs.insert(dir.clone());
        }
    }
    let mut files: HashSet<PathBuf> = HashSet::new();
    let mut paths: HashSet<String> = HashSet::new();
    direct
        .into_iter()
        .enumerate()
        .map(|(i, d)| match d {
            Some((path, file))
                if !dirs.contains(&file)
                    && files.insert(file.clone())
                    && paths.insert(path.clone()) =>
            {
                Served {
                    path,
                    file,
                    aliased: false,
                }
            }
            _ => Served {
                path: format!("/{ALIAS_DIR}/{i}"),
                file: Path::new(ALIAS_DIR).join(i.to_string()),
                aliased: true,
            },
        })
        .collect()
}

/// Writes every object's file (`size` bytes) under `root`.
fn write_files(root: &Path, page: &Page, served: &[Served]) -> Result<(), String> {
    for (object, s) in page.objects.iter().zip(served) {
        let file = root.join(&s.file);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        let f = std::fs::File::create(&file)
            .map_err(|e| format!("creating {}: {e}", file.display()))?;
        // A sparse file: the bytes' values do not matter to QUIC (no compression).
        f.set_len(object.size)
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
    }
    Ok(())
}

/// One log line: its timestamp (milliseconds of the UTC day) and its message.
fn log_line(line: &str) -> Option<(f64, &str)> {
    // `[2026-11-22T03:34:11.575Z DEBUG tquic_client] message`
    let rest = line.strip_prefix('[')?;
    let (head, message) = rest.split_once("] ")?;
    let stamp = head.split_whitespace().next()?;
    let time = stamp.split_once('T')?.1.strip_suffix('Z')?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(((h * 3600.0 + m * 60.0 + s) * 1000.0, message))
}

/// The quoted header `name: value` of a `[":status: 200", ...]` list in `text`.
fn header<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let needle = format!("\"{name}: ");
    let start = text.find(&needle)? + needle.len();
    let end = text[start..].find('"')?;
    Some(&text[start..start + end])
}

/// The number after `key` in `text` up to the next space.
fn word_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    rest.split_whitespace().next()
}

/// What the server's log says: the request path on each stream.
fn parse_server(log: &str) -> HashMap<u64, String> {
    let mut streams = HashMap::new();
    for line in log.lines() {
        let Some((_, message)) = log_line(line) else {
            continue;
        };
        if !message.contains(" got request [") {
            continue;
        }
        let stream = word_after(message, "] on stream id ").and_then(|s| s.parse().ok());
        if let (Some(stream), Some(path)) = (stream, header(message, ":path")) {
            streams.insert(stream, path.to_owned());
        }
    }
    streams
}

/// One response as the client's log shows it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Response {
    status: Option<u16>,
    content_length: Option<u64>,
    bytes: u64,
    /// The log time of its headers line.
    headers_ms: Option<f64>,
    /// The log time of its last line (headers or data).
    last_ms: Option<f64>,
}

/// What the client's log says.
#[derive(Debug, Clone, Default, PartialEq)]
struct ClientLog {
    /// The time of each request by its URL index.
    requested: BTreeMap<usize, f64>,
    /// Responses by stream id.
    responses: HashMap<u64, Response>,
}

fn parse_client(log: &str) -> ClientLog {
    let mut out = ClientLog::default();
    let mut day = 0.0;
    let mut previous: Option<f64> = None;
    for line in log.lines() {
        let Some((ms, message)) = log_line(line) else {
            continue;
        };
        // A load never spans a day; a time going back by hours is midnight.
        if previous.is_some_and(|p| ms + day < p - 3_600_000.0) {
            day += 86_400_000.0;
        }
        let ms = ms + day;
        previous = Some(ms);
        if message.contains(" send request ") {
            if let Some(index) = word_after(message, " current index ").and_then(|i| i.parse().ok())
            {
                out.requested.entry(index).or_insert(ms);
            }
        } else if message.contains(" got response headers [") {
            let Some(stream) = word_after(message, "] on stream id ").and_then(|s| s.parse().ok())
            else {
                continue;
            };
            let r = out.responses.entry(stream).or_default();
            r.status = header(message, ":status").and_then(|s| s.parse().ok());
            r.content_length = header(message, "content-length").and_then(|s| s.parse().ok());
            r.headers_ms = Some(ms);
            r.last_ms = Some(r.last_ms.map_or(ms, |l: f64| l.max(ms)));
        } else if message.contains(" bytes of response data on stream ") {
            let n = word_after(message, " got ").and_then(|n| n.parse::<u64>().ok());
            let stream = word_after(message, " on stream ").and_then(|s| s.parse().ok());
            if let (Some(n), Some(stream)) = (n, stream) {
                let r = out.responses.entry(stream).or_default();
                r.bytes += n;
                r.last_ms = Some(r.last_ms.map_or(ms, |l: f64| l.max(ms)));
            }
        }
    }
    out
}

/// `tquic_client`'s own statistics on stdout, in milliseconds: `finished in` (a Rust
/// `Duration` debug, e.g. `14.38ms` or `1.2s`) and the request times' max and mean (µs).
#[derive(Debug, Clone, Copy, PartialEq)]
struct ClientStats {
    finished_ms: f64,
    request_max_ms: f64,
    request_mean_ms: f64,
}

fn duration_ms(text: &str) -> Option<f64> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim_end_matches(',') {
        "ns" => 1e-6,
        "µs" | "us" => 1e-3,
        "ms" => 1.0,
        "s" => 1000.0,
        _ => return None,
    };
    Some(number * scale)
}

fn number(text: &str, key: &str) -> Option<f64> {
    word_after(text, key)?.trim_end_matches(',').parse().ok()
}

fn parse_stats(out: &str) -> Option<ClientStats> {
    let finished = word_after(out, "finished in ")?.trim_end_matches(',');
    let times = &out[out.find("time for request")?..];
    Some(ClientStats {
        finished_ms: duration_ms(finished)?,
        request_max_ms: number(times, "max:")? / 1000.0,
        request_mean_ms: number(times, "mean:")? / 1000.0,
    })
}

/// Everything a report is made of.
struct Load<'a> {
    page: &'a Page,
    served: &'a [Served],
    args: &'a PageArgs,
    scenario: &'a str,
    paths: usize,
    client: ClientLog,
    server: HashMap<u64, String>,
    stats: ClientStats,
    per_path_bytes: BTreeMap<u64, u64>,
}

/// The report of a load, or what is wrong with it.
fn report(load: &Load) -> Result<Value, String> {
    let Load {
        page,
        served,
        args,
        scenario,
        paths,
        client,
        server,
        stats,
        per_path_bytes,
    } = load;
    let t0 = client
        .requested
        .values()
        .copied()
        .reduce(f64::min)
        .ok_or("the client's log shows no request")?;
    let by_path: HashMap<&str, u64> = server.iter().map(|(s, p)| (p.as_str(), *s)).collect();
    let planned: HashSet<&str> = served.iter().map(|s| s.path.as_str()).collect();
    if let Some(stray) = server.values().find(|p| !planned.contains(p.as_str())) {
        return Err(format!(
            "the server got a request for {stray:?}, which is no object's path (did the \
             client's URL parser change it?)"
        ));
    }
    let mut objects = Vec::with_capacity(page.objects.len());
    let mut problems = Vec::new();
    for (i, (object, s)) in page.objects.iter().zip(served.iter()).enumerate() {
        let response = by_path
            .get(s.path.as_str())
            .and_then(|stream| client.responses.get(stream));
        let Some(response) = response else {
            problems.push(format!("{} ({}): no response", object.key, s.path));
            continue;
        };
        let status = response.status.unwrap_or(0);
        if status != 200
            || response.bytes != object.size
            || response.content_length != Some(object.size)
        {
            problems.push(format!(
                "{} ({}): status {status}, {} body bytes, content-length {:?}, recorded size {}",
                object.key, s.path, response.bytes, response.content_length, object.size
            ));
        }
        let requested = client.requested.get(&i).copied().unwrap_or(t0);
        let completed = response.last_ms.unwrap_or(requested);
        objects.push(ObjectReport {
            url: object.url.clone(),
            key: object.key.clone(),
            size: object.size,
            bytes: response.bytes,
            status,
            critical: object.critical,
            urgency: object.priority.urgency().get(),
            requested_ms: requested - t0,
            completed_ms: completed - t0,
        });
    }
    if !problems.is_empty() {
        let n = problems.len();
        problems.truncate(5);
        return Err(format!(
            "{n} of {} objects did not arrive as recorded: {}",
            page.objects.len(),
            problems.join("; ")
        ));
    }
    let plt = objects.iter().map(|o| o.completed_ms).fold(0.0, f64::max);
    let frt = objects
        .iter()
        .filter(|o| o.critical)
        .map(|o| o.completed_ms)
        .reduce(f64::max)
        .unwrap_or(plt);
    if plt > stats.finished_ms + SLACK_MS || plt + SLACK_MS < stats.request_max_ms {
        return Err(format!(
            "the log's PLT {plt} ms disagrees with tquic_client's own statistics (longest \
             request {} ms, finished in {} ms)",
            stats.request_max_ms, stats.finished_ms
        ));
    }
    // Built as JSON rather than as a `LoadReport` value: the fields it has are these, and
    // `transport` (newer `LoadReport`s) reads as the transport.
    let bytes: u64 = objects.iter().map(|o| o.bytes).sum();
    let mut value = json!({
        "page": page.id,
        "transport": "tquic",
        "scheduler": format!("tquic {}", args.scheduler.name()),
        "scenario": scenario,
        "mode": "netns",
        "paths": paths,
        "frt_ms": frt,
        "plt_ms": plt,
        "bytes": bytes,
        "per_path_bytes": per_path_bytes,
        "objects": serde_json::to_value(&objects).map_err(|e| e.to_string())?,
    });
    if let Some(list) = value["objects"].as_array_mut() {
        for (o, s) in list.iter_mut().zip(served.iter()) {
            if s.aliased {
                o["path"] = json!(s.path);
            }
        }
    }
    let extra = json!({
        "peer": "tquic",
        "tquic_version": super::peer::TQUIC_VERSION,
        "cc": args.cc.name(),
        "multipath_algor": args.scheduler.name(),
        "request_order": "all objects as concurrent requests on one connection, the document first in order; no priority headers",
        "timing": "tquic_client DEBUG log, ms resolution, from the first request; object complete at its last response-data line",
        "per_path_bytes_are": "UDP payload bytes forwarded on each path's emulated downlink",
        "aliased": served.iter().filter(|s| s.aliased).count(),
        "tquic": {
            "finished_ms": stats.finished_ms,
            "request_max_ms": stats.request_max_ms,
            "request_mean_ms": stats.request_mean_ms,
        },
    });
    if let (Some(map), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            map.insert(k.clone(), v.clone());
        }
    }
    Ok(value)
}

/// Polls `file` until it contains `needle`.
fn wait_in_file(file: &Path, needle: &str, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.contains(needle) {
            return Ok(());
        }
        if stop_signal().is_some() {
            return Err("stopped by a signal".to_owned());
        }
        if Instant::now() >= deadline {
            let tail: Vec<&str> = text.lines().rev().take(4).collect();
            return Err(format!(
                "tquic_server did not say it listens within {within:?}: {}",
                tail.join(" | ")
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One load of `page` on `bed`; the report's JSON line.
fn load(
    bed: &Bed,
    page: &Page,
    args: &PageArgs,
    server_bin: &Path,
    client_bin: &Path,
) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let scenario = bed.scenario();
    let served = plan(page);
    let aliased = served.iter().filter(|s| s.aliased).count();
    if aliased > 0 {
        eprintln!("{aliased} objects requested under /{ALIAS_DIR}/{{index}} (see the docs)");
    }
    let root = bed.scratch().join("root");
    write_files(&root, page, &served)?;
    let (cert, key) = (
        bed.scratch().join("cert.crt"),
        bed.scratch().join("cert.key"),
    );
    write_pem_certificate(&cert, &key)?;
    let (server_log, client_log) = (
        bed.scratch().join("server.log"),
        bed.scratch().join("client.log"),
    );
    let (sched, cc) = (args.scheduler.name(), args.cc.name());
    let protocol = |command: &mut std::process::Command, log: &Path| {
        command.args(["--enable-multipath", "--multipath-algor", sched]);
        command.args(["--congestion-control-algor", cc, "--log-level", "DEBUG"]);
        command.arg("--log-file").arg(log);
    };
    let paths: Vec<usize> = (0..scenario.paths.len()).collect();
    let first = addrs(0).1;
    // Bound to the address the client connects to, as the bulk run does (bound to 0.0.0.0 the
    // further paths never validate).
    let mut server = bed.exec(Side::Server, server_bin);
    server.args(["--listen", &format!("{first}:{PORT}")]);
    server.arg("--cert").arg(&cert).arg("--key").arg(&key);
    server.arg("--root").arg(&root);
    protocol(&mut server, &server_log);
    let server = Proc::spawn(server, "tquic_server")?;
    let ready = deadline.saturating_duration_since(Instant::now());
    wait_in_file(&server_log, "listen on", ready.min(Duration::from_secs(15)))?;
    let n = page.objects.len().to_string();
    let locals: Vec<String> = paths.iter().map(|&k| addrs(k).0.to_string()).collect();
    let mut client = bed.exec(Side::Client, client_bin);
    client.args(["--connect-to", &format!("{first}:{PORT}")]);
    client.args(["--local-addresses", &locals.join(",")]);
    client.args(["-t", "1", "--max-concurrent-conns", "1"]);
    client.args(["--max-concurrent-requests", &n]);
    client.args(["--max-requests-per-conn", &n]);
    client.args(["--total-requests-per-thread", &n]);
    protocol(&mut client, &client_log);
    for s in &served {
        client.arg(format!("https://localhost:{PORT}{}", s.path));
    }
    let before = bed.stats();
    let remaining = deadline.saturating_duration_since(Instant::now());
    let outcome = Proc::spawn(client, "tquic_client")?.finish(remaining);
    let after = bed.stats();
    drop(server);
    if let Some(dir) = &args.logs {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        for log in [&server_log, &client_log] {
            if let Some(name) = log.file_name() {
                let _ = std::fs::copy(log, dir.join(name));
            }
        }
    }
    let (out, _) = outcome.map_err(|e| format!("{e} (limit {} s)", args.timeout))?;
    let stats = parse_stats(&out).ok_or_else(|| {
        format!(
            "tquic_client printed no statistics: {}",
            out.trim().lines().last().unwrap_or("")
        )
    })?;
    let read =
        |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()));
    let per_path_bytes = before
        .iter()
        .zip(&after)
        .enumerate()
        .map(|(k, (b, a))| {
            (
                k as u64,
                a.downlink.forwarded_bytes - b.downlink.forwarded_bytes,
            )
        })
        .collect();
    let value = report(&Load {
        page,
        served: &served,
        args,
        scenario: scenario.name,
        paths: paths.len(),
        client: parse_client(&read(&client_log)?),
        server: parse_server(&read(&server_log)?),
        stats,
        per_path_bytes,
    })?;
    serde_json::to_string(&value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpquic_replay::LoadReport;

    const PAGE: &str = r#"{"log": {"entries": [
      {"startedDateTime": "2024-01-01T00:00:00.000Z", "time": 50, "request": {"url": "https://a.test/"},
       "_resourceType": "document",
       "response": {"status": 200, "bodySize": 20000, "content": {"mimeType": "text/html"}}},
      {"startedDateTime": "2024-01-01T00:00:00.060Z", "request": {"url": "https://a.test/s.css"},
       "_initiator": "https://a.test/",
       "response": {"status": 200, "bodySize": 5000, "content": {"mimeType": "text/css"}}},
      {"startedDateTime": "2024-01-01T00:00:00.070Z", "request": {"url": "https://a.test/i.png?x='1'"},
       "_initiator": "https://a.test/",
       "response": {"status": 200, "bodySize": 0, "content": {"mimeType": "image/png"}}}
    ]}}"#;

    fn page() -> Page {
        har::parse(PAGE, "p").unwrap()
    }

    #[test]
    fn paths_follow_the_keys_unless_the_file_system_cannot() {
        let page = page();
        let served = plan(&page);
        // The document's key is a directory of the others': aliased.
        assert_eq!(page.objects[0].key, "/p/a.test/");
        assert_eq!(served[0].path, "/_tquic/0");
        assert!(served[0].aliased);
        assert_eq!(served[1].path, "/p/a.test/s.css");
        assert_eq!(served[1].file, Path::new("p/a.test/s.css"));
        assert_eq!(served[2].path, "/p/a.test/i.png?x=%271%27");
        assert_eq!(served[2].file, Path::new("p/a.test/i.png?x=%271%27"));
        assert!(!served[2].aliased);
        assert_eq!(request_path("/p/a/../b"), None);
        assert_eq!(request_path("/p/%2E/b"), None);
        assert_eq!(request_path("/p/a.b/c"), Some("/p/a.b/c".into()));
    }

    #[test]
    fn log_lines() {
        let (ms, message) =
            log_line("[2026-11-22T03:34:11.575Z DEBUG tquic_client] CLIENT-f5 done").unwrap();
        assert_eq!(ms, ((3.0 * 3600.0 + 34.0 * 60.0) + 11.575) * 1000.0);
        assert_eq!(message, "CLIENT-f5 done");
        assert!(log_line("finished in 14.38ms").is_none());

        let server = parse_server(
            "[2026-11-22T03:34:11.574Z DEBUG tquic_server] SERVER-c6 got request [\":method: GET\", \":scheme: https\", \":authority: localhost:4433\", \":path: /p/a.com/e?v=1~2\", \"user-agent: tquic\"] on stream id 4\n",
        );
        assert_eq!(server.get(&4).map(String::as_str), Some("/p/a.com/e?v=1~2"));

        let client = parse_client(
            "[2026-11-22T03:34:11.574Z DEBUG tquic_client] CLIENT-f5 send request https://localhost:4433/p/a.com/x.js current index 0\n\
             [2026-11-22T03:34:11.575Z DEBUG tquic_client] CLIENT-f5 send request https://localhost:4433/p/a.com/e?v=1~2 current index 1\n\
             [2026-11-22T03:34:11.580Z DEBUG tquic_client] CLIENT-f5 got response headers [\":status: 200\", \"server: tquic\", \"content-length: 30000\"] on stream id 0\n\
             [2026-11-22T03:34:11.581Z DEBUG tquic_client] CLIENT-f5 got 9322 bytes of response data on stream 0\n\
             [2026-11-22T03:34:11.582Z DEBUG tquic_client] CLIENT-f5 got response headers [\":status: 404\", \"server: tquic\", \"content-length: 10\"] on stream id 4\n\
             [2026-11-22T03:34:11.590Z DEBUG tquic_client] CLIENT-f5 got 20678 bytes of response data on stream 0\n\
             [2026-11-22T03:34:11.591Z DEBUG tquic_client] CLIENT-f5 done requests 0, total 2\n",
        );
        let t0 = log_line("[2026-11-22T03:34:11.574Z DEBUG x] y").unwrap().0;
        assert_eq!(client.requested.len(), 2);
        assert_eq!(client.requested[&0], t0);
        let zero = &client.responses[&0];
        assert_eq!(zero.status, Some(200));
        assert_eq!(zero.content_length, Some(30000));
        assert_eq!(zero.bytes, 30000);
        assert!((zero.last_ms.unwrap() - t0 - 16.0).abs() < 1e-6);
        let four = &client.responses[&4];
        assert_eq!((four.status, four.bytes), (Some(404), 0));
        assert!((four.last_ms.unwrap() - t0 - 8.0).abs() < 1e-6);
    }

    #[test]
    fn midnight_does_not_go_back_in_time() {
        let client = parse_client(
            "[2026-11-22T23:59:59.999Z DEBUG tquic_client] C send request https://h/a current index 0\n\
             [2026-11-23T00:00:00.004Z DEBUG tquic_client] C got 5 bytes of response data on stream 0\n",
        );
        let r = &client.responses[&0];
        assert!((r.last_ms.unwrap() - client.requested[&0] - 5.0).abs() < 1e-6);
    }

    #[test]
    fn client_statistics() {
        let out = "\nfinished in 1.204380015s, 214.29 req/s\nconns: total 1, finish 1, success 1, failure 0\n\
                   requests: sent 3, finish 3, success 3\ntime for request(µs):\n\
                   \tmin: 1476.00, max: 1180506.00, mean: 1488.00, sd: 15.87\n";
        let stats = parse_stats(out).unwrap();
        assert!((stats.finished_ms - 1204.380015).abs() < 1e-6);
        assert!((stats.request_max_ms - 1180.506).abs() < 1e-9);
        assert!((stats.request_mean_ms - 1.488).abs() < 1e-9);
        assert_eq!(duration_ms("14.38ms"), Some(14.38));
        assert_eq!(duration_ms("900µs"), Some(0.9));
    }

    #[test]
    fn a_report_is_a_load_report_and_checks_sizes() {
        let page = page();
        let served = plan(&page);
        let args = PageArgs {
            scenario: "pb-low".into(),
            har: PathBuf::from("p.har"),
            scheduler: Scheduler::Minrtt,
            cc: Cc::Bbr,
            timeout: 60,
            logs: None,
            loss_seed: 0,
        };
        let at = |ms: f64| Some(1000.0 + ms);
        let response = |size: u64, ms: f64| Response {
            status: Some(200),
            content_length: Some(size),
            bytes: size,
            headers_ms: at(ms - 1.0),
            last_ms: at(ms),
        };
        let mut load = Load {
            page: &page,
            served: &served,
            args: &args,
            scenario: "pb-low",
            paths: 2,
            client: ClientLog {
                requested: (0..3).map(|i| (i, 1000.0)).collect(),
                responses: [
                    (0, response(20000, 80.0)),
                    (4, response(5000, 40.0)),
                    (8, response(0, 90.0)),
                ]
                .into_iter()
                .collect(),
            },
            server: served
                .iter()
                .enumerate()
                .map(|(i, s)| (4 * i as u64, s.path.clone()))
                .collect(),
            stats: ClientStats {
                finished_ms: 150.0,
                request_max_ms: 89.5,
                request_mean_ms: 70.0,
            },
            per_path_bytes: [(0, 10_000), (1, 17_000)].into_iter().collect(),
        };
        let value = report(&load).unwrap();
        let parsed: LoadReport = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(parsed.scheduler, "tquic minrtt");
        assert_eq!(value["cc"], "bbr");
        assert_eq!(value["objects"][0]["path"], "/_tquic/0");
        assert_eq!((parsed.frt_ms, parsed.plt_ms), (80.0, 90.0));
        assert_eq!(parsed.bytes, 25_000);
        assert_eq!(parsed.objects[1].key, "/p/a.test/s.css");
        // A short body is an error.
        if let Some(r) = load.client.responses.get_mut(&4) {
            r.bytes = 4000;
        }
        let error = report(&load).unwrap_err();
        assert!(error.contains("4000 body bytes"), "{error}");
        // A PLT beyond the client's own wall time is an error.
        if let Some(r) = load.client.responses.get_mut(&4) {
            r.bytes = 5000;
        }
        load.stats.finished_ms = 50.0;
        assert!(report(&load).unwrap_err().contains("disagrees"));
    }
}
