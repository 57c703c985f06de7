//! Effects: storage backends, the model client and the run loop against JavaScript, and the
//! conversions between JavaScript values and the core. No `#[wasm_bindgen]` exports here.

pub mod args;
pub mod error;
pub mod js;

#[cfg(feature = "store")]
pub mod branch_js;
#[cfg(feature = "store")]
pub mod canonical;
#[cfg(feature = "store")]
pub mod indexeddb;
#[cfg(feature = "store")]
pub mod memory;
#[cfg(feature = "store")]
pub mod metadata;
#[cfg(feature = "store")]
pub mod methods;
#[cfg(feature = "store")]
pub mod search;
#[cfg(feature = "store")]
pub mod session;
#[cfg(feature = "store")]
pub mod session_options;
#[cfg(any(feature = "sessions", feature = "memory"))]
pub mod store;
#[cfg(feature = "store")]
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
