//! Loads a recorded page the way a browser would, over HTTP/3 over mpquic on emulated paths,
//! and prints one JSON object with its first rendering time and page load time.
//!
//! ```text
//! cargo run --release -p mpquic-lab --bin page_client -- --page youtube.com-2013 --scenario pb-high
//! cargo run --release -p mpquic-lab --bin page_client -- --page youtube.com-2013 --scenario pb-high --transport quinn
//! ```
//!
//! `--transport quinn` is the baseline: plain quinn (HTTP/3 through h3-quinn, the same
//! requests and responses) over one of the scenario's paths, by default its better one
//! (highest rate, then lowest RTT, then lowest index), or `--path K`; no urgency reaches its
//! transport, as none can through h3-quinn. With mpquic, `--path K` is single-path mpquic on
//! the scenario's path K alone.
//!
//! By default everything runs in this process: a page server on 127.0.0.1, the scenario's
//! paths as link-emulator relays on loopback in front of it (`--mode loopback`, no root), and
//! the client, whose path k goes from 127.0.0.(k+1) through relay k. With `--remote ADDR` the
//! client loads from a running `page_server` instead (its certificate from `--cert`, its
//! `--transport` the same as here), still through the relays (the responses then follow the
//! server's `--scheduler`). `--mode netns` (root) runs the server and the client as processes
//! in the namespace testbed instead, path k from 10.(k+1).0.1 to 10.(k+1).0.2. The document is
//! requested first; every other object when its recorded initiator has completed, or at its
//! recorded start after the document's completion (times multiplied by `--time-scale`; 0
//! requests them all when the document arrives). Each request carries its RFC 9218 `priority`.
//!
//! The JSON (`--reps 1`): `page`, `transport` (`mpquic` or `quinn`), `scheduler` (`quinn` for
//! quinn), `scenario`, `mode`, `paths` (1 for quinn), `frt_ms`, `plt_ms`, `bytes`,
//! `per_path_bytes` (by the connection's path id; empty for quinn) and `objects` (each with `url`, `key`,
//! `size`, `bytes`, `status`, `critical`, `urgency`, `requested_ms`, `completed_ms`), and
//! `link_drops` (by scenario path index: datagrams the emulated links dropped at
//! their queue and by their random loss, in each direction). With
//! `--reps N` > 1: `reps`, `frt_ms` and `plt_ms` as `{mean, sd}`, and every load in `runs`.
//! The exit code is non-zero when a load fails (a timeout, a wrong size, a status other than
//! 200).
//!
//! `--browser` loads the page in headless Chromium instead (`mpquic-browser`), in this process
//! over the relays or, with `--mode netns`, in the client namespace, and prints one JSON line per
//! load: the browser's report (`paint` with its first paint, FCP, LCP, `DOMContentLoaded`,
//! `load` and request log, `proxy`, `per_path_bytes`, `link_drops`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mpquic_browser::{
    load_direct_in_browser, load_in_browser, page_server, BrowserLoad, BrowserOptions, Chromium,
    Site,
};
use mpquic_replay::{
    har, load_direct, load_page, load_remote, netns, Mode, PageServer, RepeatedReport,
    RequestOrder, RunConfig, Transport,
};
use rustls::pki_types::CertificateDer;

use crate::page_server::{serve, EndFlags, Serving};
use crate::transfer::BoxError;

/// The command line of `page_client`.
#[derive(Debug, Parser)]
#[command(about = "Loads a recorded page over HTTP/3 over mpquic on emulated paths")]
pub struct Args {
    /// A HAR file to load (overrides --page).
    #[arg(long)]
    har: Option<PathBuf>,
    /// A page of --pages by name (its file name without `.har`).
    #[arg(long, default_value = "youtube.com-2013")]
    page: String,
    /// The directory of recorded pages.
    #[arg(long, default_value = "pages")]
    pages: PathBuf,
    /// Transport: mpquic, or quinn (the baseline: plain quinn with h3-quinn over one path).
    #[arg(long, default_value = "mpquic")]
    transport: String,
    /// Scheduler: priority-bucket, priority-bucket-paper, lrf, sa-ecf, wrr, sec, round-robin
    /// (mpquic only).
    #[arg(long, default_value = "priority-bucket")]
    scheduler: String,
    /// Scenario preset: pb-low, pb-low-lossy, pb-high, pb-high-lossy, sec-low, sec-low-lossy,
    /// sec-high, sec-high-lossy, lte.
    #[arg(long, default_value = "pb-high")]
    scenario: String,
    /// Where the emulated links run: loopback (relays, no root) or netns (the namespace
    /// testbed, root).
    #[arg(long, default_value = "loopback")]
    mode: String,
    /// mpquic's paths: a number (the scenario's first ones; default all of them) or `auto`
    /// (MEH's model picks from the page size and the paths' configured RTT and rate).
    #[arg(long, conflicts_with = "path")]
    paths: Option<String>,
    /// One of the scenario's paths by index (from 0), alone: single-path mpquic on it, or
    /// quinn's path (quinn's default: the scenario's better path).
    #[arg(long)]
    path: Option<usize>,
    #[command(flatten)]
    flags: EndFlags,
    /// Loads to make.
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// Factor on recorded start times (1: as recorded; 0: all when the document arrives).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Request every object at once, the document first, instead of each when what leads to
    /// it has arrived: the load tquic's page row makes. Not with --browser, which requests
    /// what its parser finds.
    #[arg(long, conflicts_with = "browser")]
    all_at_once: bool,
    /// Seconds one load may take.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Which random losses the emulated links draw: loads with the same seed see the same
    /// loss sequence, loads with different seeds independent ones (`--reps` loads on one
    /// testbed draw on from where the last left off).
    #[arg(long, default_value_t = 0)]
    loss_seed: u64,
    /// A running page_server's address, instead of a server in this process.
    #[arg(long)]
    remote: Option<SocketAddr>,
    /// The remote server's certificate (DER), as page_server wrote it.
    #[arg(long, default_value = "/tmp/mpquic-page-cert.der")]
    cert: PathBuf,
    /// Netns mode's server role (set by `--mode netns` itself): serve the page on these
    /// comma-separated addresses in the server namespace.
    #[arg(long, value_delimiter = ',', hide = true)]
    serve: Vec<SocketAddr>,
    /// Netns mode's client role (set by `--mode netns` itself): load from these
    /// comma-separated server addresses, path k from `--local`'s address k, no relays.
    #[arg(long, value_delimiter = ',', hide = true)]
    direct: Vec<SocketAddr>,
    /// Local addresses for `--direct`, one per path.
    #[arg(long, value_delimiter = ',', hide = true)]
    local: Vec<SocketAddr>,
    /// Load the page in headless Chromium instead (`mpquic-browser`: the page rebuilt as real
    /// files, the browser through a proxy), and print the browser's report; with `--mode
    /// netns` the browser runs in the client namespace.
    #[arg(long, conflicts_with = "remote")]
    browser: bool,
}

async fn run(args: Args) -> Result<(), BoxError> {
    let file = args
        .har
        .clone()
        .unwrap_or_else(|| args.pages.join(format!("{}.har", args.page)));
    let page = har::load(&file)?;
    let mut config = RunConfig::new(&args.scheduler, &args.scenario)?;
    config.mode = args.mode.parse::<Mode>()?;
    config.transport = args.transport.parse::<Transport>()?;
    config.path = args.path;
    config.congestion = args.flags.cc.parse()?;
    config.delivery_reports = !args.flags.no_delivery_reports;
    config.reinjection = !args.flags.no_reinjection;
    config.dependency_hints = !args.flags.no_dependency_hints;
    config.loss_seed = args.loss_seed;
    if config.transport == Transport::Quinn && args.paths.is_some() {
        return Err("--paths is for mpquic; quinn uses one path (choose it with --path)".into());
    }
    config.paths = match args.paths.as_deref() {
        None => config.paths,
        Some("auto") => {
            let plan = mpquic_replay::auto_paths(config.scenario, page.total_bytes())?;
            eprintln!(
                "page_client: MEH picks {} connection(s) for {} bytes: {} path(s)",
                plan.connections,
                page.total_bytes(),
                plan.paths
            );
            plan.paths
        }
        Some(n) => n.parse().map_err(|e| format!("--paths {n:?}: {e}"))?,
    };
    let indices = config.path_indices()?;
    config.load.time_scale = args.time_scale;
    config.load.request_order = RequestOrder::from_flag(args.all_at_once);
    config.load.timeout = Duration::try_from_secs_f64(args.timeout)
        .map_err(|e| format!("--timeout {}: {e}", args.timeout))?;
    if args.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    if !args.serve.is_empty() {
        // Netns mode's server role: until killed.
        let serving = Serving {
            listen: &args.serve,
            transport: config.transport,
            scheduler: &args.scheduler,
            flags: &args.flags,
            cert: &args.cert,
            sessions: None,
        };
        let server = if args.browser {
            page_server(&Site::build(&page), &config)?
        } else {
            PageServer::new(std::slice::from_ref(&page))?.dependency_hints(config.dependency_hints)
        };
        return serve(server, &serving, |_| {}).await;
    }
    if !args.direct.is_empty() {
        let cert = CertificateDer::from(
            std::fs::read(&args.cert)
                .map_err(|e| format!("cannot read {}: {e}", args.cert.display()))?,
        );
        config.mode = Mode::Netns;
        let json = if args.browser {
            let site = Arc::new(Site::build(&page));
            let options = browser_options(&config);
            let remotes = (&args.local[..], &args.direct[..]);
            let load =
                load_direct_in_browser(&site, &config, remotes, cert, &Chromium::find()?, &options)
                    .await?;
            serde_json::to_string(&load)?
        } else {
            let report = load_direct(&page, &config, &args.local, &args.direct, cert).await?;
            serde_json::to_string(&report)?
        };
        let _ = writeln!(std::io::stdout().lock(), "{json}");
        return Ok(());
    }
    if let (Transport::Quinn, Some(path)) = (config.transport, indices.first()) {
        eprintln!(
            "page_client: quinn over {}'s path {path}",
            config.scenario.name
        );
    }
    if config.mode == Mode::Netns {
        let exe = std::env::current_exe()?;
        let file = file.canonicalize()?;
        let mut common = vec![
            "--har".to_owned(),
            file.display().to_string(),
            "--transport".to_owned(),
            config.transport.name().to_owned(),
            "--scheduler".to_owned(),
            args.scheduler.clone(),
            "--scenario".to_owned(),
            args.scenario.clone(),
        ];
        common.extend(args.flags.args());
        if args.browser {
            common.push("--browser".to_owned());
        }
        match (config.path, config.transport) {
            (Some(k), _) => common.extend(["--path".to_owned(), k.to_string()]),
            (None, Transport::Quinn) => {}
            (None, Transport::Mpquic) => {
                common.extend(["--paths".to_owned(), config.paths.to_string()]);
            }
        }
        let mut client = common.clone();
        client.extend([
            "--time-scale".to_owned(),
            args.time_scale.to_string(),
            "--timeout".to_owned(),
            args.timeout.to_string(),
        ]);
        if args.all_at_once {
            client.push("--all-at-once".to_owned());
        }
        // Blocking: the testbed and the child processes are driven from this thread.
        if args.browser {
            let loads = tokio::task::block_in_place(|| {
                netns::load_netns_as::<BrowserLoad>(&exe, &config, &common, &client, args.reps)
            })?;
            for (mut load, drops) in loads {
                load.link_drops = drops;
                let _ = writeln!(
                    std::io::stdout().lock(),
                    "{}",
                    serde_json::to_string(&load)?
                );
            }
            return Ok(());
        }
        let runs = tokio::task::block_in_place(|| {
            netns::load_netns(&exe, &config, &common, &client, args.reps)
        })?;
        return print_runs(runs);
    }
    if args.browser {
        let site = Arc::new(Site::build(&page));
        let (chromium, options) = (Chromium::find()?, browser_options(&config));
        for _ in 0..args.reps {
            let load = load_in_browser(&site, &config, &chromium, &options).await?;
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                serde_json::to_string(&load)?
            );
        }
        return Ok(());
    }
    let cert = match args.remote {
        Some(_) => Some(CertificateDer::from(
            std::fs::read(&args.cert)
                .map_err(|e| format!("cannot read {}: {e}", args.cert.display()))?,
        )),
        None => None,
    };
    let mut runs = Vec::with_capacity(args.reps);
    for _ in 0..args.reps {
        let report = match (args.remote, &cert) {
            (Some(server), Some(cert)) => load_remote(&page, &config, server, cert.clone()).await?,
            _ => load_page(&page, &config).await?,
        };
        runs.push(report);
    }
    print_runs(runs)
}

/// The browser's options for `config`: its load timeout.
fn browser_options(config: &RunConfig) -> BrowserOptions {
    BrowserOptions {
        timeout: config.load.timeout,
        ..BrowserOptions::default()
    }
}

/// Prints one load's JSON, or the repeated report of several.
fn print_runs(runs: Vec<mpquic_replay::LoadReport>) -> Result<(), BoxError> {
    let json = if runs.len() == 1 {
        serde_json::to_string(&runs[0])?
    } else {
        serde_json::to_string(&RepeatedReport::new(runs).ok_or("no loads")?)?
    };
    // A closed pipe (`| head`) is not worth a panic.
    let _ = writeln!(std::io::stdout().lock(), "{json}");
    Ok(())
}

impl Args {
    /// Whether this process is one end of a namespace load (`--serve` or `--direct`, not a
    /// browser's): then it runs on one thread, as a browser's network stack and an
    /// event-loop server do. On a runtime of several threads, the page's requests and answers
    /// were tasks that the runtime reordered (a task just spawned runs before the ones
    /// spawned before it) and ran beside the path senders: the first request of a burst
    /// sometimes left last, 4-7 ms late, and an answer sometimes started 9 ms after its
    /// request arrived, which decided whether lrf painted youtube-2013 in 44 ms or in 170
    /// (docs/results/2026-11-28-one-thread/). On one thread, what an instant brings is
    /// handled in order before the paths send, as in the simulation (`mpquic_replay::sim`).
    pub fn one_thread(&self) -> bool {
        (!self.serve.is_empty() || !self.direct.is_empty()) && !self.browser
    }
}

/// Runs `page_client` with `args`: the exit code is 1 when a load fails.
pub async fn main(args: Args) -> ExitCode {
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("page_client: {e}");
            ExitCode::FAILURE
        }
    }
}
