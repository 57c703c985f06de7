//! The IndexedDB backend, through the `idb` crate.
//!
//! - [`open`]: opening a database, running the schema migrations, one shared connection per name;
//! - [`tx`]: the transaction helper, which owns error mapping and abort;
//! - [`request`]: awaiting a request's result and a transaction's end;
//! - [`record`]: how session records and message rows look in the stores;
//! - [`ops`]: the session operations, one transaction each;
//! - [`repair`]: rebuilding a damaged session from its stored items;
//! - [`rewrite`]: history transactions, mutations, compaction's replacement and its archive;
//! - [`branches`]: conversation branches, turn listings and usage;
//! - [`session`]: the state behind one `IndexedDbSession` object.

pub mod backup;
pub mod branches;
pub mod open;
pub mod ops;
pub mod record;
pub mod repair;
mod request;
pub mod rewrite;
pub mod search;
pub mod session;
mod tx;

pub use open::{connection, open, Connection};
pub use ops::{
    add_items, clear_session, delete_session, get_items, list_sessions, pop_item, recent_turns,
    session_sizes, update, Target,
};
pub use record::record_from_js;
pub use repair::repair_session;
pub use session::IdbSessionState;
