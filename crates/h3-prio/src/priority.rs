//! The `priority` field value of RFC 9218 that carries a [`Priority`] (the type itself is
//! `mpquic_sched`'s, shared by the schedulers, this crate and the transport).
//!
//! RFC 9218 section 4: "For both the Priority header field and the PRIORITY_UPDATE frame, the
//! set of priority parameters is encoded as a Structured Fields Dictionary". The dictionary is
//! parsed with `sfv`'s visitor API, so no map is built and nothing is allocated per field.

use mpquic_sched::{Priority, Urgency};
use sfv::visitor::{DictionaryVisitor, EntryVisitor, Ignored, InnerListVisitor, ItemVisitor};
use sfv::{BareItemFromInput, KeyRef, Parser, Version};

/// The longest `priority` field value (or PRIORITY_UPDATE Priority Field Value) that is parsed,
/// in bytes. Longer values are treated as malformed, so they give the defaults without being
/// looked at.
///
/// Browsers send a few bytes (`u=0, i` is 6); 1024 leaves room for future parameters and for
/// padding a peer may add, and keeps the work per field small and bounded no matter what a
/// peer sends. RFC 9218 section 12: "The security considerations from \[STRUCTURED-FIELDS\]
/// apply to the processing of priority parameters", and RFC 8941 section 6 lets a parser limit
/// the size of what it accepts.
pub const MAX_FIELD_LEN: usize = 1024;

/// Why a `priority` field value was not used. [`PriorityField::from_field`] turns every one of
/// these into the defaults; [`PriorityField::try_from_field`] reports them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// The value is longer than [`MAX_FIELD_LEN`] bytes; it was not parsed.
    #[error("priority field value of {len} bytes is longer than the {max}-byte limit")]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit, [`MAX_FIELD_LEN`].
        max: usize,
    },
    /// The value is not a Structured Fields Dictionary (RFC 8941 section 4.2.2).
    #[error("priority field value is not a structured-field dictionary: {0}")]
    Malformed(String),
}

/// RFC 9218's `priority` field value for a [`Priority`]: how a request or response header, or a
/// PRIORITY_UPDATE frame, carries one.
pub trait PriorityField: Sized {
    /// Parses a `priority` request header field value (or a PRIORITY_UPDATE Priority Field
    /// Value) the way RFC 9218 says a receiver does, never failing:
    ///
    /// - a value that is not a Structured Fields Dictionary, or is longer than
    ///   [`MAX_FIELD_LEN`], gives the defaults;
    /// - section 4: "unknown priority parameters, priority parameters with out-of-range values,
    ///   or values of unexpected types MUST be ignored", and an ignored or absent parameter
    ///   takes its default while the other one still applies (`u=9, i` is `u=3, i`);
    /// - a key given twice counts with its last value only (RFC 8941 section 4.2.2: "If
    ///   dictionary already contains a key this_key ..., overwrite its value"), so `u=1, u=9`
    ///   is `u=3`: the last `u` is out of range and ignored;
    /// - parameters on a member (`u=1;x=2`) are ignored.
    ///
    /// Fields are parsed as RFC 9651 (which obsoletes RFC 8941 and adds Dates and Display
    /// Strings); either kind of value is of an unexpected type for `u` and `i`.
    fn from_field(value: impl AsRef<[u8]>) -> Self;

    /// Like [`from_field`](Self::from_field), but says when the whole value was unusable
    /// instead of falling back to the defaults. Ignored parameters are not errors (RFC 9218
    /// section 4).
    fn try_from_field(value: impl AsRef<[u8]>) -> Result<Self, FieldError>;

    /// Merges a response's `priority` field into this (the request's) priority, as RFC 9218
    /// section 8 describes for an intermediary: "The absence of a priority parameter in an
    /// HTTP response indicates the server's disinterest in changing the client-provided
    /// value". A parameter the response gives (and that is valid) replaces the request's; a
    /// response field that cannot be parsed changes nothing. "No guidance is provided for
    /// merging priorities"; preferring the server's value is the section's own example.
    fn merge_response(self, response_value: impl AsRef<[u8]>) -> Self;

    /// The field value, e.g. `u=5, i` or `u=3`. The urgency is always written (an empty
    /// `priority` field would carry nothing), `i` only when incremental (the default is
    /// false). [`from_field`](Self::from_field) reads it back unchanged.
    fn to_field(self) -> String;
}

impl PriorityField for Priority {
    fn from_field(value: impl AsRef<[u8]>) -> Self {
        Self::try_from_field(value).unwrap_or_default()
    }

    fn try_from_field(value: impl AsRef<[u8]>) -> Result<Self, FieldError> {
        let params = Params::parse(value.as_ref())?;
        Ok(Self::new(
            params.urgency.unwrap_or_default(),
            params.incremental.unwrap_or(false),
        ))
    }

    fn merge_response(self, response_value: impl AsRef<[u8]>) -> Self {
        match Params::parse(response_value.as_ref()) {
            Ok(params) => Self::new(
                params.urgency.unwrap_or(self.urgency()),
                params.incremental.unwrap_or(self.incremental()),
            ),
            Err(_) => self,
        }
    }

    fn to_field(self) -> String {
        self.to_string()
    }
}

/// The parameters a field gives, each `None` when absent or ignored.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Params {
    urgency: Option<Urgency>,
    incremental: Option<bool>,
}

impl Params {
    fn parse(value: &[u8]) -> Result<Self, FieldError> {
        if value.len() > MAX_FIELD_LEN {
            return Err(FieldError::TooLong {
                len: value.len(),
                max: MAX_FIELD_LEN,
            });
        }
        let mut params = Params::default();
        Parser::new(value)
            .with_version(Version::Rfc9651)
            .parse_dictionary_with_visitor(&mut params)
            .map_err(|e| FieldError::Malformed(e.to_string()))?;
        Ok(params)
    }
}

/// One member of the dictionary that matters: where its value goes.
enum Param<'a> {
    Urgency(&'a mut Option<Urgency>),
    Incremental(&'a mut Option<bool>),
}

impl Param<'_> {
    /// A member whose value is ignored (wrong type or out of range). Because the last
    /// occurrence of a key is the one that counts, an ignored value also undoes an earlier
    /// valid one for the same key.
    fn ignore(self) {
        match self {
            Param::Urgency(u) => *u = None,
            Param::Incremental(i) => *i = None,
        }
    }
}

impl<'de> DictionaryVisitor<'de> for &mut Params {
    type Out = ();
    type Error = std::convert::Infallible;

    fn entry(&mut self, key: &'de KeyRef) -> Result<impl EntryVisitor<'de>, Self::Error> {
        Ok(match key.as_str() {
            "u" => Some(Param::Urgency(&mut self.urgency)),
            "i" => Some(Param::Incremental(&mut self.incremental)),
            // RFC 9218 section 4: "unknown priority parameters ... MUST be ignored".
            _ => None,
        })
    }

    fn finish(self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl<'de> EntryVisitor<'de> for Param<'_> {
    type Error = std::convert::Infallible;

    fn item(self) -> Result<impl ItemVisitor<'de>, Self::Error> {
        Ok(self)
    }

    fn inner_list(self) -> Result<impl InnerListVisitor<'de>, Self::Error> {
        // An inner list is a "value of unexpected type".
        self.ignore();
        Ok(Ignored)
    }
}

impl<'de> ItemVisitor<'de> for Param<'_> {
    type Out = ();
    type Error = std::convert::Infallible;

    fn bare_item(
        self,
        item: BareItemFromInput<'de>,
    ) -> Result<impl sfv::visitor::ParameterVisitor<'de, Out = ()>, Self::Error> {
        match self {
            // RFC 9218 section 4.1: "The value is encoded as an sf-integer."
            Param::Urgency(u) => {
                *u = item
                    .as_integer()
                    .and_then(|v| u8::try_from(i64::from(v)).ok())
                    .and_then(|v| Urgency::new(v).ok());
            }
            // Section 4.2: "The incremental (`i`) parameter takes an sf-boolean as the value".
            Param::Incremental(i) => *i = item.as_boolean(),
        }
        // Neither parameter defines parameters of its own; any given are ignored.
        Ok(Ignored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(u: u8, i: bool) -> Priority {
        Priority::new(Urgency::new(u).unwrap(), i)
    }

    /// Every example of RFC 9218 that shows a field value.
    #[test]
    fn rfc9218_examples() {
        // Section 4.1: a CSS file requested with `priority = u=0`.
        assert_eq!(Priority::from_field("u=0"), p(0, false));
        // Section 4.2: a JPEG file with `priority = u=5, i`.
        assert_eq!(Priority::from_field("u=5, i"), p(5, true));
        // Section 4: a request without the parameters gets the defaults.
        assert_eq!(Priority::from_field(""), Priority::DEFAULT);
        assert_eq!(Priority::DEFAULT, p(3, false));
        // Section 6: a prefetch at `u=7`, reprioritized to `u=0`.
        assert_eq!(Priority::from_field("u=7"), p(7, false));
        // Section 8: request `u=5, i`, response `u=1`: urgency 1, incremental stays true.
        let merged = Priority::from_field("u=5, i").merge_response("u=1");
        assert_eq!(merged, p(1, true));
    }

    #[test]
    fn merging_keeps_what_the_response_leaves_out_or_gets_wrong() {
        let request = p(5, true);
        assert_eq!(request.merge_response(""), request);
        assert_eq!(request.merge_response("i=?0"), p(5, false));
        assert_eq!(request.merge_response("u=9"), request);
        assert_eq!(request.merge_response("u=\"1\", i=?0"), p(5, false));
        assert_eq!(request.merge_response("u=1,,"), request);
    }

    #[test]
    fn out_of_range_and_wrongly_typed_parameters_take_their_defaults() {
        assert_eq!(Priority::from_field("u=9"), Priority::DEFAULT);
        assert_eq!(Priority::from_field("u=8, i"), p(3, true));
        assert_eq!(Priority::from_field("u=-1, i"), p(3, true));
        assert_eq!(Priority::from_field("u=a, i"), p(3, true));
        assert_eq!(Priority::from_field("u=\"1\", i"), p(3, true));
        assert_eq!(Priority::from_field("u=1.0, i"), p(3, true));
        assert_eq!(Priority::from_field("u=?1, i"), p(3, true));
        assert_eq!(Priority::from_field("u=(1 2), i"), p(3, true));
        assert_eq!(Priority::from_field("u=:AQI=:, i"), p(3, true));
        assert_eq!(Priority::from_field("u=@1659578233, i"), p(3, true));
        assert_eq!(Priority::from_field("u=999999999999999, i"), p(3, true));
        assert_eq!(Priority::from_field("u=2, i=1"), p(2, false));
        assert_eq!(Priority::from_field("u=2, i=?2"), Priority::DEFAULT); // not a boolean: malformed
        assert_eq!(Priority::from_field("u=2, i=()"), p(2, false));
        assert_eq!(Priority::from_field("u=2, i=tok"), p(2, false));
    }

    #[test]
    fn unknown_keys_and_member_parameters_are_ignored() {
        assert_eq!(Priority::from_field("x;a, u=5, i"), p(5, true));
        assert_eq!(Priority::from_field("u=5;x, i;y=3"), p(5, true));
        assert_eq!(Priority::from_field("visible, u=1, foo=(a b)"), p(1, false));
        assert_eq!(Priority::from_field("i=?0"), Priority::DEFAULT);
        assert_eq!(Priority::from_field("i"), p(3, true));
        assert_eq!(Priority::from_field("i=?1"), p(3, true));
    }

    /// RFC 8941 section 4.2.2: the last occurrence of a key wins, even when it is invalid.
    #[test]
    fn duplicate_keys_keep_the_last_value() {
        assert_eq!(Priority::from_field("u=1, u=6"), p(6, false));
        assert_eq!(Priority::from_field("u=6, i, u=5, i=?0"), p(5, false));
        assert_eq!(Priority::from_field("u=1, u=9"), Priority::DEFAULT);
        assert_eq!(Priority::from_field("u=1, u=a"), Priority::DEFAULT);
        assert_eq!(Priority::from_field("i, i=(), u=2"), p(2, false));
        assert_eq!(Priority::from_field("u=9, u=2"), p(2, false));
    }

    #[test]
    fn malformed_fields_give_the_defaults() {
        for bad in [
            "u=", "u=1,", ",u=1", "u=1 i", "U=1", "u=1;", "u==1", "u=1, @", "u=0x1", "\u{e9}=1",
            "u=1\n", "u=1, i=?",
        ] {
            assert_eq!(Priority::from_field(bad), Priority::DEFAULT, "{bad:?}");
            assert!(
                matches!(Priority::try_from_field(bad), Err(FieldError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert_eq!(Priority::from_field([0xff, 0xfe]), Priority::DEFAULT);
        // Optional white space around members is allowed; leading and trailing spaces too.
        assert_eq!(Priority::from_field("  u=2 ,\ti  "), p(2, true));
    }

    /// A 10 kB field is refused by its length before any parsing, so it costs nothing, and
    /// gives the defaults even when it starts with a valid urgency.
    #[test]
    fn a_10_kb_field_gives_the_defaults_unparsed() {
        let mut big = String::from("u=1, i");
        while big.len() < 10 * 1024 {
            big.push_str(", x=1");
        }
        assert_eq!(Priority::from_field(&big), Priority::DEFAULT);
        assert_eq!(
            Priority::try_from_field(&big),
            Err(FieldError::TooLong {
                len: big.len(),
                max: MAX_FIELD_LEN
            })
        );
        // Right at the limit it is still parsed; one byte more and it is not.
        let mut edge = String::from("u=1, i");
        while edge.len() < MAX_FIELD_LEN {
            edge.push(' ');
        }
        assert_eq!(edge.len(), MAX_FIELD_LEN);
        assert_eq!(Priority::from_field(&edge), p(1, true));
        edge.push(' ');
        assert_eq!(Priority::from_field(&edge), Priority::DEFAULT);
    }

    #[test]
    fn serialising_and_constructing() {
        assert_eq!(p(5, true).to_field(), "u=5, i");
        assert_eq!(Priority::DEFAULT.to_field(), "u=3");
        assert_eq!(p(0, false).to_string(), "u=0");
        assert!(Urgency::new(8).is_err());
        assert!(Urgency::new(255).is_err());
        for u in 0..=Urgency::LOWEST.get() {
            for i in [false, true] {
                assert_eq!(Priority::from_field(p(u, i).to_field()), p(u, i));
            }
        }
        assert!(p(2, false).with_incremental(true).incremental());
    }
}
