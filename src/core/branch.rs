//! Conversation branches, as data: which stored rows each branch shows, and what creating,
//! writing to, popping, clearing or deleting a branch changes. No copy of a history is made to
//! branch it: a branch shows the rows its base branch held before its fork point, then its own.
//!
//! The model. Every branch, `main` included, owns the rows `first..next` of its own storage (for
//! `main` the session's own key, for another branch `[sessionId, branchId]`). A branch with a
//! `base` also shows, before its own rows, every row of the base branch's view with a sequence
//! number below its `first`. Sequence numbers are shared along a chain, so a branch's view is
//! the gapless range `start..next`, split into segments by storage, newest first:
//!
//! ```text
//! main:   [0 ............ 40)                  own rows 0..40
//! b:      [0 .. 12) of main, [12 ...... 30)    base main, first 12
//! c:      [0 .. 12) of main, [12 .. 20) of b, [20 .. 25)
//! ```
//!
//! Rows a branch shows are never deleted from under it: when a branch gives up rows a child
//! inherits (a pop, a rewrite, a clear, a deletion), those rows are first copied into the child's
//! own storage, below its own rows (its `first` moves down), so every other branch sees exactly
//! what it saw before. Creating a branch costs nothing in the length of the history; reading the
//! newest `n` items reads `n` rows, with one request per segment, and a chain is at most
//! [`MAX_DEPTH`] segments deep: a fork past it starts with a copy of its inherited rows.

use super::error::{Result, SessionError, SessionErrorCode};
use super::history::Limit;
use super::session::{place, Placement, SessionRecord, MAX_SAFE_INTEGER};

/// The id of the branch every session starts with.
pub const MAIN: &str = "main";

/// The most segments a branch's view spans: a branch created deeper starts with its own copy of
/// what it inherits.
pub const MAX_DEPTH: usize = 16;

/// The longest branch name, in characters.
pub const MAX_NAME: usize = 200;

/// One branch of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    pub id: String,
    /// The branch it was created from (`None` for `main`), for listings; once that one is
    /// deleted, that one's parent (see [`adopt`]).
    pub parent: Option<String>,
    /// The turn it was created to replace (0 for `main`).
    pub from_turn: u64,
    /// Milliseconds since the Unix epoch.
    pub created_at: f64,
    /// Whose view it continues below `first` (`None`: it shows its own rows only).
    pub base: Option<String>,
    /// Its own rows are `first..next` of its own storage.
    pub first: u64,
    pub next: u64,
    /// The turn of the newest item it shows (0 when it shows none).
    pub last_turn: u64,
    /// The turn of the newest item it inherits (meaningful with a `base`).
    pub fork_turn: u64,
    /// How many items compaction moved from it to its archive.
    pub archived: u64,
    /// Whether its oldest own rows are copies of a compacted branch's (a release or a flatten
    /// gave it them), whose head may be a compaction summary: `archived` says so of its own
    /// compaction only.
    pub summary_head: bool,
}

impl Branch {
    fn own_len(&self) -> u64 {
        self.next - self.first
    }

    /// Whether the head of its own rows (turn 0) may hold a compaction summary.
    pub fn compacted_head(&self) -> bool {
        self.archived > 0 || self.summary_head
    }
}

/// Part of a branch's view: the rows `lo..hi` of branch `owner`'s storage. `turn_hi` bounds the
/// turns of those rows, when they are inherited (the owner's storage goes on past `hi`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub owner: String,
    pub lo: u64,
    pub hi: u64,
    pub turn_hi: Option<u64>,
}

/// Rows `lo..hi` of `from`'s storage, to be written with the same sequence numbers and turns
/// into `to`'s storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub from: String,
    pub to: String,
    pub lo: u64,
    pub hi: u64,
}

/// What a write that gives up the newest rows of a branch must do in its storage: copy rows
/// down to the branches that inherit them, then delete `delete` (`lo..hi` of the branch's own
/// storage).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Release {
    pub copies: Vec<Copy>,
    pub delete: Option<(u64, u64)>,
}

/// The branches of one session: `main` first (its counters are the session record's), then the
/// others in the order they were created.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub branches: Vec<Branch>,
}

pub fn not_found(session_id: &str, id: &str) -> SessionError {
    SessionError::new(
        SessionErrorCode::BranchNotFound,
        format!("session \"{session_id}\" has no branch \"{id}\""),
    )
}

/// A branch asked for a turn it does not have (`last_turn` its newest).
pub fn no_turn(session_id: &str, id: &str, turn: u64, last_turn: u64) -> SessionError {
    let has = match last_turn {
        0 => "it holds no user message".to_string(),
        n => format!("its turns are 1 to {n}"),
    };
    SessionError::new(
        SessionErrorCode::InvalidTurn,
        format!("branch \"{id}\" of session \"{session_id}\" has no turn {turn} ({has})"),
    )
}

fn damaged(session_id: &str, what: String) -> SessionError {
    SessionError::new(
        SessionErrorCode::CorruptSession,
        format!("session \"{session_id}\" is damaged: {what}"),
    )
}

/// Checks a branch name given by the caller: a non-blank string of at most [`MAX_NAME`]
/// characters.
pub fn validate_name(name: &str) -> Result<()> {
    if name.trim().is_empty() || name.chars().count() > MAX_NAME {
        return Err(SessionError::new(
            SessionErrorCode::InvalidOptions,
            format!(
                "a branch name must be a non-blank string of at most {MAX_NAME} characters, got \
                 \"{name}\""
            ),
        ));
    }
    Ok(())
}

impl Tree {
    /// The tree of a session record and its other branches (as stored, in creation order).
    pub fn new(record: &SessionRecord, others: Vec<Branch>) -> Result<Tree> {
        let main = Branch {
            id: MAIN.to_string(),
            parent: None,
            from_turn: 0,
            created_at: record.created_at,
            base: None,
            first: record.first_seq,
            next: record.next_seq,
            last_turn: record.last_turn,
            fork_turn: 0,
            archived: record.archived_count,
            summary_head: record.summary_head,
        };
        let mut branches = vec![main];
        branches.extend(others);
        let tree = Tree { branches };
        tree.check(&record.id)?;
        Ok(tree)
    }

    /// Refuses a stored tree that is not one: duplicate ids, a branch of `main`'s id, a base that
    /// is not there or forms a cycle, own rows that run backwards, a fork point a base does not
    /// hold.
    fn check(&self, session_id: &str) -> Result<()> {
        for (i, b) in self.branches.iter().enumerate() {
            if self.branches[..i].iter().any(|o| o.id == b.id) {
                return Err(damaged(
                    session_id,
                    format!("branch \"{}\" is stored twice", b.id),
                ));
            }
        }
        for b in &self.branches {
            if b.first > b.next || b.next > MAX_SAFE_INTEGER {
                return Err(damaged(
                    session_id,
                    format!("branch \"{}\" has its rows {}..{}", b.id, b.first, b.next),
                ));
            }
            if let Some(base) = &b.base {
                let parent = self.find(base).ok_or_else(|| {
                    damaged(
                        session_id,
                        format!("branch \"{}\" continues a missing branch \"{base}\"", b.id),
                    )
                })?;
                if b.first <= parent.first || b.first > parent.next {
                    return Err(damaged(
                        session_id,
                        format!(
                            "branch \"{}\" forks at {} outside the rows {}..{} of \"{base}\"",
                            b.id, b.first, parent.first, parent.next
                        ),
                    ));
                }
            }
        }
        for b in &self.branches {
            // A chain longer than the tree is a cycle.
            let mut steps = 0;
            let mut at = b;
            while let Some(base) = &at.base {
                steps += 1;
                if steps > self.branches.len() {
                    return Err(damaged(
                        session_id,
                        format!("branch \"{}\" is its own base", b.id),
                    ));
                }
                at = self.find(base).unwrap_or(at);
            }
        }
        Ok(())
    }

    pub fn find(&self, id: &str) -> Option<&Branch> {
        self.branches.iter().find(|b| b.id == id)
    }

    pub fn index_of(&self, session_id: &str, id: &str) -> Result<usize> {
        self.branches
            .iter()
            .position(|b| b.id == id)
            .ok_or_else(|| not_found(session_id, id))
    }

    pub fn get(&self, session_id: &str, id: &str) -> Result<&Branch> {
        self.find(id).ok_or_else(|| not_found(session_id, id))
    }

    /// The branches other than `main`, as stored.
    pub fn others(&self) -> &[Branch] {
        &self.branches[1..]
    }

    /// Whether the session has only its main branch.
    pub fn is_single(&self) -> bool {
        self.branches.len() == 1
    }

    /// The segments of `id`'s view, newest first (empty ones left out).
    pub fn segments(&self, session_id: &str, id: &str) -> Result<Vec<Segment>> {
        let mut out = Vec::new();
        let mut at = self.get(session_id, id)?;
        let (mut hi, mut turn_hi) = (at.next, None);
        loop {
            if at.first < hi {
                out.push(Segment {
                    owner: at.id.clone(),
                    lo: at.first,
                    hi,
                    turn_hi,
                });
            }
            let Some(base) = &at.base else { break };
            hi = at.first;
            turn_hi = Some(at.fork_turn);
            at = self.get(session_id, base)?;
        }
        Ok(out)
    }

    /// The sequence number `id`'s view starts at.
    pub fn start(&self, session_id: &str, id: &str) -> Result<u64> {
        Ok(self.root(session_id, id)?.first)
    }

    /// The branch that owns the oldest rows of `id`'s view.
    fn root(&self, session_id: &str, id: &str) -> Result<&Branch> {
        let mut at = self.get(session_id, id)?;
        while let Some(base) = &at.base {
            at = self.get(session_id, base)?;
        }
        Ok(at)
    }

    /// How many items `id` shows.
    pub fn item_count(&self, session_id: &str, id: &str) -> Result<u64> {
        Ok(self.get(session_id, id)?.next - self.start(session_id, id)?)
    }

    /// The rows `getItems(limit)` on `id` reads, as segments oldest first.
    pub fn newest(&self, session_id: &str, id: &str, limit: Limit) -> Result<Vec<Segment>> {
        let next = self.get(session_id, id)?.next;
        let count = next - self.start(session_id, id)?;
        let (from, _) = limit.window(count);
        let lo = next - count + from;
        Ok(self.within(self.segments(session_id, id)?, lo))
    }

    /// The parts of `segments` (newest first) at or after `lo`, oldest first.
    pub fn within(&self, segments: Vec<Segment>, lo: u64) -> Vec<Segment> {
        let mut out: Vec<Segment> = segments
            .into_iter()
            .filter(|s| s.hi > lo)
            .map(|mut s| {
                s.lo = s.lo.max(lo);
                s
            })
            .collect();
        out.reverse();
        out
    }

    /// Creates branch `id` from `from`'s view, showing its rows before `at` (the first item of
    /// turn `turn`, which it replaces). Refused when the name is taken. Returns the copies a
    /// chain deeper than [`MAX_DEPTH`] needs (none otherwise).
    pub fn fork(
        &mut self,
        session_id: &str,
        from: &str,
        id: &str,
        at: u64,
        turn: u64,
        now: f64,
    ) -> Result<Vec<Copy>> {
        if self.find(id).is_some() {
            return Err(SessionError::new(
                SessionErrorCode::BranchExists,
                format!("session \"{session_id}\" already has a branch \"{id}\""),
            ));
        }
        let segments = self.segments(session_id, from)?;
        let start = self.start(session_id, from)?;
        let base = segments
            .iter()
            .find(|s| s.lo < at && at <= s.hi)
            .map(|s| s.owner.clone());
        let inherited = base.is_some() && at > start;
        let mut branch = Branch {
            id: id.to_string(),
            parent: Some(from.to_string()),
            from_turn: turn,
            created_at: now,
            base: if inherited { base } else { None },
            first: at,
            next: at,
            last_turn: if inherited { turn.saturating_sub(1) } else { 0 },
            fork_turn: if inherited { turn.saturating_sub(1) } else { 0 },
            archived: 0,
            summary_head: false,
        };
        let mut copies = Vec::new();
        let depth = segments.iter().filter(|s| s.lo < at).count();
        if inherited && depth >= MAX_DEPTH {
            // Flatten: the new branch starts with its own copy of everything it would inherit.
            for s in self.within(segments, start) {
                if s.lo < at {
                    copies.push(Copy {
                        from: s.owner,
                        to: id.to_string(),
                        lo: s.lo,
                        hi: s.hi.min(at),
                    });
                }
            }
            branch.base = None;
            branch.first = start;
            branch.summary_head = self.root(session_id, from)?.compacted_head();
        }
        self.branches.push(branch);
        Ok(copies)
    }

    /// A name for a branch created from turn `turn` that no branch has: `turn-<n>`, then
    /// `turn-<n>-2` and so on.
    pub fn free_name(&self, turn: u64) -> String {
        free_name(|n| self.find(n).is_some(), turn)
    }

    /// Where the usage of a turn of `id` goes that a pop is about to take away, `seq` being the
    /// row of its first item (asked before [`Tree::release`]): to the first branch made from
    /// `id`, directly or not, that shows that very row (the same owner's row `seq`), whether `id`
    /// owns it or inherits it. The turn still exists there; kept on `id`, its usage would be
    /// added to the next turn given its number. `None`: no such branch shows it, and its usage
    /// goes with it. (The branch `id` was made from may show the row too: its turn of that
    /// number is its own.)
    pub fn usage_heir(&self, id: &str, seq: u64) -> Option<String> {
        // The branch whose storage holds row `seq` of `b`'s view (the tree was checked: its
        // chains of bases end).
        let owner = |b: &str| {
            let mut at = self.find(b)?;
            let mut hi = at.next;
            loop {
                if at.first <= seq && seq < hi {
                    return Some(at);
                }
                hi = at.first;
                at = self.find(at.base.as_deref()?)?;
            }
        };
        let shown = owner(id)?;
        let parent_of = |b: &str| self.find(b).and_then(|b| b.parent.as_deref());
        self.others()
            .iter()
            .find(|b| {
                made_from(b.parent.as_deref(), id, parent_of, self.branches.len())
                    && owner(&b.id).is_some_and(|o| std::ptr::eq(o, shown))
            })
            .map(|b| b.id.clone())
    }

    /// Gives up the rows of `id`'s view from `at` on (a pop, a rewrite, a clear): the branches
    /// that inherit any of them get their own copies first, then `id` shows the rows before
    /// `at` only. `turn_before` is the turn of the item before `at` (ignored when none is
    /// left). Returns what to copy, and which of `id`'s own rows to delete.
    pub fn release(
        &mut self,
        session_id: &str,
        id: &str,
        at: u64,
        turn_before: u64,
    ) -> Result<Release> {
        let x = self.index_of(session_id, id)?;
        let old = self.branches[x].clone();
        let start = self.start(session_id, id)?;
        let at = at.clamp(start, old.next);
        let mut release = Release::default();
        // The branches that inherit rows of `id` from `at` on keep them, as their own.
        for c in 0..self.branches.len() {
            let child = &self.branches[c];
            if child.base.as_deref() != Some(id) || child.first <= at {
                continue;
            }
            let lo = at.max(old.first);
            if lo < child.first {
                release.copies.push(Copy {
                    from: id.to_string(),
                    to: child.id.clone(),
                    lo,
                    hi: child.first,
                });
            }
            let child = &mut self.branches[c];
            if at > old.first {
                child.first = at;
                child.fork_turn = turn_before;
            } else {
                child.first = old.first;
                child.base = old.base.clone();
                child.fork_turn = old.fork_turn;
                // Its oldest rows are now its own copies of `id`'s: so is their head.
                if old.base.is_none() {
                    child.summary_head = old.compacted_head();
                }
            }
        }
        if old.first < old.next && at < old.next {
            release.delete = Some((at.max(old.first), old.next));
        }
        let empty = at == start;
        let b = &mut self.branches[x];
        b.last_turn = if empty { 0 } else { turn_before };
        if at >= old.first {
            b.next = at;
        } else {
            // The view now ends inside what it inherits: it continues the segment that holds the
            // item before `at`, and owns nothing yet.
            let segments = self.segments(session_id, id)?;
            let base = segments
                .iter()
                .find(|s| s.lo < at && at <= s.hi)
                .map(|s| s.owner.clone());
            let b = &mut self.branches[x];
            b.base = if empty { None } else { base };
            b.first = at;
            b.next = at;
            b.fork_turn = if empty { 0 } else { turn_before };
        }
        Ok(release)
    }

    /// Gives up every row of `id`'s view (a clear): as [`Tree::release`] from its start; the
    /// branch then continues nothing and owns nothing, and its next row takes the sequence number
    /// after every one it had. The branches made from it no longer show any turn of it (their
    /// `from_turn` is 0, as after a compaction that replaced every turn): its new turns, numbered
    /// from 1 again, are not theirs. Nor does it show any turn of its parent (its `from_turn` is
    /// 0 too).
    pub fn clear(&mut self, session_id: &str, id: &str) -> Result<Release> {
        let next = self.get(session_id, id)?.next;
        let start = self.start(session_id, id)?;
        let release = self.release(session_id, id, start, 0)?;
        for b in self.branches.iter_mut() {
            if b.parent.as_deref() == Some(id) {
                b.from_turn = 0;
            }
        }
        let x = self.index_of(session_id, id)?;
        let b = &mut self.branches[x];
        b.base = None;
        b.first = next.max(b.next);
        b.next = b.first;
        b.last_turn = 0;
        b.fork_turn = 0;
        b.from_turn = 0;
        b.archived = 0;
        b.summary_head = false;
        Ok(release)
    }

    /// Places new items after `id`'s newest (sequence numbers and turns), refused with nothing
    /// changed when they would pass [`MAX_SAFE_INTEGER`].
    pub fn append(
        &mut self,
        session_id: &str,
        id: &str,
        starts_turn: &[bool],
    ) -> Result<Vec<Placement>> {
        let x = self.index_of(session_id, id)?;
        let b = &mut self.branches[x];
        let count = starts_turn.len() as u64;
        if b.next.saturating_add(count) > MAX_SAFE_INTEGER {
            return Err(SessionError::new(
                SessionErrorCode::CorruptSession,
                format!(
                    "branch \"{id}\" of session \"{session_id}\" cannot take {count} more items: \
                     its sequence numbers would pass 2^53 - 1"
                ),
            ));
        }
        let placements = place(b.next, b.last_turn, starts_turn);
        b.next += count;
        if let Some(p) = placements.last() {
            b.last_turn = p.turn;
        }
        Ok(placements)
    }

    /// Removes branch `id` (never `main`): the branches that inherit its rows get their own
    /// copies first, and are made from its parent from then on (see [`adopt`]). Returns the
    /// copies, and the range of its storage to delete.
    pub fn remove(&mut self, session_id: &str, id: &str) -> Result<Release> {
        let removed = self.get(session_id, id)?;
        let (parent, from_turn) = (removed.parent.clone(), removed.from_turn);
        adopt(
            self.branches
                .iter_mut()
                .map(|b| (&mut b.parent, &mut b.from_turn)),
            id,
            parent,
            from_turn,
        );
        let mut release = self.clear(session_id, id)?;
        let x = self.index_of(session_id, id)?;
        let b = self.branches.remove(x);
        release.delete = Some((0, b.next));
        Ok(release)
    }

    /// The rows the session stores across its branches: each branch's own rows and archive.
    pub fn stored_rows(&self) -> u64 {
        self.branches.iter().map(|b| b.own_len() + b.archived).sum()
    }

    /// Writes `main`'s counters back into the session record.
    pub fn store_main(&self, record: &mut SessionRecord) {
        let main = &self.branches[0];
        record.first_seq = main.first;
        record.next_seq = main.next;
        record.item_count = main.own_len();
        record.last_turn = main.last_turn;
        record.archived_count = main.archived;
        record.summary_head = main.summary_head;
    }
}

/// The branches made from branch `removed` (each given as its `parent` and `from_turn`), which
/// was made from `parent` at turn `from_turn`, once it is deleted: they are made from `parent`,
/// at the last turn they still share with it (the turns of `removed` they showed before
/// `from_turn` were `parent`'s), so that a listing names no branch that is gone.
pub fn adopt<'a>(
    branches: impl IntoIterator<Item = (&'a mut Option<String>, &'a mut u64)>,
    removed: &str,
    parent: Option<String>,
    from_turn: u64,
) {
    for (p, turn) in branches {
        if p.as_deref() == Some(removed) {
            p.clone_from(&parent);
            *turn = (*turn).min(from_turn);
        }
    }
}

/// Whether the branch whose parent is `parent` was made from branch `ancestor`, directly or
/// through the branches `parent_of` names the parents of (at most `depth` steps: a cycle in
/// damaged data ends there). Where a popped turn's usage may go: to a branch made from the one
/// it was popped on, never to the branch that one was made from, whose turn of that number is
/// its own.
pub fn made_from<'a>(
    mut parent: Option<&'a str>,
    ancestor: &str,
    parent_of: impl Fn(&str) -> Option<&'a str>,
    depth: usize,
) -> bool {
    for _ in 0..depth {
        match parent {
            Some(p) if p == ancestor => return true,
            Some(p) => parent = parent_of(p),
            None => return false,
        }
    }
    false
}

/// A name for a branch created from turn `turn` that is not `taken`: `turn-<n>`, then
/// `turn-<n>-2` and so on.
pub fn free_name(taken: impl Fn(&str) -> bool, turn: u64) -> String {
    let name = format!("turn-{turn}");
    if !taken(&name) {
        return name;
    }
    (2..)
        .map(|k| format!("{name}-{k}"))
        .find(|n| !taken(n))
        .unwrap_or(name)
}

/// One turn of a branch, for `getTurns` and `findTurns`.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEntry {
    pub turn: u64,
    /// The text of the user message that opens it.
    pub content: String,
    pub item_count: u64,
    pub created_at: f64,
}

/// One stored item, as the turn listings read it.
#[derive(Debug, Clone, PartialEq)]
pub struct RowFacts {
    pub turn: u64,
    /// Whether it is a user message (and so opens its turn).
    pub starts_turn: bool,
    /// The text of a user message.
    pub text: String,
    pub created_at: f64,
    /// The tool a tool call names, for tool usage.
    pub tool: Option<String>,
}

/// The turns of a view (its rows oldest first) that open with a user message, oldest first:
/// turn 0 (the items before the first user message) is not one.
pub fn turns(rows: &[RowFacts]) -> Vec<TurnEntry> {
    let mut out: Vec<TurnEntry> = Vec::new();
    for row in rows {
        match out.last_mut() {
            Some(last) if last.turn == row.turn => last.item_count += 1,
            _ if row.starts_turn && row.turn > 0 => out.push(TurnEntry {
                turn: row.turn,
                content: row.text.clone(),
                item_count: 1,
                created_at: row.created_at,
            }),
            _ => {}
        }
    }
    out
}

/// Whether `content` contains `query`, both already lower-cased by the caller (the backend uses
/// the browser's `toLowerCase`, whose Unicode tables the module then need not carry).
pub fn contains_text(content: &str, query: &str) -> bool {
    // Compared as bytes (UTF-8 lets a whole character match only at a character boundary): the
    // standard library's string search slices `content`, and brings in the code that formats a
    // slicing panic's message.
    let (content, query) = (content.as_bytes(), query.as_bytes());
    query.is_empty() || content.windows(query.len()).any(|w| w == query)
}

/// The tool calls of a view, counted per tool and turn: `(name, count, turn)` in the order each
/// pair first appears.
pub fn tool_usage(rows: &[RowFacts]) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    for row in rows {
        let Some(name) = &row.tool else { continue };
        match out.iter_mut().find(|(n, _, t)| n == name && *t == row.turn) {
            Some(entry) => entry.1 += 1,
            None => out.push((name.clone(), 1, row.turn)),
        }
    }
    out
}

/// Model usage of one turn (or a sum of turns).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    pub requests: f64,
    pub input_tokens: f64,
    pub output_tokens: f64,
    pub total_tokens: f64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.requests += other.requests;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// How many of a branch's oldest turns a rewrite replaced, from its newest turn before it and
/// whether each new item opens a turn: the turns the new items keep are taken to be the newest.
pub fn replaced_turns(last_turn: u64, starts: impl IntoIterator<Item = bool>) -> u64 {
    last_turn.saturating_sub(starts.into_iter().filter(|&s| s).count() as u64)
}

/// A branch's `from_turn` once a rewrite of it replaced its `base` oldest turns (a compaction):
/// none of its parent's once any is replaced (as after a clear); kept by a rewrite that keeps
/// every turn (an encrypted chat's rewrite, a seal in place).
pub fn from_turn_after_replace(from_turn: u64, base: u64) -> u64 {
    match base {
        0 => from_turn,
        _ => 0,
    }
}

/// A branch's `from_turn` once a pop left it showing items up to turn `last_turn` (none when
/// `empty`): the turns it shares with its parent are those below it that it still shows, so a
/// pop into them lowers it (to 0 once it shows nothing, as a clear does).
pub fn from_turn_after_pop(from_turn: u64, last_turn: u64, empty: bool) -> u64 {
    match empty {
        true => 0,
        false => from_turn.min(last_turn + 1),
    }
}

/// The usage of a branch after a rewrite that numbers its turns again from 1 (compaction): the
/// turns kept are the newest, so turn `t` becomes `t - base`, and the usage of the turns replaced
/// (`t <= base`) goes to turn 0, where the summary standing for them is. Oldest turn first.
pub fn renumbered_usage(rows: &[(u64, Usage)], base: u64) -> Vec<(u64, Usage)> {
    let mut out: Vec<(u64, Usage)> = Vec::new();
    for (turn, usage) in rows {
        let turn = turn.saturating_sub(base);
        match out.iter_mut().find(|(t, _)| *t == turn) {
            Some((_, sum)) => sum.add(usage),
            None => out.push((turn, *usage)),
        }
    }
    crate::core::sort::sort_by_key(&mut out, |(t, _)| *t);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "s";

    #[test]
    fn a_branch_is_made_from_its_parents_not_from_its_children_or_siblings() {
        let parents = [("a", Some("main")), ("b", Some("a")), ("c", Some("main"))];
        let parent_of = |id: &str| parents.iter().find(|(b, _)| *b == id).and_then(|(_, p)| *p);
        assert!(
            made_from(Some("a"), "main", parent_of, 8),
            "b from main, through a"
        );
        assert!(made_from(Some("a"), "a", parent_of, 8), "b from a");
        assert!(
            !made_from(Some("main"), "a", parent_of, 8),
            "a is not made from itself"
        );
        assert!(
            !made_from(Some("main"), "c", parent_of, 8),
            "nor from a sibling"
        );
        assert!(
            !made_from(None, "a", parent_of, 8),
            "main is made from none"
        );
        // A cycle (damaged data) ends at the depth given.
        let cycle = |id: &str| if id == "x" { Some("y") } else { Some("x") };
        assert!(!made_from(Some("x"), "main", cycle, 8));
    }

    #[test]
    fn popped_usage_goes_to_the_first_branch_made_from_it_that_shows_the_row() {
        // main: turns of 2 rows. b made from main at 4; c made from b at its tip (6).
        let mut t = tree_with(8, 4);
        t.fork(S, MAIN, "b", 4, 3, 1.0).unwrap();
        t.append(S, "b", &[true, false]).unwrap();
        t.fork(S, "b", "c", 6, 4, 1.0).unwrap();
        let heir = |t: &Tree, id: &str, seq| t.usage_heir(id, seq);
        // b's own row 4: c shows it.
        assert_eq!(heir(&t, "b", 4).as_deref(), Some("c"));
        // Row 2, which b inherits from main: c shows main's row 2 too.
        assert_eq!(heir(&t, "b", 2).as_deref(), Some("c"));
        // main's row 2: b (made from main, first) shows it; main's row 6 no branch shows.
        assert_eq!(heir(&t, MAIN, 2).as_deref(), Some("b"));
        assert_eq!(heir(&t, MAIN, 6), None);
        // c's rows: no branch is made from c; the branch c was made from is no heir.
        assert_eq!(heir(&t, "c", 4), None);
        // A row past a branch's view has no heir.
        assert_eq!(heir(&t, "b", 9), None);
        // b gives up row 4 on: c gets its copy; a row given again at 4 is b's new one, which c
        // does not show.
        t.release(S, "b", 4, 2).unwrap();
        t.append(S, "b", &[true]).unwrap();
        assert_eq!(heir(&t, "b", 4), None);
        assert_eq!(heir(&t, "b", 2).as_deref(), Some("c"));
    }

    #[test]
    fn a_pop_into_the_turns_shared_with_the_parent_lowers_from_turn() {
        // Made from turn 4: it shows its parent's turns 1 to 3.
        assert_eq!(from_turn_after_pop(4, 5, false), 4, "its own turns");
        assert_eq!(
            from_turn_after_pop(4, 3, false),
            4,
            "the shared turns whole"
        );
        assert_eq!(from_turn_after_pop(4, 1, false), 2, "turn 1 only");
        assert_eq!(
            from_turn_after_pop(4, 0, false),
            1,
            "what comes before the first turn"
        );
        assert_eq!(from_turn_after_pop(4, 0, true), 0, "nothing");
        assert_eq!(
            from_turn_after_pop(0, 2, false),
            0,
            "main, or a cleared branch"
        );
    }

    #[test]
    fn usage_follows_turns_numbered_again_after_a_compaction() {
        let u = |n: f64| Usage {
            requests: 1.0,
            input_tokens: n,
            output_tokens: 0.0,
            total_tokens: n,
        };
        let rows: Vec<(u64, Usage)> = (1..=6).map(|t| (t, u(t as f64))).collect();
        // Turns 5 and 6 kept (now 1 and 2); 1 to 4 summed where the summary stands.
        let out = renumbered_usage(&rows, 4);
        let turns: Vec<(u64, f64, f64)> = out
            .iter()
            .map(|(t, u)| (*t, u.requests, u.input_tokens))
            .collect();
        assert_eq!(turns, vec![(0, 4.0, 10.0), (1, 1.0, 5.0), (2, 1.0, 6.0)]);
        // Nothing dropped: the same numbers.
        let same = renumbered_usage(&rows, 0);
        assert_eq!(same.len(), 6);
        assert!(same.iter().zip(&rows).all(|(a, b)| a.0 == b.0));
    }

    fn tree_with(main_items: u64, last_turn: u64) -> Tree {
        let mut record = SessionRecord::new(S, None, 0.0);
        record.next_seq = main_items;
        record.item_count = main_items;
        record.last_turn = last_turn;
        Tree::new(&record, Vec::new()).unwrap()
    }

    fn view(tree: &Tree, id: &str) -> Vec<(String, u64, u64)> {
        let mut v: Vec<_> = tree
            .segments(S, id)
            .unwrap()
            .into_iter()
            .map(|s| (s.owner, s.lo, s.hi))
            .collect();
        v.reverse();
        v
    }

    fn seg(owner: &str, lo: u64, hi: u64) -> (String, u64, u64) {
        (owner.to_string(), lo, hi)
    }

    #[test]
    fn a_fork_shows_the_rows_before_it_and_copies_nothing() {
        // main: 10 items, turns of 2 (turn t at 2t-2, 2t-1).
        let mut t = tree_with(10, 5);
        let copies = t.fork(S, MAIN, "b", 2, 2, 1.0).unwrap();
        assert!(copies.is_empty());
        assert_eq!(view(&t, "b"), [seg(MAIN, 0, 2)]);
        assert_eq!(t.item_count(S, "b").unwrap(), 2);
        assert_eq!(t.get(S, "b").unwrap().last_turn, 1);
        let p = t.append(S, "b", &[true, false]).unwrap();
        assert_eq!(
            p,
            [Placement { seq: 2, turn: 2 }, Placement { seq: 3, turn: 2 }]
        );
        assert_eq!(view(&t, "b"), [seg(MAIN, 0, 2), seg("b", 2, 4)]);
        assert_eq!(view(&t, MAIN), [seg(MAIN, 0, 10)], "main is untouched");
        assert_eq!(
            t.fork(S, MAIN, "b", 4, 3, 1.0).unwrap_err().code,
            SessionErrorCode::BranchExists
        );
    }

    #[test]
    fn newest_reads_only_the_rows_asked_for() {
        let mut t = tree_with(100_000, 50_000);
        t.fork(S, MAIN, "b", 99_990, 49_996, 1.0).unwrap();
        t.append(S, "b", &[true; 5]).unwrap();
        let newest = t.newest(S, "b", Limit::Newest(20)).unwrap();
        let rows: u64 = newest.iter().map(|s| s.hi - s.lo).sum();
        assert_eq!(rows, 20);
        assert_eq!(
            newest
                .iter()
                .map(|s| (s.owner.as_str(), s.lo, s.hi))
                .collect::<Vec<_>>(),
            [(MAIN, 99_975, 99_990), ("b", 99_990, 99_995)]
        );
        assert!(t.newest(S, "b", Limit::Newest(0)).unwrap().is_empty());
    }

    #[test]
    fn a_pop_of_an_inherited_item_moves_the_fork_back_and_leaves_the_base_alone() {
        let mut t = tree_with(10, 5);
        t.fork(S, MAIN, "b", 6, 4, 1.0).unwrap();
        let r = t.release(S, "b", 5, 3).unwrap();
        assert_eq!(r, Release::default(), "nothing to copy or delete");
        assert_eq!(view(&t, "b"), [seg(MAIN, 0, 5)]);
        assert_eq!(view(&t, MAIN), [seg(MAIN, 0, 10)]);
        assert_eq!(t.get(S, "b").unwrap().last_turn, 3);
    }

    #[test]
    fn a_pop_on_the_base_copies_the_row_a_child_inherits() {
        let mut t = tree_with(4, 2);
        // b forks at the tip of main: it inherits all 4 rows.
        t.fork(S, MAIN, "b", 4, 3, 1.0).unwrap();
        let r = t.release(S, MAIN, 3, 2).unwrap();
        assert_eq!(
            r.copies,
            [Copy {
                from: MAIN.into(),
                to: "b".into(),
                lo: 3,
                hi: 4
            }]
        );
        assert_eq!(r.delete, Some((3, 4)));
        assert_eq!(view(&t, "b"), [seg(MAIN, 0, 3), seg("b", 3, 4)]);
        assert_eq!(t.item_count(S, "b").unwrap(), 4, "b still shows 4 items");
        assert_eq!(view(&t, MAIN), [seg(MAIN, 0, 3)]);
        // Main goes on at 3 in its own storage; b's copy of row 3 is in b's.
        t.append(S, MAIN, &[false]).unwrap();
        assert_eq!(view(&t, MAIN), [seg(MAIN, 0, 4)]);
    }

    #[test]
    fn clearing_a_base_gives_its_children_their_rows_and_its_own_base() {
        let mut t = tree_with(10, 5);
        t.fork(S, MAIN, "b", 4, 3, 1.0).unwrap();
        t.append(S, "b", &[true, false, true]).unwrap(); // b own 4..7
        t.fork(S, "b", "c", 6, 4, 2.0).unwrap(); // c: main 0..4, b 4..6
        t.append(S, "c", &[true]).unwrap(); // c own 6..7
        let r = t.clear(S, "b").unwrap();
        assert_eq!(
            r.copies,
            [Copy {
                from: "b".into(),
                to: "c".into(),
                lo: 4,
                hi: 6
            }]
        );
        assert_eq!(r.delete, Some((4, 7)));
        assert_eq!(view(&t, "c"), [seg(MAIN, 0, 4), seg("c", 4, 7)]);
        assert!(view(&t, "b").is_empty());
        assert_eq!(t.get(S, "b").unwrap().base, None);
        assert_eq!(t.item_count(S, "c").unwrap(), 7);
        // b's next item does not reuse a sequence number it had.
        assert_eq!(
            t.append(S, "b", &[true]).unwrap()[0],
            Placement { seq: 7, turn: 1 }
        );
    }

    #[test]
    fn clearing_main_gives_every_child_its_own_copy() {
        let mut t = tree_with(6, 3);
        t.fork(S, MAIN, "b", 4, 3, 1.0).unwrap();
        t.fork(S, MAIN, "c", 2, 2, 1.0).unwrap();
        let r = t.clear(S, MAIN).unwrap();
        assert_eq!(
            r.copies,
            [
                Copy {
                    from: MAIN.into(),
                    to: "b".into(),
                    lo: 0,
                    hi: 4
                },
                Copy {
                    from: MAIN.into(),
                    to: "c".into(),
                    lo: 0,
                    hi: 2
                }
            ]
        );
        assert_eq!(r.delete, Some((0, 6)));
        assert_eq!(view(&t, "b"), [seg("b", 0, 4)]);
        assert_eq!(view(&t, "c"), [seg("c", 0, 2)]);
        let mut record = SessionRecord::new(S, None, 0.0);
        t.store_main(&mut record);
        assert_eq!(
            (record.first_seq, record.next_seq, record.item_count),
            (6, 6, 0)
        );
    }

    #[test]
    fn a_rewrite_reaching_into_what_a_branch_inherits_rebases_it() {
        let mut t = tree_with(10, 5);
        t.fork(S, MAIN, "b", 6, 4, 1.0).unwrap();
        t.append(S, "b", &[true, false]).unwrap(); // own 6..8
                                                   // Replace the newest 4 of b's view (rows 4..8): 2 inherited, 2 own.
        let r = t.release(S, "b", 4, 2).unwrap();
        assert_eq!(r.delete, Some((6, 8)));
        assert!(r.copies.is_empty());
        assert_eq!(view(&t, "b"), [seg(MAIN, 0, 4)]);
        let p = t.append(S, "b", &[true]).unwrap();
        assert_eq!(p, [Placement { seq: 4, turn: 3 }]);
        assert_eq!(view(&t, "b"), [seg(MAIN, 0, 4), seg("b", 4, 5)]);
        assert_eq!(view(&t, MAIN), [seg(MAIN, 0, 10)]);
    }

    #[test]
    fn removing_a_branch_keeps_what_its_children_show() {
        let mut t = tree_with(4, 2);
        t.fork(S, MAIN, "b", 2, 2, 1.0).unwrap();
        t.append(S, "b", &[true, false]).unwrap(); // b own 2..4
        t.fork(S, "b", "c", 4, 3, 1.0).unwrap();
        let r = t.remove(S, "b").unwrap();
        assert_eq!(
            r.copies,
            [Copy {
                from: "b".into(),
                to: "c".into(),
                lo: 2,
                hi: 4
            }]
        );
        assert_eq!(r.delete, Some((0, 4)));
        assert!(t.find("b").is_none());
        assert_eq!(view(&t, "c"), [seg(MAIN, 0, 2), seg("c", 2, 4)]);
        let c = t.get(S, "c").unwrap();
        assert_eq!(
            (c.parent.as_deref(), c.from_turn),
            (Some(MAIN), 2),
            "made from main, at the last turn it shares with it"
        );
    }

    #[test]
    fn a_branch_made_before_its_parent_left_its_own_parent_keeps_its_turn() {
        let mut t = tree_with(6, 3);
        t.fork(S, MAIN, "b", 4, 3, 1.0).unwrap(); // shows main's turns 1 and 2
        t.fork(S, "b", "c", 2, 2, 1.0).unwrap(); // shows turn 1 only
        t.remove(S, "b").unwrap();
        let c = t.get(S, "c").unwrap();
        assert_eq!((c.parent.as_deref(), c.from_turn), (Some(MAIN), 2));
        assert_eq!(view(&t, "c"), [seg(MAIN, 0, 2)]);
    }

    #[test]
    fn a_deep_chain_is_flattened_at_the_bound() {
        let mut t = tree_with(2, 1);
        let mut from = MAIN.to_string();
        let mut flattened = Vec::new();
        for k in 0..(MAX_DEPTH + 2) as u64 {
            let id = format!("b{k}");
            let at = t.get(S, &from).unwrap().next;
            let copies = t.fork(S, &from, &id, at, k + 2, 1.0).unwrap();
            if !copies.is_empty() {
                // Everything it shows, copied from every segment it would have inherited.
                let rows: u64 = copies.iter().map(|c| c.hi - c.lo).sum();
                assert_eq!(rows, at);
                flattened.push(k);
            }
            t.append(S, &id, &[true, false]).unwrap();
            assert!(
                view(&t, &id).len() <= MAX_DEPTH,
                "{id}: {:?}",
                view(&t, &id)
            );
            assert_eq!(t.item_count(S, &id).unwrap(), 2 * (k + 2));
            from = id;
        }
        assert_eq!(flattened, [MAX_DEPTH as u64 - 1]);
    }

    #[test]
    fn a_missing_turn_names_the_turns_there_are() {
        let e = no_turn(S, MAIN, 4, 3);
        assert_eq!(e.code, SessionErrorCode::InvalidTurn);
        assert!(
            e.message.ends_with("has no turn 4 (its turns are 1 to 3)"),
            "{}",
            e.message
        );
        let e = no_turn(S, "b", 1, 0);
        assert!(
            e.message
                .ends_with("has no turn 1 (it holds no user message)"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_copy_of_a_compacted_head_is_known_as_one() {
        let compacted = |archived| {
            let mut t = tree_with(6, 3);
            t.branches[0].archived = archived;
            t
        };
        for archived in [0, 4] {
            // main gives up every row (compacted again, or cleared): "b" gets its own copies.
            let mut t = compacted(archived);
            t.fork(S, MAIN, "b", 4, 3, 1.0).unwrap();
            t.clear(S, MAIN).unwrap();
            let b = t.get(S, "b").unwrap();
            assert_eq!((b.base.as_deref(), b.first), (None, 0));
            assert_eq!(b.compacted_head(), archived > 0);
            // "c" continues "b"; "b" deleted: "c" owns the copies then, and knows their head.
            t.fork(S, "b", "c", 2, 2, 1.0).unwrap();
            t.append(S, "c", &[true, false]).unwrap();
            t.remove(S, "b").unwrap();
            let c = t.get(S, "c").unwrap();
            assert_eq!(c.base, None);
            assert_eq!(c.compacted_head(), archived > 0);
            t.clear(S, "c").unwrap();
            assert!(!t.get(S, "c").unwrap().compacted_head(), "cleared: no head");
        }
        // Rows given up after the fork point leave the branch on its base: nothing is copied.
        let mut t = compacted(4);
        t.fork(S, MAIN, "b", 4, 3, 1.0).unwrap();
        t.release(S, MAIN, 5, 3).unwrap();
        assert!(!t.get(S, "b").unwrap().summary_head);
        // A branch created too deep copies its view, from the compacted main up.
        let mut from = MAIN.to_string();
        for k in 0..MAX_DEPTH as u64 {
            let id = format!("d{k}");
            let at = t.get(S, &from).unwrap().next;
            t.fork(S, &from, &id, at, k + 4, 1.0).unwrap();
            t.append(S, &id, &[true, false]).unwrap();
            from = id;
        }
        let deepest = t.get(S, &from).unwrap();
        assert_eq!(deepest.base, None, "flattened");
        assert!(deepest.summary_head);
    }

    #[test]
    fn a_damaged_tree_is_refused() {
        let record = SessionRecord::new(S, None, 0.0);
        let b = Branch {
            id: "b".into(),
            parent: Some(MAIN.into()),
            from_turn: 1,
            created_at: 0.0,
            base: Some("b".into()),
            first: 1,
            next: 1,
            last_turn: 0,
            fork_turn: 0,
            archived: 0,
            summary_head: false,
        };
        let e = Tree::new(&record, vec![b.clone()]).unwrap_err();
        assert_eq!(e.code, SessionErrorCode::CorruptSession);
        let e = Tree::new(&record, vec![b.clone(), b]).unwrap_err();
        assert!(e.message.contains("twice"), "{}", e.message);
    }

    #[test]
    fn turns_are_listed_from_their_user_message() {
        let row = |turn, starts: bool, text: &str| RowFacts {
            turn,
            starts_turn: starts,
            text: text.into(),
            created_at: turn as f64,
            tool: None,
        };
        let rows = [
            row(0, false, ""),
            row(1, true, "Hello 東京の天気"),
            row(1, false, ""),
            row(2, true, "WHAT about Osaka?"),
        ];
        let listed = turns(&rows);
        assert_eq!(
            listed
                .iter()
                .map(|t| (t.turn, t.item_count))
                .collect::<Vec<_>>(),
            [(1, 2), (2, 1)]
        );
        assert!(contains_text(&listed[1].content.to_lowercase(), "osaka"));
        assert!(
            !contains_text(&listed[1].content, "osaka"),
            "the caller folds case"
        );
        assert!(contains_text(&listed[0].content, "東京"));
        assert!(!contains_text(&listed[0].content, "大阪"));
        assert!(contains_text("café au lait", "é a"));
        assert!(!contains_text("café", "e"), "no match inside a character");
        assert!(contains_text("any", ""));
        assert!(!contains_text("ab", "abc"));
        assert_eq!(t_free_names(), ["turn-2", "turn-2-2", "turn-2-3"]);
    }

    fn t_free_names() -> Vec<String> {
        let mut t = tree_with(4, 2);
        let mut names = Vec::new();
        for _ in 0..3 {
            let name = t.free_name(2);
            t.fork(S, MAIN, &name, 2, 2, 0.0).unwrap();
            names.push(name);
        }
        names
    }

    #[test]
    fn tool_calls_are_counted_per_tool_and_turn() {
        let call = |turn, tool: Option<&str>| RowFacts {
            turn,
            starts_turn: false,
            text: String::new(),
            created_at: 0.0,
            tool: tool.map(str::to_string),
        };
        let rows = [
            call(1, Some("weather")),
            call(1, Some("weather")),
            call(1, None),
            call(2, Some("weather")),
            call(2, Some("search")),
        ];
        assert_eq!(
            tool_usage(&rows),
            [
                ("weather".to_string(), 2, 1),
                ("weather".to_string(), 1, 2),
                ("search".to_string(), 1, 2)
            ]
        );
    }
}
