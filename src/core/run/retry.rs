//! Which failed model calls are retried, and how long to wait before each retry.

/// Whether an HTTP status is worth retrying.
pub fn is_retryable(status: u16) -> bool {
    status == 408 || status == 409 || status == 429 || status >= 500
}

/// Whether a failure a server reported inside a successful answer (an `error` event, a failed
/// response), by its code, passes if asked again: a number is an HTTP status; a name, one
/// servers give an overload, an error of their own or a rate limit (not `insufficient_quota`).
pub fn is_retryable_code(code: &str) -> bool {
    match crate::core::json::decimal(code) {
        Some(status) => (0.0..1000.0).contains(&status) && is_retryable(status as u16),
        None => matches!(
            code,
            "server_error"
                | "internal_error"
                | "api_error"
                | "overloaded"
                | "overloaded_error"
                | "server_is_overloaded"
                | "service_unavailable"
                | "rate_limit_exceeded"
                | "rate_limit_error"
        ),
    }
}

/// How long to wait before retry number `attempt` (0-based): what the server asked for in
/// `Retry-After` (capped at a minute), else exponential backoff from half a second.
pub fn retry_delay_ms(attempt: u32, retry_after_ms: Option<f64>) -> f64 {
    match retry_after_ms {
        Some(ms) if ms.is_finite() && ms >= 0.0 => ms.min(60_000.0),
        _ => (500.0 * 2f64.powi(attempt.min(6) as i32)).min(8_000.0),
    }
}

/// `Retry-After` given in seconds.
pub fn retry_after_seconds(header: &str) -> Option<f64> {
    crate::core::json::decimal(header.trim())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| s * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_follow_the_server_then_back_off() {
        assert!(is_retryable(429) && is_retryable(500) && is_retryable(503));
        assert!(!is_retryable(400) && !is_retryable(401) && !is_retryable(404));
        assert_eq!(retry_delay_ms(0, Some(2000.0)), 2000.0);
        assert_eq!(retry_delay_ms(0, Some(1e9)), 60_000.0);
        assert_eq!(retry_delay_ms(0, None), 500.0);
        assert_eq!(retry_delay_ms(2, None), 2000.0);
        assert_eq!(retry_delay_ms(20, None), 8000.0);
        assert_eq!(retry_after_seconds(" 3 "), Some(3000.0));
        assert_eq!(retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn failures_inside_an_answer_are_retried_by_their_code() {
        for code in [
            "server_error",
            "rate_limit_exceeded",
            "overloaded_error",
            "502",
            "429",
        ] {
            assert!(is_retryable_code(code), "{code}");
        }
        for code in [
            "insufficient_quota",
            "invalid_prompt",
            "content_filter",
            "400",
            "",
        ] {
            assert!(!is_retryable_code(code), "{code}");
        }
    }

    #[test]
    fn seconds_are_read_as_str_parse_reads_them() {
        let cases = [
            "3",
            " 3 ",
            "120",
            "03",
            "0",
            "-0",
            "+2",
            "1.5",
            ".5",
            "3.",
            "0.001",
            "1e3",
            "1E+2",
            "2.5e-1",
            "1.e1",
            "12345678901234",
            "123456789012345e-10",
            "1e22",
            "1e-22",
            "1e400",
            "1e-400",
            "9e99999999999",
            "-3",
            "",
            ".",
            "+",
            "-",
            "e5",
            "1e",
            "1e+",
            "1.2.3",
            "3 4",
            "0x10",
            "1_0",
            "inf",
            "+infinity",
            "NaN",
            "١",
            "Wed, 21 Oct 2015 07:28:00 GMT",
        ];
        for s in cases {
            let expected = s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| s * 1000.0);
            let got = retry_after_seconds(s);
            assert_eq!(got.map(f64::to_bits), expected.map(f64::to_bits), "{s:?}");
        }
    }
}
