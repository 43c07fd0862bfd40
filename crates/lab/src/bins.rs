//! The lab's own binaries (`lab`, `bulk`, `page_client`, `linkemu`), which its commands start:
//! built by cargo, or found next to the running one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::ValueEnum;

/// The cargo profile a binary is built in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// `--release`, as measurements should be.
    Release,
    /// The dev profile, built already: the binaries next to this one (what `cargo test`
    /// builds; for quick checks).
    Dev,
}

impl Profile {
    /// The profile the running binary was built in.
    pub fn current() -> Self {
        if cfg!(debug_assertions) {
            Self::Dev
        } else {
            Self::Release
        }
    }

    fn dir(self) -> &'static str {
        match self {
            Self::Release => "release",
            Self::Dev => "debug",
        }
    }
}

/// The lab's binary `name` in `profile`: built now for release, the one next to this binary
/// for dev.
pub fn binary(name: &str, profile: Profile) -> Result<PathBuf, String> {
    match profile {
        Profile::Release => build(name, profile),
        Profile::Dev => sibling(name),
    }
}

/// Builds the lab's binary `name` in `profile` (`cargo build -q -p mpquic-lab --bin NAME`)
/// and returns its path.
pub fn build(name: &str, profile: Profile) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "-q", "-p", "mpquic-lab", "--bin", name]);
    if profile == Profile::Release {
        build.arg("--release");
    }
    eprintln!("building {name} ({})", profile.dir());
    let status = build
        .current_dir(crate::workspace_root())
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run cargo to build {name}: {e}"))?;
    if !status.success() {
        return Err(format!("building {name} failed ({status})"));
    }
    existing(crate::target_dir().join(profile.dir()).join(name))
}

/// The lab's binary `name` next to the running one, not rebuilt: under `cargo test`, which
/// holds the build directory's lock, a nested build would wait forever.
pub fn sibling(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this binary: {e}"))?;
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    // Test binaries run from target/<profile>/deps.
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    existing(dir.join(name))
}

fn existing(path: PathBuf) -> Result<PathBuf, String> {
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing: `cargo build -p mpquic-lab --bins` builds it",
            path.display()
        ))
    }
}
