//! `IndexedDbSession`, `MemorySession`, `listSessions`, `deleteSession`. Each method checks its
//! arguments when it is called, takes its place in the session's queue, and hands the work to
//! the backend; errors become rejected promises carrying a `SessionError`.

use std::future::Future;
use std::rc::Rc;

use js_sys::{Array, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::backend::indexeddb;
use crate::backend::js::{
    field, optional_string, random_bytes, required_string, take_items, take_limit, take_options,
    take_settings, to_js_error,
};
use crate::backend::memory::MemorySessionState;
use crate::backend::{connection, IdbSessionState};
use crate::core::error::{ErrorCode, Result, SessionError};
use crate::core::schema::DEFAULT_DB_NAME;
use crate::core::session::{uuid_v4, validate_session_id, validate_user_id};

use super::{reject, settle};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** One session as `listSessions` reports it. Times are milliseconds since the Unix epoch. */
export interface SessionInfo {
  sessionId: string;
  userId: string | null;
  createdAt: number;
  updatedAt: number;
  itemCount: number;
}

/** The stable `code` of every error this library throws. */
export type SessionErrorCode =
  | 'INVALID_ITEM'
  | 'INVALID_LIMIT'
  | 'INVALID_SESSION_ID'
  | 'INVALID_USER_ID'
  | 'INVALID_OPTIONS'
  | 'USER_MISMATCH'
  | 'STORAGE_FULL'
  | 'CLOSED'
  | 'DB_VERSION'
  | 'STORAGE_UNAVAILABLE'
  | 'STORAGE_ERROR';

/** The errors this library throws (and rejects with) are `Error`s of this shape. */
export interface SessionError extends Error {
  name: 'SessionError';
  code: SessionErrorCode;
}

export interface IndexedDbSessionOptions {
  /** The user the session belongs to. A session can only be opened by the user that created it. */
  userId?: string;
  /** IndexedDB database name; default `"agent-sessions"`. */
  dbName?: string;
  settings?: SessionSettings;
}

export interface MemorySessionOptions {
  settings?: SessionSettings;
}

export interface ListSessionsOptions {
  /** IndexedDB database name; default `"agent-sessions"`. */
  dbName?: string;
  /** Only this user's sessions. */
  userId?: string;
}

export interface DeleteSessionOptions {
  /** IndexedDB database name; default `"agent-sessions"`. */
  dbName?: string;
}

/** The session methods shared by `IndexedDbSession` and `MemorySession` (the SDK's `Session`). */
export interface SessionMethods {
  readonly sessionId: string;
  readonly settings: Readonly<SessionSettings>;
  getSessionId(): Promise<string>;
  /**
   * The newest `limit` items, oldest first; all of them without a limit (or `settings.limit`
   * when set). `limit <= 0` gives `[]`. The type parameter only names the item shape you stored.
   */
  getItems<T extends Item = Item>(limit?: number): Promise<T[]>;
  /** Appends the items in order, atomically. Each must be a plain object. */
  addItems(items: readonly Item[]): Promise<void>;
  /** Removes and returns the newest item; `undefined` when the session is empty. */
  popItem<T extends Item = Item>(): Promise<T | undefined>;
  /** Removes every item of this session. */
  clearSession(): Promise<void>;
  /** Releases the session; any later call rejects with `CLOSED`. */
  close(): Promise<void>;
}

/** A session stored in IndexedDB: durable across reloads, shared by the tabs of an origin. */
export interface IndexedDbSession extends SessionMethods {}
export class IndexedDbSession {
  constructor(sessionId: string, options?: IndexedDbSessionOptions);
  readonly userId: string | null;
  readonly dbName: string;
  /** Frees the WebAssembly memory of this object now instead of at garbage collection. */
  free(): void;
}

/** A session kept in memory only: gone on reload. Makes a random id when none is given. */
export interface MemorySession extends SessionMethods {}
export class MemorySession {
  constructor(sessionId?: string, options?: MemorySessionOptions);
  /** Frees the WebAssembly memory of this object now instead of at garbage collection. */
  free(): void;
}

/** The sessions of a database (one user's, with `userId`), newest `updatedAt` first. */
export function listSessions(options?: ListSessionsOptions): Promise<SessionInfo[]>;

/** Deletes a session and all its items. Resolves to whether it existed. */
export function deleteSession(sessionId: string, options?: DeleteSessionOptions): Promise<boolean>;
"#;

fn db_name_of(options: &Option<Object>, what: &str) -> Result<String> {
    let name = optional_string(&field(options, "dbName"), what, ErrorCode::InvalidOptions)?;
    match name {
        None => Ok(DEFAULT_DB_NAME.to_string()),
        Some(n) if n.is_empty() => Err(SessionError::new(
            ErrorCode::InvalidOptions,
            format!("{what} must be a non-empty string"),
        )),
        Some(n) => Ok(n),
    }
}

fn session_id_of(value: &JsValue) -> Result<String> {
    let id = required_string(value, "sessionId", ErrorCode::InvalidSessionId)?;
    validate_session_id(&id)?;
    Ok(id)
}

fn items_to_array(items: Vec<JsValue>) -> JsValue {
    items.into_iter().collect::<Array>().into()
}

/// Stored session records as `listSessions` reports them: the public fields only. The property
/// names are made into JS strings once for the whole list.
fn session_infos(records: &[JsValue]) -> Array {
    let fields = [
        ("id", "sessionId"),
        ("userId", "userId"),
        ("createdAt", "createdAt"),
        ("updatedAt", "updatedAt"),
        ("itemCount", "itemCount"),
    ]
    .map(|(from, to)| (JsValue::from_str(from), JsValue::from_str(to)));
    records
        .iter()
        .map(|record| {
            let info = Object::new();
            for (from, to) in &fields {
                let v = Reflect::get(record, from).unwrap_or(JsValue::NULL);
                let _ = Reflect::set(&info, to, &v);
            }
            JsValue::from(info)
        })
        .collect()
}

#[wasm_bindgen(skip_typescript)]
pub struct IndexedDbSession {
    state: Rc<IdbSessionState>,
    settings: Object,
}

impl IndexedDbSession {
    fn create(session_id: &JsValue, options: &JsValue) -> Result<IndexedDbSession> {
        let session_id = session_id_of(session_id)?;
        let options = take_options(options, "options")?;
        let user_id = optional_string(
            &field(&options, "userId"),
            "options.userId",
            ErrorCode::InvalidUserId,
        )?;
        if let Some(u) = &user_id {
            validate_user_id(u)?;
        }
        let db_name = db_name_of(&options, "options.dbName")?;
        let (settings, settings_js) = take_settings(&options)?;
        Ok(IndexedDbSession {
            state: Rc::new(IdbSessionState::new(db_name, session_id, user_id, settings)),
            settings: settings_js,
        })
    }

    /// Checks that the session is open, takes a place in its queue now, and runs `op` after
    /// every earlier call on this object.
    fn queued<F, Fut>(&self, what: &str, op: F) -> Promise
    where
        F: FnOnce(Rc<IdbSessionState>) -> Fut + 'static,
        Fut: Future<Output = Result<JsValue>> + 'static,
    {
        if let Err(e) = self.state.check_open(what) {
            return reject(e);
        }
        let mut ticket = self.state.queue().enter();
        let state = self.state.clone();
        future_to_promise(async move {
            ticket.ready().await;
            let result = op(state).await;
            drop(ticket);
            settle(result)
        })
    }
}

#[wasm_bindgen]
impl IndexedDbSession {
    #[wasm_bindgen(constructor)]
    pub fn new(
        session_id: JsValue,
        options: JsValue,
    ) -> std::result::Result<IndexedDbSession, JsValue> {
        Self::create(&session_id, &options).map_err(|e| to_js_error(&e))
    }

    #[wasm_bindgen(getter, js_name = sessionId)]
    pub fn session_id(&self) -> String {
        self.state.session_id.clone()
    }

    /// The owner, or `null` for a session without one.
    #[wasm_bindgen(getter, js_name = userId)]
    pub fn user_id(&self) -> JsValue {
        self.state
            .user_id
            .as_deref()
            .map(JsValue::from)
            .unwrap_or(JsValue::NULL)
    }

    #[wasm_bindgen(getter, js_name = dbName)]
    pub fn db_name(&self) -> String {
        self.state.db_name.clone()
    }

    #[wasm_bindgen(getter)]
    pub fn settings(&self) -> Object {
        self.settings.clone()
    }

    #[wasm_bindgen(js_name = getSessionId)]
    pub fn get_session_id(&self) -> Promise {
        match self.state.check_open("getSessionId") {
            Ok(()) => Promise::resolve(&JsValue::from_str(&self.state.session_id)),
            Err(e) => reject(e),
        }
    }

    #[wasm_bindgen(js_name = getItems)]
    pub fn get_items(&self, limit: JsValue) -> Promise {
        let limit = match take_limit(&limit, "limit") {
            Ok(l) => l,
            Err(e) => return reject(e),
        };
        self.queued("getItems", move |state| async move {
            state.get_items(limit).await.map(items_to_array)
        })
    }

    #[wasm_bindgen(js_name = addItems)]
    pub fn add_items(&self, items: JsValue) -> Promise {
        // Copied now: changing the caller's array after this call changes nothing stored.
        let items = match take_items(&items) {
            Ok(items) => items,
            Err(e) => return reject(e),
        };
        self.queued("addItems", move |state| async move {
            let conn = state.connection().await?;
            indexeddb::add_items(&conn, &state.target(), items, crate::backend::js::now()).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    #[wasm_bindgen(js_name = popItem)]
    pub fn pop_item(&self) -> Promise {
        self.queued("popItem", |state| async move {
            let conn = state.connection().await?;
            let item =
                indexeddb::pop_item(&conn, &state.target(), crate::backend::js::now()).await?;
            Ok(item.unwrap_or(JsValue::UNDEFINED))
        })
    }

    #[wasm_bindgen(js_name = clearSession)]
    pub fn clear_session(&self) -> Promise {
        self.queued("clearSession", |state| async move {
            let conn = state.connection().await?;
            indexeddb::clear_session(&conn, &state.target(), crate::backend::js::now()).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    pub fn close(&self) -> Promise {
        if self.state.check_open("close").is_err() {
            return Promise::resolve(&JsValue::UNDEFINED);
        }
        // Resolves once every call made before it has taken effect.
        let promise = self.queued("close", |_| async move { Ok(JsValue::UNDEFINED) });
        self.state.mark_closed();
        promise
    }
}

#[wasm_bindgen(skip_typescript)]
pub struct MemorySession {
    state: Rc<MemorySessionState>,
    settings: Object,
}

impl MemorySession {
    fn create(session_id: &JsValue, options: &JsValue) -> Result<MemorySession> {
        let session_id = if session_id.is_undefined() || session_id.is_null() {
            uuid_v4(random_bytes()?)
        } else {
            session_id_of(session_id)?
        };
        let options = take_options(options, "options")?;
        let (settings, settings_js) = take_settings(&options)?;
        Ok(MemorySession {
            state: Rc::new(MemorySessionState::new(session_id, settings)),
            settings: settings_js,
        })
    }

    fn run(&self, what: &str, op: impl FnOnce(&MemorySessionState) -> Result<JsValue>) -> Promise {
        let result = self.state.check_open(what).and_then(|()| op(&self.state));
        match result {
            Ok(v) => Promise::resolve(&v),
            Err(e) => reject(e),
        }
    }
}

#[wasm_bindgen]
impl MemorySession {
    #[wasm_bindgen(constructor)]
    pub fn new(
        session_id: JsValue,
        options: JsValue,
    ) -> std::result::Result<MemorySession, JsValue> {
        Self::create(&session_id, &options).map_err(|e| to_js_error(&e))
    }

    #[wasm_bindgen(getter, js_name = sessionId)]
    pub fn session_id(&self) -> String {
        self.state.session_id.clone()
    }

    #[wasm_bindgen(getter)]
    pub fn settings(&self) -> Object {
        self.settings.clone()
    }

    #[wasm_bindgen(js_name = getSessionId)]
    pub fn get_session_id(&self) -> Promise {
        self.run("getSessionId", |s| Ok(s.session_id.as_str().into()))
    }

    #[wasm_bindgen(js_name = getItems)]
    pub fn get_items(&self, limit: JsValue) -> Promise {
        self.run("getItems", |s| {
            let limit = take_limit(&limit, "limit")?;
            s.get_items(limit).map(items_to_array)
        })
    }

    #[wasm_bindgen(js_name = addItems)]
    pub fn add_items(&self, items: JsValue) -> Promise {
        self.run("addItems", |s| {
            s.add_items(take_items(&items)?);
            Ok(JsValue::UNDEFINED)
        })
    }

    #[wasm_bindgen(js_name = popItem)]
    pub fn pop_item(&self) -> Promise {
        self.run("popItem", |s| {
            Ok(s.pop_item().unwrap_or(JsValue::UNDEFINED))
        })
    }

    #[wasm_bindgen(js_name = clearSession)]
    pub fn clear_session(&self) -> Promise {
        self.run("clearSession", |s| {
            s.clear();
            Ok(JsValue::UNDEFINED)
        })
    }

    pub fn close(&self) -> Promise {
        if self.state.check_open("close").is_ok() {
            self.state.close();
        }
        Promise::resolve(&JsValue::UNDEFINED)
    }
}

#[wasm_bindgen(js_name = listSessions, skip_typescript)]
pub fn list_sessions(options: JsValue) -> Promise {
    let parsed = (|| -> Result<(String, Option<String>)> {
        let options = take_options(&options, "options")?;
        let user_id = optional_string(
            &field(&options, "userId"),
            "options.userId",
            ErrorCode::InvalidUserId,
        )?;
        if let Some(u) = &user_id {
            validate_user_id(u)?;
        }
        Ok((db_name_of(&options, "options.dbName")?, user_id))
    })();
    let (db_name, user_id) = match parsed {
        Ok(p) => p,
        Err(e) => return reject(e),
    };
    future_to_promise(async move {
        settle(
            async {
                let conn = connection(&db_name).await?;
                let records = indexeddb::list_sessions(&conn, user_id.as_deref()).await?;
                Ok(session_infos(&records))
            }
            .await,
        )
    })
}

#[wasm_bindgen(js_name = deleteSession, skip_typescript)]
pub fn delete_session(session_id: JsValue, options: JsValue) -> Promise {
    let parsed = (|| -> Result<(String, String)> {
        let session_id = session_id_of(&session_id)?;
        let options = take_options(&options, "options")?;
        Ok((session_id, db_name_of(&options, "options.dbName")?))
    })();
    let (session_id, db_name) = match parsed {
        Ok(p) => p,
        Err(e) => return reject(e),
    };
    future_to_promise(async move {
        settle(
            async {
                let conn = connection(&db_name).await?;
                indexeddb::delete_session(&conn, &session_id).await
            }
            .await,
        )
    })
}
