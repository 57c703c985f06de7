//! The library's errors, one family per JS error name. Each family is defined once, in an
//! [`error_family!`] invocation, which generates its Rust enum, its code strings, its JS `name`
//! and the TypeScript union of its codes that the published declarations carry (a test checks the
//! built `.d.ts` against [`ErrorFamily::ALL`]). The backend turns an [`Error`] into a JS `Error`
//! object in one place (`backend::error`).

use std::fmt;

/// A family of error codes that share one JS error `name`.
pub trait ErrorFamily: Copy + fmt::Debug + PartialEq + 'static {
    /// The `name` of the JS errors of this family.
    const JS_NAME: &'static str;
    /// The TypeScript declaration of the union of the family's codes.
    const TS_UNION: &'static str;
    /// Every code of the family.
    const ALL: &'static [Self];
    /// The code as JS sees it (`error.code`). Part of the public API: never rename one.
    fn as_str(self) -> &'static str;
}

/// Defines an error family: `enum Name as "JsName", "TsUnionName" { Variant = "CODE", ... }`.
macro_rules! error_family {
    (
        $(#[$meta:meta])*
        pub enum $family:ident as $js_name:literal, $ts_name:literal {
            $( $(#[$doc:meta])* $variant:ident = $code:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $family {
            $( $(#[$doc])* $variant, )+
        }

        impl ErrorFamily for $family {
            const JS_NAME: &'static str = $js_name;
            const TS_UNION: &'static str =
                concat!("/** The stable `code` of a `", $js_name, "`. */\nexport type ", $ts_name, " =", $( "\n  | '", $code, "'", )+ ";\n");
            const ALL: &'static [Self] = &[ $( $family::$variant, )+ ];
            fn as_str(self) -> &'static str {
                match self {
                    $( $family::$variant => $code, )+
                }
            }
        }
    };
}

error_family! {
    /// The codes of `SessionError`: sessions, `listSessions`, `deleteSession`.
    pub enum SessionErrorCode as "SessionError", "SessionErrorCode" {
        /// `addItems` got something that is not an array of storable plain objects.
        InvalidItem = "INVALID_ITEM",
        /// A history limit that is not an integer.
        InvalidLimit = "INVALID_LIMIT",
        /// A session id that is empty or not a string.
        InvalidSessionId = "INVALID_SESSION_ID",
        /// A user id that is empty or not a string.
        InvalidUserId = "INVALID_USER_ID",
        /// An options or settings object of the wrong shape.
        InvalidOptions = "INVALID_OPTIONS",
        /// The session exists and belongs to another user.
        UserMismatch = "USER_MISMATCH",
        /// The browser refused the write for lack of space; nothing of the batch was written.
        StorageFull = "STORAGE_FULL",
        /// The session object was closed.
        Closed = "CLOSED",
        /// The database was written by a newer version of this library.
        DbVersion = "DB_VERSION",
        /// The database's upgrade to this version waits for another connection (another tab of
        /// an older version, or code that opened it) that does not close.
        DbBlocked = "DB_BLOCKED",
        /// IndexedDB cannot be used here (not present, blocked by the browser, private mode...).
        StorageUnavailable = "STORAGE_UNAVAILABLE",
        /// Any other storage failure (the transaction aborted for a reason IndexedDB gave).
        StorageError = "STORAGE_ERROR",
        /// The session's stored record or items are damaged (written by something other than
        /// this library, or an old bug); nothing is written to it until `repairSession`.
        CorruptSession = "CORRUPT_SESSION",
        /// An `operationId` applied before was given again with a different transaction.
        TransactionConflict = "TRANSACTION_CONFLICT",
        /// `replace_suffix`: the history no longer ends with `expectedSuffix` (another tab or
        /// object wrote in between).
        SuffixMismatch = "SUFFIX_MISMATCH",
        /// A history transaction, mutation or compaction argument of the wrong shape.
        InvalidTransaction = "INVALID_TRANSACTION",
        /// A session title that is not a string, or longer than 1,000 characters.
        InvalidTitle = "INVALID_TITLE",
        /// A session state that is not an object the structured clone can store.
        InvalidState = "INVALID_STATE",
        /// A branch id that names no branch of the session.
        BranchNotFound = "BRANCH_NOT_FOUND",
        /// A branch name already used by another branch of the session.
        BranchExists = "BRANCH_EXISTS",
        /// Deleting the main branch, or the branch the session object is on.
        BranchInUse = "BRANCH_IN_USE",
        /// A turn number the branch does not hold, or a text no user turn contains.
        InvalidTurn = "INVALID_TURN",
        /// A usage object of the wrong shape.
        InvalidUsage = "INVALID_USAGE",
        /// A line of a backup given to `importSessions` is not what a backup holds; nothing of
        /// its session was written.
        ImportInvalid = "IMPORT_INVALID",
        /// A search query longer than 1,000 characters, or not a string.
        InvalidQuery = "INVALID_QUERY",
        /// An `EncryptedSession` key (or passphrase, or salt) of the wrong size or type.
        InvalidKey = "INVALID_KEY",
        /// `EncryptedSession` wrapping something that is not a session.
        InvalidSession = "INVALID_SESSION",
        /// The second sessions module (search, backups, repair, storage sizes, and an
        /// `IndexedDbSession`'s branch creation and deletion, whole-history rewrites and
        /// archive) could not be loaded (offline before it was ever downloaded); nothing was
        /// written, and a later call loads it again.
        ModuleUnavailable = "MODULE_UNAVAILABLE",
        /// `deleteSession` of a session a run of this package is answering in (any tab):
        /// nothing deleted.
        SessionBusy = "SESSION_BUSY",
    }
}

error_family! {
    /// The codes of `RunnerError`: wrong use of `Agent`, `Runner`, `RunState` or a run's options.
    pub enum RunnerErrorCode as "RunnerError", "RunnerErrorCode" {
        /// `new Agent(...)` options of the wrong shape, or an agent without a model at run time.
        InvalidAgent = "INVALID_AGENT",
        /// `new Runner(...)` options of the wrong shape.
        InvalidRunner = "INVALID_RUNNER",
        /// Run options of the wrong shape, or combined in a way that cannot work.
        InvalidRunOptions = "INVALID_RUN_OPTIONS",
        /// A run input that is not a string, an array of items or a `RunState`.
        InvalidInput = "INVALID_INPUT",
        /// A `RunState` that cannot be read, or an approval for a call that is not waiting.
        InvalidRunState = "INVALID_RUN_STATE",
        /// A session whose methods do not behave as a Session's.
        InvalidSession = "INVALID_SESSION",
        /// `sessionSettings.limit` is not an integer.
        InvalidLimit = "INVALID_LIMIT",
        /// A session together with a server-side conversation (`conversationId`,
        /// `previousResponseId`).
        SessionConflict = "SESSION_CONFLICT",
        /// `new CompactionSession(...)` options of the wrong shape.
        InvalidCompaction = "INVALID_COMPACTION",
        /// A run with `lock: 'fail'` on a session another run (in any tab) holds.
        SessionBusy = "SESSION_BUSY",
    }
}

/// An error of family `C`, with a message that says what was wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error<C> {
    pub code: C,
    pub message: String,
}

impl<C: ErrorFamily> Error<C> {
    pub fn new(code: C, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }
}

impl<C: ErrorFamily> fmt::Display for Error<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl<C: ErrorFamily> std::error::Error for Error<C> {}

pub type SessionError = Error<SessionErrorCode>;
pub type RunnerError = Error<RunnerErrorCode>;

pub type Result<T> = std::result::Result<T, SessionError>;

impl SessionError {
    pub fn closed(what: &str) -> Self {
        SessionError::new(
            SessionErrorCode::Closed,
            format!("{what}: the session was closed; create a new session object to use it again"),
        )
    }

    pub fn user_mismatch(session_id: &str, owner: Option<&str>, asked: Option<&str>) -> Self {
        let who = |u: Option<&str>| match u {
            Some(u) => format!("user \"{u}\""),
            None => "no user".to_string(),
        };
        SessionError::new(
            SessionErrorCode::UserMismatch,
            format!(
                "session \"{session_id}\" belongs to {} and cannot be opened as {}",
                who(owner),
                who(asked)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_family<C: ErrorFamily>() {
        let mut seen = std::collections::HashSet::new();
        for code in C::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "{} has {s} twice", C::JS_NAME);
            assert!(s.chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{s}");
            assert!(
                C::TS_UNION.contains(&format!("| '{s}'")),
                "{s} missing from the union"
            );
        }
        assert_eq!(C::TS_UNION.matches("| '").count(), C::ALL.len());
    }

    #[test]
    fn each_family_lists_distinct_codes_in_its_typescript_union() {
        check_family::<SessionErrorCode>();
        check_family::<RunnerErrorCode>();
        assert_eq!(
            SessionErrorCode::TS_UNION,
            "/** The stable `code` of a `SessionError`. */\nexport type SessionErrorCode =\n  | 'INVALID_ITEM'\n  | 'INVALID_LIMIT'\n  | 'INVALID_SESSION_ID'\n  | 'INVALID_USER_ID'\n  | 'INVALID_OPTIONS'\n  | 'USER_MISMATCH'\n  | 'STORAGE_FULL'\n  | 'CLOSED'\n  | 'DB_VERSION'\n  | 'DB_BLOCKED'\n  | 'STORAGE_UNAVAILABLE'\n  | 'STORAGE_ERROR'\n  | 'CORRUPT_SESSION'\n  | 'TRANSACTION_CONFLICT'\n  | 'SUFFIX_MISMATCH'\n  | 'INVALID_TRANSACTION'\n  | 'INVALID_TITLE'\n  | 'INVALID_STATE'\n  | 'BRANCH_NOT_FOUND'\n  | 'BRANCH_EXISTS'\n  | 'BRANCH_IN_USE'\n  | 'INVALID_TURN'\n  | 'INVALID_USAGE'\n  | 'IMPORT_INVALID'\n  | 'INVALID_QUERY'\n  | 'INVALID_KEY'\n  | 'INVALID_SESSION'\n  | 'MODULE_UNAVAILABLE'\n  | 'SESSION_BUSY';\n"
        );
    }

    #[test]
    fn user_mismatch_names_both_owners() {
        let e = SessionError::user_mismatch("chat-1", Some("alice"), None);
        assert_eq!(e.code, SessionErrorCode::UserMismatch);
        assert_eq!(
            e.message,
            "session \"chat-1\" belongs to user \"alice\" and cannot be opened as no user"
        );
    }
}
