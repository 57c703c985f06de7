//! The session operations. Each is one transaction run through [`Tx::run`]: it reads the session
//! record, checks the owner, issues all its requests and returns; any error aborts it, so a
//! failed call writes nothing. Nothing but IndexedDB requests is awaited inside.

use std::cell::Cell;
use std::future::Future;

use idb::{KeyRange, TransactionMode};
use js_sys::{Array, Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::backend::js::{self, object};
use crate::backend::metadata::{give_default_title, is_summary, Applied, Changes};
use crate::core::branch::{Segment, MAIN};
use crate::core::error::{Result, SessionError};
use crate::core::history::Limit;
use crate::core::schema::{
    ARCHIVE_STORE, BY_TURN_INDEX, BY_UPDATED_INDEX, BY_USER_INDEX, MESSAGES_STORE,
    OPERATIONS_STORE, SESSIONS_STORE, SESSION_STORES, USAGE_STORE,
};
use crate::core::session::{newest_range, oldest_turn, Placement, SessionRecord};

use super::branches::{self, has_branches, Loaded};
use super::open::Connection;
use super::record::{
    all_of_session, damaged_items, item_of, items_of, message_key, messages_between,
    record_from_js, seq_of, turn_of, Indexer, RowWriter, StoredRecord,
};
use super::request::Sent as _;
use super::tx::{listening, Begin, Tx};

/// Which session, as whom.
pub struct Target<'a> {
    pub session_id: &'a str,
    pub user_id: Option<&'a str>,
    /// Whether the search index takes tool calls' arguments and outputs of the rows written.
    pub index_tools: bool,
    /// The main history's extent (`firstSeq`, `itemCount`, `lastTurn`) when this object last
    /// read or wrote the session record: what a read of the newest items or turns asks for
    /// before the record says it.
    pub seen: &'a Cell<Option<(u64, u64, u64)>>,
    /// The parts of a branch's storage this object last read the newest items or turns of a
    /// branch from (`branches::get_items`, `branches::recent_turns`): what the next such read
    /// asks for before the record says it.
    pub seen_view: &'a Cell<Option<SeenView>>,
    /// When the branch this object is on was created, once a call has read it: a branch of that
    /// name created at another time is another branch (the object's was deleted, and the name
    /// taken again), which the object's calls refuse rather than write to. `None` for a call on
    /// a branch the caller names.
    pub branch_at: Option<&'a Cell<Option<f64>>>,
}

/// See [`Target::seen_view`].
pub struct SeenView {
    pub branch: String,
    pub limit: Limit,
    /// For a read of turns, the oldest turn it read (`None`: a read of items).
    pub oldest: Option<u64>,
    pub segments: Vec<Segment>,
}

impl Target<'_> {
    /// Remembers the extent of `record` for the next read (see [`Target::seen`]).
    fn saw(&self, record: &SessionRecord) {
        self.seen.set(Some((
            record.first_seq,
            record.item_count,
            record.last_turn,
        )));
    }

    /// A transaction over the sessions and messages stores, for `what`.
    pub(super) fn begin<'a>(
        &self,
        conn: &'a Connection,
        what: &str,
        mode: TransactionMode,
    ) -> Begin<'a> {
        self.begin_over(conn, what, mode, &[SESSIONS_STORE, MESSAGES_STORE])
    }

    /// A transaction over `stores`, for `what`.
    pub(super) fn begin_over<'a>(
        &self,
        conn: &'a Connection,
        what: &str,
        mode: TransactionMode,
        stores: &[&'static str],
    ) -> Begin<'a> {
        Tx::begin(
            conn,
            stores,
            mode,
            format!("{what} of session \"{}\"", self.session_id),
        )
    }

    /// What the search index keeps of the rows this target writes to a session of `owner`.
    pub(super) fn indexer(&self, owner: Option<&str>) -> Indexer {
        Indexer::new(owner, self.index_tools)
    }
}

/// Every store that holds a session's data, each keyed `[sessionId, number]`.
const SESSION_DATA: [&str; 3] = [MESSAGES_STORE, OPERATIONS_STORE, ARCHIVE_STORE];

/// Deletes every row of the session in `SESSION_DATA`: its items, operation log and archive.
pub(super) fn delete_session_data(tx: &Tx, session_id: &str) -> Result<()> {
    for store in SESSION_DATA {
        tx.store(store)?
            .delete(all_of_session(session_id)?)
            .map_err(|e| tx.fail(e))?;
    }
    Ok(())
}

pub(super) async fn read_record(tx: &Tx, session_id: &str) -> Result<Option<StoredRecord>> {
    let value = tx.get(SESSIONS_STORE, session_id).await?;
    let Some(value) = value else {
        return Ok(None);
    };
    let record = record_from_js(&value)?;
    if record.id != session_id {
        return Err(damaged_items(
            session_id,
            format!("its record names session \"{}\"", record.id),
        ));
    }
    Ok(Some(StoredRecord {
        record,
        stored: value,
    }))
}

pub(super) fn write_record(tx: &Tx, record: &StoredRecord) -> Result<()> {
    tx.store(SESSIONS_STORE)?
        .put(&record.to_js(), None)
        .map_err(|e| tx.fail(e))?;
    Ok(())
}

/// Sends `getAllRecords({ query, count, direction: "prev" })` for a session's newest `count`
/// messages (IndexedDB 3, in Chromium since version 141), and returns the future of its rows,
/// oldest first; `None` where the browser does not have it.
pub(super) fn newest_rows<'a>(
    tx: &'a Tx,
    session_id: &str,
    count: u64,
) -> Result<Option<impl Future<Output = Result<Vec<JsValue>>> + 'a>> {
    Ok(newest_request(tx, session_id, count)?.map(|request| sent_rows(tx, request, true)))
}

/// The `getAllRecords` request of [`newest_rows`], sent.
fn newest_request(tx: &Tx, session_id: &str, count: u64) -> Result<Option<web_sys::IdbRequest>> {
    let store: JsValue = tx.store(MESSAGES_STORE)?.into();
    let method = js::get(&store, "getAllRecords").unwrap_or(JsValue::UNDEFINED);
    let Some(method) = method.dyn_ref::<Function>() else {
        return Ok(None);
    };
    let options = object(&[
        ("query", all_of_session(session_id)?.into()),
        (
            "count",
            JsValue::from_f64(count.min(u32::MAX as u64) as f64),
        ),
        ("direction", js::name("prev")),
    ]);
    let request = method.call1(&store, &options).map_err(|e| tx.thrown(&e))?;
    Ok(Some(request.unchecked_into()))
}

/// Sends the read of a session's messages `lo..=hi`.
fn range_request(tx: &Tx, session_id: &str, (lo, hi): (u64, u64)) -> Result<web_sys::IdbRequest> {
    let store = web_sys::IdbObjectStore::from(tx.store(MESSAGES_STORE)?);
    let range: JsValue = messages_between(session_id, lo as f64, hi as f64)?.into();
    store.get_all_with_key(&range).map_err(|e| tx.thrown(&e))
}

/// The rows `request` reads (`records`: as `getAllRecords` gives them, newest first), oldest
/// first. Its handlers are attached now, before anything else is awaited.
fn sent_rows(
    tx: &Tx,
    request: web_sys::IdbRequest,
    records: bool,
) -> impl Future<Output = Result<Vec<JsValue>>> + '_ {
    let reply = listening(request);
    async move {
        let rows = js::stored_elements(&reply.await.map_err(|e| tx.fail(e))?);
        if !records {
            return Ok(rows);
        }
        let value = js::name("value");
        Ok(rows
            .iter()
            .rev()
            .map(|r| Reflect::get(r, &value).unwrap_or(JsValue::UNDEFINED))
            .collect())
    }
}

/// The result of a read sent with the session record, if one was: awaited as soon as the record
/// has come (it comes in the same round trip), so that no read is left unobserved when the call
/// ends early.
pub(super) async fn finish<F: Future>(sent: Option<F>) -> Option<F::Output> {
    match sent {
        Some(sent) => Some(sent.await),
        None => None,
    }
}

/// The newest items within `limit`, oldest first: one bounded read of `limit` rows, sent with the
/// read of the session record where the browser has `getAllRecords`, else after it. A history
/// whose rows do not match its record (a gap in the sequence numbers, a row without its item,
/// left by something other than this library) is reported as damaged, never read around.
pub async fn get_items(conn: &Connection, t: &Target<'_>, limit: Limit) -> Result<Vec<JsValue>> {
    let tx = t.begin(conn, "getItems", TransactionMode::ReadOnly).await?;
    tx.run(async |tx| {
        // The rows are asked with the record, in one round trip: the range the record named
        // when this object last saw it (the same snapshot answers both, so rows read where the
        // record still names them are its rows), else the newest rows by `getAllRecords`.
        let guess = match limit {
            Limit::Newest(n) if n > 0 => t
                .seen
                .get()
                .and_then(|(first, count, _)| newest_range(first, count, limit)),
            _ => None,
        };
        let sent = match (guess, limit) {
            (Some(range), _) => Some((range_request(tx, t.session_id, range)?, false)),
            (None, Limit::Newest(n)) if n > 0 => {
                newest_request(tx, t.session_id, n)?.map(|request| (request, true))
            }
            _ => None,
        }
        .map(|(request, records)| sent_rows(tx, request, records));
        let record = read_record(tx, t.session_id).await;
        let sent = finish(sent).await;
        let Some(record) = record? else {
            t.seen.set(None);
            return Ok(Vec::new());
        };
        record.check_owner(t.user_id)?;
        let range = record.newest_range(limit);
        t.saw(&record);
        let sent = match guess {
            // The history changed since: the guessed rows are not the ones to return.
            Some(guessed) if Some(guessed) != range => None,
            _ => sent,
        };
        let rows = rows_in(tx, &record, range, sent).await?;
        items_of(&rows, t.session_id)
    })
    .await
}

/// The items of the newest `turns` whole turns, oldest first: one bounded read of the
/// `by_turn` index from the oldest of those turns, checked against the record (the rows must be
/// the newest of the history, without a gap).
pub async fn recent_turns(conn: &Connection, t: &Target<'_>, turns: Limit) -> Result<Vec<JsValue>> {
    let tx = t
        .begin(conn, "getRecentTurns", TransactionMode::ReadOnly)
        .await?;
    tx.run(async |tx| {
        let index = tx.index(MESSAGES_STORE, BY_TURN_INDEX)?;
        let sid = JsValue::from_str(t.session_id);
        let ask = |oldest: u64| -> Result<_> {
            let range = KeyRange::bound(
                &Array::of2(&sid, &JsValue::from_f64(oldest as f64)),
                &Array::of2(&sid, &JsValue::from_f64(f64::INFINITY)),
                Some(false),
                Some(false),
            )
            .map_err(|e| tx.fail(e))?;
            index
                .get_all(Some(range.into()), None)
                .map(listening)
                .map_err(|e| tx.fail(e))
        };
        // Where this object has seen the session, the rows of the turns its record named then
        // are asked with the record, in one round trip, and used if it still names them (as
        // `get_items` does).
        let guess = t
            .seen
            .get()
            .and_then(|(_, count, last)| oldest_turn(count, last, turns));
        let asked = match guess {
            Some(oldest) => Some(ask(oldest)?),
            None => None,
        };
        let record = read_record(tx, t.session_id).await;
        let asked = finish(asked).await;
        let Some(record) = record? else {
            return Ok(Vec::new());
        };
        record.check_owner(t.user_id)?;
        t.saw(&record);
        let Some(oldest) = record.oldest_turn_of(turns) else {
            return Ok(Vec::new());
        };
        // A window that leaves out the head of the history (turn 0, before the first user
        // message) still shows a compaction summary there: its rows are asked at once. Only a
        // history that was compacted has one (a compaction archives what it replaced, or
        // replaced the history whole without archiving), so no other read pays for the request.
        let head = match oldest {
            0 => None,
            _ if record.archived_count == 0 && !record.summary_head => None,
            _ => Some(head_rows(tx, &index, &sid)?),
        };
        let rows = match (guess, asked) {
            (Some(guess), Some(rows)) if guess == oldest => rows,
            _ => ask(oldest)?.await,
        }
        .map_err(|e| tx.fail(e))?;
        let summaries = match head {
            Some(head) => head.await.map_err(|e| tx.fail(e))?,
            None => Vec::new(),
        };
        // Keys are unique and ordered: as many rows as the span of their sequence numbers, the
        // newest being the history's newest, is every row of that span.
        let (first, last) = (rows.first().and_then(seq_of), rows.last().and_then(seq_of));
        let sound = match (first, last) {
            (Some(first), Some(last)) => {
                last + 1 == record.next_seq
                    && first >= record.first_seq
                    && rows.len() as u64 == last - first + 1
            }
            _ => false,
        };
        if !sound {
            return Err(gap(t.session_id, &record, rows.len()));
        }
        let rows: Vec<JsValue> = summary_head(&summaries, first)
            .chain(&rows)
            .cloned()
            .collect();
        items_of(&rows, t.session_id)
    })
    .await
}

/// The most rows of the head of a history (turn 0) a read of recent turns looks at for a
/// compaction summary.
const HEAD_AT_MOST: u32 = 16;

/// Asks `index` (`by_turn`) for the first rows of turn 0 of the storage `key`, where a
/// compaction summary stands: the request, to be awaited with the window's rows.
pub(super) fn head_rows(
    tx: &Tx,
    index: &idb::Index,
    key: &JsValue,
) -> Result<impl std::future::Future<Output = std::result::Result<Vec<JsValue>, idb::Error>>> {
    let zero = Array::of2(key, &JsValue::from_f64(0.0));
    let range = KeyRange::only(&zero).map_err(|e| tx.fail(e))?;
    let request = index
        .get_all(Some(range.into()), Some(HEAD_AT_MOST))
        .map_err(|e| tx.fail(e))?;
    Ok(listening(request))
}

/// The compaction summaries that open the head rows `head` (turn 0, oldest first) before the
/// window's first row `first`: what a window of turns shows before its turns.
pub(super) fn summary_head(head: &[JsValue], first: Option<u64>) -> impl Iterator<Item = &JsValue> {
    head.iter()
        .take_while(move |row| seq_of(row) < first && item_of(row).is_some_and(|i| is_summary(&i)))
}

/// Whether any of `items`, placed as `placements` say, is a compaction summary at the head of
/// the history (turn 0), as a session synced from a compacted one is given: a read of recent
/// turns then asks for the head rows (see [`head_rows`]).
pub(super) fn summary_at_head(items: &[(JsValue, bool)], placements: &[Placement]) -> bool {
    items
        .iter()
        .zip(placements)
        .any(|((item, _), p)| p.turn == 0 && is_summary(item))
}

/// `update()`: the metadata changes, in one transaction (a session nothing was written to yet
/// gets its record). An object on a branch other than main (`branch`) writes only while the
/// session has that branch, as its other calls do.
pub async fn update(
    conn: &Connection,
    t: &Target<'_>,
    branch: Option<&str>,
    changes: &Changes,
    now: f64,
) -> Result<Applied> {
    let tx = t
        .begin_over(
            conn,
            "update",
            TransactionMode::ReadWrite,
            &[SESSIONS_STORE],
        )
        .await?;
    tx.run(async |tx| {
        if let Some(branch) = branch {
            super::branches::check_own(tx, t, branch).await?;
        }
        let record = read_record(tx, t.session_id).await?;
        if let Some(r) = &record {
            r.check_owner(t.user_id)?;
        }
        if !changes.created_at_holds(record.as_ref().map(|r| r.record.created_at)) {
            return Ok(Applied::Nothing);
        }
        let record = record.unwrap_or_else(|| StoredRecord::new(t.session_id, t.user_id, now));
        // A session is made, or written, only by a change it takes: not by a title whose
        // `expectedTitle` does not hold (one made for a chat deleted meanwhile would bring it
        // back, empty; one that lost to a rename would tell every tab of a change).
        let applied = changes.apply(&record.stored);
        if applied != Applied::Nothing {
            write_record(tx, &record)?;
        }
        Ok(applied)
    })
    .await
}

/// The rows of `range` (inclusive sequence numbers), oldest first, checked against the record:
/// exactly the rows it names, or `CORRUPT_SESSION`. `sent` is what a read of the rows sent with
/// the record gave (see [`newest_rows`]), else the range is read now.
pub(super) async fn rows_in(
    tx: &Tx,
    record: &SessionRecord,
    range: Option<(u64, u64)>,
    sent: Option<Result<Vec<JsValue>>>,
) -> Result<Vec<JsValue>> {
    if let Some(sent) = sent {
        let rows = sent?;
        // Keys are unique and ordered: when as many rows came as the range the record names
        // holds, and the oldest and newest of them are its ends, every row between is there.
        let sound = match range {
            None => rows.is_empty(),
            Some((lo, hi)) => {
                rows.len() as u64 == hi - lo + 1
                    && rows.first().and_then(seq_of) == Some(lo)
                    && rows.last().and_then(seq_of) == Some(hi)
            }
        };
        return match sound {
            true => Ok(rows),
            false => Err(gap(&record.id, record, rows.len())),
        };
    }
    let Some((lo, hi)) = range else {
        return Ok(Vec::new());
    };
    let found = tx
        .store(MESSAGES_STORE)?
        .get_all(
            Some(messages_between(&record.id, lo as f64, hi as f64)?),
            None,
        )
        .map_err(|e| tx.fail(e))?
        .reply()
        .await
        .map_err(|e| tx.fail(e))?;
    // The range holds `hi - lo + 1` keys at most: fewer rows is a gap.
    if found.len() as u64 != hi - lo + 1 {
        return Err(gap(&record.id, record, found.len()));
    }
    Ok(found)
}

/// The error for a history whose rows are not where its record says.
fn gap(session_id: &str, record: &SessionRecord, found: usize) -> SessionError {
    damaged_items(
        session_id,
        format!(
            "its items {}..{} are not all stored ({found} rows found where the newest were expected)",
            record.first_seq, record.next_seq
        ),
    )
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
    let tx = t
        .begin(conn, "addItems", TransactionMode::ReadWrite)
        .await?;
    tx.run(async |tx| {
        let mut record = match read_record(tx, t.session_id).await? {
            Some(r) => r,
            None => StoredRecord::new(t.session_id, t.user_id, now),
        };
        record.check_owner(t.user_id)?;
        let starts: Vec<bool> = items.iter().map(|(_, s)| *s).collect();
        let kept_turn = record.last_turn;
        let placements = record.append(&starts, now)?;
        record.summary_head |= summary_at_head(&items, &placements);
        t.saw(&record);
        record.grow(js::items_size(items.iter().map(|(item, _)| item)));
        give_default_title(&record.stored, &items, kept_turn, record.archived_count);
        let messages = tx.store(MESSAGES_STORE)?;
        let rows = RowWriter::new(t.session_id, now, t.indexer(record.user_id.as_deref()));
        for ((item, _), place) in items.iter().zip(&placements) {
            let row = rows.row(place, item).map_err(|e| tx.thrown(&e))?;
            messages.put(&row, None).map_err(|e| tx.fail(e))?;
        }
        write_record(tx, &record)
    })
    .await
}

/// Removes and returns the newest item.
pub async fn pop_item(conn: &Connection, t: &Target<'_>, now: f64) -> Result<Option<JsValue>> {
    let tx = t
        .begin_over(
            conn,
            "popItem",
            TransactionMode::ReadWrite,
            &[SESSIONS_STORE, MESSAGES_STORE, USAGE_STORE],
        )
        .await?;
    tx.run(async |tx| {
        let messages = tx.store(MESSAGES_STORE)?;
        // The newest row and the one before it (for the turn the history then ends in), both
        // sent before either is awaited.
        let ask = |seq: u64, count: u64| -> Result<_> {
            let get = |seq| {
                messages
                    .get(message_key(t.session_id, seq))
                    .map(listening)
                    .map_err(|e| tx.fail(e))
            };
            let newest = get(seq)?;
            let previous = if count > 1 { Some(get(seq - 1)?) } else { None };
            Ok(async move {
                let newest = newest.await;
                (newest, finish(previous).await)
            })
        };
        // Where this object has seen the session, they are asked with the record, in one round
        // trip, and used if the record still names them.
        let guess = match t.seen.get() {
            Some((first, count, _)) if count > 0 => Some((first + count - 1, count)),
            _ => None,
        };
        let asked = match guess {
            Some((seq, count)) => Some(ask(seq, count)?),
            None => None,
        };
        let record = read_record(tx, t.session_id).await;
        let asked = finish(asked).await;
        let Some(mut record) = record? else {
            return Ok(None);
        };
        record.check_owner(t.user_id)?;
        if has_branches(&record.stored) {
            // Other branches may show the item: they keep a copy of it.
            return branches::pop_in(tx, t, Loaded::from(record)?, MAIN, now).await;
        }
        let Some(seq) = record.newest_seq() else {
            return Ok(None);
        };
        let (newest, previous) = match (guess, asked) {
            (Some(guess), Some(rows)) if guess == (seq, record.item_count) => rows,
            _ => ask(seq, record.item_count)?.await,
        };
        let newest = newest.map_err(|e| tx.fail(e))?;
        let previous_turn = match previous {
            Some(p) => match p.map_err(|e| tx.fail(e))? {
                Some(row) => Some(turn_of(&row).ok_or_else(|| {
                    damaged_items(
                        t.session_id,
                        format!("the row of item {} has no turn", seq - 1),
                    )
                })?),
                None => return Err(gap(t.session_id, &record, 1)),
            },
            None => None,
        };
        let Some(item) = newest.as_ref().and_then(item_of) else {
            return Err(damaged_items(
                t.session_id,
                format!("its newest item {seq} is not stored"),
            ));
        };
        let turn = record.last_turn;
        record.pop(previous_turn, now);
        if record.last_turn < turn {
            branches::forget_usage(tx, t.session_id, MAIN, turn)?;
        }
        t.saw(&record);
        record.shrink(js::json_size(&item));
        messages
            .delete(message_key(t.session_id, seq))
            .map_err(|e| tx.fail(e))?;
        write_record(tx, &record)?;
        Ok(Some(item))
    })
    .await
}

/// Removes every item of the session, with its archive and operation log; the session record
/// stays, with no items. Whether it wrote: not to a session that does not exist.
pub async fn clear_session(conn: &Connection, t: &Target<'_>, now: f64) -> Result<bool> {
    let tx = t
        .begin_over(
            conn,
            "clearSession",
            TransactionMode::ReadWrite,
            &SESSION_STORES,
        )
        .await?;
    tx.run(async |tx| {
        let Some(mut record) = read_record(tx, t.session_id).await? else {
            return Ok(false);
        };
        record.check_owner(t.user_id)?;
        if has_branches(&record.stored) {
            // Other branches may show its items: they keep copies of them.
            let l = Loaded::from(record)?;
            return branches::clear_in(tx, t, l, MAIN, now).await.map(|()| true);
        }
        record.clear(now);
        t.saw(&record);
        delete_session_data(tx, t.session_id)?;
        branches::delete_all(tx, t.session_id)?;
        write_record(tx, &record).map(|()| true)
    })
    .await
}

/// The session records as stored, newest `updatedAt` first; only `user_id`'s when given. Reads no
/// message.
pub async fn list_sessions(conn: &Connection, user_id: Option<&str>) -> Result<Vec<JsValue>> {
    let tx = Tx::begin(
        conn,
        &[SESSIONS_STORE],
        TransactionMode::ReadOnly,
        "listSessions".to_string(),
    )
    .await?;
    tx.run(async |tx| {
        let mut records = user_records(tx, user_id)?
            .reply()
            .await
            .map_err(|e| tx.fail(e))?;
        records.reverse();
        Ok(records)
    })
    .await
}

/// The request for `user`'s session records, oldest `updatedAt` first; `None`: every record
/// (records without a user are not in the user index).
pub(super) fn user_records(
    tx: &Tx,
    user: Option<&str>,
) -> Result<idb::request::GetAllStoreRequest> {
    let request = match user {
        Some(u) => {
            let u = JsValue::from_str(u);
            let range = KeyRange::bound(
                &Array::of2(&u, &JsValue::from_f64(f64::NEG_INFINITY)),
                &Array::of2(&u, &JsValue::from_f64(f64::INFINITY)),
                Some(false),
                Some(false),
            )
            .map_err(|e| tx.fail(e))?;
            tx.index(SESSIONS_STORE, BY_USER_INDEX)?
                .get_all(Some(range.into()), None)
        }
        None => tx
            .index(SESSIONS_STORE, BY_UPDATED_INDEX)?
            .get_all(None, None),
    };
    request.map_err(|e| tx.fail(e))
}

/// The approximate size of each listed session's items (`[sessionId, bytes]`, as
/// [`list_sessions`] lists them), from the sizes their records keep. A record written before
/// sizes were kept is measured once, from its items, and keeps the figure from then on.
pub async fn session_sizes(conn: &Connection, user_id: Option<&str>) -> Result<Vec<(String, f64)>> {
    let records = list_sessions(conn, user_id).await?;
    let mut sizes = Vec::with_capacity(records.len());
    // Whether a measured figure can be kept (not with the storage full).
    let mut keep = true;
    for record in &records {
        let Some(id) = js::get(record, "id").ok().and_then(|v| v.as_string()) else {
            continue;
        };
        let bytes = match js::get(record, "bytes").ok().and_then(|v| v.as_f64()) {
            Some(b) => b,
            // The storage full, the figure cannot be kept: it is measured all the same (what
            // is stored is what a user deletes from then).
            None => match measure(conn, &id, keep).await {
                Err(e) if keep && e.code == crate::core::error::SessionErrorCode::StorageFull => {
                    keep = false;
                    measure(conn, &id, false).await?
                }
                measured => measured?,
            },
        };
        sizes.push((id, bytes));
    }
    Ok(sizes)
}

/// Measures a session's stored items and, with `keep`, keeps the figure in its record, in one
/// transaction (so no write can come between the reading and the keeping).
async fn measure(conn: &Connection, session_id: &str, keep: bool) -> Result<f64> {
    let tx = Tx::begin(
        conn,
        &[SESSIONS_STORE, MESSAGES_STORE, ARCHIVE_STORE],
        if keep {
            TransactionMode::ReadWrite
        } else {
            TransactionMode::ReadOnly
        },
        format!("measuring session \"{session_id}\""),
    )
    .await?;
    tx.run(async |tx| {
        let Some(stored) = tx.get(SESSIONS_STORE, session_id).await? else {
            return Ok(0.0);
        };
        if let Some(bytes) = js::get(&stored, "bytes").ok().and_then(|v| v.as_f64()) {
            return Ok(bytes);
        }
        let mut pending = Vec::new();
        for store in [MESSAGES_STORE, ARCHIVE_STORE] {
            for query in [
                all_of_session(session_id)?,
                branches::all_branch_rows(session_id)?,
            ] {
                pending.push(listening(
                    tx.store(store)?
                        .get_all(Some(query), None)
                        .map_err(|e| tx.fail(e))?,
                ));
            }
        }
        let mut bytes = 0;
        for request in pending {
            let rows = request.await.map_err(|e| tx.fail(e))?;
            bytes += js::items_size(rows.iter().filter_map(item_of).collect::<Vec<_>>().iter());
        }
        let bytes = bytes as f64;
        if keep {
            let _ = Reflect::set(&stored, &"bytes".into(), &bytes.into());
            tx.store(SESSIONS_STORE)?
                .put(&stored, None)
                .map_err(|e| tx.fail(e))?;
        }
        Ok(bytes)
    })
    .await
}

/// Deletes a session (its items, branches, archive and operation log) in one transaction; with `expected_updated_at`, only if its record
/// still shows that `updatedAt` (a session written since is kept); with `owner`, only if it is
/// that user's (else `USER_MISMATCH`, nothing deleted). Whether it deleted one.
pub async fn delete_session(
    conn: &Connection,
    session_id: &str,
    owner: Option<Option<String>>,
    expected_updated_at: Option<f64>,
) -> Result<bool> {
    let tx = Tx::begin(
        conn,
        &SESSION_STORES,
        TransactionMode::ReadWrite,
        format!("deleteSession of session \"{session_id}\""),
    )
    .await?;
    tx.run(async |tx| {
        // Only whether it existed matters: a damaged record is deleted like any other.
        let record = tx.get(SESSIONS_STORE, session_id).await?;
        let existed = record.is_some();
        if let (Some(owner), Some(record)) = (&owner, &record) {
            let stored = js::get(record, "userId").ok().and_then(|u| u.as_string());
            if stored != *owner {
                return Err(SessionError::user_mismatch(
                    session_id,
                    stored.as_deref(),
                    owner.as_deref(),
                ));
            }
        }
        if let (Some(expected), Some(record)) = (expected_updated_at, &record) {
            if js::get(record, "updatedAt").ok().and_then(|t| t.as_f64()) != Some(expected) {
                return Ok(false);
            }
        }
        delete_session_data(tx, session_id)?;
        branches::delete_all(tx, session_id)?;
        tx.store(SESSIONS_STORE)?
            .delete(JsValue::from_str(session_id))
            .map_err(|e| tx.fail(e))?;
        Ok(existed)
    })
    .await
}
