//! ISO 8601 date and time stamps, as HAR's `startedDateTime` holds them.

/// Milliseconds since the Unix epoch of an ISO 8601 date and time such as
/// `2013-07-04T15:41:49.145Z` or `2015-08-29T14:43:42.037+00:00`.
pub(crate) fn parse_time_ms(text: &str) -> Option<f64> {
    let (date, rest) = text.split_once('T')?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: i64 = date_parts.next()?.parse().ok()?;
    let day: i64 = date_parts.next()?.parse().ok()?;
    // The time ends where the zone begins: 'Z', '+' or '-'.
    let zone_at = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (time, zone) = rest.split_at(zone_at);
    let mut time_parts = time.splitn(3, ':');
    let hour: f64 = time_parts.next()?.parse().ok()?;
    let minute: f64 = time_parts.next()?.parse().ok()?;
    let second: f64 = time_parts.next().unwrap_or("0").parse().ok()?;
    let offset_minutes = match zone {
        "" | "Z" | "z" => 0.0,
        _ => {
            let sign = if zone.starts_with('-') { -1.0 } else { 1.0 };
            let digits = zone.get(1..)?.replace(':', "");
            let hours: f64 = digits.get(..2)?.parse().ok()?;
            let minutes: f64 = digits
                .get(2..)
                .filter(|m| !m.is_empty())
                .unwrap_or("0")
                .parse()
                .ok()?;
            sign * (hours * 60.0 + minutes)
        }
    };
    // Four-digit years and finite clock fields only: anything else is not a recorded time, and
    // a year near i64's range would overflow the day count.
    let clock_ok = (0.0..24.0).contains(&hour)
        && (0.0..60.0).contains(&minute)
        && (0.0..61.0).contains(&second);
    if !(0..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || !clock_ok
    {
        return None;
    }
    let days = days_from_civil(year, month, day) as f64;
    let seconds = days * 86_400.0 + hour * 3_600.0 + minute * 60.0 + second - offset_minutes * 60.0;
    Some(seconds * 1e3)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_with_zones() {
        assert_eq!(parse_time_ms("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_time_ms("1970-01-02T00:00:01.5Z"), Some(86_401_500.0));
        assert_eq!(
            parse_time_ms("2015-08-29T14:43:42.037+02:00"),
            parse_time_ms("2015-08-29T12:43:42.037Z")
        );
        let a = parse_time_ms("2013-07-04T15:41:49.145Z").unwrap();
        let b = parse_time_ms("2013-07-04T15:41:49.838Z").unwrap();
        assert!((b - a - 693.0).abs() < 1e-6);
        assert_eq!(parse_time_ms("yesterday"), None);
    }

    #[test]
    fn out_of_range_fields_are_not_times() {
        // Found by the `har` fuzz target: this year overflowed the day count.
        assert_eq!(
            parse_time_ms(
                "00000000000000000000000000000000000008951154459378158322-01-01T00:00:00.000Z"
            ),
            None
        );
        assert_eq!(parse_time_ms("10000-01-01T00:00:00Z"), None);
        assert_eq!(parse_time_ms("2020-01-01TNaN:00:00Z"), None);
        assert_eq!(parse_time_ms("2020-01-01T00:inf:00Z"), None);
        assert_eq!(parse_time_ms("2020-01-01T24:00:00Z"), None);
        assert!(
            parse_time_ms("9999-12-31T23:59:60.5Z").is_some(),
            "a leap second"
        );
    }
}
