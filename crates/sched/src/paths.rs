//! The table of paths every scheduler keeps: bounded, keyed by id, in insertion order.

use crate::{PathId, PathSnapshot, PathStatus, SchedError};

/// The most paths a scheduler tracks. The allocator works on the stack with this bound, so
/// it never allocates per call.
pub const MAX_PATHS: usize = 32;

/// Checks the shape of a per-path split (`n` paths into `out`) and returns the part of `out` it
/// fills, zeroed: at least one path, at most [`MAX_PATHS`], and room for every share.
pub(crate) fn split_output(n: usize, out: &mut [u64]) -> Result<&mut [u64], SchedError> {
    if n == 0 {
        return Err(SchedError::NoPaths);
    }
    if n > MAX_PATHS {
        return Err(SchedError::TooManyPaths { max: MAX_PATHS });
    }
    let available = out.len();
    let out = out.get_mut(..n).ok_or(SchedError::AllocationOutput {
        paths: n,
        out: available,
    })?;
    out.fill(0);
    Ok(out)
}

/// The paths a scheduler knows, with their latest snapshots.
#[derive(Debug, Clone, Default)]
pub struct PathTable {
    paths: Vec<PathSnapshot>,
}

impl PathTable {
    /// Adds a path; refuses duplicates and more than [`MAX_PATHS`].
    pub fn add(&mut self, path: PathSnapshot) -> Result<(), SchedError> {
        if self.get(path.id).is_some() {
            return Err(SchedError::DuplicatePath(path.id));
        }
        if self.paths.len() >= MAX_PATHS {
            return Err(SchedError::TooManyPaths { max: MAX_PATHS });
        }
        self.paths.push(path);
        Ok(())
    }

    /// Replaces a known path's snapshot, returning the previous one.
    pub fn update(&mut self, path: PathSnapshot) -> Result<PathSnapshot, SchedError> {
        let slot = self
            .get_mut(path.id)
            .ok_or(SchedError::UnknownPath(path.id))?;
        Ok(std::mem::replace(slot, path))
    }

    /// Counts `bytes` granted on a path as in flight until its next snapshot, so that its room
    /// shrinks at once: a scheduler comparing paths does not count room its own grants have
    /// already taken. Unknown ids are ignored.
    pub fn charge(&mut self, id: PathId, bytes: u64) {
        if let Some(path) = self.get_mut(id) {
            path.bytes_in_flight = path.bytes_in_flight.saturating_add(bytes);
        }
    }

    /// Forgets a path; unknown ids are ignored.
    pub fn remove(&mut self, id: PathId) -> Option<PathSnapshot> {
        let index = self.paths.iter().position(|p| p.id == id)?;
        Some(self.paths.remove(index))
    }

    /// The snapshot of a path.
    pub fn get(&self, id: PathId) -> Option<&PathSnapshot> {
        self.paths.iter().find(|p| p.id == id)
    }

    fn get_mut(&mut self, id: PathId) -> Option<&mut PathSnapshot> {
        self.paths.iter_mut().find(|p| p.id == id)
    }

    /// Every known path, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = &PathSnapshot> + '_ {
        self.paths.iter()
    }

    /// Number of known paths.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Whether no path is known.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The paths that may carry data now: the available ones, or the backups when none is.
    pub fn usable(&self) -> impl Iterator<Item = &PathSnapshot> + '_ {
        let any_available = self.paths.iter().any(|p| p.status == PathStatus::Available);
        self.paths.iter().filter(move |p| p.usable(any_available))
    }

    /// Whether `id` is known and may carry data now.
    pub fn is_usable(&self, id: PathId) -> bool {
        self.usable().any(|p| p.id == id)
    }
}
