//! `cargo xtask testbed up|down` against a killed owner (needs root): start `up`, `kill -9` it,
//! see its namespaces outlive it, start `up` again (it must succeed), stop that one with `down`,
//! and check that no namespace of either is left. And `up` interrupted by SIGINT (Ctrl-C) or
//! SIGTERM: it tears down by itself, leaving no namespace, device or state file. Ignored unless
//! asked for (`cargo test -- --ignored`, as root; `cargo xtask ci` does that when it runs as
//! root); asked for without root or network namespaces, each test fails.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mpquic_netns::topology::{namespaces, unavailable};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const LAB: &str = env!("CARGO_BIN_EXE_lab");
const STATE_ENV: &str = "MPQUIC_TESTBED_STATE";
/// Longest `up` may take to write its state file.
const UP_TIME: Duration = Duration::from_secs(15);

/// The namespaces listed now.
fn netns_list() -> Vec<String> {
    namespaces().expect("ip netns list")
}

/// The network devices in this namespace whose names start with `prefix`.
fn links_named(prefix: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .expect("ip link show");
    // Lines are `3: name: <FLAGS> ...` (or `name@peer:`).
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or_default().to_owned())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// The namespaces of the testbeds process `pid` owns (`mq<pid>x...`).
fn owned_by(pid: u32) -> Vec<String> {
    let prefix = format!("mq{pid}x");
    netns_list()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Everything this test started: the `up` children (killed by pid and reaped), their
/// namespaces (deleted), and the state file's directory, whatever happens.
struct Cleanup {
    dir: PathBuf,
    children: Vec<Child>,
    pids: Vec<u32>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        for &pid in &self.pids {
            for ns in owned_by(pid) {
                let _ = Command::new("ip").args(["netns", "del", &ns]).output();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Cleanup {
    /// Nothing started yet; the state file goes in a directory of this test's own.
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("mq-testbed-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Cleanup {
            dir,
            children: Vec::new(),
            pids: Vec::new(),
        }
    }

    fn lab(&self) -> Command {
        let mut command = Command::new(LAB);
        command.env(STATE_ENV, self.dir.join("current.json"));
        command
    }

    /// Starts `testbed up --scenario pb-high` and waits for its state file; returns its index.
    fn up(&mut self) -> usize {
        let child = self
            .lab()
            .args(["testbed", "up", "--scenario", "pb-high", "--seconds", "50"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start testbed up");
        let pid = child.id();
        self.pids.push(pid);
        self.children.push(child);
        let state = self.dir.join("current.json");
        let deadline = Instant::now() + UP_TIME;
        loop {
            let text = std::fs::read_to_string(&state).unwrap_or_default();
            if text.contains(&format!("\"pid\": {pid}")) {
                return self.children.len() - 1;
            }
            let exited = self.children.last_mut().and_then(|c| c.try_wait().ok()?);
            assert!(exited.is_none(), "testbed up exited early: {exited:?}");
            assert!(
                Instant::now() < deadline,
                "no state file of pid {pid} after {UP_TIME:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn down(&self) -> Output {
        let out = self
            .lab()
            .args(["testbed", "down"])
            .output()
            .expect("run testbed down");
        assert!(
            out.status.success(),
            "testbed down failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

#[test]
#[ignore = "needs root"]
fn down_cleans_up_after_a_killed_up() {
    assert_eq!(unavailable(), None, "the namespace testbed cannot run here");
    let started = Instant::now();
    let mut cleanup = Cleanup::new("kill9");

    // The first owner dies without tearing down: its namespaces stay.
    let first = cleanup.up();
    let first_pid = cleanup.children[first].id();
    cleanup.children[first].kill().expect("kill -9 testbed up");
    cleanup.children[first].wait().expect("reap testbed up");
    let mut left = owned_by(first_pid);
    left.sort();
    assert_eq!(
        left,
        [format!("mq{first_pid}x0c"), format!("mq{first_pid}x0s")],
        "namespaces of the killed up"
    );

    // A new `up` is not blocked by the dead one's state file.
    let second = cleanup.up();
    let second_pid = cleanup.children[second].id();
    assert_eq!(owned_by(second_pid).len(), 2);

    // `down` stops the running one and removes the dead one's leftovers.
    let out = cleanup.down();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("removed stale namespace mq{first_pid}x0c")),
        "{stdout}"
    );
    let status = cleanup.children[second].wait().expect("reap the second up");
    assert!(status.success(), "second up exited with {status}");
    assert!(!cleanup.dir.join("current.json").exists());
    assert_eq!(owned_by(first_pid), Vec::<String>::new());
    assert_eq!(owned_by(second_pid), Vec::<String>::new());

    // A second `down` has nothing to do and says so.
    let out = cleanup.down();
    assert!(String::from_utf8_lossy(&out.stdout).contains("no testbed is up"));
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
#[ignore = "needs root"]
fn up_tears_down_on_sigint_and_sigterm() {
    assert_eq!(unavailable(), None, "the namespace testbed cannot run here");
    let mut cleanup = Cleanup::new("signals");
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        let index = cleanup.up();
        let pid = cleanup.children[index].id();
        let prefix = format!("mq{pid}x");
        assert_eq!(owned_by(pid).len(), 2, "namespaces of the running up");
        kill(Pid::from_raw(i32::try_from(pid).expect("pid")), signal).expect("send the signal");

        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = cleanup.children[index].try_wait().expect("wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "up did not stop within 10 s of {signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // It exited by itself after tearing down, with the shell's code for the signal.
        assert_eq!(
            status.code(),
            Some(128 + signal as i32),
            "{signal}: {status}"
        );
        assert_eq!(
            owned_by(pid),
            Vec::<String>::new(),
            "{signal}: namespaces left"
        );
        assert_eq!(
            links_named(&prefix),
            Vec::<String>::new(),
            "{signal}: devices left"
        );
        assert!(
            !cleanup.dir.join("current.json").exists(),
            "{signal}: state file left"
        );
        let threads = std::fs::read_dir(format!("/proc/{pid}")).is_ok();
        assert!(!threads, "{signal}: process {pid} still there");
    }
}
