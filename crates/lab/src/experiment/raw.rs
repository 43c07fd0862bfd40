//! `raw.jsonl`: one JSON object per page load (or failed load), appended as each run ends, and
//! read back on start so a killed run continues where it stopped.

use std::collections::HashSet;
use std::io::{BufRead as _, Write as _};
use std::path::Path;

use mpquic_browser::{BrowserLoad, PaintTimes, Site};
use mpquic_replay::{LoadReport, RequestOrder};
use serde::{Deserialize, Serialize};

/// What loads the page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Client {
    /// page_client's replay client: each object requested when its initiator has arrived.
    #[default]
    Replay,
    /// Headless Chromium through the browser crate's proxy (`page_client --browser`).
    Chromium,
}

impl Client {
    fn is_replay(&self) -> bool {
        *self == Self::Replay
    }
}

/// Which run: resuming skips a run whose id is in raw.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunId {
    /// The scenario preset.
    pub scenario: String,
    /// The page's label (see `pages.rs`).
    pub page: String,
    /// The scheduler both ends ran.
    pub scheduler: String,
    /// The congestion controller of every path.
    pub cc: String,
    /// `all`, a number of paths (the scenario's first ones), or `auto` (MEH).
    pub paths: String,
    /// The repetition, from 0.
    pub rep: usize,
    /// `netns` or `loopback`.
    pub mode: String,
    /// page_client's `--time-scale`.
    pub time_scale: f64,
    /// When page_client requested the objects (left out for the browser's order, as in runs
    /// recorded before the setting existed).
    #[serde(default, skip_serializing_if = "RequestOrder::is_discovered")]
    pub request_order: RequestOrder,
    /// Whether mpquic's delivery reports were on (left out of the line when they were, as in
    /// runs recorded before the setting existed).
    #[serde(default = "on", skip_serializing_if = "is_on")]
    pub delivery_reports: bool,
    /// Whether mpquic's re-injection was on (left out when it was; runs recorded before the
    /// setting existed read as on, so compare in a fresh output directory).
    #[serde(default = "on", skip_serializing_if = "is_on")]
    pub reinjection: bool,
    /// What loaded the page (left out for the replay client, as in runs recorded before the
    /// browser rows existed).
    #[serde(default, skip_serializing_if = "Client::is_replay")]
    pub client: Client,
}

fn on() -> bool {
    true
}

fn is_on(value: &bool) -> bool {
    *value
}

/// A run's identity as a comparable value: its JSON (fields in a fixed order).
pub type Key = String;

impl RunId {
    /// The run's key.
    pub fn key(&self) -> Key {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One run: what was asked, and the report or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Which run.
    #[serde(flatten)]
    pub id: RunId,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    /// Wall-clock seconds the run took (process start to exit).
    pub wall_s: f64,
    /// Why there is no report (a failed load, a timeout, unreadable output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The replay client's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<LoadReport>,
    /// The browser's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<PaintRecord>,
}

impl Record {
    /// Whether the load produced a report.
    pub fn measured(&self) -> bool {
        self.report.is_some() || self.browser.is_some()
    }
}

/// Reads every record of `file` (none if it does not exist). Lines that do not parse (a run
/// killed while writing) are skipped and counted.
pub fn read(file: &Path) -> Result<(Vec<Record>, usize), String> {
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let mut records = Vec::new();
    let mut bad = 0;
    for line in std::io::BufReader::new(f).lines() {
        let line = line.map_err(|e| format!("{}: {e}", file.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(&line) {
            Ok(r) => records.push(r),
            Err(_) => bad += 1,
        }
    }
    Ok((records, bad))
}

/// The keys already present.
pub fn done(records: &[Record]) -> HashSet<Key> {
    records.iter().map(|r| r.id.key()).collect()
}

/// The file's last byte, if it has one.
fn last_byte(file: &Path) -> Option<u8> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut f = std::fs::File::open(file).ok()?;
    f.seek(SeekFrom::End(-1)).ok()?;
    let mut byte = [0u8; 1];
    f.read_exact(&mut byte).ok()?;
    Some(byte[0])
}

/// Appends one record as a line and flushes it.
pub fn append(file: &Path, record: &Record) -> Result<(), String> {
    let line = serde_json::to_string(record).map_err(|e| e.to_string())?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    // A previous run killed mid-line left no newline: start on a fresh line so this record
    // parses (the broken one is skipped on reading).
    let needs_newline = last_byte(file).is_some_and(|c| c != b'\n');
    let prefix = if needs_newline { "\n" } else { "" };
    writeln!(f, "{prefix}{line}")
        .and_then(|()| f.flush())
        .map_err(|e| format!("{}: {e}", file.display()))
}

/// What raw.jsonl keeps of one browser load: its milestones, and its request log checked
/// against the built page ([`Site::check_order`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaintRecord {
    /// The browser's milestones, from its navigation's start.
    #[serde(flatten)]
    pub times: PaintTimes,
    /// Objects the browser asked for that the page does not have.
    pub unknown: usize,
    /// Files it never requested.
    pub missing: usize,
    /// Files it requested more than once.
    pub repeated: usize,
    /// Files it requested before the file that references them had arrived.
    pub out_of_order: usize,
}

impl PaintRecord {
    /// The record of `load`, a load of `site`.
    pub fn of(load: &BrowserLoad, site: &Site) -> Self {
        let order = site.check_order(&load.paint.resources);
        Self {
            times: load.paint.times.clone(),
            unknown: load.proxy.unknown.len(),
            missing: order.missing.len(),
            repeated: order.repeated.len(),
            out_of_order: order.out_of_order.len(),
        }
    }

    /// First contentful paint, from the browser's request for the document.
    pub fn fcp_from_request(&self) -> Option<f64> {
        Some(self.times.fcp_ms? - self.times.request_start_ms?)
    }

    /// The `load` event, from the browser's request for the document.
    pub fn load_from_request(&self) -> Option<f64> {
        Some(self.times.load_ms? - self.times.request_start_ms?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(rep: usize, error: Option<&str>) -> Record {
        Record {
            id: RunId {
                scenario: "pb-low".to_owned(),
                page: "bing-2013".to_owned(),
                scheduler: "lrf".to_owned(),
                cc: "cubic".to_owned(),
                paths: "all".to_owned(),
                rep,
                mode: "loopback".to_owned(),
                time_scale: 0.0,
                request_order: RequestOrder::Discovered,
                delivery_reports: true,
                reinjection: true,
                client: Client::Replay,
            },
            started_unix: 1,
            wall_s: 0.5,
            error: error.map(str::to_owned),
            report: None,
            browser: None,
        }
    }

    #[test]
    fn append_read_resume_and_torn_lines() {
        let dir = std::env::temp_dir().join(format!("mq-exp-raw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("raw.jsonl");
        let _ = std::fs::remove_file(&file);
        assert_eq!(read(&file).unwrap().0.len(), 0);
        append(&file, &record(0, None)).unwrap();
        // A torn write from a killed run.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(b"{\"scenario\":\"pb")
            .unwrap();
        append(&file, &record(1, Some("timeout"))).unwrap();
        let (records, bad) = read(&file).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(bad, 1);
        assert_eq!(records, vec![record(0, None), record(1, Some("timeout"))]);
        let keys = done(&records);
        assert!(keys.contains(&record(1, None).id.key()));
        assert!(!keys.contains(&record(2, None).id.key()));
    }

    #[test]
    fn runs_recorded_before_the_delivery_reports_setting_keep_their_keys() {
        let with = record(0, None).id;
        let line = serde_json::to_string(&with).unwrap();
        assert!(!line.contains("delivery_reports"), "{line}");
        assert!(!line.contains("client"), "{line}");
        let parsed: RunId = serde_json::from_str(&line).unwrap();
        assert!(parsed.delivery_reports);
        assert_eq!(parsed.key(), with.key());
        let without = RunId {
            delivery_reports: false,
            reinjection: true,
            ..with.clone()
        };
        assert_ne!(without.key(), with.key());
        let in_chromium = RunId {
            client: Client::Chromium,
            ..with.clone()
        };
        let line = serde_json::to_string(&in_chromium).unwrap();
        assert!(line.contains(r#""client":"chromium""#), "{line}");
        assert_eq!(serde_json::from_str::<RunId>(&line).unwrap(), in_chromium);
    }

    #[test]
    fn runs_all_at_once_are_told_apart_and_older_runs_read_as_discovered() {
        let discovered = record(0, None).id;
        let line = serde_json::to_string(&discovered).unwrap();
        assert!(!line.contains("request_order"), "{line}");
        let at_once = RunId {
            request_order: RequestOrder::AllAtOnce,
            ..discovered.clone()
        };
        let line = serde_json::to_string(&at_once).unwrap();
        assert!(line.contains(r#""request_order":"all-at-once""#), "{line}");
        assert_eq!(serde_json::from_str::<RunId>(&line).unwrap(), at_once);
        assert_ne!(at_once.key(), discovered.key());
    }
}
