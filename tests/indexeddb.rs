//! The IndexedDB backend in a real browser (headless Chromium through wasm-bindgen-test).
#![cfg(target_arch = "wasm32")]

use std::cell::Cell;

use agent_sessions::backend::indexeddb::{self, Target};
use agent_sessions::core::error::SessionErrorCode;
use agent_sessions::core::history::Limit;
use js_sys::{Array, JSON};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn item(json: &str) -> JsValue {
    JSON::parse(json).unwrap()
}

fn user(text: &str) -> (JsValue, bool) {
    (
        item(&format!(r#"{{"role":"user","content":"{text}"}}"#)),
        true,
    )
}

fn assistant(text: &str) -> (JsValue, bool) {
    (
        item(&format!(r#"{{"role":"assistant","content":"{text}"}}"#)),
        false,
    )
}

fn texts(items: &[JsValue]) -> Vec<String> {
    items
        .iter()
        .map(|i| {
            js_sys::Reflect::get(i, &"content".into())
                .unwrap()
                .as_string()
                .unwrap()
        })
        .collect()
}

/// A target as a new session object would have it: it has not seen the session yet.
fn target(session_id: &str) -> Target<'_> {
    Target {
        session_id,
        user_id: Some("tester"),
        index_tools: false,
        seen: Box::leak(Box::new(Cell::new(None))),
        seen_view: Box::leak(Box::new(Cell::new(None))),
        branch_at: Some(Box::leak(Box::new(Cell::new(None)))),
    }
}

async fn fresh_db(name: &str) -> indexeddb::Connection {
    let factory: web_sys::IdbFactory = js_sys::Reflect::get(&js_sys::global(), &"indexedDB".into())
        .unwrap()
        .unchecked_into();
    let request = factory.delete_database(name).unwrap();
    let done = js_sys::Promise::new(&mut |ok, _| request.set_onsuccess(Some(&ok)));
    JsFuture::from(done).await.unwrap();
    indexeddb::open(name).await.unwrap()
}

#[wasm_bindgen_test]
async fn appends_reads_newest_pops_and_clears() {
    let conn = fresh_db("t-basic").await;
    let t = target("s");
    indexeddb::add_items(&conn, &t, vec![user("q1"), assistant("a1")], 1.0)
        .await
        .unwrap();
    indexeddb::add_items(&conn, &t, vec![user("q2"), assistant("a2")], 2.0)
        .await
        .unwrap();
    let all = indexeddb::get_items(&conn, &t, Limit::All).await.unwrap();
    assert_eq!(texts(&all), ["q1", "a1", "q2", "a2"]);
    let newest = indexeddb::get_items(&conn, &t, Limit::Newest(3))
        .await
        .unwrap();
    assert_eq!(texts(&newest), ["a1", "q2", "a2"]);
    assert!(indexeddb::get_items(&conn, &t, Limit::Newest(0))
        .await
        .unwrap()
        .is_empty());

    let popped = indexeddb::pop_item(&conn, &t, 3.0).await.unwrap().unwrap();
    assert_eq!(texts(&[popped]), ["a2"]);
    let records: Vec<_> = indexeddb::list_sessions(&conn, Some("tester"))
        .await
        .unwrap()
        .iter()
        .map(|r| indexeddb::record_from_js(r).unwrap())
        .collect();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (
            records[0].item_count,
            records[0].next_seq,
            records[0].last_turn
        ),
        (3, 3, 2)
    );
    assert_eq!(records[0].updated_at, 3.0);

    indexeddb::clear_session(&conn, &t, 4.0).await.unwrap();
    assert!(indexeddb::get_items(&conn, &t, Limit::All)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(indexeddb::pop_item(&conn, &t, 5.0).await.unwrap(), None);
    indexeddb::add_items(&conn, &t, vec![user("again")], 6.0)
        .await
        .unwrap();
    let all = indexeddb::get_items(&conn, &t, Limit::All).await.unwrap();
    assert_eq!(texts(&all), ["again"]);
    conn.close();
}

/// Runs `read` in a browser without `IDBObjectStore.prototype.getAllRecords` (IndexedDB 3), as
/// browsers before it are: the newest-n read then goes through the session record's range.
async fn without_get_all_records<T>(read: impl std::future::Future<Output = T>) -> T {
    let proto = js_sys::Reflect::get(&js_sys::global(), &"IDBObjectStore".into())
        .and_then(|store| js_sys::Reflect::get(&store, &"prototype".into()))
        .unwrap();
    let key = JsValue::from_str("getAllRecords");
    let saved = js_sys::Reflect::get(&proto, &key).unwrap();
    assert!(
        saved.is_function(),
        "this browser has getAllRecords: the test must remove it to reach the fallback"
    );
    js_sys::Reflect::delete_property(proto.unchecked_ref::<js_sys::Object>(), &key).unwrap();
    let result = read.await;
    js_sys::Reflect::set(&proto, &key, &saved).unwrap();
    result
}

#[wasm_bindgen_test]
async fn a_gap_in_the_sequence_numbers_is_reported_on_both_read_paths_and_repaired() {
    // A record removed behind the library's back (DevTools, another tool) leaves a gap. The read
    // that reaches it reports the session as damaged instead of returning a wrong window, with
    // getAllRecords and through the record's key range alike; repair_session closes the gap.
    let conn = fresh_db("t-gap").await;
    let t = target("s");
    let items = (0..6).map(|i| user(&format!("m{i}"))).collect();
    indexeddb::add_items(&conn, &t, items, 1.0).await.unwrap();
    delete_raw("t-gap", "s", 4).await;
    let e = without_get_all_records(indexeddb::get_items(&conn, &t, Limit::Newest(3)))
        .await
        .unwrap_err();
    assert_eq!(e.code, SessionErrorCode::CorruptSession, "{}", e.message);
    let e = indexeddb::get_items(&conn, &t, Limit::Newest(3))
        .await
        .unwrap_err();
    assert_eq!(e.code, SessionErrorCode::CorruptSession, "{}", e.message);
    // The newest two are sound, and still read.
    let newest = indexeddb::get_items(&conn, &t, Limit::Newest(1))
        .await
        .unwrap();
    assert_eq!(texts(&newest), ["m5"]);
    let report = indexeddb::repair_session(&conn, "s", None, 2.0)
        .await
        .unwrap();
    assert_eq!((report.item_count, report.renumbered_rows), (5, 1));
    for read in [
        without_get_all_records(indexeddb::get_items(&conn, &t, Limit::Newest(3))).await,
        indexeddb::get_items(&conn, &t, Limit::Newest(3)).await,
    ] {
        assert_eq!(texts(&read.unwrap()), ["m2", "m3", "m5"]);
    }
    conn.close();
}

async fn delete_raw(db_name: &str, session_id: &str, seq: u32) {
    let factory: web_sys::IdbFactory = js_sys::Reflect::get(&js_sys::global(), &"indexedDB".into())
        .unwrap()
        .unchecked_into();
    let open = factory.open(db_name).unwrap();
    let opened = js_sys::Promise::new(&mut |ok, _| open.set_onsuccess(Some(&ok)));
    JsFuture::from(opened).await.unwrap();
    let db: web_sys::IdbDatabase = open.result().unwrap().unchecked_into();
    let tx = db
        .transaction_with_str_and_mode("agent_messages", web_sys::IdbTransactionMode::Readwrite)
        .unwrap();
    let key = Array::of2(&session_id.into(), &JsValue::from(seq));
    tx.object_store("agent_messages")
        .unwrap()
        .delete(&key)
        .unwrap();
    let done = js_sys::Promise::new(&mut |ok, _| tx.set_oncomplete(Some(&ok)));
    JsFuture::from(done).await.unwrap();
    db.close();
}

#[wasm_bindgen_test]
async fn another_user_can_neither_read_nor_write() {
    let conn = fresh_db("t-owner").await;
    indexeddb::add_items(&conn, &target("s"), vec![user("mine")], 1.0)
        .await
        .unwrap();
    let intruder = Target {
        user_id: Some("someone else"),
        ..target("s")
    };
    let e = indexeddb::get_items(&conn, &intruder, Limit::All)
        .await
        .unwrap_err();
    assert_eq!(e.code, SessionErrorCode::UserMismatch);
    let e = indexeddb::add_items(&conn, &intruder, vec![user("theirs")], 2.0)
        .await
        .unwrap_err();
    assert_eq!(e.code, SessionErrorCode::UserMismatch);
    assert_eq!(
        indexeddb::pop_item(&conn, &intruder, 3.0)
            .await
            .unwrap_err()
            .code,
        SessionErrorCode::UserMismatch
    );
    let all = indexeddb::get_items(&conn, &target("s"), Limit::All)
        .await
        .unwrap();
    assert_eq!(texts(&all), ["mine"]);
    conn.close();
}

#[wasm_bindgen_test]
async fn two_connections_popping_at_once_take_different_items() {
    let a = fresh_db("t-race").await;
    let b = indexeddb::open("t-race").await.unwrap();
    let t = target("s");
    indexeddb::add_items(&a, &t, vec![user("1"), user("2"), user("3")], 1.0)
        .await
        .unwrap();
    let (x, y) = futures_util::future::join(
        indexeddb::pop_item(&a, &t, 2.0),
        indexeddb::pop_item(&b, &t, 2.0),
    )
    .await;
    let mut popped = texts(&[x.unwrap().unwrap(), y.unwrap().unwrap()]);
    popped.sort();
    assert_eq!(popped, ["2", "3"]);
    assert_eq!(
        texts(&indexeddb::get_items(&b, &t, Limit::All).await.unwrap()),
        ["1"]
    );
    a.close();
    b.close();
}

#[wasm_bindgen_test]
async fn reopening_keeps_data_and_delete_session_removes_it() {
    let conn = fresh_db("t-reopen").await;
    indexeddb::add_items(&conn, &target("keep"), vec![user("k")], 1.0)
        .await
        .unwrap();
    indexeddb::add_items(&conn, &target("drop"), vec![user("d")], 2.0)
        .await
        .unwrap();
    conn.close();
    let conn = indexeddb::open("t-reopen").await.unwrap();
    // Written at 2.0: a caller that saw it at 1.0 deletes nothing; one that saw 2.0 deletes it.
    assert!(!indexeddb::delete_session(&conn, "drop", None, Some(1.0))
        .await
        .unwrap());
    assert!(indexeddb::delete_session(&conn, "drop", None, Some(2.0))
        .await
        .unwrap());
    assert!(!indexeddb::delete_session(&conn, "drop", None, None)
        .await
        .unwrap());
    let listed: Vec<String> = indexeddb::list_sessions(&conn, None)
        .await
        .unwrap()
        .iter()
        .map(|r| indexeddb::record_from_js(r).unwrap().id)
        .collect();
    assert_eq!(listed, ["keep"]);
    assert_eq!(
        texts(
            &indexeddb::get_items(&conn, &target("keep"), Limit::All)
                .await
                .unwrap()
        ),
        ["k"]
    );
    assert!(indexeddb::get_items(&conn, &target("drop"), Limit::All)
        .await
        .unwrap()
        .is_empty());
    conn.close();
}
