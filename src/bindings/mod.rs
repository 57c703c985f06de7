//! The JavaScript API: every `#[wasm_bindgen]` export and the TypeScript declarations, and
//! nothing else. The work is done by the backend and the core.

#[cfg(feature = "runner")]
mod runner;
#[cfg(feature = "sessions")]
mod sessions;

#[cfg(feature = "sessions")]
use js_sys::Promise;
use wasm_bindgen::prelude::*;
#[cfg(feature = "sessions")]
use wasm_bindgen::JsValue;

#[cfg(feature = "sessions")]
use crate::backend::js::to_js_error;
#[cfg(feature = "sessions")]
use crate::core::error::{Result, SessionError};

/// Declarations shared by the sessions and the runner modules.
#[wasm_bindgen(typescript_custom_section)]
const SHARED_TYPES: &'static str = r#"
/**
 * A conversation item: an OpenAI Responses-API input item (`{ role, content }` messages,
 * `{ type: 'message', ... }`, `function_call`, `function_call_output`, `reasoning`, ...) or any
 * other plain JSON object. Stored verbatim: `getItems()` returns exactly what was added.
 */
export type Item = { [key: string]: unknown };

/** Session-wide settings, as the SDK's `SessionSettings`. */
export interface SessionSettings {
  /** How many of the newest items `getItems()` returns when called without a limit. */
  limit?: number;
}
"#;

#[cfg(feature = "sessions")]
fn reject(error: SessionError) -> Promise {
    Promise::reject(&to_js_error(&error))
}

#[cfg(feature = "sessions")]
fn settle<T: Into<JsValue>>(result: Result<T>) -> std::result::Result<JsValue, JsValue> {
    result.map(Into::into).map_err(|e| to_js_error(&e))
}
