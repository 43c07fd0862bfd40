//! RFC 9218 (crate `mpquic-h3-prio`): the `priority` field parser (`Priority::try_from_field`,
//! `from_field`, `merge_response`) and the PRIORITY_UPDATE payload decoder
//! (`PriorityUpdate::decode`) on arbitrary bytes never panic, give urgencies within 0 to 7, and
//! what parses is serialized (`to_field`, `encode_payload`, `encode_frame`) to something that
//! parses back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic_h3_prio::{
    decode_varint, Priority, PriorityField, PriorityUpdate, Urgency, PRIORITY_UPDATE_PUSH,
    PRIORITY_UPDATE_REQUEST,
};

/// PRIORITY_UPDATE's frame types (request and push streams) and one that is neither.
const FRAME_TYPES: [u64; 3] = [PRIORITY_UPDATE_REQUEST, PRIORITY_UPDATE_PUSH, 0];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let lenient = Priority::from_field(rest);
    assert!(lenient.urgency() <= Urgency::LOWEST);
    if let Ok(priority) = Priority::try_from_field(rest) {
        assert_eq!(priority, lenient);
        assert_eq!(Priority::try_from_field(priority.to_field()), Ok(priority));
    }
    let merged = Priority::from_field(rest).merge_response(rest);
    assert!(merged.urgency() <= Urgency::LOWEST);
    let frame_type = FRAME_TYPES[usize::from(selector) % FRAME_TYPES.len()];
    if let Ok(update) = PriorityUpdate::decode(frame_type, rest) {
        assert_eq!(update.stream_id % 4, 0);
        let mut payload = Vec::new();
        update.encode_payload(&mut payload);
        assert_eq!(PriorityUpdate::decode(frame_type, &payload), Ok(update));
        let mut frame = Vec::new();
        update.encode_frame(&mut frame);
        let (ty, used) = decode_varint(&frame).expect("a frame type");
        let (len, used_len) = decode_varint(&frame[used..]).expect("a frame length");
        assert_eq!(ty, PRIORITY_UPDATE_REQUEST);
        assert_eq!(&frame[used + used_len..], &payload[..]);
        assert_eq!(len, payload.len() as u64);
        let _ = update.check_limit(u64::from(selector));
    }
});
