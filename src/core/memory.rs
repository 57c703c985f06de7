//! The in-memory history behind `MemorySession`, generic over the item type so that the same
//! rules as the IndexedDB backend (sequence numbers, turns, limits) are tested natively.

use super::error::Result;
use super::history::Limit;
use super::session::SessionRecord;

#[derive(Debug, Clone, PartialEq)]
pub struct Entry<T> {
    pub seq: u64,
    pub turn: u64,
    pub item: T,
}

#[derive(Debug, Clone)]
pub struct MemoryHistory<T> {
    record: SessionRecord,
    entries: Vec<Entry<T>>,
}

impl<T> MemoryHistory<T> {
    pub fn new(session_id: &str, now: f64) -> Self {
        MemoryHistory {
            record: SessionRecord::new(session_id, None, now),
            entries: Vec::new(),
        }
    }

    pub fn record(&self) -> &SessionRecord {
        &self.record
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
        self.entries.extend(
            items
                .into_iter()
                .zip(placements)
                .map(|((item, _), p)| Entry {
                    seq: p.seq,
                    turn: p.turn,
                    item,
                }),
        );
        Ok(())
    }

    /// Removes and returns the newest item.
    pub fn pop(&mut self, now: f64) -> Option<T> {
        let entry = self.entries.pop()?;
        let turn = self.entries.last().map(|e| e.turn);
        self.record.pop(turn, now);
        Some(entry.item)
    }

    pub fn clear(&mut self, now: f64) {
        self.entries.clear();
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
        assert_eq!(h.pop(2.0), Some("a2"));
        assert_eq!(h.pop(2.0), Some("q2"));
        assert_eq!(h.record().last_turn, 1);
        h.add(vec![("q2'", true)], 3.0).unwrap();
        let last = h.items(Limit::Newest(1)).next().cloned();
        assert_eq!(
            last,
            Some(Entry {
                seq: 2,
                turn: 2,
                item: "q2'"
            })
        );
        h.clear(4.0);
        assert_eq!(items(&h, Limit::All), Vec::<&str>::new());
        assert_eq!(h.record().item_count, 0);
        h.add(vec![("again", true)], 5.0).unwrap();
        assert_eq!(items(&h, Limit::All), ["again"]);
    }
}
