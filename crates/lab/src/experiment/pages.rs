//! The experiment's pages: names as the issue gives them, mapped onto the recordings in
//! `pages/`, any HAR file or directory by path, and `bing-2013`, which has no recording and is
//! written as a HAR from the simulator's builtin page.

use std::path::{Path, PathBuf};

use std::time::Duration;

use mpquic_replay::{har, Discovery, Page, RequestOrder};
use mpquic_sched::sim;
use serde_json::json;

use crate::Failure;

/// The default pages.
pub const DEFAULT: &[&str] = &[
    "bing-2013",
    "youtube-2013",
    "bing.com-2024",
    "google.com-2021",
    "wikipedia.org",
];

/// The quick run's pages.
pub const QUICK: &[&str] = &["bing-2013", "youtube-2013"];

/// Names that are not the file stem of their recording.
const ALIASES: &[(&str, &str)] = &[("youtube-2013", "youtube.com-2013")];

/// A page of the matrix.
#[derive(Debug, Clone)]
pub struct PageRef {
    /// The label in raw.jsonl and the tables.
    pub label: String,
    /// The HAR file page_client loads.
    pub har: PathBuf,
    /// Where it comes from, for the report.
    pub origin: String,
    /// The page as loaded (for the oracle and the description).
    pub page: Page,
}

impl PageRef {
    /// `objects, bytes, critical` for the report.
    pub fn describe(&self) -> String {
        format!(
            "{} objects, {} bytes, {} critical",
            self.page.objects.len(),
            self.page.total_bytes(),
            self.page.critical_count()
        )
    }

    /// The simulator's view of the page as page_client requests it at `time_scale` in `order`,
    /// for the oracle: the document at 0; an object with a recorded initiator when that
    /// completes; any other at its recorded offset from the document's completion times
    /// `time_scale`; or, all at once, every object at 0. (`Page::to_sim_page` keeps the
    /// recorded start times instead, seconds for a 2013 page.)
    pub fn sim_page(&self, time_scale: f64, order: RequestOrder) -> sim::Page {
        let mut page = self.page.to_sim_page();
        for (object, replayed) in page.objects.iter_mut().zip(&self.page.objects) {
            object.start = match replayed.discovery {
                _ if order == RequestOrder::AllAtOnce => sim::Start::At(Duration::ZERO),
                Discovery::Document => sim::Start::At(Duration::ZERO),
                Discovery::After { parent } => sim::Start::After {
                    parent,
                    delay: Duration::ZERO,
                },
                Discovery::AfterDocument(after) => sim::Start::After {
                    parent: self.page.main_document,
                    delay: Duration::try_from_secs_f64(after.as_secs_f64() * time_scale)
                        .unwrap_or(Duration::ZERO),
                },
            };
        }
        page
    }
}

fn load(label: String, har: PathBuf, origin: String) -> Result<PageRef, Failure> {
    let page = har::load(&har).map_err(|e| Failure::Usage(format!("page {label}: {e}")))?;
    Ok(PageRef {
        label,
        har,
        origin,
        page,
    })
}

fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// Resolves `specs` (names or paths) into pages; `root` is the workspace root (for `pages/`)
/// and `scratch` where generated HARs go.
pub fn resolve(specs: &[String], root: &Path, scratch: &Path) -> Result<Vec<PageRef>, Failure> {
    let mut out: Vec<PageRef> = Vec::new();
    for spec in specs {
        for page in resolve_one(spec, root, scratch)? {
            if out.iter().any(|p| p.label == page.label) {
                return Err(Failure::Usage(format!(
                    "two pages are both called {:?}; rename one of the files",
                    page.label
                )));
            }
            out.push(page);
        }
    }
    if out.is_empty() {
        return Err(Failure::Usage("no pages to load".to_owned()));
    }
    Ok(out)
}

fn resolve_one(spec: &str, root: &Path, scratch: &Path) -> Result<Vec<PageRef>, Failure> {
    let path = Path::new(spec);
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| Failure::Usage(format!("{spec}: {e}")))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "har"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(Failure::Usage(format!("{spec}: no .har files in it")));
        }
        return files
            .into_iter()
            .map(|f| load(stem(&f), f.clone(), format!("{}", f.display())))
            .collect();
    }
    if path.is_file() {
        return Ok(vec![load(stem(path), path.to_path_buf(), spec.to_owned())?]);
    }
    if spec == "bing-2013" {
        let file = scratch.join("bing-2013.har");
        write_builtin_har(&sim::Page::builtin("bing-2013").map_err(usage)?, &file)?;
        return Ok(vec![load(
            spec.to_owned(),
            file,
            "no recording exists: the simulator's builtin bing-2013 ([PB]: 1 HTML + 1 image; 10 kB + 100 kB), written as a HAR".to_owned(),
        )?]);
    }
    let file_stem = ALIASES
        .iter()
        .find(|(name, _)| *name == spec)
        .map_or(spec, |(_, file)| file);
    let file = root.join("pages").join(format!("{file_stem}.har"));
    if file.is_file() {
        return Ok(vec![load(
            spec.to_owned(),
            file,
            format!("pages/{file_stem}.har"),
        )?]);
    }
    Err(Failure::Usage(format!(
        "unknown page {spec:?}: not bing-2013, not pages/{file_stem}.har, and not a HAR file or directory"
    )))
}

fn usage(e: impl std::fmt::Display) -> Failure {
    Failure::Usage(e.to_string())
}

/// Chrome's priority name for an urgency, the inverse of the HAR reader's conversion.
fn chrome_priority(urgency: u8) -> &'static str {
    match urgency {
        0 => "VeryHigh",
        1 => "High",
        2 => "Medium",
        3 => "Low",
        _ => "VeryLow",
    }
}

/// Writes a simulator page as a HAR the replay reads back with the same sizes, urgencies,
/// critical objects and discovery: the first object is the document; every other object is
/// initiated by the document (requested when it completes), a stylesheet at urgency 0, a
/// script at 1 (render-blocking), an image otherwise.
pub fn write_builtin_har(page: &sim::Page, file: &Path) -> Result<(), Failure> {
    let document = page
        .objects
        .first()
        .map(|o| o.name.clone())
        .unwrap_or_default();
    let entries: Vec<_> = page
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let urgency = o.urgency.get();
            let (kind, mime) = match (i, urgency) {
                (0, _) => ("document", "text/html"),
                (_, 0) => ("stylesheet", "text/css"),
                (_, 1) => ("script", "application/javascript"),
                _ => ("image", "image/jpeg"),
            };
            let mut entry = json!({
                "pageref": "page_1",
                "startedDateTime": "2013-07-01T00:00:00.000Z",
                "time": 0.0,
                "request": {"method": "GET", "url": o.name},
                "response": {
                    "status": 200,
                    "bodySize": o.size,
                    "content": {"size": o.size, "mimeType": mime},
                    "headers": []
                },
                "_priority": chrome_priority(urgency),
                "_resourceType": kind,
            });
            if i > 0 {
                entry["_initiator"] = json!(document);
            }
            entry
        })
        .collect();
    let har = json!({
        "log": {
            "version": "1.2",
            "creator": {"name": "cargo xtask experiment", "version": "1"},
            "pages": [{"id": "page_1", "title": page.name, "startedDateTime": "2013-07-01T00:00:00.000Z"}],
            "entries": entries,
        }
    });
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| usage(format!("{}: {e}", dir.display())))?;
    }
    std::fs::write(file, har.to_string()).map_err(|e| usage(format!("{}: {e}", file.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bing_2013_round_trips_through_a_har() {
        let dir = std::env::temp_dir().join(format!("mq-exp-pages-{}", std::process::id()));
        let builtin = sim::Page::builtin("bing-2013").unwrap();
        let file = dir.join("bing-2013.har");
        write_builtin_har(&builtin, &file).unwrap();
        let page = har::load(&file).unwrap().to_sim_page();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(page.objects.len(), builtin.objects.len());
        for (a, b) in page.objects.iter().zip(&builtin.objects) {
            assert_eq!(a.size, b.size);
            assert_eq!(a.urgency, b.urgency);
            assert_eq!(a.critical, b.critical);
        }
    }

    #[test]
    fn unknown_names_are_usage_errors() {
        let root = crate::workspace_root();
        let err = resolve(&["no-such-page".to_owned()], &root, &std::env::temp_dir()).unwrap_err();
        assert!(matches!(err, Failure::Usage(_)));
    }

    #[test]
    fn names_map_onto_recordings() {
        let root = crate::workspace_root();
        let pages = resolve(
            &["youtube-2013".to_owned(), "wikipedia.org".to_owned()],
            &root,
            &std::env::temp_dir(),
        )
        .unwrap();
        assert_eq!(pages[0].origin, "pages/youtube.com-2013.har");
        assert_eq!(pages[1].label, "wikipedia.org");
    }
}
