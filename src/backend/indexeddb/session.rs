//! The state behind one `IndexedDbSession` object: which database, which session, as whom.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsValue;

use crate::backend::js::{self, now};
use crate::backend::session::{SessionCore, SessionState};
use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::history::{Limit, SessionSettings};

use super::branches;
use super::open::{connection, Connection};
use super::ops::{self, SeenView, Target};
use super::rewrite;
use crate::backend::args::ReplaceOptions;
use crate::backend::branch_js::From;
use crate::backend::metadata::{Applied, Changes};
use crate::backend::transaction::{FunctionCallReplacement, TakenTransaction};
use crate::core::branch::{Usage, MAIN};

pub struct IdbSessionState {
    core: SessionCore,
    pub db_name: String,
    pub user_id: Option<String>,
    /// The branch every protocol method acts on.
    branch: RefCell<String>,
    /// See [`Target::branch_at`].
    branch_at: Cell<Option<f64>>,
    /// Whether the search index takes tool calls' arguments and outputs of this object's writes.
    index_tools: bool,
    /// See [`Target::seen`].
    seen: Cell<Option<(u64, u64, u64)>>,
    /// See [`Target::seen_view`].
    seen_view: Cell<Option<SeenView>>,
}

impl IdbSessionState {
    pub fn new(
        db_name: String,
        session_id: String,
        user_id: Option<String>,
        settings: SessionSettings,
        branch: String,
        branch_at: Option<f64>,
        index_tools: bool,
    ) -> Self {
        IdbSessionState {
            core: SessionCore::new(session_id, settings),
            db_name,
            user_id,
            branch: RefCell::new(branch),
            branch_at: Cell::new(branch_at),
            index_tools,
            seen: Cell::new(None),
            seen_view: Cell::new(None),
        }
    }

    /// What a call on this object's branch acts on.
    fn target(&self) -> Target<'_> {
        Target {
            branch_at: Some(&self.branch_at),
            ..self.named()
        }
    }

    /// What a call on `branch` acts on, and which branch: this object's when `None`.
    fn on(&self, branch: Option<String>) -> (Target<'_>, String) {
        match branch {
            Some(b) => (self.named(), b),
            None => (self.target(), self.branch()),
        }
    }

    /// What a call on a branch the caller names acts on (whichever branch has that name now).
    fn named(&self) -> Target<'_> {
        Target {
            session_id: &self.core.session_id,
            user_id: self.user_id.as_deref(),
            index_tools: self.index_tools,
            seen: &self.seen,
            seen_view: &self.seen_view,
            branch_at: None,
        }
    }

    /// What the second sessions module needs to act as this object does (see
    /// `backend::store::in_order`): `{ dbName, sessionId, userId, branch, branchCreatedAt, indexTools }`.
    pub fn context(&self) -> JsValue {
        let user = self
            .user_id
            .as_deref()
            .map_or(JsValue::NULL, JsValue::from_str);
        js::object(&[
            ("dbName", self.db_name.as_str().into()),
            ("sessionId", self.core.session_id.as_str().into()),
            ("userId", user),
            ("branch", self.branch.borrow().as_str().into()),
            ("branchCreatedAt", self.branch_created_at()),
            ("indexTools", self.index_tools.into()),
        ])
        .into()
    }

    /// The object [`Self::context`] describes, with default settings (the methods the second
    /// module serves read none).
    pub fn from_context(context: &JsValue) -> Result<Self> {
        let text = |key: &'static str| js::get(context, key).ok().and_then(|v| v.as_string());
        let (Some(db_name), Some(session_id), Some(branch)) =
            (text("dbName"), text("sessionId"), text("branch"))
        else {
            return Err(SessionError::new(
                SessionErrorCode::InvalidOptions,
                "the context of a session method is not what IndexedDbSession gives",
            ));
        };
        let index_tools = js::get(context, "indexTools").is_ok_and(|v| v.is_truthy());
        Ok(IdbSessionState::new(
            db_name,
            session_id,
            text("userId"),
            SessionSettings::default(),
            branch,
            js::get(context, "branchCreatedAt")
                .ok()
                .and_then(|v| v.as_f64()),
            index_tools,
        ))
    }

    /// When this object's branch was created, if a call has read it (else `null`): for
    /// [`Self::context`] and the second module's answer.
    pub fn branch_created_at(&self) -> JsValue {
        self.branch_at
            .get()
            .map_or(JsValue::NULL, JsValue::from_f64)
    }

    /// Moves this object to `branch`, created at `at` (`None`: not read yet).
    pub fn move_to(&self, branch: String, at: Option<f64>) {
        *self.branch.borrow_mut() = branch;
        self.branch_at.set(at);
    }

    fn on_main(&self) -> bool {
        *self.branch.borrow() == MAIN
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
        let conn = self.connection().await?;
        match self.on_main() {
            true => ops::get_items(&conn, &self.target(), limit).await,
            false => branches::get_items(&conn, &self.target(), &self.branch(), limit).await,
        }
    }

    async fn recent_turns(&self, turns: Limit) -> Result<Vec<JsValue>> {
        let conn = self.connection().await?;
        match self.on_main() {
            true => ops::recent_turns(&conn, &self.target(), turns).await,
            false => branches::recent_turns(&conn, &self.target(), &self.branch(), turns).await,
        }
    }

    async fn info(&self) -> Result<JsValue> {
        let conn = self.connection().await?;
        branches::info(&conn, &self.target(), &self.branch()).await
    }

    async fn update(&self, changes: Changes) -> Result<Applied> {
        let branch = (!self.on_main()).then(|| self.branch());
        let conn = self.connection().await?;
        ops::update(&conn, &self.target(), branch.as_deref(), &changes, now()).await
    }

    async fn add_items(&self, items: Vec<(JsValue, bool)>) -> Result<()> {
        // Nothing to write: not even the database is opened (it may be out of reach).
        if items.is_empty() {
            return Ok(());
        }
        let conn = self.connection().await?;
        match self.on_main() {
            true => ops::add_items(&conn, &self.target(), items, now()).await,
            false => branches::add_items(&conn, &self.target(), &self.branch(), items, now()).await,
        }
    }

    async fn pop_item(&self) -> Result<Option<JsValue>> {
        let conn = self.connection().await?;
        match self.on_main() {
            true => ops::pop_item(&conn, &self.target(), now()).await,
            false => branches::pop_item(&conn, &self.target(), &self.branch(), now()).await,
        }
    }

    async fn clear(&self) -> Result<bool> {
        let conn = self.connection().await?;
        match self.on_main() {
            true => ops::clear_session(&conn, &self.target(), now()).await,
            false => branches::clear(&conn, &self.target(), &self.branch(), now()).await,
        }
    }

    /// Nothing to release: the connection is shared with the other sessions of the database and
    /// stays open (the browser's `versionchange` or a deletion of the database closes it).
    async fn close(&self) -> Result<()> {
        Ok(())
    }

    async fn apply_transaction(&self, taken: TakenTransaction) -> Result<bool> {
        let conn = self.connection().await?;
        match self.on_main() {
            true => rewrite::apply_transaction(&conn, &self.target(), taken, now()).await,
            false => {
                let branch = self.branch();
                branches::apply_transaction(&conn, &self.target(), &branch, taken, now()).await
            }
        }
    }

    async fn apply_mutations(&self, mutations: Vec<FunctionCallReplacement>) -> Result<bool> {
        let conn = self.connection().await?;
        match self.on_main() {
            true => rewrite::apply_mutations(&conn, &self.target(), mutations, now()).await,
            false => {
                let branch = self.branch();
                branches::apply_mutations(&conn, &self.target(), &branch, mutations, now()).await
            }
        }
    }

    async fn replace_history(
        &self,
        items: Vec<(JsValue, bool)>,
        options: ReplaceOptions,
    ) -> Result<()> {
        let conn = self.connection().await?;
        match self.on_main() {
            true => rewrite::replace_history(&conn, &self.target(), items, options, now()).await,
            false => {
                let branch = self.branch();
                let t = self.target();
                branches::replace_history(&conn, &t, &branch, items, options, now()).await
            }
        }
    }

    async fn archived_items(&self, limit: Option<u64>, skip: u64) -> Result<Vec<JsValue>> {
        let conn = self.connection().await?;
        let branch = self.branch();
        branches::archived_items(&conn, &self.target(), &branch, limit, skip).await
    }

    /// The branch this object is on.
    fn branch(&self) -> String {
        self.branch.borrow().clone()
    }

    /// `createBranchFromTurn` / `createBranchFromContent`: the object moves to the new branch.
    async fn create_branch(&self, pick: From, name: Option<String>) -> Result<String> {
        let conn = self.connection().await?;
        let (id, at) =
            branches::create(&conn, &self.target(), &self.branch(), pick, name, now()).await?;
        self.move_to(id.clone(), Some(at));
        Ok(id)
    }

    /// `switchBranch(id)`.
    async fn switch_branch(&self, id: String) -> Result<bool> {
        let at = branches::switch(&*self.connection().await?, &self.named(), &id).await?;
        self.move_to(id, at);
        Ok(at.is_some())
    }

    async fn list_branches(&self) -> Result<JsValue> {
        branches::list(&*self.connection().await?, &self.target(), &self.branch()).await
    }

    async fn delete_branch(&self, id: String) -> Result<()> {
        let conn = self.connection().await?;
        branches::delete(&conn, &self.named(), &id, &self.branch(), now()).await
    }

    /// `getTurns` (no query) / `findTurns`, on `branch` or this object's branch.
    async fn turns(&self, branch: Option<String>, query: Option<String>) -> Result<JsValue> {
        let (t, b) = self.on(branch);
        branches::turns(&*self.connection().await?, &t, &b, query.as_deref()).await
    }

    async fn tool_usage(&self, branch: Option<String>) -> Result<JsValue> {
        let (t, b) = self.on(branch);
        branches::tool_usage(&*self.connection().await?, &t, &b).await
    }

    async fn store_usage(&self, usage: Usage) -> Result<()> {
        let conn = self.connection().await?;
        branches::store_usage(&conn, &self.target(), &self.branch(), usage, now()).await
    }

    async fn session_usage(&self, branch: Option<String>) -> Result<JsValue> {
        branches::session_usage(&*self.connection().await?, &self.named(), branch.as_deref()).await
    }

    async fn turn_usage(&self, branch: Option<String>, turn: Option<u64>) -> Result<JsValue> {
        let (t, b) = self.on(branch);
        branches::turn_usage(&*self.connection().await?, &t, &b, turn).await
    }
}
