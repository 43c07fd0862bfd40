//! The namespace testbed against what it was configured with (needs root): `pb-high` between
//! two namespaces (and `pb-high-lossy`, for the loss checks), each path checked by `linkemu
//! probe` in the client namespace against `linkemu probe-server` in the server namespace (RTT,
//! UDP goodput and loss per direction), and teardown leaving no namespace behind. Ignored unless
//! asked for (`cargo test -- --ignored`, as root; `cargo xtask ci` does that when it runs as
//! root); asked for without root or network namespaces, each test fails.

// The measurements are for the person reading the test output.
#![allow(clippy::print_stderr)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use mpquic_netns::topology::{client_addr, namespaces, server_addr, unavailable, Side, Topology};
use mpquic_scenario::Scenario;

const LINKEMU: &str = env!("CARGO_BIN_EXE_linkemu");
const PROBE_PORT: u16 = 5201;
/// Longest a probe server may take to say it is listening.
const SERVER_READY: Duration = Duration::from_secs(10);
/// Longest one `linkemu probe` (one path, both directions) may run.
const PROBE_TIME: Duration = Duration::from_secs(30);

/// A child process this test started; killed (by its pid) and reaped when dropped.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `linkemu ARGS` on `side` and waits until its first line of stdout starts with
/// `ready`; its further lines go to the returned channel.
fn start_ready(
    topo: &Topology,
    side: Side,
    args: &[&str],
    ready: &str,
) -> (Started, mpsc::Receiver<String>) {
    let mut child = Started(
        topo.exec(side, std::iter::once(LINKEMU).chain(args.iter().copied()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start linkemu {args:?}: {e}")),
    );
    let stdout = child.0.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    // Reads to the end, so the child never writes to a closed pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    match rx.recv_timeout(SERVER_READY) {
        Ok(line) if line.starts_with(ready) => (child, rx),
        other => {
            let mut stderr = String::new();
            let _ = child.0.kill();
            if let Some(mut e) = child.0.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            panic!("linkemu {args:?} did not start: {other:?}; stderr: {stderr}");
        }
    }
}

/// Starts `linkemu probe-server` on path `k` in the server namespace and waits until it
/// listens.
fn probe_server(topo: &Topology, k: usize) -> Started {
    let bind = format!("{}:{PROBE_PORT}", server_addr(k));
    start_ready(
        topo,
        Side::Server,
        &["probe-server", "--bind", &bind],
        "probe server on",
    )
    .0
}

/// Runs `linkemu ARGS` on `side` to its end, killing it (and failing) after `limit`.
fn run_bounded(topo: &Topology, side: Side, args: &[&str], limit: Duration) -> Output {
    let child = topo
        .exec(side, std::iter::once(LINKEMU).chain(args.iter().copied()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start linkemu {args:?}: {e}"));
    let mut child = Started(child);
    // Drain the pipes while it runs, so a chatty child cannot block on a full one.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.0.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.0.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.0.try_wait().expect("wait for linkemu") {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                panic!("linkemu {args:?} still running after {limit:?}")
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Runs `linkemu probe` for path `k` from the client namespace, killing it after
/// [`PROBE_TIME`].
fn probe(topo: &Topology, k: usize) -> Output {
    let target = format!("{}:{PROBE_PORT}", server_addr(k));
    let bind = format!("{}:0", client_addr(k));
    let path = k.to_string();
    run_bounded(
        topo,
        Side::Client,
        &[
            "probe",
            "--target",
            &target,
            "--bind",
            &bind,
            "--scenario",
            topo.scenario().name,
            "--path",
            &path,
        ],
        PROBE_TIME,
    )
}

/// The namespaces listed now.
fn netns_list() -> Vec<String> {
    namespaces().expect("ip netns list")
}

/// The namespace tests take turns: each one saturates its links, and CI has two cores.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
#[ignore = "needs root"]
fn pb_high_between_namespaces_meets_its_configuration() {
    check_scenario("pb-high");
}

#[test]
#[ignore = "needs root"]
fn pb_high_lossy_between_namespaces_meets_its_configuration() {
    check_scenario("pb-high-lossy");
}

/// Brings `name` up between two namespaces, checks every path with `linkemu probe`, and
/// checks that teardown leaves no namespace behind.
fn check_scenario(name: &str) {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(unavailable(), None, "the namespace testbed cannot run here");
    let started = Instant::now();
    let scenario = Scenario::by_name(name).expect("scenario preset");
    let topo = Topology::up(scenario).expect("topology up");
    let names = [topo.client_ns().to_owned(), topo.server_ns().to_owned()];
    let listed = netns_list();
    for name in &names {
        assert!(listed.contains(name), "{name} not in {listed:?}");
    }

    let mut failures = Vec::new();
    for k in 0..scenario.paths.len() {
        let server = probe_server(&topo, k);
        let out = probe(&topo, k);
        drop(server);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{name} path {k}:\n{stdout}{stderr}");
        if !out.status.success() {
            failures.push(format!("path {k}: {}\n{stdout}{stderr}", out.status));
        }
    }
    for (k, s) in topo.stats().iter().enumerate() {
        eprintln!("path {k} shuttle counters: {s:?}");
    }

    drop(topo);
    let listed = netns_list();
    for name in &names {
        assert!(
            !listed.contains(name),
            "{name} still listed after drop: {listed:?}"
        );
    }
    eprintln!("{name} took {:?}", started.elapsed());
    assert!(
        failures.is_empty(),
        "checks failed:\n{}",
        failures.join("\n")
    );
}

/// `up` failing half way (the server namespace's name is taken, after the client namespace
/// was created) names the failed command and removes what it had created.
#[test]
#[ignore = "needs root"]
fn failed_up_removes_what_it_created() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(unavailable(), None, "the namespace testbed cannot run here");
    // Topologies are numbered per process; take the server name of the next few, whatever
    // the other tests have used.
    let pid = std::process::id();
    let taken: Vec<String> = (0..16).map(|n| format!("mq{pid}x{n}s")).collect();
    let mut ours = Vec::new();
    for name in &taken {
        let ok = Command::new("ip")
            .args(["netns", "add", name])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            ours.push(name.clone());
        }
    }
    let scenario = Scenario::by_name("pb-high").expect("pb-high preset");
    let result = Topology::up(scenario);
    let listed = netns_list();
    for name in &ours {
        let _ = Command::new("ip").args(["netns", "del", name]).output();
    }
    let err = result.expect_err("up must fail when its server namespace exists");
    let msg = err.to_string();
    assert!(msg.contains("ip netns add mq"), "{msg}");
    assert!(msg.contains("File exists"), "{msg}");
    let left: Vec<_> = listed
        .iter()
        .filter(|n| n.starts_with(&format!("mq{pid}x")) && n.ends_with('c'))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// How long `linkemu tcp-send` sends: its first second (slow start) is left out of the
/// goodput, the rest is the measurement.
const TCP_SECONDS: u64 = 6;
/// TCP goodput bar, as a share of the configured rate (the rate counts IP bytes, so the
/// headers alone cost about 3.5% of it).
const TCP_BAR: f64 = 0.9;

/// One TCP flow (`linkemu tcp-send` in the client namespace to `linkemu tcp-sink` in the
/// server namespace) per path of pb-high; its goodput as measured by the receiver after the
/// first second must reach 90% of the configured rate.
#[test]
#[ignore = "needs root"]
fn tcp_flow_reaches_90_percent_of_the_configured_rate() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(unavailable(), None, "the namespace testbed cannot run here");
    let started = Instant::now();
    let scenario = Scenario::by_name("pb-high").expect("pb-high preset");
    let topo = Topology::up(scenario).expect("topology up");
    let mut failures = Vec::new();
    for (k, spec) in scenario.paths.iter().enumerate() {
        let target = format!("{}:{PROBE_PORT}", server_addr(k));
        let (sink, _lines) = start_ready(
            &topo,
            Side::Server,
            &["tcp-sink", "--bind", &target, "--connections", "1"],
            "tcp sink on",
        );
        let seconds = TCP_SECONDS.to_string();
        let out = run_bounded(
            &topo,
            Side::Client,
            &["tcp-send", "--target", &target, "--seconds", &seconds],
            // Sending, then the queue draining, with room for a loaded machine.
            Duration::from_secs(TCP_SECONDS + 20),
        );
        drop(sink);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "tcp-send on path {k}: {}\n{stdout}{stderr}",
            out.status
        );
        let goodput: f64 = stdout
            .lines()
            .filter(|l| l.starts_with("sink:"))
            .flat_map(str::split_whitespace)
            .find_map(|w| w.strip_prefix("goodput_bps="))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no goodput from the sink on path {k}:\n{stdout}{stderr}"));
        let rate = spec.rate_bps as f64;
        eprintln!(
            "pb-high path {k}: TCP goodput {:.3} Mbit/s = {:.1}% of {:.0} Mbit/s (bar {:.0}%)\n{stdout}",
            goodput / 1e6,
            goodput / rate * 100.0,
            rate / 1e6,
            TCP_BAR * 100.0
        );
        if goodput < TCP_BAR * rate {
            failures.push(format!(
                "path {k}: {:.3} Mbit/s < {:.0}% of {:.0} Mbit/s",
                goodput / 1e6,
                TCP_BAR * 100.0,
                rate / 1e6
            ));
        }
    }
    for (k, s) in topo.stats().iter().enumerate() {
        eprintln!("path {k} shuttle counters: {s:?}");
    }
    drop(topo);
    eprintln!("tcp check took {:?}", started.elapsed());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
