//! History selection: which items `getItems(limit)` returns.

/// How many of the newest items to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The whole history.
    All,
    /// At most this many of the newest items (0 returns nothing).
    Newest(u64),
}

impl Limit {
    /// Reads a limit given as a JS number. `n <= 0` (`-Infinity`, `-1.5` too) means "nothing",
    /// `Infinity` everything, as the SDK's `slice` reads them; another number that is not an
    /// integer (`1.5`, `NaN`) is none: `None`. (The caller names the number in its error, as
    /// JavaScript writes it.)
    pub fn from_number(n: f64) -> Option<Limit> {
        if n <= 0.0 {
            return Some(Limit::Newest(0));
        }
        if n == f64::INFINITY {
            return Some(Limit::All);
        }
        if n.is_nan() || n.fract() != 0.0 {
            return None;
        }
        // Any integer beyond 2^53 is already "more than can exist"; saturate.
        Some(Limit::Newest(if n >= u64::MAX as f64 {
            u64::MAX
        } else {
            n as u64
        }))
    }

    /// Index range `[start, len)` of the items to return from a history of `len` items.
    pub fn window(self, len: u64) -> (u64, u64) {
        match self {
            Limit::All => (0, len),
            Limit::Newest(n) => (len.saturating_sub(n), len),
        }
    }
}

/// Session-wide settings, the SDK's `SessionSettings`, and Agno's "last N runs".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionSettings {
    /// Default number of newest items `getItems()` returns when called without a limit.
    pub limit: Option<Limit>,
    /// Default number of newest whole turns `getItems()` returns when called without a limit;
    /// wins over `limit`.
    pub turns: Option<Limit>,
}

/// What a read of the history returns: the newest items, or the items of the newest whole turns
/// (a turn starts at a user message; the items before the first one are turn 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Items(Limit),
    Turns(Limit),
}

impl Window {
    /// `getItems(limit)`: an explicit limit counts items. Without one, the session's `turns`
    /// (which wins over its `limit`, as in Agno), else its `limit`, else everything.
    pub fn resolve(explicit: Option<Limit>, settings: &SessionSettings) -> Window {
        match (explicit, settings.turns, settings.limit) {
            (Some(limit), _, _) => Window::Items(limit),
            (None, Some(turns), _) => Window::Turns(turns),
            (None, None, Some(limit)) => Window::Items(limit),
            (None, None, None) => Window::Items(Limit::All),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_limits() {
        assert_eq!(Limit::from_number(3.0), Some(Limit::Newest(3)));
        assert_eq!(Limit::from_number(0.0), Some(Limit::Newest(0)));
        assert_eq!(Limit::from_number(-5.0), Some(Limit::Newest(0)));
        assert_eq!(Limit::from_number(1e300), Some(Limit::Newest(u64::MAX)));
        // As the SDK's `slice(-limit)` reads them.
        assert_eq!(Limit::from_number(f64::INFINITY), Some(Limit::All));
        for n in [f64::NEG_INFINITY, -1.5, -0.0] {
            assert_eq!(Limit::from_number(n), Some(Limit::Newest(0)), "{n}");
        }
    }

    #[test]
    fn non_integers_are_no_limits() {
        for n in [1.5, f64::NAN, 1e-300] {
            assert_eq!(Limit::from_number(n), None, "{n}");
        }
    }

    #[test]
    fn turns_win_over_limit_but_not_over_an_explicit_limit() {
        let both = SessionSettings {
            limit: Some(Limit::Newest(5)),
            turns: Some(Limit::Newest(2)),
        };
        assert_eq!(
            Window::resolve(None, &both),
            Window::Turns(Limit::Newest(2))
        );
        assert_eq!(
            Window::resolve(Some(Limit::Newest(9)), &both),
            Window::Items(Limit::Newest(9))
        );
        let limit_only = SessionSettings {
            limit: Some(Limit::Newest(5)),
            turns: None,
        };
        assert_eq!(
            Window::resolve(None, &limit_only),
            Window::Items(Limit::Newest(5))
        );
        assert_eq!(
            Window::resolve(None, &SessionSettings::default()),
            Window::Items(Limit::All)
        );
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
