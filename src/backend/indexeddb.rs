//! The IndexedDB backend, through the `idb` crate.
//!
//! Every operation is one transaction. Writes read the session record, check its owner, issue
//! all their requests and then await the commit; nothing but IndexedDB requests is awaited while
//! a transaction is open, so it cannot commit early. An error path aborts the transaction
//! explicitly, so a failed call writes nothing.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use idb::{
    Database, DatabaseEvent as _, Event as _, Factory, IndexParams, KeyPath, KeyRange,
    ObjectStoreParams, Query, Transaction, TransactionMode, TransactionResult,
};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{DomException, IdbDatabase, IdbTransaction};

use crate::core::error::{ErrorCode, Result, SessionError};
use crate::core::history::Limit;
use crate::core::schema::{
    migrations_from, newer_schema, Step, BY_UPDATED_INDEX, BY_USER_INDEX, MESSAGES_STORE,
    SCHEMA_VERSION, SESSIONS_STORE,
};
use crate::core::session::SessionRecord;

use super::js::error_text;

// ---------------------------------------------------------------------------------------------
// Errors

/// Maps an IndexedDB failure to the library's error codes. `doing` says what was under way.
fn storage_error(error: &idb::Error, doing: &str) -> SessionError {
    use idb::Error as E;
    let exception: Option<JsValue> = match error {
        E::DomException(e) => Some(e.clone().into()),
        E::IndexedDbNotFound(_) => {
            return SessionError::new(
                ErrorCode::StorageUnavailable,
                format!("{doing}: IndexedDB is not available in this context"),
            )
        }
        E::AddFailed(v)
        | E::ClearFailed(v)
        | E::CountFailed(v)
        | E::DeleteFailed(v)
        | E::GetAllFailed(v)
        | E::GetAllKeysFailed(v)
        | E::GetFailed(v)
        | E::IndexedDbOpenFailed(v)
        | E::IndexNotFound(v)
        | E::ObjectStoreNotFound(v)
        | E::OpenCursorFailed(v)
        | E::UpdateFailed(v)
        | E::TransactionOpenFailed(v)
        | E::TransactionCommitError(v)
        | E::IndexCreateFailed(v)
        | E::ObjectStoreCreateFailed(v)
        | E::KeyRangeCreateFailed(v) => Some(v.clone()),
        _ => None,
    };
    match exception {
        Some(e) => dom_error(&e, doing),
        None => SessionError::new(ErrorCode::StorageError, format!("{doing}: {error}")),
    }
}

/// Maps a `DOMException` (or any thrown value) to an error code by its `name`.
fn dom_error(exception: &JsValue, doing: &str) -> SessionError {
    let name = exception
        .dyn_ref::<DomException>()
        .map(|e| e.name())
        .unwrap_or_default();
    let text = error_text(exception);
    let code = match name.as_str() {
        "QuotaExceededError" => ErrorCode::StorageFull,
        "VersionError" => ErrorCode::DbVersion,
        "DataCloneError" => ErrorCode::InvalidItem,
        "SecurityError" | "InvalidAccessError" => ErrorCode::StorageUnavailable,
        _ => ErrorCode::StorageError,
    };
    let hint = match code {
        ErrorCode::StorageFull => {
            "; the browser's storage quota for this site is used up, nothing of this call was written"
        }
        _ => "",
    };
    SessionError::new(code, format!("{doing}: {text}{hint}"))
}

// ---------------------------------------------------------------------------------------------
// Opening and migrations

/// An open connection. `stale` turns true when the browser closed it (another tab upgrades the
/// database, or the user cleared site data); the next call then opens a new one.
pub struct Connection {
    db: Database,
    raw: IdbDatabase,
    stale: Rc<Cell<bool>>,
}

impl Connection {
    pub fn is_stale(&self) -> bool {
        self.stale.get()
    }

    pub fn close(&self) {
        self.stale.set(true);
        self.raw.close();
    }
}

fn apply_step(
    step: &Step,
    db: &Database,
    tx: Option<&Transaction>,
) -> std::result::Result<(), idb::Error> {
    let key_path = |path: &[&str]| match path {
        [single] => KeyPath::new_single(single),
        many => KeyPath::new_array(many.iter().copied()),
    };
    match step {
        Step::CreateStore {
            name,
            key_path: path,
        } => {
            let mut params = ObjectStoreParams::new();
            params.key_path(Some(key_path(path)));
            db.create_object_store(name, params)?;
        }
        Step::CreateIndex {
            store,
            name,
            key_path: path,
        } => {
            let tx = tx.ok_or(idb::Error::UnexpectedJsType(
                "upgrade transaction",
                JsValue::UNDEFINED,
            ))?;
            let mut params = IndexParams::new();
            params.unique(false);
            tx.object_store(store)?
                .create_index(name, key_path(path), Some(params))?;
        }
    }
    Ok(())
}

/// Opens (creating or upgrading) the database `name` at this library's schema version.
pub async fn open(name: &str) -> Result<Connection> {
    let doing = format!("opening IndexedDB database \"{name}\"");
    let factory = Factory::new().map_err(|e| storage_error(&e, &doing))?;
    let mut request = factory
        .open(name, Some(SCHEMA_VERSION))
        .map_err(|e| storage_error(&e, &doing))?;
    let upgrade_failure: Rc<RefCell<Option<SessionError>>> = Rc::default();
    let failure = upgrade_failure.clone();
    let upgrade_doing = doing.clone();
    request.on_upgrade_needed(move |event| {
        let run = || -> std::result::Result<(), SessionError> {
            let old = event
                .old_version()
                .map_err(|e| storage_error(&e, &upgrade_doing))?;
            let fail = |e: idb::Error| storage_error(&e, &upgrade_doing);
            let request = event.target().map_err(fail)?;
            let db = event.database().map_err(fail)?;
            let tx = idb::Request::transaction(&request);
            for migration in migrations_from(old)? {
                for step in migration.steps {
                    apply_step(step, &db, tx.as_ref()).map_err(|e| {
                        storage_error(
                            &e,
                            &format!(
                                "{upgrade_doing}: migration to version {} ({})",
                                migration.to_version, migration.description
                            ),
                        )
                    })?;
                }
            }
            Ok(())
        };
        if let Err(e) = run() {
            if let Ok(request) = event.target() {
                if let Some(tx) = idb::Request::transaction(&request) {
                    let _ = tx.abort();
                }
            }
            *failure.borrow_mut() = Some(e);
        }
    });
    let opened = request.await;
    if let Some(e) = upgrade_failure.borrow_mut().take() {
        return Err(e);
    }
    let db = match opened {
        Ok(db) => db,
        Err(e) => {
            let error = storage_error(&e, &doing);
            if error.code == ErrorCode::DbVersion {
                return Err(newer_version_error(&factory, name).await);
            }
            return Err(error);
        }
    };
    let raw: IdbDatabase = db.into();
    let mut db = Database::from(raw.clone());
    let stale = Rc::new(Cell::new(false));
    let (on_change, on_close) = (stale.clone(), stale.clone());
    let closing = raw.clone();
    // Let another tab upgrade the schema: close, and reopen on the next call.
    db.on_version_change(move |_| {
        on_change.set(true);
        closing.close();
    });
    db.on_close(move |_| on_close.set(true));
    Ok(Connection { db, raw, stale })
}

/// Reads the version of a database that is newer than ours, for the error message, without
/// changing it.
async fn newer_version_error(factory: &Factory, name: &str) -> SessionError {
    let found = match factory.open(name, None) {
        Ok(request) => match request.await {
            Ok(db) => {
                let version = db.version().unwrap_or(0);
                db.close();
                version
            }
            Err(_) => 0,
        },
        Err(_) => 0,
    };
    newer_schema(found.max(SCHEMA_VERSION + 1))
}

// ---------------------------------------------------------------------------------------------
// Transactions

struct Tx {
    tx: Transaction,
    raw: IdbTransaction,
    doing: String,
}

impl Tx {
    fn begin(
        conn: &Connection,
        stores: &[&str],
        mode: TransactionMode,
        doing: String,
    ) -> Result<Tx> {
        let tx = conn
            .db
            .transaction(stores, mode)
            .map_err(|e| storage_error(&e, &doing))?;
        let raw: IdbTransaction = tx.into();
        Ok(Tx {
            tx: Transaction::from(raw.clone()),
            raw,
            doing,
        })
    }

    fn store(&self, name: &str) -> Result<idb::ObjectStore> {
        self.tx
            .object_store(name)
            .map_err(|e| storage_error(&e, &self.doing))
    }

    fn fail(&self, e: idb::Error) -> SessionError {
        storage_error(&e, &self.doing)
    }

    /// Aborts (so that nothing is written) and returns `error`.
    fn abort_with(self, error: SessionError) -> SessionError {
        let _ = self.raw.abort();
        error
    }

    /// Commits the requests `written` issued, or aborts if issuing them failed: all or nothing.
    async fn finish(self, written: Result<()>) -> Result<()> {
        match written {
            Ok(()) => self.commit().await,
            Err(e) => Err(self.abort_with(e)),
        }
    }

    /// Waits for the commit. An abort (quota exceeded, a failed request) becomes its error.
    async fn commit(self) -> Result<()> {
        let Tx { tx, raw, doing } = self;
        match tx.await {
            Ok(TransactionResult::Committed) => Ok(()),
            Ok(TransactionResult::Aborted) => Err(match raw.error() {
                Some(e) => dom_error(&e.into(), &doing),
                None => SessionError::new(
                    ErrorCode::StorageError,
                    format!("{doing}: the transaction was aborted"),
                ),
            }),
            Err(idb::Error::DomException(e)) => Err(dom_error(&e.into(), &doing)),
            Err(e) => Err(storage_error(&e, &doing)),
        }
    }
}

fn message_key(session_id: &str, seq: u64) -> JsValue {
    Array::of2(
        &JsValue::from_str(session_id),
        &JsValue::from_f64(seq as f64),
    )
    .into()
}

fn messages_between(session_id: &str, lo: f64, hi: f64) -> Result<Query> {
    let lower = Array::of2(&JsValue::from_str(session_id), &JsValue::from_f64(lo));
    let upper = Array::of2(&JsValue::from_str(session_id), &JsValue::from_f64(hi));
    KeyRange::bound(&lower, &upper, Some(false), Some(false))
        .map(Query::from)
        .map_err(|e| storage_error(&e, "selecting a session's messages"))
}

fn all_messages(session_id: &str) -> Result<Query> {
    messages_between(session_id, f64::NEG_INFINITY, f64::INFINITY)
}

/// Reads a session record field by field (cheaper than a generic deserializer, and the only
/// shape check a record needs: every field present with its type).
pub fn record_from_js(value: &JsValue, doing: &str) -> Result<SessionRecord> {
    let get = |key: &str| Reflect::get(value, &key.into()).unwrap_or(JsValue::UNDEFINED);
    let bad = |key: &str| {
        SessionError::new(
            ErrorCode::StorageError,
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

fn record_to_js(record: &SessionRecord) -> JsValue {
    let o = Object::new();
    let set = |k: &str, v: JsValue| {
        let _ = Reflect::set(&o, &k.into(), &v);
    };
    set("id", record.id.as_str().into());
    set(
        "userId",
        record
            .user_id
            .as_deref()
            .map(JsValue::from)
            .unwrap_or(JsValue::NULL),
    );
    set("createdAt", record.created_at.into());
    set("updatedAt", record.updated_at.into());
    set("itemCount", (record.item_count as f64).into());
    set("firstSeq", (record.first_seq as f64).into());
    set("nextSeq", (record.next_seq as f64).into());
    set("lastTurn", (record.last_turn as f64).into());
    o.into()
}

async fn read_record(tx: &Tx, session_id: &str) -> Result<Option<SessionRecord>> {
    let value = tx
        .store(SESSIONS_STORE)?
        .get(JsValue::from_str(session_id))
        .map_err(|e| tx.fail(e))?
        .await
        .map_err(|e| tx.fail(e))?;
    value.map(|v| record_from_js(&v, &tx.doing)).transpose()
}

fn item_of(record: &JsValue) -> JsValue {
    Reflect::get(record, &"item".into()).unwrap_or(JsValue::UNDEFINED)
}

/// The items of message records, in order.
fn items_of(records: &[JsValue]) -> Vec<JsValue> {
    let key = JsValue::from_str("item");
    records
        .iter()
        .map(|r| Reflect::get(r, &key).unwrap_or(JsValue::UNDEFINED))
        .collect()
}

fn turn_of(record: &JsValue) -> Option<u64> {
    Reflect::get(record, &"turn".into())
        .ok()
        .and_then(|t| t.as_f64())
        .map(|t| t as u64)
}

/// Sends `getAllRecords({ query, count, direction: "prev" })` for a session's newest `count`
/// messages (IndexedDB 3, in Chromium since version 141), and returns the future of its result;
/// `None` where the browser does not have it.
fn newest_records(
    tx: &Tx,
    session_id: &str,
    count: u64,
) -> Result<Option<impl std::future::Future<Output = Result<Array>>>> {
    let store = tx
        .raw
        .object_store(MESSAGES_STORE)
        .map_err(|e| dom_error(&e, &tx.doing))?;
    let method = Reflect::get(&store, &"getAllRecords".into()).unwrap_or(JsValue::UNDEFINED);
    let Some(method) = method.dyn_ref::<js_sys::Function>() else {
        return Ok(None);
    };
    let options = Object::new();
    let set = |k: &str, v: &JsValue| {
        let _ = Reflect::set(&options, &k.into(), v);
    };
    set("query", &all_messages(session_id)?.into());
    set(
        "count",
        &JsValue::from_f64(count.min(u32::MAX as u64) as f64),
    );
    set("direction", &"prev".into());
    let request: web_sys::IdbRequest = method
        .call1(&store, &options)
        .map_err(|e| dom_error(&e, &tx.doing))?
        .unchecked_into();
    // The handlers are attached now, before anything else is awaited.
    let done = js_sys::Promise::new(&mut |resolve, reject| {
        request.set_onsuccess(Some(&resolve));
        request.set_onerror(Some(&reject));
    });
    let doing = tx.doing.clone();
    Ok(Some(async move {
        match wasm_bindgen_futures::JsFuture::from(done).await {
            Ok(_) => request
                .result()
                .map(|r| r.unchecked_into::<Array>())
                .map_err(|e| dom_error(&e, &doing)),
            Err(_) => Err(match request.error() {
                Ok(Some(e)) => dom_error(&e.into(), &doing),
                _ => SessionError::new(
                    ErrorCode::StorageError,
                    format!("{doing}: reading the newest items failed"),
                ),
            }),
        }
    }))
}

// ---------------------------------------------------------------------------------------------
// Session operations

/// Which session, as whom.
pub struct Target<'a> {
    pub session_id: &'a str,
    pub user_id: Option<&'a str>,
}

impl Target<'_> {
    fn doing(&self, what: &str) -> String {
        format!("{what} of session \"{}\"", self.session_id)
    }
}

/// The newest items within `limit`, oldest first. Reads O(limit) records.
pub async fn get_items(conn: &Connection, t: &Target<'_>, limit: Limit) -> Result<Vec<JsValue>> {
    let tx = Tx::begin(
        conn,
        &[SESSIONS_STORE, MESSAGES_STORE],
        TransactionMode::ReadOnly,
        t.doing("getItems"),
    )?;
    // Where the browser can read the newest records in one request, send it together with the
    // read of the session record: one round trip instead of two.
    let newest = match limit {
        Limit::Newest(n) if n > 0 => newest_records(&tx, t.session_id, n)?,
        _ => None,
    };
    let record = match read_record(&tx, t.session_id).await? {
        None => return Ok(Vec::new()),
        Some(r) => r,
    };
    if let Err(e) = record.check_owner(t.user_id) {
        // Let the read already sent finish first, so that aborting does not fail it unobserved.
        if let Some(newest) = newest {
            let _ = newest.await;
        }
        return Err(tx.abort_with(e));
    }
    if let Some(newest) = newest {
        let records = newest.await?;
        let rows: Vec<JsValue> = records
            .iter()
            .rev()
            .map(|r| Reflect::get(&r, &"value".into()).unwrap_or(JsValue::UNDEFINED))
            .collect();
        return Ok(items_of(&rows));
    }
    let Some((lo, hi)) = record.newest_range(limit) else {
        return Ok(Vec::new());
    };
    let messages = tx.store(MESSAGES_STORE)?;
    let found = messages
        .get_all(
            Some(messages_between(t.session_id, lo as f64, hi as f64)?),
            None,
        )
        .map_err(|e| tx.fail(e))?
        .await
        .map_err(|e| tx.fail(e))?;
    let expected = (hi - lo + 1) as usize;
    if found.len() == expected {
        return Ok(items_of(&found));
    }
    // The sequence numbers have a gap (written by something other than this library): fall back
    // to reading the whole history, which is always right.
    let all = messages
        .get_all(Some(all_messages(t.session_id)?), None)
        .map_err(|e| tx.fail(e))?
        .await
        .map_err(|e| tx.fail(e))?;
    let (start, end) = limit.window(all.len() as u64);
    Ok(all[start as usize..end as usize]
        .iter()
        .map(item_of)
        .collect())
}

/// Appends items (already copied and checked) in one transaction: all of them or none.
pub async fn add_items(
    conn: &Connection,
    t: &Target<'_>,
    items: Vec<(JsValue, bool)>,
    now: f64,
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let tx = Tx::begin(
        conn,
        &[SESSIONS_STORE, MESSAGES_STORE],
        TransactionMode::ReadWrite,
        t.doing("addItems"),
    )?;
    let mut record = match read_record(&tx, t.session_id).await? {
        Some(r) => r,
        None => SessionRecord::new(t.session_id, t.user_id, now),
    };
    if let Err(e) = record.check_owner(t.user_id) {
        return Err(tx.abort_with(e));
    }
    let starts: Vec<bool> = items.iter().map(|(_, s)| *s).collect();
    let placements = record.append(&starts, now);
    let written = (|| -> Result<()> {
        let messages = tx.store(MESSAGES_STORE)?;
        let session_id = JsValue::from_str(t.session_id);
        let created = JsValue::from_f64(now);
        // The property names are made into JS strings once, not once per item.
        let [k_session, k_seq, k_turn, k_created, k_item] =
            ["sessionId", "seq", "turn", "createdAt", "item"].map(JsValue::from_str);
        for ((item, _), place) in items.iter().zip(&placements) {
            let row = Object::new();
            let set = |k: &JsValue, v: &JsValue| Reflect::set(&row, k, v);
            set(&k_session, &session_id)
                .and_then(|_| set(&k_seq, &JsValue::from_f64(place.seq as f64)))
                .and_then(|_| set(&k_turn, &JsValue::from_f64(place.turn as f64)))
                .and_then(|_| set(&k_created, &created))
                .and_then(|_| set(&k_item, item))
                .map_err(|e| dom_error(&e, &tx.doing))?;
            messages.put(&row, None).map_err(|e| tx.fail(e))?;
        }
        let sessions = tx.store(SESSIONS_STORE)?;
        sessions
            .put(&record_to_js(&record), None)
            .map_err(|e| tx.fail(e))?;
        Ok(())
    })();
    tx.finish(written).await
}

/// Removes and returns the newest item.
pub async fn pop_item(conn: &Connection, t: &Target<'_>, now: f64) -> Result<Option<JsValue>> {
    let tx = Tx::begin(
        conn,
        &[SESSIONS_STORE, MESSAGES_STORE],
        TransactionMode::ReadWrite,
        t.doing("popItem"),
    )?;
    let mut record = match read_record(&tx, t.session_id).await? {
        Some(r) => r,
        None => return Ok(None),
    };
    if let Err(e) = record.check_owner(t.user_id) {
        return Err(tx.abort_with(e));
    }
    let Some(seq) = record.newest_seq() else {
        return Ok(None);
    };
    let messages = tx.store(MESSAGES_STORE)?;
    // Both reads are sent before either is awaited: one round trip.
    let newest = messages
        .get(message_key(t.session_id, seq))
        .map_err(|e| tx.fail(e))?;
    let previous = match seq.checked_sub(1) {
        Some(p) if record.item_count > 1 => Some(
            messages
                .get(message_key(t.session_id, p))
                .map_err(|e| tx.fail(e))?,
        ),
        _ => None,
    };
    let newest = newest.await.map_err(|e| tx.fail(e))?;
    let previous_turn = match previous {
        Some(p) => p.await.map_err(|e| tx.fail(e))?.as_ref().and_then(turn_of),
        None => None,
    };
    let Some(newest) = newest else {
        let e = SessionError::new(
            ErrorCode::StorageError,
            format!("{}: item {seq} is missing from the database", tx.doing),
        );
        return Err(tx.abort_with(e));
    };
    record.pop(previous_turn, now);
    let written = (|| -> Result<()> {
        messages
            .delete(message_key(t.session_id, seq))
            .map_err(|e| tx.fail(e))?;
        tx.store(SESSIONS_STORE)?
            .put(&record_to_js(&record), None)
            .map_err(|e| tx.fail(e))?;
        Ok(())
    })();
    tx.finish(written).await?;
    Ok(Some(item_of(&newest)))
}

/// Removes every item of the session; the session record stays, with no items.
pub async fn clear_session(conn: &Connection, t: &Target<'_>, now: f64) -> Result<()> {
    let tx = Tx::begin(
        conn,
        &[SESSIONS_STORE, MESSAGES_STORE],
        TransactionMode::ReadWrite,
        t.doing("clearSession"),
    )?;
    let mut record = match read_record(&tx, t.session_id).await? {
        Some(r) => r,
        None => return Ok(()),
    };
    if let Err(e) = record.check_owner(t.user_id) {
        return Err(tx.abort_with(e));
    }
    record.clear(now);
    let written = (|| -> Result<()> {
        tx.store(MESSAGES_STORE)?
            .delete(all_messages(t.session_id)?)
            .map_err(|e| tx.fail(e))?;
        tx.store(SESSIONS_STORE)?
            .put(&record_to_js(&record), None)
            .map_err(|e| tx.fail(e))?;
        Ok(())
    })();
    tx.finish(written).await
}

/// The session records as stored, newest `updatedAt` first; only `user_id`'s when given. Reads no
/// message. ([`record_from_js`] reads one.)
pub async fn list_sessions(conn: &Connection, user_id: Option<&str>) -> Result<Vec<JsValue>> {
    let doing = "listSessions".to_string();
    let tx = Tx::begin(conn, &[SESSIONS_STORE], TransactionMode::ReadOnly, doing)?;
    let store = tx.store(SESSIONS_STORE)?;
    let request = match user_id {
        Some(user) => {
            let user = JsValue::from_str(user);
            let lower = Array::of2(&user, &JsValue::from_f64(f64::NEG_INFINITY));
            let upper = Array::of2(&user, &JsValue::from_f64(f64::INFINITY));
            let range = KeyRange::bound(&lower, &upper, Some(false), Some(false))
                .map_err(|e| tx.fail(e))?;
            store
                .index(BY_USER_INDEX)
                .and_then(|index| index.get_all(Some(range.into()), None))
        }
        None => store
            .index(BY_UPDATED_INDEX)
            .and_then(|index| index.get_all(None, None)),
    }
    .map_err(|e| tx.fail(e))?;
    let mut records = request.await.map_err(|e| tx.fail(e))?;
    records.reverse();
    Ok(records)
}

/// Deletes a session and its items in one transaction. Resolves to whether it existed.
pub async fn delete_session(conn: &Connection, session_id: &str) -> Result<bool> {
    let tx = Tx::begin(
        conn,
        &[SESSIONS_STORE, MESSAGES_STORE],
        TransactionMode::ReadWrite,
        format!("deleteSession of session \"{session_id}\""),
    )?;
    let existed = read_record(&tx, session_id).await?.is_some();
    let written = (|| -> Result<()> {
        tx.store(MESSAGES_STORE)?
            .delete(all_messages(session_id)?)
            .map_err(|e| tx.fail(e))?;
        tx.store(SESSIONS_STORE)?
            .delete(JsValue::from_str(session_id))
            .map_err(|e| tx.fail(e))?;
        Ok(())
    })();
    tx.finish(written).await?;
    Ok(existed)
}
