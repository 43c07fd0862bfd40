//! What the lab's integration tests share.

use std::path::PathBuf;

/// A scratch directory, removed whatever happens.
pub struct Scratch(pub PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
