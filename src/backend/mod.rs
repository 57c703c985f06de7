//! Storage backends and the conversions between JavaScript values and the core.

pub mod indexeddb;
pub mod js;
pub mod memory;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsValue;

use crate::core::error::{Result, SessionError};
use crate::core::history::{Limit, SessionSettings};
use crate::core::queue::OpQueue;

use indexeddb::{Connection, Target};

/// The state behind one `IndexedDbSession` object.
pub struct IdbSessionState {
    pub db_name: String,
    pub session_id: String,
    pub user_id: Option<String>,
    pub settings: SessionSettings,
    connection: RefCell<Option<Rc<Connection>>>,
    closed: Cell<bool>,
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
            connection: RefCell::new(None),
            closed: Cell::new(false),
            queue: OpQueue::new(),
        }
    }

    pub fn target(&self) -> Target<'_> {
        Target {
            session_id: &self.session_id,
            user_id: self.user_id.as_deref(),
        }
    }

    /// Refuses calls made after `close()`. Checked when a call is made, not when it runs.
    pub fn check_open(&self, what: &str) -> Result<()> {
        if self.closed.get() {
            Err(SessionError::closed(what))
        } else {
            Ok(())
        }
    }

    /// The open connection, opening the database on first use (and again if the browser
    /// closed it).
    pub async fn connection(&self) -> Result<Rc<Connection>> {
        let current = self.connection.borrow().clone();
        if let Some(c) = current {
            if !c.is_stale() {
                return Ok(c);
            }
        }
        let c = Rc::new(indexeddb::open(&self.db_name).await?);
        *self.connection.borrow_mut() = Some(c.clone());
        Ok(c)
    }

    pub fn queue(&self) -> &OpQueue {
        &self.queue
    }

    /// Marks the session closed now; the connection closes once earlier calls are done.
    pub fn mark_closed(&self) {
        self.closed.set(true);
    }

    pub fn release_connection(&self) {
        if let Some(c) = self.connection.borrow_mut().take() {
            c.close();
        }
    }

    pub async fn get_items(self: Rc<Self>, limit: Option<Limit>) -> Result<Vec<JsValue>> {
        let limit = Limit::resolve(limit, self.settings.limit);
        let conn = self.connection().await?;
        indexeddb::get_items(&conn, &self.target(), limit).await
    }
}

/// Runs `f` once with a temporary connection to `db_name`, for the functions that are not
/// tied to a session object (`listSessions`, `deleteSession`).
pub async fn with_database<T, F, Fut>(db_name: &str, f: F) -> Result<T>
where
    F: FnOnce(Rc<Connection>) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let conn = Rc::new(indexeddb::open(db_name).await?);
    let result = f(conn.clone()).await;
    conn.close();
    result
}
