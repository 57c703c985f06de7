//! Effects: storage backends, the model client and the run loop against JavaScript, and the
//! conversions between JavaScript values and the core. No `#[wasm_bindgen]` exports here.

pub mod args;
pub mod error;
pub mod js;

#[cfg(feature = "sessions")]
pub mod branch_js;
#[cfg(feature = "sessions")]
pub mod canonical;
#[cfg(feature = "sessions")]
pub mod indexeddb;
#[cfg(feature = "sessions")]
pub mod memory;
#[cfg(feature = "sessions")]
pub mod metadata;
#[cfg(feature = "sessions")]
pub mod search;
#[cfg(feature = "sessions")]
pub mod session;
#[cfg(feature = "sessions")]
pub mod session_options;
#[cfg(feature = "sessions")]
pub mod transaction;

#[cfg(feature = "runner")]
pub mod after_turn;
#[cfg(feature = "runner")]
pub mod compaction;
#[cfg(feature = "runner")]
pub mod model;
#[cfg(feature = "runner")]
pub mod run_options;
#[cfg(feature = "runner")]
pub mod run_result;
#[cfg(feature = "runner")]
pub mod runner;
