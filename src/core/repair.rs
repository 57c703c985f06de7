//! Rebuilding a damaged session from the items actually stored: which rows are kept, where each
//! goes, and the session record that matches them. The backend reads the rows, applies the plan
//! in one transaction, and reports what changed.

use super::session::{Placement, SessionRecord};

/// One stored message row, as the repair sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredRow {
    /// Its sequence number, from its key.
    pub seq: u64,
    /// Its `turn` field, if it is a safe count.
    pub turn: Option<u64>,
    /// Whether it holds an item (an object): a row without one cannot be returned, and goes.
    pub has_item: bool,
    /// Whether its item is a user message, which opens a turn.
    pub starts_turn: bool,
}

/// What the repair does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairPlan {
    /// Rows (by index) that hold no item, to delete.
    pub drop: Vec<usize>,
    /// Rows (by index) whose sequence number or turn changes, with where they go, in order.
    pub moves: Vec<(usize, Placement)>,
    /// How many rows stay.
    pub kept: u64,
    pub first_seq: u64,
    pub next_seq: u64,
    pub last_turn: u64,
}

/// Keeps every row that holds an item, in stored order, numbered without gaps from the first
/// kept row's sequence number (so only rows after a gap move, and a row never moves onto a key
/// another kept row still holds), with turns counted again from the items.
pub fn plan_repair(rows: &[StoredRow]) -> RepairPlan {
    let first_seq = rows.iter().find(|r| r.has_item).map_or(0, |r| r.seq);
    let mut plan = RepairPlan {
        drop: Vec::new(),
        moves: Vec::new(),
        kept: 0,
        first_seq,
        next_seq: first_seq,
        last_turn: 0,
    };
    for (i, row) in rows.iter().enumerate() {
        if !row.has_item {
            plan.drop.push(i);
            continue;
        }
        if row.starts_turn {
            plan.last_turn += 1;
        }
        let place = Placement {
            seq: plan.next_seq,
            turn: plan.last_turn,
        };
        if row.seq != place.seq || row.turn != Some(place.turn) {
            plan.moves.push((i, place));
        }
        plan.next_seq += 1;
        plan.kept += 1;
    }
    if plan.kept == 0 {
        plan.last_turn = 0;
    }
    plan
}

impl RepairPlan {
    /// The session record that matches the repaired rows.
    pub fn record(
        &self,
        id: &str,
        user_id: Option<&str>,
        created_at: f64,
        now: f64,
    ) -> SessionRecord {
        let mut record = SessionRecord::new(id, user_id, created_at);
        record.updated_at = now;
        record.item_count = self.kept;
        record.first_seq = self.first_seq;
        record.next_seq = self.next_seq;
        record.last_turn = self.last_turn;
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: u64, turn: u64, has_item: bool, starts_turn: bool) -> StoredRow {
        StoredRow {
            seq,
            turn: Some(turn),
            has_item,
            starts_turn,
        }
    }

    #[test]
    fn a_sound_history_needs_no_move() {
        let rows = [
            row(3, 1, true, true),
            row(4, 1, true, false),
            row(5, 2, true, true),
        ];
        let plan = plan_repair(&rows);
        assert!(plan.drop.is_empty() && plan.moves.is_empty());
        assert_eq!(
            (plan.kept, plan.first_seq, plan.next_seq, plan.last_turn),
            (3, 3, 6, 2)
        );
        let record = plan.record("s", Some("u"), 1.0, 9.0);
        assert!(record.check_consistent().is_ok());
        assert_eq!(
            (record.item_count, record.updated_at, record.created_at),
            (3, 9.0, 1.0)
        );
    }

    #[test]
    fn a_gap_closes_and_rows_without_items_go() {
        let rows = [
            row(0, 1, true, true),
            row(1, 1, false, false),
            row(2, 1, true, false),
            row(5, 2, true, true),
            row(6, 2, true, false),
        ];
        let plan = plan_repair(&rows);
        assert_eq!(plan.drop, [1]);
        assert_eq!(
            plan.moves,
            [
                (2, Placement { seq: 1, turn: 1 }),
                (3, Placement { seq: 2, turn: 2 }),
                (4, Placement { seq: 3, turn: 2 })
            ]
        );
        assert_eq!(
            (plan.kept, plan.first_seq, plan.next_seq, plan.last_turn),
            (4, 0, 4, 2)
        );
        // Every row moves to a key at or below its own: never onto a row still to be moved.
        for (i, place) in &plan.moves {
            assert!(place.seq <= rows[*i].seq);
        }
    }

    #[test]
    fn wrong_turns_are_counted_again() {
        let rows = [StoredRow {
            seq: 0,
            turn: None,
            has_item: true,
            starts_turn: true,
        }];
        assert_eq!(
            plan_repair(&rows).moves,
            [(0, Placement { seq: 0, turn: 1 })]
        );
    }

    #[test]
    fn nothing_left_is_an_empty_session() {
        let plan = plan_repair(&[row(7, 1, false, true)]);
        assert_eq!(plan.drop, [0]);
        assert_eq!(
            (plan.kept, plan.first_seq, plan.next_seq, plan.last_turn),
            (0, 0, 0, 0)
        );
        assert!(plan_repair(&[])
            .record("s", None, 0.0, 0.0)
            .check_consistent()
            .is_ok());
    }
}
