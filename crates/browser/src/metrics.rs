//! What the browser itself measured: a script in the built page reads the browser's paint and
//! navigation timing and its resource timing log, and posts them to [`BEACON_PATH`] on the
//! page's origin, where the proxy takes them instead of forwarding the request.

use serde::{Deserialize, Serialize};

/// The path (on the document's origin) the page's metrics script posts its report to; the
/// proxy answers it itself.
pub const BEACON_PATH: &str = "/__mpquic/metrics";

/// The script the page builder puts first in the document's `<head>`. It observes the largest
/// contentful paint from the start, and once the page has loaded and painted (two frames after
/// `load`, plus a quarter second for a last LCP candidate) and the browser's resource timing
/// log lists every file the page is expected to fetch (requests that scripts make with
/// `fetch()` do not hold `load` back, and the log lists a request only once its response has
/// ended), posts a [`PaintReport`] as JSON. Should a file never come, it posts what it has
/// after [`QUIET_MS`] without a new entry. Times are the browser's, in milliseconds from the
/// navigation's start.
pub const METRICS_SCRIPT: &str = r#"(function () {
  var lcp = null;
  try { performance.setResourceTimingBufferSize(100000); } catch (e) {}
  try {
    new PerformanceObserver(function (list) {
      var entries = list.getEntries();
      if (entries.length) lcp = entries[entries.length - 1].startTime;
    }).observe({ type: "largest-contentful-paint", buffered: true });
  } catch (e) {}
  function report() {
    var paint = {};
    performance.getEntriesByType("paint").forEach(function (e) { paint[e.name] = e.startTime; });
    var nav = performance.getEntriesByType("navigation")[0] || {};
    var resources = performance.getEntriesByType("resource").map(function (r) {
      return { url: r.name, start_ms: r.startTime, end_ms: r.responseEnd, initiator: r.initiatorType };
    });
    var body = JSON.stringify({
      url: location.href,
      first_paint_ms: paint["first-paint"] === undefined ? null : paint["first-paint"],
      fcp_ms: paint["first-contentful-paint"] === undefined ? null : paint["first-contentful-paint"],
      lcp_ms: lcp,
      request_start_ms: nav.requestStart === undefined ? null : nav.requestStart,
      document_end_ms: nav.responseEnd === undefined ? null : nav.responseEnd,
      dom_content_loaded_ms: nav.domContentLoadedEventEnd === undefined ? null : nav.domContentLoadedEventEnd,
      load_ms: nav.loadEventStart === undefined ? null : nav.loadEventStart,
      resources: resources
    });
    fetch("__BEACON__", { method: "POST", body: body, keepalive: true });
  }
  function whenComplete() {
    var seen = -1, quiet = 0;
    (function poll() {
      var now = performance.getEntriesByType("resource").length;
      quiet = now === seen ? quiet + 50 : 0;
      seen = now;
      if (now >= __EXPECTED__ || quiet >= __QUIET__) report(); else setTimeout(poll, 50);
    })();
  }
  addEventListener("load", function () {
    requestAnimationFrame(function () {
      requestAnimationFrame(function () { setTimeout(whenComplete, 250); });
    });
  });
})();"#;

/// How long the metrics script waits, after `load`, for a resource timing entry that does not
/// come before it reports without it.
pub const QUIET_MS: u32 = 3000;

/// [`METRICS_SCRIPT`] for a page whose main document's resource timing log should list
/// `expected` files: what goes inside the document's first `<script>` element.
pub fn metrics_script(expected: usize) -> String {
    METRICS_SCRIPT
        .replace("__BEACON__", BEACON_PATH)
        .replace("__EXPECTED__", &expected.to_string())
        .replace("__QUIET__", &QUIET_MS.to_string())
}

/// What the browser reported for one page load. Times are milliseconds from the start of the
/// navigation (the browser's `performance.timeOrigin`); a metric the browser did not produce
/// (nothing contentful was painted, say) is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaintReport {
    /// The document's URL as the browser saw it.
    pub url: String,
    /// When the document's last byte arrived.
    pub document_end_ms: Option<f64>,
    /// The browser's own milestones (flattened: one JSON object with the rest).
    #[serde(flatten)]
    pub times: PaintTimes,
    /// The browser's resource timing log: every sub-resource it fetched, in the order it
    /// started them.
    pub resources: Vec<ResourceTiming>,
}

/// A load's milestones as the browser counts them, in ms since its navigation started; `None`
/// where it reported none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaintTimes {
    /// When the browser sent the document's request: what came before (starting a renderer,
    /// the connection to the proxy) is the browser's, not the transport's.
    pub request_start_ms: Option<f64>,
    /// First paint.
    pub first_paint_ms: Option<f64>,
    /// First contentful paint (FCP).
    pub fcp_ms: Option<f64>,
    /// The last largest-contentful-paint candidate (LCP) before the report.
    pub lcp_ms: Option<f64>,
    /// The end of `DOMContentLoaded`.
    pub dom_content_loaded_ms: Option<f64>,
    /// The start of the `load` event: the page load time (PLT) as the browser counts it.
    pub load_ms: Option<f64>,
}

/// One entry of the browser's resource timing log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTiming {
    /// The URL requested.
    pub url: String,
    /// When the browser started fetching it.
    pub start_ms: f64,
    /// When its response's last byte arrived.
    pub end_ms: f64,
    /// What made the browser fetch it (`link`, `script`, `img`, `css`, `fetch`, ...).
    pub initiator: String,
}

impl PaintReport {
    /// Parses the beacon's body.
    ///
    /// # Errors
    /// The JSON error when the body is not a report.
    pub fn parse(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_posts_to_the_beacon_path() {
        let script = metrics_script(17);
        assert!(script.contains(&format!("fetch(\"{BEACON_PATH}\"")));
        assert!(script.contains("now >= 17 || quiet >= 3000"));
        for placeholder in ["__BEACON__", "__EXPECTED__", "__QUIET__"] {
            assert!(!script.contains(placeholder));
        }
    }

    #[test]
    fn a_report_with_missing_paints_parses() {
        let report = PaintReport::parse(
            br#"{"url":"https://a.test/","request_start_ms":3,"document_end_ms":8,
                "first_paint_ms":null,"fcp_ms":12.5,"lcp_ms":null,
                "dom_content_loaded_ms":40,"load_ms":90.25,
                "resources":[{"url":"https://a.test/s.css","start_ms":5,"end_ms":9,"initiator":"link"}]}"#,
        )
        .unwrap();
        assert_eq!(report.times.fcp_ms, Some(12.5));
        assert_eq!(report.times.first_paint_ms, None);
        assert_eq!(report.document_end_ms, Some(8.0));
        assert_eq!(report.resources[0].initiator, "link");
    }
}
