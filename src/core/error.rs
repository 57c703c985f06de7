//! The one error type of the library. The binding layer turns it into a JS `Error` whose `name` is
//! `SessionError` and whose `code` is [`ErrorCode::as_str`].

use std::fmt;

/// Stable error codes. Their strings are part of the public API: never rename one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// `addItems` got something that is not an array of storable plain objects.
    InvalidItem,
    /// A history limit that is not an integer.
    InvalidLimit,
    /// A session id that is empty or not a string.
    InvalidSessionId,
    /// A user id that is empty or not a string.
    InvalidUserId,
    /// An options or settings object of the wrong shape.
    InvalidOptions,
    /// The session exists and belongs to another user.
    UserMismatch,
    /// The browser refused the write for lack of space; nothing of the batch was written.
    StorageFull,
    /// The session object was closed.
    Closed,
    /// The database was written by a newer version of this library.
    DbVersion,
    /// IndexedDB cannot be used here (not present, blocked by the browser, private mode...).
    StorageUnavailable,
    /// Any other storage failure (the transaction aborted for a reason IndexedDB gave).
    StorageError,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::InvalidItem,
        ErrorCode::InvalidLimit,
        ErrorCode::InvalidSessionId,
        ErrorCode::InvalidUserId,
        ErrorCode::InvalidOptions,
        ErrorCode::UserMismatch,
        ErrorCode::StorageFull,
        ErrorCode::Closed,
        ErrorCode::DbVersion,
        ErrorCode::StorageUnavailable,
        ErrorCode::StorageError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidItem => "INVALID_ITEM",
            ErrorCode::InvalidLimit => "INVALID_LIMIT",
            ErrorCode::InvalidSessionId => "INVALID_SESSION_ID",
            ErrorCode::InvalidUserId => "INVALID_USER_ID",
            ErrorCode::InvalidOptions => "INVALID_OPTIONS",
            ErrorCode::UserMismatch => "USER_MISMATCH",
            ErrorCode::StorageFull => "STORAGE_FULL",
            ErrorCode::Closed => "CLOSED",
            ErrorCode::DbVersion => "DB_VERSION",
            ErrorCode::StorageUnavailable => "STORAGE_UNAVAILABLE",
            ErrorCode::StorageError => "STORAGE_ERROR",
        }
    }
}

/// An error with a stable code and a message that says what was wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionError {
    pub code: ErrorCode,
    pub message: String,
}

impl SessionError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SessionError {
            code,
            message: message.into(),
        }
    }

    pub fn closed(what: &str) -> Self {
        SessionError::new(
            ErrorCode::Closed,
            format!("{what}: the session was closed; create a new session object to use it again"),
        )
    }

    pub fn user_mismatch(session_id: &str, owner: Option<&str>, asked: Option<&str>) -> Self {
        let who = |u: Option<&str>| match u {
            Some(u) => format!("user \"{u}\""),
            None => "no user".to_string(),
        };
        SessionError::new(
            ErrorCode::UserMismatch,
            format!(
                "session \"{session_id}\" belongs to {} and cannot be opened as {}",
                who(owner),
                who(asked)
            ),
        )
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for SessionError {}

pub type Result<T> = std::result::Result<T, SessionError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_upper_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(s.chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{s}");
        }
    }

    #[test]
    fn user_mismatch_names_both_owners() {
        let e = SessionError::user_mismatch("chat-1", Some("alice"), None);
        assert_eq!(e.code, ErrorCode::UserMismatch);
        assert_eq!(
            e.message,
            "session \"chat-1\" belongs to user \"alice\" and cannot be opened as no user"
        );
    }
}
