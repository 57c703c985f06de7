//! Session bookkeeping shared by every backend: the per-session record (owner, counters,
//! sequence numbers, turns) and the rules that keep it consistent with the stored items.
//!
//! Invariant: the items of a session occupy the sequence numbers `first_seq..next_seq` with no
//! gap, oldest first. Appends take `next_seq`, pops give back `next_seq - 1`, and a clear moves
//! `first_seq` up to `next_seq`, so sequence numbers only repeat for a popped item's slot.

use super::error::{Result, SessionError, SessionErrorCode};
use super::history::Limit;

/// One record of the `agent_sessions` store.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub id: String,
    pub user_id: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: f64,
    /// Milliseconds since the Unix epoch of the last change to the history.
    pub updated_at: f64,
    pub item_count: u64,
    pub first_seq: u64,
    pub next_seq: u64,
    /// Turn number of the newest item (0 before the first user message).
    pub last_turn: u64,
    /// The number the next applied history transaction gets in the operation log.
    pub next_op_seq: u64,
    /// How many items compaction moved to the archive (their positions are `0..archived_count`).
    pub archived_count: u64,
    /// About how many bytes the session's stored items take: the JSON length of each, kept up
    /// to date by every write (see [`resized`]). `None` for a record written before sizes were
    /// kept, until it is measured.
    pub bytes: Option<u64>,
    /// How many writes removed or replaced stored items (on any branch): pops, clears, rewrites
    /// of a suffix that change items, mutations, compaction, branch deletions, repairs, imports
    /// over the session. Appends leave it, so while it (and `created_at`) stays the same, the
    /// history has only grown: what a reader saw of it is still there, in the same places.
    pub rewrites: u64,
    /// Whether the head of the history (turn 0) may hold a compaction summary where nothing was
    /// archived: its history was replaced whole without archiving (`replaceHistory` with
    /// `archive: false`). `archived_count` says so of the others.
    pub summary_head: bool,
}

/// The largest integer a JS number holds exactly (2^53 - 1): sequence numbers and counts beyond
/// it could not be read back as they were written.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A stored number that is a count or a sequence number: a safe non-negative integer.
pub fn safe_count(n: f64) -> Option<u64> {
    (n >= 0.0 && n.fract() == 0.0 && n <= MAX_SAFE_INTEGER as f64).then_some(n as u64)
}

/// Where a new item goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub seq: u64,
    pub turn: u64,
}

/// The inclusive sequence range `getItems(limit)` reads from a history of `item_count` items
/// from `first_seq` on, or `None` when it returns nothing.
pub fn newest_range(first_seq: u64, item_count: u64, limit: Limit) -> Option<(u64, u64)> {
    let (start, end) = limit.window(item_count);
    if start >= end {
        return None;
    }
    Some((first_seq + start, first_seq + end - 1))
}

/// [`SessionRecord::oldest_turn_of`] for a history of `item_count` items whose newest turn is
/// `last_turn`.
pub fn oldest_turn(item_count: u64, last_turn: u64, turns: Limit) -> Option<u64> {
    if item_count == 0 {
        return None;
    }
    match turns {
        Limit::All => Some(0),
        Limit::Newest(0) => None,
        Limit::Newest(n) => Some((last_turn + 1).saturating_sub(n)),
    }
}

impl SessionRecord {
    pub fn new(id: &str, user_id: Option<&str>, now: f64) -> Self {
        SessionRecord {
            id: id.to_string(),
            user_id: user_id.map(str::to_string),
            created_at: now,
            updated_at: now,
            item_count: 0,
            first_seq: 0,
            next_seq: 0,
            last_turn: 0,
            next_op_seq: 0,
            archived_count: 0,
            summary_head: false,
            rewrites: 0,
            bytes: Some(0),
        }
    }

    /// The rows the session stores: its items and its archive.
    pub fn stored_rows(&self) -> u64 {
        self.item_count + self.archived_count
    }

    /// Counts `bytes` more for items just written.
    pub fn grow(&mut self, bytes: u64) {
        self.bytes = self.bytes.map(|b| b.saturating_add(bytes));
    }

    /// Counts `bytes` less for an item just removed.
    pub fn shrink(&mut self, bytes: u64) {
        self.bytes = self.bytes.map(|b| b.saturating_sub(bytes));
    }

    /// A session belongs to the user that created it; any other user (or none, for a session
    /// created with one) is refused so that histories never mix.
    pub fn check_owner(&self, user_id: Option<&str>) -> Result<()> {
        if self.user_id.as_deref() == user_id {
            Ok(())
        } else {
            Err(SessionError::user_mismatch(
                &self.id,
                self.user_id.as_deref(),
                user_id,
            ))
        }
    }

    /// Checks the invariants a stored record must hold, so that nothing is ever written past a
    /// damaged one: the items occupy `first_seq..next_seq` with no gap.
    pub fn check_consistent(&self) -> Result<()> {
        let damaged = |what: String| {
            Err(SessionError::new(
                SessionErrorCode::CorruptSession,
                format!(
                    "session \"{}\" is damaged: {what}; repairSession() rebuilds it from its items",
                    self.id
                ),
            ))
        };
        if self.first_seq > self.next_seq {
            return damaged(format!(
                "firstSeq {} is past nextSeq {}",
                self.first_seq, self.next_seq
            ));
        }
        if self.item_count != self.next_seq - self.first_seq {
            return damaged(format!(
                "itemCount {} does not match sequence numbers {}..{}",
                self.item_count, self.first_seq, self.next_seq
            ));
        }
        Ok(())
    }

    /// Assigns a sequence number and a turn to each new item, in order. `starts_turn` tells, per
    /// item, whether it is a user message (which opens a new turn). Refused, with nothing
    /// changed, when the sequence numbers would pass [`MAX_SAFE_INTEGER`].
    pub fn append(&mut self, starts_turn: &[bool], now: f64) -> Result<Vec<Placement>> {
        self.replace_suffix(0, starts_turn, self.last_turn, now)
    }

    /// Replaces the newest `remove` items by new ones: the new items take the freed sequence
    /// numbers, and their turns continue from `base_turn`, the turn of the item before the
    /// removed ones (0 when there is none). With `remove` 0 this is an append. Whether the
    /// new items change the removed ones is the caller's to tell ([`SessionRecord::rewrote`]).
    pub fn replace_suffix(
        &mut self,
        remove: u64,
        starts_turn: &[bool],
        base_turn: u64,
        now: f64,
    ) -> Result<Vec<Placement>> {
        let remove = remove.min(self.item_count);
        let start = self.next_seq - remove;
        let count = starts_turn.len() as u64;
        if start.saturating_add(count) > MAX_SAFE_INTEGER {
            return Err(SessionError::new(
                SessionErrorCode::CorruptSession,
                format!(
                    "session \"{}\" cannot take {count} more items: its sequence numbers would pass \
                     2^53 - 1 (nextSeq is {}); repairSession() renumbers them",
                    self.id, self.next_seq
                ),
            ));
        }
        let placements = place(start, base_turn, starts_turn);
        let kept = self.item_count - remove;
        self.item_count = kept + count;
        self.next_seq = start + count;
        self.last_turn = match placements.last() {
            Some(p) => p.turn,
            None if self.item_count == 0 => 0,
            None => base_turn,
        };
        if remove > 0 || count > 0 {
            self.updated_at = now;
        }
        Ok(placements)
    }

    /// Replaces the whole history by new items (compaction): they take sequence numbers after
    /// every earlier one, so no old key is reused; `archived` old items moved to the archive.
    pub fn replace_all(
        &mut self,
        starts_turn: &[bool],
        archived: u64,
        now: f64,
    ) -> Result<Vec<Placement>> {
        self.first_seq = self.next_seq;
        self.item_count = 0;
        self.archived_count += archived;
        self.summary_head = true;
        let placements = self.replace_suffix(0, starts_turn, 0, now)?;
        self.updated_at = now;
        self.rewrote();
        Ok(placements)
    }

    /// Records a write that removed or replaced stored items (see [`SessionRecord::rewrites`]).
    pub fn rewrote(&mut self) {
        self.rewrites = self.rewrites.saturating_add(1).min(MAX_SAFE_INTEGER);
    }

    /// Counts items of `removed` bytes out of [`SessionRecord::bytes`] and items of `added`
    /// bytes in: for writes that read every item they remove (an unknown size stays unknown).
    pub fn exchange_bytes(&mut self, removed: u64, added: u64) {
        self.bytes = self
            .bytes
            .map(|b| b.saturating_sub(removed).saturating_add(added));
    }

    /// Records one applied history transaction: returns its number in the operation log.
    pub fn record_operation(&mut self) -> u64 {
        self.next_op_seq += 1;
        self.next_op_seq - 1
    }

    /// The inclusive sequence range `getItems(limit)` reads, or `None` when it returns nothing.
    pub fn newest_range(&self, limit: Limit) -> Option<(u64, u64)> {
        newest_range(self.first_seq, self.item_count, limit)
    }

    /// The oldest turn among the newest `turns` whole turns: a read of those turns takes every
    /// item whose turn is at least this. `None` when it takes nothing.
    pub fn oldest_turn_of(&self, turns: Limit) -> Option<u64> {
        oldest_turn(self.item_count, self.last_turn, turns)
    }

    /// How many turns the history holds that start at a user message.
    pub fn turn_count(&self) -> u64 {
        self.last_turn
    }

    /// Sequence number of the newest item, if any.
    pub fn newest_seq(&self) -> Option<u64> {
        (self.item_count > 0).then(|| self.next_seq - 1)
    }

    /// Records that the newest item was removed. `turn_of_new_newest` is the turn of the item
    /// that is now the newest (ignored when the history became empty).
    pub fn pop(&mut self, turn_of_new_newest: Option<u64>, now: f64) {
        if self.item_count == 0 {
            return;
        }
        self.item_count -= 1;
        self.next_seq -= 1;
        self.last_turn = if self.item_count == 0 {
            0
        } else {
            turn_of_new_newest.unwrap_or(self.last_turn)
        };
        self.updated_at = now;
        self.rewrote();
    }

    /// Records that every item was removed, with the archive and the operation log.
    pub fn clear(&mut self, now: f64) {
        self.first_seq = self.next_seq;
        self.item_count = 0;
        self.last_turn = 0;
        self.next_op_seq = 0;
        self.archived_count = 0;
        self.summary_head = false;
        self.bytes = Some(0);
        self.updated_at = now;
        self.rewrote();
    }
}

/// The size of a session's stored items after a write that kept `kept` of its `before` rows
/// (more than `before` where it copied rows) and wrote new items of `added` bytes. Rows whose
/// sizes were not read count at the session's average row size, so the figure stays
/// approximate but never needs the items read again. `None` (not known) stays `None`.
pub fn resized(bytes: Option<u64>, before: u64, kept: u64, added: u64) -> Option<u64> {
    // In floating point: exact enough for an estimate, and cheaper in the module than 128-bit
    // integer division.
    let kept_bytes = match before {
        0 => 0,
        _ => (bytes? as f64 * kept as f64 / before as f64).round() as u64,
    };
    Some(kept_bytes.saturating_add(added))
}

/// Sequence numbers from `start` and turns continuing from `base_turn`, one per new item.
pub(crate) fn place(start: u64, base_turn: u64, starts_turn: &[bool]) -> Vec<Placement> {
    let mut turn = base_turn;
    starts_turn
        .iter()
        .enumerate()
        .map(|(i, &starts)| {
            if starts {
                turn += 1;
            }
            Placement {
                seq: start + i as u64,
                turn,
            }
        })
        .collect()
}

/// The longest a default title is, in characters.
pub const TITLE_LENGTH: usize = 80;

/// The field a compaction summary item carries (see `core::compaction`): a turn window keeps a
/// summary at the head of the history, which holds no turn of its own.
pub const SUMMARY_MARKER: &str = "agent-sessions.summary";

/// A session's default title: the text of its first user message on one line, cut to
/// [`TITLE_LENGTH`] characters at a word boundary (with an ellipsis).
pub fn default_title(text: &str) -> String {
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.chars().count() <= TITLE_LENGTH {
        return line;
    }
    let room: String = line.chars().take(TITLE_LENGTH - 1).collect();
    let cut = match room.rfind(' ') {
        Some(space) if space > 0 => room.get(..space).unwrap_or(&room).trim_end(),
        _ => room.as_str(),
    };
    format!("{cut}…")
}

/// Whether an item opens a new user turn: a user message, in either the short `{role, content}`
/// form or the `{type: "message", role: "user"}` form.
pub fn starts_turn(role: Option<&str>, item_type: Option<&str>) -> bool {
    role == Some("user") && matches!(item_type, None | Some("message"))
}

/// Session ids are non-empty strings that are not all white space.
pub fn validate_session_id(id: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(SessionError::new(
            SessionErrorCode::InvalidSessionId,
            format!("sessionId must be a non-empty string, got \"{id}\""),
        ));
    }
    Ok(())
}

/// User ids follow the same rule as session ids.
pub fn validate_user_id(id: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(SessionError::new(
            SessionErrorCode::InvalidUserId,
            format!("userId must be a non-empty string, got \"{id}\""),
        ));
    }
    Ok(())
}

/// Formats 16 random bytes as a version 4 UUID, the id of a session created without one.
pub fn uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut id = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            id.push('-');
        }
        super::canonical::push_hex(&mut id, u64::from(*b), 2);
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> SessionRecord {
        SessionRecord::new("s", Some("u"), 1.0)
    }

    #[test]
    fn sizes_follow_writes_and_count_unread_rows_at_the_average() {
        let mut r = record();
        assert_eq!(r.bytes, Some(0), "a new session is empty");
        r.grow(300);
        r.shrink(100);
        assert_eq!(r.bytes, Some(200));
        r.shrink(1000);
        assert_eq!(r.bytes, Some(0), "never below nothing");
        // 4 rows of 400 bytes: 1 removed unread, 50 bytes written.
        assert_eq!(resized(Some(400), 4, 3, 50), Some(350));
        // Rows copied (kept > before) count at the average too.
        assert_eq!(resized(Some(400), 4, 6, 0), Some(600));
        assert_eq!(resized(Some(400), 0, 0, 7), Some(7), "from no rows");
        assert_eq!(resized(None, 4, 3, 50), None, "not known stays not known");
        r.bytes = None;
        r.grow(10);
        assert_eq!(r.bytes, None);
        r.clear(2.0);
        assert_eq!(r.bytes, Some(0), "a clear knows the size: none");
    }

    #[test]
    fn append_numbers_items_and_turns_in_order() {
        let mut r = record();
        let p = r.append(&[false, true, false, false, true], 5.0).unwrap();
        let seqs: Vec<u64> = p.iter().map(|p| p.seq).collect();
        let turns: Vec<u64> = p.iter().map(|p| p.turn).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4]);
        assert_eq!(turns, [0, 1, 1, 1, 2]);
        assert_eq!((r.item_count, r.next_seq, r.last_turn), (5, 5, 2));
        assert_eq!(r.updated_at, 5.0);
        assert_eq!(r.created_at, 1.0);
    }

    #[test]
    fn empty_append_changes_nothing() {
        let mut r = record();
        assert!(r.append(&[], 9.0).unwrap().is_empty());
        assert_eq!(r, record());
    }

    #[test]
    fn newest_range_is_bounded_by_the_limit() {
        let mut r = record();
        r.append(&[true; 10], 2.0).unwrap();
        assert_eq!(r.newest_range(Limit::All), Some((0, 9)));
        assert_eq!(r.newest_range(Limit::Newest(3)), Some((7, 9)));
        assert_eq!(r.newest_range(Limit::Newest(30)), Some((0, 9)));
        assert_eq!(r.newest_range(Limit::Newest(0)), None);
        r.clear(3.0);
        assert_eq!(r.newest_range(Limit::All), None);
        r.append(&[true, false], 4.0).unwrap();
        assert_eq!(r.newest_range(Limit::All), Some((10, 11)));
        assert_eq!(r.newest_range(Limit::Newest(1)), Some((11, 11)));
    }

    #[test]
    fn pop_gives_back_the_newest_slot_and_turn() {
        let mut r = record();
        r.append(&[true, false, true, false], 2.0).unwrap();
        assert_eq!(r.newest_seq(), Some(3));
        r.pop(Some(2), 3.0);
        assert_eq!((r.item_count, r.next_seq, r.last_turn), (3, 3, 2));
        r.pop(Some(1), 4.0);
        assert_eq!((r.item_count, r.next_seq, r.last_turn), (2, 2, 1));
        // The next user message opens turn 2 again, as if the popped exchange never happened.
        let p = r.append(&[true], 5.0).unwrap();
        assert_eq!(p, [Placement { seq: 2, turn: 2 }]);
        r.pop(Some(1), 6.0);
        r.pop(Some(1), 6.0);
        r.pop(None, 7.0);
        assert_eq!((r.item_count, r.last_turn, r.newest_seq()), (0, 0, None));
        r.pop(None, 8.0);
        assert_eq!(
            r.updated_at, 7.0,
            "popping an empty session changes nothing"
        );
    }

    #[test]
    fn owner_must_match_exactly() {
        let r = record();
        assert!(r.check_owner(Some("u")).is_ok());
        assert_eq!(
            r.check_owner(Some("v")).unwrap_err().code,
            SessionErrorCode::UserMismatch
        );
        assert_eq!(
            r.check_owner(None).unwrap_err().code,
            SessionErrorCode::UserMismatch
        );
        let anonymous = SessionRecord::new("s", None, 0.0);
        assert!(anonymous.check_owner(None).is_ok());
        assert!(anonymous.check_owner(Some("u")).is_err());
    }

    #[test]
    fn only_user_messages_start_turns() {
        assert!(starts_turn(Some("user"), None));
        assert!(starts_turn(Some("user"), Some("message")));
        assert!(!starts_turn(Some("assistant"), None));
        assert!(!starts_turn(Some("system"), Some("message")));
        assert!(!starts_turn(None, Some("function_call_output")));
        assert!(!starts_turn(Some("user"), Some("function_call")));
    }

    #[test]
    fn generated_ids_are_version_4_uuids() {
        assert_eq!(uuid_v4([0; 16]), "00000000-0000-4000-8000-000000000000");
        assert_eq!(uuid_v4([0xff; 16]), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let counting: [u8; 16] = std::array::from_fn(|i| i as u8 * 17);
        assert_eq!(uuid_v4(counting), "00112233-4455-4677-8899-aabbccddeeff");
    }

    #[test]
    fn ids_must_not_be_blank() {
        assert!(validate_session_id("chat 1").is_ok());
        assert!(validate_session_id("会話").is_ok());
        for bad in ["", " ", "\t\n"] {
            assert_eq!(
                validate_session_id(bad).unwrap_err().code,
                SessionErrorCode::InvalidSessionId
            );
            assert_eq!(
                validate_user_id(bad).unwrap_err().code,
                SessionErrorCode::InvalidUserId
            );
        }
    }

    #[test]
    fn counts_must_be_safe_non_negative_integers() {
        assert_eq!(safe_count(0.0), Some(0));
        assert_eq!(safe_count(9007199254740991.0), Some(MAX_SAFE_INTEGER));
        for bad in [
            -1.0,
            0.5,
            9007199254740992.0,
            2f64.powi(64),
            f64::NAN,
            f64::INFINITY,
        ] {
            assert_eq!(safe_count(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_inconsistent_record_is_refused_and_names_the_field() {
        let mut r = record();
        r.append(&[true, false], 1.0).unwrap();
        assert!(r.check_consistent().is_ok());
        let mut past = r.clone();
        past.first_seq = 5;
        let e = past.check_consistent().unwrap_err();
        assert_eq!(e.code, SessionErrorCode::CorruptSession);
        assert!(
            e.message.contains("firstSeq 5 is past nextSeq 2"),
            "{}",
            e.message
        );
        let mut count = r.clone();
        count.item_count = 7;
        let e = count.check_consistent().unwrap_err();
        assert!(e.message.contains("itemCount 7"), "{}", e.message);
        assert!(e.message.contains("repairSession()"));
    }

    #[test]
    fn appending_past_the_safe_range_changes_nothing() {
        let mut r = record();
        r.next_seq = MAX_SAFE_INTEGER - 1;
        r.first_seq = r.next_seq;
        let before = r.clone();
        let e = r.append(&[true, false], 2.0).unwrap_err();
        assert_eq!(e.code, SessionErrorCode::CorruptSession);
        assert_eq!(r, before);
        assert_eq!(r.append(&[true], 2.0).unwrap()[0].seq, MAX_SAFE_INTEGER - 1);
    }

    #[test]
    fn a_suffix_is_replaced_in_the_freed_slots_with_turns_continued() {
        let mut r = record();
        r.append(&[true, false, true, false], 1.0).unwrap();
        // Replace the last two (turn 2) by a new question and answer.
        let p = r.replace_suffix(2, &[true, false, false], 1, 2.0).unwrap();
        assert_eq!(
            p,
            [
                Placement { seq: 2, turn: 2 },
                Placement { seq: 3, turn: 2 },
                Placement { seq: 4, turn: 2 }
            ]
        );
        assert_eq!((r.item_count, r.next_seq, r.last_turn), (5, 5, 2));
        assert!(r.check_consistent().is_ok());
        // Removing without replacing is a truncation; the turn goes back to the kept item's.
        r.replace_suffix(3, &[], 1, 3.0).unwrap();
        assert_eq!((r.item_count, r.next_seq, r.last_turn), (2, 2, 1));
        r.replace_suffix(2, &[], 0, 4.0).unwrap();
        assert_eq!((r.item_count, r.next_seq, r.last_turn), (0, 0, 0));
        let unchanged = r.clone();
        r.replace_suffix(0, &[], 0, 5.0).unwrap();
        assert_eq!(
            r, unchanged,
            "an empty replacement of nothing changes nothing"
        );
    }

    #[test]
    fn a_whole_history_is_replaced_after_every_old_key() {
        let mut r = record();
        r.append(&[true, false, true], 1.0).unwrap();
        let p = r.replace_all(&[false, true], 3, 2.0).unwrap();
        assert_eq!(
            p,
            [Placement { seq: 3, turn: 0 }, Placement { seq: 4, turn: 1 }]
        );
        assert_eq!(
            (
                r.first_seq,
                r.next_seq,
                r.item_count,
                r.last_turn,
                r.archived_count
            ),
            (3, 5, 2, 1, 3)
        );
        assert!(r.check_consistent().is_ok());
        assert_eq!(
            (r.record_operation(), r.record_operation(), r.next_op_seq),
            (0, 1, 2)
        );
        r.clear(3.0);
        assert_eq!((r.next_op_seq, r.archived_count, r.item_count), (0, 0, 0));
    }

    #[test]
    fn the_newest_turns_start_at_a_turn_number() {
        let mut r = record();
        assert_eq!(
            r.oldest_turn_of(Limit::All),
            None,
            "an empty history has no turns"
        );
        r.append(&[false, true, false, true, false, false], 1.0)
            .unwrap();
        assert_eq!(r.turn_count(), 2);
        assert_eq!(r.oldest_turn_of(Limit::Newest(1)), Some(2));
        assert_eq!(r.oldest_turn_of(Limit::Newest(2)), Some(1));
        // Turn 0 (before the first user message) is the oldest turn.
        assert_eq!(r.oldest_turn_of(Limit::Newest(3)), Some(0));
        assert_eq!(r.oldest_turn_of(Limit::Newest(99)), Some(0));
        assert_eq!(r.oldest_turn_of(Limit::Newest(0)), None);
        assert_eq!(r.oldest_turn_of(Limit::All), Some(0));
    }

    #[test]
    fn default_titles_are_one_line_cut_at_a_word() {
        assert_eq!(
            default_title("  What city is\n the bridge in? "),
            "What city is the bridge in?"
        );
        let long = "word ".repeat(30);
        let title = default_title(&long);
        assert!(title.chars().count() <= TITLE_LENGTH, "{title}");
        assert!(title.ends_with("word…"), "{title}");
        let one_word = "x".repeat(200);
        assert_eq!(default_title(&one_word).chars().count(), TITLE_LENGTH);
        let unicode = "ü".repeat(100);
        assert_eq!(default_title(&unicode).chars().count(), TITLE_LENGTH);
        assert_eq!(default_title(""), "");
    }
}
