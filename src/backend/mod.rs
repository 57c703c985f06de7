//! Storage backends and the conversions between JavaScript values and the core.

pub mod indexeddb;
pub mod js;
pub mod memory;
#[cfg(feature = "runner")]
pub mod model;
#[cfg(feature = "runner")]
pub mod run_options;
#[cfg(feature = "runner")]
pub mod runner;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use wasm_bindgen::JsValue;

use crate::core::error::{Result, SessionError};
use crate::core::history::{Limit, SessionSettings};
use crate::core::queue::OpQueue;

use indexeddb::{Connection, Target};

thread_local! {
    /// One connection per database name, shared by every session object and by `listSessions`
    /// and `deleteSession`: opening IndexedDB costs more than any single read.
    static CONNECTIONS: RefCell<HashMap<String, Rc<Connection>>> = RefCell::new(HashMap::new());
}

/// The shared connection to `db_name`, opening (or reopening, after the browser closed it) the
/// database when needed.
pub async fn connection(db_name: &str) -> Result<Rc<Connection>> {
    let current = CONNECTIONS.with(|c| c.borrow().get(db_name).cloned());
    if let Some(c) = current {
        if !c.is_stale() {
            return Ok(c);
        }
    }
    let opened = Rc::new(indexeddb::open(db_name).await?);
    // Another call may have opened the database while this one waited: keep one connection and
    // close the other, so no connection is left open that could block another tab's upgrade.
    let existing = CONNECTIONS.with(|c| c.borrow().get(db_name).cloned());
    if let Some(c) = existing.filter(|c| !c.is_stale()) {
        opened.close();
        return Ok(c);
    }
    CONNECTIONS.with(|pool| {
        pool.borrow_mut()
            .insert(db_name.to_string(), opened.clone())
    });
    Ok(opened)
}

/// Whether a session object was closed. Checked when a call is made, not when it runs, so a
/// call made after `close()` is refused even while earlier calls are still under way.
#[derive(Debug, Default)]
pub struct Closed(Cell<bool>);

impl Closed {
    /// Refuses `what` once the session is closed.
    pub fn check(&self, what: &str) -> Result<()> {
        if self.0.get() {
            Err(SessionError::closed(what))
        } else {
            Ok(())
        }
    }

    pub fn set(&self) {
        self.0.set(true);
    }
}

/// The state behind one `IndexedDbSession` object.
pub struct IdbSessionState {
    pub db_name: String,
    pub session_id: String,
    pub user_id: Option<String>,
    pub settings: SessionSettings,
    closed: Closed,
    queue: OpQueue,
}

impl IdbSessionState {
    pub fn new(
        db_name: String,
        session_id: String,
        user_id: Option<String>,
        settings: SessionSettings,
    ) -> Self {
        IdbSessionState {
            db_name,
            session_id,
            user_id,
            settings,
            closed: Closed::default(),
            queue: OpQueue::new(),
        }
    }

    pub fn target(&self) -> Target<'_> {
        Target {
            session_id: &self.session_id,
            user_id: self.user_id.as_deref(),
        }
    }

    /// Refuses calls made after `close()`.
    pub fn check_open(&self, what: &str) -> Result<()> {
        self.closed.check(what)
    }

    /// The connection to this session's database, opened on first use.
    pub async fn connection(&self) -> Result<Rc<Connection>> {
        connection(&self.db_name).await
    }

    pub fn queue(&self) -> &OpQueue {
        &self.queue
    }

    /// Marks the session closed: calls made from now on are refused. (The connection is shared
    /// with other sessions of the database and stays open; the browser's `versionchange` or a
    /// deletion of the database closes it.)
    pub fn mark_closed(&self) {
        self.closed.set();
    }

    pub async fn get_items(self: Rc<Self>, limit: Option<Limit>) -> Result<Vec<JsValue>> {
        let limit = Limit::resolve(limit, self.settings.limit);
        let conn = self.connection().await?;
        indexeddb::get_items(&conn, &self.target(), limit).await
    }
}
