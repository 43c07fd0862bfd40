//! The HAR loader of `mpquic-replay` (`har::parse`) on arbitrary text: a page or a typed
//! error, never a panic; and a page keeps what `Page` promises: at least one object and at
//! most `MAX_OBJECTS`, object 0 the page request, parents before children, the main document
//! an object, sizes within `MAX_OBJECT_BYTES`, and object keys unique, under the page's id,
//! usable as a URI's path and query as they are.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use mpquic_replay::har::{parse, MAX_OBJECTS, MAX_OBJECT_BYTES};
use mpquic_replay::Discovery;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(page) = parse(text, "fuzz") else {
        return;
    };
    assert!(!page.objects.is_empty() && page.objects.len() <= MAX_OBJECTS);
    assert!(page.main_document < page.objects.len());
    assert_eq!(page.objects[0].discovery, Discovery::Document);
    let mut keys = HashSet::new();
    for (i, object) in page.objects.iter().enumerate() {
        if let Discovery::After { parent } = object.discovery {
            assert!(parent < i, "object {i} waits for object {parent}");
        }
        assert!(object.size <= MAX_OBJECT_BYTES);
        assert!(object.key.starts_with("/fuzz/"), "key {:?}", object.key);
        assert!(
            keys.insert(object.key.as_str()),
            "key {:?} twice",
            object.key
        );
        let uri: http::Uri = format!("https://localhost{}", object.key)
            .parse()
            .unwrap_or_else(|e| panic!("key {:?} is not a URI path: {e}", object.key));
        assert_eq!(
            uri.path_and_query().map(|p| p.as_str()),
            Some(&object.key[..])
        );
    }
});
