//! History selection: which items `getItems(limit)` returns.

use super::error::{Result, SessionError, SessionErrorCode};

/// How many of the newest items to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The whole history.
    All,
    /// At most this many of the newest items (0 returns nothing).
    Newest(u64),
}

impl Limit {
    /// Reads a limit given as a JS number. `n <= 0` means "nothing"; a number that is not an
    /// integer (`1.5`, `NaN`, `Infinity`) is an error. `what` names the argument in the message.
    pub fn from_number(n: f64, what: &str) -> Result<Limit> {
        if !n.is_finite() || n.fract() != 0.0 {
            return Err(SessionError::new(
                SessionErrorCode::InvalidLimit,
                format!("{what} must be an integer, got {}", describe_number(n)),
            ));
        }
        if n <= 0.0 {
            return Ok(Limit::Newest(0));
        }
        // Any integer beyond 2^53 is already "more than can exist"; saturate.
        Ok(Limit::Newest(if n >= u64::MAX as f64 {
            u64::MAX
        } else {
            n as u64
        }))
    }

    /// The limit a call uses: an explicit one wins over the session's default, which wins over
    /// "everything".
    pub fn resolve(explicit: Option<Limit>, default: Option<Limit>) -> Limit {
        explicit.or(default).unwrap_or(Limit::All)
    }

    /// Index range `[start, len)` of the items to return from a history of `len` items.
    pub fn window(self, len: u64) -> (u64, u64) {
        match self {
            Limit::All => (0, len),
            Limit::Newest(n) => (len.saturating_sub(n), len),
        }
    }
}

fn describe_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_string()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        n.to_string()
    }
}

/// Session-wide settings, the SDK's `SessionSettings`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionSettings {
    /// Default number of newest items `getItems()` returns when called without a limit.
    pub limit: Option<Limit>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_limits() {
        assert_eq!(Limit::from_number(3.0, "limit"), Ok(Limit::Newest(3)));
        assert_eq!(Limit::from_number(0.0, "limit"), Ok(Limit::Newest(0)));
        assert_eq!(Limit::from_number(-5.0, "limit"), Ok(Limit::Newest(0)));
        assert_eq!(
            Limit::from_number(1e300, "limit"),
            Ok(Limit::Newest(u64::MAX))
        );
    }

    #[test]
    fn non_integers_are_errors_naming_the_argument() {
        for (n, shown) in [
            (1.5, "1.5"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            let e = Limit::from_number(n, "settings.limit").unwrap_err();
            assert_eq!(e.code, SessionErrorCode::InvalidLimit);
            assert_eq!(
                e.message,
                format!("settings.limit must be an integer, got {shown}")
            );
        }
    }

    #[test]
    fn explicit_limit_overrides_settings() {
        let d = Some(Limit::Newest(2));
        assert_eq!(Limit::resolve(Some(Limit::Newest(5)), d), Limit::Newest(5));
        assert_eq!(Limit::resolve(None, d), Limit::Newest(2));
        assert_eq!(Limit::resolve(None, None), Limit::All);
    }

    #[test]
    fn window_takes_the_newest() {
        assert_eq!(Limit::All.window(10), (0, 10));
        assert_eq!(Limit::Newest(3).window(10), (7, 10));
        assert_eq!(Limit::Newest(30).window(10), (0, 10));
        assert_eq!(Limit::Newest(0).window(10), (10, 10));
        assert_eq!(Limit::Newest(u64::MAX).window(0), (0, 0));
    }
}
