//! The JavaScript API: every `#[wasm_bindgen]` export and the TypeScript declarations, and
//! nothing else. The work is done by the backend and the core.

mod runner;
mod sessions;

use js_sys::Promise;
use wasm_bindgen::JsValue;

use crate::backend::js::to_js_error;
use crate::core::error::{Result, SessionError};

fn reject(error: SessionError) -> Promise {
    Promise::reject(&to_js_error(&error))
}

fn settle<T: Into<JsValue>>(result: Result<T>) -> std::result::Result<JsValue, JsValue> {
    result.map(Into::into).map_err(|e| to_js_error(&e))
}
