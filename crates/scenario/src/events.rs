//! Timed events on a link: path down and up, rate and delay changes, at times since the link's
//! start, written as in `cargo xtask testbed`: `2s down`, `3.5s up`, `4s rate 5mbit`,
//! `5s delay 30ms`.

use std::fmt;
use std::time::Duration;

use crate::error::LinkError;

/// The fastest rate a link accepts: 100 Gbit/s.
pub const MAX_RATE_BPS: u64 = 100_000_000_000;

/// The longest one-way delay a link accepts: 60 s.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// What happens to a link at an event's time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EventAction {
    /// The path goes down: every packet arriving from now on is dropped.
    Down,
    /// The path comes back up.
    Up,
    /// Packets arriving from now on are serialized at this rate (bit/s); on a trace-driven link it
    /// replaces the trace.
    Rate(u64),
    /// Packets arriving from now on see this one-way propagation delay.
    Delay(Duration),
}

/// An [`EventAction`] at a time since the link's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedEvent {
    /// When it takes effect, since the link's start.
    pub at: Duration,
    /// What happens.
    pub action: EventAction,
}

impl TimedEvent {
    /// Parses "2s down", "3.5s up", "4s rate 5mbit" (kbit, mbit, gbit, bit), "5s delay 30ms"
    /// (ms, us, s). Times take the same units as delays; numbers may have a decimal fraction;
    /// words are case-insensitive. Errors carry index 0 (the caller knows the list position).
    pub fn parse(text: &str) -> Result<TimedEvent, LinkError> {
        let err = |reason: String| LinkError::event(0, format!("{text:?}: {reason}"));
        let mut words = text.split_whitespace();
        let (Some(at), Some(action)) = (words.next(), words.next()) else {
            return Err(err(
                "expected \"TIME down|up\", \"TIME rate RATE\" or \"TIME delay DELAY\"".into(),
            ));
        };
        let at = parse_duration(at).map_err(|reason| err(format!("time: {reason}")))?;
        let arg = words.next();
        let action = match (action.to_ascii_lowercase().as_str(), arg) {
            ("down", None) => EventAction::Down,
            ("up", None) => EventAction::Up,
            ("rate", Some(rate)) => {
                let bps = parse_rate(rate).map_err(|reason| err(format!("rate: {reason}")))?;
                check_rate(bps).map_err(err)?;
                EventAction::Rate(bps)
            }
            ("delay", Some(delay)) => {
                let delay =
                    parse_duration(delay).map_err(|reason| err(format!("delay: {reason}")))?;
                check_delay(delay).map_err(err)?;
                EventAction::Delay(delay)
            }
            ("down" | "up", Some(extra)) => {
                return Err(err(format!("unexpected {extra:?} after {action:?}")))
            }
            ("rate" | "delay", None) => return Err(err(format!("{action:?} needs a value"))),
            (other, _) => {
                return Err(err(format!(
                    "unknown action {other:?} (expected down, up, rate or delay)"
                )))
            }
        };
        if let Some(extra) = words.next() {
            return Err(err(format!("unexpected {extra:?} at the end")));
        }
        Ok(TimedEvent { at, action })
    }
}

impl fmt::Display for TimedEvent {
    /// The form [`TimedEvent::parse`] reads, with times and delays in microseconds when not whole
    /// milliseconds: `2000ms down`, `4000ms rate 5000000bit`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_duration(f, self.at)?;
        match self.action {
            EventAction::Down => f.write_str(" down"),
            EventAction::Up => f.write_str(" up"),
            EventAction::Rate(bps) => write!(f, " rate {bps}bit"),
            EventAction::Delay(d) => {
                f.write_str(" delay ")?;
                write_duration(f, d)
            }
        }
    }
}

fn write_duration(f: &mut fmt::Formatter<'_>, d: Duration) -> fmt::Result {
    let us = d.as_micros();
    if us.is_multiple_of(1000) {
        write!(f, "{}ms", us / 1000)
    } else {
        write!(f, "{us}us")
    }
}

/// The problem with a rate, if any: 0 or above [`MAX_RATE_BPS`].
pub(crate) fn check_rate(bps: u64) -> Result<(), String> {
    if bps == 0 {
        Err("rate is 0 bit/s; it must be > 0".into())
    } else if bps > MAX_RATE_BPS {
        Err(format!(
            "rate {bps} bit/s is above the 100 Gbit/s the emulator accepts"
        ))
    } else {
        Ok(())
    }
}

/// The problem with a one-way delay, if any: above [`MAX_DELAY`].
pub(crate) fn check_delay(delay: Duration) -> Result<(), String> {
    if delay > MAX_DELAY {
        Err(format!(
            "delay {delay:?} is above the {MAX_DELAY:?} the emulator accepts"
        ))
    } else {
        Ok(())
    }
}

/// Splits `12.5mbit` into `("12.5", "mbit")`.
fn split_unit(text: &str) -> (&str, &str) {
    let number = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    (number, &text[number.len()..])
}

/// `number * scale`, truncated, for a non-negative decimal `number` ("3", "3.5", ".5", "3.");
/// exact (no floating point), `None` on anything else or overflow of u128.
fn scaled_decimal(number: &str, scale: u128) -> Option<u128> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) {
        return None;
    }
    let int_value: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut value = int_value.checked_mul(scale)?;
    let mut unit = scale;
    for b in frac.bytes() {
        unit /= 10;
        if unit == 0 {
            break;
        }
        value = value.checked_add(u128::from(b - b'0') * unit)?;
    }
    Some(value)
}

/// Parses a duration: a non-negative decimal number and a unit: `s`, `ms`, `us`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = split_unit(text);
    let scale: u128 = match unit.to_ascii_lowercase().as_str() {
        "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "us" => 1_000,
        "" => return Err(format!("{text:?} has no unit (s, ms or us)")),
        other => return Err(format!("unknown unit {other:?} (expected s, ms or us)")),
    };
    let nanos = scaled_decimal(number, scale)
        .ok_or_else(|| format!("{number:?} is not a non-negative number (or is out of range)"))?;
    let secs =
        u64::try_from(nanos / 1_000_000_000).map_err(|_| format!("{text:?} is too large"))?;
    // The remainder is below 10^9, so it fits a u32.
    let sub = u32::try_from(nanos % 1_000_000_000).unwrap_or(0);
    Ok(Duration::new(secs, sub))
}

/// Parses a rate: a non-negative decimal number and a unit: `bit`, `kbit`, `mbit`, `gbit`
/// (powers of 1000, bits per second).
pub(crate) fn parse_rate(text: &str) -> Result<u64, String> {
    let (number, unit) = split_unit(text);
    let scale: u128 = match unit.to_ascii_lowercase().as_str() {
        "bit" => 1,
        "kbit" => 1_000,
        "mbit" => 1_000_000,
        "gbit" => 1_000_000_000,
        "" => return Err(format!("{text:?} has no unit (bit, kbit, mbit or gbit)")),
        other => {
            return Err(format!(
                "unknown unit {other:?} (expected bit, kbit, mbit or gbit)"
            ))
        }
    };
    let bps = scaled_decimal(number, scale)
        .ok_or_else(|| format!("{number:?} is not a non-negative number (or is out of range)"))?;
    u64::try_from(bps).map_err(|_| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(at: Duration, action: EventAction) -> TimedEvent {
        TimedEvent { at, action }
    }

    #[test]
    fn parses_the_documented_forms() {
        let s = Duration::from_secs;
        assert_eq!(
            TimedEvent::parse("2s down").unwrap(),
            ev(s(2), EventAction::Down)
        );
        assert_eq!(
            TimedEvent::parse("3.5s up").unwrap(),
            ev(Duration::from_millis(3500), EventAction::Up)
        );
        assert_eq!(
            TimedEvent::parse("4s rate 5mbit").unwrap(),
            ev(s(4), EventAction::Rate(5_000_000))
        );
        assert_eq!(
            TimedEvent::parse("5s delay 30ms").unwrap(),
            ev(s(5), EventAction::Delay(Duration::from_millis(30)))
        );
        assert_eq!(
            TimedEvent::parse("  1500ms   RATE 2.5Gbit ").unwrap(),
            ev(
                Duration::from_millis(1500),
                EventAction::Rate(2_500_000_000)
            )
        );
        assert_eq!(
            TimedEvent::parse("0.000001s delay 250us").unwrap(),
            ev(
                Duration::from_micros(1),
                EventAction::Delay(Duration::from_micros(250))
            )
        );
        assert_eq!(
            TimedEvent::parse("0s rate 64kbit").unwrap(),
            ev(Duration::ZERO, EventAction::Rate(64_000))
        );
        assert_eq!(
            TimedEvent::parse("1s rate 1200bit").unwrap(),
            ev(s(1), EventAction::Rate(1200))
        );
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "2s down",
            "3.5s up",
            "4s rate 5mbit",
            "5s delay 30ms",
            "0.0015s delay 7us",
        ] {
            let e = TimedEvent::parse(text).unwrap();
            assert_eq!(TimedEvent::parse(&e.to_string()).unwrap(), e, "{text}");
        }
    }

    #[test]
    fn rejects_bad_events_with_a_reason() {
        for (text, needle) in [
            ("", "expected"),
            ("2s", "expected"),
            ("down", "expected"),
            ("2 down", "no unit"),
            ("2h down", "unknown unit"),
            ("-2s down", "not a non-negative number"),
            ("2.5.1s down", "not a non-negative number"),
            ("2s sideways", "unknown action"),
            ("2s down now", "unexpected"),
            ("2s rate", "needs a value"),
            ("2s rate 5", "no unit"),
            ("2s rate 5mbps", "unknown unit"),
            ("2s rate 0mbit", "rate is 0"),
            ("2s rate 0.0000001kbit", "rate is 0"),
            ("2s rate 101gbit", "100 Gbit/s"),
            ("2s rate 99999999999999999999999gbit", "too large"),
            ("2s delay 61s", "above"),
            ("2s delay 30", "no unit"),
            ("2s delay 30ms extra", "unexpected"),
            ("99999999999999999999999999999s down", "too large"),
            (
                "999999999999999999999999999999999999999999s down",
                "not a non-negative",
            ),
        ] {
            match TimedEvent::parse(text) {
                Err(LinkError::Event { index: 0, reason }) => {
                    assert!(reason.contains(needle), "{text:?}: {reason}");
                }
                other => panic!("{text:?}: expected an event error, got {other:?}"),
            }
        }
    }
}
