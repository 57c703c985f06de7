//! The transaction helper: every operation runs its body through [`Tx::run`], which aborts the
//! transaction on any error the body returns (so a failed call writes nothing) and, for a write,
//! waits for the commit. IndexedDB failures become the library's error codes here, and only here.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use idb::TransactionMode;
use js_sys::Array;
use wasm_bindgen::prelude::*;
use web_sys::{DomException, IdbDatabase, IdbIndex, IdbObjectStore, IdbTransaction};

use crate::core::error::{Result, SessionError, SessionErrorCode};

use super::open::Connection;
use crate::backend::js::{self, error_text};

#[wasm_bindgen]
extern "C" {
    /// A transaction or an object store, for `objectStore` and `index` with a name already made
    /// into a JS string (`js::name`): the `web-sys` methods take a Rust string and decode it
    /// again on every call; and a transaction's `commit()`.
    type Named;

    #[wasm_bindgen(method, catch, js_name = objectStore)]
    fn object_store(this: &Named, name: &JsValue) -> std::result::Result<IdbObjectStore, JsValue>;

    #[wasm_bindgen(method, catch, js_name = index)]
    fn index(this: &Named, name: &JsValue) -> std::result::Result<IdbIndex, JsValue>;

    /// `IDBTransaction.commit()`, declared here: `web-sys` marks its own deprecated.
    #[wasm_bindgen(method, catch)]
    fn commit(this: &Named) -> std::result::Result<(), JsValue>;
}

/// Maps an IndexedDB failure to the library's error codes. `doing` says what was under way.
pub(super) fn storage_error(error: &idb::Error, doing: &str) -> SessionError {
    if let idb::Error::IndexedDbNotFound(_) = error {
        return SessionError::new(
            SessionErrorCode::StorageUnavailable,
            format!("{doing}: IndexedDB is not available in this context"),
        );
    }
    match exception_of(error) {
        Some(e) => dom_error(&e, doing),
        // The rest say that a result had an unexpected shape, or a request's event went missing;
        // their text is not needed to act on them (and formatting it costs the module kilobytes).
        None => SessionError::new(
            SessionErrorCode::StorageError,
            format!("{doing}: IndexedDB gave an unexpected result"),
        ),
    }
}

/// The exception an IndexedDB failure carries, if any.
pub(super) fn exception_of(error: &idb::Error) -> Option<JsValue> {
    use idb::Error as E;
    match error {
        E::DomException(e) => Some(e.clone().into()),
        E::AddFailed(v)
        | E::ClearFailed(v)
        | E::CountFailed(v)
        | E::DeleteFailed(v)
        | E::GetAllFailed(v)
        | E::GetAllKeysFailed(v)
        | E::GetFailed(v)
        | E::IndexedDbOpenFailed(v)
        | E::IndexNotFound(v)
        | E::ObjectStoreNotFound(v)
        | E::OpenCursorFailed(v)
        | E::UpdateFailed(v)
        | E::TransactionOpenFailed(v)
        | E::TransactionCommitError(v)
        | E::IndexCreateFailed(v)
        | E::ObjectStoreCreateFailed(v)
        | E::KeyRangeCreateFailed(v)
        | E::GetKeyFailed(v)
        | E::TransactionAbortError(v)
        | E::RequestErrorNotFound(v)
        | E::RequestResultNotFound(v) => Some(v.clone()),
        _ => None,
    }
}

/// The `name` of the `DOMException` an IndexedDB failure carries, if it carries one.
pub(super) fn exception_name(error: &idb::Error) -> Option<String> {
    exception_of(error)?
        .dyn_ref::<DomException>()
        .map(|e| e.name())
}

/// Maps a `DOMException` (or any thrown value) to an error code by its `name`.
pub(super) fn dom_error(exception: &JsValue, doing: &str) -> SessionError {
    let name = exception
        .dyn_ref::<DomException>()
        .map(|e| e.name())
        .unwrap_or_default();
    let text = error_text(exception);
    let code = match name.as_str() {
        "QuotaExceededError" => SessionErrorCode::StorageFull,
        "VersionError" => SessionErrorCode::DbVersion,
        "DataCloneError" => SessionErrorCode::InvalidItem,
        "SecurityError" | "InvalidAccessError" => SessionErrorCode::StorageUnavailable,
        _ => SessionErrorCode::StorageError,
    };
    let hint = match code {
        SessionErrorCode::StorageFull => {
            "; the browser's storage quota for this site is used up, nothing of this write was saved"
        }
        _ => "",
    };
    SessionError::new(code, format!("{doing}: {text}{hint}"))
}

pub(super) use super::request::listening;

/// A transaction being begun (see [`Tx::begin`]): ready at once, or once the database is open
/// again. One small future for every call site, instead of an async body inlined into each.
pub(super) enum Begin<'a> {
    Ready(Option<Result<Tx>>),
    Reopening(Pin<Box<dyn Future<Output = Result<Tx>> + 'a>>),
}

impl Future for Begin<'_> {
    type Output = Result<Tx>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Tx>> {
        match self.get_mut() {
            Begin::Ready(begun) => match begun.take() {
                Some(begun) => Poll::Ready(begun),
                // Polled again after it was ready: never done.
                None => Poll::Pending,
            },
            Begin::Reopening(opening) => opening.as_mut().poll(cx),
        }
    }
}

/// One transaction and what it is doing (for error messages).
pub(super) struct Tx {
    pub raw: IdbTransaction,
    pub doing: String,
    writes: bool,
}

impl Tx {
    /// Begins a transaction over `stores`. A connection the browser closed without a `close`
    /// event (the storage process gone, site data cleared), or one closed for another tab's
    /// upgrade after this call took it, refuses every transaction: the database is then opened
    /// again, once, and the transaction begun on the new connection. Nothing was asked of the
    /// old one, so the call goes on as if it had been open. Awaits only that open, before the
    /// transaction exists; otherwise the transaction is there at the first poll.
    #[inline(never)]
    pub fn begin<'a>(
        conn: &'a Connection,
        stores: &[&'static str],
        mode: TransactionMode,
        doing: String,
    ) -> Begin<'a> {
        let names: Array = stores.iter().map(|s| js::name(s)).collect();
        let start =
            move |db: &IdbDatabase| db.transaction_with_str_sequence_and_mode(&names, mode.into());
        let writes = mode == TransactionMode::ReadWrite;
        match start(conn.raw()) {
            Ok(raw) => Begin::Ready(Some(Ok(Tx { raw, doing, writes }))),
            Err(e)
                if e.dyn_ref::<DomException>()
                    .is_some_and(|d| d.name() == "InvalidStateError") =>
            {
                Begin::Reopening(Box::pin(async move {
                    let fresh = conn.reopened().await?;
                    let raw = start(fresh.raw()).map_err(|e| dom_error(&e, &doing))?;
                    Ok(Tx { raw, doing, writes })
                }))
            }
            Err(e) => Begin::Ready(Some(Err(dom_error(&e, &doing)))),
        }
    }

    /// Runs `body` in this transaction. An error it returns aborts the transaction, so nothing
    /// it issued is written; after a body that wrote, the result is returned once the commit
    /// succeeded (an abort at commit time, such as a quota error, becomes the error instead).
    /// The body must await nothing but requests of this transaction, or it commits early, and
    /// must have made every request when it returns: a transaction that wrote is told to commit
    /// then.
    pub async fn run<T>(self, body: impl AsyncFnOnce(&Tx) -> Result<T>) -> Result<T> {
        match body(&self).await {
            Ok(value) if self.writes => {
                // Nothing more will be asked of it. Saying so lets the browser commit as soon as
                // the last request is done, instead of after that request's events have reached
                // the page and found nothing new: a round trip less, about a tenth of a small
                // write. A browser without `commit()` (Safari before 15) throws here and commits
                // on its own, as it always did; so does one where the transaction already ended.
                let _ = self.raw.unchecked_ref::<Named>().commit();
                self.committed().await.map(|()| value)
            }
            Ok(value) => Ok(value),
            Err(e) => {
                // Throws only when the transaction already finished: then nothing is pending.
                let _ = self.raw.abort();
                Err(e)
            }
        }
    }

    pub fn store(&self, name: &'static str) -> Result<idb::ObjectStore> {
        self.raw
            .unchecked_ref::<Named>()
            .object_store(&js::name(name))
            .map(idb::ObjectStore::from)
            .map_err(|e| self.thrown(&e))
    }

    /// The index `name` of the object store `store`.
    pub fn index(&self, store: &'static str, name: &'static str) -> Result<idb::Index> {
        JsValue::from(self.store(store)?)
            .unchecked_ref::<Named>()
            .index(&js::name(name))
            .map(idb::Index::from)
            .map_err(|e| self.thrown(&e))
    }

    /// The value stored under the string key `key` in `store`, or `None`.
    pub async fn get(&self, store: &'static str, key: &str) -> Result<Option<JsValue>> {
        listening(
            self.store(store)?
                .get(JsValue::from_str(key))
                .map_err(|e| self.fail(e))?,
        )
        .await
        .map_err(|e| self.fail(e))
    }

    /// An `idb` failure of a request of this transaction.
    #[inline(never)]
    pub fn fail(&self, e: idb::Error) -> SessionError {
        self.cause(storage_error(&e, &self.doing))
    }

    /// A JS exception thrown by a request of this transaction.
    #[inline(never)]
    pub fn thrown(&self, e: &JsValue) -> SessionError {
        self.cause(dom_error(e, &self.doing))
    }

    /// A request of a transaction the browser aborted fails with `AbortError`: the
    /// transaction's own error says why (`QuotaExceededError`: `STORAGE_FULL`).
    fn cause(&self, error: SessionError) -> SessionError {
        match (error.code, self.raw.error()) {
            (SessionErrorCode::StorageError, Some(cause)) => dom_error(&cause.into(), &self.doing),
            _ => error,
        }
    }

    /// Waits for the commit. An abort (quota exceeded, a failed request) becomes its error.
    async fn committed(self) -> Result<()> {
        let Tx { raw, doing, .. } = self;
        if super::request::ended(&raw).await.type_() == "complete" {
            return Ok(());
        }
        Err(match raw.error() {
            Some(e) => dom_error(&e.into(), &doing),
            None => SessionError::new(
                SessionErrorCode::StorageError,
                format!("{doing}: the transaction was aborted"),
            ),
        })
    }
}
