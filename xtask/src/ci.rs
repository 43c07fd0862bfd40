//! `cargo xtask ci`: the checks CI runs, in order, stopping at the first failure (one entry
//! point, the same steps locally as in CI): the cargo [`STEPS`], then a short run of every fuzz
//! target (`fuzz/run.sh`), skipped with a message only where there is no nightly toolchain. The
//! tests that need root are `#[ignore = "needs root"]`: the last cargo step runs them, and only
//! as root (CI runs as root); elsewhere it says loudly that they did not run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One check: a cargo invocation with its extra environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// A short name for messages.
    pub name: &'static str,
    /// Arguments after `cargo`.
    pub args: &'static [&'static str],
    /// Environment variables set for this step only.
    pub env: &'static [(&'static str, &'static str)],
    /// Whether the step runs only as root (it is reported as not run otherwise).
    pub needs_root: bool,
}

impl Step {
    /// The step as a shell line, for messages.
    pub fn command_line(&self) -> String {
        let env = self.env.iter().map(|(key, value)| format!("{key}={value}"));
        let args = self.args.iter().map(|arg| (*arg).to_owned());
        env.chain(std::iter::once("cargo".to_owned()))
            .chain(args)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The checks, in the order they run.
pub const STEPS: [Step; 5] = [
    Step {
        name: "fmt",
        args: &["fmt", "--all", "--", "--check"],
        env: &[],
        needs_root: false,
    },
    Step {
        name: "clippy",
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
        needs_root: false,
    },
    Step {
        name: "doc",
        args: &["doc", "--workspace", "--no-deps"],
        env: &[("RUSTDOCFLAGS", "-Dwarnings")],
        needs_root: false,
    },
    Step {
        name: "test",
        args: &["test", "--workspace"],
        env: &[],
        needs_root: false,
    },
    Step {
        name: "root tests",
        // Every ignored test (root's, and the browser tests that need Chromium) but the one
        // that needs tquic_tools, whose install takes minutes.
        args: &[
            "test",
            "--workspace",
            "--",
            "--ignored",
            "--skip",
            "tquic_loads_a_small_page",
        ],
        env: &[],
        needs_root: true,
    },
];

/// The workspace root: the parent of this crate's directory. `cargo run` says where that is
/// at run time; the path built in is the fallback, since one binary in a target directory
/// that two checkouts share may have been built from the other one.
pub fn workspace_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest.parent().unwrap_or(&manifest).to_path_buf()
}

/// The cargo to run: `$CARGO` (set by `cargo run`, so the same toolchain) or `cargo`.
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// Seconds each fuzz target runs in CI's smoke run.
pub const FUZZ_SMOKE_SECONDS: u32 = 20;

/// The script that runs the fuzz targets, from the workspace root.
pub const FUZZ_SCRIPT: &str = "fuzz/run.sh";

/// The fuzz smoke run after [`STEPS`], as a shell line run from the workspace root.
pub fn fuzz_smoke_command_line() -> String {
    format!("bash {FUZZ_SCRIPT} {FUZZ_SMOKE_SECONDS}")
}

/// Runs [`STEPS`] from the workspace root with inherited stdio, then the fuzz smoke run; the
/// error names the step that failed.
pub fn run() -> Result<(), String> {
    let root = workspace_root();
    let cargo = cargo();
    let total = STEPS.len() + 1;
    let as_root = running_as_root();
    let mut not_run = Vec::new();
    for (i, step) in STEPS.iter().enumerate() {
        let line = step.command_line();
        if step.needs_root && !as_root {
            eprintln!(
                "==> ci {}/{total} {} NOT RUN: it needs root (run `sudo -E {line}` to run it)",
                i + 1,
                step.name
            );
            not_run.push(step.name);
            continue;
        }
        let mut command = Command::new(&cargo);
        command.args(step.args).current_dir(&root);
        if step.needs_root && !chromium_available() {
            eprintln!(
                "==> ci {}/{total} {}: the browser tests (`chromium_*`) NOT RUN: no Chromium \
                 (install Debian's `chromium`, as .ci/run does, or set MPQUIC_CHROMIUM)",
                i + 1,
                step.name
            );
            command.args(["--skip", CHROMIUM_TESTS]);
            not_run.push("browser tests");
        }
        eprintln!("==> ci {}/{total} {}: {line}", i + 1, step.name);
        for (key, value) in step.env {
            command.env(key, value);
        }
        let status = command.status().map_err(|e| {
            format!(
                "ci step {} ({line}) could not start {cargo}: {e}",
                step.name
            )
        })?;
        if !status.success() {
            return Err(format!(
                "ci step {} of {total}, {}, failed ({status}): {line}",
                i + 1,
                step.name
            ));
        }
    }
    let line = fuzz_smoke_command_line();
    eprintln!("==> ci {total}/{total} fuzz smoke: {line}");
    if !nightly_available() {
        eprintln!(
            "==> ci {total}/{total} fuzz smoke SKIPPED: `cargo +nightly --version` failed, so \
             there is no nightly toolchain to build the fuzz targets with (install one with \
             `rustup toolchain install nightly`, and cargo-fuzz with `cargo install cargo-fuzz`)"
        );
        not_run.push("fuzz smoke");
    } else {
        fuzz_smoke(&root, &line)?;
    }
    if not_run.is_empty() {
        eprintln!("==> ci: all {total} steps passed");
    } else {
        eprintln!(
            "==> ci: {} of {total} steps passed; NOT RUN: {}",
            total - not_run.len(),
            not_run.join(", ")
        );
    }
    Ok(())
}

/// The prefix of the tests that load pages in headless Chromium (`crates/browser/tests/`).
const CHROMIUM_TESTS: &str = "chromium_";

/// Whether the browser tests can find Chromium as `mpquic-browser`'s `Chromium::find` looks
/// for it: `MPQUIC_CHROMIUM`, else `chromium` (Debian's package) or a few other names on PATH.
fn chromium_available() -> bool {
    if let Some(binary) = std::env::var_os("MPQUIC_CHROMIUM") {
        return Path::new(&binary).is_file();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| {
        ["chromium", "chromium-browser", "google-chrome", "chrome"]
            .iter()
            .any(|name| dir.join(name).is_file())
    })
}

/// Whether this process runs as root (`id -u` prints 0): the root tests need it.
fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

/// The commands below pick their toolchain with `cargo +nightly` (rustup's proxy on `PATH`),
/// so this run's own toolchain must not leak into them.
fn without_toolchain_env(program: &str) -> Command {
    let mut command = Command::new(program);
    command.env_remove("CARGO").env_remove("RUSTUP_TOOLCHAIN");
    command
}

/// Whether `cargo +nightly` works: the only reason the fuzz smoke run is skipped.
fn nightly_available() -> bool {
    toolchain_available("nightly")
}

/// Whether `cargo +{toolchain}` works. Asking must not install the toolchain (rustup may, for
/// a `+toolchain` it lacks).
fn toolchain_available(toolchain: &str) -> bool {
    without_toolchain_env("cargo")
        .arg(format!("+{toolchain}"))
        .arg("--version")
        .env("RUSTUP_AUTO_INSTALL", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Every fuzz target for [`FUZZ_SMOKE_SECONDS`] (`fuzz/run.sh` with cargo-fuzz, which
/// `.ci/run` installs); fails if cargo-fuzz is missing or a target crashes.
fn fuzz_smoke(root: &Path, line: &str) -> Result<(), String> {
    let status = without_toolchain_env("bash")
        .arg(FUZZ_SCRIPT)
        .arg(FUZZ_SMOKE_SECONDS.to_string())
        .current_dir(root)
        .status()
        .map_err(|e| format!("ci step fuzz smoke could not start bash: {e}"))?;
    if !status.success() {
        return Err(format!(
            "ci step fuzz smoke failed ({status}): {line} (a crashing input is in \
             fuzz/artifacts/<target>/; the step needs cargo-fuzz: `cargo install cargo-fuzz`)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_in_order() {
        let names: Vec<_> = STEPS.iter().map(|s| s.name).collect();
        assert_eq!(names, ["fmt", "clippy", "doc", "test", "root tests"]);
        let as_root: Vec<_> = STEPS.iter().map(|s| s.needs_root).collect();
        assert_eq!(as_root, [false, false, false, false, true]);
        assert_eq!(
            STEPS[1].command_line(),
            "cargo clippy --workspace --all-targets -- -D warnings"
        );
        assert_eq!(
            STEPS[2].command_line(),
            "RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps"
        );
    }

    #[test]
    fn fuzz_smoke_runs_the_script_after_the_cargo_steps() {
        assert_eq!(fuzz_smoke_command_line(), "bash fuzz/run.sh 20");
        let script = workspace_root().join(FUZZ_SCRIPT);
        let text = std::fs::read_to_string(script).unwrap();
        assert!(text.contains("-max_total_time="));
        assert!(!STEPS.iter().any(|s| s.args.contains(&"fuzz")));
    }

    #[test]
    fn a_missing_toolchain_is_detected() {
        assert!(!toolchain_available("no-such-toolchain-for-the-ci-test"));
    }

    #[test]
    fn root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
        assert!(manifest.contains("[workspace]"));
    }
}
