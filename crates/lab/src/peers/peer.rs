//! The peers, their variants (flags tried), and one bulk transfer of each over a [`Bed`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use mpquic_core::{CongestionControl, SelfSigned};
use mpquic_netns::topology::Side;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::bed::{addrs, Bed, Proc};
use super::harness::SEED;
use crate::transfer::write_payload;
use mpquic_core::sim::Payload;

/// Longest a server may take to say it listens.
const READY: Duration = Duration::from_secs(15);
/// The tquic_tools release installed and used.
pub const TQUIC_VERSION: &str = "1.6.0";
/// The file tquic serves.
const TQUIC_FILE: &str = "bulk.bin";
/// The larger initial window tried for quinn and noq: 32 packets of 1200 bytes, mpquic's and
/// tquic_tools' default (quinn's and noq's own is 10 packets).
const LARGE_INITIAL_WINDOW: u64 = mpquic_core::DEFAULT_INITIAL_WINDOW;
/// quinn's own initial window, 10 packets of 1200 bytes, tried for mpquic.
const QUINN_INITIAL_WINDOW: u64 = 10 * 1200;

/// A peer: a multipath (or single-path) transport a user could pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    /// This project over all paths, each scheduler.
    Mpquic,
    /// This project over each path alone.
    MpquicSingle,
    /// Plain quinn over the better path (highest rate).
    Quinn,
    /// tquic's own multipath client and server.
    Tquic,
    /// noq, draft-21 multipath.
    Noq,
    /// Linux MPTCP (IPPROTO_MPTCP sockets, the kernel's path manager and scheduler).
    Mptcp,
}

impl Peer {
    /// Every peer, in report order.
    pub const ALL: [Peer; 6] = [
        Peer::Mpquic,
        Peer::MpquicSingle,
        Peer::Quinn,
        Peer::Tquic,
        Peer::Noq,
        Peer::Mptcp,
    ];

    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Mpquic => "mpquic",
            Peer::MpquicSingle => "mpquic-single",
            Peer::Quinn => "quinn",
            Peer::Tquic => "tquic",
            Peer::Noq => "noq",
            Peer::Mptcp => "mptcp",
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Peer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Peer::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Peer::ALL.iter().map(|p| p.name()).collect();
                format!("unknown peer {s:?}; known: {}", names.join(", "))
            })
    }
}

/// One way of running a peer: the flags, and which paths it uses.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The peer.
    pub peer: Peer,
    /// What the best/default comparison groups by (`mpquic path 0` is its own group).
    pub group: String,
    /// A short label of the flags, e.g. `lrf, cubic`.
    pub label: String,
    /// The peer's default configuration (within its group).
    pub default: bool,
    /// The flags, as recorded in the JSON.
    pub flags: Value,
    /// The testbed paths it runs over.
    pub paths: Vec<usize>,
    /// Whether data flows server to client (tquic serves a file) instead of client to server.
    pub download: bool,
}

/// The binaries the peers run.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The lab's `bulk`.
    pub bulk: PathBuf,
    /// The lab's own binary, for the quinn, noq and MPTCP harnesses (`lab peers harness`).
    pub harness: PathBuf,
    /// `tquic_server` and `tquic_client`, or why they are missing.
    pub tquic: Result<(PathBuf, PathBuf), String>,
}

/// The variants of `peer` for a scenario with `rates` (bit/s per path); `schedulers` are
/// mpquic's; `defaults_only` drops the congestion-control and scheduler exploration.
pub fn variants(
    peer: Peer,
    rates: &[u64],
    schedulers: &[String],
    defaults_only: bool,
    tcp_cc: &str,
) -> Vec<Variant> {
    let all: Vec<usize> = (0..rates.len()).collect();
    // The better path: the highest rate, the first of equals.
    let better = (0..rates.len())
        .max_by_key(|&k| (rates[k], std::cmp::Reverse(k)))
        .unwrap_or(0);
    let mut out = Vec::new();
    let mut push = |group: String, label: String, default: bool, flags: Value, paths: &[usize]| {
        out.push(Variant {
            peer,
            group,
            label,
            default,
            flags,
            paths: paths.to_vec(),
            download: peer == Peer::Tquic,
        });
    };
    match peer {
        Peer::Mpquic => {
            let main_cc = CongestionControl::DEFAULT_NAME;
            for s in schedulers {
                let default = s == "priority-bucket";
                let flags = json!({"scheduler": s, "cc": main_cc});
                push(
                    "mpquic".into(),
                    format!("{s}, {main_cc}"),
                    default,
                    flags,
                    &all,
                );
            }
            if !defaults_only {
                for s in schedulers
                    .iter()
                    .filter(|s| *s == "priority-bucket" || *s == "lrf")
                {
                    let others = [
                        "cubic",
                        "cubic-hystart",
                        "bbr",
                        "bbr-draft-loss",
                        "quinn-bbr",
                        "newreno",
                    ];
                    for cc in others.into_iter().filter(|cc| *cc != main_cc) {
                        let flags = json!({"scheduler": s, "cc": cc});
                        push("mpquic".into(), format!("{s}, {cc}"), false, flags, &all);
                    }
                    let flags = json!({"scheduler": s, "cc": "cubic",
                        "initial_window": QUINN_INITIAL_WINDOW});
                    push(
                        "mpquic".into(),
                        format!("{s}, cubic, IW 10"),
                        false,
                        flags,
                        &all,
                    );
                    let flags = json!({"scheduler": s, "cc": "cubic", "delivery_reports": false});
                    let label = format!("{s}, cubic, no delivery reports");
                    push("mpquic".into(), label, false, flags, &all);
                    // Re-injection's ablation: it must cost bulk transfers nothing.
                    let flags = json!({"scheduler": s, "cc": main_cc, "reinjection": false});
                    let label = format!("{s}, {main_cc}, no re-injection");
                    push("mpquic".into(), label, false, flags, &all);
                }
            }
        }
        Peer::MpquicSingle => {
            for k in 0..rates.len() {
                let main_cc = CongestionControl::DEFAULT_NAME;
                let flags = json!({"scheduler": "priority-bucket", "cc": main_cc, "path": k});
                push(
                    format!("mpquic path {k}"),
                    format!("path {k} alone, {main_cc}"),
                    true,
                    flags,
                    &[k],
                );
            }
        }
        Peer::Quinn => {
            let ccs: &[&str] = if defaults_only {
                &["cubic"]
            } else {
                &["cubic", "bbr", "newreno"]
            };
            for cc in ccs {
                let flags = json!({"cc": cc, "path": better});
                let label = format!("path {better}, {cc}");
                push("quinn".into(), label, *cc == "cubic", flags, &[better]);
            }
            if !defaults_only {
                let flags =
                    json!({"cc": "cubic", "path": better, "initial_window": LARGE_INITIAL_WINDOW});
                let label = format!("path {better}, cubic, IW 32");
                push("quinn".into(), label, false, flags, &[better]);
            }
        }
        Peer::Noq => {
            let ccs: &[&str] = if defaults_only {
                &["cubic"]
            } else {
                &["cubic", "bbr", "newreno"]
            };
            let paths = rates.len();
            for cc in ccs {
                let shown = if *cc == "bbr" { "bbr3" } else { cc };
                let flags = json!({"cc": shown, "max_concurrent_multipath_paths": paths});
                push("noq".into(), shown.to_owned(), *cc == "cubic", flags, &all);
            }
            if !defaults_only {
                let flags = json!({"cc": "cubic", "max_concurrent_multipath_paths": paths,
                    "initial_window": LARGE_INITIAL_WINDOW});
                push("noq".into(), "cubic, IW 32".into(), false, flags, &all);
            }
        }
        Peer::Tquic => {
            let mut combos = vec![("minrtt", "bbr")];
            if !defaults_only {
                combos.extend([
                    ("redundant", "bbr"),
                    ("roundrobin", "bbr"),
                    ("minrtt", "cubic"),
                    ("minrtt", "bbr3"),
                    ("minrtt", "copa"),
                    ("roundrobin", "cubic"),
                ]);
            }
            for (sched, cc) in combos {
                let flags = json!({
                    "enable_multipath": true,
                    "multipath_algor": sched,
                    "congestion_control_algor": cc,
                });
                let default = sched == "minrtt" && cc == "bbr";
                push(
                    "tquic".into(),
                    format!("{sched}, {cc}"),
                    default,
                    flags,
                    &all,
                );
            }
        }
        Peer::Mptcp => {
            let mut ccs = vec![None];
            if !defaults_only {
                ccs.extend(
                    ["cubic", "bbr", "reno"]
                        .into_iter()
                        .filter(|cc| *cc != tcp_cc)
                        .map(Some),
                );
            }
            for cc in ccs {
                let (label, flags) = match cc {
                    None => (
                        format!("{tcp_cc} (system default)"),
                        json!({"scheduler": "default", "cc": tcp_cc, "tcp_congestion": null}),
                    ),
                    Some(cc) => (
                        format!("{cc} (TCP_CONGESTION)"),
                        json!({"scheduler": "default", "cc": cc, "tcp_congestion": cc}),
                    ),
                };
                push("mptcp".into(), label, cc.is_none(), flags, &all);
            }
        }
    }
    out
}

/// What one transfer measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Payload bytes delivered.
    pub bytes: u64,
    /// The peer's own transfer time (see the module docs of `peers` for each one's clock).
    pub seconds: f64,
    /// Whether the payload was checked end to end (sha256, or byte count for iperf3).
    pub verified: bool,
    /// Peer-specific details (its own JSON line, its statistics).
    pub detail: Value,
}

impl Measured {
    /// Goodput in Mbit/s.
    pub fn goodput_mbps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.seconds.max(1e-9) / 1e6
    }
}

/// One transfer to run: `size` bytes of `variant` on `bed`, the servers on `port`, each
/// process bounded by `limit`.
#[derive(Clone, Copy)]
pub struct Job<'a> {
    /// The testbed.
    pub bed: &'a Bed,
    /// The binaries.
    pub tools: &'a Tools,
    /// What to run.
    pub variant: &'a Variant,
    /// Payload bytes.
    pub size: u64,
    /// The servers' port.
    pub port: u16,
    /// The bound on every process of the run.
    pub limit: Duration,
}

/// Runs one transfer.
pub fn run(job: &Job) -> Result<Measured, String> {
    match job.variant.peer {
        Peer::Mpquic | Peer::MpquicSingle => mpquic(job),
        Peer::Quinn => quinn(job),
        Peer::Noq => noq(job),
        Peer::Tquic => tquic(job),
        Peer::Mptcp => mptcp(job),
    }
}

fn flag<'a>(variant: &'a Variant, key: &str) -> &'a str {
    variant.flags[key].as_str().unwrap_or_default()
}

/// `--initial-window BYTES` if the variant sets one.
fn initial_window_args(variant: &Variant) -> Vec<String> {
    match variant.flags["initial_window"].as_u64() {
        Some(bytes) => vec!["--initial-window".into(), bytes.to_string()],
        None => Vec::new(),
    }
}

fn joined<T: ToString>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The last non-empty line of `text` as JSON.
pub(super) fn last_json(text: &str, what: &str) -> Result<Value, String> {
    text.lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| format!("{what} printed no JSON line: {}", text.trim()))
        .and_then(|l| serde_json::from_str(l).map_err(|e| format!("{what}: bad JSON {l:?}: {e}")))
}

/// How a server shows that it is ready for its client.
enum Ready {
    /// It prints this.
    Prints(&'static str),
    /// It prints nothing: the client starts after this pause.
    After(Duration),
}

impl Job<'_> {
    /// The harness `role` (`lab peers harness ROLE`) on `side`.
    fn harness(&self, side: Side, role: &str) -> Command {
        let mut command = self.bed.exec(side, &self.tools.harness);
        command.args(["peers", "harness", role]);
        command
    }

    /// The run's one exchange: starts `server`, and once it is `ready` runs `client` to its
    /// end within the job's limit; returns the client's stdout. The server is killed when
    /// this returns. Both are `(command, name for messages)`.
    fn exchange(
        &self,
        server: (Command, &str),
        ready: Ready,
        client: (Command, &str),
    ) -> Result<String, String> {
        let mut server = Proc::spawn(server.0, server.1)?;
        match ready {
            Ready::Prints(needle) => server.wait_for(needle, READY)?,
            Ready::After(pause) => std::thread::sleep(pause),
        }
        let (out, _) = Proc::spawn(client.0, client.1)?.finish(self.limit)?;
        Ok(out)
    }

    /// The client's last JSON line as a measurement of the job's `size` bytes.
    fn measured(&self, out: &str, what: &str) -> Result<Measured, String> {
        let line = last_json(out, what)?;
        Ok(Measured {
            bytes: self.size,
            seconds: line["seconds"]
                .as_f64()
                .ok_or_else(|| format!("{what}: no seconds"))?,
            verified: line["sha256_match"].as_bool() == Some(true),
            detail: line,
        })
    }
}

fn mpquic(job: &Job) -> Result<Measured, String> {
    let (variant, port) = (job.variant, job.port);
    let cert = job.bed.scratch().join(format!("mpquic-{port}.der"));
    let servers = joined(
        variant
            .paths
            .iter()
            .map(|&k| format!("{}:{port}", addrs(k).1)),
    );
    let clients = joined(variant.paths.iter().map(|&k| addrs(k).0));
    let (scheduler, cc) = (flag(variant, "scheduler"), flag(variant, "cc"));
    let timeout = format!("{}s", job.limit.as_secs());
    let common = |command: &mut Command| {
        command.args(["--scheduler", scheduler, "--cc", cc, "--timeout", &timeout]);
        command.args(initial_window_args(variant));
        if variant.flags["delivery_reports"] == json!(false) {
            command.arg("--no-delivery-reports");
        }
        if variant.flags["reinjection"] == json!(false) {
            command.arg("--no-reinjection");
        }
        command.arg("--cert").arg(&cert);
    };
    let mut server = job.bed.exec(Side::Server, &job.tools.bulk);
    server.args(["--role", "server", "--local", &servers, "--sessions", "1"]);
    common(&mut server);
    let mut client = job.bed.exec(Side::Client, &job.tools.bulk);
    client.args([
        "--role", "client", "--local", &clients, "--remote", &servers,
    ]);
    client.args(["--size", &job.size.to_string()]);
    common(&mut client);
    let out = job.exchange(
        (server, "bulk server"),
        Ready::Prints("listening"),
        (client, "bulk client"),
    )?;
    job.measured(&out, "bulk client")
}

/// One transfer between the harnesses `{name}-server` and `{name}-client`, each given its own
/// arguments and `shared` ones.
fn harness_pair(
    job: &Job,
    name: &str,
    server_args: &[String],
    client_args: &[String],
    shared: &[String],
) -> Result<Measured, String> {
    let (server_role, client_role) = (format!("{name}-server"), format!("{name}-client"));
    let mut server = job.harness(Side::Server, &server_role);
    server.args(server_args).args(shared);
    let mut client = job.harness(Side::Client, &client_role);
    client.args(client_args).args(shared);
    client.args(["--size", &job.size.to_string()]);
    let out = job.exchange(
        (server, &server_role),
        Ready::Prints("listening on"),
        (client, &client_role),
    )?;
    job.measured(&out, &client_role)
}

/// `--cc CC [--initial-window BYTES] --cert CERT` of the quinn or noq harness `name`.
fn quic_control(job: &Job, name: &str, cc: &str) -> Vec<String> {
    let cert = job.bed.scratch().join(format!("{name}-{}.der", job.port));
    let mut args = vec!["--cc".to_owned(), cc.to_owned()];
    args.extend(initial_window_args(job.variant));
    args.extend(["--cert".to_owned(), cert.display().to_string()]);
    args
}

fn quinn(job: &Job) -> Result<Measured, String> {
    let (c, s) = addrs(job.variant.paths[0]);
    let remote = format!("{s}:{}", job.port);
    let control = quic_control(job, "quinn", flag(job.variant, "cc"));
    let server = [format!("--listen={remote}")];
    let client = [format!("--local={c}:0"), format!("--remote={remote}")];
    harness_pair(job, "quinn", &server, &client, &control)
}

fn noq(job: &Job) -> Result<Measured, String> {
    let port = job.port;
    // The flags record noq's names; the harness calls BBRv3 `bbr`.
    let cc = match flag(job.variant, "cc") {
        "bbr3" => "bbr",
        other => other,
    };
    let control = quic_control(job, "noq", cc);
    let paths = &job.variant.paths;
    let server = [
        format!("--paths={}", paths.len()),
        format!("--listen=0.0.0.0:{port}"),
    ];
    let remotes = joined(paths.iter().map(|&k| format!("{}:{port}", addrs(k).1)));
    harness_pair(
        job,
        "noq",
        &server,
        &[format!("--remote={remotes}")],
        &control,
    )
}

/// Writes the harnesses' `size`-byte payload to `path` (unless a file of that size is
/// there) and returns its sha256.
fn served_file(path: &Path, size: u64) -> Result<[u8; 32], String> {
    let fresh = std::fs::metadata(path)
        .map(|m| m.len() != size)
        .unwrap_or(true);
    if fresh {
        write_payload(Payload::new(SEED, size), path)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    file_sha256(path)
}

fn file_sha256(path: &Path) -> Result<[u8; 32], String> {
    let data = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Ok(Sha256::digest(&data).into())
}

/// The number after `key` in `text` (`"mean: 123.45,"` for key `"mean:"`).
fn number_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// A fresh self-signed certificate for `localhost` and its key, written as PEM for tquic's
/// tools (ECDSA: BoringSSL does not offer Ed25519 by default).
pub(super) fn write_pem_certificate(cert: &Path, key: &Path) -> Result<(), String> {
    let certificate = SelfSigned::new(&["localhost"]).map_err(|e| format!("certificate: {e}"))?;
    std::fs::write(cert, certificate.cert_pem()).map_err(|e| format!("writing cert: {e}"))?;
    std::fs::write(key, certificate.key_pem()).map_err(|e| format!("writing key: {e}"))
}

fn tquic(job: &Job) -> Result<Measured, String> {
    let (variant, port, size) = (job.variant, job.port, job.size);
    let (server_bin, client_bin) = job.tools.tquic.clone()?;
    let root = job.bed.scratch().join("tquic-root");
    let dump = job.bed.scratch().join(format!("tquic-dump-{port}"));
    for dir in [&root, &dump] {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let expected = served_file(&root.join(TQUIC_FILE), size)?;
    let (cert, key) = (root.join("cert.crt"), root.join("cert.key"));
    if !cert.is_file() {
        write_pem_certificate(&cert, &key)?;
    }
    let (sched, cc) = (
        flag(variant, "multipath_algor"),
        flag(variant, "congestion_control_algor"),
    );
    let protocol = |command: &mut Command| {
        command.args(["--enable-multipath", "--multipath-algor", sched]);
        command.args(["--congestion-control-algor", cc, "--log-level", "WARN"]);
    };
    let first = addrs(variant.paths[0]).1;
    // Bound to the address the client connects to: bound to 0.0.0.0, tquic_server answers a
    // further path's PATH_CHALLENGE in a way the client never validates, and everything
    // goes over the first path.
    let mut server = job.bed.exec(Side::Server, &server_bin);
    server.args(["--listen", &format!("{first}:{port}")]);
    server.arg("--cert").arg(&cert).arg("--key").arg(&key);
    server.arg("--root").arg(&root);
    protocol(&mut server);
    let locals = joined(variant.paths.iter().map(|&k| addrs(k).0));
    let mut client = job.bed.exec(Side::Client, &client_bin);
    client.args(["--connect-to", &format!("{first}:{port}")]);
    client.args(["--local-addresses", &locals]);
    client.arg("--dump-dir").arg(&dump);
    protocol(&mut client);
    client.arg(format!("https://localhost:{port}/{TQUIC_FILE}"));
    // tquic_server prints nothing when it is ready; UDP needs no accept, so a short pause is
    // enough.
    let out = job.exchange(
        (server, "tquic_server"),
        Ready::After(Duration::from_millis(500)),
        (client, "tquic_client"),
    )?;
    let got = dump.join(TQUIC_FILE);
    let received = std::fs::metadata(&got).map(|m| m.len()).unwrap_or(0);
    let verified = received == size && file_sha256(&got)? == expected;
    let _ = std::fs::remove_dir_all(&dump);
    // "time for request(µs):\n\tmin: .., max: .., mean: .., sd: .." with one request.
    let request_us = number_after(&out, "mean:").ok_or_else(|| {
        format!(
            "tquic_client printed no request time: {}",
            out.trim().lines().last().unwrap_or("")
        )
    })?;
    let success = number_after(&out, "success").unwrap_or(0.0);
    if !verified {
        return Err(format!(
            "tquic_client: received {received} of {size} bytes or a different file \
             ({success} requests successful)"
        ));
    }
    let stats: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("finished in") || l.contains("pkts:") || l.contains("bytes:"))
        .collect();
    Ok(Measured {
        bytes: size,
        seconds: request_us / 1e6,
        verified,
        detail: json!({"request_time_us": request_us, "stats": stats}),
    })
}

fn mptcp(job: &Job) -> Result<Measured, String> {
    let remote = format!("{}:{}", addrs(job.variant.paths[0]).1, job.port);
    let cc: Vec<String> = job.variant.flags["tcp_congestion"]
        .as_str()
        .map(|cc| format!("--cc={cc}"))
        .into_iter()
        .collect();
    let server = [format!("--listen={remote}")];
    harness_pair(job, "mptcp", &server, &[format!("--remote={remote}")], &cc)
}

/// The client namespace's default TCP congestion control.
pub fn tcp_cc(bed: &Bed) -> String {
    Command::new("ip")
        .args(["netns", "exec", bed.client_ns(), "sysctl", "-n"])
        .arg("net.ipv4.tcp_congestion_control")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}
