//! The memory backend: the core's [`MemoryHistory`] holding JS values. Items are copied with the
//! structured clone on the way in and on the way out, as IndexedDB would, so both backends
//! behave the same to a caller.

use std::cell::RefCell;

use js_sys::Object;
use wasm_bindgen::JsValue;

use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::history::{Limit, SessionSettings};
use crate::core::memory::MemoryHistory;
use crate::core::transaction::check_whole_history;

use super::args::ReplaceOptions;
use super::canonical::canonical;
use super::js::{self, clone_value, error_text, now};
use super::metadata::{give_default_title, info, Changes};
use super::session::{SessionCore, SessionState};
use super::transaction::{FunctionCallReplacement, TakenTransaction};

pub struct MemorySessionState {
    core: SessionCore,
    history: RefCell<MemoryHistory<JsValue>>,
    /// The metadata (title, summary, topics, state), on an object as a stored record holds it.
    metadata: JsValue,
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
        MemorySessionState {
            history: RefCell::new(MemoryHistory::new(&session_id, now())),
            core: SessionCore::new(session_id, settings),
            metadata: Object::new().into(),
        }
    }
}

impl SessionState for MemorySessionState {
    fn core(&self) -> &SessionCore {
        &self.core
    }

    async fn get_items(&self, limit: Limit) -> Result<Vec<JsValue>> {
        let history = self.history.borrow();
        history.items(limit).map(|e| copy_out(&e.item)).collect()
    }

    async fn recent_turns(&self, turns: Limit) -> Result<Vec<JsValue>> {
        let history = self.history.borrow();
        history
            .recent_turns(turns)
            .iter()
            .map(|e| copy_out(&e.item))
            .collect()
    }

    async fn info(&self) -> Result<JsValue> {
        let history = self.history.borrow();
        let record = history.record();
        // Each read gets its own copy, as from IndexedDB.
        let metadata = copy_out(&self.metadata)?;
        let written = record.item_count > 0 || record.next_seq > 0;
        Ok(info(
            &self.core.session_id,
            None,
            written.then_some(record),
            &metadata,
        ))
    }

    async fn update(&self, changes: Changes) -> Result<()> {
        changes.apply(&self.metadata);
        Ok(())
    }

    async fn add_items(&self, items: Vec<(JsValue, bool)>) -> Result<()> {
        give_default_title(&self.metadata, &items);
        self.history.borrow_mut().add(items, now())
    }

    async fn pop_item(&self) -> Result<Option<JsValue>> {
        // The popped value leaves the store, so it needs no copy: nobody else holds it.
        Ok(self.history.borrow_mut().pop(now()))
    }

    async fn clear(&self) -> Result<()> {
        self.history.borrow_mut().clear(now());
        Ok(())
    }

    /// A closed memory session lets go of its items.
    async fn close(&self) -> Result<()> {
        self.clear().await
    }

    async fn apply_transaction(&self, taken: TakenTransaction) -> Result<()> {
        let TakenTransaction {
            transaction, items, ..
        } = taken;
        let mut history = self.history.borrow_mut();
        let stored: Vec<Option<String>> = history
            .newest(transaction.expected_suffix.len())
            .iter()
            .map(|e| canonical(&e.item).ok())
            .collect();
        let title_from = items.clone();
        history.apply_transaction(&transaction, items, &stored, now())?;
        give_default_title(&self.metadata, &title_from);
        Ok(())
    }

    async fn apply_mutations(&self, mutations: Vec<FunctionCallReplacement>) -> Result<()> {
        let call_id_of = |item: &JsValue| {
            let text = |key: &str| js::get(item, key).ok().and_then(|v| v.as_string());
            (text("type").as_deref() == Some("function_call"))
                .then(|| text("callId"))
                .flatten()
        };
        let mut history = self.history.borrow_mut();
        for m in mutations {
            history.replace_function_call(&m.call_id, m.replacement, call_id_of, now());
        }
        Ok(())
    }

    async fn replace_history(
        &self,
        items: Vec<(JsValue, bool)>,
        options: ReplaceOptions,
    ) -> Result<()> {
        let mut history = self.history.borrow_mut();
        if let Some(expected) = &options.expected {
            let stored: Vec<Option<String>> = history
                .newest(usize::MAX)
                .iter()
                .map(|e| canonical(&e.item).ok())
                .collect();
            check_whole_history(&self.core.session_id, expected, &stored)?;
        }
        history.replace_all(items, options.archive, now())
    }

    async fn archived_items(&self, limit: Option<u64>, skip: u64) -> Result<Vec<JsValue>> {
        let history = self.history.borrow();
        history.archived(limit, skip).iter().map(copy_out).collect()
    }
}
