//! Opening a database: creating or upgrading it through the migration list of
//! [`crate::core::schema`] inside `onupgradeneeded`, and sharing one connection per database name.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use idb::{Database, Factory, IndexParams, KeyPath, ObjectStoreParams, Transaction};
use wasm_bindgen::prelude::*;
use web_sys::{IdbDatabase, IdbOpenDbRequest, IdbRequest, IdbVersionChangeEvent};

use crate::core::error::{Result, SessionError, SessionErrorCode};
use crate::core::schema::{
    migrations_from, newer_schema, MigrationStep, META_STORE, SCHEMA_VERSION,
};

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use crate::backend::js;

use super::request::{listening, Fired};
use super::tx::{dom_error, exception_name, storage_error};

/// An open connection. `stale` turns true when the browser closed it (another tab upgrades the
/// database, or the user cleared site data); the next call then opens a new one.
pub struct Connection {
    /// Holds the `versionchange` and `close` listeners, which live as long as it does.
    _listeners: Database,
    raw: IdbDatabase,
    stale: Rc<Cell<bool>>,
    /// The database's name, to open it again.
    name: String,
}

impl Connection {
    /// The database itself, for the calls made with names already made into JS strings.
    pub(super) fn raw(&self) -> &IdbDatabase {
        &self.raw
    }

    /// The shared connection that replaces this one, which the browser closed under a call (see
    /// [`super::tx::Tx::begin`]). Boxed: the open is far larger than the calls that need it
    /// now and then.
    pub(super) fn reopened(&self) -> Pin<Box<dyn Future<Output = Result<Rc<Connection>>> + '_>> {
        self.stale.set(true);
        Box::pin(connection(&self.name))
    }

    pub fn is_stale(&self) -> bool {
        self.stale.get()
    }

    /// The pooled connection that replaced this one, where a call opened the database again
    /// after the browser closed it under that call; none where nothing did (as after another
    /// tab's upgrade or deletion of the database, until a call opens it again).
    pub fn replacement(&self) -> Option<Rc<Connection>> {
        pooled(&self.name).filter(|c| !c.is_stale())
    }

    pub fn close(&self) {
        self.stale.set(true);
        self.raw.close();
    }
}

fn apply_step(
    step: &MigrationStep,
    db: &Database,
    tx: Option<&Transaction>,
) -> std::result::Result<(), idb::Error> {
    let key_path = |path: &[&str]| match path {
        [single] => KeyPath::new_single(single),
        many => KeyPath::new_array(many.iter().copied()),
    };
    match step {
        MigrationStep::CreateStore {
            name,
            key_path: path,
        } => {
            let mut params = ObjectStoreParams::new();
            params.key_path(Some(key_path(path)));
            db.create_object_store(name, params)?;
        }
        MigrationStep::CreateIndex {
            store,
            name,
            key_path: path,
            unique,
            multi_entry,
        } => {
            let tx = tx.ok_or(idb::Error::UnexpectedJsType(
                "upgrade transaction",
                JsValue::UNDEFINED,
            ))?;
            let mut params = IndexParams::new();
            params.unique(*unique);
            params.multi_entry(*multi_entry);
            tx.object_store(store)?
                .create_index(name, key_path(path), Some(params))?;
        }
    }
    Ok(())
}

/// How long an open whose upgrade is blocked waits for the other connections to close before
/// it fails with `DB_BLOCKED`, in milliseconds: the library's own connections close at once
/// when another tab upgrades; one that has not closed by then will not close by itself.
const BLOCKED_FOR: f64 = 3000.0;

/// Opens (creating or upgrading) the database `name` at this library's schema version. An
/// upgrade another connection blocks (`blocked`: it did not close on `versionchange`) fails the
/// call with `DB_BLOCKED` after [`BLOCKED_FOR`], where it would wait for as long as that
/// connection lives; the open goes on, so that the upgrade runs, with its migrations, once the
/// connection closes, and the connection it then gives is closed (the next call opens again).
pub async fn open(name: &str) -> Result<Connection> {
    // An open given up on is still waiting: a new request would wait behind it, and hear no
    // `blocked` of its own.
    if given_up_on(name) {
        return Err(blocked_error(name));
    }
    let doing = format!("opening IndexedDB database \"{name}\"");
    let factory = Factory::new().map_err(|e| storage_error(&e, &doing))?;
    let request: IdbOpenDbRequest = factory
        .open(name, Some(SCHEMA_VERSION))
        .map_err(|e| storage_error(&e, &doing))?
        .into();
    let blocked = Fired::new(|f| request.set_onblocked(Some(f)));
    // Resolved once the upgrade begins or the open settles: an open given up on holds its lock
    // (which other tabs' opens look for) until then.
    let mut tell: Option<js_sys::Function> = None;
    let told = js_sys::Promise::new(&mut |resolve, _| tell = Some(resolve));
    let tell_now = move || {
        if let Some(tell) = &tell {
            let _ = tell.call0(&JsValue::NULL);
        }
    };
    let upgrading = Rc::new(Cell::new(false));
    let began = {
        let (upgrading, name, tell_now) = (upgrading.clone(), name.to_string(), tell_now.clone());
        move || {
            upgrading.set(true);
            // Calls made from now on (here, in other tabs) wait for the upgrade, as for any,
            // rather than fail as blocked: it no longer waits for anything but itself.
            mark_given_up(&name, false);
            tell_now();
        }
    };
    let mut opening = Box::pin(opened_upgraded(
        factory,
        request,
        name.to_string(),
        doing,
        began,
    ));
    let watched = name.to_string();
    let mut given_up = Box::pin(async move {
        // Given up on BLOCKED_FOR after `blocked` fired (first seen), or once an open of the same
        // database made before this one (another call's, another module's, another tab's or
        // worker's) was given up on: this one waits behind it and hears no `blocked` of its own.
        // Not once the upgrade runs (a large one takes longer). Timed by the clock: a hidden
        // tab's timers fire a second or a minute apart, where counting them would wait that
        // many times longer.
        let mut blocked_since = None;
        loop {
            js::after(LOOK_EVERY).await;
            if upgrading.get() {
                std::future::pending::<()>().await;
            }
            let behind = given_up_on(&watched) || given_up_elsewhere(&watched).await;
            let timed_out = blocked.has_fired() && {
                let since = *blocked_since.get_or_insert_with(js::now);
                js::now() - since >= BLOCKED_FOR
            };
            // (The upgrade may have begun while the other contexts were asked.)
            if upgrading.get() {
                std::future::pending::<()>().await;
            }
            if behind || timed_out {
                // (Handed back, not awaited here: in a tuple, as it is itself a future.)
                return (blocked,);
            }
        }
    });
    let first = std::future::poll_fn(|cx| match opening.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(Ok(result)),
        Poll::Pending => given_up.as_mut().poll(cx).map(Err),
    })
    .await;
    let (mut blocked,) = match first {
        Ok(result) => return result,
        Err(blocked) => blocked,
    };
    // The open goes on. One given up on as blocked itself tells the other calls (here, and in
    // the other contexts, by its lock) to give up too, until its upgrade begins; one that gave
    // up behind it tells nothing (its upgrade would not begin before the upgrade it waits for
    // ends, and the calls would fail for as long), unless it is blocked in turn: the open it
    // waited for went (its tab closed).
    let lead = {
        let name = name.to_string();
        move || {
            mark_given_up(&name, true);
            hold_while_given_up(&name, told.clone());
        }
    };
    let mut led = blocked.has_fired();
    if led {
        lead();
    }
    let waiting = name.to_string();
    js::spawn(Box::pin(async move {
        let result = loop {
            let step = std::future::poll_fn(|cx| match opening.as_mut().poll(cx) {
                Poll::Ready(result) => Poll::Ready(Some(result)),
                Poll::Pending if led => Poll::Pending,
                Poll::Pending => Pin::new(&mut blocked).poll(cx).map(|_| None),
            })
            .await;
            match step {
                Some(result) => break result,
                None => {
                    lead();
                    led = true;
                }
            }
        };
        if let Ok(connection) = result {
            connection.close();
        }
        if led {
            mark_given_up(&waiting, false);
        }
        tell_now();
    }));
    Err(blocked_error(name))
}

/// The page's hook `name` for opens given up on (see `js/given_up.js`): their Web Lock, which an
/// open in another tab or worker, waiting behind one and hearing no `blocked` of its own, looks
/// for.
fn given_up_hook(name: &'static str) -> Option<js_sys::Function> {
    let key = js_sys::Symbol::for_("agent-sessions.givenUp");
    let hooks = js_sys::Reflect::get(&js_sys::global(), &key).ok()?;
    js::get(&hooks, name)
        .ok()
        .filter(JsValue::is_function)
        .map(JsValue::unchecked_into)
}

/// Holds the lock of database `name`'s open given up on until `told` settles.
fn hold_while_given_up(name: &str, told: js_sys::Promise) {
    if let Some(hold) = given_up_hook("hold") {
        let _ = hold.call2(&JsValue::NULL, &name.into(), &told);
    }
}

/// Whether an open of database `name` was given up on in another tab or worker and still waits.
async fn given_up_elsewhere(name: &str) -> bool {
    let Some(Ok(asked)) = given_up_hook("elsewhere").map(|f| f.call1(&JsValue::NULL, &name.into()))
    else {
        return false;
    };
    let asked = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&asked));
    asked.await.is_ok_and(|held| held.is_truthy())
}

/// How often an open that has not settled looks whether it is to be given up on, in ms.
const LOOK_EVERY: f64 = 100.0;

/// The names of the databases whose open was given up on as blocked and still waits: a `Set` on
/// the global object, so that both modules of this library see it (each has its own memory).
fn given_up_set() -> Option<js_sys::Set> {
    let key = js_sys::Symbol::for_("agent-sessions.blocked");
    let global = js_sys::global();
    if let Ok(set) = js_sys::Reflect::get(&global, &key) {
        if set.is_instance_of::<js_sys::Set>() {
            return Some(set.unchecked_into());
        }
    }
    let set = js_sys::Set::new(&JsValue::UNDEFINED);
    js_sys::Reflect::set(&global, &key, &set).ok()?;
    Some(set)
}

fn given_up_on(name: &str) -> bool {
    given_up_set().is_some_and(|set| set.has(&name.into()))
}

fn mark_given_up(name: &str, on: bool) {
    if let Some(set) = given_up_set() {
        if on {
            set.add(&name.into());
        } else {
            set.delete(&name.into());
        }
    }
}

fn blocked_error(name: &str) -> SessionError {
    SessionError::new(
        SessionErrorCode::DbBlocked,
        format!(
            "opening IndexedDB database \"{name}\": its upgrade waits for another connection to \
             it to close (a tab of this site on an older version, or code that opened it); \
             close the other tabs of this site, then try again"
        ),
    )
}

/// The rest of [`open`]: the upgrade, when the request needs one, and the connection.
async fn opened_upgraded(
    factory: Factory,
    request: IdbOpenDbRequest,
    name: String,
    doing: String,
    began: impl FnOnce() + 'static,
) -> Result<Connection> {
    let name = name.as_str();
    let upgrade_failure: Rc<RefCell<Option<SessionError>>> = Rc::default();
    let failure = upgrade_failure.clone();
    // The upgrade's transaction, whose error says why an aborted upgrade failed.
    let upgrade: Rc<RefCell<Option<web_sys::IdbTransaction>>> = Rc::default();
    let upgrade_tx = upgrade.clone();
    let upgrade_doing = doing.clone();
    let upgrading = request.clone();
    // Kept until the request settles: the upgrade, when there is one, comes before that.
    let on_upgrade = Closure::once(move |event: IdbVersionChangeEvent| {
        began();
        let raw_tx = upgrading.transaction();
        *upgrade_tx.borrow_mut() = raw_tx.clone();
        let tx = raw_tx.map(Transaction::from);
        let run = || -> std::result::Result<(), SessionError> {
            let db = upgrading
                .result()
                .map_err(|e| dom_error(&e, &upgrade_doing))?;
            // A database of no store is new, whatever its version: one opened without a version
            // (by a page's own code, or DevTools) is version 1, whose stores it lacks.
            let old = match db
                .unchecked_ref::<IdbDatabase>()
                .object_store_names()
                .length()
            {
                0 => 0,
                _ => event.old_version() as u32,
            };
            let db = Database::from(db.unchecked_into::<IdbDatabase>());
            for migration in migrations_from(old)? {
                for step in migration.steps {
                    apply_step(step, &db, tx.as_ref()).map_err(|e| {
                        storage_error(
                            &e,
                            &format!(
                                "{upgrade_doing}: migration to version {} ({})",
                                migration.to_version, migration.description
                            ),
                        )
                    })?;
                }
            }
            if old == 0 {
                // A new database: no row was written without its search terms.
                if let Some(tx) = tx.as_ref() {
                    tx.object_store(META_STORE)
                        .and_then(|meta| meta.put(&super::search::nothing_to_build(), None))
                        .map_err(|e| storage_error(&e, &upgrade_doing))?;
                }
            }
            Ok(())
        };
        if let Err(e) = run() {
            if let Some(tx) = tx {
                let _ = tx.abort();
            }
            *failure.borrow_mut() = Some(e);
        }
    });
    request.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
    let opened = opened(&request).await;
    drop(on_upgrade);
    if let Some(e) = upgrade_failure.borrow_mut().take() {
        return Err(e);
    }
    let raw = match opened {
        Ok(db) => db,
        Err(e) => {
            // An upgrade the browser aborted (out of space) fails the request with `AbortError`:
            // the upgrade's own error says why.
            let cause = upgrade.borrow().as_ref().and_then(|tx| tx.error());
            let mut error = match cause {
                Some(cause) => dom_error(&cause.into(), &doing),
                None => storage_error(&e, &doing),
            };
            match error.code {
                SessionErrorCode::DbVersion => {
                    return Err(newer_version_error(&factory, name, &doing).await)
                }
                // A browser that refuses IndexedDB to the page (a private window of some
                // versions, site data blocked) fails the open with one of these.
                SessionErrorCode::StorageError
                    if matches!(
                        exception_name(&e).as_deref(),
                        Some("InvalidStateError" | "UnknownError")
                    ) =>
                {
                    error.code = SessionErrorCode::StorageUnavailable;
                }
                _ => {}
            }
            return Err(error);
        }
    };
    let mut db = Database::from(raw.clone());
    let stale = Rc::new(Cell::new(false));
    let (on_change, on_close) = (stale.clone(), stale.clone());
    let closing = raw.clone();
    // Let another tab upgrade the schema: close, and reopen on the next call.
    db.on_version_change(move |_| {
        on_change.set(true);
        closing.close();
    });
    db.on_close(move |_| on_close.set(true));
    Ok(Connection {
        _listeners: db,
        raw,
        stale,
        name: name.to_string(),
    })
}

/// The database an open request gives, once it settles.
async fn opened(request: &IdbOpenDbRequest) -> std::result::Result<IdbDatabase, idb::Error> {
    listening(IdbRequest::from(request.clone()))
        .await
        .map(JsCast::unchecked_into)
}

/// Reads the version of a database that is newer than ours, for the error message, without
/// changing it.
async fn newer_version_error(factory: &Factory, name: &str, doing: &str) -> SessionError {
    let found = match factory.open(name, None) {
        Ok(request) => match opened(&request.into()).await {
            Ok(db) => {
                let version = db.version() as u32;
                db.close();
                version
            }
            Err(_) => 0,
        },
        Err(_) => 0,
    };
    let mut error = newer_schema(found.max(SCHEMA_VERSION + 1));
    error.message = format!("{doing}: {}", error.message);
    error
}

thread_local! {
    /// One connection per database name, shared by every session object and by `listSessions`
    /// and `deleteSession`: opening IndexedDB costs more than any single read. A page opens a
    /// database or two: a list (a hash map would bring its code into the module for them).
    static CONNECTIONS: RefCell<Vec<(String, Rc<Connection>)>> = const { RefCell::new(Vec::new()) };
}

/// The pooled connection to `db_name`, if there is one.
fn pooled(db_name: &str) -> Option<Rc<Connection>> {
    CONNECTIONS.with(|pool| {
        let pool = pool.borrow();
        pool.iter()
            .find(|(name, _)| name == db_name)
            .map(|(_, c)| c.clone())
    })
}

/// The shared connection to `db_name`, opening (or reopening, after the browser closed it) the
/// database when needed.
pub async fn connection(db_name: &str) -> Result<Rc<Connection>> {
    let current = pooled(db_name);
    if let Some(c) = current {
        if !c.is_stale() {
            return Ok(c);
        }
    }
    let opened = Rc::new(open(db_name).await?);
    // Another call may have opened the database while this one waited: keep one connection and
    // close the other, so no connection is left open that could block another tab's upgrade.
    let existing = pooled(db_name);
    if let Some(c) = existing.filter(|c| !c.is_stale()) {
        opened.close();
        return Ok(c);
    }
    CONNECTIONS.with(|pool| {
        let mut pool = pool.borrow_mut();
        pool.retain(|(name, _)| name != db_name);
        pool.push((db_name.to_string(), opened.clone()));
    });
    // Rows written before the search index existed are indexed in the background, a chunk at a
    // time, going on from where an earlier build stopped (a search waits for it). A failure
    // (the database closed under it) leaves the rest to the next open or search.
    let building = opened.clone();
    let name = db_name.to_string();
    js::spawn(Box::pin(async move {
        start_index_build(&building, &name).await;
    }));
    Ok(opened)
}

/// The search index's build, where this module holds it (the second module).
#[cfg(feature = "extras")]
async fn start_index_build(conn: &Connection, _: &str) {
    let _ = super::search::build(conn, &|_| {}).await;
}

/// The search index's build, from the main module: it holds no build code, so when the build
/// is needed (a database from before the index, or terms of an older tokeniser; almost never),
/// it hands the database's name to the function the package's JS gave ([`set_index_builder`]),
/// which runs the build in the second module.
#[cfg(not(feature = "extras"))]
async fn start_index_build(conn: &Connection, db_name: &str) {
    if let Ok(false) = super::search::is_built(conn).await {
        INDEX_BUILDER.with(|builder| {
            if let Some(f) = &*builder.borrow() {
                let _ = f.call1(&JsValue::UNDEFINED, &db_name.into());
            }
        });
    }
}

#[cfg(not(feature = "extras"))]
thread_local! {
    static INDEX_BUILDER: RefCell<Option<js_sys::Function>> = const { RefCell::new(None) };
}

/// Sets the function that starts the search index's build of a database in the second module
/// (see `start_index_build`).
#[cfg(not(feature = "extras"))]
pub fn set_index_builder(builder: js_sys::Function) {
    INDEX_BUILDER.with(|b| *b.borrow_mut() = Some(builder));
}
