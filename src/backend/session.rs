//! What every exported session class shares, written once: the state common to all of them
//! ([`SessionCore`]: id, settings, closed flag, call queue), the operations a backend provides
//! ([`SessionState`]), and [`queued`], the one path every method takes: refuse a closed session,
//! read the arguments, take a place in the queue, run, and settle the promise.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::JsValue;

use crate::core::error::{Result, SessionError};
use crate::core::history::{Limit, SessionSettings, Window};
use crate::core::queue::OpQueue;

use super::args::ReplaceOptions;
use super::branch_js::From;
use super::error::session_error;
use super::js::js_promise;
use super::metadata::{Applied, Changes};
use super::transaction::{FunctionCallReplacement, TakenTransaction};
use crate::core::branch::Usage;

/// The state every session object has, whatever stores its items.
pub struct SessionCore {
    pub session_id: String,
    pub settings: SessionSettings,
    closed: Cell<bool>,
    queue: OpQueue,
}

impl SessionCore {
    pub fn new(session_id: String, settings: SessionSettings) -> Self {
        SessionCore {
            session_id,
            settings,
            closed: Cell::new(false),
            queue: OpQueue::new(),
        }
    }

    /// Refuses `what` once the session is closed. Checked when a call is made, not when it runs,
    /// so a call made after `close()` is refused even while earlier calls are still under way.
    pub fn check_open(&self, what: &str) -> Result<()> {
        if self.closed.get() {
            Err(SessionError::closed(what))
        } else {
            Ok(())
        }
    }
}

/// The operations of a session backend. Each runs after every earlier call on the same object.
#[allow(async_fn_in_trait)] // single-threaded WebAssembly: the futures need not be `Send`
pub trait SessionState: 'static {
    fn core(&self) -> &SessionCore;
    /// The newest items within `limit`, oldest first.
    async fn get_items(&self, limit: Limit) -> Result<Vec<JsValue>>;
    /// The items of the newest `turns` whole turns, oldest first.
    async fn recent_turns(&self, turns: Limit) -> Result<Vec<JsValue>>;
    /// `getInfo()`.
    async fn info(&self) -> Result<JsValue>;
    /// `update()`, checked and copied: what it set (nothing when it sets only a title whose
    /// `expectedTitle` no longer holds, or its `expectedCreatedAt` does not hold).
    async fn update(&self, changes: Changes) -> Result<Applied>;
    /// Appends items already copied and checked, each with whether it opens a turn.
    async fn add_items(&self, items: Vec<(JsValue, bool)>) -> Result<()>;
    async fn pop_item(&self) -> Result<Option<JsValue>>;
    /// Whether it wrote: not to a session that does not exist.
    async fn clear(&self) -> Result<bool>;
    /// Runs once, after every call made before `close()`.
    async fn close(&self) -> Result<()>;
    /// `applyHistoryTransaction`, checked and copied: whether it changed anything (`false`: an
    /// operation applied before, replayed).
    async fn apply_transaction(&self, taken: TakenTransaction) -> Result<bool>;
    /// `applyHistoryMutations`, checked and copied.
    async fn apply_mutations(&self, mutations: Vec<FunctionCallReplacement>) -> Result<bool>;
    /// Replaces the whole history; with `options.archive`, the old items it replaces move to
    /// the archive (not those the new history ends with too);
    /// with `options.expected`, only if the history still holds exactly those items.
    async fn replace_history(
        &self,
        items: Vec<(JsValue, bool)>,
        options: ReplaceOptions,
    ) -> Result<()>;
    /// The archived items, oldest first: the newest `limit` after skipping the `skip` newest.
    async fn archived_items(&self, limit: Option<u64>, skip: u64) -> Result<Vec<JsValue>>;
    /// The branch this object is on.
    fn branch(&self) -> String;
    /// `createBranchFromTurn` / `createBranchFromContent`: the object moves onto the new branch.
    async fn create_branch(&self, pick: From, name: Option<String>) -> Result<String>;
    /// Whether it wrote: not to a session never stored (its `main` branch, the only one).
    async fn switch_branch(&self, id: String) -> Result<bool>;
    async fn list_branches(&self) -> Result<JsValue>;
    async fn delete_branch(&self, id: String) -> Result<()>;
    /// `getTurns` (no query) / `findTurns`, on `branch` or this object's branch.
    async fn turns(&self, branch: Option<String>, query: Option<String>) -> Result<JsValue>;
    async fn tool_usage(&self, branch: Option<String>) -> Result<JsValue>;
    async fn store_usage(&self, usage: Usage) -> Result<()>;
    async fn session_usage(&self, branch: Option<String>) -> Result<JsValue>;
    async fn turn_usage(&self, branch: Option<String>, turn: Option<u64>) -> Result<JsValue>;
}

/// A method of a session object: refuses it if the session is closed (whatever the arguments),
/// reads the arguments now (`args`), takes a place in the queue now, and runs `op` after every
/// earlier call on this object. Errors become rejected promises carrying a `SessionError`.
pub fn queued<S, A, F>(
    state: &Rc<S>,
    what: &str,
    args: impl FnOnce() -> Result<A>,
    op: F,
) -> Promise
where
    S: SessionState,
    A: 'static,
    F: AsyncFnOnce(&S, A) -> Result<JsValue> + 'static,
{
    enqueue(state, what, args, op, session_error)
}

/// [`queued`] for work whose errors are already JS errors (work done outside this module): they
/// are passed on as they are.
pub fn in_order<S, A, F>(
    state: &Rc<S>,
    what: &str,
    args: impl FnOnce() -> Result<A>,
    work: F,
) -> Promise
where
    S: SessionState,
    A: 'static,
    F: AsyncFnOnce(&S, A) -> std::result::Result<JsValue, JsValue> + 'static,
{
    enqueue(state, what, args, work, JsValue::clone)
}

/// [`queued`] and [`in_order`], whose errors `to_js` makes JS values.
fn enqueue<S, A, E, F>(
    state: &Rc<S>,
    what: &str,
    args: impl FnOnce() -> Result<A>,
    work: F,
    to_js: fn(&E) -> JsValue,
) -> Promise
where
    S: SessionState,
    A: 'static,
    E: 'static,
    F: AsyncFnOnce(&S, A) -> std::result::Result<JsValue, E> + 'static,
{
    let args = match state.core().check_open(what).and_then(|()| args()) {
        Ok(args) => args,
        Err(e) => return rejected(e),
    };
    let op_state = state.clone();
    run_queued(
        state.core(),
        Box::pin(async move { work(&op_state, args).await }),
        to_js,
    )
}

/// A promise rejected with `e` as a `SessionError`; one copy for every method.
#[inline(never)]
pub fn rejected(e: SessionError) -> Promise {
    Promise::reject(&session_error(&e))
}

/// The part of [`enqueue`] that is the same for every method, compiled once per kind of error:
/// takes the place in the queue now, and runs `op` once every earlier call on this object has
/// finished.
#[inline(never)]
fn run_queued<E: 'static>(
    core: &SessionCore,
    op: Pin<Box<dyn Future<Output = std::result::Result<JsValue, E>>>>,
    to_js: fn(&E) -> JsValue,
) -> Promise {
    let mut ticket = core.queue.enter();
    js_promise(Box::pin(async move {
        ticket.ready().await;
        let result = op.await;
        drop(ticket);
        result.map_err(|e| to_js(&e))
    }))
}

/// `close()`: marks the session closed now, so every later call rejects with `CLOSED`, and
/// resolves once every earlier call has taken effect. Closing again resolves at once.
pub fn close<S: SessionState>(state: &Rc<S>) -> Promise {
    if state.core().closed.get() {
        return Promise::resolve(&JsValue::UNDEFINED);
    }
    let promise = queued(
        state,
        "close",
        || Ok(()),
        async |s, ()| s.close().await.map(|()| JsValue::UNDEFINED),
    );
    state.core().closed.set(true);
    promise
}

/// A promise of `work`, whose error becomes a rejection carrying a `SessionError`.
pub fn promise(work: impl Future<Output = Result<JsValue>> + 'static) -> Promise {
    boxed_promise(Box::pin(work))
}

/// A promise of `work` on the arguments read now (`args`); arguments that could not be read
/// reject it at once, and nothing runs.
pub fn promise_of<A, W>(args: Result<A>, work: impl FnOnce(A) -> W) -> Promise
where
    W: Future<Output = Result<JsValue>> + 'static,
{
    match args {
        Ok(args) => promise(work(args)),
        Err(e) => rejected(e),
    }
}

/// The part of [`promise`] that is the same for every caller, compiled once.
fn boxed_promise(work: Pin<Box<dyn Future<Output = Result<JsValue>>>>) -> Promise {
    js_promise(Box::pin(async move {
        work.await.map_err(|e| session_error(&e))
    }))
}

/// `getItems(limit)`: the newest items within `limit`; without one, the newest
/// `settings.turns` whole turns, else the newest `settings.limit` items, else all. A JS array.
pub async fn get_items<S: SessionState>(state: &S, limit: Option<Limit>) -> Result<JsValue> {
    let items = match Window::resolve(limit, &state.core().settings) {
        Window::Items(limit) => state.get_items(limit).await?,
        Window::Turns(turns) => state.recent_turns(turns).await?,
    };
    Ok(JsValue::from(items))
}

/// `getRecentTurns(n)`: the items of the newest `n` whole turns, flat and oldest first.
pub async fn recent_turns<S: SessionState>(state: &S, turns: Limit) -> Result<JsValue> {
    let items = state.recent_turns(turns).await?;
    Ok(JsValue::from(items))
}
