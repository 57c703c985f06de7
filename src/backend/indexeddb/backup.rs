//! Backups: a session's stored rows read a page at a time for `exportSessions`, and a session
//! written back from a backup's lines for `importSessions`, every line checked before anything is
//! written. Rows travel exactly as they are stored, so a round trip gives back the same items,
//! metadata and branches.

use idb::{KeyRange, Query, TransactionMode};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::backend::js::{self, describe};
use crate::backend::metadata::MAX_TITLE;
use crate::core::branch::MAIN;
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::schema::{
    ARCHIVE_STORE, MESSAGES_STORE, OPERATIONS_STORE, SESSIONS_STORE, SESSION_STORES, USAGE_STORE,
};
use crate::core::session::{safe_count, validate_session_id, validate_user_id, MAX_SAFE_INTEGER};
use crate::core::transaction::OPERATION_LOG_LIMIT;

use super::branches::{self, Loaded};
use super::open::Connection;
use super::ops::delete_session_data;
use super::record::{indexed_with_tools, record_from_js, rewrites_of, Indexer, StoredRecord};
use super::request::Sent as _;
use super::tx::{storage_error, Tx};

/// The kinds of lines that carry a session's rows, each with its store and the store's key path.
pub const ROW_KINDS: [(&str, &str, &[&str]); 4] = [
    ("item", MESSAGES_STORE, &["sessionId", "seq"]),
    ("archived", ARCHIVE_STORE, &["sessionId", "position"]),
    ("usage", USAGE_STORE, &["sessionId", "branch", "turn"]),
    ("operation", OPERATIONS_STORE, &["sessionId", "opSeq"]),
];

fn kind_of(kind: &str) -> Result<(&'static str, &'static [&'static str])> {
    ROW_KINDS
        .iter()
        .find(|(k, _, _)| *k == kind)
        .map(|(_, store, path)| (*store, *path))
        .ok_or_else(|| {
            SessionError::new(
                SessionErrorCode::InvalidOptions,
                format!("there are no \"{kind}\" rows in a backup"),
            )
        })
}

fn bound(lower: &JsValue, upper: &JsValue, lower_open: bool) -> Result<Query> {
    KeyRange::bound(lower, upper, Some(lower_open), Some(false))
        .map(Query::from)
        .map_err(|e| storage_error(&e, "selecting a session's rows"))
}

/// A session's rows in a store come in two key ranges: `[sessionId, …]` (main's rows, usage,
/// the operation log), then `[[sessionId, branchId], …]` (the other branches' rows), which sort
/// after every key that starts with a string. Returns the ranges still to read after `after`.
fn ranges_after(session_id: &str, after: &JsValue) -> Result<Vec<Query>> {
    let sid = JsValue::from_str(session_id);
    let own = (
        Array::of1(&sid).into(),
        Array::of2(&sid, &Array::new()).into(),
    );
    let others = (
        Array::of1(&Array::of1(&sid)).into(),
        Array::of1(&Array::of2(&sid, &Array::new())).into(),
    );
    if after.is_undefined() || after.is_null() {
        return Ok(vec![
            bound(&own.0, &own.1, false)?,
            bound(&others.0, &others.1, false)?,
        ]);
    }
    let in_own = js::get(after, "0").is_ok_and(|first| first.is_string());
    Ok(match in_own {
        true => vec![
            bound(after, &own.1, true)?,
            bound(&others.0, &others.1, false)?,
        ],
        false => vec![bound(after, &others.1, true)?],
    })
}

/// One page of a backup: the session record (`kind` `"session"`), or at most `limit` rows of
/// one kind after the key `after`, oldest key first, with the key to continue from (`None` when
/// there are no more). Each page is its own read transaction.
pub async fn read_page(
    conn: &Connection,
    session_id: &str,
    kind: &str,
    after: &JsValue,
    limit: u32,
    record: &JsValue,
) -> Result<(Vec<JsValue>, Option<JsValue>)> {
    let doing = format!("exporting session \"{session_id}\"");
    if kind == "session" {
        let tx = Tx::begin(conn, &[SESSIONS_STORE], TransactionMode::ReadOnly, doing).await?;
        return tx
            .run(async |tx| {
                let record = tx.get(SESSIONS_STORE, session_id).await?;
                Ok((record.into_iter().collect(), None))
            })
            .await;
    }
    let (store, key_path) = kind_of(kind)?;
    // The record the export wrote for this session, when given: only the rows it names go out.
    let bounds = match record.is_object() {
        true => Some(Bounds::of(record)?),
        false => None,
    };
    let limit = limit.max(1);
    let tx = Tx::begin(
        conn,
        &[store, SESSIONS_STORE],
        TransactionMode::ReadOnly,
        doing,
    )
    .await?;
    tx.run(async |tx| {
        // Deleted since the export wrote its record (and made again, maybe by another user): the
        // rows are no longer that record's, and none go out (the export's read of the record at
        // the session's end says what became of it).
        if bounds.is_some() {
            let now = tx.get(SESSIONS_STORE, session_id).await?;
            let same = |key| match &now {
                Some(now) => Object::is(
                    &js::get(now, key).unwrap_or_default(),
                    &js::get(record, key).unwrap_or_default(),
                ),
                None => false,
            };
            if !(same("createdAt") && same("userId")) {
                return Ok((Vec::new(), None));
            }
        }
        let mut rows = Vec::new();
        for range in ranges_after(session_id, after)? {
            let want = limit - rows.len() as u32;
            let page = tx
                .store(store)?
                .get_all(Some(range), Some(want))
                .map_err(|e| tx.fail(e))?
                .reply()
                .await
                .map_err(|e| tx.fail(e))?;
            rows.extend(page);
            if rows.len() as u32 == limit {
                break;
            }
        }
        let next = match rows.len() as u32 == limit {
            true => rows.last().map(|row| key_of(row, key_path)),
            false => None,
        };
        if let Some(bounds) = &bounds {
            rows.retain(|row| bounds.names(kind, row));
        }
        if store == MESSAGES_STORE {
            rows.iter().for_each(without_terms);
        }
        Ok((rows, next))
    })
    .await
}

/// Takes the search index's terms out of an item row: an import makes them again. A row indexed
/// with its tool call's or output's text (written by an object with `index: { tools: true }`)
/// says so instead (`indexTools: true`: it has terms where its message text alone has none), so
/// that the import indexes it the same way.
fn without_terms(row: &JsValue) {
    let tools = indexed_with_tools(row);
    // (Rows read from the store are objects.)
    let _ = Reflect::delete_property(row.unchecked_ref::<Object>(), &"terms".into());
    if tools {
        let _ = Reflect::set(row, &INDEX_TOOLS.into(), &JsValue::TRUE);
    }
}

/// The field of a backup's item row that says it was indexed with its tool call's text.
const INDEX_TOOLS: &str = "indexTools";

/// A row's key, from its store's key path.
fn key_of(row: &JsValue, key_path: &[&'static str]) -> JsValue {
    key_path
        .iter()
        .map(|field| js::get(row, field).unwrap_or(JsValue::UNDEFINED))
        .collect::<Array>()
        .into()
}

/// What `importSessions` does with a session that is already stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConflict {
    Skip,
    Replace,
    Rename,
}

/// What became of one imported session: its id in the database, and how it got there.
pub struct Restored {
    pub session_id: String,
    pub status: &'static str,
}

/// Deletes session `id`'s rows (`stored` its record) for an import of `record` over it, in the
/// transaction under way: the rewrites the replacement counts, one more than either had.
fn replace(tx: &Tx, id: &str, stored: &JsValue, record: &JsValue) -> Result<u64> {
    delete_session_data(tx, id)?;
    branches::delete_all(tx, id)?;
    let most = rewrites_of(stored).max(rewrites_of(record));
    Ok(most.saturating_add(1).min(MAX_SAFE_INTEGER))
}

/// Whether `stored`, a session record, is `record`'s session as an import under `owner` wrote
/// it: that owner's, made at the same time.
fn same_session(stored: &JsValue, record: &JsValue, owner: &Option<String>) -> bool {
    let created = |r: &JsValue| js::get(r, "createdAt").ok().and_then(|v| v.as_f64());
    let made = created(stored);
    made.is_some()
        && made == created(record)
        && js::get(stored, "userId").ok().and_then(|u| u.as_string()) == *owner
}

/// A failed import: the error, and the line (1-based, in the whole backup) it is about.
pub struct RestoreError {
    pub error: SessionError,
    pub line: Option<u32>,
}

impl From<SessionError> for RestoreError {
    fn from(error: SessionError) -> Self {
        RestoreError { error, line: None }
    }
}

fn invalid(line: u32, what: String) -> RestoreError {
    RestoreError {
        error: SessionError::new(
            SessionErrorCode::ImportInvalid,
            format!("line {line} of the backup: {what}"),
        ),
        line: Some(line),
    }
}

/// A session's lines, checked: the record, and the rows of each store with their lines.
struct Checked {
    record: JsValue,
    session_id: String,
    owner: Option<String>,
    rows: Vec<(&'static str, JsValue)>,
}

/// Checks one session's lines (`{ session }`, then its rows, then `{ end }`), each against the
/// record: every row belongs to the session and one of its branches, every item, archived item,
/// usage and log entry the record counts is there once, and nothing else is.
/// The rows a session record names: per branch, its own items `first..next`, `archived`
/// archived items and its usage, and the operation numbers below `next_op_seq` the log keeps.
struct Bounds {
    session_id: String,
    owner: Option<String>,
    next_op_seq: u64,
    /// When the record was written last.
    updated_at: f64,
    branches: Vec<BranchBounds>,
}

/// What a session record names of one branch: its own rows `first..next`, `archived` archived
/// items, and the newest turn it shows.
struct BranchBounds {
    id: String,
    first: u64,
    next: u64,
    archived: u64,
    last_turn: u64,
}

impl Bounds {
    fn of(record_value: &JsValue) -> Result<Bounds> {
        let record = record_from_js(record_value)?;
        let (session_id, owner, next_op_seq, updated_at) = (
            record.id.clone(),
            record.user_id.clone(),
            record.next_op_seq,
            record.updated_at,
        );
        let loaded = Loaded::from(StoredRecord {
            record,
            stored: record_value.clone(),
        })?;
        let branches = loaded
            .tree
            .branches
            .iter()
            .map(|b| BranchBounds {
                id: b.id.clone(),
                first: b.first,
                next: b.next,
                archived: b.archived,
                last_turn: b.last_turn,
            })
            .collect();
        Ok(Bounds {
            session_id,
            owner,
            next_op_seq,
            updated_at,
            branches,
        })
    }

    /// Whether the record names `row`, a row of kind `kind` read from the session's stores: what
    /// an export keeps, so that rows written after the record was read (another tab's turn in
    /// the middle of an export) do not make a session its record does not count.
    fn names(&self, kind: &str, row: &JsValue) -> bool {
        let Ok(branch) = branch_of(row, &self.session_id, kind == "usage") else {
            return false;
        };
        let Some(b) = self.branches.iter().find(|b| b.id == branch) else {
            return false;
        };
        let number = |field: &'static str| {
            js::get(row, field)
                .ok()
                .and_then(|v| v.as_f64())
                .and_then(safe_count)
        };
        match kind {
            "item" => number("seq").is_some_and(|seq| (b.first..b.next).contains(&seq)),
            "archived" => number("position").is_some_and(|p| p < b.archived),
            // The usage of a turn saved after the record was read (written with it) goes with
            // that turn's items: restored without them, it would be added to the next turn to
            // take its number. The usage of turns a history transaction removed before is kept,
            // as the session keeps it.
            "usage" => {
                let later = js::get(row, "updatedAt")
                    .ok()
                    .and_then(|v| v.as_f64())
                    .is_some_and(|at| at > self.updated_at);
                // (A row whose turn cannot be read stays, for the import to report.)
                !(later && number("turn").is_some_and(|turn| turn > b.last_turn))
            }
            // (The log is the session's: a row under a branch's key, an earlier version's import
            // of an edited file, is left out, as an import now refuses it.)
            "operation" => {
                branch == MAIN
                    && number("opSeq").is_some_and(|op| {
                        (self.next_op_seq.saturating_sub(OPERATION_LOG_LIMIT)..self.next_op_seq)
                            .contains(&op)
                    })
            }
            _ => true,
        }
    }
}

/// The record's metadata, of the kinds `update()` takes (a title of at most [`MAX_TITLE`]
/// characters, a summary, topics, a state: each also `null`; read from JSON, a state is one JSON
/// can write), its `currentBranch` one of its branches and its `bytes` a count: an edited or
/// damaged file's would reach every list of the user's sessions (a title of 42, a size below
/// zero), or name a branch the chat cannot be opened on.
fn check_metadata(record: &JsValue, bounds: &Bounds) -> std::result::Result<(), String> {
    let get = |key: &'static str| js::get(record, key).unwrap_or(JsValue::UNDEFINED);
    for key in ["title", "summary", "topics", "state"] {
        let v = get(key);
        let array = js::is_array(&v).unwrap_or(false);
        let fits = v.is_undefined()
            || v.is_null()
            || match key {
                "title" => v
                    .as_string()
                    .is_some_and(|t| t.chars().count() <= MAX_TITLE),
                "summary" => v.is_string(),
                "topics" => {
                    array && js::elements(&v).is_ok_and(|t| t.iter().all(JsValue::is_string))
                }
                // (An array too, as `update()` takes it.)
                _ => v.is_object(),
            };
        if !fits {
            return Err(format!(
                "its {key} ({}) is not one update() takes",
                describe(&v)
            ));
        }
    }
    let branch = get("currentBranch");
    let known = |id: &str| bounds.branches.iter().any(|b| b.id == id);
    if !branch.is_undefined() && !branch.as_string().is_some_and(|id| known(&id)) {
        let shown = branch
            .as_string()
            .map_or_else(|| describe(&branch), |id| format!("\"{id}\""));
        return Err(format!(
            "its currentBranch ({shown}) is not one of its branches"
        ));
    }
    let bytes = get("bytes");
    if !bytes.is_undefined() && bytes.as_f64().and_then(safe_count).is_none() {
        return Err(format!("its bytes ({}) is not a count", describe(&bytes)));
    }
    Ok(())
}

fn check(lines: &[JsValue], numbers: &[u32]) -> std::result::Result<Checked, RestoreError> {
    let line_of = |i: usize| numbers.get(i).copied().unwrap_or(0);
    let first = lines.first().ok_or_else(|| invalid(0, "no lines".into()))?;
    let record_value = only_field(first, "session").map_err(|what| invalid(line_of(0), what))?;
    let bounds = Bounds::of(&record_value).map_err(|e| invalid(line_of(0), e.message))?;
    // A state an earlier version took whole as a `Date` (or a boxed string, number or boolean),
    // which the export wrote as JSON does, as no object: the chat is restored without it, not
    // refused whole for it.
    let state = js::get(&record_value, "state").unwrap_or(JsValue::NULL);
    if state.is_string() || state.as_f64().is_some() || state.as_bool().is_some() {
        let _ = Reflect::set(&record_value, &"state".into(), &JsValue::NULL);
    }
    check_metadata(&record_value, &bounds).map_err(|what| invalid(line_of(0), what))?;
    let session_id = bounds.session_id.clone();
    let owner = bounds.owner.clone();
    // An id or owner no call could name (blank, or not exactly the string stored: a lone
    // surrogate) would be a session nothing opens or deletes, and that fails every export.
    let exact_id = js::get(&record_value, "id")
        .ok()
        .and_then(|id| js::exact_string(&id))
        .and_then(|id| id.ok());
    if exact_id.as_deref() != Some(session_id.as_str()) {
        return Err(invalid(
            line_of(0),
            "the session's id is not a string of whole characters".into(),
        ));
    }
    validate_session_id(&session_id)
        .and_then(|()| owner.as_deref().map_or(Ok(()), validate_user_id))
        .map_err(|e| invalid(line_of(0), e.message))?;
    let next_op_seq = bounds.next_op_seq;
    // What each branch must hold: its own rows `first..next` and `archived` archived items.
    let branches: Vec<(&str, u64, u64, u64)> = bounds
        .branches
        .iter()
        .map(|b| (b.id.as_str(), b.first, b.next, b.archived))
        .collect();
    // The items and archived items seen, per branch (each position once), and the operations
    // (the log keeps the newest 1,000 numbers below `next_op_seq`). Usage lines name a turn:
    // a repeated one is stored once, as a repeated write would be.
    // A record counting more rows than the session has lines cannot be whole (and its counts
    // must not size anything before that is known).
    let counted = branches
        .iter()
        .map(|&(_, first, next, archived)| (next - first).saturating_add(archived))
        .fold(0u64, u64::saturating_add);
    if counted >= lines.len() as u64 {
        return Err(invalid(
            line_of(0),
            format!(
                "session \"{session_id}\" counts {counted} items and archived items, more than the \
                 {} lines that follow it",
                lines.len() - 1
            ),
        ));
    }
    let mut held: Vec<[Vec<bool>; 2]> = branches
        .iter()
        .map(|&(_, first, next, archived)| {
            [
                vec![false; (next - first) as usize],
                vec![false; archived as usize],
            ]
        })
        .collect();
    let oldest_op = next_op_seq.saturating_sub(OPERATION_LOG_LIMIT);
    let mut ops = vec![false; (next_op_seq - oldest_op) as usize];
    let mut op_ids: Vec<(usize, JsValue)> = Vec::new();
    let mut rows = Vec::new();
    let mut ended = false;
    for (i, line) in lines.iter().enumerate().skip(1) {
        let n = line_of(i);
        let bad = |what: String| invalid(n, what);
        if ended {
            return Err(bad("a line after the session's end line".into()));
        }
        let keys = js::keys(line).map_err(|_| bad("not an object".into()))?;
        let [kind] = keys.as_slice() else {
            return Err(bad(format!(
                "a line holds one field naming its kind, got {}",
                describe(line)
            )));
        };
        if kind == "end" {
            let end = only_field(line, "end").map_err(&bad)?;
            let count = js::get(&end, "lines").ok().and_then(|v| v.as_f64());
            if count != Some(lines.len() as f64) {
                return Err(bad(format!(
                    "the end line counts {} lines for session \"{session_id}\", but it has {}",
                    count.map_or("no".into(), js::number_text),
                    lines.len()
                )));
            }
            ended = true;
            continue;
        }
        let Some(k) = ROW_KINDS.iter().position(|(name, _, _)| name == kind) else {
            return Err(bad(format!("\"{kind}\" is not a kind of line of a backup")));
        };
        let (kind, store, _) = &ROW_KINDS[k];
        let row = only_field(line, kind).map_err(&bad)?;
        if !js::is_plain_object(&row).unwrap_or(false) {
            return Err(bad(format!("the {kind} is not an object")));
        }
        let count = |field: &'static str| {
            js::get(&row, field)
                .ok()
                .and_then(|v| v.as_f64())
                .and_then(safe_count)
                .ok_or_else(|| {
                    bad(format!(
                        "the {kind}'s {field} is not a non-negative integer"
                    ))
                })
        };
        let branch = branch_of(&row, &session_id, kind == &"usage").map_err(&bad)?;
        let Some(b) = branches.iter().position(|(id, ..)| *id == branch) else {
            return Err(bad(format!(
                "the {kind} belongs to branch \"{branch}\", which session \"{session_id}\" does not have"
            )));
        };
        let (_, first, next, archived) = branches[b];
        let position = match *kind {
            "item" => {
                let seq = count("seq")?;
                count("turn")?;
                if !js::get(&row, "createdAt").is_ok_and(|v| v.as_f64().is_some_and(f64::is_finite))
                {
                    return Err(bad("the item's createdAt is not a time".into()));
                }
                if !is_item(&row) {
                    return Err(bad("the row holds no item object".into()));
                }
                if !(first..next).contains(&seq) {
                    return Err(bad(format!(
                        "item {seq} of branch \"{branch}\" is outside the items its record names ({first}..{next})"
                    )));
                }
                seq
            }
            "archived" => {
                let position = count("position")?;
                if !is_item(&row) {
                    return Err(bad("the archived row holds no item object".into()));
                }
                if position >= archived {
                    return Err(bad(format!(
                        "archived item {position} of branch \"{branch}\" is past the {archived} its record counts"
                    )));
                }
                position
            }
            // As an export leaves it out now (see `Bounds::names`): a backup of an earlier
            // version may hold it.
            "usage" => match count("turn")? {
                _ if !bounds.names("usage", &row) => continue,
                turn => turn,
            },
            _ => {
                // (One log for the session and its branches, kept under its id alone: a row
                // under a branch's would outlive the session, copied into its next backups.)
                if branch != MAIN {
                    return Err(bad(format!(
                        "the operation belongs to branch \"{branch}\": the operation log is the session's"
                    )));
                }
                let op = count("opSeq")?;
                for field in ["operationId", "digest"] {
                    if !js::get(&row, field).is_ok_and(|v| v.is_string()) {
                        return Err(bad(format!("the operation's {field} is not a string")));
                    }
                }
                if !(oldest_op..next_op_seq).contains(&op) {
                    return Err(bad(format!(
                        "operation {op} is not among the newest {OPERATION_LOG_LIMIT} below the {next_op_seq} the record counts"
                    )));
                }
                // The log keeps an operation id once per branch (a unique index): a second
                // would fail the session's write with a storage error instead.
                let id = js::get(&row, "operationId").unwrap_or_default();
                if op_ids
                    .iter()
                    .any(|(other, seen)| *other == b && *seen == id)
                {
                    return Err(bad(format!(
                        "the operation id of operation {op} comes twice in branch \"{branch}\""
                    )));
                }
                op_ids.push((b, id));
                op
            }
        };
        let slot = match k {
            0 => held[b][0].get_mut((position - first) as usize),
            1 => held[b][1].get_mut(position as usize),
            3 => ops.get_mut(position.saturating_sub(oldest_op) as usize),
            _ => None,
        };
        if let Some(slot) = slot {
            if *slot {
                return Err(bad(format!(
                    "the {kind} {position} of branch \"{branch}\" comes twice"
                )));
            }
            *slot = true;
        }
        rows.push((*store, row));
    }
    if !ended {
        return Err(invalid(
            line_of(lines.len() - 1),
            format!("session \"{session_id}\" has no end line: the backup was cut short"),
        ));
    }
    // Every item and archived item the record counts is there (each came once, in range).
    for ((id, first, next, archived), [items, moved]) in branches.iter().zip(&held) {
        let count = |seen: &[bool]| seen.iter().filter(|s| **s).count();
        let (items, moved) = (count(items), count(moved));
        if items as u64 != next - first || moved as u64 != *archived {
            return Err(invalid(
                line_of(0),
                format!(
                    "branch \"{id}\" of session \"{session_id}\" counts {} items and {archived} archived, \
                     but the backup holds {items} and {moved}",
                    next - first
                ),
            ));
        }
    }
    Ok(Checked {
        record: record_value,
        session_id,
        owner,
        rows,
    })
}

/// The value of a line's one field `name`.
fn only_field(line: &JsValue, name: &'static str) -> std::result::Result<JsValue, String> {
    match js::get(line, name) {
        Ok(v) if v.is_object() => Ok(v),
        _ => Err(format!(
            "expected a \"{name}\" object, got {}",
            describe(line)
        )),
    }
}

/// The branch a row belongs to, checked to be `session_id`'s: rows of `main` (and usage, which
/// names its branch) carry the session id, the others `[sessionId, branchId]`.
fn branch_of(row: &JsValue, session_id: &str, usage: bool) -> std::result::Result<String, String> {
    let owner = js::get(row, "sessionId").unwrap_or(JsValue::UNDEFINED);
    let foreign = || format!("the row belongs to another session ({})", describe(&owner));
    if let Some(sid) = owner.as_string() {
        if sid != session_id {
            return Err(foreign());
        }
        if usage {
            return js::get(row, "branch")
                .ok()
                .and_then(|b| b.as_string())
                .ok_or_else(|| "the usage names no branch".into());
        }
        return Ok(MAIN.to_string());
    }
    let pair = js::elements(&owner).map_err(|_| foreign())?;
    match pair.as_slice() {
        [sid, branch] if sid.as_string().as_deref() == Some(session_id) && !usage => {
            branch.as_string().filter(|b| b != MAIN).ok_or_else(foreign)
        }
        _ => Err(foreign()),
    }
}

/// Writes one session of a backup, after checking all its lines: everything or nothing, in one
/// transaction. `user` (when given) becomes the owner. A session already stored is skipped,
/// replaced or imported under a new id as `on_conflict` says; one that belongs to another user
/// is never touched: the import takes a new id.
pub async fn restore(
    conn: &Connection,
    lines: &[JsValue],
    numbers: &[u32],
    user: Option<Option<&str>>,
    on_conflict: OnConflict,
    written: &[String],
) -> std::result::Result<Restored, RestoreError> {
    let checked = check(lines, numbers)?;
    // An EncryptedSession's items are sealed with a key made from the session id, and bound to
    // it: renamed, the session could never be read again (its history, or only its archive,
    // as after a compaction to nothing).
    let sealed = checked.rows.iter().any(|(store, row)| {
        [MESSAGES_STORE, ARCHIVE_STORE].contains(store)
            && js::get(row, "item")
                .is_ok_and(|item| js::get(&item, "__enc").is_ok_and(|e| e.is_truthy()))
    });
    let owner = match user {
        Some(u) => u.map(str::to_string),
        None => checked.owner.clone(),
    };
    let tx = Tx::begin(
        conn,
        &SESSION_STORES,
        TransactionMode::ReadWrite,
        format!("importing session \"{}\"", checked.session_id),
    )
    .await?;
    let restored = tx
        .run(async |tx| {
            let sessions = tx.store(SESSIONS_STORE)?;
            let existing = |id: String| {
                let request = sessions.get(JsValue::from_str(&id));
                async move {
                    let found = request
                        .map_err(|e| tx.fail(e))?
                        .reply()
                        .await
                        .map_err(|e| tx.fail(e))?;
                    Ok::<_, SessionError>(found)
                }
            };
            let mut id = checked.session_id.clone();
            let mut status = "imported";
            // A session replaced by the backup counts one rewrite more than either had.
            let mut rewrites = None;
            // An id this import already wrote (a session of the backup renamed onto it) is the
            // backup's own: this session is renamed, never skipped in its favour or over it.
            let ours = |id: &str| written.iter().any(|w| w == id);
            let found = match ours(&id) {
                true => Some(None),
                false => existing(id.clone()).await?.map(Some),
            };
            if let Some(stored) = found {
                let theirs = stored
                    .as_ref()
                    .and_then(|s| js::get(s, "userId").ok())
                    .and_then(|u| u.as_string());
                let mine = stored.is_some() && theirs == owner;
                match (on_conflict, mine, stored) {
                    (OnConflict::Skip, true, _) => {
                        return Ok(Restored {
                            session_id: id,
                            status: "skipped",
                        })
                    }
                    (OnConflict::Replace, true, Some(stored)) => {
                        rewrites = Some(replace(tx, &id, &stored, &checked.record)?);
                        status = "replaced";
                    }
                    _ if sealed => {
                        return Err(SessionError::new(
                            SessionErrorCode::ImportInvalid,
                            [
                                "session \"",
                                &id,
                                "\" holds encrypted items, which open only under its own id, and that id is taken here",
                            ]
                            .concat(),
                        ))
                    }
                    _ => {
                        let mut n = 2;
                        status = "renamed";
                        id = loop {
                            let candidate = format!("{}-{n}", checked.session_id);
                            if !ours(&candidate) {
                                match existing(candidate.clone()).await? {
                                    None => break candidate,
                                    // This session, renamed by an earlier import of the backup
                                    // beside another owner's (same owner, made at the same time):
                                    // skipped or replaced as it would be under its own id, not
                                    // copied again.
                                    Some(copy)
                                        if on_conflict != OnConflict::Rename
                                            && same_session(&copy, &checked.record, &owner) =>
                                    {
                                        if on_conflict == OnConflict::Skip {
                                            return Ok(Restored {
                                                session_id: candidate,
                                                status: "skipped",
                                            });
                                        }
                                        rewrites =
                                            Some(replace(tx, &candidate, &copy, &checked.record)?);
                                        status = "replaced";
                                        break candidate;
                                    }
                                    Some(_) => {}
                                }
                            }
                            n += 1;
                        };
                    }
                }
            }
            let set = |target: &JsValue, key: &str, value: &JsValue| {
                let _ = Reflect::set(target, &JsValue::from_str(key), value);
            };
            let record = &checked.record;
            set(record, "id", &id.as_str().into());
            set(
                record,
                "userId",
                &owner.as_deref().map_or(JsValue::NULL, JsValue::from_str),
            );
            if let Some(rewrites) = rewrites {
                set(record, "rewrites", &(rewrites as f64).into());
            }
            sessions.put(record, None).map_err(|e| tx.fail(e))?;
            // The search index's terms are made again, for the owner the rows now have, with
            // the tool call's text where the row says it was indexed with it.
            let mut index = Indexer::new(owner.as_deref(), false);
            let (terms, index_tools) = (JsValue::from_str("terms"), JsValue::from_str(INDEX_TOOLS));
            for (store, row) in &checked.rows {
                if id != checked.session_id {
                    rename(row, &id);
                }
                if *store == MESSAGES_STORE {
                    let item = js::get(row, "item").unwrap_or(JsValue::UNDEFINED);
                    index.tools = js::get(row, INDEX_TOOLS).is_ok_and(|v| v.as_bool() == Some(true));
                    // (`check` found it a plain object.)
                    let _ = Reflect::delete_property(row.unchecked_ref::<Object>(), &index_tools);
                    let _ = Reflect::set(row, &terms, &index.terms(&item));
                }
                tx.store(store)?.put(row, None).map_err(|e| tx.fail(e))?;
            }
            Ok(Restored {
                session_id: id,
                status,
            })
        })
        .await?;
    Ok(restored)
}

/// Gives a row of a session imported under a new id that id (in `[sessionId, branchId]` too).
fn rename(row: &JsValue, id: &str) {
    let key = JsValue::from_str("sessionId");
    let Ok(owner) = Reflect::get(row, &key) else {
        return;
    };
    let renamed: JsValue = match owner.is_string() {
        true => id.into(),
        false => Array::of2(
            &id.into(),
            &js::get(&owner, "1").unwrap_or(JsValue::UNDEFINED),
        )
        .into(),
    };
    let _ = Reflect::set(row, &key, &renamed);
}

/// Whether a backup's row holds an item: a plain object (an array, as JSON may give, is none).
fn is_item(row: &JsValue) -> bool {
    js::get(row, "item").is_ok_and(|v| js::is_plain_object(&v).unwrap_or(false))
}
