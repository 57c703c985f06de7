//! The state behind one `IndexedDbSession` object: which database, which session, as whom.

use std::rc::Rc;

use wasm_bindgen::JsValue;

use crate::backend::js::now;
use crate::backend::session::{SessionCore, SessionState};
use crate::core::error::Result;
use crate::core::history::{Limit, SessionSettings};

use super::open::{connection, Connection};
use super::ops::{self, Target};
use super::rewrite;
use crate::backend::args::ReplaceOptions;
use crate::backend::metadata::Changes;
use crate::backend::transaction::{FunctionCallReplacement, TakenTransaction};

pub struct IdbSessionState {
    core: SessionCore,
    pub db_name: String,
    pub user_id: Option<String>,
}

impl IdbSessionState {
    pub fn new(
        db_name: String,
        session_id: String,
        user_id: Option<String>,
        settings: SessionSettings,
    ) -> Self {
        IdbSessionState {
            core: SessionCore::new(session_id, settings),
            db_name,
            user_id,
        }
    }

    fn target(&self) -> Target<'_> {
        Target {
            session_id: &self.core.session_id,
            user_id: self.user_id.as_deref(),
        }
    }

    /// The connection to this session's database, opened on first use and shared.
    async fn connection(&self) -> Result<Rc<Connection>> {
        connection(&self.db_name).await
    }
}

impl SessionState for IdbSessionState {
    fn core(&self) -> &SessionCore {
        &self.core
    }

    async fn get_items(&self, limit: Limit) -> Result<Vec<JsValue>> {
        ops::get_items(&*self.connection().await?, &self.target(), limit).await
    }

    async fn recent_turns(&self, turns: Limit) -> Result<Vec<JsValue>> {
        ops::recent_turns(&*self.connection().await?, &self.target(), turns).await
    }

    async fn info(&self) -> Result<JsValue> {
        ops::info(&*self.connection().await?, &self.target()).await
    }

    async fn update(&self, changes: Changes) -> Result<()> {
        ops::update(&*self.connection().await?, &self.target(), &changes, now()).await
    }

    async fn add_items(&self, items: Vec<(JsValue, bool)>) -> Result<()> {
        ops::add_items(&*self.connection().await?, &self.target(), items, now()).await
    }

    async fn pop_item(&self) -> Result<Option<JsValue>> {
        ops::pop_item(&*self.connection().await?, &self.target(), now()).await
    }

    async fn clear(&self) -> Result<()> {
        ops::clear_session(&*self.connection().await?, &self.target(), now()).await
    }

    /// Nothing to release: the connection is shared with the other sessions of the database and
    /// stays open (the browser's `versionchange` or a deletion of the database closes it).
    async fn close(&self) -> Result<()> {
        Ok(())
    }

    async fn apply_transaction(&self, taken: TakenTransaction) -> Result<()> {
        rewrite::apply_transaction(&*self.connection().await?, &self.target(), taken, now()).await
    }

    async fn apply_mutations(&self, mutations: Vec<FunctionCallReplacement>) -> Result<()> {
        rewrite::apply_mutations(&*self.connection().await?, &self.target(), mutations, now()).await
    }

    async fn replace_history(
        &self,
        items: Vec<(JsValue, bool)>,
        options: ReplaceOptions,
    ) -> Result<()> {
        let conn = self.connection().await?;
        rewrite::replace_history(&conn, &self.target(), items, options, now()).await
    }

    async fn archived_items(&self, limit: Option<u64>, skip: u64) -> Result<Vec<JsValue>> {
        rewrite::archived_items(&*self.connection().await?, &self.target(), limit, skip).await
    }
}
