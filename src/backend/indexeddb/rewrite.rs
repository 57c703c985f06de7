//! The operations that rewrite a history rather than append to it, each one transaction:
//! `applyHistoryTransaction` (with the operation log), `applyHistoryMutations`,
//! `replaceHistory` / `replaceHistoryWithCompaction` (with the archive), and reading the archive.

use idb::TransactionMode;
use js_sys::Array;
use wasm_bindgen::JsValue;

use crate::backend::args::ReplaceOptions;
use crate::backend::canonical::{canonical, forms, replaced};
use crate::backend::js::{self, object};
use crate::backend::metadata::give_default_title;
use crate::backend::transaction::{no_turn_for_usage, FunctionCallReplacement, TakenTransaction};
use crate::core::branch::MAIN;
use crate::core::error::Result;
use crate::core::repair::{plan_repair, StoredRow};
use crate::core::schema::{
    ARCHIVE_STORE, BY_OPERATION_INDEX, MESSAGES_STORE, OPERATIONS_STORE, SESSIONS_STORE,
    USAGE_STORE,
};
use crate::core::session::{resized, starts_turn, SessionRecord};
use crate::core::transaction::{
    check_whole_history, operations_to_forget, replace_function_call, HistoryTransaction, Outcome,
};

use super::branches::add_usage_in;
use super::open::Connection;
use super::ops::{finish, newest_rows, read_record, rows_in, write_record, Target};
use super::record::{
    all_of_session, indexed_with_tools, item_of, items_of, message_key, messages_between,
    rows_size, turn_of, Indexer, RowWriter, StoredRecord,
};
use super::tx::{listening, Begin, Tx};

/// The read-write transaction of a rewrite: the session's record, items, log and archive.
fn begin<'a>(conn: &'a Connection, t: &Target<'_>, what: &str) -> Begin<'a> {
    t.begin_over(
        conn,
        what,
        TransactionMode::ReadWrite,
        &[
            SESSIONS_STORE,
            MESSAGES_STORE,
            OPERATIONS_STORE,
            ARCHIVE_STORE,
            USAGE_STORE,
        ],
    )
}

/// Writes message rows for `items` at `placements`, under `storage` (a session id, or a
/// branch's `[sessionId, branchId]`). `was`: for the first items, the stored row each stands for
/// (written again as it was: it keeps its creation time), or `undefined`; the others are made
/// `now`.
pub(super) fn put_rows(
    tx: &Tx,
    storage: JsValue,
    items: &[(JsValue, bool)],
    placements: &[crate::core::session::Placement],
    (now, was): (f64, &[JsValue]),
    index: Indexer,
) -> Result<()> {
    let messages = tx.store(MESSAGES_STORE)?;
    let mut rows = RowWriter::at(storage, now, index);
    let tools = rows.index.tools;
    for (i, ((item, _), place)) in items.iter().zip(placements).enumerate() {
        let was = was.get(i).filter(|row| row.is_object());
        // (Indexed as it was, with its tool call's text or not, as a mutation's kept rows are.)
        rows.index.tools = was.map_or(tools, indexed_with_tools);
        let row = match was.and_then(|row| js::get(row, "createdAt").ok()) {
            Some(created) if !created.is_undefined() => rows.row_created(place, item, &created),
            _ => rows.row(place, item),
        };
        let row: JsValue = row.map_err(|e| tx.thrown(&e))?.into();
        messages.put(&row, None).map_err(|e| tx.fail(e))?;
    }
    Ok(())
}

/// The rows of `rows` each item of a rewrite stands for (see [`put_rows`]), by [`replaced`].
pub(super) fn stood_for(rows: &[JsValue], stands: &[Option<usize>]) -> Vec<JsValue> {
    stands
        .iter()
        .map(|i| i.and_then(|i| rows.get(i)).cloned().unwrap_or_default())
        .collect()
}

/// The rows of `rows` (a history's newest, read for a history transaction that removes `remove`
/// of them) its first items stand for (see [`put_rows`]): the removed ones where it begins with
/// them (a run saving again), none where it rewrites them.
pub(super) fn repeated(rows: &[JsValue], remove: u64, rewrites: bool) -> &[JsValue] {
    match rewrites {
        true => &[],
        false => &rows[rows.len().saturating_sub(remove as usize)..],
    }
}

/// [`put_rows`] on the session's main history (stored under the session id), indexed for the
/// record's owner.
fn put_main_rows(
    tx: &Tx,
    t: &Target<'_>,
    record: &SessionRecord,
    items: &[(JsValue, bool)],
    placements: &[crate::core::session::Placement],
    times: (f64, &[JsValue]),
) -> Result<()> {
    put_rows(
        tx,
        t.session_id.into(),
        items,
        placements,
        times,
        t.indexer(record.user_id.as_deref()),
    )
}

/// The session record, or a new one for a session that has none yet; refused for another user.
async fn record_for(tx: &Tx, t: &Target<'_>, now: f64) -> Result<StoredRecord> {
    let record = match read_record(tx, t.session_id).await? {
        Some(r) => r,
        None => StoredRecord::new(t.session_id, t.user_id, now),
    };
    record.check_owner(t.user_id)?;
    Ok(record)
}

/// `applyHistoryTransaction`: checks the operation log and the suffix, then writes the items,
/// the log entry and the record, all in one transaction; nothing when the operation was applied
/// before with the same transaction (`false`).
pub async fn apply_transaction(
    conn: &Connection,
    t: &Target<'_>,
    taken: TakenTransaction,
    now: f64,
) -> Result<bool> {
    let TakenTransaction {
        transaction,
        items,
        suffix_user_messages,
        usage,
    } = taken;
    let suffix = transaction.expected_suffix.len() as u64;
    let tx = begin(conn, t, "applyHistoryTransaction").await?;
    tx.run(async |tx| {
        // Sent together: the operation's log entry, the newest rows (the suffix) where
        // getAllRecords exists, and the record.
        let key = Array::of2(
            &JsValue::from_str(t.session_id),
            &JsValue::from_str(&transaction.operation_id),
        );
        let applied = listening(
            tx.index(OPERATIONS_STORE, BY_OPERATION_INDEX)?
                .get(JsValue::from(key))
                .map_err(|e| tx.fail(e))?,
        );
        let sent = match suffix {
            0 => None,
            n => newest_rows(tx, t.session_id, n)?,
        };
        let record = record_for(tx, t, now).await;
        let sent = finish(sent).await;
        let mut record = record?;
        let applied = applied.await.map_err(|e| tx.fail(e))?;
        let applied_digest = applied
            .as_ref()
            .and_then(|entry| js::get(entry, "digest").ok())
            .and_then(|d| d.as_string());
        if super::branches::has_branches(&record.stored) {
            // Other branches may show the suffix: the general path keeps their copies.
            let l = super::branches::Loaded::from(record)?;
            let taken = TakenTransaction {
                transaction,
                items,
                suffix_user_messages,
                usage,
            };
            let main = crate::core::branch::MAIN;
            return super::branches::transaction_in(tx, t, l, main, taken, applied_digest, now)
                .await;
        }
        let rows = match suffix {
            0 => Vec::new(),
            n => {
                let range = record.newest_range(crate::core::history::Limit::Newest(n));
                rows_in(tx, &record, range, sent).await?
            }
        };
        let stored_suffix: Vec<Option<String>> = rows
            .iter()
            .map(|row| item_of(row).and_then(|item| canonical(&item).ok()))
            .collect();
        let remove = match transaction.decide(
            applied_digest.as_deref(),
            record.item_count,
            &stored_suffix,
        )? {
            Outcome::AlreadyApplied => return Ok(false),
            Outcome::Apply { remove } => remove as u64,
        };
        // Checked once it is known to apply: a replay is a no-op, usage or not.
        if usage.is_some() && transaction.leaves_empty(items.len(), record.item_count) {
            return Err(no_turn_for_usage(t.session_id));
        }
        // Turns count user messages without gaps: the turn before the removed items is the last
        // turn less the user messages among them (which equal the expected suffix).
        let base_turn = if remove == record.item_count {
            0
        } else {
            record.last_turn.saturating_sub(suffix_user_messages)
        };
        let old_next = record.next_seq;
        let old_last = record.last_turn;
        let starts: Vec<bool> = items.iter().map(|(_, s)| *s).collect();
        let placements = record.replace_suffix(remove, &starts, base_turn, now)?;
        // Turns it took away, where it starts none (the newest turns removed: an EncryptedSession
        // pops so), take their usage with them, as a pop's do: the turns that take their numbers
        // next have only their own. (One that starts turns renumbers what it keeps: left.)
        if !starts.contains(&true) {
            super::branches::forget_usage_after(tx, t.session_id, MAIN, base_turn, old_last)?;
        }
        record.summary_head |= super::ops::summary_at_head(&items, &placements);
        if remove > 0 && transaction.rewrites {
            record.rewrote();
        }
        // The removed rows were just read: their sizes count exactly (a run's saves replace the
        // newest item again and again, and an average would shrink the estimate each time).
        record.exchange_bytes(
            rows_size(rows.iter().rev().take(remove as usize)),
            js::items_size(items.iter().map(|(item, _)| item)),
        );
        give_default_title(&record.stored, &items, base_turn, record.archived_count);
        // The replacement takes the freed keys: put overwrites those, and only the keys it does
        // not reach are deleted (rewriting a key in place is cheaper for IndexedDB than a delete
        // and an insert).
        let reused = (items.len() as u64).min(remove);
        if reused < remove {
            let range = messages_between(
                t.session_id,
                (old_next - remove + reused) as f64,
                (old_next - 1) as f64,
            )?;
            tx.store(MESSAGES_STORE)?
                .delete(range)
                .map_err(|e| tx.fail(e))?;
        }
        // A replacement that begins with the items it removes (a run saving again) writes them
        // again as they were, made when they were.
        let was = repeated(&rows, remove, transaction.rewrites);
        put_main_rows(tx, t, &record, &items, &placements, (now, was))?;
        log_operation(tx, &mut record, &transaction, now)?;
        if let Some(usage) = &usage {
            add_usage_in(tx, t.session_id, MAIN, record.last_turn, usage, now).await?;
        }
        write_record(tx, &record).map(|()| true)
    })
    .await
}

/// Records an applied history transaction in the session's operation log (one per session,
/// shared by its branches), forgetting the oldest entries past the log's limit.
pub(super) fn log_operation(
    tx: &Tx,
    record: &mut SessionRecord,
    transaction: &HistoryTransaction,
    now: f64,
) -> Result<()> {
    let op_seq = record.record_operation();
    let operations = tx.store(OPERATIONS_STORE)?;
    let entry = object(&[
        ("sessionId", record.id.as_str().into()),
        ("opSeq", (op_seq as f64).into()),
        ("operationId", transaction.operation_id.as_str().into()),
        ("digest", transaction.digest.as_str().into()),
        ("appliedAt", now.into()),
    ]);
    operations.put(&entry, None).map_err(|e| tx.fail(e))?;
    let forget = operations_to_forget(record.next_op_seq);
    if forget > 0 {
        operations
            .delete(messages_between(&record.id, 0.0, (forget - 1) as f64)?)
            .map_err(|e| tx.fail(e))?;
    }
    Ok(())
}

/// Every row of the session, oldest first, checked against its record.
async fn all_rows(tx: &Tx, record: &SessionRecord) -> Result<Vec<JsValue>> {
    let range = record.newest_range(crate::core::history::Limit::All);
    rows_in(tx, record, range, None).await
}

/// Replaces the whole history by `items` in one transaction. With `options.archive`, the
/// replaced items move to the session's archive in the same transaction, so nothing is lost;
/// with `options.expected`, only if the history still holds exactly those items.
pub async fn replace_history(
    conn: &Connection,
    t: &Target<'_>,
    items: Vec<(JsValue, bool)>,
    options: ReplaceOptions,
    now: f64,
) -> Result<()> {
    let tx = begin(conn, t, "replaceHistory").await?;
    tx.run(async |tx| {
        let mut record = record_for(tx, t, now).await?;
        if super::branches::has_branches(&record.stored) {
            let l = super::branches::Loaded::from(record)?;
            return super::branches::replace_in(tx, t, l, MAIN, items, options, now).await;
        }
        let rows = match (options.archive || options.expected.is_some()) && record.item_count > 0 {
            true => all_rows(tx, &record).await?,
            false => Vec::new(),
        };
        let old = items_of(&rows, t.session_id)?;
        let stored = forms(&old);
        if let Some(expected) = &options.expected {
            check_whole_history(t.session_id, expected, &stored)?;
        }
        let (marks, stands) = replaced(&stored, &items, options.archive);
        // How many items are archived, and their size (they keep their bytes).
        let (archived, archived_bytes) = match options.archive {
            true => archive_replaced(
                tx,
                &t.session_id.into(),
                (&old, &marks),
                record.archived_count,
                now,
            )?,
            false => (0, 0),
        };
        tx.store(MESSAGES_STORE)?
            .delete(all_of_session(t.session_id)?)
            .map_err(|e| tx.fail(e))?;
        let starts: Vec<bool> = items.iter().map(|(_, s)| *s).collect();
        // The new items' turns count from 1.
        let base = crate::core::branch::replaced_turns(record.last_turn, starts.iter().copied());
        super::branches::renumber_usage_in(tx, t.session_id, MAIN, base, now).await?;
        // The archived items keep their bytes; the ones dropped take theirs away: exactly where
        // they were read, else at the session's average row size.
        let (before, kept) = (record.stored_rows(), record.archived_count + archived);
        let read = old.len() as u64 == record.item_count;
        let added = js::items_size(items.iter().map(|(item, _)| item));
        // Written into an empty history, they are its first items: the title they give, as an
        // add's.
        if record.item_count == 0 {
            give_default_title(&record.stored, &items, 0, record.archived_count);
        }
        let placements = record.replace_all(&starts, archived, now)?;
        match read {
            // (The items archived keep their bytes; the others are written again.)
            true => {
                record.exchange_bytes(js::items_size(&old).saturating_sub(archived_bytes), added)
            }
            false => record.bytes = resized(record.bytes, before, kept, added),
        }
        let was = stood_for(&rows, &stands);
        put_main_rows(tx, t, &record, &items, &placements, (now, &was))?;
        write_record(tx, &record)
    })
    .await
}

/// Puts the items of `old` marked replaced (see [`replaced`]) into the archive under `key` (a
/// branch's storage), numbered from `position`: how many, and their size.
pub(super) fn archive_replaced(
    tx: &Tx,
    key: &JsValue,
    (old, marks): (&[JsValue], &[bool]),
    position: u64,
    now: f64,
) -> Result<(u64, u64)> {
    let moved: Vec<&JsValue> = old
        .iter()
        .zip(marks)
        .filter(|(_, r)| **r)
        .map(|(i, _)| i)
        .collect();
    let store = tx.store(ARCHIVE_STORE)?;
    for (i, item) in moved.iter().enumerate() {
        let entry = object(&[
            ("sessionId", key.clone()),
            ("position", ((position + i as u64) as f64).into()),
            ("archivedAt", now.into()),
            ("item", (*item).clone()),
        ]);
        store.put(&entry, None).map_err(|e| tx.fail(e))?;
    }
    Ok((moved.len() as u64, js::items_size(moved.iter().copied())))
}

/// Applies `replace_function_call` mutations to a history's items: the first `function_call`
/// with the id is replaced, later ones become `None` (removed). Returns which were replaced.
pub(super) fn mutate(
    items: &mut [Option<JsValue>],
    mutations: Vec<FunctionCallReplacement>,
) -> Vec<bool> {
    let mut replaced = vec![false; items.len()];
    let text =
        |item: &JsValue, key: &'static str| js::get(item, key).ok().and_then(|v| v.as_string());
    for mutation in mutations {
        let call_ids: Vec<Option<String>> = items
            .iter()
            .map(|item| {
                let item = item.as_ref()?;
                (text(item, "type").as_deref() == Some("function_call"))
                    .then(|| text(item, "callId"))
                    .flatten()
            })
            .collect();
        let ids: Vec<Option<&str>> = call_ids.iter().map(Option::as_deref).collect();
        let Some((first, later)) = replace_function_call(&ids, &mutation.call_id) else {
            continue;
        };
        items[first] = Some(mutation.replacement);
        replaced[first] = true;
        for i in later {
            items[i] = None;
        }
    }
    replaced
}

/// `applyHistoryMutations`: each `replace_function_call` replaces the first `function_call`
/// with its `callId` and removes later ones with the same id; the rows after a removed one move
/// down so the sequence numbers stay without gaps. One transaction for all of them. Whether it
/// changed anything (not where no call of the history has their ids).
pub async fn apply_mutations(
    conn: &Connection,
    t: &Target<'_>,
    mutations: Vec<FunctionCallReplacement>,
    now: f64,
) -> Result<bool> {
    if mutations.is_empty() {
        return Ok(false);
    }
    let tx = begin(conn, t, "applyHistoryMutations").await?;
    tx.run(async |tx| {
        let Some(mut record) = read_record(tx, t.session_id).await? else {
            return Ok(false);
        };
        record.check_owner(t.user_id)?;
        if super::branches::has_branches(&record.stored) {
            let l = super::branches::Loaded::from(record)?;
            return super::branches::mutations_in(tx, t, l, MAIN, mutations, now).await;
        }
        let rows = all_rows(tx, &record).await?;
        let mut items: Vec<Option<JsValue>> = items_of(&rows, t.session_id)?
            .into_iter()
            .map(Some)
            .collect();
        let replaced = mutate(&mut items, mutations);
        if !replaced.contains(&true) {
            return Ok(false);
        }
        let text =
            |item: &JsValue, key: &'static str| js::get(item, key).ok().and_then(|v| v.as_string());
        let stored: Vec<StoredRow> = rows
            .iter()
            .zip(&items)
            .enumerate()
            .map(|(i, (row, item))| StoredRow {
                seq: record.first_seq + i as u64,
                turn: turn_of(row),
                has_item: item.is_some(),
                starts_turn: item.as_ref().is_some_and(|item| {
                    starts_turn(text(item, "role").as_deref(), text(item, "type").as_deref())
                }),
            })
            .collect();
        let plan = plan_repair(&stored);
        let messages = tx.store(MESSAGES_STORE)?;
        for &i in &plan.drop {
            messages
                .delete(message_key(t.session_id, stored[i].seq))
                .map_err(|e| tx.fail(e))?;
        }
        let mut writer = RowWriter::new(t.session_id, now, t.indexer(record.user_id.as_deref()));
        let tools = writer.index.tools;
        let mut placed: Vec<Option<crate::core::session::Placement>> = vec![None; items.len()];
        for &(i, place) in &plan.moves {
            placed[i] = Some(place);
        }
        for (i, item) in items.iter().enumerate() {
            let Some(item) = item else { continue };
            let moved = placed[i];
            if moved.is_none() && !replaced[i] {
                continue;
            }
            let place = moved.unwrap_or(crate::core::session::Placement {
                seq: stored[i].seq,
                turn: stored[i].turn.unwrap_or(0),
            });
            if place.seq != stored[i].seq {
                messages
                    .delete(message_key(t.session_id, stored[i].seq))
                    .map_err(|e| tx.fail(e))?;
            }
            let created = js::get(&rows[i], "createdAt").unwrap_or_else(|_| now.into());
            // A replacement is indexed as this object indexes; a row that only moves keeps how
            // it was indexed (with its tool call's text or not), as a repair keeps it.
            writer.index.tools = match replaced[i] {
                true => tools,
                false => indexed_with_tools(&rows[i]),
            };
            let row = writer
                .row_created(&place, item, &created)
                .map_err(|e| tx.thrown(&e))?;
            messages.put(&row, None).map_err(|e| tx.fail(e))?;
        }
        // The replacements are new items; the items they replace and those removed were read,
        // and count exactly; the rest keep their bytes.
        let added: Vec<&JsValue> = items
            .iter()
            .zip(&replaced)
            .filter_map(|(item, &r)| item.as_ref().filter(|_| r))
            .collect();
        let removed = rows
            .iter()
            .zip(items.iter().zip(&replaced))
            .filter(|(_, (item, &r))| r || item.is_none())
            .map(|(row, _)| row);
        record.exchange_bytes(rows_size(removed), js::items_size(added));
        record.item_count = plan.kept;
        record.first_seq = plan.first_seq;
        record.next_seq = plan.next_seq;
        record.last_turn = plan.last_turn;
        record.updated_at = now;
        record.rewrote();
        write_record(tx, &record)?;
        Ok(true)
    })
    .await
}
