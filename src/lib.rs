//! agent-sessions: the session protocol of the OpenAI Agents SDK (`getItems`, `addItems`,
//! `popItem`, `clearSession`) for agents running in a web page, durable in IndexedDB.
//!
//! Layers:
//! - [`core`]: pure Rust (items, settings, history selection, session bookkeeping, schema),
//!   free of JavaScript types and tested natively;
//! - `backend`: IndexedDB (through the `idb` crate) and memory storage, and the conversions
//!   between JavaScript values and the core (wasm32 only);
//! - `bindings`: every `#[wasm_bindgen]` export, and nothing else (wasm32 only).

pub mod core;

#[cfg(target_arch = "wasm32")]
pub mod backend;
#[cfg(target_arch = "wasm32")]
mod bindings;

/// The allocator of every module: `talc` in place of the standard library's `dlmalloc`, for
/// its smaller code (the modules are single-threaded, so it takes no lock).
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
