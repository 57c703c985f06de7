//! How things look in the stores: session records (read field by field, which is cheaper than a
//! generic deserializer), message rows `{ sessionId, seq, turn, createdAt, item }`, and the keys
//! and key ranges that select them.

use idb::{KeyRange, Query};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::backend::js::{self, describe, exact_string, number_text, object, Shape};
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::session::{safe_count, Placement, SessionRecord};

use super::tx::storage_error;

/// Reads a stored session record, refusing one that is damaged (`CORRUPT_SESSION`, with what is
/// wrong): every counter a safe non-negative integer, the times numbers, the owner a string or
/// `null`, and the counters consistent with each other.
pub fn record_from_js(value: &JsValue) -> Result<SessionRecord> {
    // A stored record is plain data: reading it runs nothing but IndexedDB's own copy.
    let get = |key: &'static str| js::get(value, key).unwrap_or(JsValue::UNDEFINED);
    let id = get("id").as_string();
    let damaged = |what: String| {
        SessionError::new(
            SessionErrorCode::CorruptSession,
            format!(
                "session \"{}\" is damaged: {what}; repairSession() rebuilds it from its items",
                id.as_deref().unwrap_or("?")
            ),
        )
    };
    let shown = |v: &JsValue| match v.as_f64() {
        Some(n) => number_text(n),
        None => describe(v),
    };
    let counted = |key: &str, v: JsValue| {
        v.as_f64().and_then(safe_count).ok_or_else(|| {
            damaged(format!(
                "{key} is {}, not a safe non-negative integer",
                shown(&v)
            ))
        })
    };
    let count = |key: &'static str| counted(key, get(key));
    let time = |key: &'static str| {
        let v = get(key);
        v.as_f64()
            .filter(|n| n.is_finite())
            .ok_or_else(|| damaged(format!("{key} is {}, not a time", shown(&v))))
    };
    let optional_count = |key: &'static str| match get(key) {
        v if v.is_undefined() => Ok(0),
        v => counted(key, v),
    };
    let user = get("userId");
    let record = SessionRecord {
        id: id.clone().ok_or_else(|| damaged("it has no id".into()))?,
        user_id: if user.is_null() {
            None
        } else {
            match exact_string(&user) {
                Some(Ok(u)) => Some(u),
                _ => {
                    return Err(damaged(format!(
                        "userId is {}, not a string or null",
                        describe(&user)
                    )))
                }
            }
        },
        created_at: time("createdAt")?,
        updated_at: time("updatedAt")?,
        item_count: count("itemCount")?,
        first_seq: count("firstSeq")?,
        next_seq: count("nextSeq")?,
        last_turn: count("lastTurn")?,
        // Absent from records written before schema version 2.
        next_op_seq: optional_count("nextOpSeq")?,
        archived_count: optional_count("archivedCount")?,
        // Absent from records written before sizes were kept: not known until measured.
        bytes: get("bytes").as_f64().and_then(safe_count),
        // Absent from records written before it was kept: none counted yet.
        rewrites: optional_count("rewrites")?,
        summary_head: summary_head_of(value),
    };
    record.check_consistent()?;
    Ok(record)
}

/// The rewrite count of a stored record that may be damaged or missing (0 then): a record that
/// replaces it counts one more, so readers that compare counts see the change.
pub fn rewrites_of(stored: &JsValue) -> u64 {
    js::get(stored, "rewrites")
        .ok()
        .and_then(|v| v.as_f64())
        .and_then(safe_count)
        .unwrap_or(0)
}

/// A session record as stored: the core's view of it, and the stored object itself, which also
/// holds the session's metadata (title, summary, state) and any field a newer version of this
/// library added. Writing the record back keeps all of them.
pub struct StoredRecord {
    pub record: SessionRecord,
    pub stored: JsValue,
}

impl std::ops::Deref for StoredRecord {
    type Target = SessionRecord;
    fn deref(&self) -> &SessionRecord {
        &self.record
    }
}

impl std::ops::DerefMut for StoredRecord {
    fn deref_mut(&mut self) -> &mut SessionRecord {
        &mut self.record
    }
}

impl StoredRecord {
    /// The record of a session that has none yet.
    pub fn new(id: &str, user_id: Option<&str>, now: f64) -> Self {
        StoredRecord {
            record: SessionRecord::new(id, user_id, now),
            stored: Object::new().into(),
        }
    }

    /// The record as it is stored: the stored object (or a new one) with the core's fields set.
    pub fn to_js(&self) -> JsValue {
        let user = match &self.record.user_id {
            Some(u) => JsValue::from_str(u),
            None => JsValue::NULL,
        };
        let r = &self.record;
        let fields = [
            ("id", r.id.as_str().into()),
            ("userId", user),
            ("createdAt", r.created_at.into()),
            ("updatedAt", r.updated_at.into()),
            ("itemCount", (r.item_count as f64).into()),
            ("firstSeq", (r.first_seq as f64).into()),
            ("nextSeq", (r.next_seq as f64).into()),
            ("lastTurn", (r.last_turn as f64).into()),
            ("nextOpSeq", (r.next_op_seq as f64).into()),
            ("archivedCount", (r.archived_count as f64).into()),
            ("rewrites", (r.rewrites as f64).into()),
            // (`false` written out: a backup's JSON keeps it, where it would drop `undefined`, and
            // a restored record read without it may hold a summary.)
            ("summaryHead", r.summary_head.into()),
            (
                "bytes",
                r.bytes.map_or(JsValue::UNDEFINED, |b| (b as f64).into()),
            ),
        ];
        if !self.stored.is_object() {
            return object(&fields).into();
        }
        // The stored object is IndexedDB's own copy: setting its fields touches nothing else.
        for (key, value) in &fields {
            let _ = Reflect::set(&self.stored, &js::name(key), value);
        }
        self.stored.clone()
    }
}

/// What the search index keeps of an item, in its row's `terms`: the owner's prefix and a term
/// (see [`crate::core::search::owner_prefix`]) for each distinct term of its text, as strings,
/// so an index over `terms` finds one user's items that hold a term, and nobody else's.
pub struct Indexer {
    owner: String,
    pub tools: bool,
}

impl Indexer {
    /// For a session of `owner`; `tools`: index tool calls' arguments and outputs too.
    pub fn new(owner: Option<&str>, tools: bool) -> Self {
        Indexer {
            owner: crate::core::search::owner_prefix(owner),
            tools,
        }
    }

    /// The `terms` of a row holding `item`. They cross into JS as one string, split there: an
    /// item has dozens of terms, and a string each was a crossing and a decode each.
    pub fn terms(&self, item: &JsValue) -> JsValue {
        let text = crate::backend::search::item_search_text(item, self.tools);
        let terms = crate::core::search::index_terms(&text);
        if terms.is_empty() {
            return Array::new().into();
        }
        let keys = crate::core::search::joined_keys(&self.owner, &terms);
        js_sys::JsString::from(keys)
            .split(crate::core::search::KEY_SEPARATOR)
            .into()
    }
}

/// A stored record's or branch entry's `summaryHead`. Absent (written before it was kept, whose
/// head may hold a summary a compaction without archive wrote, or restored from a backup whose
/// JSON dropped an earlier `undefined`): read as may. `undefined`, as an earlier version stored
/// false: false.
pub fn summary_head_of(value: &JsValue) -> bool {
    js::get(value, "summaryHead").is_ok_and(|v| v.is_truthy()) || !has_own(value, "summaryHead")
}

/// Whether stored object `value` has field `key` (`undefined` included: a record or branch entry
/// this version wrote has every field it keeps).
pub fn has_own(value: &JsValue, key: &str) -> bool {
    js_sys::Reflect::has(value, &JsValue::from_str(key)).unwrap_or(true)
}

/// Whether a stored message row was indexed with its tool call's or output's text (by an object
/// with `index: { tools: true }`): it has terms where its message text alone has none. What an
/// export marks and a repair keeps, so that the row is indexed the same way again.
pub fn indexed_with_tools(row: &JsValue) -> bool {
    let item = js::get(row, "item").unwrap_or(JsValue::UNDEFINED);
    has_terms(row) && crate::backend::search::item_search_text(&item, false).is_empty()
}

/// Whether a stored message row has search terms. A tool call's row has them only where its
/// text was indexed (its session was written with `index: { tools: true }`).
pub fn has_terms(row: &JsValue) -> bool {
    js::get(row, "terms")
        .ok()
        .and_then(|t| t.dyn_into::<Array>().ok())
        .is_some_and(|t| t.length() > 0)
}

/// Builds the message rows of one write; the property names are made into JS strings once per
/// write, not once per row.
pub struct RowWriter {
    shape: Shape<6>,
    session_id: JsValue,
    created_at: JsValue,
    /// (Its `tools` may change from row to row: a repair keeps each row's own.)
    pub index: Indexer,
}

impl RowWriter {
    pub fn new(session_id: &str, created_at: f64, index: Indexer) -> Self {
        Self::at(JsValue::from_str(session_id), created_at, index)
    }

    /// Rows under another storage key than a session id: a branch's `[sessionId, branchId]`.
    pub fn at(storage: JsValue, created_at: f64, index: Indexer) -> Self {
        RowWriter {
            shape: Shape::new(["sessionId", "seq", "turn", "createdAt", "item", "terms"]),
            session_id: storage,
            created_at: JsValue::from_f64(created_at),
            index,
        }
    }

    pub fn row(&self, place: &Placement, item: &JsValue) -> std::result::Result<Object, JsValue> {
        self.row_created(place, item, &self.created_at)
    }

    /// A row with its own creation time (a row being renumbered keeps its own).
    pub fn row_created(
        &self,
        place: &Placement,
        item: &JsValue,
        created_at: &JsValue,
    ) -> std::result::Result<Object, JsValue> {
        self.shape.build([
            &self.session_id,
            &JsValue::from_f64(place.seq as f64),
            &JsValue::from_f64(place.turn as f64),
            created_at,
            item,
            &self.index.terms(item),
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
    stored_between(&JsValue::from_str(session_id), lo, hi)
}

/// The rows stored under `storage` (a session's id, or `[sessionId, branchId]` for a branch's
/// own rows) with `lo <= seq <= hi`.
pub fn stored_between(storage: &JsValue, lo: f64, hi: f64) -> Result<Query> {
    let lower = Array::of2(storage, &JsValue::from_f64(lo));
    let upper = Array::of2(storage, &JsValue::from_f64(hi));
    KeyRange::bound(&lower, &upper, Some(false), Some(false))
        .map(Query::from)
        .map_err(|e| storage_error(&e, "selecting a session's messages"))
}

/// Every row of a session in a store keyed `[sessionId, number]`.
pub fn all_of_session(session_id: &str) -> Result<Query> {
    messages_between(session_id, f64::NEG_INFINITY, f64::INFINITY)
}

/// The error for damaged message rows of a session.
pub fn damaged_items(session_id: &str, what: String) -> SessionError {
    SessionError::new(
        SessionErrorCode::CorruptSession,
        format!(
            "session \"{session_id}\" is damaged: {what}; repairSession() rebuilds it from its items"
        ),
    )
}

/// The stored item of a message row, if it has one.
pub fn item_of(row: &JsValue) -> Option<JsValue> {
    js::get(row, "item").ok().filter(JsValue::is_object)
}

/// The JSON size of the items of message rows (a row without an item counts nothing).
pub fn rows_size<'a>(rows: impl IntoIterator<Item = &'a JsValue>) -> u64 {
    rows.into_iter()
        .filter_map(item_of)
        .map(|item| js::json_size(&item))
        .sum()
}

/// The items of message rows, in order. A row without an item means the session is damaged.
pub fn items_of(rows: &[JsValue], session_id: &str) -> Result<Vec<JsValue>> {
    let key = js::name("item");
    rows.iter()
        .map(|row| {
            Reflect::get(row, &key)
                .ok()
                .filter(JsValue::is_object)
                .ok_or_else(|| {
                    let seq = seq_of(row).map_or("?".to_string(), |s| s.to_string());
                    damaged_items(session_id, format!("the row of item {seq} holds no item"))
                })
        })
        .collect()
}

/// The sequence number of a message row.
pub fn seq_of(row: &JsValue) -> Option<u64> {
    js::get(row, "seq").ok()?.as_f64().and_then(safe_count)
}

/// The turn of a message row.
pub fn turn_of(row: &JsValue) -> Option<u64> {
    js::get(row, "turn").ok()?.as_f64().and_then(safe_count)
}
