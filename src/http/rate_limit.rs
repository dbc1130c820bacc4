//! Rate limits, Zulip's defaults: 200 requests a minute per user for authenticated API
//! requests, 100 a minute per IP address for unauthenticated ones, and 5 failed password logins
//! per 30 minutes per username. A request over a limit gets 429 `RATE_LIMIT_HIT` with
//! `retry-after` (seconds, in the body and as a `Retry-After` header); every limited API
//! response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`.
//!
//! Each limit is exact over a sliding window: a key keeps the times of its last N counted
//! requests, and a request is allowed when fewer than N fall inside the window. Memory is
//! bounded by N times the keys seen within one window; idle keys are dropped by `sweep`.

use crate::error::{ApiError, ErrorCode};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most `max` in any `window` (`max` 0: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub window: Duration,
    pub max: usize,
}

/// The limits a server enforces.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub per_user: Rule,
    pub per_ip: Rule,
    pub failed_logins: Rule,
}

impl Default for Limits {
    /// Zulip's `DEFAULT_RATE_LIMITING_RULES`.
    fn default() -> Limits {
        Limits {
            per_user: Rule {
                window: Duration::from_secs(60),
                max: 200,
            },
            per_ip: Rule {
                window: Duration::from_secs(60),
                max: 100,
            },
            failed_logins: Rule {
                window: Duration::from_secs(1800),
                max: 5,
            },
        }
    }
}

impl Limits {
    /// No limits at all (the benchmark's load generator).
    pub fn unlimited() -> Limits {
        let off = Rule {
            window: Duration::from_secs(60),
            max: 0,
        };
        Limits {
            per_user: off,
            per_ip: off,
            failed_logins: off,
        }
    }
}

/// What a bucket is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    User(u64),
    Ip(IpAddr),
    /// A username's failed logins (lowercased).
    Login(String),
}

/// Where a key stands after a request: for the `X-RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    pub limit: usize,
    pub remaining: usize,
    /// UNIX seconds at which the window is clear again.
    pub reset: i64,
}

/// Every bucket of a server.
#[derive(Debug)]
pub struct RateLimiter {
    pub limits: Limits,
    buckets: Mutex<HashMap<Key, VecDeque<Instant>>>,
}

impl RateLimiter {
    pub fn new(limits: Limits) -> RateLimiter {
        RateLimiter {
            limits,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn rule(&self, key: &Key) -> Rule {
        match key {
            Key::User(_) => self.limits.per_user,
            Key::Ip(_) => self.limits.per_ip,
            Key::Login(_) => self.limits.failed_logins,
        }
    }

    /// Counts a request under `key` if the limit allows it; else says how long to wait.
    pub fn hit(&self, key: Key) -> Result<Option<Standing>, ApiError> {
        self.check(key, true)
    }

    /// Whether `key` is over its limit now, without counting anything.
    pub fn peek(&self, key: Key) -> Result<(), ApiError> {
        self.check(key, false).map(|_| ())
    }

    fn check(&self, key: Key, count: bool) -> Result<Option<Standing>, ApiError> {
        let rule = self.rule(&key);
        if rule.max == 0 {
            return Ok(None);
        }
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let times = buckets.entry(key).or_default();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= rule.window)
        {
            times.pop_front();
        }
        let unix_now = crate::time::now_ms() / 1000;
        let clears_in = |times: &VecDeque<Instant>| {
            times.front().map_or(Duration::ZERO, |t| {
                rule.window.saturating_sub(now.duration_since(*t))
            })
        };
        if times.len() >= rule.max {
            let wait = clears_in(times);
            return Err(limited(wait));
        }
        if count {
            times.push_back(now);
        }
        Ok(Some(Standing {
            limit: rule.max,
            remaining: rule.max - times.len(),
            reset: unix_now + clears_in(times).as_secs_f64().ceil() as i64,
        }))
    }

    /// Records a failure under `key` (failed logins count only when they fail).
    pub fn record(&self, key: Key) {
        let _ = self.check(key, true);
    }

    /// Drops keys with nothing inside their window (called every minute).
    pub fn sweep(&self) {
        let now = Instant::now();
        let limits = self.limits;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        buckets.retain(|key, times| {
            let window = match key {
                Key::User(_) => limits.per_user.window,
                Key::Ip(_) => limits.per_ip.window,
                Key::Login(_) => limits.failed_logins.window,
            };
            times
                .back()
                .is_some_and(|t| now.duration_since(*t) < window)
        });
    }

    /// Keys currently tracked.
    pub fn len(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Zulip's answer to a request over its limit.
fn limited(wait: Duration) -> ApiError {
    let seconds = (wait.as_secs_f64() * 1000.0).ceil() / 1000.0;
    ApiError::new(ErrorCode::RateLimitHit, "API usage exceeded rate limit")
        .with("retry-after", seconds.max(0.001))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(max: usize, window_ms: u64) -> RateLimiter {
        let rule = Rule {
            window: Duration::from_millis(window_ms),
            max,
        };
        RateLimiter::new(Limits {
            per_user: rule,
            per_ip: rule,
            failed_logins: rule,
        })
    }

    #[test]
    fn a_window_allows_max_then_refuses_until_it_slides() {
        let l = limiter(3, 200);
        for remaining in [2, 1, 0] {
            assert_eq!(l.hit(Key::User(1)).unwrap().unwrap().remaining, remaining);
        }
        let refused = l.hit(Key::User(1)).unwrap_err();
        assert_eq!(refused.code(), Some(ErrorCode::RateLimitHit));
        let wait = refused.body()["retry-after"].as_f64().unwrap();
        assert!(wait > 0.0 && wait <= 0.2, "{wait}");
        // Other keys are untouched; peeking counts nothing.
        assert!(l.hit(Key::User(2)).is_ok());
        assert!(l.peek(Key::Login("a@b".into())).is_ok());
        std::thread::sleep(Duration::from_millis(220));
        assert!(l.hit(Key::User(1)).is_ok());
        l.sweep();
        assert_eq!(l.len(), 1, "idle keys are swept, busy ones kept");
    }

    #[test]
    fn zero_means_no_limit() {
        let l = limiter(0, 60_000);
        for _ in 0..1000 {
            assert_eq!(l.hit(Key::User(1)).unwrap(), None);
        }
    }
}
