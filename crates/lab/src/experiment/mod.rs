//! `cargo xtask experiment`: the page-load matrix (issue 6) with issue 7's FLD and MEH rows.
//!
//! Every (scenario, page, rep) loads the page once with every selected scheduler, the
//! schedulers taking turns so that drift in the machine's load spreads over all of them, plus
//! the baseline and extra rows: single-path mpquic on each of the scenario's paths alone,
//! plain quinn (HTTP/3 with h3-quinn) on the better path, tquic's own multipath client and
//! server (netns only; every object requested at once, see `cargo xtask peers page`), and in
//! `lte` and `pb-high` priority-bucket and lrf with `--cc fld`, with `--paths auto` (MEH) and
//! with `--no-delivery-reports` (mpquic's own ablation, `Config::delivery_reports`).
//! Each load is one run of the `page_client` example (`--mode netns` when root and the testbed
//! is available, else `--mode loopback`) or of `lab peers page`, bounded by a timeout; each
//! run appends one JSON line to `raw.jsonl` under the output directory (default
//! `target/experiment/`), and a run that is already there (same scenario, page, scheduler, cc,
//! paths, delivery reports, rep, mode and time scale) is skipped, so a killed experiment continues where it
//! stopped. At the end (also when every run was already done) it writes `summary.md`, `loads.csv`,
//! `report.md` and SVG charts from every matching record, with the simulator's oracle bound
//! per scenario and page.

mod blocks;
mod browser;
pub(crate) mod pages;
pub(crate) mod plot;
mod raw;
pub(crate) mod report;

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use mpquic_browser::{BrowserLoad, Chromium, Site};
use mpquic_replay::{LoadReport, RequestOrder};
use mpquic_scenario::Scenario;
use mpquic_sched::SchedulerKind;

use crate::{bins, Failure};
pub use raw::Record;
use raw::{Client, PaintRecord};

/// The issue's eight presets, plus `lte` (LTE and 3G paths) for issue 7's rows.
pub const DEFAULT_SCENARIOS: &[&str] = &[
    "pb-low",
    "pb-low-lossy",
    "pb-high",
    "pb-high-lossy",
    "sec-low",
    "sec-low-lossy",
    "sec-high",
    "sec-high-lossy",
    "lte",
];
/// The quick run's scenarios.
pub const QUICK_SCENARIOS: &[&str] = &["pb-high", "pb-low"];
/// Where the FLD and MEH rows are measured (issue 7: lte, 3g and pb-high; the `lte` preset's
/// two paths are \[FLD\]'s LTE and 3G links, there is no separate 3G preset).
pub const EXTRA_SCENARIOS: &[&str] = &["lte", "pb-high"];
/// The schedulers the FLD and MEH rows run with (those of them that are selected).
pub const EXTRA_SCHEDULERS: &[SchedulerKind] = &[SchedulerKind::PriorityBucket, SchedulerKind::Lrf];
/// The papers' repetitions.
pub const DEFAULT_REPS: usize = 10;
/// The quick run's repetitions.
pub const QUICK_REPS: usize = 2;
/// Time a run may take beyond the load's own timeout (building the testbed, starting up).
const SETUP_SLACK: Duration = Duration::from_secs(60);

/// The options of `cargo xtask experiment`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// 2 reps, pb-high and pb-low, bing-2013 and youtube-2013, all schedulers (each can still
    /// be overridden by the options below).
    #[arg(long)]
    quick: bool,
    /// Scenario presets, comma-separated (default: the eight pb-* and sec-* presets and lte).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    scenarios: Vec<String>,
    /// Schedulers, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    schedulers: Vec<String>,
    /// Pages: bing-2013, youtube-2013, bing.com-2024, google.com-2021, wikipedia.org, any name
    /// of pages/NAME.har, or the path of a HAR file or of a directory of them.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pages: Vec<String>,
    /// Loads per (scenario, page, row) (default 10; --quick 2).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    reps: Option<u32>,
    /// netns (root, the namespace testbed) or loopback (relays on 127.0.0.x, no root);
    /// default: netns when it is available.
    #[arg(long)]
    mode: Option<String>,
    /// page_client's --time-scale: 0 requests every sub-resource when its initiator (or the
    /// document) has arrived, as the papers do; 1 keeps the recorded gaps.
    #[arg(long, default_value_t = 0.0)]
    time_scale: f64,
    /// The replay rows request every object of a page at once, the document first, as
    /// tquic's row does (page_client's --all-at-once): the transports compared on the same
    /// load, without the page's round trips of discovery. Not with --browser, which requests
    /// what its parser finds.
    #[arg(long, conflicts_with = "browser")]
    all_at_once: bool,
    /// Seconds one page load may take (the run gets another minute for its setup).
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Only the schedulers' rows: no single-path, FLD or MEH rows.
    #[arg(long)]
    no_extras: bool,
    /// Every scheduler also without re-injection (`--no-reinjection` of page_client).
    #[arg(long)]
    reinjection_ablation: bool,
    /// Every scheduler, and plain quinn, also in headless Chromium (`page_client --browser`,
    /// Debian's `chromium`): the browser's FCP and `load` as FRT and PLT, its LCP, and a
    /// section setting them beside the replay client's rows. Plain quinn's replay row is then
    /// in the matrix too, with `--no-extras` or without.
    #[arg(long)]
    browser: bool,
    /// The congestion controller of the scheduler and single-path rows (a name that
    /// `mpquic::CongestionControl` parses).
    #[arg(long, default_value = MAIN_CC)]
    cc: String,
    /// Output directory (default: target/experiment).
    #[arg(long)]
    out: Option<PathBuf>,
    /// How page_client is built: release (as measurements should be), or dev, the one next
    /// to this binary, built already (for quick checks: the tests).
    #[arg(long, value_enum, default_value = "release")]
    profile: bins::Profile,
    /// Run nothing: write the summary, report and charts from what raw.jsonl already holds
    /// for this matrix (cells may then have fewer loads than --reps).
    #[arg(long)]
    report_only: bool,
}

/// One row of a table: a scheduler with a congestion controller and a path count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// Scheduler name.
    pub scheduler: String,
    /// Congestion controller.
    pub cc: String,
    /// `all`, `1` or `auto`.
    pub paths: String,
    /// What the row is for.
    pub kind: VariantKind,
    /// What loads the page.
    pub client: Client,
}

/// What a row is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantKind {
    /// A scheduler over every path with cubic.
    Main,
    /// One of the scenario's paths alone (its index), single-path mpquic.
    SinglePath(usize),
    /// Plain quinn (HTTP/3 with h3-quinn) over the scenario's better path.
    Quinn,
    /// tquic's own multipath client and server, every object requested at once.
    Tquic,
    /// FLD instead of cubic.
    Fld,
    /// MEH's path count.
    Meh,
    /// Without mpquic's delivery reports (`Config::delivery_reports`).
    NoDeliveryReports,
    /// Without mpquic's re-injection (`Config::reinjection`), as mp-quic's schedulers ran.
    NoReinjection,
}

/// The congestion controller of the scheduler rows unless `--cc` says otherwise: the library's
/// default.
pub const MAIN_CC: &str = mpquic_core::CongestionControl::DEFAULT_NAME;

impl Variant {
    fn main(kind: SchedulerKind, cc: &str) -> Self {
        Self {
            scheduler: kind.name().to_owned(),
            cc: cc.to_owned(),
            paths: "all".to_owned(),
            kind: VariantKind::Main,
            client: Client::Replay,
        }
    }

    /// Plain quinn over the scenario's better path.
    fn quinn() -> Self {
        Self {
            scheduler: "quinn".to_owned(),
            cc: "cubic".to_owned(),
            paths: "better".to_owned(),
            kind: VariantKind::Quinn,
            client: Client::Replay,
        }
    }

    /// A scheduler's row in the replay client, the rows the papers' comparisons are made of.
    pub fn is_main_replay(&self) -> bool {
        self.kind == VariantKind::Main && self.client == Client::Replay
    }

    /// The row's label in the tables.
    pub fn label(&self) -> String {
        match self.client {
            Client::Replay => self.replay_label(),
            Client::Chromium => format!("{} in Chromium", self.replay_label()),
        }
    }

    fn replay_label(&self) -> String {
        match self.kind {
            VariantKind::Main if self.cc == MAIN_CC => self.scheduler.clone(),
            VariantKind::Main => format!("{} + {}", self.scheduler, self.cc),
            VariantKind::SinglePath(k) if self.cc == MAIN_CC => {
                format!("path {k} alone ({})", self.scheduler)
            }
            VariantKind::SinglePath(k) => {
                format!("path {k} alone ({} + {})", self.scheduler, self.cc)
            }
            VariantKind::Quinn => "quinn (h3-quinn), better path".to_owned(),
            VariantKind::Tquic => format!("{} + {} (all at once)", self.scheduler, self.cc),
            VariantKind::Fld => format!("{} + fld", self.scheduler),
            VariantKind::Meh => format!("{}, paths auto (MEH)", self.scheduler),
            VariantKind::NoDeliveryReports => format!("{}, no delivery reports", self.scheduler),
            VariantKind::NoReinjection => format!("{}, no re-injection", self.scheduler),
        }
    }

    /// Whether the row runs with mpquic's re-injection.
    fn reinjection(&self) -> bool {
        self.kind != VariantKind::NoReinjection
    }

    /// Whether the row runs with mpquic's delivery reports.
    fn delivery_reports(&self) -> bool {
        self.kind != VariantKind::NoDeliveryReports
    }

    fn matches(&self, r: &raw::RunId) -> bool {
        r.scheduler == self.scheduler
            && r.cc == self.cc
            && r.paths == self.paths
            && r.delivery_reports == self.delivery_reports()
            && r.reinjection == self.reinjection()
            && r.client == self.client
    }
}

/// tquic's page-level rows: its default (minrtt with BBR) and the best of the bulk run
/// (minrtt with cubic).
pub const TQUIC_VARIANTS: &[(&str, &str)] = &[("minrtt", "bbr"), ("minrtt", "cubic")];

/// The rows of one scenario (`netns`: the tquic rows need the namespace testbed).
pub fn variants(
    scenario: &Scenario,
    schedulers: &[SchedulerKind],
    extras: bool,
    netns: bool,
    cc: &str,
) -> Vec<Variant> {
    let main = |kind| Variant::main(kind, cc);
    let mut rows: Vec<Variant> = schedulers.iter().copied().map(main).collect();
    if !extras {
        return rows;
    }
    // Each path alone: every scheduler sends everything on it; lrf (mp-quic's default) if
    // selected.
    if let Some(&single) = schedulers
        .iter()
        .find(|k| **k == SchedulerKind::Lrf)
        .or_else(|| schedulers.first())
    {
        for k in 0..scenario.paths.len() {
            rows.push(Variant {
                paths: format!("path{k}"),
                kind: VariantKind::SinglePath(k),
                ..main(single)
            });
        }
    }
    rows.push(Variant::quinn());
    if netns {
        for (scheduler, cc) in TQUIC_VARIANTS {
            rows.push(Variant {
                scheduler: format!("tquic {scheduler}"),
                cc: (*cc).to_owned(),
                paths: "all".to_owned(),
                kind: VariantKind::Tquic,
                client: Client::Replay,
            });
        }
    }
    let scenario = scenario.name;
    if EXTRA_SCENARIOS.contains(&scenario) {
        let extra: Vec<SchedulerKind> = EXTRA_SCHEDULERS
            .iter()
            .copied()
            .filter(|k| schedulers.contains(k))
            .collect();
        for &k in &extra {
            rows.push(Variant {
                cc: "fld".to_owned(),
                kind: VariantKind::Fld,
                ..main(k)
            });
        }
        for &k in &extra {
            rows.push(Variant {
                paths: "auto".to_owned(),
                kind: VariantKind::Meh,
                ..main(k)
            });
        }
        for &k in &extra {
            rows.push(Variant {
                kind: VariantKind::NoDeliveryReports,
                ..main(k)
            });
        }
    }
    rows
}

/// The resolved matrix.
pub struct Plan {
    /// Scenarios in order.
    pub scenarios: Vec<&'static Scenario>,
    /// Pages in order.
    pub pages: Vec<pages::PageRef>,
    /// Schedulers in order.
    pub schedulers: Vec<SchedulerKind>,
    /// Repetitions.
    pub reps: usize,
    /// `netns` or `loopback`.
    pub mode: String,
    /// Why this mode (for the report).
    pub mode_note: String,
    /// page_client's time scale.
    pub time_scale: f64,
    /// When page_client requests the objects.
    pub request_order: RequestOrder,
    /// Seconds per load.
    pub timeout: f64,
    /// Whether the extra rows run.
    pub extras: bool,
    /// Whether every scheduler also runs without re-injection.
    pub reinjection_ablation: bool,
    /// Whether every scheduler and plain quinn also load in Chromium.
    pub browser: bool,
    /// The congestion controller of the scheduler rows.
    pub cc: String,
    /// Time a run may take beyond `timeout` before it is killed.
    pub setup_slack: Duration,
    /// Output directory.
    pub out: PathBuf,
    /// The command line, for the report.
    pub command: String,
}

impl Plan {
    /// The rows of `scenario`.
    pub fn variants(&self, scenario: &str) -> Vec<Variant> {
        let Some(s) = self.scenarios.iter().find(|s| s.name == scenario) else {
            return Vec::new();
        };
        let mut rows = variants(
            s,
            &self.schedulers,
            self.extras,
            self.mode == "netns",
            &self.cc,
        );
        if self.reinjection_ablation {
            rows.extend(self.schedulers.iter().map(|&k| Variant {
                kind: VariantKind::NoReinjection,
                ..Variant::main(k, &self.cc)
            }));
        }
        if self.browser {
            if !rows.iter().any(|v| v.kind == VariantKind::Quinn) {
                rows.push(Variant::quinn());
            }
            let in_chromium: Vec<Variant> = rows
                .iter()
                .filter(|v| matches!(v.kind, VariantKind::Main | VariantKind::Quinn))
                .map(|v| Variant {
                    client: Client::Chromium,
                    ..v.clone()
                })
                .collect();
            rows.extend(in_chromium);
        }
        rows
    }

    /// Whether `r` belongs to this matrix (same mode and time scale, a selected cell).
    pub fn selects(&self, r: &Record) -> bool {
        let r = &r.id;
        r.mode == self.mode
            && r.time_scale.to_bits() == self.time_scale.to_bits()
            && r.request_order == self.request_order
            && r.rep < self.reps
            && self.pages.iter().any(|p| p.label == r.page)
            && self.scenarios.iter().any(|s| s.name == r.scenario)
            && self.variants(&r.scenario).iter().any(|v| v.matches(r))
    }
}

/// One run to make.
struct Job<'a> {
    scenario: &'static Scenario,
    page: &'a pages::PageRef,
    /// The page as the browser loads it, for a Chromium row: its request log is checked
    /// against it.
    site: Option<&'a Site>,
    variant: Variant,
    rep: usize,
}

impl Job<'_> {
    /// The links' loss seed: one per repetition, the same for every variant, so that the
    /// loads of a cell are independent draws of the scenario's random loss and the variants
    /// are compared on the same draws.
    fn loss_seed(&self) -> u64 {
        self.rep as u64
    }

    fn id(&self, plan: &Plan) -> raw::RunId {
        raw::RunId {
            scenario: self.scenario.name.to_owned(),
            page: self.page.label.clone(),
            scheduler: self.variant.scheduler.clone(),
            cc: self.variant.cc.clone(),
            paths: self.variant.paths.clone(),
            rep: self.rep,
            mode: plan.mode.clone(),
            time_scale: plan.time_scale,
            request_order: plan.request_order,
            delivery_reports: self.variant.delivery_reports(),
            reinjection: self.variant.reinjection(),
            client: self.variant.client,
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} {} {} rep {}",
            self.scenario.name,
            self.page.label,
            self.variant.label(),
            self.rep + 1
        )
    }
}

/// The command line as a user would type it.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("cargo xtask {}", args.join(" "))
}

fn plan(args: &ExperimentArgs) -> Result<Plan, Failure> {
    let root = crate::workspace_root();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| crate::target_dir().join("experiment"));
    let scenario_names: Vec<String> = if !args.scenarios.is_empty() {
        args.scenarios.clone()
    } else if args.quick {
        QUICK_SCENARIOS.iter().map(|s| (*s).to_owned()).collect()
    } else {
        DEFAULT_SCENARIOS.iter().map(|s| (*s).to_owned()).collect()
    };
    let mut scenarios: Vec<&'static Scenario> = Vec::new();
    for name in &scenario_names {
        let s = Scenario::by_name(name).map_err(|e| Failure::Usage(e.to_string()))?;
        if !scenarios.iter().any(|x| x.name == s.name) {
            scenarios.push(s);
        }
    }
    let schedulers = parse_schedulers(&args.schedulers)?;
    if scenarios.is_empty() || schedulers.is_empty() {
        return Err(Failure::Usage(
            "no scenarios or no schedulers selected".to_owned(),
        ));
    }
    let page_specs: Vec<String> = if !args.pages.is_empty() {
        args.pages.clone()
    } else if args.quick {
        pages::QUICK.iter().map(|s| (*s).to_owned()).collect()
    } else {
        pages::DEFAULT.iter().map(|s| (*s).to_owned()).collect()
    };
    let reps = args
        .reps
        .map_or(if args.quick { QUICK_REPS } else { DEFAULT_REPS }, |r| {
            r as usize
        });
    let unavailable = mpquic_netns::topology::unavailable();
    let (mode, mode_note) = match args.mode.as_deref() {
        Some("netns") => match unavailable {
            None => ("netns", "netns (asked for)".to_owned()),
            Some(reason) => {
                return Err(Failure::Usage(format!(
                    "--mode netns: the testbed is unavailable: {reason}"
                )))
            }
        },
        Some("loopback") => ("loopback", "loopback (asked for)".to_owned()),
        Some(other) => {
            return Err(Failure::Usage(format!(
                "--mode {other:?}: netns or loopback"
            )))
        }
        None => match unavailable {
            None => (
                "netns",
                "netns (the default: root and the namespace testbed are available)".to_owned(),
            ),
            Some(reason) => (
                "loopback",
                format!(
                    "loopback (the default here: the namespace testbed is unavailable: {reason})"
                ),
            ),
        },
    };
    if !(args.time_scale.is_finite() && args.time_scale >= 0.0) {
        return Err(Failure::Usage(format!(
            "--time-scale {}: must be a finite number >= 0",
            args.time_scale
        )));
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(Failure::Usage(format!(
            "--timeout {}: must be between 0 and 3600 seconds",
            args.timeout
        )));
    }
    // Last: resolving bing-2013 writes its HAR.
    let pages = pages::resolve(&page_specs, &root, &out.join("pages"))?;
    Ok(Plan {
        scenarios,
        pages,
        schedulers,
        reps,
        mode: mode.to_owned(),
        mode_note,
        time_scale: args.time_scale,
        request_order: RequestOrder::from_flag(args.all_at_once),
        timeout: args.timeout,
        extras: !args.no_extras,
        reinjection_ablation: args.reinjection_ablation,
        browser: args.browser,
        cc: args.cc.clone(),
        setup_slack: SETUP_SLACK,
        out,
        command: command_line(),
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Reads a pipe to its end on a thread.
fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

/// After killing a netns-mode page client: stop what it started in its namespaces (its page
/// server and client) and delete the namespaces it left (named after its pid).
fn clean_up_after(pid: u32) {
    let Ok(names) = mpquic_netns::topology::namespaces() else {
        return;
    };
    for ns in names
        .iter()
        .filter(|n| mpquic_netns::topology::namespace_owner(n) == Some(pid))
    {
        if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
            for p in String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
    let _ = mpquic_netns::topology::remove_stale_namespaces();
}

/// The programs a load runs: the page client, and this lab binary for `peers page` (tquic).
struct Programs {
    page_client: PathBuf,
    lab: PathBuf,
}

impl Programs {
    /// The command of one load.
    fn command(&self, plan: &Plan, job: &Job<'_>) -> Command {
        let v = &job.variant;
        if v.kind == VariantKind::Tquic {
            let mut cmd = Command::new(&self.lab);
            cmd.args(["peers", "page", "--scenario", job.scenario.name, "--har"])
                .arg(&job.page.har)
                .args([
                    "--scheduler",
                    v.scheduler.trim_start_matches("tquic "),
                    "--cc",
                    &v.cc,
                ])
                .args(["--timeout", &plan.timeout.to_string()])
                .args(["--loss-seed", &job.loss_seed().to_string()]);
            return cmd;
        }
        let mut cmd = Command::new(&self.page_client);
        cmd.arg("--mode")
            .arg(&plan.mode)
            .args(["--reps", "1", "--har"])
            .arg(&job.page.har)
            .args(["--scenario", job.scenario.name])
            .args(["--cc", &v.cc])
            .args(["--time-scale", &plan.time_scale.to_string()])
            .args(["--timeout", &plan.timeout.to_string()])
            .args(["--loss-seed", &job.loss_seed().to_string()]);
        match v.kind {
            VariantKind::Quinn => {
                cmd.args(["--transport", "quinn"]);
            }
            VariantKind::SinglePath(k) => {
                cmd.args(["--scheduler", &v.scheduler, "--path", &k.to_string()]);
            }
            _ => {
                cmd.args(["--scheduler", &v.scheduler]);
                if v.paths != "all" {
                    cmd.args(["--paths", &v.paths]);
                }
            }
        }
        if !v.delivery_reports() {
            cmd.arg("--no-delivery-reports");
        }
        if !v.reinjection() {
            cmd.arg("--no-reinjection");
        }
        if plan.request_order == RequestOrder::AllAtOnce {
            cmd.arg("--all-at-once");
        }
        if v.client == Client::Chromium {
            cmd.arg("--browser");
        }
        cmd
    }
}

/// Runs one load and returns its record.
fn run_job(programs: &Programs, root: &Path, plan: &Plan, job: &Job<'_>) -> Record {
    let started_unix = unix_now();
    let started = Instant::now();
    let mut record = Record {
        id: job.id(plan),
        started_unix,
        wall_s: 0.0,
        error: None,
        report: None,
        browser: None,
    };
    let mut cmd = programs.command(plan, job);
    let program = PathBuf::from(cmd.get_program());
    let name = program
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    cmd.current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            record.error = Some(format!("cannot start {}: {e}", program.display()));
            return record;
        }
    };
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let limit = Duration::from_secs_f64(plan.timeout) + plan.setup_slack;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                if plan.mode == "netns" {
                    clean_up_after(child.id());
                }
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                record.error = Some(format!("waiting for {name}: {e}"));
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    record.wall_s = started.elapsed().as_secs_f64();
    let Some(status) = status else {
        if record.error.is_none() {
            record.error = Some(format!(
                "timeout: killed after {:.0} s",
                limit.as_secs_f64()
            ));
        }
        return record;
    };
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    if !status.success() {
        let last = err.lines().last().unwrap_or_default().trim();
        record.error = Some(format!("{name} failed ({status}): {last}"));
        return record;
    }
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_default();
    let unreadable = |e: serde_json::Error| format!("unreadable {name} output: {e}");
    match (job.variant.client, job.site) {
        (Client::Replay, _) => match serde_json::from_str::<LoadReport>(line) {
            Ok(report) => record.report = Some(report),
            Err(e) => record.error = Some(unreadable(e)),
        },
        (Client::Chromium, Some(site)) => match serde_json::from_str::<BrowserLoad>(line) {
            Ok(load) => record.browser = Some(PaintRecord::of(&load, site)),
            Err(e) => record.error = Some(unreadable(e)),
        },
        (Client::Chromium, None) => record.error = Some("no built site to check".to_owned()),
    }
    record
}

/// The schedulers `--schedulers` names, each once, in the order given; all of them for none.
pub(crate) fn parse_schedulers(names: &[String]) -> Result<Vec<SchedulerKind>, Failure> {
    if names.is_empty() {
        return Ok(SchedulerKind::ALL.to_vec());
    }
    let mut schedulers: Vec<SchedulerKind> = Vec::new();
    for name in names {
        let k: SchedulerKind = name
            .parse()
            .map_err(|e| Failure::Usage(format!("--schedulers {name}: {e}")))?;
        if !schedulers.contains(&k) {
            schedulers.push(k);
        }
    }
    Ok(schedulers)
}

/// Runs the command.
pub fn experiment(args: &ExperimentArgs) -> Result<(), Failure> {
    let started = Instant::now();
    let plan = plan(args)?;
    std::fs::create_dir_all(&plan.out)
        .map_err(|e| Failure::Experiment(format!("{}: {e}", plan.out.display())))?;
    let raw_file = plan.out.join("raw.jsonl");
    let (records, bad) = raw::read(&raw_file).map_err(Failure::Experiment)?;
    if bad > 0 {
        eprintln!(
            "experiment: {bad} unreadable line(s) in {} skipped",
            raw_file.display()
        );
    }
    let done = raw::done(&records);
    // The pages as the browser loads them, built once.
    let sites: Vec<Option<Site>> = plan
        .pages
        .iter()
        .map(|p| plan.browser.then(|| Site::build(&p.page)))
        .collect();
    let mut jobs = Vec::new();
    let mut total = 0usize;
    for &scenario in &plan.scenarios {
        let rows = plan.variants(scenario.name);
        for (page, site) in plan.pages.iter().zip(&sites) {
            for rep in 0..plan.reps {
                for variant in &rows {
                    total += 1;
                    let job = Job {
                        scenario,
                        page,
                        site: site.as_ref(),
                        variant: variant.clone(),
                        rep,
                    };
                    if !done.contains(&job.id(&plan).key()) {
                        jobs.push(job);
                    }
                }
            }
        }
    }
    eprintln!(
        "experiment: {} scenario(s) x {} page(s) x {} rep(s): {total} runs, {} already in {}, {} to go; mode {}",
        plan.scenarios.len(),
        plan.pages.len(),
        plan.reps,
        total - jobs.len(),
        raw_file.display(),
        jobs.len(),
        plan.mode_note
    );
    let root = crate::workspace_root();
    if args.report_only && !jobs.is_empty() {
        eprintln!(
            "experiment: --report-only: {} run(s) of this matrix are not in raw.jsonl and are left out",
            jobs.len()
        );
    } else if !jobs.is_empty() {
        // tquic is installed (minutes, once) before any load is timed, not inside the first.
        if jobs.iter().any(|j| j.variant.kind == VariantKind::Tquic) {
            crate::peers::tquic().map_err(Failure::Experiment)?;
        }
        // A browser that cannot start is found before the first load, not in every one.
        if jobs.iter().any(|j| j.variant.client == Client::Chromium) {
            let chromium = Chromium::find().map_err(|e| Failure::Experiment(e.to_string()))?;
            eprintln!(
                "experiment: browser rows in {}",
                chromium.binary().display()
            );
        }
        let programs = Programs {
            page_client: bins::binary("page_client", args.profile).map_err(Failure::Experiment)?,
            lab: std::env::current_exe()
                .map_err(|e| Failure::Experiment(format!("cannot find this lab binary: {e}")))?,
        };
        let bar = ProgressBar::new(jobs.len() as u64);
        if let Ok(style) = ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta_precise} {msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        let log_lines = bar.is_hidden() || !std::io::stderr().is_terminal();
        let mut failed = 0usize;
        for (i, job) in jobs.iter().enumerate() {
            bar.set_message(job.describe());
            let record = run_job(&programs, &root, &plan, job);
            raw::append(&raw_file, &record).map_err(Failure::Experiment)?;
            let outcome = match (&record.report, &record.browser, &record.error) {
                (Some(r), _, _) => format!("FRT {:.1} ms, PLT {:.1} ms", r.frt_ms, r.plt_ms),
                (None, Some(p), _) => format!(
                    "FCP {:.1} ms, load {:.1} ms from the request",
                    p.fcp_from_request().unwrap_or(f64::NAN),
                    p.load_from_request().unwrap_or(f64::NAN)
                ),
                (None, None, Some(e)) => {
                    failed += 1;
                    format!("failed: {e}")
                }
                (None, None, None) => "no report".to_owned(),
            };
            bar.inc(1);
            if log_lines {
                let eta = bar.eta().as_secs();
                eprintln!(
                    "[{}/{}] {}: {outcome} ({:.1} s; ETA {}m{:02}s)",
                    i + 1,
                    jobs.len(),
                    job.describe(),
                    record.wall_s,
                    eta / 60,
                    eta % 60
                );
            } else if !record.measured() {
                bar.println(format!("{}: {outcome}", job.describe()));
            }
        }
        bar.finish_and_clear();
        eprintln!(
            "experiment: {} run(s) in {:.1} s, {failed} failed",
            jobs.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let (records, _) = raw::read(&raw_file).map_err(Failure::Experiment)?;
    let selected: Vec<Record> = records.into_iter().filter(|r| plan.selects(r)).collect();
    let written = report::write(&plan, &selected, started.elapsed())?;
    print!("{}", written.summary);
    for file in &written.files {
        println!("wrote {}", file.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let file = dir.join(name);
        std::fs::write(&file, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        file
    }

    /// A one-page, one-load plan of lrf in pb-low on loopback, its records going to `dir`.
    fn plan(dir: &Path) -> Plan {
        std::fs::create_dir_all(dir).unwrap();
        let pages = pages::resolve(&["bing-2013".to_owned()], &crate::workspace_root(), dir);
        Plan {
            scenarios: vec![Scenario::by_name("pb-low").unwrap()],
            pages: pages.unwrap(),
            schedulers: vec![SchedulerKind::Lrf],
            reps: 1,
            mode: "loopback".to_owned(),
            mode_note: String::new(),
            time_scale: 0.0,
            request_order: RequestOrder::Discovered,
            timeout: 0.2,
            extras: false,
            reinjection_ablation: false,
            browser: false,
            cc: MAIN_CC.to_owned(),
            setup_slack: Duration::ZERO,
            out: dir.to_path_buf(),
            command: String::new(),
        }
    }

    #[test]
    fn every_variant_of_a_repetition_draws_the_same_losses() {
        let dir = std::env::temp_dir().join(format!("mq-exp-seed-{}", std::process::id()));
        let plan = plan(&dir);
        let programs = Programs {
            page_client: PathBuf::from("page_client"),
            lab: PathBuf::from("lab"),
        };
        let scenario = Scenario::by_name("pb-high-lossy").unwrap();
        let all = variants(scenario, &SchedulerKind::ALL, true, true, MAIN_CC);
        assert!(all.iter().any(|v| v.kind == VariantKind::Tquic));
        for variant in all {
            for rep in [0, 7] {
                let label = variant.label();
                let job = Job {
                    scenario,
                    page: &plan.pages[0],
                    site: None,
                    variant: variant.clone(),
                    rep,
                };
                let command = programs.command(&plan, &job);
                let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
                let at = args.iter().position(|a| a == "--loss-seed");
                let seed = at.and_then(|i| args.get(i + 1));
                assert_eq!(seed.map(|s| s.as_ref()), Some(&*rep.to_string()), "{label}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_hung_failed_or_garbled_page_client_is_a_failed_record() {
        let dir = std::env::temp_dir().join(format!("mq-exp-job-{}", std::process::id()));
        let root = crate::workspace_root();
        let plan = plan(&dir);
        let job = Job {
            scenario: plan.scenarios[0],
            page: &plan.pages[0],
            site: None,
            variant: Variant::main(SchedulerKind::Lrf, MAIN_CC),
            rep: 0,
        };
        let programs = |bin: &Path| Programs {
            page_client: bin.to_path_buf(),
            lab: bin.to_path_buf(),
        };
        let hung = script(&dir, "hung", "exec sleep 30");
        let failing = script(&dir, "failing", "echo 'page_client: no route' >&2; exit 1");
        let garbled = script(&dir, "garbled", "echo '{not json'");
        let started = Instant::now();
        let r = run_job(&programs(&hung), &root, &plan, &job);
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(r.error.as_deref().unwrap().starts_with("timeout"), "{r:?}");
        let r = run_job(&programs(&failing), &root, &plan, &job);
        assert!(r.error.as_deref().unwrap().contains("no route"), "{r:?}");
        let r = run_job(&programs(&garbled), &root, &plan, &job);
        assert!(r.error.as_deref().unwrap().contains("unreadable"), "{r:?}");
        let r = run_job(&programs(&dir.join("missing")), &root, &plan, &job);
        assert!(
            r.error.as_deref().unwrap().starts_with("cannot start"),
            "{r:?}"
        );
        assert!(r.report.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn browser_rows_repeat_every_scheduler_and_quinn_in_chromium() {
        let dir = std::env::temp_dir().join(format!("mq-exp-browser-{}", std::process::id()));
        let plan = Plan {
            browser: true,
            schedulers: vec![SchedulerKind::PriorityBucket, SchedulerKind::Lrf],
            ..plan(&dir)
        };
        let rows = plan.variants("pb-low");
        let labels: Vec<String> = rows.iter().map(Variant::label).collect();
        assert_eq!(
            labels,
            [
                "priority-bucket",
                "lrf",
                "quinn (h3-quinn), better path",
                "priority-bucket in Chromium",
                "lrf in Chromium",
                "quinn (h3-quinn), better path in Chromium",
            ]
        );
        // A Chromium row is its own run: page_client is asked for the browser, and resuming
        // does not take a replay load for it.
        let programs = Programs {
            page_client: PathBuf::from("page_client"),
            lab: PathBuf::from("lab"),
        };
        let job = |variant: &Variant| Job {
            scenario: plan.scenarios[0],
            page: &plan.pages[0],
            site: None,
            variant: variant.clone(),
            rep: 0,
        };
        for v in &rows {
            let command = programs.command(&plan, &job(v));
            let browser = command.get_args().any(|a| a == "--browser");
            assert_eq!(browser, v.client == Client::Chromium, "{}", v.label());
        }
        let (replay, chromium) = (job(&rows[1]).id(&plan), job(&rows[4]).id(&plan));
        assert_ne!(replay.key(), chromium.key());
        assert!(rows[4].matches(&chromium) && !rows[4].matches(&replay));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn extra_rows_only_where_issue_7_asks() {
        let all = SchedulerKind::ALL.to_vec();
        let scenario = |name| Scenario::by_name(name).unwrap();
        let high = variants(scenario("pb-high"), &all, true, true, MAIN_CC);
        let low = variants(scenario("pb-low"), &all, true, true, MAIN_CC);
        // Each path alone, quinn, and tquic's variants everywhere; FLD, MEH and no delivery
        // reports in pb-high.
        let baselines = 2 + 1 + TQUIC_VARIANTS.len();
        assert_eq!(low.len(), all.len() + baselines);
        assert_eq!(high.len(), all.len() + baselines + 6);
        assert!(high.iter().any(|v| v.cc == "fld" && v.scheduler == "lrf"));
        let ablation = high
            .iter()
            .find(|v| v.kind == VariantKind::NoDeliveryReports)
            .unwrap();
        assert_eq!(ablation.label(), "priority-bucket, no delivery reports");
        assert!(!ablation.delivery_reports());
        assert!(high
            .iter()
            .any(|v| v.paths == "auto" && v.scheduler == "priority-bucket"));
        assert_eq!(
            variants(scenario("lte"), &[SchedulerKind::Sec], false, true, MAIN_CC).len(),
            1
        );
        // Without the testbed, no tquic rows.
        let loopback = variants(scenario("pb-low"), &all, true, false, MAIN_CC);
        assert!(loopback.iter().all(|v| v.kind != VariantKind::Tquic));
        assert!(loopback.iter().any(|v| v.kind == VariantKind::Quinn));
        // Without lrf, the single-path rows take the first scheduler.
        let single = variants(
            scenario("sec-low"),
            &[SchedulerKind::Sec],
            true,
            false,
            MAIN_CC,
        );
        assert_eq!(single[1].label(), "path 0 alone (sec)");
        assert_eq!(single[2].label(), "path 1 alone (sec)");
    }
}
