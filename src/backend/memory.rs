//! The memory backend: the core's [`MemoryHistory`] holding JS values. Items are copied with the
//! structured clone on the way in and on the way out, as IndexedDB would, so both backends
//! behave the same to a caller.

use std::cell::RefCell;

use wasm_bindgen::JsValue;

use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::history::{Limit, SessionSettings};
use crate::core::memory::MemoryHistory;

use super::js::{clone_value, error_text, now};
use super::session::{SessionCore, SessionState};

pub struct MemorySessionState {
    core: SessionCore,
    history: RefCell<MemoryHistory<JsValue>>,
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

    async fn add_items(&self, items: Vec<(JsValue, bool)>) -> Result<()> {
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
}
