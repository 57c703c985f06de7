//! History transactions and rewrites, as the SDK's `Session` protocol defines them
//! (`applyHistoryTransaction`, `applyHistoryMutations`): what an operation does to a history,
//! given what is stored. Items are compared by their canonical forms ([`super::canonical`]).
//!
//! - `append_items` appends; `replace_suffix` replaces the newest `expectedSuffix.len()` items by
//!   `replacement`, only if the history still ends with exactly `expectedSuffix`.
//! - An `operationId` applied once is remembered (the newest [`OPERATION_LOG_LIMIT`] per session):
//!   applying it again with the same transaction changes nothing, with another one is refused.

use super::error::{Result, SessionError, SessionErrorCode};

/// How many applied operation ids a session remembers: the newest this many.
pub const OPERATION_LOG_LIMIT: u64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionKind {
    AppendItems,
    ReplaceSuffix,
}

/// A checked transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryTransaction {
    pub operation_id: String,
    pub kind: TransactionKind,
    /// The canonical forms of `expectedSuffix`, oldest first (empty for `append_items`).
    pub expected_suffix: Vec<String>,
    /// The digest of the whole transaction's canonical form: what the operation log keeps.
    pub digest: String,
    /// Whether applying it changes stored items: a `replace_suffix` whose replacement does not
    /// begin with its expected suffix. (One that does, as a run saving again, only appends.)
    pub rewrites: bool,
}

/// What applying a transaction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The operation id was applied before with this same transaction: nothing changes.
    AlreadyApplied,
    /// Remove this many of the newest items, then append the transaction's items, and remember
    /// the operation id.
    Apply { remove: usize },
}

impl HistoryTransaction {
    /// Whether applying it, writing `written` items to a history of `item_count`, leaves the
    /// history empty (it removes every item and writes none).
    pub fn leaves_empty(&self, written: usize, item_count: u64) -> bool {
        written == 0 && self.expected_suffix.len() as u64 >= item_count
    }

    /// Decides what applying this transaction does. `applied` is the digest the operation log
    /// holds for its operation id, if any; `item_count` the history's length; `stored_suffix`
    /// the canonical forms of the newest `expected_suffix.len()` stored items, oldest first
    /// (`None` for an item that has no canonical form).
    pub fn decide(
        &self,
        applied: Option<&str>,
        item_count: u64,
        stored_suffix: &[Option<String>],
    ) -> Result<Outcome> {
        match applied {
            Some(digest) if digest == self.digest => return Ok(Outcome::AlreadyApplied),
            Some(_) => {
                return Err(SessionError::new(
                    SessionErrorCode::TransactionConflict,
                    format!(
                        "Session history operation was already applied with a different \
                         transaction (operationId \"{}\"); nothing was changed",
                        self.operation_id
                    ),
                ))
            }
            None => {}
        }
        if self.kind == TransactionKind::AppendItems {
            return Ok(Outcome::Apply { remove: 0 });
        }
        let expected = self.expected_suffix.len();
        let matches = item_count >= expected as u64
            && stored_suffix.len() == expected
            && stored_suffix
                .iter()
                .zip(&self.expected_suffix)
                .all(|(stored, wanted)| stored.as_deref() == Some(wanted.as_str()));
        if !matches {
            return Err(SessionError::new(
                SessionErrorCode::SuffixMismatch,
                format!(
                    "Session history suffix no longer matches the transaction precondition: the \
                     history does not end with the {expected} expected items (something else \
                     wrote to it in between); operationId \"{}\", nothing was changed",
                    self.operation_id
                ),
            ));
        }
        Ok(Outcome::Apply { remove: expected })
    }
}

/// A replacement conditioned on the whole history (`replaceHistory`'s `expectedItems`): refused
/// unless the stored items' canonical forms are exactly `expected`.
pub fn check_whole_history(
    session_id: &str,
    expected: &[String],
    stored: &[Option<String>],
) -> Result<()> {
    let same = expected.len() == stored.len()
        && expected
            .iter()
            .zip(stored)
            .all(|(e, s)| s.as_deref() == Some(e.as_str()));
    if same {
        return Ok(());
    }
    Err(SessionError::new(
        SessionErrorCode::SuffixMismatch,
        format!(
            "the history of session \"{session_id}\" is no longer the one the replacement was \
             made from (it holds {} items, {} were expected): something wrote to it in between; \
             nothing was changed",
            stored.len(),
            expected.len()
        ),
    ))
}

/// The operation-log entries to forget once `next_op_seq` operations were recorded: every entry
/// below the returned number (entries are numbered from 0 in the order they were applied).
pub fn operations_to_forget(next_op_seq: u64) -> u64 {
    next_op_seq.saturating_sub(OPERATION_LOG_LIMIT)
}

/// What `replace_function_call` does to a history, given per item whether it is a
/// `function_call` and its `callId`: the first call with `call_id` is replaced, later calls with
/// the same id are removed (as the SDK's `MemorySession` does); `None` when no call matches.
pub fn replace_function_call(calls: &[Option<&str>], call_id: &str) -> Option<(usize, Vec<usize>)> {
    let mut matching = calls
        .iter()
        .enumerate()
        .filter(|(_, id)| **id == Some(call_id))
        .map(|(i, _)| i);
    let first = matching.next()?;
    Some((first, matching.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_leaves_the_history_empty_only_when_it_removes_all_and_writes_none() {
        let append = tx(TransactionKind::AppendItems, &[], "d");
        assert!(append.leaves_empty(0, 0));
        assert!(!append.leaves_empty(1, 0));
        assert!(!append.leaves_empty(0, 3));
        let replace = tx(TransactionKind::ReplaceSuffix, &["a", "b"], "d");
        assert!(replace.leaves_empty(0, 2));
        assert!(!replace.leaves_empty(1, 2));
        assert!(!replace.leaves_empty(0, 3));
    }

    fn tx(kind: TransactionKind, suffix: &[&str], digest: &str) -> HistoryTransaction {
        HistoryTransaction {
            rewrites: kind == TransactionKind::ReplaceSuffix,
            operation_id: "op".into(),
            kind,
            expected_suffix: suffix.iter().map(|s| s.to_string()).collect(),
            digest: digest.into(),
        }
    }

    fn stored(items: &[&str]) -> Vec<Option<String>> {
        items.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn an_operation_applies_once() {
        let t = tx(TransactionKind::AppendItems, &[], "d1");
        assert_eq!(t.decide(None, 3, &[]), Ok(Outcome::Apply { remove: 0 }));
        assert_eq!(t.decide(Some("d1"), 5, &[]), Ok(Outcome::AlreadyApplied));
        let e = t.decide(Some("d2"), 5, &[]).unwrap_err();
        assert_eq!(e.code, SessionErrorCode::TransactionConflict);
        assert!(e.message.starts_with(
            "Session history operation was already applied with a different transaction"
        ));
    }

    #[test]
    fn a_suffix_must_match_exactly() {
        let t = tx(TransactionKind::ReplaceSuffix, &["a", "b"], "d");
        assert_eq!(
            t.decide(None, 5, &stored(&["a", "b"])),
            Ok(Outcome::Apply { remove: 2 })
        );
        for (count, suffix) in [
            (5, stored(&["b", "a"])),
            (5, stored(&["a"])),
            (1, stored(&["a", "b"])),
            (5, vec![Some("a".into()), None]),
        ] {
            let e = t.decide(None, count, &suffix).unwrap_err();
            assert_eq!(e.code, SessionErrorCode::SuffixMismatch);
            assert!(e.message.starts_with(
                "Session history suffix no longer matches the transaction precondition"
            ));
        }
        // A replayed operation is not checked again: it already happened.
        assert_eq!(t.decide(Some("d"), 0, &[]), Ok(Outcome::AlreadyApplied));
        // An empty suffix always matches: the replacement is appended.
        let append = tx(TransactionKind::ReplaceSuffix, &[], "e");
        assert_eq!(
            append.decide(None, 0, &[]),
            Ok(Outcome::Apply { remove: 0 })
        );
    }

    #[test]
    fn the_log_keeps_the_newest_thousand() {
        assert_eq!(operations_to_forget(10), 0);
        assert_eq!(operations_to_forget(1000), 0);
        assert_eq!(operations_to_forget(1001), 1);
        assert_eq!(operations_to_forget(5000), 4000);
    }

    #[test]
    fn the_first_matching_call_is_replaced_and_later_duplicates_go() {
        let calls = [None, Some("c1"), Some("c2"), Some("c1"), None, Some("c1")];
        assert_eq!(replace_function_call(&calls, "c1"), Some((1, vec![3, 5])));
        assert_eq!(replace_function_call(&calls, "c2"), Some((2, vec![])));
        assert_eq!(replace_function_call(&calls, "zz"), None);
    }
}
