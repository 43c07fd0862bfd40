//! The two pages of the PriorityBucket evaluation (\[PB\] section 5, WProf recordings from 2013):
//! "Bing [...] contains only two web objects, an HTML and an image" and "The YouTube website
//! includes one HTML, two CSS, two JavaScript, and twenty image objects".
//!
//! # Urgencies
//!
//! Chrome's defaults, converted the way Chrome converts them for HTTP/3: DevTools' priority names
//! are Blink's load priorities, which map onto `net::RequestPriority` (VeryHigh = HIGHEST,
//! High = MEDIUM, Medium = LOW, Low = LOWEST, VeryLow = IDLE), and Chromium's
//! `ConvertRequestPriorityToQuicPriority` sends `HIGHEST - priority` as the urgency. So
//! VeryHigh -> 0, High -> 1, Medium -> 2, Low -> 3, VeryLow -> 4. Chrome loads the main document
//! and stylesheets at VeryHigh (0), scripts in the head at High (1), and images at Low (3) until
//! layout finds them in the viewport.
//!
//! # Start times
//!
//! The document is requested at 0 and every sub-resource `After { parent: document, delay: 0 }`:
//! the browser discovers them when the document has arrived, and, like \[PB\], we ignore the
//! browser's processing time. The recorded start times are not used because they include the
//! 2013 network and the ad iframes' scripts that discovered some of the images.

use std::time::Duration;

use super::{Object, Page, Start};
use crate::Urgency;

fn urgency(value: u8) -> Urgency {
    // 0..=4 are all valid urgencies; fall back to the default rather than panic.
    Urgency::new(value).unwrap_or_default()
}

const DOCUMENT: u8 = 0;
const STYLESHEET: u8 = 0;
const SCRIPT: u8 = 1;
const IMAGE: u8 = 3;

fn after_document() -> Start {
    Start::After {
        parent: 0,
        delay: Duration::ZERO,
    }
}

/// `bing-2013`: a 10 kB HTML document (critical, urgency 0) and a 100 kB image (urgency 3).
///
/// No 2013 recording of Bing is bundled, so the sizes are round figures of the page's shape: a
/// small search page and one large background photo. For scale, the 2024 capture
/// (`pages/bing.com-2024.har`) carries a 43 kB document and a 244 kB 1920x1080 photo.
pub fn bing_2013() -> Page {
    let mut page = Page::new("bing-2013");
    page.push(
        Object::new("http://www.bing.com/", 10_000)
            .with_urgency(urgency(DOCUMENT))
            .with_critical(true),
    );
    page.push(
        Object::new("http://www.bing.com/az/hprichbg/background.jpg", 100_000)
            .with_urgency(urgency(IMAGE))
            .with_start(after_document()),
    );
    page
}

/// `youtube-2013`: 1 HTML, 2 CSS, 2 JavaScript and 20 images taken from
/// `pages/youtube.com-2013.har` (youtube.com home page, Chrome, 2013-07; 68 entries).
///
/// Sizes are the response's `bodySize` (the bytes on the wire, gzip where the server
/// compressed). Entries the capture served from cache have `bodySize` 0; for them we take
/// `content.size`, the decoded body, which overstates what the wire would carry for compressed
/// types (marked "cached" below).
///
/// - HTML: entry 0, `http://www.youtube.com/`, 14,229 bytes. Critical, urgency 0.
/// - CSS: the two largest of the three stylesheets, entries 1 (`www-core-vfl3zR8j4.css`,
///   42,510) and 3 (`www-channels4-vflQKV14P.css`, 17,357); entry 2 (`www-home`, 13,223) is
///   left out. Critical, urgency 0.
/// - JavaScript: the first two of the page's own scripts (`s.ytimg.com`) in request order,
///   entries 4 (`www_base_mod-vflUKORc4.js`, 11,305; requested from the head, before
///   DOMContentLoaded) and 25 (`www-masthead-vfl8Ap0u_.js`, 72,380, cached). The scripts from
///   `2mdn.net` belong to the ad iframe and are left out. Both count as render-blocking, as
///   \[PB\] treats its two scripts, so critical, urgency 1.
/// - Images: the first 20 images from YouTube's own hosts (`s.ytimg.com`, `i1.ytimg.com`) in
///   request order: entries 5-11, 28-38, 44 and 46. Ad and beacon images (googlesyndication,
///   csi.gstatic, doubleclick) are third-party and left out, like the ad scripts. Urgency 3.
pub fn youtube_2013() -> Page {
    const CSS: [(&str, u64); 2] = [
        (
            "http://s.ytimg.com/yts/cssbin/www-core-vfl3zR8j4.css",
            42_510,
        ),
        (
            "http://s.ytimg.com/yts/cssbin/www-channels4-vflQKV14P.css",
            17_357,
        ),
    ];
    const JS: [(&str, u64); 2] = [
        (
            "http://s.ytimg.com/yts/jsbin/www_base_mod-vflUKORc4.js",
            11_305,
        ),
        (
            "http://s.ytimg.com/yts/jsbin/www-masthead-vfl8Ap0u_.js",
            72_380,
        ),
    ];
    const IMAGES: [(&str, u64); 20] = [
        ("http://s.ytimg.com/yts/img/pixel-vfl3z5WfW.gif", 43),
        (
            "http://s.ytimg.com/yts/imgbin/www-hitchhiker-vflFMVkjB.png",
            42_026,
        ),
        ("http://i1.ytimg.com/vi/mm2YimzIGf0/hqdefault.jpg", 18_893),
        ("http://i1.ytimg.com/vi/LVYGGThbzrg/default.jpg", 3_495),
        ("http://i1.ytimg.com/vi/dne-JLj2xus/default.jpg", 3_034),
        ("http://i1.ytimg.com/vi/Z1lhCrK4Tcc/default.jpg", 4_789),
        (
            "http://s.ytimg.com/yts/imgbin/www-refresh-vflAjYAhp.png",
            33_831,
        ),
        ("http://i1.ytimg.com/li/RBqewO_Hnm8/default.jpg", 1_773),
        ("http://i1.ytimg.com/li/p-Rdqh3z4Uc/default.jpg", 2_294),
        ("http://i1.ytimg.com/li/7Dr1BKwqctY/default.jpg", 3_911),
        ("http://i1.ytimg.com/li/hfZhJdhTqX8/default.jpg", 2_125),
        ("http://i1.ytimg.com/i/RKJ0Dhva6W6a5piLKPGuKA/1.jpg", 9_790),
        ("http://i1.ytimg.com/i/Y9Jh3SK0N1SAVJi-U--Rwg/1.jpg", 2_878),
        ("http://i1.ytimg.com/i/7Zbrf7JzzMCx58Yk612SIA/1.jpg", 3_804),
        ("http://i1.ytimg.com/i/wiQNfQWsp4v4N2GRAhTAvg/1.jpg", 2_551),
        ("http://i1.ytimg.com/i/qra4Lzndm4H0LB-zwOqbxQ/1.jpg", 3_486),
        ("http://i1.ytimg.com/i/2C_jShtL725hvbm1arSV9w/1.jpg", 5_494),
        ("http://i1.ytimg.com/i/ppHT7SZKKvar4Oc9J4oljQ/1.jpg", 8_597),
        ("http://s.ytimg.com/yts/img/icons/close-vflrEJzIW.png", 516),
        ("http://i1.ytimg.com/vi/8V3MoI5EgDE/mqdefault.jpg", 7_251),
    ];

    let mut page = Page::new("youtube-2013");
    page.push(
        Object::new("http://www.youtube.com/", 14_229)
            .with_urgency(urgency(DOCUMENT))
            .with_critical(true),
    );
    let sub = |(name, size): (&str, u64), level: u8, critical: bool| {
        Object::new(name, size)
            .with_urgency(urgency(level))
            .with_critical(critical)
            .with_start(after_document())
    };
    for css in CSS {
        page.push(sub(css, STYLESHEET, true));
    }
    for js in JS {
        page.push(sub(js, SCRIPT, true));
    }
    for image in IMAGES {
        page.push(sub(image, IMAGE, false));
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn youtube_has_the_papers_composition() {
        let page = youtube_2013();
        assert_eq!(page.objects.len(), 25);
        assert_eq!(page.critical_count(), 5);
        let ext = |suffix: &str| {
            page.objects
                .iter()
                .filter(|o| o.name.ends_with(suffix))
                .count()
        };
        assert_eq!(ext(".css"), 2);
        assert_eq!(ext(".js"), 2);
        assert_eq!(ext(".jpg") + ext(".png") + ext(".gif"), 20);
        assert_eq!(page.total_bytes(), 14_229 + 59_867 + 83_685 + 160_581);
    }

    #[test]
    fn bing_is_a_document_and_an_image() {
        let page = bing_2013();
        assert_eq!(page.objects.len(), 2);
        assert!(page.objects[0].critical && !page.objects[1].critical);
        assert!(page.objects[0].urgency < page.objects[1].urgency);
    }
}
