//! A response's size from its `content-length` field.

/// The size a response announces in its `content-length` field lines, or `None` when it is
/// unknown: no line, a value that is not `1*DIGIT` (RFC 9110 section 8.6: empty, signed,
/// decimal, hex, with spaces inside, non-ASCII), a number beyond `u64`, or lines that disagree.
///
/// Pass every `content-length` field line's value (a `HeaderValue`, `&str` or `&[u8]`). RFC
/// 9110 section 8.6 lets a recipient accept a repeated value: "a recipient ... MAY either
/// reject the message as invalid or replace that invalid field value with a single instance
/// of the decimal value", for "multiple Content-Length header field lines ... or a list ... all
/// with the same decimal value", so `42, 42` and two lines of `42` are 42, while `42, 43` is
/// unknown. Spaces and tabs around a value are ignored.
pub fn content_length<I, V>(field_values: I) -> Option<u64>
where
    I: IntoIterator<Item = V>,
    V: AsRef<[u8]>,
{
    let mut found: Option<u64> = None;
    for line in field_values {
        for member in line.as_ref().split(|b| *b == b',') {
            let value = parse_digits(trim(member))?;
            match found {
                Some(previous) if previous != value => return None,
                _ => found = Some(value),
            }
        }
    }
    found
}

fn trim(bytes: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !is_ows(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |e| e + 1);
    bytes.get(start..end).unwrap_or_default()
}

fn parse_digits(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(value: &str) -> Option<u64> {
        content_length([value])
    }

    #[test]
    fn valid_lengths() {
        assert_eq!(one("0"), Some(0));
        assert_eq!(one("16681"), Some(16_681));
        assert_eq!(one(" 42\t"), Some(42));
        assert_eq!(one("007"), Some(7));
        assert_eq!(one("18446744073709551615"), Some(u64::MAX));
        assert_eq!(one("42, 42"), Some(42));
        assert_eq!(content_length(["42", "42"]), Some(42));
        assert_eq!(content_length([b"42".as_slice(), b" 42 ,42"]), Some(42));
    }

    #[test]
    fn absent_or_invalid_lengths_are_unknown() {
        assert_eq!(content_length(Vec::<&str>::new()), None);
        for bad in [
            "",
            " ",
            "-1",
            "+5",
            "1.5",
            "1e3",
            "0x10",
            "12 34",
            "bogus",
            "\u{661}",
            "18446744073709551616",
            "99999999999999999999999",
            "42,",
            ",42",
            "42, 43",
        ] {
            assert_eq!(one(bad), None, "{bad:?}");
        }
        assert_eq!(content_length(["42", "43"]), None);
        assert_eq!(content_length(["42", ""]), None);
        assert_eq!(content_length([[0xffu8, b'1']]), None);
    }
}
