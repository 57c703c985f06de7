//! [`Store`]: either backend behind one [`SessionState`], so that the exported session class,
//! its export shims and the queued call around each method are compiled once for both kinds of
//! session rather than once per kind.

use wasm_bindgen::JsValue;

use crate::core::branch::Usage;
use crate::core::error::Result;
use crate::core::history::Limit;

use super::args::ReplaceOptions;
use super::branch_js::From;
use super::indexeddb::IdbSessionState;
use super::memory::MemorySessionState;
use super::metadata::Changes;
use super::session::{SessionCore, SessionState};
use super::transaction::{FunctionCallReplacement, TakenTransaction};

/// Where a session object keeps its items.
pub enum Store {
    IndexedDb(IdbSessionState),
    Memory(MemorySessionState),
}

/// Runs `$call` on whichever backend `$store` is.
macro_rules! on_backend {
    ($store:expr, $s:ident => $call:expr) => {
        match $store {
            Store::IndexedDb($s) => $call,
            Store::Memory($s) => $call,
        }
    };
}

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
    async fn update(&self, changes: Changes) -> Result<()> {
        on_backend!(self, s => s.update(changes).await)
    }
    async fn add_items(&self, items: Vec<(JsValue, bool)>) -> Result<()> {
        on_backend!(self, s => s.add_items(items).await)
    }
    async fn pop_item(&self) -> Result<Option<JsValue>> {
        on_backend!(self, s => s.pop_item().await)
    }
    async fn clear(&self) -> Result<()> {
        on_backend!(self, s => s.clear().await)
    }
    async fn close(&self) -> Result<()> {
        on_backend!(self, s => s.close().await)
    }
    async fn apply_transaction(&self, taken: TakenTransaction) -> Result<()> {
        on_backend!(self, s => s.apply_transaction(taken).await)
    }
    async fn apply_mutations(&self, mutations: Vec<FunctionCallReplacement>) -> Result<()> {
        on_backend!(self, s => s.apply_mutations(mutations).await)
    }
    async fn replace_history(
        &self,
        items: Vec<(JsValue, bool)>,
        options: ReplaceOptions,
    ) -> Result<()> {
        on_backend!(self, s => s.replace_history(items, options).await)
    }
    async fn archived_items(&self, limit: Option<u64>, skip: u64) -> Result<Vec<JsValue>> {
        on_backend!(self, s => s.archived_items(limit, skip).await)
    }
    fn branch(&self) -> String {
        on_backend!(self, s => s.branch())
    }
    async fn create_branch(&self, pick: From, name: Option<String>) -> Result<String> {
        on_backend!(self, s => s.create_branch(pick, name).await)
    }
    async fn switch_branch(&self, id: String) -> Result<()> {
        on_backend!(self, s => s.switch_branch(id).await)
    }
    async fn list_branches(&self) -> Result<JsValue> {
        on_backend!(self, s => s.list_branches().await)
    }
    async fn delete_branch(&self, id: String) -> Result<()> {
        on_backend!(self, s => s.delete_branch(id).await)
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
    async fn turn_usage(&self, turn: Option<u64>) -> Result<JsValue> {
        on_backend!(self, s => s.turn_usage(turn).await)
    }
}
