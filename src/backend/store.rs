//! [`Store`]: the backend behind the exported session class, so that its export shims and the
//! queued call around each method are written once. Each module holds one backend: the main
//! module an `IndexedDbSession`'s (`IndexedDb`), the memory module a `MemorySession`'s
//! (`Memory`), whose items live in that module's memory; a build with both features (the
//! native and test builds) has both.
//!
//! The methods of [`super::methods`] are served for an `IndexedDbSession` by the second sessions
//! module: the package's JS calls them there through [`in_order`], and their IndexedDB code is
//! not in the main module.

use wasm_bindgen::JsValue;

use crate::core::branch::Usage;
use crate::core::error::Result;
use crate::core::history::Limit;

use super::args::ReplaceOptions;
use super::branch_js::From;
#[cfg(feature = "sessions")]
use super::indexeddb::IdbSessionState;
#[cfg(feature = "memory")]
use super::memory::MemorySessionState;
use super::metadata::{Applied, Changes};
use super::session::{SessionCore, SessionState};
use super::transaction::{FunctionCallReplacement, TakenTransaction};
#[cfg(feature = "sessions")]
pub use second_module::in_order;

/// Where a session object keeps its items.
pub enum Store {
    #[cfg(feature = "sessions")]
    IndexedDb(IdbSessionState),
    #[cfg(feature = "memory")]
    Memory(MemorySessionState),
}

/// Runs `$call` on whichever backend `$store` is.
macro_rules! on_backend {
    ($store:expr, $s:ident => $call:expr) => {
        match $store {
            #[cfg(feature = "sessions")]
            Store::IndexedDb($s) => $call,
            #[cfg(feature = "memory")]
            Store::Memory($s) => $call,
        }
    };
}

/// Runs `$call` on a `MemorySession`'s store; an `IndexedDbSession` has this method served by
/// the second module (the package's JS never calls it here).
macro_rules! on_memory {
    ($store:expr, $what:literal, $s:ident => $call:expr) => {
        match $store {
            #[cfg(feature = "sessions")]
            Store::IndexedDb(_) => Err(elsewhere($what)),
            #[cfg(feature = "memory")]
            Store::Memory($s) => $call,
        }
    };
}

/// What the main module does for the methods the second module serves.
#[cfg(feature = "sessions")]
mod second_module {
    use std::rc::Rc;

    use js_sys::{Array, Function, Promise};
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;

    use super::Store;
    use crate::backend::{js, methods, session};
    use crate::core::error::{SessionError, SessionErrorCode};

    pub(super) fn elsewhere(what: &str) -> SessionError {
        SessionError::new(
            SessionErrorCode::InvalidSession,
            format!("{what} of an IndexedDbSession is served by the second sessions module"),
        )
    }

    /// Runs the method `what` of `state`, an `IndexedDbSession`, in the second module, in the
    /// object's call order. Its arguments `args` are read and checked now, as any method's
    /// ([`methods::taken`]: a bad one rejects at once, and items are copied). When every earlier
    /// call is done, `op(context, args)` (the package's JS) runs it there, with what the second
    /// module needs to act as this object (`IdbSessionState::context`, read then), and resolves to
    /// `{ value, branch, branchCreatedAt }`: the method's result, and the branch the object is on
    /// after it (and when that was created, if read), which it moves to here.
    pub fn in_order(state: &Rc<Store>, what: &str, args: &Array, op: Function) -> Promise {
        let read = || methods::taken(what, args);
        session::in_order(
            state,
            what,
            read,
            async move |store: &Store, args: Array| {
                #[allow(irrefutable_let_patterns)]
                let Store::IndexedDb(s) = store
                else {
                    return Err(crate::backend::error::session_error(&elsewhere(
                        "a method of the second module",
                    )));
                };
                let promise = op.call2(&JsValue::UNDEFINED, &s.context(), &args)?;
                let done = JsFuture::from(promise.dyn_into::<Promise>()?).await?;
                if let Some(branch) = js::get(&done, "branch")?.as_string() {
                    s.move_to(branch, js::get(&done, "branchCreatedAt")?.as_f64());
                }
                js::get(&done, "value")
            },
        )
    }
}

#[cfg(feature = "sessions")]
use second_module::elsewhere;

// Without the memory backend, the methods only it serves here leave their arguments unread.
#[cfg_attr(not(feature = "memory"), allow(unused_variables))]
impl SessionState for Store {
    fn core(&self) -> &SessionCore {
        on_backend!(self, s => s.core())
    }
    async fn get_items(&self, limit: Limit) -> Result<Vec<JsValue>> {
        on_backend!(self, s => s.get_items(limit).await)
    }
    async fn recent_turns(&self, turns: Limit) -> Result<Vec<JsValue>> {
        on_backend!(self, s => s.recent_turns(turns).await)
    }
    async fn info(&self) -> Result<JsValue> {
        on_backend!(self, s => s.info().await)
    }
    async fn update(&self, changes: Changes) -> Result<Applied> {
        on_backend!(self, s => s.update(changes).await)
    }
    async fn add_items(&self, items: Vec<(JsValue, bool)>) -> Result<()> {
        on_backend!(self, s => s.add_items(items).await)
    }
    async fn pop_item(&self) -> Result<Option<JsValue>> {
        on_backend!(self, s => s.pop_item().await)
    }
    async fn clear(&self) -> Result<bool> {
        on_backend!(self, s => s.clear().await)
    }
    async fn close(&self) -> Result<()> {
        on_backend!(self, s => s.close().await)
    }
    async fn apply_transaction(&self, taken: TakenTransaction) -> Result<bool> {
        on_backend!(self, s => s.apply_transaction(taken).await)
    }
    async fn apply_mutations(&self, mutations: Vec<FunctionCallReplacement>) -> Result<bool> {
        on_memory!(self, "applyHistoryMutations", s => s.apply_mutations(mutations).await)
    }
    async fn replace_history(
        &self,
        items: Vec<(JsValue, bool)>,
        options: ReplaceOptions,
    ) -> Result<()> {
        on_memory!(self, "replaceHistory", s => s.replace_history(items, options).await)
    }
    async fn archived_items(&self, limit: Option<u64>, skip: u64) -> Result<Vec<JsValue>> {
        on_memory!(self, "getArchivedItems", s => s.archived_items(limit, skip).await)
    }
    fn branch(&self) -> String {
        on_backend!(self, s => s.branch())
    }
    async fn create_branch(&self, pick: From, name: Option<String>) -> Result<String> {
        on_memory!(self, "createBranch", s => s.create_branch(pick, name).await)
    }
    async fn switch_branch(&self, id: String) -> Result<bool> {
        on_backend!(self, s => s.switch_branch(id).await)
    }
    async fn list_branches(&self) -> Result<JsValue> {
        on_backend!(self, s => s.list_branches().await)
    }
    async fn delete_branch(&self, id: String) -> Result<()> {
        on_memory!(self, "deleteBranch", s => s.delete_branch(id).await)
    }
    async fn turns(&self, branch: Option<String>, query: Option<String>) -> Result<JsValue> {
        on_backend!(self, s => s.turns(branch, query).await)
    }
    async fn tool_usage(&self, branch: Option<String>) -> Result<JsValue> {
        on_backend!(self, s => s.tool_usage(branch).await)
    }
    async fn store_usage(&self, usage: Usage) -> Result<()> {
        on_backend!(self, s => s.store_usage(usage).await)
    }
    async fn session_usage(&self, branch: Option<String>) -> Result<JsValue> {
        on_backend!(self, s => s.session_usage(branch).await)
    }
    async fn turn_usage(&self, branch: Option<String>, turn: Option<u64>) -> Result<JsValue> {
        on_backend!(self, s => s.turn_usage(branch, turn).await)
    }
}
