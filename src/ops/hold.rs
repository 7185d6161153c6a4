//! `lease hold` and `lease release`: a named owner retains a worktree.
//!
//! # Theory of operation
//! `hold` on a `terminal` record makes it `retained` with a `retention`
//! (owner, reason, until). On an `active` or `interrupted` record the
//! retention is stored and takes effect when the record turns `terminal`
//! (the last launcher's exit makes it `retained`); meanwhile retire and reap
//! hold it `retained`, so a crashed session cannot lose a hold. `release`
//! is `retained -> terminal` and clears the retention (or drops a pending
//! one). Each call adds one audit line (`hold` or `release`) besides the
//! transition it makes; an expired retention is reported, never acted on.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::record::{Owner, Retention, State};
use crate::store::registry::Registry;

/// What `lease hold` was asked to do.
#[derive(Debug, Clone)]
pub struct HoldRequest {
    /// Record id or unique prefix.
    pub id: String,
    /// `--reason`.
    pub reason: String,
    /// `--owner`, else the caller (the policy's default owner).
    pub owner: Option<Owner>,
    /// `--until`, already parsed into RFC 3339 UTC ([`parse_until`]).
    pub until: Option<String>,
}

/// What a hold or release did, for the CLI to render.
#[derive(Debug, Clone, Serialize)]
pub struct HoldReport {
    /// The record id.
    pub id: String,
    /// The worktree's path, if known.
    pub worktree: Option<String>,
    /// The state before.
    pub from: State,
    /// The state after.
    pub state: State,
    /// The retention now recorded (`None` after a release).
    pub retention: Option<Retention>,
    /// True if the retention waits for the record to turn `terminal`.
    pub pending: bool,
    /// The retention this call replaced or cleared, if any.
    pub previous: Option<Retention>,
}

/// The latest `--until`: 9999-12-31T23:59:59Z, the last second RFC 3339
/// can write, as a span from the epoch.
const LATEST_UNTIL: Duration = Duration::from_secs(253_402_300_799);

/// Parses WHEN: RFC 3339 (`2026-03-01T12:00:00Z`, `+02:00` offsets too) or a
/// span from `now` (`7d`, `12h`, `1week 2d`). Returns RFC 3339 UTC seconds.
///
/// # Errors
/// [`Error::Usage`] if it is neither, is zero, or lies in the past.
pub fn parse_until(s: &str, now: SystemTime) -> Result<String> {
    let bad = |why: &str| {
        Error::Usage(format!(
            "`--until {s}`: {why}; give RFC 3339 (2026-03-01T12:00:00Z) or a span (7d, 12h)"
        ))
    };
    let s = s.trim();
    let at = if let Some(t) = parse_rfc3339_offset(s) {
        t
    } else {
        let span = humantime::parse_duration(s).map_err(|_| bad("not a time or a span"))?;
        if span.is_zero() {
            return Err(bad("the span is zero"));
        }
        now.checked_add(span).ok_or_else(|| bad("too far away"))?
    };
    if at <= now {
        return Err(bad("that is in the past"));
    }
    // RFC 3339 has four-digit years: a later time cannot be written (and
    // humantime's formatter panics on one), so it is a usage error.
    if at > SystemTime::UNIX_EPOCH + LATEST_UNTIL {
        return Err(bad("too far away (the latest is 9999-12-31T23:59:59Z)"));
    }
    Ok(humantime::format_rfc3339_seconds(at).to_string())
}

/// Parses RFC 3339 with `Z` or a numeric `±HH:MM` offset (humantime knows only `Z`).
fn parse_rfc3339_offset(s: &str) -> Option<SystemTime> {
    if let Ok(t) = humantime::parse_rfc3339(s) {
        return Some(t);
    }
    let split = s.len().checked_sub(6)?;
    let (local, off) = (s.get(..split)?, s.get(split..)?);
    let sign = match off.as_bytes()[0] {
        b'+' => 1i64,
        b'-' => -1,
        _ => return None,
    };
    let (h, m) = off[1..].split_once(':')?;
    let (h, m): (u64, u64) = (h.parse().ok()?, m.parse().ok()?);
    if h > 23 || m > 59 || !local.contains('T') {
        return None;
    }
    let t = humantime::parse_rfc3339(&format!("{local}Z")).ok()?;
    let off = Duration::from_secs(h * 3600 + m * 60);
    // Local time = UTC + offset, so UTC = local - offset.
    if sign > 0 {
        t.checked_sub(off)
    } else {
        t.checked_add(off)
    }
}

/// Runs `lease hold`.
///
/// # Errors
/// [`Error::Usage`] (exit 2) for a record that is `planned`, `retiring` or
/// `removed`; [`Error::Record`] (exit 3) for a corrupt or newer record;
/// [`Error::Refused`] (exit 1) while a retire runs on it.
pub fn hold(reg: &Registry, req: &HoldRequest) -> Result<HoldReport> {
    let reason = req.reason.trim();
    if reason.is_empty() {
        return Err(Error::Usage("`--reason` must not be empty".into()));
    }
    if reason.len() > crate::model::record::MAX_DETAIL_BYTES {
        return Err(Error::Usage(format!(
            "`--reason` is {} bytes long; the limit is {} (say more in a file and name it)",
            reason.len(),
            crate::model::record::MAX_DETAIL_BYTES
        )));
    }
    let owner = match &req.owner {
        Some(o) => o.clone(),
        None => reg.root().policy().default_owner(crate::ops::caller_name),
    };
    let id = reg.resolve(&req.id)?;
    let _shared = lock_out_retire(reg, &id)?;
    let retention = Retention {
        owner,
        reason: reason.to_string(),
        until: req.until.clone(),
    };
    let report = reg.update(&id, |r| {
        let from = r.state;
        let previous = r.retention.clone();
        let pending = match r.state {
            State::Terminal => {
                r.retention = Some(retention.clone());
                r.set_state(State::Retained)?;
                false
            }
            State::Retained => {
                r.retention = Some(retention.clone());
                false
            }
            // SPEC/Commands: a hold on an active record takes effect when it
            // turns terminal; an interrupted one turns terminal only through a
            // new session, and until then retire and reap hold it `retained`.
            State::Active | State::Interrupted => {
                r.retention = Some(retention.clone());
                true
            }
            State::Planned | State::Retiring | State::Removed => {
                return Err(Error::Usage(format!(
                    "record {} is {}; only a terminal, retained, active or interrupted record can be held",
                    r.id,
                    r.state.name()
                )));
            }
        };
        r.audit(
            "hold",
            vec![],
            vec![
                format!("owner {}:{}", retention.owner.kind, retention.owner.name),
                format!("reason {}", retention.reason),
                format!("until {}", retention.until.as_deref().unwrap_or("-")),
            ],
        );
        Ok(HoldReport {
            id: r.id.clone(),
            worktree: r.worktree.as_ref().map(|w| w.path.clone()),
            from,
            state: r.state,
            retention: r.retention.clone(),
            pending,
            previous,
        })
    })?;
    Ok(report)
}

/// Takes the record's lease shared, without waiting, for as long as the
/// returned file lives. A retire holds the lease exclusively from its lock
/// gate to the removal, and checks the record only before archiving: a hold
/// written in between would be ignored. So a hold is refused while a retire
/// runs, and a retire started during a hold finds the lease busy.
///
/// # Errors
/// [`Error::Refused`] with `retire-in-progress` (exit 1) while a retire holds
/// the lease. A missing or odd lease file does not stop a hold (holding only
/// ever protects); it is then not locked.
fn lock_out_retire(reg: &Registry, id: &str) -> Result<Option<std::fs::File>> {
    let rec = reg.get(id)?;
    let Some(lease) = &rec.lease else {
        return Ok(None);
    };
    let Ok(f) = crate::os::lease::open_checked(lease, rec.uid) else {
        return Ok(None);
    };
    match crate::os::lease::try_shared(&f) {
        Ok(true) => Ok(Some(f)),
        Ok(false) => Err(Error::refused(
            crate::model::reason::HoldReason::RetireInProgress,
            format!("record {id} is being retired right now; nothing was changed"),
        )),
        Err(_) => Ok(None),
    }
}

/// Runs `lease release`: `retained -> terminal`, clearing the retention; on
/// an `active` or `interrupted` record, drops a pending retention.
///
/// # Errors
/// [`Error::Usage`] (exit 2) if the record is not retained and has no pending
/// retention; [`Error::Record`] (exit 3) for a corrupt or newer record.
pub fn release(reg: &Registry, id: &str) -> Result<HoldReport> {
    let id = reg.resolve(id)?;
    let report = reg.update(&id, |r| {
        let from = r.state;
        let previous = r.retention.clone();
        match r.state {
            State::Retained => {
                r.retention = None;
                r.set_state(State::Terminal)?;
            }
            State::Active | State::Interrupted if r.retention.is_some() => {
                r.retention = None;
            }
            _ => {
                return Err(Error::Usage(format!(
                    "record {} is {} and not held; there is nothing to release",
                    r.id,
                    r.state.name()
                )));
            }
        }
        r.audit(
            "release",
            vec![],
            previous
                .iter()
                .map(|p| {
                    format!(
                        "was held by {}:{}: {}",
                        p.owner.kind, p.owner.name, p.reason
                    )
                })
                .collect(),
        );
        Ok(HoldReport {
            id: r.id.clone(),
            worktree: r.worktree.as_ref().map(|w| w.path.clone()),
            from,
            state: r.state,
            retention: None,
            pending: false,
            previous,
        })
    })?;
    Ok(report)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(s: &str) -> SystemTime {
        humantime::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn until_accepts_rfc3339_and_spans() {
        let now = at("2026-01-01T00:00:00Z");
        assert_eq!(parse_until("7d", now).unwrap(), "2026-01-08T00:00:00Z");
        assert_eq!(parse_until("12h", now).unwrap(), "2026-01-01T12:00:00Z");
        assert_eq!(
            parse_until("2026-03-01T12:00:00Z", now).unwrap(),
            "2026-03-01T12:00:00Z"
        );
        assert_eq!(
            parse_until("2026-03-01T12:00:00+02:00", now).unwrap(),
            "2026-03-01T10:00:00Z"
        );
        assert_eq!(
            parse_until("2026-03-01T12:00:00-01:30", now).unwrap(),
            "2026-03-01T13:30:00Z"
        );
    }

    #[test]
    fn until_refuses_the_past_zero_and_nonsense() {
        let now = at("2026-01-01T00:00:00Z");
        for bad in [
            "2025-12-31T23:59:59Z",
            "0s",
            "soon",
            "",
            "2026-03-01T12:00:00+25:00",
        ] {
            assert!(
                matches!(parse_until(bad, now), Err(Error::Usage(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_span_or_time_past_year_9999_is_a_usage_error_not_a_panic() {
        let now = at("2026-01-01T00:00:00Z");
        for far in [
            "999999999999d",
            "300000years",
            "9999-12-31T23:00:00-05:00",
            "18446744073709551615s",
        ] {
            assert!(
                matches!(parse_until(far, now), Err(Error::Usage(_))),
                "{far}"
            );
        }
        assert_eq!(
            parse_until("9999-12-31T23:59:59Z", now).unwrap(),
            "9999-12-31T23:59:59Z",
            "the last second is still allowed"
        );
    }

    #[test]
    fn expiry() {
        let r = Retention {
            owner: Owner::parse("a:b").unwrap(),
            reason: "x".into(),
            until: Some("2026-01-01T00:00:00Z".into()),
        };
        assert!(r.is_expired(at("2026-01-01T00:00:00Z")));
        assert!(!r.is_expired(at("2025-12-31T00:00:00Z")));
        let never = Retention {
            until: None,
            ..r.clone()
        };
        assert!(!never.is_expired(at("2099-01-01T00:00:00Z")));
        let garbled = Retention {
            until: Some("tomorrow".into()),
            ..r
        };
        assert!(
            !garbled.is_expired(at("2099-01-01T00:00:00Z")),
            "unreadable keeps"
        );
    }
}
