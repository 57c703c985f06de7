//! The IndexedDB schema as data: store names, key paths, and the ordered list of migration steps.
//! Version `n` of the database is what `MIGRATIONS[..n]` builds; opening an older database runs
//! the missing steps inside the upgrade transaction, so old data is carried forward, never dropped.

use super::error::{Result, SessionError, SessionErrorCode};

pub const DEFAULT_DB_NAME: &str = "agent-sessions";

/// One record per session: see [`super::session::SessionRecord`]. Key: `id`.
pub const SESSIONS_STORE: &str = "agent_sessions";
/// One record per item: `{ sessionId, seq, turn, createdAt, item }`. Key: `[sessionId, seq]`.
pub const MESSAGES_STORE: &str = "agent_messages";

/// `agent_sessions` by `updatedAt`, for listing every session newest first.
pub const BY_UPDATED_INDEX: &str = "by_updated";
/// `agent_sessions` by `[userId, updatedAt]`, for listing one user's sessions newest first.
pub const BY_USER_INDEX: &str = "by_user_updated";

/// `agent_messages` by `[sessionId, turn]`: the items of a session's newest turns in one bounded
/// read.
pub const BY_TURN_INDEX: &str = "by_turn";

/// One record per applied history transaction, the newest 1,000 per session:
/// `{ sessionId, opSeq, operationId, digest, appliedAt }`. Key: `[sessionId, opSeq]`.
pub const OPERATIONS_STORE: &str = "agent_operations";
/// `agent_operations` by `[sessionId, operationId]` (unique): is this operation applied?
pub const BY_OPERATION_INDEX: &str = "by_operation";
/// One record per item compaction replaced: `{ sessionId, position, archivedAt, item }`.
/// Key: `[sessionId, position]`; positions count from 0 in the order items were archived.
pub const ARCHIVE_STORE: &str = "agent_archive";
/// One record per turn that has model usage, per branch:
/// `{ sessionId, branch, turn, requests, inputTokens, outputTokens, totalTokens, updatedAt }`.
/// Key: `[sessionId, branch, turn]`.
pub const USAGE_STORE: &str = "agent_usage";
/// Every store that holds a part of a session: what a transaction that clears, deletes, rewrites
/// or restores a whole session spans.
pub const SESSION_STORES: [&str; 5] = [
    SESSIONS_STORE,
    MESSAGES_STORE,
    OPERATIONS_STORE,
    ARCHIVE_STORE,
    USAGE_STORE,
];
/// `agent_messages` by each element of `terms` (multi-entry; each a string: the owner's prefix,
/// then a term, see [`super::search::owner_prefix`]): one user's items that hold a term, for
/// full-text search.
pub const BY_TERM_INDEX: &str = "by_term";
/// Facts about the database itself, one record each, key `name`: `{ name: "searchIndex", done,
/// after, indexed, terms, all }` records how far the search index of rows written before it
/// existed (or of every row, for terms of a newer tokeniser) was built.
pub const META_STORE: &str = "agent_meta";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationStep {
    CreateStore {
        name: &'static str,
        key_path: &'static [&'static str],
    },
    CreateIndex {
        store: &'static str,
        name: &'static str,
        key_path: &'static [&'static str],
        unique: bool,
        /// An array at the key path is one index entry per element.
        multi_entry: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// The version the database has once this migration ran.
    pub to_version: u32,
    pub description: &'static str,
    pub steps: &'static [MigrationStep],
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        to_version: 1,
        description: "sessions and messages",
        steps: &[
            MigrationStep::CreateStore {
                name: SESSIONS_STORE,
                key_path: &["id"],
            },
            MigrationStep::CreateIndex {
                store: SESSIONS_STORE,
                name: BY_UPDATED_INDEX,
                key_path: &["updatedAt"],
                unique: false,
                multi_entry: false,
            },
            MigrationStep::CreateIndex {
                store: SESSIONS_STORE,
                name: BY_USER_INDEX,
                key_path: &["userId", "updatedAt"],
                unique: false,
                multi_entry: false,
            },
            MigrationStep::CreateStore {
                name: MESSAGES_STORE,
                key_path: &["sessionId", "seq"],
            },
        ],
    },
    Migration {
        to_version: 2,
        description: "history transactions' operation log, and the compaction archive",
        // Session records written by version 1 have no `nextOpSeq` or `archivedCount`: both read
        // as 0, so they need no rewrite.
        steps: &[
            MigrationStep::CreateStore {
                name: OPERATIONS_STORE,
                key_path: &["sessionId", "opSeq"],
            },
            MigrationStep::CreateIndex {
                store: OPERATIONS_STORE,
                name: BY_OPERATION_INDEX,
                key_path: &["sessionId", "operationId"],
                unique: true,
                multi_entry: false,
            },
            MigrationStep::CreateStore {
                name: ARCHIVE_STORE,
                key_path: &["sessionId", "position"],
            },
        ],
    },
    Migration {
        to_version: 3,
        description: "the items of a session's newest turns, by index",
        // IndexedDB fills a new index from the records already stored, in the same upgrade
        // transaction. Session records written before have no title, summary or state: they
        // read as none, so they need no rewrite.
        steps: &[MigrationStep::CreateIndex {
            store: MESSAGES_STORE,
            name: BY_TURN_INDEX,
            key_path: &["sessionId", "turn"],
            unique: false,
            multi_entry: false,
        }],
    },
    Migration {
        to_version: 4,
        description: "model usage per turn and branch",
        // Branches live in the session record (`branches`, `currentBranch`; absent: only
        // `main`) and keep their own items in the messages store under the key
        // `[[sessionId, branchId], seq]`, which the existing key path and index take as they are.
        steps: &[MigrationStep::CreateStore {
            name: USAGE_STORE,
            key_path: &["sessionId", "branch", "turn"],
        }],
    },
    Migration {
        to_version: 5,
        description: "full-text search: the terms index, and the database's own facts",
        // IndexedDB fills the new index from the rows already stored, but rows written before
        // have no `terms`: they are indexed after the upgrade, a chunk per transaction, from
        // where the `searchIndex` record of the meta store says the last chunk ended.
        steps: &[
            MigrationStep::CreateIndex {
                store: MESSAGES_STORE,
                name: BY_TERM_INDEX,
                key_path: &["terms"],
                unique: false,
                multi_entry: true,
            },
            MigrationStep::CreateStore {
                name: META_STORE,
                key_path: &["name"],
            },
        ],
    },
    Migration {
        to_version: 6,
        description: "search terms of the fourth tokeniser",
        // No store or index changes: the version says that rows are indexed with terms of the
        // fourth tokeniser (a character that ends a run of a script written without spaces is a
        // term of its own; the punctuation of more scripts ends a word). The upgrade closes
        // the connections of tabs of the version before, which would go on indexing their rows
        // the old way; the rows it indexed are indexed again after the upgrade, a chunk per
        // transaction, as the `searchIndex` record of the meta store names an older tokeniser.
        steps: &[],
    },
    Migration {
        to_version: 7,
        description: "search terms of the fifth tokeniser",
        // As version 6: no store or index changes, the terms of the fifth tokeniser (full-width
        // Latin letters and digits are ASCII; Arabic and Hebrew without their vowel marks, Arabic
        // letter variants folded). Rows are indexed again after the upgrade.
        steps: &[],
    },
    Migration {
        to_version: 8,
        description: "search terms of the sixth tokeniser",
        // As version 7: no store or index changes, the terms of the sixth tokeniser (every Latin
        // letter Unicode decomposes is its letter, the other capitals of Latin Extended-B are
        // lower-cased, half-width katakana is full-width; with
        // `index.tools`, the text of hosted, shell, apply-patch and computer calls). Rows are
        // indexed again after the upgrade.
        steps: &[],
    },
    Migration {
        to_version: 9,
        description: "search terms of the seventh tokeniser",
        // As version 8: no store or index changes, the terms of the seventh tokeniser (an item
        // indexed under its first 2,000 terms only is marked so, and every search checks the
        // text of its user's such items; Japanese 々 〻 〆 〇 belong to their runs). Rows are
        // indexed again after the upgrade.
        steps: &[],
    },
    Migration {
        to_version: 10,
        description: "search terms of the eighth tokeniser",
        // As version 9: no store or index changes, the terms of the eighth tokeniser (full-width
        // signs, enclosed CJK letters and units and U+FEFF are no letters, so `￥5000` is the
        // number 5000; a middle dot between two characters of a run and a variation selector
        // keep the run going). Rows are indexed again after the upgrade.
        steps: &[],
    },
    Migration {
        to_version: 11,
        description: "search terms of the ninth tokeniser",
        // As version 10: no store or index changes, the terms of the ninth tokeniser (a kana
        // with its combining sound mark, text in NFD, is one character as in NFC; a combining
        // mark after a character of a run keeps the run going). Rows are indexed again after the
        // upgrade.
        steps: &[],
    },
    Migration {
        to_version: 12,
        description: "search terms of the tenth tokeniser",
        // As version 11: no store or index changes, the terms of the tenth tokeniser (Hangul
        // jamo and Cyrillic letters with their marks, text in NFD, are the letters NFC writes; a
        // middle dot after what belongs to a run's character (a half-width kana's sound mark, a
        // variation selector, a mark) keeps its run going; Cyrillic capitals
        // past U+04C0 and Greek's archaic ones are lower-cased). Rows are indexed again after the
        // upgrade.
        steps: &[],
    },
];

/// The version this build of the library writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The migrations that bring a database from `old_version` to [`SCHEMA_VERSION`], in order.
pub fn migrations_from(old_version: u32) -> Result<&'static [Migration]> {
    if old_version > SCHEMA_VERSION {
        return Err(newer_schema(old_version));
    }
    Ok(&MIGRATIONS[old_version as usize..])
}

/// The error for a database written by a newer version of the library.
pub fn newer_schema(found: u32) -> SessionError {
    SessionError::new(
        SessionErrorCode::DbVersion,
        format!(
            "the database has schema version {found}, newer than version {SCHEMA_VERSION} that this \
             version of agent-sessions understands; its data was left untouched: reload this page \
             (a newer deploy upgraded it), or upgrade agent-sessions"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_one_after_another() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.to_version as usize, i + 1, "{}", m.description);
        }
    }

    #[test]
    fn every_index_is_on_a_store_created_earlier() {
        let mut stores = Vec::new();
        for m in MIGRATIONS {
            for step in m.steps {
                match step {
                    MigrationStep::CreateStore { name, .. } => {
                        assert!(!stores.contains(name), "{name} created twice");
                        stores.push(*name);
                    }
                    MigrationStep::CreateIndex { store, name, .. } => {
                        assert!(stores.contains(store), "index {name} before store {store}")
                    }
                }
            }
        }
        for store in [
            SESSIONS_STORE,
            MESSAGES_STORE,
            OPERATIONS_STORE,
            ARCHIVE_STORE,
        ] {
            assert!(stores.contains(&store), "{store}");
        }
    }

    #[test]
    fn upgrade_runs_only_missing_steps() {
        assert_eq!(migrations_from(0).unwrap().len(), MIGRATIONS.len());
        assert!(migrations_from(SCHEMA_VERSION).unwrap().is_empty());
        let e = migrations_from(SCHEMA_VERSION + 1).unwrap_err();
        assert_eq!(e.code, SessionErrorCode::DbVersion);
        assert!(e.message.contains("left untouched"));
    }
}
