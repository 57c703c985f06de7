//! The pure core: no JavaScript types, tested natively with `cargo test`.

pub mod branch;
pub mod canonical;
pub mod error;
pub mod history;
pub mod session;
pub mod sort;

#[cfg(feature = "store")]
pub mod memory;
#[cfg(feature = "store")]
pub mod queue;
#[cfg(feature = "store")]
pub mod repair;
#[cfg(feature = "store")]
pub mod schema;
#[cfg(feature = "store")]
pub mod search;
#[cfg(feature = "store")]
pub mod transaction;

#[cfg(feature = "runner")]
pub mod compaction;
#[cfg(feature = "runner")]
pub mod json;
#[cfg(feature = "runner")]
pub mod json_schema;
#[cfg(feature = "runner")]
pub mod run;
#[cfg(feature = "runner")]
pub mod sse;
#[cfg(feature = "runner")]
pub mod wire;
