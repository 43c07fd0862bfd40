//! Property tests: no input panics, fields round-trip, the parser agrees with a model of
//! RFC 9218 over generated dictionaries, and the update buffer agrees with a model of its bound.

use mpquic_h3_prio::{
    content_length, decode_varint, encode_varint, ChromePriority, Priority, PriorityField,
    PriorityUpdate, PriorityUpdates, ResourceType, Urgency, PRIORITY_UPDATE_PUSH,
    PRIORITY_UPDATE_REQUEST,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let p = Priority::from_field(&bytes);
        prop_assert!(p.urgency() <= Urgency::LOWEST);
        let _ = Priority::try_from_field(&bytes);
        let _ = p.merge_response(&bytes);
        for ty in [PRIORITY_UPDATE_REQUEST, PRIORITY_UPDATE_PUSH, 0, u64::MAX] {
            if let Ok(update) = PriorityUpdate::decode(ty, &bytes) {
                prop_assert_eq!(update.stream_id % 4, 0);
                let _ = update.check_limit(100);
            }
        }
        let _ = content_length([&bytes]);
        let _ = decode_varint(&bytes);
        let text = String::from_utf8_lossy(&bytes);
        let _ = ChromePriority::parse(&text);
        let _ = ResourceType::classify(Some(&text), Some(&text), Some(&text));
        let _ = ResourceType::from_mime(&text);
        let _ = ResourceType::from_path(&text);
    }

    /// Text made of the characters dictionaries are made of hits the parser's paths harder
    /// than random bytes.
    #[test]
    fn dictionary_like_text_never_panics(text in "[uix=,;?()\"0-9 .:@%*-]{0,64}") {
        let p = Priority::from_field(&text);
        prop_assert!(p.urgency() <= Urgency::LOWEST);
    }

    #[test]
    fn fields_round_trip(urgency in 0u8..=7, incremental in any::<bool>()) {
        let p = Priority::new(Urgency::new(urgency).unwrap(), incremental);
        prop_assert_eq!(Priority::from_field(p.to_field()), p);
        prop_assert_eq!(Priority::default().merge_response(p.to_field()), p);
    }

    #[test]
    fn updates_round_trip(stream in 0u64..(1 << 60), urgency in 0u8..=7, incremental in any::<bool>()) {
        let update = PriorityUpdate {
            stream_id: stream * 4,
            priority: Priority::new(Urgency::new(urgency).unwrap(), incremental),
        };
        let mut payload = Vec::new();
        update.encode_payload(&mut payload);
        prop_assert_eq!(PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload), Ok(update));
    }

    #[test]
    fn varints_round_trip(value in 0u64..(1 << 62)) {
        let mut out = Vec::new();
        encode_varint(value, &mut out);
        prop_assert_eq!(decode_varint(&out), Some((value, out.len())));
    }

    /// Well-formed dictionaries of `u`, `i` and unknown keys with values of every type: the
    /// parser gives what RFC 9218 section 4 and RFC 8941's last-value-wins say.
    #[test]
    fn parsing_matches_the_model(members in proptest::collection::vec((0usize..3, 0usize..VALUES.len()), 0..8)) {
        let text = members
            .iter()
            .map(|(k, v)| {
                let key = ["u", "i", "x"][*k];
                match VALUES[*v].0 {
                    "" => key.to_owned(), // bare key: boolean true
                    value => format!("{key}={value}"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let mut urgency = 3;
        let mut incremental = false;
        let mut last_u = None;
        let mut last_i = None;
        for (k, v) in &members {
            match k {
                0 => last_u = Some(VALUES[*v].1),
                1 => last_i = Some(VALUES[*v].2),
                _ => {}
            }
        }
        if let Some(Some(u)) = last_u {
            urgency = u;
        }
        if let Some(Some(i)) = last_i {
            incremental = i;
        }
        prop_assert_eq!(
            Priority::from_field(&text),
            Priority::new(Urgency::new(urgency).unwrap(), incremental),
            "{}", text
        );
    }

    /// The buffer against a model: at most `capacity` entries, one per stream, the newest kept.
    #[test]
    fn the_buffer_matches_its_model(
        capacity in 0usize..6,
        ops in proptest::collection::vec((any::<bool>(), 0u64..10, 0u8..=7), 0..60),
    ) {
        let mut buffer = PriorityUpdates::with_capacity(capacity);
        let mut model: Vec<(u64, u8)> = Vec::new(); // oldest first
        for (insert, stream, urgency) in ops {
            let stream_id = stream * 4;
            if insert {
                let priority = Priority::new(Urgency::new(urgency).unwrap(), false);
                let dropped = buffer.insert(PriorityUpdate { stream_id, priority });
                model.retain(|(id, _)| *id != stream_id);
                let expected = if capacity == 0 {
                    Some(stream_id)
                } else {
                    let out = (model.len() >= capacity).then(|| model.remove(0).0);
                    model.push((stream_id, urgency));
                    out
                };
                prop_assert_eq!(dropped, expected);
            } else {
                let taken = buffer.take(stream_id).map(|p| p.urgency().get());
                let at = model.iter().position(|(id, _)| *id == stream_id);
                prop_assert_eq!(taken, at.map(|at| model.remove(at).1));
            }
            prop_assert!(buffer.len() <= capacity);
            prop_assert_eq!(buffer.len(), model.len());
        }
    }
}

/// Values for the model: the text, the urgency it gives (if valid for `u`) and the flag it
/// gives (if valid for `i`).
const VALUES: [(&str, Option<u8>, Option<bool>); 14] = [
    ("", None, Some(true)),
    ("?0", None, Some(false)),
    ("?1", None, Some(true)),
    ("0", Some(0), None),
    ("5", Some(5), None),
    ("7", Some(7), None),
    ("8", None, None),
    ("-1", None, None),
    ("1.5", None, None),
    ("\"2\"", None, None),
    ("tok", None, None),
    ("(1 2)", None, None),
    ("3;x=1", Some(3), None),
    ("?1;y", None, Some(true)),
];
