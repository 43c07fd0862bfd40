//! `cargo xtask peers bulk` end to end (needs root): one mpquic and one Linux MPTCP transfer of a
//! few MB over pb-low's two emulated 25 Mbit/s paths, through the command's own code, must
//! complete, check out, use both paths and reach a sane goodput (more than half of the 50 Mbit/s
//! sum; a sanity bound, not a benchmark). It uses the dev-profile binaries `cargo test` has
//! built (the lab's `bulk` next to its `lab`). Ignored unless asked for
//! (`cargo test -- --ignored`, as root; `cargo xtask ci` does that when it runs as root); asked
//! for without root, network namespaces or that example, it fails. Without MPTCP in the kernel
//! it says so on stderr and runs mpquic alone.

// The notice that MPTCP is left out is for the person reading the test output.
#![allow(clippy::print_stderr)]

use mpquic_netns::topology::unavailable;

mod common;
mod in_testbed;
use common::Scratch;
use in_testbed::{assert_no_namespace_left, run_lab};

#[test]
#[ignore = "needs root"]
fn mpquic_and_mptcp_aggregate_pb_low() {
    assert_eq!(unavailable(), None, "the namespace testbed cannot run here");
    // MPTCP needs a kernel with it compiled in and switched on (net.mptcp.enabled = 1).
    let mptcp =
        std::fs::read_to_string("/proc/sys/net/mptcp/enabled").is_ok_and(|v| v.trim() == "1");
    if !mptcp {
        eprintln!("MPTCP part skipped: /proc/sys/net/mptcp/enabled is missing or not 1");
    }
    let peers = if mptcp { "mpquic,mptcp" } else { "mpquic" };
    let out = Scratch(std::env::temp_dir().join(format!("mq-peers-test-{}", std::process::id())));
    let out_dir = out.0.display().to_string();
    let (pid, output) = run_lab([
        "peers",
        "bulk",
        "--scenarios",
        "pb-low",
        "--size",
        "4MB",
        "--reps",
        "1",
        "--peers",
        peers,
        "--schedulers",
        "priority-bucket",
        "--defaults-only",
        "--profile",
        "dev",
        "--out",
        &out_dir,
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "peers bulk failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // mpquic's default row names the default controller, whichever it is.
    let default_row = format!(
        "| mpquic | priority-bucket, {} (default) | 1/1 |",
        mpquic_core::CongestionControl::DEFAULT_NAME
    );
    assert!(stdout.contains(&default_row), "{stdout}");

    let jsonl = std::fs::read_to_string(out.0.join("bulk.jsonl")).expect("bulk.jsonl");
    let records: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let expected: Vec<&str> = peers.split(',').collect();
    assert_eq!(records.len(), expected.len(), "{jsonl}");
    for r in &records {
        let peer = r["peer"].as_str().unwrap_or_default();
        assert!(r["ok"].as_bool().unwrap_or(false), "{peer}: {r}");
        let fraction = r["fraction"].as_f64().unwrap_or(0.0);
        assert!(
            fraction > 0.5,
            "{peer} reached {fraction} of 50 Mbit/s: {r}"
        );
        // Both emulated paths carried a real share of the payload.
        let forwarded: Vec<u64> = r["forwarded_bytes"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
            .unwrap_or_default();
        assert_eq!(forwarded.len(), 2, "{r}");
        assert!(
            forwarded.iter().all(|&b| b > 500_000),
            "{peer}: {forwarded:?}"
        );
    }
    let ran: Vec<&str> = records.iter().filter_map(|r| r["peer"].as_str()).collect();
    assert_eq!(ran, expected);

    // The testbed is gone: no namespace of that lab process is left.
    assert_no_namespace_left(pid);
}
