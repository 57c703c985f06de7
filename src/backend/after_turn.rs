//! What a finished run leaves for after its answer, in the background: a title after the first
//! turn, or a later one of the first three where the first got none (`autoTitle`), a summary
//! every few turns (`summaries`), compaction where the session
//! compacts. It starts once the current task is over, so the caller has the result (and a stream
//! its `done` event) before any of it, and it never fails: its report says what went wrong, and
//! nothing there touches the turn already saved. Agno runs its summary before the answer; users
//! wait seconds for it.

use std::cell::Cell;
use std::rc::Rc;

use crate::core::error::{RunnerError, RunnerErrorCode};
use crate::core::json::Value;
use js_sys::{Array, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use crate::core::compaction::{hidden_turns, opens_history};
use crate::core::run::history::{newest_turns, without_newest_turns};
use crate::core::run::metadata::{
    clean_title, parse_summary, summary_due, summary_input, title_due, title_input,
    title_untouched, MetadataOptions, SUMMARY_INSTRUCTIONS, TITLE_INSTRUCTIONS, TITLE_TURNS,
};
use crate::core::session::MAX_SAFE_INTEGER;
use crate::core::wire::{answer_text, item_type, Usage};

use super::error::run_error;
use super::js::{self, js_to_json, object, Settling};
use super::model::{sleep, timed_out, timeout_signal, ModelClient};
use super::runner::{call_session, usage_object, AgentSpec, RunError};

/// Everything the work after a turn needs.
pub struct AfterTurn {
    pub client: Rc<ModelClient>,
    pub agent: Rc<AgentSpec>,
    pub session: Option<JsValue>,
    pub metadata: MetadataOptions,
    /// The items of the turn just run (its input and what it produced).
    pub turn: Vec<Value>,
    /// Whether the run finished (not paused for approvals).
    pub finished: bool,
}

/// The Web Lock of the work after a turn on a session stored in IndexedDB (one with `dbName`
/// and `sessionId`); `None` for any other session.
fn lock_name(session: &JsValue) -> Option<String> {
    let db = js::get(session, "dbName").ok()?.as_string()?;
    let id = js::get(session, "sessionId").ok()?.as_string()?;
    Some(format!(
        "agent-sessions-after-turn:{}",
        Value::from(vec![Value::from(db), Value::from(id)])
    ))
}

/// Asks for the Web Lock `name`, held until `held` settles: resolves once it is granted. `None`
/// where Web Locks are missing (the work then goes ahead at once).
fn take_lock(name: &str, held: Promise) -> Option<Promise> {
    let navigator = js::get(&js_sys::global(), "navigator").ok()?;
    let locks = js::get(&navigator, "locks")
        .ok()
        .filter(JsValue::is_object)?;
    let request: js_sys::Function = js::get(&locks, "request").ok()?.dyn_into().ok()?;
    let mut granted = None;
    let promise = Promise::new(&mut |resolve, _| granted = Some(resolve));
    let granted = granted?;
    let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        let _ = granted.call0(&JsValue::UNDEFINED);
        held.into()
    });
    let requested: Promise = request
        .call2(&locks, &name.into(), &callback)
        .ok()?
        .dyn_into()
        .ok()?;
    // A request the browser refuses (an opaque origin) rejects: the work then goes ahead.
    let refused = Promise::all_settled(&Array::of1(&requested));
    Some(Promise::race(&Array::of2(&promise, &refused)))
}

impl AfterTurn {
    /// The promise of the report `{ title, summary, compaction, usage, errors }`.
    pub fn start(self) -> Promise {
        // The session as this turn left it, asked now, before the caller has the result: the
        // work below may run after the next turn was saved (it waits for the previous turn's),
        // and must still title and summarise the turns up to its own.
        let own = match &self.session {
            Some(session)
                if self.finished && self.wants_metadata() && js::has_method(session, "getInfo") =>
            {
                // Listened to now: a rejection is not the page's unhandled one while the work
                // waits for its turn.
                js::call_method(session, "getInfo", &[])
                    .ok()
                    .and_then(|asked| js::settling(asked).ok())
            }
            _ => None,
        };
        js::js_promise(Box::pin(async move {
            let report = Report::default();
            if let (true, Some(session)) = (self.finished, self.session.clone()) {
                let _ = sleep(0.0, None).await;
                // One session's work after a turn, one at a time across tabs: a summary then
                // reads the summary the previous turn's work wrote, not one from before it.
                let mut release = None;
                let held = Promise::new(&mut |resolve, _| release = Some(resolve));
                if let Some(granted) = lock_name(&session).and_then(|n| take_lock(&n, held)) {
                    let _ = wasm_bindgen_futures::JsFuture::from(granted).await;
                }
                self.run(&session, &report, own).await;
                if let Some(release) = release {
                    let _ = release.call0(&JsValue::UNDEFINED);
                }
            }
            Ok(report.to_js())
        }))
    }

    async fn run(&self, session: &JsValue, report: &Report, own: Option<Settling>) {
        if self.wants_metadata() {
            let done = match js::has_method(session, "update") && js::has_method(session, "getInfo")
            {
                true => self.metadata_work(session, report, own).await,
                // Said, rather than an option that silently does nothing.
                false => Err(RunError::Usage(RunnerError::new(
                    RunnerErrorCode::InvalidSession,
                    "autoTitle and summaries need a session with getInfo() and update() (this \
                     package's sessions have them): no title or summary was made",
                ))),
            };
            if let Err(e) = done {
                report.errors.push(&run_error(e));
            }
        }
        if js::has_method(session, "runCompaction") {
            match call_session(session, "runCompaction", &[]).await {
                Ok(done) => *report.compaction.borrow_mut() = done,
                Err(e) => {
                    report.errors.push(&run_error(e));
                }
            }
        }
    }

    /// Whether the agent asks for a title or summaries.
    fn wants_metadata(&self) -> bool {
        self.metadata.auto_title || self.metadata.summary_every.is_some()
    }

    async fn metadata_work(
        &self,
        session: &JsValue,
        report: &Report,
        own: Option<Settling>,
    ) -> Result<(), RunError> {
        let turns_of = |info: &JsValue| {
            js::get(info, "turnCount")
                .ok()
                .and_then(|n| n.as_f64())
                .unwrap_or(0.0) as u64
        };
        let info = call_session(session, "getInfo", &[]).await?;
        // The branch the object is on as that read found it (a call queued before it that moves
        // the object has moved it): a title or summary is written only while it stays there.
        let branch = current_branch(session);
        let now = turns_of(&info);
        // This turn's number, and how many turns were written after it (a history rewritten
        // since, with fewer turns: taken as it is now).
        let own = match own {
            Some(asked) => asked.value().await.ok().map(|i| turns_of(&i)),
            None => None,
        };
        let stored_turns = own.filter(|&n| n <= now).unwrap_or(now);
        let later = now - stored_turns;
        // With the turns a compaction replaced (a history compacted every few turns counts its
        // turns again from the ones it kept each time): a summary every few turns keeps its pace,
        // and no title is made again after the first ones.
        // (Read only where it may matter: a summary's pace, a title of the first turns.)
        let counts = self.metadata.summary_every.is_some()
            || (self.metadata.auto_title && stored_turns <= TITLE_TURNS);
        let replaced = match counts {
            true => self.turns_replaced(session).await,
            false => 0,
        };
        let turn_count = stored_turns.saturating_add(replaced);
        let seen_title = js::get(&info, "title").ok().and_then(|t| t.as_string());
        // The conversation so far, where a title is due: this first turn, or, where the first
        // runs ended without an answer, the first turns up to this one (a session that reads
        // turns, titled by the session's default from its first message).
        let titled = match title_due(self.metadata.auto_title, turn_count) {
            true if turn_count == 1 => Some(self.turn.clone()),
            // (Also one with no title: its first message had no text, an image say.)
            true if js::has_method(session, "getRecentTurns") => {
                let count = JsValue::from_f64(now as f64);
                let items = call_session(session, "getRecentTurns", &[count]).await?;
                match js_to_json(&items, "the session's turns") {
                    Ok(Value::Array(items)) => Some(without_newest_turns(items, later)),
                    _ => None,
                }
            }
            _ => None,
        };
        // A title that fails (its request, its write) is reported, and the summary still made.
        let titling = async {
            let Some(conversation) =
                titled.filter(|c| title_untouched(seen_title.as_deref(), c, turn_count == 1))
            else {
                return Ok(true);
            };
            let answer = self
                .ask(TITLE_INSTRUCTIONS, title_input(&conversation), report)
                .await?;
            let title = clean_title(&answer);
            if !title.is_empty() {
                // Only over the title read above: a rename in the meantime (any tab) wins.
                let seen = seen_title
                    .as_deref()
                    .map_or(JsValue::NULL, JsValue::from_str);
                let changes = object(&[("title", title.as_str().into()), ("expectedTitle", seen)]);
                let Some(now) = update_if_there(session, changes.into(), &info, &branch).await?
                else {
                    return Ok(false);
                };
                if js::get(&now, "title").ok().and_then(|t| t.as_string()) == Some(title.clone()) {
                    *report.title.borrow_mut() = JsValue::from_str(&title);
                }
            }
            Ok(true)
        };
        match titling.await {
            // The session was deleted or cleared meanwhile: nothing more is written to it.
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => {
                report.errors.push(&run_error(e));
            }
        }
        if let Some(every) = self.metadata.summary_every {
            if summary_due(Some(every), turn_count) {
                let previous = js::get(&info, "summary").ok().and_then(|s| s.as_string());
                // The turns written after this one counted again: more may have been while the
                // title was made (taken for this turn, the newest would be summarised twice and
                // this one never).
                // (Not the read the write is checked against, which stays the first.)
                let counted = call_session(session, "getInfo", &[]).await?;
                let later = turns_of(&counted).saturating_sub(stored_turns);
                let turns = self.newest_turns(session, every, later).await?;
                let answer = self
                    .ask(
                        SUMMARY_INSTRUCTIONS,
                        summary_input(previous.as_deref(), &turns),
                        report,
                    )
                    .await?;
                let (summary, topics) = parse_summary(&answer);
                if !summary.is_empty() {
                    let topics: Array = topics.iter().map(|t| JsValue::from_str(t)).collect();
                    let changes = object(&[
                        ("summary", summary.as_str().into()),
                        ("topics", topics.into()),
                    ]);
                    if update_if_there(session, changes.into(), &info, &branch)
                        .await?
                        .is_some()
                    {
                        *report.summary.borrow_mut() = JsValue::from_str(&summary);
                    }
                }
            }
        }
        Ok(())
    }

    /// The turns earlier compactions replaced, which the summary at the head of the history
    /// stands for (after a server's compaction item kept before it), where the session compacts
    /// (a `CompactionSession`); 0 elsewhere, or where it cannot be read.
    async fn turns_replaced(&self, session: &JsValue) -> u64 {
        if !js::has_method(session, "runCompaction") {
            return 0;
        }
        let every = JsValue::from_f64(MAX_SAFE_INTEGER as f64);
        let Ok(items) = call_session(session, "getItems", &[every]).await else {
            return 0;
        };
        let head: Vec<Value> = js::stored_elements(&items)
            .iter()
            .map_while(|item| js_to_json(item, "the session's first items").ok())
            .take_while(opens_history)
            .collect();
        hidden_turns(&head)
    }

    /// The `n` turns to summarise, up to this run's (the session's newest but `later`): from the
    /// session where it reads turns, else taken here from every item it holds (as the runner
    /// takes a window of turns from such a session); this run's where neither reads.
    async fn newest_turns(
        &self,
        session: &JsValue,
        n: u64,
        later: u64,
    ) -> Result<Vec<Value>, RunError> {
        let wanted = n.saturating_add(later);
        let reads_turns = js::has_method(session, "getRecentTurns");
        let (method, count) = match reads_turns {
            true => ("getRecentTurns", wanted as f64),
            false => ("getItems", MAX_SAFE_INTEGER as f64),
        };
        let items = call_session(session, method, &[count.into()]).await?;
        match js_to_json(&items, "the session's turns") {
            Ok(Value::Array(items)) if reads_turns => Ok(without_newest_turns(items, later)),
            Ok(Value::Array(items)) => Ok(without_newest_turns(newest_turns(items, wanted), later)),
            _ => Ok(self.turn.clone()),
        }
    }

    /// One whole (not streamed) call of the agent's model: the text of its answer. A call
    /// without an answer within [`ASK_TIMEOUT_MS`] fails (a `ModelError`, status 0), so a server
    /// that never answers does not hold this session's work after a turn (the next turn's
    /// summary, compaction) for good. What the call cost, where its response said, is added to
    /// the report's usage, whether or not it succeeded.
    async fn ask(
        &self,
        instructions: &str,
        input: Vec<Value>,
        report: &Report,
    ) -> Result<String, RunError> {
        let Some(model) = self.agent.model.as_deref() else {
            return Ok(String::new());
        };
        let signal = timeout_signal(ASK_TIMEOUT_MS);
        let spent = Cell::default();
        let output = self
            .client
            .ask(
                model,
                &self.agent.settings.for_session_request(),
                instructions,
                &input,
                signal.as_ref(),
                &spent,
            )
            .await;
        let mut usage = report.usage.get();
        usage.add(output.as_ref().map_or(&spent.get(), |o| &o.usage));
        report.usage.set(usage);
        let output = output.map_err(timed_out(
            ASK_TIMEOUT_MS,
            "the request for a title or summary",
        ))?;
        Ok(output
            .items
            .iter()
            .rev()
            .find(|i| item_type(i) == "message")
            .map(|m| answer_text(m.get("content")))
            .unwrap_or_default())
    }
}

/// How long a title or summary request may go without an answer.
const ASK_TIMEOUT_MS: u32 = 120_000;

/// What the work after a turn did.
struct Report {
    title: std::cell::RefCell<JsValue>,
    summary: std::cell::RefCell<JsValue>,
    compaction: std::cell::RefCell<JsValue>,
    /// What the title and summary requests cost (compaction reports its own).
    usage: Cell<Usage>,
    errors: Array,
}

impl Default for Report {
    fn default() -> Self {
        Report {
            title: JsValue::NULL.into(),
            summary: JsValue::NULL.into(),
            compaction: JsValue::NULL.into(),
            usage: Cell::default(),
            errors: Array::new(),
        }
    }
}

impl Report {
    fn to_js(&self) -> JsValue {
        object(&[
            ("title", self.title.borrow().clone()),
            ("summary", self.summary.borrow().clone()),
            ("compaction", self.compaction.borrow().clone()),
            ("usage", usage_object(&self.usage.get())),
            ("errors", self.errors.clone().into()),
        ])
        .into()
    }
}

/// A session object's `currentBranch`, where it has branches.
fn current_branch(session: &JsValue) -> Option<String> {
    js::get(session, "currentBranch").ok()?.as_string()
}

/// Writes `changes` (a title or a summary made for `session` from what it held when `read` was
/// its `getInfo()`, on `branch`) if the session still holds items, and only added to them since,
/// on that branch: one deleted or cleared while the model wrote it gets neither (the write would
/// make a deleted session's record again, an empty chat in every list of the user's sessions, or
/// give a chat begun again after a clear the summary of the one before), nor one moved to
/// another branch (an earlier message edited: the summary of turns it no longer shows). Where
/// the session is still the one read after the write, its `getInfo()` then (a title's
/// `expectedTitle` may still have kept it from being set: the caller compares).
async fn update_if_there(
    session: &JsValue,
    changes: JsValue,
    read: &JsValue,
    branch: &Option<String>,
) -> Result<Option<JsValue>, RunError> {
    let info = call_session(session, "getInfo", &[]).await?;
    let number =
        |info: &JsValue, key: &'static str| js::get(info, key).ok().and_then(|n| n.as_f64());
    let there = current_branch(session) == *branch
        && number(&info, "itemCount").is_some_and(|n| n > 0.0)
        && ["createdAt", "rewrites"]
            .iter()
            .all(|key| number(&info, key) == number(read, key));
    if !there {
        return Ok(None);
    }
    // Checked again in the write's transaction: a delete in another tab between the read and
    // the write would have the write make the session again, empty. (A session whose getInfo()
    // gives no time is written as before.)
    let created = number(read, "createdAt");
    if let Some(at) = created {
        let _ = js_sys::Reflect::set(&changes, &"expectedCreatedAt".into(), &at.into());
    }
    call_session(session, "update", &[changes]).await?;
    // Whether it wrote (`update()` does not say): the session is still the one read.
    let after = call_session(session, "getInfo", &[]).await?;
    Ok((created.is_none() || number(&after, "createdAt") == created).then_some(after))
}
