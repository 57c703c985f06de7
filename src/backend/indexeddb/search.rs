//! Full-text search over one user's sessions, through the `by_term` index of the messages store
//! (each of a row's `terms` is one string, the owner's prefix and a term, written with the row),
//! and the build of that index
//! for rows written before it existed: a chunk per transaction, resumable.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use idb::{KeyRange, Query, TransactionMode};
use js_sys::{Array, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::backend::js::{self, object};
use crate::backend::search::item_search_text;
use crate::core::branch::MAIN;
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::schema::{BY_TERM_INDEX, MESSAGES_STORE, META_STORE, SESSIONS_STORE};
use crate::core::search::{
    looked_up, match_text, owner_prefix, score, snippet, Clause, LOOKUPS_AT_MOST, PARTIAL,
};
use crate::core::sort;

use super::open::Connection;
use super::ops::user_records;
use super::record::{
    has_terms, indexed_with_tools, item_of, seq_of, stored_between, turn_of, Indexer,
};
use super::request::Sent as _;
use super::tx::{listening, storage_error, Tx};

/// One hit: where it is, and how well it matched.
pub struct Hit {
    pub session_id: String,
    /// The branch that owns the row (`None`: `main`).
    pub branch: Option<String>,
    pub seq: u64,
    pub turn: u64,
    pub role: JsValue,
    pub snippet: String,
    pub score: f64,
    pub created_at: f64,
}

/// The index entries of one clause's term: exactly it, or every term it starts.
fn lookup(owner: &str, term: &str, prefix: bool) -> Result<Query> {
    let key = |t: &str| JsValue::from_str(&format!("{owner}{t}"));
    let range = match prefix {
        false => KeyRange::only(&key(term)),
        true => KeyRange::bound(
            &key(term),
            &key(&format!("{term}\u{ffff}")),
            Some(false),
            Some(false),
        ),
    };
    range
        .map(Query::from)
        .map_err(|e| storage_error(&e, "selecting a search term"))
}

/// A message row, by its key: its session, its branch (`None`: `main`), its position.
type RowId = (String, Option<String>, i64);

/// The row a key (`[storage, seq]`) names.
fn row_id(key: &JsValue) -> Option<RowId> {
    let storage = js::get(key, "0").ok()?;
    let seq = js::get(key, "1").ok()?.as_f64()? as i64;
    if let Some(id) = storage.as_string() {
        return Some((id, None, seq));
    }
    let id = js::get(&storage, "0").ok()?.as_string()?;
    let branch = js::get(&storage, "1").ok()?.as_string()?;
    Some((id, Some(branch), seq))
}

/// The most keys listed for one term. A term on more items than this is too common to narrow
/// the search: its items are checked by their text instead, and its count taken as this.
const LIST_AT_MOST: u32 = 20_000;

/// The most candidate items read and ranked, the newest first (by their session's last change,
/// then their position): a query only of very common words ranks its newest matches.
const READ_AT_MOST: usize = 1_000;

/// The most candidate items checked against the query, READ_AT_MOST at a time, where a clause
/// narrowed no list (see `search`): a bound on what one search reads.
const CHECK_AT_MOST: usize = 5 * READ_AT_MOST;

/// The items of `user`'s sessions (`None`: the sessions without a user; `only`: just these)
/// that meet every clause, best first, at most `limit`. One read transaction; the history is
/// never scanned: the index gives the items that hold the query's rarest term, and only those
/// are read.
pub async fn search(
    conn: &Connection,
    user: Option<&str>,
    clauses: &[Clause],
    limit: usize,
    only: Option<&[String]>,
) -> Result<Vec<Hit>> {
    if clauses.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let tx = Tx::begin(
        conn,
        &[SESSIONS_STORE, MESSAGES_STORE],
        TransactionMode::ReadOnly,
        "searchSessions".to_string(),
    )
    .await?;
    tx.run(async |tx| {
        let owner = owner_prefix(user);
        let index = tx.index(MESSAGES_STORE, BY_TERM_INDEX)?;
        // The keys of every term's items (at most LIST_AT_MOST each), all asked at once, with
        // the user's sessions. A list's length is its term's count of items.
        let records = listening(user_records(tx, user)?);
        let mut lists = Vec::new();
        // (A long query looks up some of its clauses; the text of the items those give is
        // checked against all of them.)
        let mut left = LOOKUPS_AT_MOST;
        for c in looked_up(clauses, LOOKUPS_AT_MOST) {
            // (A clause of more terms than that, a pasted paragraph of Chinese or a long quote,
            // looks up its first ones: its text is checked whole.)
            let terms = clauses[c].terms();
            let take = terms.len().min(left.max(1));
            left = left.saturating_sub(take);
            for (term, prefix) in terms.into_iter().take(take) {
                let request = index
                    .get_all_keys(Some(lookup(&owner, term, prefix)?), Some(LIST_AT_MOST))
                    .map_err(|e| tx.fail(e))?;
                lists.push((c, listening(request)));
            }
        }
        // The user's items indexed under their first terms only (a long paste): checked by
        // their text whatever the query, as a word past those terms is in no list.
        let partial = listening(
            index
                .get_all_keys(Some(lookup(&owner, PARTIAL, false)?), Some(LIST_AT_MOST))
                .map_err(|e| tx.fail(e))?,
        );
        let records = records.await.map_err(|e| tx.fail(e))?;
        // Looked up once per session record: a table, not a scan of the list for each (of the
        // type of `sessions` below, so that its code is not compiled twice).
        let only: Option<HashMap<String, f64>> =
            only.map(|ids| ids.iter().map(|id| (id.clone(), 0.0)).collect());
        let mut documents = 0u64;
        // The user's sessions (only those asked for), with when each last changed, and where
        // their own items start and end.
        let mut sessions: HashMap<String, f64> = HashMap::new();
        let mut spans: Vec<Span> = Vec::new();
        for record in &records {
            let Some(id) = js::get(record, "id").ok().and_then(|v| v.as_string()) else {
                continue;
            };
            let owned = js::get(record, "userId").ok().and_then(|u| u.as_string());
            if owned.as_deref() != user || only.as_ref().is_some_and(|ids| !ids.contains_key(&id)) {
                continue;
            }
            let number = |key: &'static str| js::get(record, key).ok().and_then(|v| v.as_f64());
            documents += number("itemCount").unwrap_or(0.0) as u64;
            let updated = number("updatedAt").unwrap_or(0.0);
            let (first, next) = (number("firstSeq"), number("nextSeq"));
            if let (Some(first), Some(next)) = (first, next) {
                spans.push((updated, id.clone(), None, first, next));
            }
            // Each other branch's own rows (those it inherits are its base's).
            let branches = js::get(record, "branches").unwrap_or(JsValue::UNDEFINED);
            for entry in js::elements(&branches).unwrap_or_default() {
                let field = |key: &'static str| js::get(&entry, key).ok();
                let branch = field("id").and_then(|v| v.as_string());
                let span = (field("first"), field("next"));
                if let (Some(branch), (Some(first), Some(next))) = (branch, span) {
                    if let (Some(first), Some(next)) = (first.as_f64(), next.as_f64()) {
                        // Its own items count among those searched, as main's do.
                        documents += (next - first).max(0.0) as u64;
                        spans.push((updated, id.clone(), Some(branch), first, next));
                    }
                }
            }
            sessions.insert(id, updated);
        }
        let mut frequencies = vec![u64::MAX; clauses.len()];
        let mut keyed = Vec::with_capacity(lists.len());
        for (c, list) in lists {
            let keys = list.await.map_err(|e| tx.fail(e))?;
            // Searching some sessions only, a term is as common as it is in them (the items
            // counted are theirs): counted over all the user's, every term of the query would
            // be as common as their items are many, and a rare word weigh no more than a common
            // one. (A list that was cut is of a term too common to tell.)
            let count = match only.is_some() && (keys.len() as u32) < LIST_AT_MOST {
                true => keys
                    .iter()
                    .filter(|k| row_id(k).is_some_and(|id| sessions.contains_key(&id.0)))
                    .count(),
                false => keys.len(),
            };
            frequencies[c] = frequencies[c].min(count as u64);
            keyed.push(keys);
        }
        let partial = partial.await.map_err(|e| tx.fail(e))?;
        if sessions.is_empty() || (keyed.iter().any(Vec::is_empty) && partial.is_empty()) {
            return Ok(Vec::new());
        }
        // The items holding every term, from the rarest term's list, narrowed by each other list
        // that is whole; in the user's sessions (the owner in the index key already says whose;
        // the record check makes sure). When even the rarest list is cut (its term is on more
        // items than a list holds), the list is the term's oldest keys (the index orders a
        // term's items by key): the newest items of the user's sessions are checked instead.
        sort::sort_by_key(&mut keyed, Vec::len);
        let rarest_cut = keyed
            .first()
            .is_some_and(|l| l.len() as u32 >= LIST_AT_MOST);
        let candidates = match rarest_cut {
            true => None,
            false => Some(indexed_candidates(keyed, partial, &sessions)),
        };
        // The candidates are checked against every clause the newest first, READ_AT_MOST at a
        // time, until that many meet them all (or CHECK_AT_MOST were read): a clause that
        // narrowed no list (its term on more items than a list holds, or not looked up) leaves
        // candidates that do not.
        let mut matched = Vec::new();
        let mut at = 0;
        loop {
            let rows = match &candidates {
                None => newest_rows_of(tx, &mut spans).await?,
                Some(all) => {
                    let batch = &all[at..all.len().min(at + READ_AT_MOST)];
                    at += batch.len();
                    read_rows(tx, batch).await?
                }
            };
            for (session_id, branch, row) in rows {
                let Some(item) = item_of(&row) else {
                    continue;
                };
                // A tool call's text is searched where its row was indexed with it; a
                // message's text is searched either way.
                let text = item_search_text(&item, has_terms(&row));
                let Some(m) = match_text(&text, clauses) else {
                    continue;
                };
                matched.push((session_id, branch, row, item, text, m));
            }
            let more = candidates
                .as_ref()
                .is_some_and(|all| at < all.len().min(CHECK_AT_MOST));
            if !more || matched.len() >= READ_AT_MOST {
                break;
            }
        }
        matched.truncate(READ_AT_MOST);
        let total_length: usize = matched.iter().map(|m| m.5.length).sum();
        let average = total_length as f64 / matched.len().max(1) as f64;
        let mut hits: Vec<Hit> = matched
            .into_iter()
            .map(|(session_id, branch, row, item, text, m)| Hit {
                score: score(&m, &frequencies, documents.max(1), average),
                snippet: snippet(&text, m.first),
                session_id,
                branch,
                seq: seq_of(&row).unwrap_or(0),
                turn: turn_of(&row).unwrap_or(0),
                role: match js::get(&item, "role") {
                    Ok(r) if r.is_string() => r,
                    _ => js::get(&item, "type").unwrap_or(JsValue::NULL),
                },
                created_at: js::get(&row, "createdAt")
                    .ok()
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0),
            })
            .collect();
        // Best first; equal scores, newest first (then by row, so the order is total).
        sort::sort_by(&mut hits, |a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.created_at.total_cmp(&a.created_at))
                .then(b.seq.cmp(&a.seq))
                .then_with(|| a.session_id.cmp(&b.session_id))
                .then_with(|| a.branch.cmp(&b.branch))
        });
        hits.truncate(limit);
        Ok(hits)
    })
    .await
}

/// A row to check against the query: its session, its branch (`None`: `main`), the row.
type Found = (String, Option<String>, JsValue);

/// The candidates the index lists give (`keyed`, rarest term first), by key: the rarest
/// term's items in the user's `sessions`, narrowed by each other list that is whole, and the
/// user's items indexed in `partial` only, the newest first (by their session's last change,
/// then position).
fn indexed_candidates(
    keyed: Vec<Vec<JsValue>>,
    partial: Vec<JsValue>,
    sessions: &HashMap<String, f64>,
) -> Vec<(RowId, JsValue)> {
    let mut lists = keyed.into_iter();
    let mut candidates: Vec<(RowId, JsValue)> = Vec::new();
    // Each of the rarest term's items once (a prefix lists an item once per term of it that it
    // starts), then each partial one not among those the other lists left.
    let take = |keys: Vec<JsValue>, candidates: &mut Vec<(RowId, JsValue)>| {
        let mut seen: HashSet<RowId> = candidates.iter().map(|(id, _)| id.clone()).collect();
        for key in keys {
            if let Some(id) = row_id(&key).filter(|id| sessions.contains_key(&id.0)) {
                if seen.insert(id.clone()) {
                    candidates.push((id, key));
                }
            }
        }
    };
    take(lists.next().unwrap_or_default(), &mut candidates);
    for list in lists {
        if list.len() as u32 >= LIST_AT_MOST || candidates.is_empty() {
            break;
        }
        let holding: HashSet<RowId> = list.iter().filter_map(row_id).collect();
        candidates.retain(|(id, _)| holding.contains(id));
    }
    take(partial, &mut candidates);
    // Rows are unique, so the order is total and needs no stable sort.
    sort::sort_by(&mut candidates, |(a, _), (b, _)| {
        let when = |id: &RowId| sessions.get(&id.0).copied().unwrap_or(0.0);
        when(b)
            .total_cmp(&when(a))
            .then(b.2.cmp(&a.2))
            .then_with(|| a.0.cmp(&b.0))
            .then_with(|| a.1.cmp(&b.1))
    });
    candidates
}

/// The rows of `candidates`, asked all at once.
async fn read_rows(tx: &Tx, candidates: &[(RowId, JsValue)]) -> Result<Vec<Found>> {
    let messages = tx.store(MESSAGES_STORE)?;
    let mut pending = Vec::with_capacity(candidates.len());
    for ((session_id, branch, _), key) in candidates {
        let request = messages.get(key.clone()).map_err(|e| tx.fail(e))?;
        pending.push((session_id.clone(), branch.clone(), listening(request)));
    }
    let mut rows = Vec::with_capacity(pending.len());
    for (session_id, branch, row) in pending {
        if let Some(row) = row.await.map_err(|e| tx.fail(e))? {
            rows.push((session_id, branch, row));
        }
    }
    Ok(rows)
}

/// Where a session's or a branch's own rows are: `(updatedAt, id, branch (None: main), first,
/// next)`.
type Span = (f64, String, Option<String>, f64, f64);

/// The newest [`READ_AT_MOST`] items (by when they were written) of the sessions `spans` names
/// (each branch's own rows, `main`'s and the others'): read a span at a time, those of the most
/// recently written sessions first, until no session left can hold a newer item.
async fn newest_rows_of(tx: &Tx, spans: &mut [Span]) -> Result<Vec<Found>> {
    sort::sort_by(spans, |a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| a.2.cmp(&b.2))
    });
    let messages = tx.store(MESSAGES_STORE)?;
    let created = |row: &JsValue| {
        js::get(row, "createdAt")
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    };
    // Newest first; items written by one call share a time, so the position decides (and the
    // session, so the order is total).
    type Newest = (f64, u64, String, Option<String>, JsValue);
    let newest_first = |a: &Newest, b: &Newest| {
        b.0.total_cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then_with(|| a.2.cmp(&b.2))
            .then_with(|| a.3.cmp(&b.3))
    };
    let mut rows: Vec<Newest> = Vec::new();
    for (updated, id, branch, first, next) in spans.iter() {
        if rows.len() >= READ_AT_MOST {
            sort::sort_by(&mut rows, newest_first);
            rows.truncate(READ_AT_MOST);
            // A session last written before the oldest item kept holds no newer one.
            if rows.last().is_some_and(|r| *updated < r.0) {
                break;
            }
        }
        let n = (next - first).min(READ_AT_MOST as f64);
        if n < 1.0 {
            continue;
        }
        let storage = super::branches::storage(id, branch.as_deref().unwrap_or(MAIN));
        let range = stored_between(&storage, next - n, next - 1.0)?;
        let got = messages
            .get_all(Some(range), None)
            .map_err(|e| tx.fail(e))?
            .reply()
            .await
            .map_err(|e| tx.fail(e))?;
        for row in got {
            let seq = seq_of(&row).unwrap_or(0);
            rows.push((created(&row), seq, id.clone(), branch.clone(), row));
        }
    }
    sort::sort_by(&mut rows, newest_first);
    rows.truncate(READ_AT_MOST);
    Ok(rows
        .into_iter()
        .map(|(_, _, id, branch, row)| (id, branch, row))
        .collect())
}

/// Rows indexed per transaction while building the index: small enough that a chunk never
/// holds the page for long.
const CHUNK: u32 = 100;

/// The name of the meta record of the index build.
const BUILD: &str = "searchIndex";

/// The version of the terms [`crate::core::search::tokenize`] makes, kept in the build's meta
/// record: a database whose rows were indexed by an older tokeniser (1: before İ, ẞ, Latin
/// Extended-B capitals, Greek accents and final sigma were folded; 2: before Thai, Lao, Khmer
/// and Burmese were indexed as pairs of characters; 3: before the last character of a run of
/// those scripts or of Chinese, Japanese and Korean was a term of its own, and the punctuation
/// of other scripts ended a word; 4: before full-width Latin letters and digits were folded to
/// ASCII, and Arabic and Hebrew lost their vowel marks and Arabic its letter variants; 5: before
/// every Latin letter Unicode decomposes was folded, the other capitals of Latin Extended-B
/// lower-cased, half-width katakana full-width, and a hosted tool call's output a tool term; 6:
/// before an item cut at its first 2,000 terms was marked so ([`PARTIAL`]), and Japanese 々 〻
/// 〆 〇 were characters of their runs; 7: before full-width signs, enclosed CJK letters and
/// units and U+FEFF ended a word, and a middle dot between characters of a run and a variation
/// selector kept the run going; 8: before a kana's combining sound mark was one character with
/// it, and a combining mark after a character of a run kept the run going; 9: before Hangul jamo
/// and Cyrillic letters with their marks were the letters NFC writes, a middle dot after what
/// belongs to a run's character (a half-width sound mark, a variation selector, a mark) kept its
/// run going, and Cyrillic capitals past U+04C0 and Greek's archaic ones were lower-cased)
/// has every
/// row looked at again, by the same chunked build, from its next open; a row is written again
/// only where its terms change. A change of the tokeniser comes with a schema version (version 6
/// for terms 4, 7 for terms 5, 8 for terms 6, 9 for terms 7, 10 for terms 8, 11 for terms 9, 12 for terms 10), whose upgrade closes the
/// connections of tabs still running the version before: they would go on writing rows with
/// their own terms, which this build does not look at again once done.
const TERMS_VERSION: u32 = 10;

/// The meta record of a build with nothing to do, written when a database is created: every row
/// of a database created with the terms index in its schema is written with its terms, so the
/// build that starts at each open must not look at them (it would read the whole history, a
/// chunk per read-write transaction, while the page writes and reads it).
pub fn nothing_to_build() -> JsValue {
    build_record(true, JsValue::NULL, 0, false)
}

/// The meta record of the index build: whether it is done, the key of the last row it looked at
/// (`null`: none yet), how many rows it has looked at, the version of the terms it makes, and
/// whether it indexes every row again (`all`; else only the rows without terms).
fn build_record(done: bool, after: JsValue, indexed: u64, all: bool) -> JsValue {
    object(&[
        ("name", BUILD.into()),
        ("done", done.into()),
        ("after", after),
        ("indexed", (indexed as f64).into()),
        ("terms", TERMS_VERSION.into()),
        ("all", all.into()),
    ])
    .into()
}

/// The version of the terms a build's meta record says the rows hold (1: written before it
/// said).
fn terms_version(state: &JsValue) -> u32 {
    js::get(state, "terms")
        .ok()
        .and_then(|v| v.as_f64())
        .map_or(1, |v| v as u32)
}

/// How far the index build is: rows looked at, and rows the database held when it started.
#[derive(Clone, Copy, Default)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

/// Builds the index before a search. Where storage is full the build cannot write, and the
/// search answers from the index as it stands (rows not indexed yet are not found): a user out
/// of space searches for the chats to delete.
pub async fn build_before_search(conn: &Connection, on_progress: &dyn Fn(Progress)) -> Result<()> {
    match build(conn, on_progress).await {
        Err(e) if e.code == SessionErrorCode::StorageFull => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Indexes the rows written before the search index existed (they have no `terms`), a chunk of
/// [`CHUNK`] rows per transaction, in key order, from where the last chunk ended (kept in the
/// meta store, so a build cut short by a reload goes on from there at the next open). Between
/// chunks it yields to the page. `on_progress` hears after each chunk. Resolves once every row
/// is indexed; at once when that was done before.
pub async fn build(conn: &Connection, on_progress: &dyn Fn(Progress)) -> Result<Progress> {
    let mut progress = Progress::default();
    // The build starts at every open and is almost always finished: that is one read of the meta
    // store, in a read-only transaction that does not hold up the page's reads and writes of the
    // sessions and messages as a read-write one over them would.
    if is_built(conn).await? {
        return Ok(progress);
    }
    // Session id to owner, sorted by id (of the chunk under way): a list, since a hash map would
    // bring its code into the main module (which starts this build when it opens an older
    // database) for this one use.
    let mut owners: Vec<(String, JsValue)> = Vec::new();
    let owner_at = |owners: &[(String, JsValue)], id: &str| {
        owners.binary_search_by(|(known, _)| known.as_str().cmp(id))
    };
    let mut first = true;
    // The `done` a listener heard last.
    let mut heard = None;
    // The connection that replaced `conn` where a chunk found it closed by the browser (a lost
    // storage process) and opened the database again.
    let mut replaced: Option<Rc<Connection>> = None;
    loop {
        // A connection closed for another tab's upgrade or deletion of the database is not
        // opened again for the build (that would make a deleted database again): the next open
        // goes on with it. One a call opened again goes on with that connection.
        let current = replaced.as_deref().unwrap_or(conn);
        if current.is_stale() {
            replaced = Some(current.replacement().ok_or_else(|| {
                SessionError::new(
                    SessionErrorCode::StorageError,
                    "building the search index: the database was closed for another tab",
                )
            })?);
        }
        let conn = replaced.as_deref().unwrap_or(conn);
        let mut indexed_now = 0;
        let tx = Tx::begin(
            conn,
            &[SESSIONS_STORE, MESSAGES_STORE, META_STORE],
            TransactionMode::ReadWrite,
            "building the search index".to_string(),
        )
        .await?;
        let finished = tx
            .run(async |tx| {
                let mut state = tx.get(META_STORE, BUILD).await?;
                if is_done(state.as_ref()) {
                    return Ok(true);
                }
                // Terms of an older tokeniser: every row again, from the first. (Those of a newer
                // one are that version's to build: `is_done` said so above.)
                if state
                    .as_ref()
                    .is_some_and(|s| terms_version(s) < TERMS_VERSION)
                {
                    state = Some(build_record(false, JsValue::NULL, 0, true));
                }
                let all = state
                    .as_ref()
                    .is_some_and(|s| js::get(s, "all").is_ok_and(|a| a.is_truthy()));
                let after = state
                    .as_ref()
                    .and_then(|s| js::get(s, "after").ok())
                    .filter(|a| !a.is_undefined() && !a.is_null());
                let messages = tx.store(MESSAGES_STORE)?;
                if first {
                    progress.total = messages
                        .count(None)
                        .map_err(|e| tx.fail(e))?
                        .reply()
                        .await
                        .map_err(|e| tx.fail(e))? as u64;
                }
                // As stored, every chunk: another build (another tab's, or the other module's
                // of this page) may have indexed chunks since this one's last.
                progress.done = state
                    .as_ref()
                    .and_then(|s| js::get(s, "indexed").ok())
                    .and_then(|n| n.as_f64())
                    .unwrap_or(0.0) as u64;
                let range = match &after {
                    Some(key) => Some(
                        KeyRange::lower_bound(key, Some(true))
                            .map(Query::from)
                            .map_err(|e| tx.fail(e))?,
                    ),
                    None => None,
                };
                let rows = messages
                    .get_all(range, Some(CHUNK))
                    .map_err(|e| tx.fail(e))?
                    .reply()
                    .await
                    .map_err(|e| tx.fail(e))?;
                // The owners of the sessions this chunk holds, read in its transaction: a
                // session deleted and made again under another owner between two chunks has its
                // rows indexed under the owner it has then.
                owners.clear();
                let mut unknown = Vec::new();
                for row in &rows {
                    let key = js::get(row, "sessionId").unwrap_or(JsValue::UNDEFINED);
                    let id = key
                        .as_string()
                        .or_else(|| js::get(&key, "0").ok().and_then(|v| v.as_string()))
                        .unwrap_or_default();
                    if owner_at(&owners, &id).is_err() && !unknown.iter().any(|(u, _)| u == &id) {
                        let request = tx
                            .store(SESSIONS_STORE)?
                            .get(JsValue::from_str(&id))
                            .map_err(|e| tx.fail(e))?;
                        unknown.push((id, listening(request)));
                    }
                }
                for (id, request) in unknown {
                    let record = request.await.map_err(|e| tx.fail(e))?;
                    // A row of no session (left by hand) is indexed under nobody's name.
                    let owner = record
                        .map(|r| js::get(&r, "userId").unwrap_or(JsValue::NULL))
                        .unwrap_or(JsValue::UNDEFINED);
                    if let Err(at) = owner_at(&owners, &id) {
                        owners.insert(at, (id, owner));
                    }
                }
                let terms_key = JsValue::from_str("terms");
                for row in &rows {
                    if !all && !Reflect::get(row, &terms_key).is_ok_and(|t| t.is_undefined()) {
                        continue;
                    }
                    let key = js::get(row, "sessionId").unwrap_or(JsValue::UNDEFINED);
                    let id = key
                        .as_string()
                        .or_else(|| js::get(&key, "0").ok().and_then(|v| v.as_string()))
                        .unwrap_or_default();
                    let owner = owner_at(&owners, &id).ok().map(|at| &owners[at].1);
                    let stored = Reflect::get(row, &terms_key).unwrap_or_default();
                    let terms: JsValue = match owner {
                        Some(owner) if !owner.is_undefined() => {
                            let item = item_of(row).unwrap_or(JsValue::UNDEFINED);
                            let owner = owner.as_string();
                            let plain = Indexer::new(owner.as_deref(), false).terms(&item);
                            // Looking at every row again, most keep the terms they have (text
                            // without the characters the new tokeniser treats otherwise): they
                            // are not written.
                            if !all {
                                plain
                            } else if same_terms(&stored, &plain) {
                                continue;
                            } else {
                                // A row written by an object that indexes tool calls holds the
                                // terms of their arguments and outputs too (it has terms where
                                // its message text has none, whichever tokeniser made them): it
                                // keeps them.
                                if !indexed_with_tools(row) {
                                    plain
                                } else {
                                    let tools = Indexer::new(owner.as_deref(), true).terms(&item);
                                    if same_terms(&stored, &tools) {
                                        continue;
                                    }
                                    tools
                                }
                            }
                        }
                        _ => {
                            let none: JsValue = Array::new().into();
                            if all && same_terms(&stored, &none) {
                                continue;
                            }
                            none
                        }
                    };
                    let _ = Reflect::set(row, &terms_key, &terms);
                    messages.put(row, None).map_err(|e| tx.fail(e))?;
                }
                progress.done += rows.len() as u64;
                indexed_now = rows.len();
                let done = (rows.len() as u32) < CHUNK;
                let last = rows.last().map(|row| {
                    let key: JsValue = Array::of2(
                        &js::get(row, "sessionId").unwrap_or(JsValue::UNDEFINED),
                        &js::get(row, "seq").unwrap_or(JsValue::UNDEFINED),
                    )
                    .into();
                    key
                });
                let record = build_record(
                    done,
                    last.or(after).unwrap_or(JsValue::NULL),
                    progress.done,
                    all,
                );
                tx.store(META_STORE)?
                    .put(&record, None)
                    .map_err(|e| tx.fail(e))?;
                Ok(done)
            })
            .await?;
        // Every chunk that indexed rows is heard (one build of fewer rows than a chunk too).
        if indexed_now > 0 {
            progress.total = progress.total.max(progress.done);
            on_progress(progress);
            heard = Some(progress.done);
        }
        if finished {
            // Another build did the last chunks: a listener that heard this one's hears the end.
            if heard.is_some_and(|done| done < progress.total) {
                progress.done = progress.total;
                on_progress(progress);
            }
            return Ok(progress);
        }
        first = false;
        yield_to_page().await;
    }
}

/// Whether a row's stored `terms` are `terms`, the same strings in the same order.
fn same_terms(stored: &JsValue, terms: &JsValue) -> bool {
    let (Some(stored), Some(terms)) = (stored.dyn_ref::<Array>(), terms.dyn_ref::<Array>()) else {
        return false;
    };
    stored.length() == terms.length() && (0..terms.length()).all(|i| stored.get(i) == terms.get(i))
}

/// Whether the meta store records the build as done.
pub(super) async fn is_built(conn: &Connection) -> Result<bool> {
    let tx = Tx::begin(
        conn,
        &[META_STORE],
        TransactionMode::ReadOnly,
        "reading the search index's state".to_string(),
    )
    .await?;
    tx.run(async |tx| Ok(is_done(tx.get(META_STORE, BUILD).await?.as_ref())))
        .await
}

/// Whether the build's meta record (if any) says it is done, with terms of this tokeniser, or
/// that a newer version of the library, in another tab, builds (or built) its terms: going back
/// to this version's terms would undo its work, and the two tabs would undo each other's, chunk
/// after chunk, for as long as both are open.
fn is_done(state: Option<&JsValue>) -> bool {
    state.is_some_and(|s| {
        let version = terms_version(s);
        version > TERMS_VERSION
            || (version == TERMS_VERSION && js::get(s, "done").is_ok_and(|d| d.is_truthy()))
    })
}

/// Resolves in a later task, so the page handles its events between two chunks.
async fn yield_to_page() {
    js::after(0.0).await;
}
