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
    /// Password checks one address may have in flight at once (0: no bound).
    pub password_checks_per_address: usize,
}

/// Password-reset emails per address: Zulip's `password_reset_form_by_email` (two an hour).
const PASSWORD_RESETS: Rule = Rule {
    window: Duration::from_secs(3600),
    max: 2,
};

/// Wrong two-factor codes per person: ten in fifteen minutes (three codes of a million are
/// right at any time, so a guesser's odds stay below one in 30,000 per window).
const TWO_FACTOR_FAILURES: Rule = Rule {
    window: Duration::from_secs(900),
    max: 10,
};

impl Default for Limits {
    /// Zulip's `DEFAULT_RATE_LIMITING_RULES`.
    fn default() -> Limits {
        Limits {
            per_user: Rule {
                window: Duration::from_secs(60),
                max: crate::config::DEFAULT_REQUESTS_PER_USER,
            },
            per_ip: Rule {
                window: Duration::from_secs(60),
                max: crate::config::DEFAULT_REQUESTS_PER_IP,
            },
            failed_logins: Rule {
                window: Duration::from_secs(1800),
                max: crate::config::DEFAULT_FAILED_LOGINS,
            },
            password_checks_per_address: PASSWORD_CHECKS_PER_ADDRESS,
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
            password_checks_per_address: 0,
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
    /// Password-reset emails to an address (lowercased).
    PasswordReset(String),
    /// Sign-up emails to an address (lowercased).
    SignUp(String),
    /// A person's wrong two-factor codes.
    TwoFactor(u64),
    /// Confirmation emails for a person's new address.
    EmailChange(u64),
}

/// A key's kind, for the refusal counter.
#[derive(Clone, Copy)]
enum KeyKind {
    User,
    Ip,
    Login,
    PasswordReset,
    TwoFactor,
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
        Self::rule_of(&self.limits, key)
    }

    fn rule_of(limits: &Limits, key: &Key) -> Rule {
        match key {
            Key::User(_) => limits.per_user,
            Key::Ip(_) => limits.per_ip,
            Key::Login(_) => limits.failed_logins,
            Key::PasswordReset(_) | Key::SignUp(_) | Key::EmailChange(_) => PASSWORD_RESETS,
            Key::TwoFactor(_) => TWO_FACTOR_FAILURES,
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
        let key_kind = match &key {
            Key::User(_) => KeyKind::User,
            Key::Ip(_) => KeyKind::Ip,
            Key::Login(_) => KeyKind::Login,
            Key::PasswordReset(_) | Key::SignUp(_) | Key::EmailChange(_) => KeyKind::PasswordReset,
            Key::TwoFactor(_) => KeyKind::TwoFactor,
        };
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
            if count {
                let limit = match key_kind {
                    KeyKind::User => "user",
                    KeyKind::Ip => "ip",
                    KeyKind::Login => "login",
                    KeyKind::PasswordReset => "password_reset",
                    KeyKind::TwoFactor => "two_factor",
                };
                crate::metrics::get()
                    .rate_limited
                    .with_label_values(&[limit])
                    .inc();
            }
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

    /// Takes back the newest request counted under `key`: a login attempt is counted before
    /// its password is checked (so that a burst of parallel guesses is counted in full before
    /// any of them is checked), and released when the password was right.
    pub fn release(&self, key: &Key) {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(times) = buckets.get_mut(key) {
            times.pop_back();
        }
    }

    /// Drops keys with nothing inside their window (called every minute).
    pub fn sweep(&self) {
        let now = Instant::now();
        let limits = self.limits;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        buckets.retain(|key, times| {
            let window = Self::rule_of(&limits, key).window;
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

/// Password checks that one address may have in flight at once, by default.
pub const PASSWORD_CHECKS_PER_ADDRESS: usize = crate::config::DEFAULT_PASSWORD_CHECKS_PER_ADDRESS;

/// Bounds the password-hashing work (argon2id: 19 MiB and tens of milliseconds each) that
/// requests can cause: at most one hash per core runs at a time, on threads of its own (one
/// per core, started with the server: the others wait their turn), and one address may have
/// at most `per_address` checks in flight ([`PASSWORD_CHECKS_PER_ADDRESS`] by default; more
/// are refused with `RATE_LIMIT_HIT`; 0 is no bound). A hash's 19 MiB go back to the system
/// when it is done (`server::tune_allocator`), so creating many people does not leave the
/// server larger.
#[derive(Debug)]
pub struct PasswordWork {
    cores: tokio::sync::Semaphore,
    threads: std::sync::mpsc::Sender<PasswordJob>,
    per_address: usize,
    in_flight: Mutex<HashMap<IpAddr, usize>>,
}

type PasswordJob = Box<dyn FnOnce() + Send>;

/// Starts `count` threads that run password work until the sender is dropped.
fn password_threads(count: usize) -> std::sync::mpsc::Sender<PasswordJob> {
    let (tx, rx) = std::sync::mpsc::channel::<PasswordJob>();
    let rx = std::sync::Arc::new(Mutex::new(rx));
    for n in 0..count {
        let rx = rx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("chronicle-password-{n}"))
            .spawn(move || loop {
                let job = match rx.lock().unwrap_or_else(|p| p.into_inner()).recv() {
                    Ok(job) => job,
                    Err(_) => return,
                };
                // A panic is the caller's error (its answer is dropped); the thread goes on.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "a password thread did not start");
        }
    }
    tx
}

impl Default for PasswordWork {
    fn default() -> PasswordWork {
        PasswordWork::new(PASSWORD_CHECKS_PER_ADDRESS)
    }
}

/// One address's place among the checks in flight, given back when dropped.
struct InFlight<'a> {
    work: &'a PasswordWork,
    ip: IpAddr,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut in_flight = self
            .work
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(count) = in_flight.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                in_flight.remove(&self.ip);
            }
        }
    }
}

impl PasswordWork {
    pub fn new(per_address: usize) -> PasswordWork {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        PasswordWork {
            cores: tokio::sync::Semaphore::new(cores),
            threads: password_threads(cores),
            per_address,
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `work` (a hash or a check) on the blocking pool within the bounds; `ip` is the
    /// client's address when the request came from outside (`None`: no per-address bound).
    pub async fn run<T: Send + 'static>(
        &self,
        ip: Option<IpAddr>,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let _slot = match ip.filter(|_| self.per_address > 0) {
            None => None,
            Some(ip) => {
                let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
                let count = in_flight.entry(ip).or_insert(0);
                if *count >= self.per_address {
                    crate::metrics::get()
                        .rate_limited
                        .with_label_values(&["password_checks_per_address"])
                        .inc();
                    return Err(limited(Duration::from_secs(1)));
                }
                *count += 1;
                Some(InFlight { work: self, ip })
            }
        };
        let _core = self
            .cores
            .acquire()
            .await
            .map_err(|e| ApiError::internal(format!("password work: {e}")))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: PasswordJob = Box::new(move || {
            let _ = tx.send(work());
        });
        self.threads
            .send(job)
            .map_err(|_| ApiError::internal("password work: no thread takes it"))?;
        rx.await
            .map_err(|_| ApiError::internal("password work: it panicked"))
    }

    /// Addresses with checks in flight.
    pub fn addresses_in_flight(&self) -> usize {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
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
            password_checks_per_address: 2,
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
        // Other keys are untouched; peeking counts nothing; a release takes one back.
        assert!(l.hit(Key::User(2)).is_ok());
        assert!(l.peek(Key::Login("a@b".into())).is_ok());
        l.release(&Key::User(1));
        assert!(l.hit(Key::User(1)).is_ok());
        assert!(l.hit(Key::User(1)).is_err());
        std::thread::sleep(Duration::from_millis(220));
        assert!(l.hit(Key::User(1)).is_ok());
        l.sweep();
        assert_eq!(l.len(), 1, "idle keys are swept, busy ones kept");
    }

    #[tokio::test]
    async fn one_address_has_at_most_two_password_checks_in_flight() {
        let work = std::sync::Arc::new(PasswordWork::default());
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Arc::new(Mutex::new(wait));
        let mut running = Vec::new();
        let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
        for _ in 0..PASSWORD_CHECKS_PER_ADDRESS {
            let (work, wait, started_tx) = (work.clone(), wait.clone(), started_tx.clone());
            running.push(tokio::spawn(async move {
                work.run(Some(ip), move || {
                    let _ = started_tx.send(());
                    let _ = wait.lock().unwrap().recv();
                })
                .await
            }));
        }
        // Once both are in flight (one may still wait for a core), a third is refused, and
        // another address is not.
        started.recv().await.unwrap();
        let refused = work.run(Some(ip), || ()).await.unwrap_err();
        assert_eq!(refused.code(), Some(ErrorCode::RateLimitHit));
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        let (work2, go2) = (work.clone(), go.clone());
        let other_done =
            tokio::spawn(async move { work2.run(Some(other), move || drop(go2)).await });
        for _ in 0..PASSWORD_CHECKS_PER_ADDRESS {
            go.send(()).unwrap();
        }
        for r in running {
            r.await.unwrap().unwrap();
        }
        other_done.await.unwrap().unwrap();
        assert_eq!(work.addresses_in_flight(), 0);
        assert!(work.run(Some(ip), || 1).await.is_ok());
    }

    #[test]
    fn zero_means_no_limit() {
        let l = limiter(0, 60_000);
        for _ in 0..1000 {
            assert_eq!(l.hit(Key::User(1)).unwrap(), None);
        }
    }
}
