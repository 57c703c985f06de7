//! Reads the arguments of the session constructors and of `listSessions` / `deleteSession`.

use js_sys::Object;
use wasm_bindgen::JsCast;
use wasm_bindgen::JsValue;

use crate::core::branch::{validate_name, MAIN};
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::history::SessionSettings;
use crate::core::schema::DEFAULT_DB_NAME;
use crate::core::session::{uuid_v4, validate_session_id, validate_user_id};

use super::args::{
    field, only_keys, optional_string, required_string, take_options, take_settings,
};
use super::js::{error_text, random_bytes};

/// `new IndexedDbSession(sessionId, { userId?, dbName?, settings?, branch?, index? })`.
pub struct IdbSessionArgs {
    pub session_id: String,
    pub user_id: Option<String>,
    pub db_name: String,
    pub settings: SessionSettings,
    /// The frozen copy of `options.settings` that the `settings` property returns.
    pub settings_js: Object,
    /// The branch the object starts on (`main` by default).
    pub branch: String,
    /// `index: { tools: true }`: the search index also takes tool calls' arguments and outputs.
    pub index_tools: bool,
}

/// `new MemorySession(sessionId?, { settings? })`.
pub struct MemorySessionArgs {
    pub session_id: String,
    pub settings: SessionSettings,
    pub settings_js: Object,
}

fn session_id_of(value: &JsValue) -> Result<String> {
    let id = required_string(value, "sessionId", SessionErrorCode::InvalidSessionId)?;
    validate_session_id(&id)?;
    Ok(id)
}

fn user_id_of(options: &Option<Object>) -> Result<Option<String>> {
    let user_id = optional_string(
        &field(options, "options", "userId")?,
        "options.userId",
        SessionErrorCode::InvalidUserId,
    )?;
    if let Some(u) = &user_id {
        validate_user_id(u)?;
    }
    Ok(user_id)
}

fn db_name_of(options: &Option<Object>) -> Result<String> {
    let what = "options.dbName";
    let name = optional_string(
        &field(options, "options", "dbName")?,
        what,
        SessionErrorCode::InvalidOptions,
    )?;
    match name {
        None => Ok(DEFAULT_DB_NAME.to_string()),
        Some(n) if n.is_empty() => Err(SessionError::new(
            SessionErrorCode::InvalidOptions,
            format!("{what} must be a non-empty string"),
        )),
        Some(n) => Ok(n),
    }
}

impl IdbSessionArgs {
    pub fn parse(session_id: &JsValue, options: &JsValue) -> Result<Self> {
        let session_id = session_id_of(session_id)?;
        let options = take_options(options, "options")?;
        only_keys(
            &options,
            "options",
            &["userId", "dbName", "settings", "branch", "index"],
        )?;
        let user_id = user_id_of(&options)?;
        let db_name = db_name_of(&options)?;
        let (settings, settings_js) = take_settings(&options)?;
        let branch = optional_string(
            &field(&options, "options", "branch")?,
            "options.branch",
            SessionErrorCode::InvalidOptions,
        )?;
        if let Some(b) = &branch {
            validate_name(b)?;
        }
        let index = take_options(&field(&options, "options", "index")?, "options.index")?;
        only_keys(&index, "options.index", &["tools"])?;
        let tools = field(&index, "options.index", "tools")?;
        let index_tools = match tools.as_bool() {
            Some(b) => b,
            None if tools.is_undefined() => false,
            None => {
                return Err(SessionError::new(
                    SessionErrorCode::InvalidOptions,
                    format!(
                        "options.index.tools must be a boolean, got {}",
                        super::js::describe(&tools)
                    ),
                ))
            }
        };
        Ok(IdbSessionArgs {
            session_id,
            user_id,
            db_name,
            settings,
            settings_js,
            branch: branch.unwrap_or_else(|| MAIN.to_string()),
            index_tools,
        })
    }
}

impl MemorySessionArgs {
    /// Without a session id, a random UUID.
    pub fn parse(session_id: &JsValue, options: &JsValue) -> Result<Self> {
        let session_id = if session_id.is_undefined() || session_id.is_null() {
            let bytes = random_bytes().map_err(|e| {
                SessionError::new(
                    SessionErrorCode::StorageUnavailable,
                    format!(
                        "crypto.getRandomValues is not available to make a session id ({})",
                        error_text(&e)
                    ),
                )
            })?;
            uuid_v4(bytes)
        } else {
            session_id_of(session_id)?
        };
        let options = take_options(options, "options")?;
        only_keys(&options, "options", &["settings"])?;
        let (settings, settings_js) = take_settings(&options)?;
        Ok(MemorySessionArgs {
            session_id,
            settings,
            settings_js,
        })
    }
}

/// `listSessions({ dbName?, userId? })`: the database and the user.
pub fn list_args(options: &JsValue) -> Result<(String, Option<String>)> {
    let options = take_options(options, "options")?;
    // (A misspelt `userID` would list every user's sessions.)
    only_keys(&options, "options", &["dbName", "userId"])?;
    Ok((db_name_of(&options)?, user_id_of(&options)?))
}

/// `deleteSession(sessionId, { dbName?, userId?, expectedUpdatedAt? })`: the session, the
/// database, the owner it must have (given: `null` for none), and the `updatedAt` it must still
/// show to be deleted.
pub fn delete_args(session_id: &JsValue, options: &JsValue) -> Result<DeleteArgs> {
    let session_id = session_id_of(session_id)?;
    let options = take_options(options, "options")?;
    // (A misspelt `userID` would delete another user's session of that id.)
    only_keys(
        &options,
        "options",
        &["dbName", "userId", "expectedUpdatedAt"],
    )?;
    let expected = field(&options, "options", "expectedUpdatedAt")?;
    let expected = match expected.is_undefined() {
        true => None,
        false => Some(expected.as_f64().filter(|t| t.is_finite()).ok_or_else(|| {
            SessionError::new(
                SessionErrorCode::InvalidOptions,
                format!(
                    "options.expectedUpdatedAt must be a time in milliseconds (a session's updatedAt), got {}",
                    super::js::describe(&expected)
                ),
            )
        })?),
    };
    let owner = match field(&options, "options", "userId")?.is_undefined() {
        true => None,
        false => Some(user_id_of(&options)?),
    };
    Ok((session_id, db_name_of(&options)?, owner, expected))
}

/// What [`delete_args`] gives.
pub type DeleteArgs = (String, String, Option<Option<String>>, Option<f64>);

/// `repairSession(sessionId, { dbName?, userId? })`: the session, the database, and the owner to
/// give it when its record no longer names one that can be read.
pub fn repair_args(
    session_id: &JsValue,
    options: &JsValue,
) -> Result<(String, String, Option<String>)> {
    let session_id = session_id_of(session_id)?;
    let options = take_options(options, "options")?;
    only_keys(&options, "options", &["dbName", "userId"])?;
    Ok((session_id, db_name_of(&options)?, user_id_of(&options)?))
}

/// The internal page reads of `exportSessions`: `{ dbName?, sessionId, kind, after?, limit }`.
pub struct BackupPageArgs {
    pub db_name: String,
    pub session_id: String,
    pub kind: String,
    pub after: JsValue,
    pub limit: u32,
    /// The session record the export wrote: only the rows it names are read out.
    pub record: JsValue,
}

pub fn backup_page_args(options: &JsValue) -> Result<BackupPageArgs> {
    let options = take_options(options, "options")?;
    let get = |key: &'static str| field(&options, "options", key);
    let kind = required_string(
        &get("kind")?,
        "options.kind",
        SessionErrorCode::InvalidOptions,
    )?;
    let limit = get("limit")?
        .as_f64()
        .filter(|n| *n >= 1.0 && n.fract() == 0.0)
        .map_or(1000, |n| n.min(u32::MAX as f64) as u32);
    Ok(BackupPageArgs {
        db_name: db_name_of(&options)?,
        session_id: session_id_of(&get("sessionId")?)?,
        kind,
        after: get("after")?,
        limit,
        record: get("record")?,
    })
}

/// The options of one session's import: `{ dbName?, userId?, onConflict? }`. `userId` present
/// (a string, or `null` for no user) gives the imported sessions that owner; absent, each keeps
/// its own.
pub struct RestoreArgs {
    pub db_name: String,
    pub user: Option<Option<String>>,
    pub on_conflict: crate::backend::indexeddb::backup::OnConflict,
    /// The ids the same import wrote before this session: never skipped, replaced or taken by a
    /// rename (the backup's own sessions do not overwrite one another).
    pub written: Vec<String>,
}

pub fn restore_args(options: &JsValue) -> Result<RestoreArgs> {
    use crate::backend::indexeddb::backup::OnConflict;
    let options = take_options(options, "options")?;
    let user_value = field(&options, "options", "userId")?;
    let user = match user_value.is_undefined() {
        true => None,
        false => Some(user_id_of(&options)?),
    };
    let conflict = field(&options, "options", "onConflict")?;
    let on_conflict = match conflict.as_string().as_deref() {
        _ if conflict.is_undefined() => OnConflict::Skip,
        Some("skip") => OnConflict::Skip,
        Some("replace") => OnConflict::Replace,
        Some("rename") => OnConflict::Rename,
        _ => {
            return Err(SessionError::new(
                SessionErrorCode::InvalidOptions,
                format!(
                    "options.onConflict must be 'skip', 'replace' or 'rename', got {}",
                    super::js::describe(&conflict)
                ),
            ))
        }
    };
    let written = field(&options, "options", "written")?;
    let written = match js_sys::Array::is_array(&written) {
        true => js_sys::Array::from(&written)
            .iter()
            .filter_map(|id| id.as_string())
            .collect(),
        false => Vec::new(),
    };
    Ok(RestoreArgs {
        db_name: db_name_of(&options)?,
        user,
        on_conflict,
        written,
    })
}

/// `searchSessions({ dbName?, userId, query, limit = 20, sessionIds?, onProgress? })`.
pub struct SearchArgs {
    pub db_name: String,
    pub user_id: Option<String>,
    pub query: String,
    pub limit: usize,
    pub session_ids: Option<Vec<String>>,
    pub on_progress: Option<js_sys::Function>,
}

/// `onProgress` of an options object: a function, or absent.
fn on_progress_of(options: &Option<Object>) -> Result<Option<js_sys::Function>> {
    let value = field(options, "options", "onProgress")?;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value.dyn_into::<js_sys::Function>().map(Some).map_err(|v| {
        SessionError::new(
            SessionErrorCode::InvalidOptions,
            format!(
                "options.onProgress must be a function, got {}",
                super::js::describe(&v)
            ),
        )
    })
}

pub fn search_args(options: &JsValue) -> Result<SearchArgs> {
    let options = take_options(options, "options")?;
    // (A misspelt `sessionId` would search every session of the user.)
    only_keys(
        &options,
        "options",
        &[
            "dbName",
            "userId",
            "query",
            "limit",
            "sessionIds",
            "onProgress",
        ],
    )?;
    // Searching everyone's sessions by leaving the user out must not happen by accident: the
    // key is required (`null`: the sessions without a user).
    let has_user = !field(&options, "options", "userId")?.is_undefined();
    if !has_user {
        return Err(SessionError::new(
            SessionErrorCode::InvalidOptions,
            "searchSessions needs options.userId: the user whose sessions to search, or null for \
             the sessions without a user",
        ));
    }
    let query = field(&options, "options", "query")?;
    let query = required_string(&query, "options.query", SessionErrorCode::InvalidQuery)?;
    let limit =
        match super::args::take_limit(&field(&options, "options", "limit")?, "options.limit")? {
            None => 20,
            Some(crate::core::history::Limit::Newest(n)) if n > 0 => {
                usize::try_from(n).unwrap_or(usize::MAX)
            }
            Some(_) => {
                return Err(SessionError::new(
                    SessionErrorCode::InvalidLimit,
                    "options.limit must be a positive integer",
                ))
            }
        };
    let ids = field(&options, "options", "sessionIds")?;
    let session_ids = match ids.is_undefined() || ids.is_null() {
        true => None,
        false => {
            // A Set or an object of ids is refused, not read as no ids (nothing found).
            let elements = match super::js::is_array(&ids) {
                Ok(true) => super::js::elements(&ids).ok(),
                _ => None,
            }
            .ok_or_else(|| {
                SessionError::new(
                    SessionErrorCode::InvalidOptions,
                    "options.sessionIds must be an array of session ids",
                )
            })?;
            Some(
                elements
                    .iter()
                    .map(session_id_of)
                    .collect::<Result<Vec<_>>>()?,
            )
        }
    };
    Ok(SearchArgs {
        db_name: db_name_of(&options)?,
        user_id: user_id_of(&options)?,
        query,
        limit,
        session_ids,
        on_progress: on_progress_of(&options)?,
    })
}

/// `buildSearchIndex({ dbName?, onProgress? })`.
pub fn build_index_args(options: &JsValue) -> Result<(String, Option<js_sys::Function>)> {
    let options = take_options(options, "options")?;
    only_keys(&options, "options", &["dbName", "onProgress"])?;
    Ok((db_name_of(&options)?, on_progress_of(&options)?))
}
