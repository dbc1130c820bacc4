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
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}+00:00",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        millis * 1000
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), using 400-year eras.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
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
