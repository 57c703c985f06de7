//! The JavaScript API: every `#[wasm_bindgen]` export and the TypeScript declarations, and
//! nothing else. The work is done by the backend and the core.

#[cfg(feature = "extras")]
mod extras;
#[cfg(feature = "runner")]
mod runner;
#[cfg(any(feature = "sessions", feature = "memory"))]
mod sessions;

use wasm_bindgen::prelude::*;

/// Declarations shared by the sessions and the runner modules.
#[wasm_bindgen(typescript_custom_section)]
const SHARED_TYPES: &'static str = r#"
/**
 * A conversation item: an OpenAI Responses-API input item (`{ role, content }` messages,
 * `{ type: 'message', ... }`, `function_call`, `function_call_output`, `reasoning`, ...) or any
 * other plain JSON object. Stored verbatim: `getItems()` returns exactly what was added.
 */
export type Item = { [key: string]: unknown };

/** Which archived items `getArchivedItems` returns. */
export interface ArchiveWindow {
  /** How many of the newest archived items (after `before`) to return; default all. */
  limit?: number;
  /** How many of the newest archived items to skip; default 0. */
  before?: number;
}

/** Session-wide settings, as the Python SDK's `SessionSettings`. */
export interface SessionSettings {
  /** How many of the newest items `getItems()` returns when called without a limit. */
  limit?: number;
  /** How many of the newest whole turns `getItems()` returns when called without a limit (a
   * turn starts at a user message); wins over `limit`. */
  turns?: number;
}
"#;
