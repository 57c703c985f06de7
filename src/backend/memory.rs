//! The memory backend: the core's [`MemoryHistory`] holding JS values. Items are copied with the
//! structured clone on the way in and on the way out, as IndexedDB would, so both backends
//! behave the same to a caller.

use std::cell::{Cell, RefCell, RefMut};

use js_sys::{Array, Object};
use wasm_bindgen::JsValue;

use crate::core::branch::{
    self, adopt, contains_text, free_name, from_turn_after_pop, made_from, RowFacts, Usage, MAIN,
};
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::history::{Limit, SessionSettings};
use crate::core::memory::{MemoryHistory, OperationLog};
use crate::core::transaction::{check_whole_history, Outcome};

use super::args::ReplaceOptions;
use super::branch_js::{
    folded, invalid_turn, item_facts, session_usage_js, tool_usage_js, turn_usage_js, turns_js,
    From,
};
use super::canonical::{canonical, forms, replaced};
use super::js::{self, clone_value, error_text, now};
use super::metadata::{give_default_title, info, is_summary, Applied, Changes};
use super::session::{SessionCore, SessionState};
use super::transaction::{no_turn_for_usage, FunctionCallReplacement, TakenTransaction};

/// One branch of a memory session: its own copy of the item handles it shows (copying handles
/// costs little in memory; the IndexedDB backend shares stored rows instead).
struct MemBranch {
    id: String,
    parent: Option<String>,
    from_turn: u64,
    created_at: f64,
    history: MemoryHistory<JsValue>,
}

pub struct MemorySessionState {
    core: SessionCore,
    /// `main` first, then the others in the order they were created.
    branches: RefCell<Vec<MemBranch>>,
    /// The branch this object is on (always one of `branches`: the current one cannot be deleted).
    current: RefCell<String>,
    /// Model usage per branch and turn.
    usage: RefCell<Vec<(String, u64, Usage)>>,
    /// The history transactions applied, on any branch (one log per session, as stored ones
    /// keep it).
    operations: RefCell<OperationLog>,
    /// The metadata (title, summary, topics, state), on an object as a stored record holds it.
    metadata: JsValue,
    /// Whether `update()` was called: the session exists then, as a stored one gets its record.
    updated: Cell<bool>,
}

fn copy_out(item: &JsValue) -> Result<JsValue> {
    clone_value(item).map_err(|e| {
        SessionError::new(
            SessionErrorCode::StorageError,
            format!("copying a stored item: {}", error_text(&e)),
        )
    })
}

impl MemorySessionState {
    pub fn new(session_id: String, settings: SessionSettings) -> Self {
        let main = MemBranch {
            id: MAIN.to_string(),
            parent: None,
            from_turn: 0,
            created_at: now(),
            history: MemoryHistory::new(&session_id, now()),
        };
        MemorySessionState {
            branches: RefCell::new(vec![main]),
            current: RefCell::new(MAIN.to_string()),
            usage: RefCell::new(Vec::new()),
            operations: RefCell::new(OperationLog::default()),
            core: SessionCore::new(session_id, settings),
            metadata: Object::new().into(),
            updated: Cell::new(false),
        }
    }

    fn not_found(&self, id: &str) -> SessionError {
        SessionError::new(
            SessionErrorCode::BranchNotFound,
            format!(
                "session \"{}\" has no branch \"{id}\"",
                self.core.session_id
            ),
        )
    }

    fn index_of(&self, id: &str) -> Result<usize> {
        self.branches
            .borrow()
            .iter()
            .position(|b| b.id == id)
            .ok_or_else(|| self.not_found(id))
    }

    /// The branches made from branch `id`, made from `parent` at turn `from_turn` at most from
    /// now on (see `branch::adopt`).
    fn adopt(&self, id: &str, parent: Option<String>, from_turn: u64) {
        let mut branches = self.branches.borrow_mut();
        adopt(
            branches
                .iter_mut()
                .map(|b| (&mut b.parent, &mut b.from_turn)),
            id,
            parent,
            from_turn,
        );
    }

    /// Deletes the usage of branch `branch`: of its turn `turn`, or all of it.
    fn forget_usage(&self, branch: &str, turn: Option<u64>) {
        self.usage
            .borrow_mut()
            .retain(|(b, t, _)| b != branch || turn.is_some_and(|n| *t != n));
    }

    /// Adds `usage` to what turn `turn` of this object's branch has used.
    fn add_usage(&self, turn: u64, usage: Usage) {
        let branch = self.current.borrow().clone();
        self.add_usage_to(&branch, turn, usage);
    }

    /// Adds `usage` to what turn `turn` of branch `branch` has used.
    fn add_usage_to(&self, branch: &str, turn: u64, usage: Usage) {
        let mut all = self.usage.borrow_mut();
        match all.iter_mut().find(|(b, t, _)| b == branch && *t == turn) {
            Some((_, _, sum)) => sum.add(&usage),
            None => all.push((branch.to_string(), turn, usage)),
        }
    }

    /// The branch that still shows a turn popped away from `current` whose first item, `item`,
    /// was at `at`: one made from `current` before the pop, holding that very item in that
    /// place. (The branch `current` was made from may hold it too, a turn it inherited: that
    /// one's turn of that number is its own.)
    fn heir(&self, current: &str, at: usize, item: &JsValue) -> Option<String> {
        let branches = self.branches.borrow();
        let parent_of = |id: &str| {
            branches
                .iter()
                .find(|b| b.id == id)
                .and_then(|b| b.parent.as_deref())
        };
        branches
            .iter()
            .find(|b| {
                made_from(b.parent.as_deref(), current, parent_of, branches.len())
                    && b.history.entries().get(at).is_some_and(|e| e.item == *item)
            })
            .map(|b| b.id.clone())
    }

    /// The usage of turn `turn` of branch `branch`, popped away there: given to `heir` (a branch
    /// that still shows the turn), or forgotten.
    fn hand_usage(&self, branch: &str, turn: u64, heir: Option<&str>) {
        let kept = self
            .usage
            .borrow()
            .iter()
            .find(|(b, t, _)| b == branch && *t == turn)
            .map(|(_, _, u)| *u);
        self.forget_usage(branch, Some(turn));
        if let (Some(heir), Some(usage)) = (heir, kept) {
            self.add_usage_to(heir, turn, usage);
        }
    }

    /// Whether the session was written to, on any branch (a pop or a clear of everything
    /// written is a write too, and a history transaction that changed nothing, whose operation
    /// is remembered), as a stored session has its record from its first write on.
    fn written(&self) -> bool {
        self.updated.get()
            || !self.operations.borrow().is_empty()
            || self.branches.borrow().iter().any(|b| {
                let r = b.history.record();
                r.item_count > 0 || r.next_seq > 0 || r.rewrites > 0
            })
    }

    /// The history of the branch this object is on.
    /// Before a write: a session never written to is made now, as a stored session's record is
    /// at its first write. (Where the write then writes nothing, the session stays unwritten and
    /// shows no times.)
    fn begin_write(&self) {
        if self.written() {
            return;
        }
        let t = now();
        for b in self.branches.borrow_mut().iter_mut() {
            b.created_at = t;
            b.history.first_written(t);
        }
    }

    fn history(&self) -> RefMut<'_, MemoryHistory<JsValue>> {
        let current = self.current.borrow();
        RefMut::map(self.branches.borrow_mut(), |b| {
            let i = b.iter().position(|b| b.id == *current).unwrap_or(0);
            &mut b[i].history
        })
    }

    /// What the turn listings read of a branch's items (this object's without `branch`).
    fn facts(&self, branch: Option<String>) -> Result<Vec<RowFacts>> {
        let id = branch.unwrap_or_else(|| self.current.borrow().clone());
        let i = self.index_of(&id)?;
        let branches = self.branches.borrow();
        Ok(branches[i]
            .history
            .entries()
            .iter()
            .map(|e| item_facts(&e.item, e.turn, e.created_at))
            .collect())
    }
}

impl SessionState for MemorySessionState {
    fn core(&self) -> &SessionCore {
        &self.core
    }

    async fn get_items(&self, limit: Limit) -> Result<Vec<JsValue>> {
        let history = self.history();
        history.items(limit).map(|e| copy_out(&e.item)).collect()
    }

    async fn recent_turns(&self, turns: Limit) -> Result<Vec<JsValue>> {
        let history = self.history();
        let heading = history.heading(turns, is_summary);
        heading
            .iter()
            .chain(history.recent_turns(turns))
            .map(|e| copy_out(&e.item))
            .collect()
    }

    async fn info(&self) -> Result<JsValue> {
        let written = self.written();
        let history = self.history();
        let record = history.record();
        // Each read gets its own copy, as from IndexedDB.
        let metadata = copy_out(&self.metadata)?;
        Ok(info(
            &self.core.session_id,
            None,
            written.then_some(record),
            &metadata,
        ))
    }

    async fn update(&self, changes: Changes) -> Result<Applied> {
        // As a stored session: an update that sets nothing writes nothing. The session's time
        // (main's) holds on every branch, as a stored session's, and so does each branch's own
        // (what its `getInfo` reports: read on one branch, written on another).
        let written = self.written();
        let holds = self
            .branches
            .borrow()
            .iter()
            .any(|b| changes.created_at_holds(written.then(|| b.history.record().created_at)));
        if !holds {
            return Ok(Applied::Nothing);
        }
        // (Applied to the metadata itself: nothing of it is written unless something is set.)
        let applied = changes.apply(&self.metadata);
        if applied != Applied::Nothing {
            self.begin_write();
            self.updated.set(true);
        }
        Ok(applied)
    }

    async fn add_items(&self, items: Vec<(JsValue, bool)>) -> Result<()> {
        self.begin_write();
        let mut history = self.history();
        let record = history.record();
        give_default_title(
            &self.metadata,
            &items,
            record.last_turn,
            record.archived_count,
        );
        history.add(items, now())
    }

    async fn pop_item(&self) -> Result<Option<JsValue>> {
        let current = self.current.borrow().clone();
        let (popped, gone, at) = {
            let mut branches = self.branches.borrow_mut();
            // As `history` finds it (`main` is always there).
            let i = branches.iter().position(|b| b.id == current).unwrap_or(0);
            let b = &mut branches[i];
            let turn = b.history.record().last_turn;
            let popped = b.history.pop(now());
            let record = b.history.record();
            let (last_turn, empty) = (record.last_turn, record.item_count == 0);
            // Popped into the turns it shares with its parent, it shares fewer (a pop of an empty
            // branch pops nothing, and changes nothing).
            if popped.is_some() {
                b.from_turn = from_turn_after_pop(b.from_turn, last_turn, empty);
            }
            let at = record.item_count as usize;
            (popped, (last_turn < turn).then_some(turn), at)
        };
        // A turn popped away takes its usage with it (the turn that takes its number next has
        // only its own), unless a branch made from this one before the turn was popped still
        // shows it (it holds the very item popped, in the same place): it goes there. The branch
        // this one was made from may hold that item too (a turn it inherited): that one's turn
        // of that number is its own.
        if let (Some(turn), Some(item)) = (gone, &popped) {
            let heir = self.heir(&current, at, item);
            self.hand_usage(&current, turn, heir.as_deref());
        }
        // Copied as reads are: a branch made from this one holds the same value.
        popped.as_ref().map(copy_out).transpose()
    }

    async fn clear(&self) -> Result<bool> {
        // A session never written to has nothing to clear, and stays unwritten (no times, no
        // rewrite), as a stored session without a record does.
        if !self.written() {
            return Ok(false);
        }
        self.history().clear(now());
        let current = self.current.borrow().clone();
        // Its turns from now on are not theirs: they name a turn of it no more, and it names none
        // of its parent's (see `Tree::clear`).
        self.adopt(&current, Some(current.clone()), 0);
        if let Some(b) = self
            .branches
            .borrow_mut()
            .iter_mut()
            .find(|b| b.id == current)
        {
            b.from_turn = 0;
        }
        self.forget_usage(&current, None);
        // The log goes with the last branch's history, as a stored session's does.
        if current == MAIN && self.branches.borrow().len() == 1 {
            self.operations.borrow_mut().clear();
        }
        Ok(true)
    }

    /// A closed memory session lets go of its items, on every branch. The branch it was on stays
    /// its `currentBranch`, as an `IndexedDbSession`'s does (no call reads through it any more).
    async fn close(&self) -> Result<()> {
        let on = self.current.replace(MAIN.to_string());
        self.branches.borrow_mut().truncate(1);
        self.usage.borrow_mut().clear();
        let cleared = self.clear().await;
        *self.current.borrow_mut() = on;
        cleared.map(|_| ())
    }

    async fn apply_transaction(&self, taken: TakenTransaction) -> Result<bool> {
        let TakenTransaction {
            transaction,
            items,
            usage,
            ..
        } = taken;
        self.begin_write();
        let mut history = self.history();
        let stored: Vec<Option<String>> = history
            .newest(transaction.expected_suffix.len())
            .iter()
            .map(|e| canonical(&e.item).ok())
            .collect();
        // A replay is a no-op, usage or not (and a conflict or a mismatch is told as one): the
        // usage is checked once the transaction is known to apply, as a stored session checks it.
        let mut log = self.operations.borrow_mut();
        let item_count = history.record().item_count;
        let outcome =
            transaction.decide(log.applied(&transaction.operation_id), item_count, &stored)?;
        if usage.is_some()
            && matches!(outcome, Outcome::Apply { .. })
            && transaction.leaves_empty(items.len(), item_count)
        {
            return Err(no_turn_for_usage(&self.core.session_id));
        }
        let title_from = items.clone();
        let archived = history.record().archived_count;
        // The turn of the items the transaction keeps before its replacement.
        let entries = history.entries();
        let kept_turn = entries
            .len()
            .checked_sub(transaction.expected_suffix.len() + 1)
            .map_or(0, |last_kept| entries[last_kept].turn);
        let old_last = history.record().last_turn;
        let starts_turns = items.iter().any(|(_, starts)| *starts);
        // The first item of each turn among those it may take away, and where it was: a turn
        // taken away hands its usage to a branch that still shows that item there.
        let first = entries
            .len()
            .saturating_sub(transaction.expected_suffix.len());
        let mut firsts: Vec<(u64, usize, JsValue)> = Vec::new();
        for (at, e) in entries.iter().enumerate().skip(first) {
            if e.turn > kept_turn && firsts.last().is_none_or(|(t, _, _)| *t != e.turn) {
                firsts.push((e.turn, at, e.item.clone()));
            }
        }
        let applied = history.apply_transaction(&mut log, &transaction, items, &stored, now())?;
        drop(log);
        // (A replay gives no title: one cleared since stays cleared.)
        if applied {
            give_default_title(&self.metadata, &title_from, kept_turn, archived);
        }
        let turn = history.record().last_turn;
        let empty = history.record().item_count == 0;
        drop(history);
        // Turns it took away, where it starts none (the newest turns removed: an EncryptedSession
        // pops so), take their usage with them, as a pop's do, unless a branch still shows them
        // (it goes there); and popped into the turns it shares with its parent, the branch
        // shares fewer. (One that starts turns renumbers what it keeps: left.)
        let removed = transaction.expected_suffix.len() as u64;
        if applied && !starts_turns && removed > 0 {
            let current = self.current.borrow().clone();
            for gone in turn + 1..=old_last {
                let heir = firsts
                    .iter()
                    .find(|(t, _, _)| *t == gone)
                    .and_then(|(_, at, item)| self.heir(&current, *at, item));
                self.hand_usage(&current, gone, heir.as_deref());
            }
            if let Some(b) = self
                .branches
                .borrow_mut()
                .iter_mut()
                .find(|b| b.id == current)
            {
                // (All it showed replaced: none of its parent's items any more.)
                b.from_turn =
                    from_turn_after_pop(b.from_turn, turn, empty || removed == item_count);
            }
        }
        if let (true, Some(usage)) = (applied, usage) {
            self.add_usage(turn, usage);
        }
        Ok(applied)
    }

    async fn apply_mutations(&self, mutations: Vec<FunctionCallReplacement>) -> Result<bool> {
        let call_id_of = |item: &JsValue| {
            let text = |key: &'static str| js::get(item, key).ok().and_then(|v| v.as_string());
            (text("type").as_deref() == Some("function_call"))
                .then(|| text("callId"))
                .flatten()
        };
        let mutations = mutations.into_iter().map(|m| (m.call_id, m.replacement));
        Ok(self
            .history()
            .replace_function_calls(mutations, call_id_of, now()))
    }

    async fn replace_history(
        &self,
        items: Vec<(JsValue, bool)>,
        options: ReplaceOptions,
    ) -> Result<()> {
        self.begin_write();
        let mut history = self.history();
        // The items it replaces, read once for the check and the archive.
        let old: Vec<JsValue> = match options.expected.is_some() || options.archive {
            true => history
                .newest(usize::MAX)
                .iter()
                .map(|e| e.item.clone())
                .collect(),
            false => Vec::new(),
        };
        let stored = forms(&old);
        if let Some(expected) = &options.expected {
            check_whole_history(&self.core.session_id, expected, &stored)?;
        }
        // The new items' turns count from 1.
        let base = crate::core::branch::replaced_turns(
            history.record().last_turn,
            items.iter().map(|(_, s)| *s),
        );
        // Which old items are archived, and which each new item stands for (it keeps its time).
        let (archive, stands) = replaced(&stored, &items, options.archive);
        history.replace_all(items, (&archive, &stands), now())?;
        drop(history);
        if base > 0 {
            let branch = self.current.borrow().clone();
            for b in self.branches.borrow_mut().iter_mut() {
                if b.parent.as_deref() == Some(branch.as_str()) {
                    b.from_turn = b.from_turn.saturating_sub(base);
                }
                if b.id == branch {
                    b.from_turn = crate::core::branch::from_turn_after_replace(b.from_turn, base);
                }
            }
            let mut all = self.usage.borrow_mut();
            let mine: Vec<(u64, Usage)> = all
                .iter()
                .filter(|(b, _, _)| *b == branch)
                .map(|(_, t, u)| (*t, *u))
                .collect();
            all.retain(|(b, _, _)| *b != branch);
            let renumbered = crate::core::branch::renumbered_usage(&mine, base);
            all.extend(renumbered.into_iter().map(|(t, u)| (branch.clone(), t, u)));
        }
        Ok(())
    }

    async fn archived_items(&self, limit: Option<u64>, skip: u64) -> Result<Vec<JsValue>> {
        let history = self.history();
        history.archived(limit, skip).iter().map(copy_out).collect()
    }

    fn branch(&self) -> String {
        self.current.borrow().clone()
    }

    async fn create_branch(&self, pick: From, name: Option<String>) -> Result<String> {
        let history = self.history();
        let turn = match &pick {
            From::Turn(t) => *t,
            From::Text(query) => {
                let query = folded(query);
                history
                    .entries()
                    .iter()
                    .map(|e| item_facts(&e.item, e.turn, e.created_at))
                    .find(|f| {
                        f.starts_turn && f.turn > 0 && contains_text(&folded(&f.text), &query)
                    })
                    .map(|f| f.turn)
                    .ok_or_else(|| {
                        invalid_turn(format!(
                            "no user turn of branch \"{}\" of session \"{}\" contains \"{}\"",
                            self.current.borrow(),
                            self.core.session_id,
                            match &pick {
                                From::Text(q) => q.as_str(),
                                From::Turn(_) => "",
                            }
                        ))
                    })?
            }
        };
        // (One time for the branch's record and its listing: `getInfo` and `listBranches` agree.)
        let t = now();
        let fork = history.fork_before_turn(turn, t).ok_or_else(|| {
            let last = history.record().last_turn;
            branch::no_turn(&self.core.session_id, &self.current.borrow(), turn, last)
        })?;
        drop(history);
        let taken = |n: &str| self.branches.borrow().iter().any(|b| b.id == n);
        let id = match name {
            Some(n) if taken(&n) => {
                return Err(SessionError::new(
                    SessionErrorCode::BranchExists,
                    format!(
                        "session \"{}\" already has a branch \"{n}\"",
                        self.core.session_id
                    ),
                ))
            }
            Some(n) => n,
            None => free_name(taken, turn),
        };
        let parent = self.current.borrow().clone();
        self.branches.borrow_mut().push(MemBranch {
            id: id.clone(),
            parent: Some(parent),
            from_turn: turn,
            created_at: t,
            history: fork,
        });
        *self.current.borrow_mut() = id.clone();
        Ok(id)
    }

    async fn switch_branch(&self, id: String) -> Result<bool> {
        self.index_of(&id)?;
        *self.current.borrow_mut() = id;
        // (As a stored session's: one never written to, on its `main` branch, changes nothing.)
        Ok(self.written())
    }

    async fn list_branches(&self) -> Result<JsValue> {
        // `main` of a session never written to has no time yet, as in a stored one.
        let written = self.written();
        let current = self.current.borrow();
        Ok(self
            .branches
            .borrow()
            .iter()
            .map(|b| {
                JsValue::from(js::object(&[
                    ("branchId", b.id.as_str().into()),
                    (
                        "parent",
                        b.parent.as_deref().map_or(JsValue::NULL, JsValue::from_str),
                    ),
                    (
                        "fromTurn",
                        match b.id == MAIN {
                            true => JsValue::NULL,
                            false => (b.from_turn as f64).into(),
                        },
                    ),
                    ("itemCount", (b.history.record().item_count as f64).into()),
                    (
                        "createdAt",
                        match written {
                            true => b.created_at.into(),
                            false => JsValue::NULL,
                        },
                    ),
                    ("current", (b.id == *current).into()),
                ]))
            })
            .collect::<Array>()
            .into())
    }

    async fn delete_branch(&self, id: String) -> Result<()> {
        if id == MAIN || id == *self.current.borrow() {
            return Err(SessionError::new(
                SessionErrorCode::BranchInUse,
                format!(
                    "branch \"{id}\" of session \"{}\" cannot be deleted: {}",
                    self.core.session_id,
                    if id == MAIN {
                        "it is the main branch"
                    } else {
                        "this session object is on it; switch to another branch first"
                    }
                ),
            ));
        }
        let i = self.index_of(&id)?;
        let removed = self.branches.borrow_mut().remove(i);
        self.adopt(&id, removed.parent, removed.from_turn);
        self.forget_usage(&id, None);
        Ok(())
    }

    async fn turns(&self, branch: Option<String>, query: Option<String>) -> Result<JsValue> {
        Ok(turns_js(&self.facts(branch)?, query.as_deref()))
    }

    async fn tool_usage(&self, branch: Option<String>) -> Result<JsValue> {
        Ok(tool_usage_js(&self.facts(branch)?))
    }

    async fn store_usage(&self, usage: Usage) -> Result<()> {
        let record = self.history().record().clone();
        if record.item_count == 0 {
            // Named as IndexedDB names it: the session where it was never written (it has no
            // record there), else the branch.
            let id = self.core.session_id.as_str();
            let branch = self.current.borrow().clone();
            return Err(invalid_turn(match self.written() {
                false => format!("session \"{id}\" has no turn to store usage against: it holds no items"),
                true => format!("branch \"{branch}\" of session \"{id}\" has no turn to store usage against: it shows no items"),
            }));
        }
        self.add_usage(record.last_turn, usage);
        Ok(())
    }

    async fn session_usage(&self, branch: Option<String>) -> Result<JsValue> {
        if let Some(id) = &branch {
            self.index_of(id)?;
        }
        let usages: Vec<Usage> = self
            .usage
            .borrow()
            .iter()
            .filter(|(b, _, _)| branch.as_ref().is_none_or(|id| id == b))
            .map(|(_, _, u)| *u)
            .collect();
        Ok(session_usage_js(&usages))
    }

    async fn turn_usage(&self, branch: Option<String>, turn: Option<u64>) -> Result<JsValue> {
        if let Some(id) = &branch {
            self.index_of(id)?;
        }
        let current = branch.unwrap_or_else(|| self.current.borrow().clone());
        let mut mine: Vec<(u64, Usage)> = self
            .usage
            .borrow()
            .iter()
            .filter(|(b, _, _)| *b == *current)
            .map(|(_, t, u)| (*t, *u))
            .collect();
        crate::core::sort::sort_by_key(&mut mine, |(t, _)| *t); // one entry per turn of a branch
        Ok(match turn {
            Some(n) => mine
                .iter()
                .find(|(t, _)| *t == n)
                .map_or(JsValue::NULL, |(t, u)| turn_usage_js(*t, u)),
            None => mine
                .iter()
                .map(|(t, u)| turn_usage_js(*t, u))
                .collect::<Array>()
                .into(),
        })
    }
}
