//! The service's clock, injectable so tests can move time: report expiry
//! after 30 days, upload expiry after 24 hours, rate-limit refill, monthly
//! credit periods and webhook backoff all read it.

use std::sync::atomic::{AtomicI64, Ordering};

/// Where the service reads the time.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
    /// Seconds since the Unix epoch.
    fn now(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }
}

/// The system clock, optionally shifted (tests move it forward).
#[derive(Debug, Default)]
pub struct SystemClock {
    offset_ms: AtomicI64,
}

impl SystemClock {
    /// The real time.
    pub fn new() -> SystemClock {
        SystemClock::default()
    }
    /// Moves this clock forward by `secs` seconds (tests).
    pub fn advance(&self, secs: i64) {
        self.offset_ms.fetch_add(secs * 1000, Ordering::SeqCst);
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        real + self.offset_ms.load(Ordering::SeqCst)
    }
}

/// Unix seconds as RFC 3339 UTC (`2026-11-22T05:37:02Z`).
pub fn rfc3339(secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

/// The start of the monthly period containing `now` for an account created
/// at `created`: the same day of the month and time of day as the creation,
/// clamped to the month's last day (an account made on 31 January renews on
/// 28 or 29 February).
pub fn period_start(created: i64, now: i64) -> i64 {
    use time::OffsetDateTime;
    let Ok(c) = OffsetDateTime::from_unix_timestamp(created) else { return created };
    let Ok(n) = OffsetDateTime::from_unix_timestamp(now) else { return created };
    if now <= created {
        return created;
    }
    let nth = |k: i32| -> Option<OffsetDateTime> {
        let months = c.year() * 12 + (c.month() as i32 - 1) + k;
        let (y, m) = (months.div_euclid(12), months.rem_euclid(12) + 1);
        let month = time::Month::try_from(m as u8).ok()?;
        let last = time::util::days_in_month(month, y);
        let date = time::Date::from_calendar_date(y, month, c.day().min(last)).ok()?;
        Some(date.with_time(c.time()).assume_utc())
    };
    // Months elapsed, give or take one; then step to the exact boundary.
    let mut k = (n.year() - c.year()) * 12 + (n.month() as i32 - c.month() as i32);
    k = k.max(0);
    while k > 0 && nth(k).is_none_or(|t| t > n) {
        k -= 1;
    }
    while nth(k + 1).is_some_and(|t| t <= n) {
        k += 1;
    }
    nth(k).map(|t| t.unix_timestamp()).unwrap_or(created)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> i64 {
        time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap().unix_timestamp()
    }

    #[test]
    fn periods_are_calendar_months_from_creation() {
        let c = at("2026-01-31T10:00:00Z");
        assert_eq!(period_start(c, at("2026-01-31T10:00:00Z")), c);
        assert_eq!(period_start(c, at("2026-02-27T23:00:00Z")), c);
        assert_eq!(period_start(c, at("2026-02-28T10:00:00Z")), at("2026-02-28T10:00:00Z"));
        assert_eq!(period_start(c, at("2026-03-30T09:59:59Z")), at("2026-02-28T10:00:00Z"));
        assert_eq!(period_start(c, at("2026-03-31T10:00:00Z")), at("2026-03-31T10:00:00Z"));
        assert_eq!(period_start(c, at("2027-02-01T00:00:00Z")), at("2027-01-31T10:00:00Z"));
        assert_eq!(rfc3339(c), "2026-01-31T10:00:00Z");
    }

    #[test]
    fn the_clock_moves() {
        let c = SystemClock::new();
        let a = c.now();
        c.advance(86_400);
        assert!(c.now() - a >= 86_400);
    }
}
