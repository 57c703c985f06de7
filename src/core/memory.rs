//! The in-memory history behind `MemorySession`, generic over the item type so that the same
//! rules as the IndexedDB backend (sequence numbers, turns, limits) are tested natively.

use std::collections::VecDeque;

use super::error::Result;
use super::history::Limit;
use super::session::SessionRecord;
use super::transaction::{replace_function_call, HistoryTransaction, Outcome, OPERATION_LOG_LIMIT};

#[derive(Debug, Clone, PartialEq)]
pub struct Entry<T> {
    pub seq: u64,
    pub turn: u64,
    /// When it was added, in milliseconds since the Unix epoch.
    pub created_at: f64,
    pub item: T,
}

/// Applied history transactions, oldest first: operation id and digest. One per session, shared
/// by its branches (an operation is applied once in the session, whichever branch it was on).
#[derive(Debug, Clone, Default)]
pub struct OperationLog(VecDeque<(String, String)>);

impl OperationLog {
    /// The digest operation `operation_id` was applied with, if the log holds it.
    pub fn applied(&self, operation_id: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(id, _)| *id == operation_id)
            .map(|(_, digest)| digest.as_str())
    }

    fn record(&mut self, transaction: &HistoryTransaction) {
        self.0
            .push_back((transaction.operation_id.clone(), transaction.digest.clone()));
        while self.0.len() as u64 > OPERATION_LOG_LIMIT {
            self.0.pop_front();
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Debug, Clone)]
pub struct MemoryHistory<T> {
    record: SessionRecord,
    entries: Vec<Entry<T>>,
    /// Items compaction replaced, oldest first.
    archive: Vec<T>,
}

impl<T> MemoryHistory<T> {
    pub fn new(session_id: &str, now: f64) -> Self {
        MemoryHistory {
            record: SessionRecord::new(session_id, None, now),
            entries: Vec::new(),
            archive: Vec::new(),
        }
    }

    /// The items of the newest `turns` whole turns, oldest first.
    pub fn recent_turns(&self, turns: Limit) -> &[Entry<T>] {
        match self.record.oldest_turn_of(turns) {
            None => &[],
            Some(oldest) => {
                let start = self.entries.partition_point(|e| e.turn < oldest);
                &self.entries[start..]
            }
        }
    }

    /// The entries `lead` takes (compaction summaries) at the head of the history, before its
    /// first turn, when the newest `turns` whole turns do not reach them: a read of those turns
    /// shows them first.
    pub fn heading(&self, turns: Limit, lead: impl Fn(&T) -> bool) -> &[Entry<T>] {
        let start = match self.record.oldest_turn_of(turns) {
            Some(oldest) if oldest > 0 => self.entries.partition_point(|e| e.turn < oldest),
            _ => 0,
        };
        let n = self.entries[..start]
            .iter()
            .take_while(|e| e.turn == 0 && lead(&e.item))
            .count();
        &self.entries[..n]
    }

    /// The newest `n` entries, oldest first.
    pub fn newest(&self, n: usize) -> &[Entry<T>] {
        &self.entries[self.entries.len().saturating_sub(n)..]
    }

    /// Applies a history transaction (see [`HistoryTransaction::decide`]); `stored_suffix` holds
    /// the canonical forms of the newest `expected_suffix.len()` items. `false` when the
    /// operation was applied before, so nothing changed.
    pub fn apply_transaction(
        &mut self,
        log: &mut OperationLog,
        transaction: &HistoryTransaction,
        items: Vec<(T, bool)>,
        stored_suffix: &[Option<String>],
        now: f64,
    ) -> Result<bool> {
        let applied = log.applied(&transaction.operation_id);
        let remove = match transaction.decide(applied, self.record.item_count, stored_suffix)? {
            Outcome::AlreadyApplied => return Ok(false),
            Outcome::Apply { remove } => remove,
        };
        let kept = self.entries.len() - remove;
        let base_turn = match (remove, kept) {
            (0, _) => self.record.last_turn,
            (_, 0) => 0,
            _ => self.entries[kept - 1].turn,
        };
        let starts: Vec<bool> = items.iter().map(|(_, s)| *s).collect();
        let placements = self
            .record
            .replace_suffix(remove as u64, &starts, base_turn, now)?;
        if remove > 0 && transaction.rewrites {
            self.record.rewrote();
        }
        // A replacement that begins with the items it removes (a run saving again) writes them
        // again as they were, made when they were.
        let times: Vec<Option<f64>> = match transaction.rewrites {
            true => Vec::new(),
            false => self.entries[kept..]
                .iter()
                .map(|e| Some(e.created_at))
                .collect(),
        };
        self.entries.truncate(kept);
        self.push(items, placements, now, &times);
        self.record.record_operation();
        log.record(transaction);
        Ok(true)
    }

    /// Replaces the whole history by `items`; the old items marked in `archive` (one mark per
    /// item, from the oldest; those past its end unmarked) move to the archive, the others are
    /// dropped. `stands`: for each new item, the old one it stands for, if any, whose time it
    /// keeps.
    pub fn replace_all(
        &mut self,
        items: Vec<(T, bool)>,
        (archive, stands): (&[bool], &[Option<usize>]),
        now: f64,
    ) -> Result<()> {
        let starts: Vec<bool> = items.iter().map(|(_, s)| *s).collect();
        let moved = archive
            .iter()
            .take(self.entries.len())
            .filter(|a| **a)
            .count();
        let placements = self.record.replace_all(&starts, moved as u64, now)?;
        let times: Vec<Option<f64>> = stands
            .iter()
            .map(|s| s.and_then(|i| self.entries.get(i)).map(|e| e.created_at))
            .collect();
        let old = std::mem::take(&mut self.entries);
        self.archive.extend(
            old.into_iter()
                .zip(archive)
                .filter(|(_, a)| **a)
                .map(|(e, _)| e.item),
        );
        self.push(items, placements, now, &times);
        Ok(())
    }

    /// The archived items, oldest first: the newest `limit` (all without one) after skipping
    /// the `skip` newest.
    pub fn archived(&self, limit: Option<u64>, skip: u64) -> &[T] {
        let end = self
            .archive
            .len()
            .saturating_sub(skip.min(usize::MAX as u64) as usize);
        let start = match limit {
            Some(n) => end.saturating_sub(n.min(usize::MAX as u64) as usize),
            None => 0,
        };
        &self.archive[start..end]
    }

    /// `applyHistoryMutations`: each `(call_id, replacement)` makes the first `function_call`
    /// with `call_id` (as `call_id_of` reads an item) `replacement`, and removes later ones with
    /// that id. One rewrite, as one write, when any matched; whether any did.
    pub fn replace_function_calls(
        &mut self,
        mutations: impl IntoIterator<Item = (String, T)>,
        call_id_of: impl Fn(&T) -> Option<String>,
        now: f64,
    ) -> bool {
        let mut any = false;
        for (call_id, replacement) in mutations {
            any |= self.replace_function_call(&call_id, replacement, &call_id_of, now);
        }
        if any {
            self.record.rewrote();
        }
        any
    }

    fn replace_function_call(
        &mut self,
        call_id: &str,
        replacement: T,
        call_id_of: &impl Fn(&T) -> Option<String>,
        now: f64,
    ) -> bool {
        let ids: Vec<Option<String>> = self.entries.iter().map(|e| call_id_of(&e.item)).collect();
        let refs: Vec<Option<&str>> = ids.iter().map(Option::as_deref).collect();
        let Some((first, later)) = replace_function_call(&refs, call_id) else {
            return false;
        };
        self.entries[first].item = replacement;
        let first_seq = self.record.first_seq;
        let mut index = 0;
        self.entries.retain(|_| {
            index += 1;
            !later.contains(&(index - 1))
        });
        // The items after a removed one move down, so the sequence numbers keep no gap; turns
        // stay as they were (a function call never opens one).
        for (i, entry) in self.entries.iter_mut().enumerate() {
            entry.seq = first_seq + i as u64;
        }
        self.record.item_count = self.entries.len() as u64;
        self.record.next_seq = first_seq + self.record.item_count;
        self.record.last_turn = self.entries.last().map_or(0, |e| e.turn);
        self.record.updated_at = now;
        true
    }

    /// Appends `items` at `placements`, each made `now` but for those `times` gives (from the
    /// first) a time of.
    fn push(
        &mut self,
        items: Vec<(T, bool)>,
        placements: Vec<super::session::Placement>,
        now: f64,
        times: &[Option<f64>],
    ) {
        self.entries
            .extend(
                items
                    .into_iter()
                    .zip(placements)
                    .enumerate()
                    .map(|(i, ((item, _), p))| Entry {
                        seq: p.seq,
                        turn: p.turn,
                        created_at: times.get(i).copied().flatten().unwrap_or(now),
                        item,
                    }),
            );
    }

    pub fn record(&self) -> &SessionRecord {
        &self.record
    }

    /// Dates a history never written to from `now`, its first write's time (it was made at the
    /// session's first call, which may have been a read long before).
    pub fn first_written(&mut self, now: f64) {
        self.record.created_at = now;
        self.record.updated_at = now;
    }

    /// Every entry, oldest first.
    pub fn entries(&self) -> &[Entry<T>] {
        &self.entries
    }

    /// A new history holding the entries before turn `turn` (its first entry: a user message),
    /// for a branch made to ask that turn again; `None` when there is no such turn. The operation
    /// log and the archive stay with this history.
    pub fn fork_before_turn(&self, turn: u64, now: f64) -> Option<MemoryHistory<T>>
    where
        T: Clone,
    {
        if turn == 0 {
            return None;
        }
        let at = self.entries.iter().position(|e| e.turn == turn)?;
        let mut record = SessionRecord::new(&self.record.id, None, now);
        record.first_seq = self.record.first_seq;
        record.next_seq = self.record.first_seq + at as u64;
        record.item_count = at as u64;
        record.last_turn = turn - 1;
        if at == 0 {
            record.last_turn = 0;
        }
        Some(MemoryHistory {
            record,
            entries: self.entries[..at].to_vec(),
            archive: Vec::new(),
        })
    }

    /// The newest items within `limit`, oldest first.
    pub fn items(&self, limit: Limit) -> impl Iterator<Item = &Entry<T>> {
        let (start, end) = limit.window(self.entries.len() as u64);
        self.entries[start as usize..end as usize].iter()
    }

    /// Appends items in order; the flag says whether the item is a user message.
    pub fn add(&mut self, items: Vec<(T, bool)>, now: f64) -> Result<()> {
        let starts: Vec<bool> = items.iter().map(|(_, s)| *s).collect();
        let placements = self.record.append(&starts, now)?;
        self.push(items, placements, now, &[]);
        Ok(())
    }

    /// Removes and returns the newest item.
    pub fn pop(&mut self, now: f64) -> Option<T> {
        let entry = self.entries.pop()?;
        let turn = self.entries.last().map(|e| e.turn);
        self.record.pop(turn, now);
        Some(entry.item)
    }

    /// Removes every item, with the archive (the session's operation log is its owner's).
    pub fn clear(&mut self, now: f64) {
        self.entries.clear();
        self.archive.clear();
        self.record.clear(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(h: &MemoryHistory<&'static str>, limit: Limit) -> Vec<&'static str> {
        h.items(limit).map(|e| e.item).collect()
    }

    #[test]
    fn a_fork_holds_the_turns_before_its_own() {
        let mut h = MemoryHistory::new("s", 0.0);
        h.add(
            vec![
                ("sys", false),
                ("q1", true),
                ("a1", false),
                ("q2", true),
                ("a2", false),
            ],
            1.0,
        )
        .unwrap();
        let mut b = h.fork_before_turn(2, 2.0).unwrap();
        assert_eq!(items(&b, Limit::All), ["sys", "q1", "a1"]);
        assert_eq!((b.record().item_count, b.record().last_turn), (3, 1));
        b.add(vec![("q2'", true)], 3.0).unwrap();
        assert_eq!(b.entries().last().map(|e| (e.seq, e.turn)), Some((3, 2)));
        assert_eq!(items(&h, Limit::All), ["sys", "q1", "a1", "q2", "a2"]);
        assert!(h.fork_before_turn(3, 2.0).is_none());
        assert!(h.fork_before_turn(0, 2.0).is_none());
        assert_eq!(
            items(&h.fork_before_turn(1, 2.0).unwrap(), Limit::All),
            ["sys"]
        );
    }

    #[test]
    fn add_get_pop_clear() {
        let mut h = MemoryHistory::new("s", 0.0);
        assert_eq!(h.pop(1.0), None);
        h.add(
            vec![("q1", true), ("a1", false), ("q2", true), ("a2", false)],
            1.0,
        )
        .unwrap();
        assert_eq!(items(&h, Limit::All), ["q1", "a1", "q2", "a2"]);
        assert_eq!(items(&h, Limit::Newest(3)), ["a1", "q2", "a2"]);
        assert_eq!(items(&h, Limit::Newest(0)), Vec::<&str>::new());
        assert_eq!(items(&h, Limit::Newest(99)).len(), 4);
        assert_eq!(h.record().rewrites, 0, "appends rewrite nothing");
        assert_eq!(h.pop(2.0), Some("a2"));
        assert_eq!(h.pop(2.0), Some("q2"));
        assert_eq!(h.record().last_turn, 1);
        assert_eq!(h.record().rewrites, 2, "each pop counts");
        h.add(vec![("q2'", true)], 3.0).unwrap();
        let last = h.items(Limit::Newest(1)).next().cloned();
        assert_eq!(
            last,
            Some(Entry {
                seq: 2,
                turn: 2,
                created_at: 3.0,
                item: "q2'"
            })
        );
        h.clear(4.0);
        assert_eq!(items(&h, Limit::All), Vec::<&str>::new());
        assert_eq!(h.record().item_count, 0);
        assert_eq!(h.record().rewrites, 3);
        h.add(vec![("again", true)], 5.0).unwrap();
        assert_eq!(items(&h, Limit::All), ["again"]);
    }

    fn append(id: &str, digest: &str, items: &[&'static str]) -> HistoryTransaction {
        let _ = items;
        HistoryTransaction {
            operation_id: id.into(),
            kind: crate::core::transaction::TransactionKind::AppendItems,
            expected_suffix: Vec::new(),
            digest: digest.into(),
            rewrites: false,
        }
    }

    #[test]
    fn transactions_apply_once_and_replace_suffixes() {
        let mut h = MemoryHistory::new("s", 0.0);
        let mut log = OperationLog::default();
        h.add(vec![("q1", true), ("a1", false)], 1.0).unwrap();
        let t = append("op1", "d1", &["q2"]);
        assert!(h
            .apply_transaction(&mut log, &t, vec![("q2", true)], &[], 2.0)
            .unwrap());
        assert!(!h
            .apply_transaction(&mut log, &t, vec![("q2", true)], &[], 3.0)
            .unwrap());
        assert_eq!(items(&h, Limit::All), ["q1", "a1", "q2"]);
        assert_eq!(h.record().rewrites, 0, "an append rewrites nothing");
        let replace = HistoryTransaction {
            operation_id: "op2".into(),
            kind: crate::core::transaction::TransactionKind::ReplaceSuffix,
            expected_suffix: vec!["form of a1".into(), "form of q2".into()],
            digest: "d2".into(),
            rewrites: true,
        };
        let stored = [
            Some("form of a1".to_string()),
            Some("form of q2".to_string()),
        ];
        assert!(h
            .apply_transaction(&mut log, &replace, vec![("A1", false)], &stored, 4.0)
            .unwrap());
        assert_eq!(items(&h, Limit::All), ["q1", "A1"]);
        assert_eq!((h.record().last_turn, h.record().next_op_seq), (1, 2));
        assert_eq!(h.record().rewrites, 1);
        // A suffix replaced by itself and more (a run saving again) only appends.
        let again = HistoryTransaction {
            operation_id: "op4".into(),
            expected_suffix: vec!["form of A1".into()],
            rewrites: false,
            ..replace.clone()
        };
        let stored_again = [Some("form of A1".to_string())];
        assert!(h
            .apply_transaction(
                &mut log,
                &again,
                vec![("A1", false), ("q3", true)],
                &stored_again,
                4.5
            )
            .unwrap());
        assert_eq!(items(&h, Limit::All), ["q1", "A1", "q3"]);
        assert_eq!(h.record().rewrites, 1);
        let wrong = [Some("x".to_string()), Some("y".to_string())];
        let other = HistoryTransaction {
            operation_id: "op3".into(),
            ..replace.clone()
        };
        assert!(h
            .apply_transaction(&mut log, &other, vec![], &wrong, 5.0)
            .is_err());
        assert_eq!(items(&h, Limit::All), ["q1", "A1", "q3"]);
        assert_eq!(
            h.record().rewrites,
            1,
            "a refused transaction changes nothing"
        );
    }

    #[test]
    fn compaction_archives_what_it_replaces() {
        let mut h = MemoryHistory::new("s", 0.0);
        h.add(vec![("q1", true), ("a1", false), ("q2", true)], 1.0)
            .unwrap();
        h.replace_all(
            vec![("summary", false), ("q2", true)],
            (&[true; 3], &[]),
            2.0,
        )
        .unwrap();
        assert_eq!(items(&h, Limit::All), ["summary", "q2"]);
        assert_eq!(h.archived(None, 0), ["q1", "a1", "q2"]);
        assert_eq!(h.archived(Some(2), 0), ["a1", "q2"]);
        assert_eq!(h.archived(Some(2), 2), ["q1"]);
        assert!(h.archived(Some(2), 9).is_empty());
        h.replace_all(vec![("again", false)], (&[], &[]), 3.0)
            .unwrap();
        assert_eq!(
            h.archived(None, 0).len(),
            3,
            "archive: false keeps nothing more"
        );
        // Those `archive` marks move; the others are dropped.
        h.replace_all(vec![("last", false)], (&[], &[]), 3.5)
            .unwrap();
        h.add(vec![("q3", true), ("a3", false)], 3.6).unwrap();
        h.replace_all(
            vec![("summary 2", false), ("a3", false)],
            (&[true, true], &[]),
            3.7,
        )
        .unwrap();
        assert_eq!(h.archived(Some(2), 0), ["last", "q3"]);
        h.replace_all(
            vec![("summary 3", false), ("a3", false)],
            (&[true, false, false], &[]),
            3.8,
        )
        .unwrap();
        assert_eq!(h.archived(Some(2), 0), ["q3", "summary 2"]);
        assert_eq!(h.record().archived_count, 6);
        h.clear(4.0);
        assert!(h.archived(None, 0).is_empty());
    }

    #[test]
    fn items_written_again_keep_their_times() {
        let mut h = MemoryHistory::new("s", 0.0);
        h.add(vec![("q1", true), ("a1", false), ("q2", true)], 1.0)
            .unwrap();
        h.add(vec![("a2", false)], 2.0).unwrap();
        // Compacted: the summary is new, the turn it keeps keeps its times.
        h.replace_all(
            vec![("summary", false), ("q2", true), ("a2", false)],
            (&[true, true, false, false], &[None, Some(2), Some(3)]),
            3.0,
        )
        .unwrap();
        let times: Vec<f64> = h.items(Limit::All).map(|e| e.created_at).collect();
        assert_eq!(times, [3.0, 1.0, 2.0]);
        // A run saving again: the question it repeats keeps its time, the answer is new.
        let mut log = OperationLog::default();
        h.add(vec![("q3", true)], 4.0).unwrap();
        let save = HistoryTransaction {
            operation_id: "op".into(),
            kind: crate::core::transaction::TransactionKind::ReplaceSuffix,
            expected_suffix: vec!["q3".into()],
            digest: "d".into(),
            rewrites: false,
        };
        h.apply_transaction(
            &mut log,
            &save,
            vec![("q3", true), ("a3", false)],
            &[Some("q3".into())],
            5.0,
        )
        .unwrap();
        let times: Vec<f64> = h.items(Limit::Newest(2)).map(|e| e.created_at).collect();
        assert_eq!(times, [4.0, 5.0]);
    }

    #[test]
    fn a_function_call_is_replaced_once_and_its_duplicates_go() {
        let mut h = MemoryHistory::new("s", 0.0);
        h.add(
            vec![
                ("q", true),
                ("call c1", false),
                ("out", false),
                ("call c1", false),
                ("a", false),
            ],
            1.0,
        )
        .unwrap();
        let id = |item: &&str| item.strip_prefix("call ").map(str::to_string);
        let one = |call: &str, by: &'static str| [(call.to_string(), by)];
        assert!(h.replace_function_calls(one("c1", "call c1'"), id, 2.0));
        assert_eq!(items(&h, Limit::All), ["q", "call c1'", "out", "a"]);
        let seqs: Vec<u64> = h.items(Limit::All).map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1, 2, 3]);
        assert_eq!(h.record().next_seq, 4);
        assert!(!h.replace_function_calls(one("zz", "x"), id, 3.0));
        assert_eq!(h.record().rewrites, 1);
        // Several in one call: one rewrite, as IndexedDB counts it.
        h.add(vec![("call c2", false), ("call c3", false)], 4.0)
            .unwrap();
        let both = [
            ("c2".to_string(), "call c2'"),
            ("c3".to_string(), "call c3'"),
        ];
        assert!(h.replace_function_calls(both, id, 5.0));
        assert_eq!(h.record().rewrites, 2);
    }

    #[test]
    fn the_newest_turns_are_whole() {
        let mut h = MemoryHistory::new("s", 0.0);
        h.add(
            vec![
                ("sys", false),
                ("q1", true),
                ("call", false),
                ("out", false),
                ("a1", false),
                ("q2", true),
                ("a2", false),
            ],
            1.0,
        )
        .unwrap();
        let turns = |h: &MemoryHistory<&'static str>, n| -> Vec<&str> {
            h.recent_turns(n).iter().map(|e| e.item).collect()
        };
        assert_eq!(turns(&h, Limit::Newest(1)), ["q2", "a2"]);
        assert_eq!(
            turns(&h, Limit::Newest(2)),
            ["q1", "call", "out", "a1", "q2", "a2"]
        );
        assert_eq!(turns(&h, Limit::Newest(3)).len(), 7);
        assert!(turns(&h, Limit::Newest(0)).is_empty());
        assert_eq!(turns(&h, Limit::All).len(), 7);
    }
}
