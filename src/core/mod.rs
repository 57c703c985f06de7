//! The pure core: no JavaScript types, tested natively with `cargo test`.

pub mod error;
pub mod history;
pub mod memory;
pub mod queue;
pub mod run;
pub mod schema;
pub mod session;
pub mod sse;
pub mod wire;
