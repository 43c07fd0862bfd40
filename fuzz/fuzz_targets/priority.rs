//! RFC 9218: the `priority` field and PRIORITY_UPDATE payloads parse without panicking, and
//! what parses is written back to something that parses to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic_h3_prio::{Priority, PriorityUpdate, PRIORITY_UPDATE_PUSH, PRIORITY_UPDATE_REQUEST};

/// PRIORITY_UPDATE's frame types (request and push streams) and one that is neither.
const FRAME_TYPES: [u64; 3] = [PRIORITY_UPDATE_REQUEST, PRIORITY_UPDATE_PUSH, 0];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if let Ok(priority) = Priority::try_from_field(rest) {
        assert_eq!(Priority::from_field(priority.to_field()), priority);
    }
    let _ = Priority::from_field(rest).merge_response(rest);
    let frame_type = FRAME_TYPES[usize::from(selector) % FRAME_TYPES.len()];
    if let Ok(update) = PriorityUpdate::decode(frame_type, rest) {
        let mut payload = Vec::new();
        update.encode_payload(&mut payload);
        assert_eq!(PriorityUpdate::decode(frame_type, &payload), Ok(update));
        let _ = update.check_limit(u64::from(selector));
    }
});
