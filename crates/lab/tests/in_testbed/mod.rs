//! What the root tests that run the lab in the namespace testbed share.

use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};

use mpquic_netns::topology::namespaces;

/// Runs `lab ARGS` to its end; returns its pid (which its namespaces' names carry) and its
/// output.
pub fn run_lab<I, S>(args: I) -> (u32, Output)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let child = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the lab");
    let pid = child.id();
    (pid, child.wait_with_output().expect("run the lab"))
}

/// Fails if the lab process `pid` left a namespace behind (deleting those first, so that one
/// failure does not leak into the next run).
pub fn assert_no_namespace_left(pid: u32) {
    let prefix = format!("mq{pid}x");
    let left: Vec<String> = namespaces()
        .expect("ip netns list")
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    for ns in &left {
        let _ = Command::new("ip").args(["netns", "del", ns]).output();
    }
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}
