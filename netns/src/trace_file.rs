//! Mahimahi traces read from files: the I/O half of [`mpquic_scenario::trace`], whose parsing
//! is pure.

use std::path::Path;

use mpquic_scenario::trace::Trace;

use crate::error::NetnsError;

/// Reads and parses the trace file at `path`.
pub fn read_trace(path: &Path) -> Result<Trace, NetnsError> {
    let text = std::fs::read_to_string(path).map_err(|source| NetnsError::Io {
        context: format!("reading trace {}", path.display()),
        source,
    })?;
    Ok(Trace::parse(&text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_reported_with_its_path() {
        let path = Path::new("/nonexistent/mpquic-trace");
        let msg = read_trace(path).unwrap_err().to_string();
        assert!(msg.contains("/nonexistent/mpquic-trace"), "{msg}");
    }
}
