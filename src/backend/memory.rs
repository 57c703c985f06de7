//! The memory backend: the core's [`MemoryHistory`] holding JS values. Items are copied with the
//! structured clone on the way in and on the way out, as IndexedDB would, so both backends
//! behave the same to a caller.

use std::cell::RefCell;

use wasm_bindgen::JsValue;

use crate::core::error::{ErrorCode, Result, SessionError};
use crate::core::history::{Limit, SessionSettings};
use crate::core::memory::MemoryHistory;

use super::js::{clone_value, now};
use super::Closed;

pub struct MemorySessionState {
    pub session_id: String,
    pub settings: SessionSettings,
    history: RefCell<MemoryHistory<JsValue>>,
    closed: Closed,
}

fn copy_out(item: &JsValue) -> Result<JsValue> {
    clone_value(item).map_err(|e| {
        SessionError::new(
            ErrorCode::StorageError,
            format!("copying a stored item: {e}"),
        )
    })
}

impl MemorySessionState {
    pub fn new(session_id: String, settings: SessionSettings) -> Self {
        MemorySessionState {
            history: RefCell::new(MemoryHistory::new(&session_id, now())),
            session_id,
            settings,
            closed: Closed::default(),
        }
    }

    pub fn check_open(&self, what: &str) -> Result<()> {
        self.closed.check(what)
    }

    pub fn close(&self) {
        self.closed.set();
        self.history.borrow_mut().clear(now());
    }

    pub fn get_items(&self, limit: Option<Limit>) -> Result<Vec<JsValue>> {
        let limit = Limit::resolve(limit, self.settings.limit);
        let history = self.history.borrow();
        history.items(limit).map(|e| copy_out(&e.item)).collect()
    }

    pub fn add_items(&self, items: Vec<(JsValue, bool)>) {
        self.history.borrow_mut().add(items, now());
    }

    pub fn pop_item(&self) -> Option<JsValue> {
        // The popped value leaves the store, so it needs no copy: nobody else holds it.
        self.history.borrow_mut().pop(now())
    }

    pub fn clear(&self) {
        self.history.borrow_mut().clear(now());
    }
}
