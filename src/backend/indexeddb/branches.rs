//! Branches in IndexedDB (see [`crate::core::branch`] for the model). The branches other than
//! `main` and the branch last switched to live in the session record (`branches`,
//! `currentBranch`); a branch's own rows are message rows keyed `[[sessionId, branchId], seq]`,
//! so the messages store and its `by_turn` index take them as they are, and `main`'s rows keep
//! the session's own key. Model usage is kept per turn and branch in the usage store.
//!
//! Every operation here is one transaction, like those of [`super::ops`]; the operations on
//! `main` of a session without branches take the shorter paths there.

use std::cell::Cell;

use idb::{KeyRange, Query, TransactionMode};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::backend::args::ReplaceOptions;
use crate::backend::branch_js::{
    folded, invalid_turn, item_facts, session_usage_js, tool_usage_js, turn_usage_js, turns_js,
    usage_fields, usage_of, From,
};
use crate::backend::canonical::{self, canonical, forms};
use crate::backend::js::{self, object};
use crate::backend::metadata::{self, give_default_title};
use crate::backend::transaction::{no_turn_for_usage, FunctionCallReplacement, TakenTransaction};
use crate::core::branch::{self, Branch, Release, RowFacts, Segment, Tree, Usage, MAIN};
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::history::Limit;
use crate::core::schema::{
    ARCHIVE_STORE, BY_OPERATION_INDEX, BY_TURN_INDEX, MESSAGES_STORE, OPERATIONS_STORE,
    SESSIONS_STORE, SESSION_STORES, USAGE_STORE,
};
use crate::core::session::{oldest_turn, resized, safe_count};
use crate::core::transaction::{check_whole_history, Outcome};

use super::open::Connection;
use super::ops::{finish, head_rows, read_record, summary_head, write_record, SeenView, Target};
use super::record::{
    all_of_session, damaged_items, has_terms, indexed_with_tools, item_of, items_of, seq_of,
    turn_of, StoredRecord,
};
use super::request::Sent as _;
use super::tx::{listening, storage_error, Begin, Tx};

/// The key the rows of `owner` (a branch of session `session_id`) are stored under.
pub fn storage(session_id: &str, owner: &str) -> JsValue {
    if owner == MAIN {
        JsValue::from_str(session_id)
    } else {
        Array::of2(&session_id.into(), &owner.into()).into()
    }
}

fn bound(lower: &JsValue, upper: &JsValue, what: &str) -> Result<Query> {
    KeyRange::bound(lower, upper, Some(false), Some(false))
        .map(Query::from)
        .map_err(|e| storage_error(&e, what))
}

/// Rows `lo..hi` (end excluded) of a storage, in a store keyed `[storage, number]`.
fn rows_range(storage: &JsValue, lo: u64, hi: u64) -> Result<Query> {
    bound(
        &Array::of2(storage, &JsValue::from_f64(lo as f64)),
        &Array::of2(storage, &JsValue::from_f64(hi as f64 - 1.0)),
        "selecting a branch's items",
    )
}

/// Every row of every branch other than `main` of a session, in a store keyed by
/// `[[sessionId, branchId], …]`: arrays sort after strings, so `[sessionId]` to
/// `[sessionId, []]` holds exactly those.
pub fn all_branch_rows(session_id: &str) -> Result<Query> {
    let sid = JsValue::from_str(session_id);
    bound(
        &Array::of1(&Array::of1(&sid)).into(),
        &Array::of1(&Array::of2(&sid, &Array::new())).into(),
        "selecting a session's branches",
    )
}

/// Every row of one branch's storage, in a store keyed `[storage, number]`.
fn all_of_storage(session_id: &str, id: &str) -> Result<Query> {
    let own = storage(session_id, id);
    bound(
        &Array::of2(&own, &JsValue::from_f64(f64::NEG_INFINITY)).into(),
        &Array::of2(&own, &JsValue::from_f64(f64::INFINITY)).into(),
        "selecting a branch's rows",
    )
}

/// Every usage record of a session (keyed `[sessionId, branch, turn]`).
fn all_usage(session_id: &str) -> Result<Query> {
    let sid = JsValue::from_str(session_id);
    bound(
        &Array::of1(&sid).into(),
        &Array::of2(&sid, &Array::new()).into(),
        "selecting a session's usage",
    )
}

/// The usage records of one branch of a session.
fn branch_usage(session_id: &str, id: &str) -> Result<Query> {
    let (sid, b) = (JsValue::from_str(session_id), JsValue::from_str(id));
    bound(
        &Array::of3(&sid, &b, &JsValue::from_f64(f64::NEG_INFINITY)).into(),
        &Array::of3(&sid, &b, &JsValue::from_f64(f64::INFINITY)).into(),
        "selecting a branch's usage",
    )
}

/// The key of the usage of turn `turn` of branch `id` in the usage store.
fn usage_key(session_id: &str, id: &str, turn: u64) -> JsValue {
    Array::of3(
        &session_id.into(),
        &id.into(),
        &JsValue::from_f64(turn as f64),
    )
    .into()
}

/// Whether a stored record has branches other than `main`: the operations on `main` take their
/// shorter paths when it has none.
pub fn has_branches(stored: &JsValue) -> bool {
    js::get(stored, "branches").is_ok_and(|b| Array::is_array(&b) && Array::from(&b).length() > 0)
}

/// The branch the record says was used last (`main` when it says none).
pub fn remembered(stored: &JsValue) -> JsValue {
    match js::get(stored, "currentBranch") {
        Ok(v) if v.is_string() => v,
        _ => JsValue::from_str(MAIN),
    }
}

/// Reads the branches stored in a record, refusing damaged ones; each with the entry it was read
/// from.
fn branches_from_js(session_id: &str, stored: &JsValue) -> Result<Vec<(Branch, JsValue)>> {
    let Ok(list) = js::get(stored, "branches") else {
        return Ok(Vec::new());
    };
    if list.is_undefined() {
        return Ok(Vec::new());
    }
    let damaged = |what: &str| damaged_items(session_id, format!("its branches are {what}"));
    let entries = js::elements(&list).map_err(|_| damaged("not a list"))?;
    entries
        .iter()
        .map(|e| {
            let text = |k: &'static str| js::get(e, k).ok().and_then(|v| v.as_string());
            let count = |k: &'static str| {
                js::get(e, k)
                    .ok()
                    .and_then(|v| v.as_f64())
                    .and_then(safe_count)
                    .ok_or_else(|| damaged(&format!("missing {k}")))
            };
            let branch = Branch {
                id: text("id").ok_or_else(|| damaged("missing an id"))?,
                parent: text("parent"),
                from_turn: count("fromTurn")?,
                created_at: js::get(e, "createdAt")
                    .ok()
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0),
                base: text("base"),
                first: count("first")?,
                next: count("next")?,
                last_turn: count("lastTurn")?,
                fork_turn: count("forkTurn")?,
                archived: match js::get(e, "archivedCount") {
                    Ok(v) if v.is_undefined() => 0,
                    _ => count("archivedCount")?,
                },
                summary_head: super::record::summary_head_of(e),
            };
            Ok((branch, e.clone()))
        })
        .collect()
}

fn branches_to_js(tree: &Tree, read: &[(Branch, JsValue)]) -> JsValue {
    let text = |t: &Option<String>| t.as_deref().map_or(JsValue::NULL, JsValue::from_str);
    tree.others()
        .iter()
        .enumerate()
        .map(|(i, b)| {
            // A branch the write left as it was read keeps the entry it was read from (fields a
            // newer version added with it): a turn on one branch makes one new entry, not one
            // per branch (each a dozen calls into JS). Looked for in the same place first, then
            // anywhere (a branch deleted before it moves it up).
            let same = |r: &&(Branch, JsValue)| r.0 == *b;
            if let Some((_, entry)) = read.get(i).filter(same).or_else(|| read.iter().find(same)) {
                return entry.clone();
            }
            JsValue::from(object(&[
                ("id", b.id.as_str().into()),
                ("parent", text(&b.parent)),
                ("fromTurn", (b.from_turn as f64).into()),
                ("createdAt", b.created_at.into()),
                ("base", text(&b.base)),
                ("first", (b.first as f64).into()),
                ("next", (b.next as f64).into()),
                ("lastTurn", (b.last_turn as f64).into()),
                ("forkTurn", (b.fork_turn as f64).into()),
                ("archivedCount", (b.archived as f64).into()),
                ("summaryHead", b.summary_head.into()),
            ]))
        })
        .collect::<Array>()
        .into()
}

/// A session record and its branches, read in a transaction.
pub(super) struct Loaded {
    pub record: StoredRecord,
    pub tree: Tree,
    /// The branches as read (see [`branches_to_js`]).
    read: Vec<(Branch, JsValue)>,
    /// The rows the session stored when it was read.
    rows_before: u64,
    /// The new items written since (rows, bytes): the session's size is kept from these.
    added: (u64, u64),
    /// The rows and bytes the write measured otherwise, where it measured all it moved (the
    /// rows it deleted, read before, and the copies it made for other branches): then the size
    /// is kept exactly, else at the session's average row size.
    measured: Option<(i64, i64)>,
}

impl Loaded {
    pub fn from(record: StoredRecord) -> Result<Loaded> {
        let read = branches_from_js(&record.id, &record.stored)?;
        let tree = Tree::new(
            &record.record,
            read.iter().map(|(b, _)| b.clone()).collect(),
        )?;
        let rows_before = tree.stored_rows();
        Ok(Loaded {
            record,
            tree,
            read,
            rows_before,
            added: (0, 0),
            measured: None,
        })
    }

    /// Counts items just written as new rows.
    fn wrote<'a>(&mut self, items: impl IntoIterator<Item = &'a JsValue>) {
        for item in items {
            self.added.0 += 1;
            self.added.1 += js::json_size(item);
        }
    }

    /// Counts what a release moved: the copies it made (`copied`: rows, bytes) and the rows it
    /// deleted, which are the last of `read` (the newest rows of the view, read before).
    fn released(&mut self, release: &Release, copied: (u64, u64), read: &[JsValue]) {
        let deleted = release.delete.map_or(0, |(lo, hi)| hi.saturating_sub(lo)) as usize;
        let Some(rows) = read.len().checked_sub(deleted).map(|from| &read[from..]) else {
            return;
        };
        let bytes: u64 = rows
            .iter()
            .map(|row| super::record::item_of(row).map_or(0, |item| js::json_size(&item)))
            .sum();
        self.measured = Some((
            copied.0 as i64 - deleted as i64,
            copied.1 as i64 - bytes as i64,
        ));
    }

    /// Writes the record back, with `main`'s counters and the branches as they are now; `now`
    /// when the history changed (its `updatedAt`).
    pub fn save(mut self, tx: &Tx, now: Option<f64>) -> Result<()> {
        self.tree.store_main(&mut self.record.record);
        let rows = self.tree.stored_rows();
        let kept = rows.saturating_sub(self.added.0);
        self.record.bytes = match (self.measured, self.record.bytes) {
            // Every row counted: the size is kept exactly.
            (Some((moved, bytes)), Some(before))
                if rows as i64 == self.rows_before as i64 + self.added.0 as i64 + moved =>
            {
                Some((before as i64 + self.added.1 as i64 + bytes).max(0) as u64)
            }
            _ => resized(self.record.bytes, self.rows_before, kept, self.added.1),
        };
        if let Some(now) = now {
            self.record.updated_at = now;
        }
        let stored = &self.record.stored;
        if self.tree.is_single() {
            let _ = Reflect::delete_property(stored.unchecked_ref::<Object>(), &"branches".into());
        } else {
            let _ = Reflect::set(
                stored,
                &"branches".into(),
                &branches_to_js(&self.tree, &self.read),
            );
        }
        write_record(tx, &self.record)
    }
}

/// The session's record and branches, checked for the owner; `None` for a session with no
/// record yet.
async fn load(tx: &Tx, t: &Target<'_>) -> Result<Option<Loaded>> {
    let Some(record) = read_record(tx, t.session_id).await? else {
        return Ok(None);
    };
    record.check_owner(t.user_id)?;
    Loaded::from(record).map(Some)
}

/// As [`load`], for a branch that must exist (`main` always does). For the object's own branch
/// (see [`Target::branch_at`]), it must be the one the object was on.
async fn load_branch(tx: &Tx, t: &Target<'_>, id: &str) -> Result<Option<Loaded>> {
    let loaded = load(tx, t).await?;
    match &loaded {
        Some(l) => is_own(t, &l.tree, id)?,
        None if id != MAIN => return Err(branch::not_found(t.session_id, id)),
        None => {}
    }
    Ok(loaded)
}

/// That the session has branch `id` (see [`load_branch`]), for a write that changes only the
/// record's metadata.
pub(super) async fn check_own(tx: &Tx, t: &Target<'_>, id: &str) -> Result<()> {
    load_branch(tx, t, id).await.map(drop)
}

/// That `tree` has branch `id` and, for the object's own branch (see [`Target::branch_at`]), that
/// it is the one the object was on.
#[inline(always)]
fn is_own(t: &Target<'_>, tree: &Tree, id: &str) -> Result<()> {
    let b = tree.get(t.session_id, id)?;
    if let Some(known) = t.branch_at.filter(|_| id != MAIN) {
        match known.get() {
            None => known.set(Some(b.created_at)),
            Some(at) if at != b.created_at => return Err(replaced(t.session_id, id)),
            Some(_) => {}
        }
    }
    Ok(())
}

/// The branch an object was on was deleted, and another one created under its name.
fn replaced(session_id: &str, id: &str) -> SessionError {
    SessionError::new(
        SessionErrorCode::BranchNotFound,
        format!(
            "the branch \"{id}\" this object was on was deleted from session \"{session_id}\", and \
             the branch of that name there now is another one; switchBranch(\"{id}\") moves onto it"
        ),
    )
}

/// Reads the rows of `segments` (oldest first), one request per segment, all sent before any is
/// awaited; each must hold every row it names.
async fn read_segments(tx: &Tx, session_id: &str, segments: &[Segment]) -> Result<Vec<JsValue>> {
    send_segments(tx, session_id, segments)?.await
}

/// As [`read_segments`], with every request sent now: the rows come with whatever the caller
/// asked before awaiting them (see [`get_items`]).
fn send_segments<'a>(
    tx: &'a Tx,
    session_id: &'a str,
    segments: &'a [Segment],
) -> Result<impl std::future::Future<Output = Result<Vec<JsValue>>> + 'a> {
    let messages = tx.store(MESSAGES_STORE)?;
    let mut pending = Vec::new();
    for s in segments {
        let range = rows_range(&storage(session_id, &s.owner), s.lo, s.hi)?;
        pending.push(listening(
            messages
                .get_all(Some(range), None)
                .map_err(|e| tx.fail(e))?,
        ));
    }
    Ok(rows_of_segments(tx, session_id, segments, pending))
}

/// The rows of `segments`, from their requests (`pending`, in the same order).
async fn rows_of_segments<F: std::future::IntoFuture<Output = Rows>>(
    tx: &Tx,
    session_id: &str,
    segments: &[Segment],
    pending: Vec<F>,
) -> Result<Vec<JsValue>> {
    let mut rows = Vec::new();
    for (s, request) in segments.iter().zip(pending) {
        let found = request.await.map_err(|e| tx.fail(e))?;
        if found.len() as u64 != s.hi - s.lo {
            return Err(damaged_items(
                session_id,
                format!(
                    "the items {}..{} of branch \"{}\" are not all stored ({} found)",
                    s.lo,
                    s.hi,
                    s.owner,
                    found.len()
                ),
            ));
        }
        rows.extend(found);
    }
    Ok(rows)
}

/// Copies rows down to the branches that keep them, then deletes the released rows of `owner`.
/// A copied row gets its search terms made again (with its tool text where it was indexed with
/// it): one with none yet, or with an older tokeniser's, would keep them where the index's
/// build has passed the copy's key already (it goes on in key order).
/// Makes the copies and the deletion of `release`; gives the rows and bytes it copied.
async fn apply_release(
    tx: &Tx,
    t: &Target<'_>,
    owner: &str,
    release: &Release,
) -> Result<(u64, u64)> {
    let session_id = t.session_id;
    let mut copied = (0, 0);
    let messages = tx.store(MESSAGES_STORE)?;
    let terms = js::name("terms");
    let mut indexer = t.indexer(t.user_id);
    for copy in &release.copies {
        let segment = Segment {
            owner: copy.from.clone(),
            lo: copy.lo,
            hi: copy.hi,
            turn_hi: None,
        };
        let rows = read_segments(tx, session_id, std::slice::from_ref(&segment)).await?;
        let to = storage(session_id, &copy.to);
        for row in rows {
            // Rows from getAll are this transaction's own copies: changing the key field of one
            // and putting it stores a copy under the other branch, the item verbatim.
            let _ = Reflect::set(&row, &"sessionId".into(), &to);
            let item = item_of(&row).unwrap_or(JsValue::UNDEFINED);
            // A row written before the index is indexed as this object indexes.
            indexer.tools = match Reflect::get(&row, &terms) {
                Ok(v) if !v.is_undefined() => has_terms(&row),
                _ => t.index_tools,
            };
            let _ = Reflect::set(&row, &terms, &indexer.terms(&item));
            messages.put(&row, None).map_err(|e| tx.fail(e))?;
            copied = (copied.0 + 1, copied.1 + js::json_size(&item));
        }
    }
    if let Some((lo, hi)) = release.delete {
        if lo < hi {
            messages
                .delete(rows_range(&storage(session_id, owner), lo, hi)?)
                .map_err(|e| tx.fail(e))?;
        }
    }
    Ok(copied)
}

fn read_tx<'a>(conn: &'a Connection, t: &Target<'_>, what: &str) -> Begin<'a> {
    t.begin(conn, what, TransactionMode::ReadOnly)
}

fn write_tx<'a>(conn: &'a Connection, t: &Target<'_>, what: &str) -> Begin<'a> {
    t.begin_over(conn, what, TransactionMode::ReadWrite, &SESSION_STORES)
}

/// `getItems(limit)` on branch `id`.
pub async fn get_items(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    limit: Limit,
) -> Result<Vec<JsValue>> {
    let tx = read_tx(conn, t, "getItems").await?;
    tx.run(async |tx| {
        // As on `main` (`ops::get_items`): the segments this object read for the same branch and
        // limit last time are asked with the record, in one round trip, and their rows used
        // where the record still names the same segments (the same snapshot answers both).
        let guess = t
            .seen_view
            .take()
            .filter(|v| v.branch == id && v.limit == limit && v.oldest.is_none())
            .map(|v| v.segments);
        let sent = match &guess {
            Some(segments) => Some(send_segments(tx, t.session_id, segments)?),
            None => None,
        };
        let loaded = load_branch(tx, t, id).await;
        let sent = finish(sent).await;
        let Some(l) = loaded? else {
            return Ok(Vec::new());
        };
        let segments = l.tree.newest(t.session_id, id, limit)?;
        let rows = match sent {
            Some(rows) if guess.as_ref() == Some(&segments) => rows?,
            _ => read_segments(tx, t.session_id, &segments).await?,
        };
        let items = items_of(&rows, t.session_id)?;
        t.seen_view.set(Some(SeenView {
            branch: id.to_string(),
            limit,
            oldest: None,
            segments,
        }));
        Ok(items)
    })
    .await
}

/// The rows of `id`'s view from `lo` on, oldest first.
async fn view_from(
    tx: &Tx,
    l: &Loaded,
    session_id: &str,
    id: &str,
    lo: u64,
) -> Result<Vec<JsValue>> {
    let segments = l.tree.within(l.tree.segments(session_id, id)?, lo);
    read_segments(tx, session_id, &segments).await
}

/// `getRecentTurns(n)` on branch `id`: per segment, one read of the `by_turn` index from the
/// oldest wanted turn, bounded by the turns the segment holds.
pub async fn recent_turns(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    turns: Limit,
) -> Result<Vec<JsValue>> {
    let tx = read_tx(conn, t, "getRecentTurns").await?;
    tx.run(async |tx| {
        let index = tx.index(MESSAGES_STORE, BY_TURN_INDEX)?;
        // As `get_items`: the turns this object read last time, from the same segments, are
        // asked with the record, and used where the record still names those segments and that
        // oldest turn (the same snapshot answers both).
        let guess = t
            .seen_view
            .take()
            .filter(|v| v.branch == id && v.limit == turns && v.oldest.is_some());
        let sent = match &guess {
            Some(v) => Some(turn_rows(
                tx,
                send_turns(tx, &index, t.session_id, &v.segments, v.oldest.unwrap_or(0))?,
            )),
            None => None,
        };
        let loaded = load_branch(tx, t, id).await;
        let sent = finish(sent).await;
        let Some(l) = loaded? else {
            return Ok(Vec::new());
        };
        let Some((oldest, segments)) = turn_plan(&l.tree, t.session_id, id, turns)? else {
            return Ok(Vec::new());
        };
        // A window that leaves out the head of the view (turn 0) still shows a compaction
        // summary there, as on `main`: asked at once, only when the view's oldest rows belong
        // to a branch that was compacted.
        let head = match segments.last() {
            Some(s) if oldest > 0 && l.tree.get(t.session_id, &s.owner)?.compacted_head() => {
                Some((s, head_rows(tx, &index, &storage(t.session_id, &s.owner))?))
            }
            _ => None,
        };
        let rows = match (guess, sent) {
            (Some(v), Some(rows)) if v.oldest == Some(oldest) && v.segments == segments => rows?,
            _ => turn_rows(tx, send_turns(tx, &index, t.session_id, &segments, oldest)?).await?,
        };
        let summaries = match head {
            Some((s, request)) => {
                let found = request.await.map_err(|e| tx.fail(e))?;
                found
                    .into_iter()
                    .filter(|r| seq_of(r).is_some_and(|q| q >= s.lo && q < s.hi))
                    .collect()
            }
            None => Vec::new(),
        };
        // The rows must be the newest of the view, without a gap.
        let sound = match (rows.first().and_then(seq_of), rows.last().and_then(seq_of)) {
            (Some(first), Some(last)) => {
                last + 1 == l.tree.get(t.session_id, id)?.next
                    && rows.len() as u64 == last - first + 1
            }
            _ => false,
        };
        if !sound {
            return Err(damaged_items(
                t.session_id,
                format!("the newest turns of branch \"{id}\" are not all stored"),
            ));
        }
        let first = rows.first().and_then(seq_of);
        let rows: Vec<JsValue> = summary_head(&summaries, first)
            .chain(&rows)
            .cloned()
            .collect();
        let items = items_of(&rows, t.session_id)?;
        t.seen_view.set(Some(SeenView {
            branch: id.to_string(),
            limit: turns,
            oldest: Some(oldest),
            segments,
        }));
        Ok(items)
    })
    .await
}

/// Where a read of the newest `turns` turns of branch `id` starts (its oldest turn), and the
/// segments of the branch's view; `None` when it shows none.
fn turn_plan(
    tree: &Tree,
    session_id: &str,
    id: &str,
    turns: Limit,
) -> Result<Option<(u64, Vec<Segment>)>> {
    let b = tree.get(session_id, id)?;
    let count = b.next - tree.start(session_id, id)?;
    match oldest_turn(count, b.last_turn, turns) {
        Some(oldest) => Ok(Some((oldest, tree.segments(session_id, id)?))),
        None => Ok(None),
    }
}

/// After this object's write to branch `id`, what its next read of the branch's newest items or
/// turns asks for with the record (see [`Target::seen_view`]), as the write left the branch: a
/// chat reads and writes in turn, and its reads would otherwise never find their plan. (Not in
/// the second module, which acts as an object for one call: what it remembers goes with it.)
fn replan(t: &Target<'_>, tree: &Tree, id: &str) {
    if cfg!(feature = "extras") {
        return;
    }
    let Some(mut v) = t.seen_view.take() else {
        return;
    };
    if v.branch == id {
        let plan = match v.oldest {
            None => tree
                .newest(t.session_id, id, v.limit)
                .ok()
                .map(|s| (None, s)),
            Some(_) => turn_plan(tree, t.session_id, id, v.limit)
                .ok()
                .flatten()
                .map(|(oldest, s)| (Some(oldest), s)),
        };
        let Some((oldest, segments)) = plan else {
            return;
        };
        (v.oldest, v.segments) = (oldest, segments);
    }
    t.seen_view.set(Some(v));
}

/// What a read of rows gives (`getAll`).
type Rows = std::result::Result<Vec<JsValue>, idb::Error>;

/// Asks the `by_turn` index for the rows of turns `oldest` on of each of `segments` (newest
/// first) that holds any, every request sent now: each with its segment.
fn send_turns<'a>(
    tx: &Tx,
    index: &idb::Index,
    session_id: &str,
    segments: &'a [Segment],
    oldest: u64,
) -> Result<Vec<(&'a Segment, impl std::future::Future<Output = Rows>)>> {
    let mut pending = Vec::new();
    for s in segments {
        let key = storage(session_id, &s.owner);
        let hi = s.turn_hi.map_or(f64::INFINITY, |h| h as f64);
        if hi < oldest as f64 {
            break;
        }
        let range = bound(
            &Array::of2(&key, &JsValue::from_f64(oldest as f64)).into(),
            &Array::of2(&key, &JsValue::from_f64(hi)).into(),
            "selecting turns",
        )?;
        pending.push((
            s,
            listening(index.get_all(Some(range), None).map_err(|e| tx.fail(e))?),
        ));
    }
    Ok(pending)
}

/// The rows [`send_turns`] asked for, oldest first: of each segment, those within it.
async fn turn_rows<F: std::future::Future<Output = Rows>>(
    tx: &Tx,
    pending: Vec<(&Segment, F)>,
) -> Result<Vec<JsValue>> {
    let mut rows = Vec::new();
    for (s, request) in pending.into_iter().rev() {
        let found = request.await.map_err(|e| tx.fail(e))?;
        rows.extend(
            found
                .into_iter()
                .filter(|r| seq_of(r).is_some_and(|q| q >= s.lo && q < s.hi)),
        );
    }
    Ok(rows)
}

/// `addItems` on a branch other than `main`.
pub async fn add_items(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    items: Vec<(JsValue, bool)>,
    now: f64,
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let tx = write_tx(conn, t, "addItems").await?;
    tx.run(async |tx| {
        let Some(mut l) = load_branch(tx, t, id).await? else {
            return Ok(());
        };
        let kept_turn = l.tree.get(t.session_id, id)?.last_turn;
        write_rows(tx, t, &mut l, id, &items, (now, &[]))?;
        give_default_title(&l.record.stored, &items, kept_turn, l.record.archived_count);
        l.save(tx, Some(now))
    })
    .await
}

/// `popItem` on branch `id`: the branches that show the popped item keep their own copy of it.
pub async fn pop_item(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    now: f64,
) -> Result<Option<JsValue>> {
    let tx = write_tx(conn, t, "popItem").await?;
    tx.run(async |tx| match load_branch(tx, t, id).await? {
        Some(l) => pop_in(tx, t, l, id, now).await,
        None => Ok(None),
    })
    .await
}

/// [`pop_item`] in a transaction under way (also `main`'s, for a session with branches).
pub(super) async fn pop_in(
    tx: &Tx,
    t: &Target<'_>,
    mut l: Loaded,
    id: &str,
    now: f64,
) -> Result<Option<JsValue>> {
    let b = l.tree.get(t.session_id, id)?;
    let start = l.tree.start(t.session_id, id)?;
    if b.next == start {
        return Ok(None);
    }
    let seq = b.next - 1;
    let rows = view_from(tx, &l, t.session_id, id, seq.saturating_sub(1).max(start)).await?;
    let item = rows
        .last()
        .and_then(super::record::item_of)
        .ok_or_else(|| {
            damaged_items(t.session_id, format!("its newest item {seq} is not stored"))
        })?;
    let turn_before = match rows.len() {
        2 => rows.first().and_then(turn_of).ok_or_else(|| {
            damaged_items(
                t.session_id,
                format!("the row of item {} has no turn", seq - 1),
            )
        })?,
        _ => 0,
    };
    let turn = b.last_turn;
    // (Asked before the release changes who shows what.)
    let heir = l.tree.usage_heir(id, seq);
    let release = l.tree.release(t.session_id, id, seq, turn_before)?;
    replan(t, &l.tree, id);
    let copied = apply_release(tx, t, id, &release).await?;
    l.released(&release, copied, &rows);
    // Popped into the turns it shares with its parent, it shares fewer.
    let empty = seq == start;
    let x = l.tree.index_of(t.session_id, id)?;
    let b = &mut l.tree.branches[x];
    b.from_turn = branch::from_turn_after_pop(b.from_turn, b.last_turn, empty);
    // A turn popped away takes its usage with it (the turn that takes its number next has only
    // its own), unless a branch made from this one still shows it: it goes there.
    if turn_before < turn {
        hand_usage(tx, t.session_id, id, turn, heir.as_deref(), now).await?;
    }
    l.record.rewrote();
    l.save(tx, Some(now))?;
    Ok(Some(item))
}

/// The usage of turn `turn` of branch `id`, which a pop took away: given to `heir` (a branch
/// that still shows the turn), or forgotten.
async fn hand_usage(
    tx: &Tx,
    session_id: &str,
    id: &str,
    turn: u64,
    heir: Option<&str>,
    now: f64,
) -> Result<()> {
    let Some(heir) = heir else {
        return forget_usage(tx, session_id, id, turn);
    };
    let kept = tx
        .store(USAGE_STORE)?
        .get(usage_key(session_id, id, turn))
        .map_err(|e| tx.fail(e))?
        .reply()
        .await
        .map_err(|e| tx.fail(e))?;
    forget_usage(tx, session_id, id, turn)?;
    match kept {
        Some(row) => add_usage_in(tx, session_id, heir, turn, &usage_of(&row), now).await,
        None => Ok(()),
    }
}

/// Deletes the usage of turn `turn` of branch `id`, which a pop took away: the turn that takes
/// its number next has only its own.
pub(super) fn forget_usage(tx: &Tx, session_id: &str, id: &str, turn: u64) -> Result<()> {
    tx.store(USAGE_STORE)?
        .delete(Query::Key(usage_key(session_id, id, turn)))
        .map_err(|e| tx.fail(e))?;
    Ok(())
}

/// Deletes the usage of turns `kept + 1 ..= last` of branch `id`, which a history transaction
/// took away, as a pop takes its turn's: the turns that take their numbers next have only their
/// own.
pub(super) fn forget_usage_after(
    tx: &Tx,
    session_id: &str,
    id: &str,
    kept: u64,
    last: u64,
) -> Result<()> {
    if last <= kept {
        return Ok(());
    }
    let lower = usage_key(session_id, id, kept + 1);
    let turns = bound(&lower, &usage_key(session_id, id, last), "forgetting usage")?;
    tx.store(USAGE_STORE)?
        .delete(turns)
        .map_err(|e| tx.fail(e))?;
    Ok(())
}

/// `clearSession` on branch `id`: the branches that show its items keep their own copies; the
/// branch's usage goes with its items.
pub async fn clear(conn: &Connection, t: &Target<'_>, id: &str, now: f64) -> Result<bool> {
    let tx = write_tx(conn, t, "clearSession").await?;
    tx.run(async |tx| match load_branch(tx, t, id).await? {
        Some(l) => clear_in(tx, t, l, id, now).await.map(|()| true),
        None => Ok(false),
    })
    .await
}

/// [`clear`] in a transaction under way; on `main` the operation log and the archive go too,
/// as for a session without branches.
pub(super) async fn clear_in(
    tx: &Tx,
    t: &Target<'_>,
    mut l: Loaded,
    id: &str,
    now: f64,
) -> Result<()> {
    let release = l.tree.clear(t.session_id, id)?;
    apply_release(tx, t, id, &release).await?;
    if id == MAIN {
        // The operation log is the session's, shared by its branches: it stays while there are
        // others (a retried operation of another branch must still be known).
        let shared = !l.tree.is_single();
        let (next_op_seq, bytes) = (l.record.next_op_seq, l.record.bytes);
        l.record.clear(now);
        // The other branches' rows stay: the size follows the rows left (see `Loaded::save`).
        l.record.bytes = bytes;
        let mut stores = vec![ARCHIVE_STORE];
        if shared {
            l.record.next_op_seq = next_op_seq;
        } else {
            stores.push(OPERATIONS_STORE);
        }
        for store in stores {
            tx.store(store)?
                .delete(all_of_session(t.session_id)?)
                .map_err(|e| tx.fail(e))?;
        }
    } else {
        tx.store(ARCHIVE_STORE)?
            .delete(all_of_storage(t.session_id, id)?)
            .map_err(|e| tx.fail(e))?;
        l.record.rewrote();
    }
    tx.store(USAGE_STORE)?
        .delete(branch_usage(t.session_id, id)?)
        .map_err(|e| tx.fail(e))?;
    l.save(tx, Some(now))
}

/// `applyHistoryTransaction` on branch `id` (other than `main`).
pub async fn apply_transaction(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    taken: TakenTransaction,
    now: f64,
) -> Result<bool> {
    let tx = write_tx(conn, t, "applyHistoryTransaction").await?;
    tx.run(async |tx| {
        let key = Array::of2(
            &t.session_id.into(),
            &taken.transaction.operation_id.as_str().into(),
        );
        let applied = listening(
            tx.index(OPERATIONS_STORE, BY_OPERATION_INDEX)?
                .get(JsValue::from(key))
                .map_err(|e| tx.fail(e))?,
        );
        let loaded = load_branch(tx, t, id).await;
        let applied = applied.await.map_err(|e| tx.fail(e))?;
        let Some(l) = loaded? else {
            return Ok(false);
        };
        let digest = applied
            .as_ref()
            .and_then(|entry| js::get(entry, "digest").ok())
            .and_then(|d| d.as_string());
        transaction_in(tx, t, l, id, taken, digest, now).await
    })
    .await
}

/// A history transaction on branch `id` in a transaction under way, the operation's log entry
/// (`applied`: the digest it holds, if any) already read: the operation log is the session's,
/// shared by its branches. The replaced items that other branches show stay theirs.
pub(super) async fn transaction_in(
    tx: &Tx,
    t: &Target<'_>,
    mut l: Loaded,
    id: &str,
    taken: TakenTransaction,
    applied: Option<String>,
    now: f64,
) -> Result<bool> {
    let TakenTransaction {
        transaction,
        items,
        suffix_user_messages,
        usage,
    } = taken;
    let b = l.tree.get(t.session_id, id)?;
    let (next, last_turn) = (b.next, b.last_turn);
    let count = l.tree.item_count(t.session_id, id)?;
    let suffix = (transaction.expected_suffix.len() as u64).min(count);
    let rows = match suffix {
        0 => Vec::new(),
        n => view_from(tx, &l, t.session_id, id, next - n).await?,
    };
    let stored: Vec<Option<String>> = rows
        .iter()
        .map(|row| super::record::item_of(row).and_then(|item| canonical(&item).ok()))
        .collect();
    let remove = match transaction.decide(applied.as_deref(), count, &stored)? {
        Outcome::AlreadyApplied => return Ok(false),
        Outcome::Apply { remove } => remove as u64,
    };
    // Checked once it is known to apply: a replay is a no-op, usage or not.
    if usage.is_some() && transaction.leaves_empty(items.len(), count) {
        return Err(no_turn_for_usage(t.session_id));
    }
    let base_turn = if remove == count {
        0
    } else {
        last_turn.saturating_sub(suffix_user_messages)
    };
    if remove > 0 && transaction.rewrites {
        l.record.rewrote();
    }
    // Turns it takes away, where it starts none (the newest turns removed: an EncryptedSession
    // pops so), take their usage with them, as a pop's do, unless a branch made from this one
    // still shows them: it goes there (asked before the release changes who shows what).
    // Popped into the turns it shares with its parent, the branch shares fewer. (One that
    // starts turns renumbers what it keeps: left.)
    let popped = !items.iter().any(|(_, starts)| *starts) && remove > 0;
    let mut heirs = Vec::new();
    if popped {
        for turn in base_turn + 1..=last_turn {
            let seq = rows.iter().position(|row| turn_of(row) == Some(turn));
            heirs.push(seq.and_then(|i| l.tree.usage_heir(id, next - suffix + i as u64)));
        }
    }
    let release = l.tree.release(t.session_id, id, next - remove, base_turn)?;
    let copied = apply_release(tx, t, id, &release).await?;
    l.released(&release, copied, &rows);
    // (Those it writes again as they were keep their times, as on `main`.)
    let was = super::rewrite::repeated(&rows, remove, transaction.rewrites);
    write_rows(tx, t, &mut l, id, &items, (now, was))?;
    if popped {
        for (turn, heir) in (base_turn + 1..).zip(&heirs) {
            hand_usage(tx, t.session_id, id, turn, heir.as_deref(), now).await?;
        }
        // (All it showed replaced: none of its parent's items any more.)
        let x = l.tree.index_of(t.session_id, id)?;
        let b = &mut l.tree.branches[x];
        b.from_turn = branch::from_turn_after_pop(b.from_turn, base_turn, remove == count);
    }
    give_default_title(&l.record.stored, &items, base_turn, l.record.archived_count);
    super::rewrite::log_operation(tx, &mut l.record, &transaction, now)?;
    if let Some(usage) = &usage {
        let turn = l.tree.get(t.session_id, id)?.last_turn;
        add_usage_in(tx, t.session_id, id, turn, usage, now).await?;
    }
    l.save(tx, Some(now)).map(|()| true)
}

/// What turn listings read of a stored row.
fn facts(row: &JsValue) -> RowFacts {
    let item = super::record::item_of(row).unwrap_or(JsValue::UNDEFINED);
    let created = js::get(row, "createdAt").ok().and_then(|v| v.as_f64());
    item_facts(&item, turn_of(row).unwrap_or(0), created.unwrap_or(0.0))
}

/// `replaceHistory` / `replaceHistoryWithCompaction` on branch `id` in a transaction under way:
/// the branches that show its items keep their own copies; the replaced items go to the
/// branch's own archive (under its storage key, as its rows).
pub(super) async fn replace_in(
    tx: &Tx,
    t: &Target<'_>,
    mut l: Loaded,
    id: &str,
    items: Vec<(JsValue, bool)>,
    options: ReplaceOptions,
    now: f64,
) -> Result<()> {
    let start = l.tree.start(t.session_id, id)?;
    let b = l.tree.get(t.session_id, id)?;
    let (count, archived) = (b.next - start, b.archived);
    let rows = match (options.archive || options.expected.is_some()) && count > 0 {
        true => view_from(tx, &l, t.session_id, id, start).await?,
        false => Vec::new(),
    };
    let old = items_of(&rows, t.session_id)?;
    let stored = forms(&old);
    if let Some(expected) = &options.expected {
        check_whole_history(t.session_id, expected, &stored)?;
    }
    let (marks, stands) = canonical::replaced(&stored, &items, options.archive);
    let moved = match options.archive {
        true => {
            let key = storage(t.session_id, id);
            super::rewrite::archive_replaced(tx, &key, (&old, &marks), archived, now)?.0
        }
        false => 0,
    };
    // The new items' turns count from 1.
    let base = branch::replaced_turns(b.last_turn, items.iter().map(|(_, s)| *s));
    renumber_usage_in(tx, t.session_id, id, base, now).await?;
    for c in l.tree.branches.iter_mut() {
        if c.parent.as_deref() == Some(id) {
            c.from_turn = c.from_turn.saturating_sub(base);
        }
    }
    let release = l.tree.release(t.session_id, id, start, 0)?;
    apply_release(tx, t, id, &release).await?;
    let x = l.tree.index_of(t.session_id, id)?;
    l.tree.branches[x].archived = archived + moved;
    let b = &mut l.tree.branches[x];
    b.from_turn = branch::from_turn_after_replace(b.from_turn, base);
    // Replaced whole, without archiving too: its head may hold a summary.
    l.tree.branches[x].summary_head = true;
    let was = super::rewrite::stood_for(&rows, &stands);
    write_rows(tx, t, &mut l, id, &items, (now, &was))?;
    l.record.rewrote();
    l.save(tx, Some(now))
}

/// `applyHistoryMutations` on branch `id` in a transaction under way: the view from the first
/// changed item on is written again (the branches that show those items keep their copies).
pub(super) async fn mutations_in(
    tx: &Tx,
    t: &Target<'_>,
    mut l: Loaded,
    id: &str,
    mutations: Vec<FunctionCallReplacement>,
    now: f64,
) -> Result<bool> {
    let start = l.tree.start(t.session_id, id)?;
    let rows = view_from(tx, &l, t.session_id, id, start).await?;
    let mut items: Vec<Option<JsValue>> = items_of(&rows, t.session_id)?
        .into_iter()
        .map(Some)
        .collect();
    let replaced = super::rewrite::mutate(&mut items, mutations);
    let Some(first) = (0..items.len()).find(|&i| replaced[i] || items[i].is_none()) else {
        return Ok(false);
    };
    let turn_before = match first {
        0 => 0,
        k => rows.get(k - 1).and_then(turn_of).unwrap_or(0),
    };
    let release = l
        .tree
        .release(t.session_id, id, start + first as u64, turn_before)?;
    apply_release(tx, t, id, &release).await?;
    let mut writer = super::record::RowWriter::at(
        storage(t.session_id, id),
        now,
        t.indexer(l.record.user_id.as_deref()),
    );
    let tools = writer.index.tools;
    // The items kept from `first` on: (item, whether it starts a turn, its row's creation time,
    // whether it is indexed with its tool call's text: a replacement as this object indexes, a
    // kept row as it was, as a repair keeps it).
    let rest: Vec<(JsValue, bool, JsValue, bool)> = items
        .into_iter()
        .zip(&rows)
        .zip(&replaced)
        .skip(first)
        .filter_map(|((item, row), &new)| {
            let item = item?;
            let starts = item_facts(&item, 0, 0.0).starts_turn;
            let created = js::get(row, "createdAt").unwrap_or_else(|_| now.into());
            let indexed = if new { tools } else { indexed_with_tools(row) };
            Some((item, starts, created, indexed))
        })
        .collect();
    let starts: Vec<bool> = rest.iter().map(|r| r.1).collect();
    let placements = l.tree.append(t.session_id, id, &starts)?;
    let messages = tx.store(MESSAGES_STORE)?;
    for ((item, _, created, indexed), place) in rest.iter().zip(&placements) {
        writer.index.tools = *indexed;
        let row = writer
            .row_created(place, item, created)
            .map_err(|e| tx.thrown(&e))?;
        messages.put(&row, None).map_err(|e| tx.fail(e))?;
    }
    l.wrote(rest.iter().map(|r| &r.0));
    l.record.rewrote();
    l.save(tx, Some(now))?;
    Ok(true)
}

/// Appends `items` to branch `id`'s own rows.
fn write_rows(
    tx: &Tx,
    t: &Target<'_>,
    l: &mut Loaded,
    id: &str,
    items: &[(JsValue, bool)],
    times: (f64, &[JsValue]),
) -> Result<()> {
    let starts: Vec<bool> = items.iter().map(|(_, s)| *s).collect();
    let placements = l.tree.append(t.session_id, id, &starts)?;
    if super::ops::summary_at_head(items, &placements) {
        let x = l.tree.index_of(t.session_id, id)?;
        l.tree.branches[x].summary_head = true;
    }
    replan(t, &l.tree, id);
    l.wrote(items.iter().map(|(item, _)| item));
    let index = t.indexer(l.record.user_id.as_deref());
    super::rewrite::put_rows(
        tx,
        storage(t.session_id, id),
        items,
        &placements,
        times,
        index,
    )
}

/// The rewrites on a branch other than `main`, each one transaction.
pub async fn replace_history(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    items: Vec<(JsValue, bool)>,
    options: ReplaceOptions,
    now: f64,
) -> Result<()> {
    let tx = write_tx(conn, t, "replaceHistory").await?;
    tx.run(async |tx| match load_branch(tx, t, id).await? {
        Some(l) => replace_in(tx, t, l, id, items, options, now).await,
        None => Ok(()),
    })
    .await
}

pub async fn apply_mutations(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    mutations: Vec<FunctionCallReplacement>,
    now: f64,
) -> Result<bool> {
    let tx = write_tx(conn, t, "applyHistoryMutations").await?;
    tx.run(async |tx| match load_branch(tx, t, id).await? {
        Some(l) => mutations_in(tx, t, l, id, mutations, now).await,
        None => Ok(false),
    })
    .await
}

/// `getArchivedItems` on branch `id`: its own archive (`main`'s is the session's), oldest first:
/// the newest `limit` (all without one) after skipping the `skip` newest.
pub async fn archived_items(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    limit: Option<u64>,
    skip: u64,
) -> Result<Vec<JsValue>> {
    let tx = t
        .begin_over(
            conn,
            "getArchivedItems",
            TransactionMode::ReadOnly,
            &[SESSIONS_STORE, ARCHIVE_STORE],
        )
        .await?;
    tx.run(async |tx| {
        let Some(l) = load_branch(tx, t, id).await? else {
            return Ok(Vec::new());
        };
        let end = l.tree.get(t.session_id, id)?.archived.saturating_sub(skip);
        let start = limit.map_or(0, |n| end.saturating_sub(n));
        if start >= end {
            return Ok(Vec::new());
        }
        let rows = tx
            .store(ARCHIVE_STORE)?
            .get_all(
                Some(rows_range(&storage(t.session_id, id), start, end)?),
                None,
            )
            .map_err(|e| tx.fail(e))?
            .reply()
            .await
            .map_err(|e| tx.fail(e))?;
        items_of(&rows, t.session_id)
    })
    .await
}

/// `createBranchFromTurn` / `createBranchFromContent` from branch `from`: the new branch shows
/// everything before the turn, becomes the remembered branch, and its id and creation time are
/// returned.
pub async fn create(
    conn: &Connection,
    t: &Target<'_>,
    from: &str,
    pick: From,
    name: Option<String>,
    now: f64,
) -> Result<(String, f64)> {
    let tx = write_tx(conn, t, "createBranch").await?;
    tx.run(async |tx| {
        let Some(mut l) = load_branch(tx, t, from).await? else {
            return Err(match &pick {
                From::Turn(n) => invalid_turn(format!(
                    "session \"{}\" has no turn {n}: it holds no items",
                    t.session_id
                )),
                From::Text(q) => invalid_turn(format!(
                    "no user turn of session \"{}\" contains \"{q}\": it holds no items",
                    t.session_id
                )),
            });
        };
        let start = l.tree.start(t.session_id, from)?;
        let (at, turn) = match &pick {
            From::Turn(n) => {
                let turn = *n;
                let found = if turn == 0 {
                    None
                } else {
                    turn_start(tx, &l, t.session_id, from, turn).await?
                };
                let at = found.ok_or_else(|| {
                    let last = l.tree.get(t.session_id, from).map_or(0, |b| b.last_turn);
                    branch::no_turn(t.session_id, from, turn, last)
                })?;
                (at, turn)
            }
            From::Text(query) => {
                let wanted = &folded(query);
                let rows = view_from(tx, &l, t.session_id, from, start).await?;
                let hit = rows.iter().find_map(|row| {
                    let f = facts(row);
                    (f.starts_turn && f.turn > 0 && branch::contains_text(&folded(&f.text), wanted))
                        .then(|| (seq_of(row), f.turn))
                });
                match hit {
                    Some((Some(seq), turn)) => (seq, turn),
                    _ => {
                        return Err(invalid_turn(format!(
                        "no user turn of branch \"{from}\" of session \"{}\" contains \"{query}\"",
                        t.session_id
                    )))
                    }
                }
            }
        };
        let id = match name {
            Some(n) => n,
            None => l.tree.free_name(turn),
        };
        // A branch is told from a newer one of the same name by when it was created: one made in
        // the same millisecond as the last (deleted since, and its name taken again) is given
        // the millisecond after, so no two of a session are alike.
        let last = js::get(&l.record.stored, "branchClock")
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0);
        let created = if now > last { now } else { last + 1.0 };
        let _ = Reflect::set(&l.record.stored, &"branchClock".into(), &created.into());
        let copies = l.tree.fork(t.session_id, from, &id, at, turn, created)?;
        apply_release(
            tx,
            t,
            &id,
            &Release {
                copies,
                delete: None,
            },
        )
        .await?;
        let _ = Reflect::set(
            &l.record.stored,
            &"currentBranch".into(),
            &id.as_str().into(),
        );
        l.save(tx, Some(now))?;
        Ok((id, created))
    })
    .await
}

/// The sequence number of the first item of turn `turn` in `id`'s view, if it has that turn.
async fn turn_start(
    tx: &Tx,
    l: &Loaded,
    session_id: &str,
    id: &str,
    turn: u64,
) -> Result<Option<u64>> {
    let index = tx.index(MESSAGES_STORE, BY_TURN_INDEX)?;
    let segments = l.tree.segments(session_id, id)?;
    let mut pending = Vec::new();
    for s in &segments {
        let key = Array::of2(
            &storage(session_id, &s.owner),
            &JsValue::from_f64(turn as f64),
        );
        // The rows' keys (`[storage, seq]`) are all it needs: their items stay unread.
        pending.push((
            s,
            listening(
                index
                    .get_all_keys(Some(Query::from(JsValue::from(key))), None)
                    .map_err(|e| tx.fail(e))?,
            ),
        ));
    }
    let mut first: Option<u64> = None;
    for (s, request) in pending {
        for key in request.await.map_err(|e| tx.fail(e))? {
            let seq = Reflect::get_u32(&key, 1).ok().and_then(|q| q.as_f64());
            if let Some(q) = seq.and_then(safe_count).filter(|q| *q >= s.lo && *q < s.hi) {
                first = Some(first.map_or(q, |f| f.min(q)));
            }
        }
    }
    Ok(first)
}

/// `switchBranch(id)`: checks that it exists, and remembers it in the record. Returns when the
/// branch was created (`None` for a session not stored yet).
pub async fn switch(conn: &Connection, t: &Target<'_>, id: &str) -> Result<Option<f64>> {
    let tx = write_tx(conn, t, "switchBranch").await?;
    tx.run(async |tx| {
        let Some(l) = load_branch(tx, t, id).await? else {
            return Ok(None);
        };
        let at = l.tree.get(t.session_id, id)?.created_at;
        let _ = Reflect::set(&l.record.stored, &"currentBranch".into(), &id.into());
        // Switching changes no history: the record keeps its time.
        l.save(tx, None)?;
        Ok(Some(at))
    })
    .await
}

/// `listBranches()`: every branch, `main` first, with what it shows.
pub async fn list(conn: &Connection, t: &Target<'_>, current: &str) -> Result<JsValue> {
    let tx = read_tx(conn, t, "listBranches").await?;
    tx.run(async |tx| {
        let loaded = load(tx, t).await?;
        let entry = |b: &Branch, count: u64, created: JsValue, view: Array| -> JsValue {
            object(&[
                ("branchId", b.id.as_str().into()),
                (
                    "parent",
                    b.parent.as_deref().map_or(JsValue::NULL, JsValue::from_str),
                ),
                (
                    "fromTurn",
                    if b.id == MAIN {
                        JsValue::NULL
                    } else {
                        (b.from_turn as f64).into()
                    },
                ),
                ("itemCount", (count as f64).into()),
                ("createdAt", created),
                // A branch that took the name of the deleted one the object was on is not it.
                (
                    "current",
                    (b.id == current
                        && (b.id == MAIN
                            || t.branch_at
                                .and_then(Cell::get)
                                .is_none_or(|at| at == b.created_at)))
                    .into(),
                ),
                ("view", view.into()),
            ])
            .into()
        };
        let Some(l) = loaded else {
            let record = crate::core::session::SessionRecord::new(t.session_id, t.user_id, 0.0);
            let tree = Tree::new(&record, Vec::new())?;
            return Ok(
                Array::of1(&entry(&tree.branches[0], 0, JsValue::NULL, Array::new())).into(),
            );
        };
        let out = Array::new();
        for b in &l.tree.branches {
            // The stored rows it shows (what tells a search hit on it, exactly: turn numbers do
            // not, a branch's turns popped and written again being other rows of the same turns).
            let view = Array::new();
            for s in l.tree.segments(t.session_id, &b.id)? {
                view.push(&object(&[
                    ("branchId", s.owner.as_str().into()),
                    ("from", (s.lo as f64).into()),
                    ("to", (s.hi as f64).into()),
                ]));
            }
            out.push(&entry(
                b,
                l.tree.item_count(t.session_id, &b.id)?,
                b.created_at.into(),
                view,
            ));
        }
        Ok(out.into())
    })
    .await
}

/// `deleteBranch(id)`: never `main` nor `current`; the branches that show its items keep their
/// own copies, and its usage goes with it.
pub async fn delete(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    current: &str,
    now: f64,
) -> Result<()> {
    if id == MAIN || id == current {
        return Err(SessionError::new(
            SessionErrorCode::BranchInUse,
            format!(
                "branch \"{id}\" of session \"{}\" cannot be deleted: {}",
                t.session_id,
                if id == MAIN {
                    "it is the main branch"
                } else {
                    "this session object is on it; switch to another branch first"
                }
            ),
        ));
    }
    let tx = write_tx(conn, t, "deleteBranch").await?;
    tx.run(async |tx| {
        let Some(mut l) = load_branch(tx, t, id).await? else {
            return Ok(());
        };
        let release = l.tree.remove(t.session_id, id)?;
        apply_release(
            tx,
            t,
            id,
            &Release {
                copies: release.copies,
                delete: None,
            },
        )
        .await?;
        for store in [MESSAGES_STORE, ARCHIVE_STORE] {
            tx.store(store)?
                .delete(all_of_storage(t.session_id, id)?)
                .map_err(|e| tx.fail(e))?;
        }
        tx.store(USAGE_STORE)?
            .delete(branch_usage(t.session_id, id)?)
            .map_err(|e| tx.fail(e))?;
        if remembered(&l.record.stored).as_string().as_deref() == Some(id) {
            let _ = Reflect::set(&l.record.stored, &"currentBranch".into(), &MAIN.into());
        }
        l.record.rewrote();
        l.save(tx, Some(now))
    })
    .await
}

/// Every row of `id`'s view, as the listings read them.
async fn view_facts(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    what: &str,
) -> Result<Vec<(u64, RowFacts)>> {
    let tx = read_tx(conn, t, what).await?;
    tx.run(async |tx| {
        let Some(l) = load_branch(tx, t, id).await? else {
            return Ok(Vec::new());
        };
        let start = l.tree.start(t.session_id, id)?;
        let rows = view_from(tx, &l, t.session_id, id, start).await?;
        Ok(rows
            .iter()
            .map(|r| (seq_of(r).unwrap_or(0), facts(r)))
            .collect())
    })
    .await
}

/// `getTurns()` / `findTurns(text)` on branch `id`.
pub async fn turns(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    query: Option<&str>,
) -> Result<JsValue> {
    let rows: Vec<RowFacts> = view_facts(
        conn,
        t,
        id,
        if query.is_some() {
            "findTurns"
        } else {
            "getTurns"
        },
    )
    .await?
    .into_iter()
    .map(|(_, f)| f)
    .collect();
    Ok(turns_js(&rows, query))
}

/// `getToolUsage()` on branch `id`: the tool calls it shows, per tool and turn.
pub async fn tool_usage(conn: &Connection, t: &Target<'_>, id: &str) -> Result<JsValue> {
    let rows: Vec<RowFacts> = view_facts(conn, t, id, "getToolUsage")
        .await?
        .into_iter()
        .map(|(_, f)| f)
        .collect();
    Ok(tool_usage_js(&rows))
}

/// `storeRunUsage(usage)`: adds a run's usage to the newest turn of branch `id`.
pub async fn store_usage(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    usage: Usage,
    now: f64,
) -> Result<()> {
    let tx = write_tx(conn, t, "storeRunUsage").await?;
    tx.run(async |tx| {
        let Some(l) = load_branch(tx, t, id).await? else {
            return Err(invalid_turn(format!(
                "session \"{}\" has no turn to store usage against: it holds no items",
                t.session_id
            )));
        };
        // A branch that shows no items (made before the first turn, or cleared) has no turn
        // either.
        if l.tree.item_count(t.session_id, id)? == 0 {
            return Err(invalid_turn(format!(
                "branch \"{id}\" of session \"{}\" has no turn to store usage against: it shows no items",
                t.session_id
            )));
        }
        let turn = l.tree.get(t.session_id, id)?.last_turn;
        add_usage_in(tx, t.session_id, id, turn, &usage, now).await
    })
    .await
}

/// Adds `usage` to what turn `turn` of branch `id` has used, in a transaction under way.
pub(super) async fn add_usage_in(
    tx: &Tx,
    session_id: &str,
    id: &str,
    turn: u64,
    usage: &Usage,
    now: f64,
) -> Result<()> {
    let store = tx.store(USAGE_STORE)?;
    let existing = store
        .get(usage_key(session_id, id, turn))
        .map_err(|e| tx.fail(e))?
        .reply()
        .await
        .map_err(|e| tx.fail(e))?;
    let mut sum = existing.as_ref().map(usage_of).unwrap_or_default();
    sum.add(usage);
    store
        .put(&usage_record(session_id, id, turn, &sum, now), None)
        .map_err(|e| tx.fail(e))?;
    Ok(())
}

/// The stored usage of `turn` of branch `id`.
fn usage_record(session_id: &str, id: &str, turn: u64, sum: &Usage, now: f64) -> JsValue {
    let mut fields = vec![
        ("sessionId", JsValue::from_str(session_id)),
        ("branch", id.into()),
        ("turn", (turn as f64).into()),
    ];
    fields.extend(usage_fields(sum));
    fields.push(("updatedAt", now.into()));
    object(&fields).into()
}

/// After a rewrite that numbered branch `id`'s turns again from 1, `base` being how many of its
/// oldest turns it replaced (see [`branch::renumbered_usage`]): its usage follows, in the
/// transaction under way.
pub(super) async fn renumber_usage_in(
    tx: &Tx,
    session_id: &str,
    id: &str,
    base: u64,
    now: f64,
) -> Result<()> {
    if base == 0 {
        return Ok(());
    }
    let store = tx.store(USAGE_STORE)?;
    let rows = store
        .get_all(Some(branch_usage(session_id, id)?), None)
        .map_err(|e| tx.fail(e))?
        .reply()
        .await
        .map_err(|e| tx.fail(e))?;
    if rows.is_empty() {
        return Ok(());
    }
    let old: Vec<(u64, Usage)> = rows
        .iter()
        .map(|r| (turn_of(r).unwrap_or(0), usage_of(r)))
        .collect();
    store
        .delete(branch_usage(session_id, id)?)
        .map_err(|e| tx.fail(e))?;
    for (turn, sum) in branch::renumbered_usage(&old, base) {
        store
            .put(&usage_record(session_id, id, turn, &sum, now), None)
            .map_err(|e| tx.fail(e))?;
    }
    Ok(())
}

/// The usage records of a session (of one branch when `branch` is given), oldest turn first.
async fn usage_rows(
    conn: &Connection,
    t: &Target<'_>,
    branch: Option<&str>,
) -> Result<Vec<JsValue>> {
    let tx = t
        .begin_over(
            conn,
            "getSessionUsage",
            TransactionMode::ReadOnly,
            &[SESSIONS_STORE, USAGE_STORE],
        )
        .await?;
    tx.run(async |tx| {
        let record = read_record(tx, t.session_id).await?;
        if let Some(record) = &record {
            record.check_owner(t.user_id)?;
        }
        // A branch the session does not have is refused, as the other reads of a branch do.
        match (branch, record) {
            (Some(b), Some(record)) => is_own(t, &Loaded::from(record)?.tree, b)?,
            (Some(b), None) if b != MAIN => {
                return Err(crate::core::branch::not_found(t.session_id, b));
            }
            _ => {}
        }
        let range = match branch {
            Some(b) => branch_usage(t.session_id, b)?,
            None => all_usage(t.session_id)?,
        };
        tx.store(USAGE_STORE)?
            .get_all(Some(range), None)
            .map_err(|e| tx.fail(e))?
            .reply()
            .await
            .map_err(|e| tx.fail(e))
    })
    .await
}

/// `getSessionUsage({ branch? })`: the sum over every branch, or over one.
pub async fn session_usage(
    conn: &Connection,
    t: &Target<'_>,
    branch: Option<&str>,
) -> Result<JsValue> {
    let rows = usage_rows(conn, t, branch).await?;
    let usages: Vec<Usage> = rows.iter().map(usage_of).collect();
    Ok(session_usage_js(&usages))
}

/// `getTurnUsage(turn?)` on branch `id`: one turn's usage (`null` when it has none), or every
/// turn's that has some.
pub async fn turn_usage(
    conn: &Connection,
    t: &Target<'_>,
    id: &str,
    turn: Option<u64>,
) -> Result<JsValue> {
    let rows = usage_rows(conn, t, Some(id)).await?;
    let entry = |row: &JsValue| turn_usage_js(turn_of(row).unwrap_or(0), &usage_of(row));
    Ok(match turn {
        Some(n) => rows
            .iter()
            .find(|r| turn_of(r) == Some(n))
            .map_or(JsValue::NULL, entry),
        None => rows.iter().map(entry).collect::<Array>().into(),
    })
}

/// `getInfo()` for branch `id`, from the session record alone: the counters are the branch's
/// (`main`'s are the record's own), the metadata the session's.
pub async fn info(conn: &Connection, t: &Target<'_>, id: &str) -> Result<JsValue> {
    let tx = t
        .begin_over(
            conn,
            "getInfo",
            TransactionMode::ReadOnly,
            &[SESSIONS_STORE],
        )
        .await?;
    tx.run(async |tx| {
        let Some(l) = load_branch(tx, t, id).await? else {
            return Ok(metadata::info(
                t.session_id,
                t.user_id,
                None,
                &JsValue::UNDEFINED,
            ));
        };
        let mut record = l.record.record.clone();
        record.item_count = l.tree.item_count(t.session_id, id)?;
        record.last_turn = l.tree.get(t.session_id, id)?.last_turn;
        Ok(metadata::info(
            t.session_id,
            l.record.user_id.as_deref(),
            Some(&record),
            &l.record.stored,
        ))
    })
    .await
}

/// Deletes the rows of every branch other than `main`, and all usage, of a deleted session.
pub(super) fn delete_all(tx: &Tx, session_id: &str) -> Result<()> {
    for store in [MESSAGES_STORE, ARCHIVE_STORE] {
        tx.store(store)?
            .delete(all_branch_rows(session_id)?)
            .map_err(|e| tx.fail(e))?;
    }
    tx.store(USAGE_STORE)?
        .delete(all_usage(session_id)?)
        .map_err(|e| tx.fail(e))?;
    Ok(())
}
