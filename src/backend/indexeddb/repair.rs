//! `repairSession`: rebuilds a damaged session from the items actually stored, in one
//! transaction. Rows without an item are deleted, the others are renumbered without gaps (in
//! their stored order) and their turns counted again, and the session record is written anew to
//! match. The owner is kept when the old record names one that can be read.

use idb::TransactionMode;
use wasm_bindgen::JsValue;

use crate::backend::js::{self, exact_string, object};
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::repair::{plan_repair, StoredRow};
use crate::core::schema::{ARCHIVE_STORE, MESSAGES_STORE, OPERATIONS_STORE, SESSIONS_STORE};
use crate::core::session::{safe_count, starts_turn};

use super::open::Connection;
use super::record::{
    all_of_session, indexed_with_tools, item_of, record_from_js, rewrites_of, turn_of, Indexer,
    RowWriter, StoredRecord,
};
use super::tx::{listening, Tx};

/// What a repair did, as `repairSession` reports it.
pub struct RepairReport {
    pub existed: bool,
    /// The owner of the repaired session (`None`: no user).
    pub user_id: Option<String>,
    pub item_count: u64,
    pub removed_rows: usize,
    pub renumbered_rows: usize,
}

impl RepairReport {
    pub fn to_js(&self) -> JsValue {
        object(&[
            ("existed", self.existed.into()),
            (
                "userId",
                self.user_id
                    .as_deref()
                    .map_or(JsValue::NULL, JsValue::from_str),
            ),
            ("itemCount", (self.item_count as f64).into()),
            ("removedRows", (self.removed_rows as f64).into()),
            ("renumberedRows", (self.renumbered_rows as f64).into()),
        ])
        .into()
    }
}

/// The owner a damaged record still names, if it can be read: `Some(None)` for no owner.
fn owner_of(record: &JsValue) -> Option<Option<String>> {
    let user = js::get(record, "userId").ok()?;
    if user.is_null() || user.is_undefined() {
        return Some(None);
    }
    exact_string(&user)?.ok().map(Some)
}

pub async fn repair_session(
    conn: &Connection,
    session_id: &str,
    owner: Option<&str>,
    now: f64,
) -> Result<RepairReport> {
    let tx = Tx::begin(
        conn,
        &[
            SESSIONS_STORE,
            MESSAGES_STORE,
            OPERATIONS_STORE,
            ARCHIVE_STORE,
        ],
        TransactionMode::ReadWrite,
        format!("repairSession of session \"{session_id}\""),
    )
    .await?;
    tx.run(async |tx| {
        let sessions = tx.store(SESSIONS_STORE)?;
        let messages = tx.store(MESSAGES_STORE)?;
        // The three reads are sent before any is awaited: one round trip.
        let record = listening(
            sessions
                .get(JsValue::from_str(session_id))
                .map_err(|e| tx.fail(e))?,
        );
        let keys = listening(
            messages
                .get_all_keys(Some(all_of_session(session_id)?), None)
                .map_err(|e| tx.fail(e))?,
        );
        let rows = listening(
            messages
                .get_all(Some(all_of_session(session_id)?), None)
                .map_err(|e| tx.fail(e))?,
        );
        // The operation log and the archive keep their numbering: the next number of each is
        // one past its newest key.
        let next_after = |store: &'static str| -> Result<_> {
            Ok(listening(
                tx.store(store)?
                    .get_all_keys(Some(all_of_session(session_id)?), None)
                    .map_err(|e| tx.fail(e))?,
            ))
        };
        let operations = next_after(OPERATIONS_STORE)?;
        let archive = next_after(ARCHIVE_STORE)?;
        let record = record.await.map_err(|e| tx.fail(e))?;
        let keys = keys.await.map_err(|e| tx.fail(e))?;
        let rows = rows.await.map_err(|e| tx.fail(e))?;
        let one_past_newest = |keys: Vec<JsValue>| {
            keys.last()
                .and_then(|key| js::get(key, "1").ok())
                .and_then(|n| n.as_f64())
                .and_then(safe_count)
                .map_or(0, |n| n + 1)
        };
        let next_op_seq = one_past_newest(operations.await.map_err(|e| tx.fail(e))?);
        let archived_count = one_past_newest(archive.await.map_err(|e| tx.fail(e))?);
        if record.as_ref().is_some_and(super::branches::has_branches) {
            // Renumbering main's rows would move rows its branches show from under them.
            return Err(SessionError::new(
                SessionErrorCode::CorruptSession,
                format!(
                    "repairSession of session \"{session_id}\": it has branches other than \"main\", \
                     which show main's rows by their positions; it repairs sessions without branches \
                     only (delete the other branches first)"
                ),
            ));
        }
        if record.is_none() && rows.is_empty() {
            return Ok(RepairReport {
                existed: false,
                user_id: None,
                item_count: 0,
                removed_rows: 0,
                renumbered_rows: 0,
            });
        }
        let items: Vec<Option<JsValue>> = rows.iter().map(item_of).collect();
        let stored: Vec<StoredRow> = keys
            .iter()
            .zip(&rows)
            .zip(&items)
            .map(|((key, row), item)| {
                let text = |key: &'static str| {
                    let item = item.as_ref()?;
                    js::get(item, key).ok()?.as_string()
                };
                StoredRow {
                    seq: js::get(key, "1")
                        .ok()
                        .and_then(|s| s.as_f64())
                        .and_then(safe_count)
                        .unwrap_or(0),
                    turn: turn_of(row),
                    has_item: item.is_some(),
                    starts_turn: starts_turn(text("role").as_deref(), text("type").as_deref()),
                }
            })
            .collect();
        let plan = plan_repair(&stored);
        let recorded = record.as_ref().and_then(owner_of);
        // The owner the record names; else the one given (then the rows were indexed under
        // whatever owner the index's build found for them, and are indexed again below).
        let reindex = recorded.is_none();
        let user = recorded.unwrap_or_else(|| owner.map(str::to_string));
        // A sound session (a record that reads, whose counters and owner are those of its rows,
        // and rows that stay where they are) is left as it is.
        let sound = plan.drop.is_empty()
            && plan.moves.is_empty()
            && record
                .as_ref()
                .and_then(|r| record_from_js(r).ok())
                .is_some_and(|r| {
                    r.item_count == plan.kept
                        && r.last_turn == plan.last_turn
                        && r.user_id == user
                        && (plan.kept == 0
                            || (r.first_seq, r.next_seq) == (plan.first_seq, plan.next_seq))
                });
        if sound {
            return Ok(RepairReport {
                existed: true,
                user_id: user,
                item_count: plan.kept,
                removed_rows: 0,
                renumbered_rows: 0,
            });
        }
        for &i in &plan.drop {
            messages.delete(keys[i].clone()).map_err(|e| tx.fail(e))?;
        }
        let mut writer = RowWriter::new(session_id, now, Indexer::new(user.as_deref(), false));
        if reindex {
            // The rows that stay where they are, under the owner's name (those that move are
            // written below, with it).
            let mut moved = vec![false; rows.len()];
            for &i in plan.drop.iter().chain(plan.moves.iter().map(|(i, _)| i)) {
                if let Some(m) = moved.get_mut(i) {
                    *m = true;
                }
            }
            let terms = js::name("terms");
            for (i, row) in rows.iter().enumerate() {
                let Some(item) = items[i].as_ref().filter(|_| !moved[i]) else {
                    continue;
                };
                writer.index.tools = indexed_with_tools(row);
                let _ = js_sys::Reflect::set(row, &terms, &writer.index.terms(item));
                messages.put(row, None).map_err(|e| tx.fail(e))?;
            }
        }
        for &(i, place) in &plan.moves {
            let (Some(item), old) = (&items[i], &stored[i]) else {
                continue;
            };
            if old.seq != place.seq {
                messages.delete(keys[i].clone()).map_err(|e| tx.fail(e))?;
            }
            // A row indexed with its tool call's text keeps it.
            writer.index.tools = indexed_with_tools(&rows[i]);
            let created = js::get(&rows[i], "createdAt")
                .ok()
                .filter(|c| c.as_f64().is_some_and(f64::is_finite))
                .unwrap_or_else(|| JsValue::from_f64(now));
            let row = writer
                .row_created(&place, item, &created)
                .map_err(|e| tx.thrown(&e))?;
            messages.put(&row, None).map_err(|e| tx.fail(e))?;
        }
        let old = record.unwrap_or(JsValue::UNDEFINED);
        let created_at = js::get(&old, "createdAt")
            .ok()
            .and_then(|c| c.as_f64())
            .filter(|c| c.is_finite())
            .unwrap_or(now);
        let mut rebuilt = plan.record(session_id, user.as_deref(), created_at, now);
        rebuilt.next_op_seq = next_op_seq;
        rebuilt.archived_count = archived_count;
        rebuilt.rewrites = rewrites_of(&old);
        // (As a record is read: a lost one, or one written before it was kept, may hold one.)
        rebuilt.summary_head = !old.is_object() || super::record::summary_head_of(&old);
        rebuilt.rewrote();
        // Its items are measured; the archive, not read, counts at their average size.
        let kept = js::items_size(items.iter().flatten());
        rebuilt.bytes = crate::core::session::resized(
            Some(kept),
            plan.kept,
            plan.kept + archived_count,
            0,
        );
        // The metadata the old record holds (title, summary, state) stays.
        let rebuilt = StoredRecord {
            record: rebuilt,
            stored: old,
        };
        sessions
            .put(&rebuilt.to_js(), None)
            .map_err(|e| tx.fail(e))?;
        Ok(RepairReport {
            existed: true,
            user_id: user,
            item_count: plan.kept,
            removed_rows: plan.drop.len(),
            renumbered_rows: plan.moves.len(),
        })
    })
    .await
}
