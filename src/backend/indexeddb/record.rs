//! How things look in the stores: session records (read field by field, which is cheaper than a
//! generic deserializer), message rows `{ sessionId, seq, turn, createdAt, item }`, and the keys
//! and key ranges that select them.

use idb::{KeyRange, Query};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::JsValue;

use crate::backend::js::{object, Shape};
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::session::{Placement, SessionRecord};

use super::tx::storage_error;

/// Reads a stored session record. Every field must be present with its type.
pub fn record_from_js(value: &JsValue, doing: &str) -> Result<SessionRecord> {
    let get = |key: &str| Reflect::get(value, &key.into()).unwrap_or(JsValue::UNDEFINED);
    let bad = |key: &str| {
        SessionError::new(
            SessionErrorCode::StorageError,
            format!("{doing}: a session record has no valid \"{key}\" field"),
        )
    };
    let number = |key: &str| {
        get(key)
            .as_f64()
            .filter(|n| n.is_finite())
            .ok_or_else(|| bad(key))
    };
    let count = |key: &str| number(key).map(|n| n.max(0.0) as u64);
    let user = get("userId");
    Ok(SessionRecord {
        id: get("id").as_string().ok_or_else(|| bad("id"))?,
        user_id: if user.is_null() || user.is_undefined() {
            None
        } else {
            Some(user.as_string().ok_or_else(|| bad("userId"))?)
        },
        created_at: number("createdAt")?,
        updated_at: number("updatedAt")?,
        item_count: count("itemCount")?,
        first_seq: count("firstSeq")?,
        next_seq: count("nextSeq")?,
        last_turn: count("lastTurn")?,
    })
}

/// A session record as it is stored.
pub fn record_to_js(record: &SessionRecord) -> JsValue {
    let user = match &record.user_id {
        Some(u) => JsValue::from_str(u),
        None => JsValue::NULL,
    };
    object(&[
        ("id", record.id.as_str().into()),
        ("userId", user),
        ("createdAt", record.created_at.into()),
        ("updatedAt", record.updated_at.into()),
        ("itemCount", (record.item_count as f64).into()),
        ("firstSeq", (record.first_seq as f64).into()),
        ("nextSeq", (record.next_seq as f64).into()),
        ("lastTurn", (record.last_turn as f64).into()),
    ])
    .into()
}

/// Builds the message rows of one write; the property names are made into JS strings once per
/// write, not once per row.
pub struct RowWriter {
    shape: Shape<5>,
    session_id: JsValue,
    created_at: JsValue,
}

impl RowWriter {
    pub fn new(session_id: &str, created_at: f64) -> Self {
        RowWriter {
            shape: Shape::new(["sessionId", "seq", "turn", "createdAt", "item"]),
            session_id: JsValue::from_str(session_id),
            created_at: JsValue::from_f64(created_at),
        }
    }

    pub fn row(&self, place: &Placement, item: &JsValue) -> std::result::Result<Object, JsValue> {
        self.shape.build([
            &self.session_id,
            &JsValue::from_f64(place.seq as f64),
            &JsValue::from_f64(place.turn as f64),
            &self.created_at,
            item,
        ])
    }
}

/// The key of one message row.
pub fn message_key(session_id: &str, seq: u64) -> JsValue {
    Array::of2(
        &JsValue::from_str(session_id),
        &JsValue::from_f64(seq as f64),
    )
    .into()
}

/// A session's messages with `lo <= seq <= hi`.
pub fn messages_between(session_id: &str, lo: f64, hi: f64) -> Result<Query> {
    let lower = Array::of2(&JsValue::from_str(session_id), &JsValue::from_f64(lo));
    let upper = Array::of2(&JsValue::from_str(session_id), &JsValue::from_f64(hi));
    KeyRange::bound(&lower, &upper, Some(false), Some(false))
        .map(Query::from)
        .map_err(|e| storage_error(&e, "selecting a session's messages"))
}

/// Every message of a session.
pub fn all_messages(session_id: &str) -> Result<Query> {
    messages_between(session_id, f64::NEG_INFINITY, f64::INFINITY)
}

/// The stored item of a message row.
pub fn item_of(row: &JsValue) -> JsValue {
    Reflect::get(row, &"item".into()).unwrap_or(JsValue::UNDEFINED)
}

/// The items of message rows, in order.
pub fn items_of(rows: &[JsValue]) -> Vec<JsValue> {
    let key = JsValue::from_str("item");
    rows.iter()
        .map(|r| Reflect::get(r, &key).unwrap_or(JsValue::UNDEFINED))
        .collect()
}

/// The turn of a message row.
pub fn turn_of(row: &JsValue) -> Option<u64> {
    Reflect::get(row, &"turn".into())
        .ok()
        .and_then(|t| t.as_f64())
        .map(|t| t as u64)
}

/// Stored session records as `listSessions` reports them: the public fields only, renamed.
pub fn session_infos(records: &[JsValue]) -> Array {
    let stored = ["id", "userId", "createdAt", "updatedAt", "itemCount"].map(JsValue::from_str);
    let info = Shape::new(["sessionId", "userId", "createdAt", "updatedAt", "itemCount"]);
    records
        .iter()
        .filter_map(|record| {
            let values = stored
                .each_ref()
                .map(|key| Reflect::get(record, key).unwrap_or(JsValue::NULL));
            info.build(values.each_ref()).ok()
        })
        .map(JsValue::from)
        .collect()
}
