//! `searchSessions`, `buildSearchIndex`, `repairSession`, `deleteSession` and what
//! `exportSessions`, `importSessions` and `storageEstimate` are built on: the exports of the
//! second sessions module, which the main entry loads at the first call that needs it. It works
//! on the same databases through its own connections, as another tab would; the declarations of
//! the functions the package exports are the sessions module's.

use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::backend::error::session_error;
use crate::backend::indexeddb::{self, backup, search, IdbSessionState};
use crate::backend::js::{self, now};
use crate::backend::methods;
use crate::backend::session::{self, SessionState};
use crate::backend::session_options::{
    backup_page_args, build_index_args, delete_args, list_args, repair_args, restore_args,
    search_args,
};
use crate::core::error::ErrorFamily;

/// The session method `name` of an `IndexedDbSession`, with its arguments `args`, for the object
/// `context` describes (`IdbSessionState::context`), run in that object's call order by the
/// main module. Resolves to `{ value, branch, branchCreatedAt }`: the method's result, the branch
/// the object is on after it, and when that was created (`null` if no call has read it).
#[wasm_bindgen(js_name = sessionCall, skip_typescript)]
pub fn session_call(name: String, context: JsValue, args: js_sys::Array) -> Promise {
    let state = match IdbSessionState::from_context(&context) {
        Ok(state) => Rc::new(state),
        Err(e) => return session::rejected(e),
    };
    let call = methods::call(&state, &name, &args);
    js::js_promise(Box::pin(async move {
        let value = JsFuture::from(call).await?;
        Ok(js::object(&[
            ("value", value),
            ("branch", state.branch().into()),
            ("branchCreatedAt", state.branch_created_at()),
        ])
        .into())
    }))
}

/// `[{ sessionId, bytes }]` of the sessions `listSessions` lists: the package's
/// `storageEstimate` adds the browser's figures.
#[wasm_bindgen(js_name = sessionSizes, skip_typescript)]
pub fn session_sizes(options: JsValue) -> Promise {
    session::promise_of(list_args(&options), |(db_name, user_id)| async move {
        let conn = indexeddb::connection(&db_name).await?;
        let sizes = indexeddb::session_sizes(&conn, user_id.as_deref()).await?;
        let list: js_sys::Array = sizes
            .into_iter()
            .map(|(id, bytes)| {
                crate::backend::js::object(&[("sessionId", id.into()), ("bytes", bytes.into())])
            })
            .collect();
        Ok(list.into())
    })
}

/// One page of `exportSessions`: `{ rows, next }` (see `backup::read_page`).
#[wasm_bindgen(js_name = readBackup, skip_typescript)]
pub fn read_backup(options: JsValue) -> Promise {
    session::promise_of(backup_page_args(&options), |args| async move {
        let conn = indexeddb::connection(&args.db_name).await?;
        let (rows, next) = backup::read_page(
            &conn,
            &args.session_id,
            &args.kind,
            &args.after,
            args.limit,
            &args.record,
        )
        .await?;
        let rows: js_sys::Array = rows.into_iter().collect();
        Ok(crate::backend::js::object(&[
            ("rows", rows.into()),
            ("next", next.unwrap_or(JsValue::NULL)),
        ])
        .into())
    })
}

/// One session of `importSessions`: its parsed lines and their line numbers in the backup.
/// Resolves to `{ sessionId, status }`; an `IMPORT_INVALID` error carries the `line`.
#[wasm_bindgen(js_name = restoreSession, skip_typescript)]
pub fn restore_session(lines: Vec<JsValue>, numbers: Vec<u32>, options: JsValue) -> Promise {
    let args = match restore_args(&options) {
        Ok(args) => args,
        Err(e) => return session::rejected(e),
    };
    js::js_promise(Box::pin(async move {
        let conn = indexeddb::connection(&args.db_name)
            .await
            .map_err(|e| session_error(&e))?;
        let user = args.user.as_ref().map(Option::as_deref);
        match backup::restore(
            &conn,
            &lines,
            &numbers,
            user,
            args.on_conflict,
            &args.written,
        )
        .await
        {
            Ok(r) => Ok(crate::backend::js::object(&[
                ("sessionId", r.session_id.into()),
                ("status", r.status.into()),
            ])
            .into()),
            Err(e) => Err(crate::backend::error::js_error(
                "SessionError",
                &e.error.message,
                &[
                    ("code", e.error.code.as_str().into()),
                    ("line", e.line.map_or(JsValue::UNDEFINED, |n| n.into())),
                ],
            )),
        }
    }))
}

/// Calls `on_progress({ done, total })` for the search index build, when given.
fn progress_reporter(on_progress: Option<js_sys::Function>) -> impl Fn(search::Progress) {
    move |p: search::Progress| {
        if let Some(f) = &on_progress {
            let report = crate::backend::js::object(&[
                ("done", (p.done as f64).into()),
                ("total", (p.total as f64).into()),
            ]);
            // The caller's callback: what it throws is its own, and the build goes on.
            let _ = f.call1(&JsValue::UNDEFINED, &report);
        }
    }
}

#[wasm_bindgen(js_name = searchSessions, skip_typescript)]
pub fn search_sessions(options: JsValue) -> Promise {
    let read = search_args(&options)
        .and_then(|args| Ok((crate::core::search::parse_query(&args.query)?, args)));
    session::promise_of(read, |(clauses, args)| async move {
        if clauses.is_empty() {
            return Ok(js_sys::Array::new().into());
        }
        let conn = indexeddb::connection(&args.db_name).await?;
        // Items written before the index existed are indexed first.
        search::build_before_search(&conn, &progress_reporter(args.on_progress)).await?;
        let hits = search::search(
            &conn,
            args.user_id.as_deref(),
            &clauses,
            args.limit,
            args.session_ids.as_deref(),
        )
        .await?;
        let shape = crate::backend::js::Shape::new([
            "sessionId",
            "seq",
            "turn",
            "role",
            "snippet",
            "score",
            "createdAt",
        ]);
        let list = js_sys::Array::new();
        for hit in hits {
            let entry = shape
                .build([
                    &hit.session_id.as_str().into(),
                    &(hit.seq as f64).into(),
                    &(hit.turn as f64).into(),
                    &hit.role,
                    &hit.snippet.as_str().into(),
                    &hit.score.into(),
                    &hit.created_at.into(),
                ])
                .unwrap_or_default();
            if let Some(branch) = hit.branch {
                let _ = js_sys::Reflect::set(&entry, &"branch".into(), &branch.as_str().into());
            }
            list.push(&entry);
        }
        Ok(list.into())
    })
}

#[wasm_bindgen(js_name = buildSearchIndex, skip_typescript)]
pub fn build_search_index(options: JsValue) -> Promise {
    session::promise_of(
        build_index_args(&options),
        |(db_name, on_progress)| async move {
            let conn = indexeddb::connection(&db_name).await?;
            let p = search::build(&conn, &progress_reporter(on_progress)).await?;
            Ok(crate::backend::js::object(&[
                ("done", (p.done as f64).into()),
                ("total", (p.total as f64).into()),
            ])
            .into())
        },
    )
}

/// Deletes a session, which a chat does now and then: it is this module's, not the main one's.
#[wasm_bindgen(js_name = deleteSession, skip_typescript)]
pub fn delete_session(session_id: JsValue, options: JsValue) -> Promise {
    session::promise_of(
        delete_args(&session_id, &options),
        |(session_id, db_name, owner, expected)| async move {
            let conn = indexeddb::connection(&db_name).await?;
            Ok(
                indexeddb::delete_session(&conn, &session_id, owner, expected)
                    .await?
                    .into(),
            )
        },
    )
}

#[wasm_bindgen(js_name = repairSession, skip_typescript)]
pub fn repair_session(session_id: JsValue, options: JsValue) -> Promise {
    session::promise_of(
        repair_args(&session_id, &options),
        |(session_id, db_name, owner)| async move {
            let conn = indexeddb::connection(&db_name).await?;
            let report =
                indexeddb::repair_session(&conn, &session_id, owner.as_deref(), now()).await?;
            Ok(report.to_js())
        },
    )
}
