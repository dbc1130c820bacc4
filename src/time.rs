//! The clock, and rendering timestamps without a calendar dependency: Zulip sends
//! `date_joined` as ISO 8601.

/// Milliseconds since the epoch: the writer stamps events with it, and reads that depend on
/// the present (how recently a channel was active) use it too. `apply` never does.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `2024-05-06T07:08:09.123000+00:00` for milliseconds since the epoch (UTC), in the form Zulip
/// uses (microsecond precision, explicit offset).
pub fn iso8601_ms(ms: i64) -> String {
    Iso8601(ms).to_string()
}

/// [`iso8601_ms`] as a `Display` value, to write it without a `String`.
pub struct Iso8601(pub i64);

impl std::fmt::Display for Iso8601 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.0.div_euclid(1000);
        let millis = self.0.rem_euclid(1000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}+00:00",
            rem / 3600,
            (rem % 3600) / 60,
            rem % 60,
            millis * 1000
        )
    }
}

/// Milliseconds since the epoch of an RFC 3339 instant (`2026-11-24T05:00:00Z`,
/// `2026-11-24T06:00:00.250+01:00`); `None` for anything else.
pub fn parse_rfc3339_ms(text: &str) -> Option<i64> {
    let b = text.trim().as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0;
    if b[at] == b'.' {
        let start = at + 1;
        at = start;
        while at < b.len() && b[at].is_ascii_digit() {
            at += 1;
        }
        let digits = b.get(start..at)?;
        if digits.is_empty() {
            return None;
        }
        // Milliseconds from the first three digits, padded.
        for i in 0..3 {
            millis = millis * 10 + digits.get(i).map_or(0, |d| i64::from(d - b'0'));
        }
    }
    let offset_minutes = match b.get(at..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digit = |d: &u8| d.is_ascii_digit().then(|| i64::from(d - b'0'));
            let minutes = (digit(h1)? * 10 + digit(h2)?) * 60 + digit(m1)? * 10 + digit(m2)?;
            if *sign == b'-' {
                -minutes
            } else {
                minutes
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month as u32, day as u32);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(secs * 1000 + millis)
}

/// Milliseconds since the epoch of an ISO 8601 date or date and time, as Zulip's `anchor_date`
/// takes them: a date alone is midnight UTC (`2005-04-18`); a time has minutes and may have
/// seconds and a fraction (`2005-04-18T12:34`, `2005-04-18 12:34:56.5`); a time without an
/// offset is UTC; an offset is `Z`, `+05:30`, `+0530` or `+05`. `None` for anything else.
pub fn parse_iso8601_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    if !text.is_ascii() {
        return None;
    }
    if text.len() == 10 {
        return parse_rfc3339_ms(&format!("{text}T00:00:00Z"));
    }
    if !matches!(text.as_bytes().get(10)?, b'T' | b't' | b' ') {
        return None;
    }
    let (date, rest) = (text.get(..10)?, text.get(11..)?);
    // The offset starts at its sign or `Z`, after the hours and minutes.
    let zone_at = rest
        .get(5..)?
        .find(['Z', 'z', '+', '-'])
        .map_or(rest.len(), |at| at + 5);
    let (clock, zone) = rest.split_at(zone_at);
    let clock = match clock.len() {
        5 => format!("{clock}:00"),
        _ => clock.to_owned(),
    };
    let zone = match zone.len() {
        0 => "Z".to_owned(),
        3 => format!("{zone}:00"),
        5 if !zone.contains(':') => format!("{}:{}", &zone[..3], &zone[3..]),
        _ => zone.to_owned(),
    };
    parse_rfc3339_ms(&format!("{date}T{clock}{zone}"))
}

/// A proleptic Gregorian date to days since 1970-01-01 (the inverse of `civil_from_days`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), using 400-year eras.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_and_rejects_junk() {
        for ms in [0, 951_782_400_000, 1_795_495_255_123, -86_400_000] {
            assert_eq!(parse_rfc3339_ms(&iso8601_ms(ms)), Some(ms), "{ms}");
        }
        assert_eq!(parse_rfc3339_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:01.5Z"), Some(1500));
        for junk in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-11-24T00:00:00",
            "2026-11-24T00:00:00+0100",
        ] {
            assert_eq!(parse_rfc3339_ms(junk), None, "{junk}");
        }
    }

    #[test]
    fn iso8601_dates_and_times_as_zulips_anchor_date_takes_them() {
        let noon = parse_rfc3339_ms("2005-04-18T12:34:56Z");
        for text in [
            "2005-04-18T12:34:56Z",
            "2005-04-18T12:34:56",
            "2005-04-18 12:34:56",
            "2005-04-18T12:34:56+00:00",
            "2005-04-18T18:04:56+05:30",
            "2005-04-18T18:04:56+0530",
            "2005-04-18T04:34:56-08",
            " 2005-04-18t12:34:56z ",
        ] {
            assert_eq!(parse_iso8601_ms(text), noon, "{text}");
        }
        assert_eq!(
            parse_iso8601_ms("2005-04-18"),
            parse_rfc3339_ms("2005-04-18T00:00:00Z")
        );
        assert_eq!(
            parse_iso8601_ms("2005-04-18T00:01Z"),
            parse_rfc3339_ms("2005-04-18T00:01:00Z")
        );
        assert_eq!(
            parse_iso8601_ms("2005-04-18T00:00:00.250"),
            parse_rfc3339_ms("2005-04-18T00:00:00.250Z")
        );
        for junk in [
            "",
            "not-a-date",
            "2005-13-01",
            "2005-04-18T25:00Z",
            "2005-04-18T12",
            "2005-04-18X12:34",
            "2005-04-18T12:34+5",
            "2005-04-18T12:34:56+05:30:00",
            "２００５-04-18",
            "2005-04-18T12:34:5é",
        ] {
            assert_eq!(parse_iso8601_ms(junk), None, "{junk}");
        }
    }

    #[test]
    fn known_instants() {
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(
            iso8601_ms(951_782_400_000),
            "2000-02-29T00:00:00.000000+00:00"
        );
        assert_eq!(
            iso8601_ms(1_571_557_853_728),
            "2019-10-20T07:50:53.728000+00:00"
        );
        assert_eq!(iso8601_ms(-1), "1969-12-31T23:59:59.999000+00:00");
    }
}
