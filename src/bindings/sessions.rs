//! `IndexedDbSession`, `MemorySession`, `listSessions`: the exports, and the
//! declarations of the package's sessions API (with the functions the second module serves).
//! Both classes are one exported class over [`Store`]: the main module's over an
//! `IndexedDbSession`'s store, the memory module's over a `MemorySession`'s (which the package's
//! `MemorySession` forwards its calls to); the work is done in `backend`.

use std::rc::Rc;

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;

use crate::backend::args::{take_items, take_limit};
use crate::backend::branch_js::usage_from_js;
use crate::backend::error::session_error;
#[cfg(feature = "sessions")]
use crate::backend::indexeddb::{self, IdbSessionState};
#[cfg(feature = "memory")]
use crate::backend::memory::MemorySessionState;
use crate::backend::metadata::{take_changes, Applied};
use crate::backend::methods;
use crate::backend::session::{self, SessionState};
use crate::backend::session_options::MemorySessionArgs;
#[cfg(feature = "sessions")]
use crate::backend::session_options::{list_args, IdbSessionArgs};
use crate::backend::store::Store;
use crate::backend::transaction::take_transaction;
use crate::core::error::{ErrorFamily, SessionError, SessionErrorCode};

#[wasm_bindgen(typescript_custom_section)]
const SESSION_ERROR_CODES: &'static str = SessionErrorCode::TS_UNION;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** One session as `listSessions` reports it, from its record alone (no message is read).
 * Times are milliseconds since the Unix epoch; `updatedAt` is the last change to the history.
 * A damaged record (written by hand, or cut short by a storage failure) that has a numeric
 * `updatedAt` (the list is read in its order) is listed too, with `null` for each other field it
 * lacks, whatever its type says here: `repairSession` makes it whole. */
export interface SessionInfo {
  sessionId: string;
  userId: string | null;
  createdAt: number;
  updatedAt: number;
  /** The items the branch it is on (`currentBranch`) shows, as its `getInfo()` there says. */
  itemCount: number;
  /** Turns that start at a user message, on that branch. */
  turnCount: number;
  /** By default the first user message, cut to 80 characters; `update({ title })` sets it. */
  title: string | null;
  summary: string | null;
  /** The branch last created or switched to (`'main'` when none was), to reopen it with
   * `new IndexedDbSession(id, { branch: currentBranch })`. */
  currentBranch: string;
  /** About how many bytes its stored items take (the JSON length of each, its branches and
   * archive included), kept up to date by every write; `null` for a session last written by a
   * version before sizes were kept, until `storageEstimate()` measures it. */
  bytes: number | null;
}

/** One branch, as `listBranches()` reports it. */
export interface BranchInfo {
  branchId: string;
  /** The branch it was created from; `null` for `'main'`. */
  parent: string | null;
  /** The turn it was created to replace, or the turn after the last of its parent's it still
   * shows once popped below it (0: none, after a clear or a rewrite that replaced its oldest
   * turns); `null` for `'main'`. */
  fromTurn: number | null;
  /** Every item it shows, those it shares with its parent included. */
  itemCount: number;
  /** `null` for the `'main'` branch of a session nothing was written to yet. */
  createdAt: number | null;
  /** Whether this session object is on it. */
  current: boolean;
  /** The stored rows it shows (IndexedDB sessions only): those of branch `branchId` with a
   * `seq` from `from` (included) to `to` (excluded), newest first. A `searchSessions` hit is an
   * item this branch shows when one of them holds its `branch ?? 'main'` and its `seq`. */
  view?: BranchView[];
}

/** Rows of one branch's storage that a branch shows (see `BranchInfo.view`). */
export interface BranchView {
  branchId: string;
  from: number;
  to: number;
}

/** One turn (a user message and everything up to the next one), for `getTurns`/`findTurns`. */
export interface TurnInfo {
  turn: number;
  /** The user message's text. */
  content: string;
  itemCount: number;
  createdAt: number;
}

/** Model usage: what `storeRunUsage` takes (absent fields count 0; `totalTokens` defaults to
 * input plus output), and the sums the usage methods report. */
export interface UsageCounts {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** `getSessionUsage()`: the sums, and how many turns have usage. */
export interface SessionUsage extends UsageCounts {
  turns: number;
}

/** One turn's usage. */
export interface TurnUsage extends UsageCounts {
  turn: number;
}

/** Tool calls the history shows, per tool and turn. */
export interface ToolUsage {
  name: string;
  count: number;
  turn: number;
}

/** What changed, after it committed: one event per call. `add` (with `count`), `pop`, `clear`,
 * `replace` (`change`: `transaction`, `mutations`, `history` from `replaceHistory`,
 * `compaction`, `repair`, `import`, or `sync`: what a `SyncedSession`'s round pulled), `update` (metadata: `fields`), `delete` (the session),
 * `branch` (`change`: `create`, `delete` or `switch`, with `branchId`). */
export interface SessionChangeEvent {
  type: 'add' | 'pop' | 'clear' | 'replace' | 'update' | 'delete' | 'branch';
  sessionId: string;
  /** The writer's user (absent on `delete`, which takes no user). */
  userId?: string | null;
  /** The branch the writer was on. */
  branch?: string;
  /** The database (`IndexedDbSession` events). */
  dbName?: string;
  count?: number;
  change?: 'transaction' | 'mutations' | 'history' | 'compaction' | 'repair' | 'import' | 'sync' | 'create' | 'delete' | 'switch';
  fields?: string[];
  branchId?: string;
  /** When it was posted, milliseconds since the Unix epoch. */
  at?: number;
}

/** Which branch a listing reads: this object's when absent. */
export interface BranchOption {
  branch?: string;
}

/** What `getInfo()` reports: the counters and every piece of metadata. A session nothing was
 * written to yet has `null` times. */
export interface SessionDetails<TState extends object = { [key: string]: unknown }> {
  sessionId: string;
  userId: string | null;
  createdAt: number | null;
  updatedAt: number | null;
  itemCount: number;
  turnCount: number;
  /** How many writes removed or replaced stored items of the session (pops, clears, rewrites,
   * compaction, branch deletions, repairs, imports over it). Appends leave it: while it,
   * `createdAt` and the object's `currentBranch` stay the same, the history has only grown
   * since it was read. */
  rewrites: number;
  title: string | null;
  summary: string | null;
  topics: string[] | null;
  state: TState | null;
}

/** What `update()` changes: each field given (`null` clears it); the others stay. */
export interface SessionUpdate<TState extends object = { [key: string]: unknown }> {
  /** At most 1,000 characters, else `INVALID_TITLE`. */
  title?: string | null;
  summary?: string | null;
  topics?: string[] | null;
  /** Any object the structured clone can store (copied now) and JSON writes as an object or an
   * array (not a `Date`), else `INVALID_STATE`. */
  state?: TState | null;
  /** `title` is set only if the session's title is still this (`null`: none), checked in the
   * same transaction; the other fields are set either way. For a title computed from what was
   * read (the runner's `autoTitle`): a rename in between wins. Given as `undefined` it is
   * `INVALID_OPTIONS` (a condition is not dropped unsaid, as `title: undefined` is): leave the
   * key out for none. */
  expectedTitle?: string | null;
  /** Nothing is set unless the session is stored and was first written at this time (its
   * `getInfo().createdAt`), checked in the same transaction: not deleted since (in another tab),
   * nor deleted and begun again. What the runner's titles and summaries are written with.
   * `null` (what `getInfo()` gives a session not stored yet): only while it is still not
   * stored. */
  expectedCreatedAt?: number | null;
}


/** The errors this library throws (and rejects with) are `Error`s of this shape. */
export interface SessionError extends Error {
  name: 'SessionError';
  code: SessionErrorCode;
  /** `STORAGE_FULL`: the origin's storage use and quota in bytes, where the browser tells. */
  usage?: number;
  quota?: number;
  /** `IMPORT_INVALID`: the backup's line at fault (from 1), and the session it names where that
   * could be read (`SESSION_BUSY` from `importSessions`: its session, and its first line). */
  line?: number;
  sessionId?: string;
  /** `IMPORT_INVALID` of a backup cut short (in `report.failed`, without a `sessionId`): how
   * many of the sessions its header counts it lost. */
  missing?: number;
  /** An `importSessions` that stopped part-way (storage full, an unreadable backup after some
   * sessions): what it wrote before, as it would have resolved with it. */
  report?: ImportReport;
  /** An `applyRetention` that failed part-way: the sessions it deleted before, as it would
   * have resolved with them. */
  deleted?: { sessionId: string; userId: string | null; updatedAt: number }[];
  /** Thrown by a session during a run (our `Runner`): the run state to resume from, where the
   * run can be resumed (a `RunState` of `agent-sessions/runner`). */
  state?: import('./agent_sessions_runner.js').RunState;
}

/** What `importSessions` did, session by session. */
export interface ImportReport {
  imported: string[];
  replaced: string[];
  renamed: { from: string; sessionId: string }[];
  skipped: string[];
  /** One `SessionError` per session not written, with its `sessionId` where the line that names
   * it could be read: `IMPORT_INVALID` with the `line` at fault, or `SESSION_BUSY` for one that
   * `'replace'` would rewrite while a run answers in it (left as it is); and one for a backup cut
   * short, with the count of the sessions it lost (`missing`), and one per run of lines that belong to no session. */
  failed: SessionError[];
  /** The lines read. */
  lines: number;
}

export interface IndexedDbSessionOptions {
  /** The user the session belongs to. A session can only be opened by the user that created it
   * (`null` or absent: no user, as `SessionInfo.userId` says of a session without one). */
  userId?: string | null;
  /** IndexedDB database name; default `"agent-sessions"`. */
  dbName?: string | null;
  settings?: SessionSettings;
  /** The branch this object reads and writes; default `'main'`. */
  branch?: string;
  /** What the search index takes of the items this object writes: message text always; with
   * `tools: true`, tool calls' arguments and outputs too. */
  index?: { tools?: boolean };
}

export interface MemorySessionOptions {
  settings?: SessionSettings;
}

export interface ListSessionsOptions {
  /** IndexedDB database name; default `"agent-sessions"`. */
  dbName?: string | null;
  /** Only this user's sessions (`null`: only the sessions without a user; absent: every
   * session). */
  userId?: string | null;
}

export interface DeleteSessionOptions {
  /** IndexedDB database name; default `"agent-sessions"`. */
  dbName?: string | null;
  /** Deletes the session only if it is this user's (`null`: one without a user), else rejects
   * with `USER_MISMATCH`, nothing deleted: what a page of several users passes, as it passes
   * `userId` to the sessions it opens. Absent: whoever's it is. */
  userId?: string | null;
  /** Deletes the session only if its `updatedAt` is still this (as `listSessions` showed it):
   * a session written since, in this tab or another, is kept and the call resolves to `false`. */
  expectedUpdatedAt?: number;
}

export interface RepairSessionOptions {
  /** IndexedDB database name; default `"agent-sessions"`. */
  dbName?: string | null;
  /** The owner to give the session when its damaged record no longer names one that can be
   * read (or has no record at all); otherwise the owner is kept (`null`: no user). */
  userId?: string | null;
}

/** What `repairSession` did. */
export interface RepairReport {
  /** Whether the session had a record or items at all. */
  existed: boolean;
  /** The repaired session's owner (`null`: no user, or nothing existed). */
  userId: string | null;
  /** Items the session holds after the repair. */
  itemCount: number;
  /** Rows deleted because they held no item. */
  removedRows: number;
  /** Rows given a new sequence number or turn (to close a gap, or renumber turns). */
  renumberedRows: number;
}

/** The session methods shared by `IndexedDbSession` and `MemorySession` (the SDK's `Session`). */
export interface SessionMethods {
  readonly sessionId: string;
  readonly settings: Readonly<SessionSettings>;
  getSessionId(): Promise<string>;
  /**
   * The newest `limit` items, oldest first; all of them without a limit (or the newest
   * `settings.turns` whole turns when set, else `settings.limit` items). `limit <= 0` gives
   * `[]`, `Infinity` everything. The type parameter only names the item shape you stored.
   */
  getItems<T extends object = Item>(limit?: number | null): Promise<T[]>;
  /** The items of the newest `turns` whole turns (a turn starts at a user message; items
   * before the first one are turn 0), flat and oldest first. Reads only those items. */
  getRecentTurns<T extends object = Item>(turns: number): Promise<T[]>;
  /** The session's counters and metadata (title, summary, topics, state), from its record. */
  getInfo<TState extends object = { [key: string]: unknown }>(): Promise<SessionDetails<TState>>;
  /** Changes the metadata, atomically; the history and `updatedAt` stay as they are. */
  update<TState extends object = { [key: string]: unknown }>(changes: SessionUpdate<TState>): Promise<void>;
  /** Appends the items in order, atomically. Each must be a plain object. */
  addItems(items: readonly object[]): Promise<void>;
  /** Removes and returns the newest item; `undefined` when the session is empty. */
  popItem<T extends object = Item>(): Promise<T | undefined>;
  /** Removes every item of this session. */
  clearSession(): Promise<void>;
  /** Releases the session; any later call rejects with `CLOSED`, and its `subscribe` listeners
   * are called no more. */
  close(): Promise<void>;
  /**
   * Applies a history transaction atomically and idempotently, as the SDK's
   * `SessionHistoryTransactionAwareSession`: `append_items` appends; `replace_suffix` replaces
   * the newest items, only if the history still ends with `expectedSuffix` (else
   * `SUFFIX_MISMATCH`, nothing changed). The same `operationId` again with the same transaction
   * changes nothing; with another one it is `TRANSACTION_CONFLICT`. The newest 1,000 operation
   * ids of a session are remembered, durably for `IndexedDbSession`; `clearSession` forgets them
   * (on `main` of a session without other branches: the log is the session's, shared by its
   * branches).
   */
  applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void>;
  /** Rewrites stored items, as the SDK's `SessionHistoryRewriteAwareSession`. */
  applyHistoryMutations(args: SessionHistoryRewriteArgs): Promise<void>;
  /**
   * Replaces the whole history by `items` in one transaction (the SDK's compaction hook). The
   * replaced items move to the session's archive (`getArchivedItems`), nothing is deleted.
   */
  replaceHistoryWithCompaction(items: readonly object[]): Promise<void>;
  /** `replaceHistoryWithCompaction`, choosing whether the replaced items are archived. */
  replaceHistory(items: readonly object[], options?: ReplaceHistoryOptions): Promise<void>;
  /** Items compaction replaced, oldest first: the newest `limit` of them (all without one),
   * skipping the `before` newest (for paging back: `before` = how many were read so far). */
  getArchivedItems<T extends object = Item>(options?: ArchiveWindow): Promise<T[]>;
  /** The branch every protocol method of this object acts on (`'main'` by default). When
   * another tab deletes it and creates a branch of the same name, this object's calls reject
   * with `BRANCH_NOT_FOUND` until `switchBranch` moves it onto the new one. */
  readonly currentBranch: string;
  /** Creates a branch that shows everything before turn `turn` of the current branch (to ask
   * that turn again differently), moves this object onto it, and resolves to its id: `name`, or
   * `turn-<n>` (`turn-<n>-2`…) without one. `IndexedDbSession` remembers it in the session
   * record and shares the items before the turn instead of copying them; `MemorySession`
   * copies their handles. A name is non-blank and at most 200 characters (else
   * `INVALID_OPTIONS`). */
  createBranchFromTurn(turn: number, name?: string): Promise<string>;
  /** `createBranchFromTurn` from the first turn whose user message contains `text` (ignoring
   * case). */
  createBranchFromContent(text: string, name?: string): Promise<string>;
  /** Moves this object onto branch `id` (`'main'` is the first one) and remembers it. */
  switchBranch(id: string): Promise<void>;
  /** Every branch, `'main'` first, then in the order they were created. */
  listBranches(): Promise<BranchInfo[]>;
  /** Deletes a branch and its items (never `'main'` nor this object's branch:
   * `BRANCH_IN_USE`); the branches created from it keep everything they show. */
  deleteBranch(id: string): Promise<void>;
  /** The turns of a branch that start at a user message, oldest first. */
  getTurns(options?: BranchOption): Promise<TurnInfo[]>;
  /** The turns whose user message contains `text`, ignoring case. */
  findTurns(text: string, options?: BranchOption): Promise<TurnInfo[]>;
  /** Adds a run's usage to the newest turn of the current branch (call it after the SDK's
   * `run()`, with `result.state.usage`; our runner stores it with the run's last save instead,
   * in its history transaction, and calls this only for a run that ends without an answer). */
  storeRunUsage(usage: Partial<UsageCounts>): Promise<void>;
  /** The usage of every branch together, or of one with `{ branch }`. */
  getSessionUsage(options?: BranchOption): Promise<SessionUsage>;
  /** The usage of one turn of the current branch, or of another with `{ branch }` (`null` when
   * it has none). */
  getTurnUsage(turn: number, options?: BranchOption): Promise<TurnUsage | null>;
  /** The usage of every turn of the current branch (or `{ branch }`) that has some, oldest
   * first. */
  getTurnUsage(turn?: null, options?: BranchOption): Promise<TurnUsage[]>;
  /** Either of the above, as `turn` is given or not. */
  getTurnUsage(turn?: number | null, options?: BranchOption): Promise<TurnUsage | TurnUsage[] | null>;
  /** The tool calls a branch shows, counted per tool and turn. */
  getToolUsage(options?: BranchOption): Promise<ToolUsage[]>;
  /** Calls `listener` after every change to this session commits: for `IndexedDbSession`, made
   * by any object, tab or worker of the origin (a `BroadcastChannel` per database); for
   * `MemorySession`, by this object. Returns the function that stops it. Each object's own
   * `subscribe` is bound to it (the same function every time), so it can be handed on by itself:
   * `useSyncExternalStore(session.subscribe, …)`. `close()` and `free()` stop the object's
   * listeners; on a closed object, `subscribe` throws `CLOSED`. */
  subscribe(listener: (event: SessionChangeEvent) => void): () => void;
}

/** A history transaction (the SDK's `SessionHistoryTransaction`). */
export type SessionHistoryTransaction =
  | { type: 'append_items'; items: readonly object[] }
  | { type: 'replace_suffix'; expectedSuffix: readonly object[]; replacement: readonly object[] };

export interface SessionHistoryTransactionArgs {
  /** Non-empty, and the same when the transaction is retried. */
  operationId: string;
  transaction: SessionHistoryTransaction;
  /** A run's usage, added to the newest turn the transaction leaves, in the same transaction as
   * its items (what `storeRunUsage` would add afterwards); nothing when the operation was applied
   * before. This package's runner sends the answer's save this way. */
  usage?: Partial<UsageCounts>;
}

/** The SDK's `SessionHistoryMutation`: replace the `function_call` with this `callId`. */
export interface SessionHistoryReplaceFunctionCallMutation {
  type: 'replace_function_call';
  callId: string;
  replacement: Item & { type: 'function_call' };
}

export interface SessionHistoryRewriteArgs {
  mutations: SessionHistoryReplaceFunctionCallMutation[];
}

export interface ReplaceHistoryOptions {
  /** Move the replaced items to the archive; default `true`. */
  archive?: boolean;
  /** Replace only if the history still holds exactly these items (as `replace_suffix`
   * compares them), else `SUFFIX_MISMATCH` and nothing changes: for a replacement computed
   * from a history that another tab may have changed meanwhile. */
  expectedItems?: readonly object[];
}


/** A session stored in IndexedDB: durable across reloads, shared by the tabs of an origin. */
export interface IndexedDbSession extends SessionMethods {}
export class IndexedDbSession {
  constructor(sessionId: string, options?: IndexedDbSessionOptions);
  readonly userId: string | null;
  readonly dbName: string;
  /** Frees the WebAssembly memory of this object now instead of at garbage collection. */
  free(): void;
}

/** A session kept in memory only: gone on reload. Makes a random id when none is given. */
export interface MemorySession extends SessionMethods {}
export class MemorySession {
  constructor(sessionId?: string | null, options?: MemorySessionOptions);
  /** Frees the WebAssembly memory of this object now instead of at garbage collection. */
  free(): void;
}

/** What `searchSessions` searches. */
export interface SearchSessionsOptions {
  dbName?: string | null;
  /** Whose sessions: required, so nobody searches everyone's by accident (`null`: the sessions
   * without a user). */
  userId: string | null;
  /** Words (all must match, whole words), `"quoted phrases"` (in order) and `prefix*`. */
  query: string;
  /** The most hits (default 20; at most 1,000 come back, whatever it asks). */
  limit?: number;
  /** Only these sessions (still only the user's). */
  sessionIds?: string[];
  /** The build of the index of items written before it existed, which a search waits for. */
  onProgress?: (progress: SearchIndexProgress) => void;
}

/** One item that matched, best first. */
export interface SearchHit {
  sessionId: string;
  /** The branch that holds the item, when it is not `'main'`. */
  branch?: string;
  /** Its sequence number in its session's storage, which orders the items as `getItems` does
   * (a larger one is newer) but is not an index into `getItems()`: it counts from where the
   * history began, which a clear, a rewrite or a compaction moves on. */
  seq: number;
  /** Its user turn, from 1, as `getTurns()` numbers them; 0 for an item before the first user
   * message (a compaction's summary at the head, a system message), which no turn lists. */
  turn: number;
  /** Its `role` (or `type` for an item without one). */
  role: string;
  /** Plain text around the match, at most about 160 characters (`…` where it was cut). */
  snippet: string;
  /** BM25; equal scores are ordered newest first. */
  score: number;
  createdAt: number;
}

/** How far the build of the search index is: rows looked at, of `total`. */
export interface SearchIndexProgress {
  done: number;
  total: number;
}

/** Full-text search of one user's sessions through an index kept in the same transaction as
 * every write (never a scan of the history). An empty or blank query finds nothing. */
export function searchSessions(options: SearchSessionsOptions): Promise<SearchHit[]>;

/** Indexes the items written before the search index existed (a database from an earlier
 * version), a chunk per transaction, resuming where an interrupted build stopped. It also runs
 * by itself after the database is opened, and a search waits for it. */
export function buildSearchIndex(options?: { dbName?: string | null; onProgress?: (progress: SearchIndexProgress) => void }): Promise<SearchIndexProgress>;

/** Deletes a session and all its items. Resolves to whether it deleted one. */
export function deleteSession(sessionId: string, options?: DeleteSessionOptions): Promise<boolean>;

/**
 * Rebuilds a session whose stored record or items are damaged (every call on it rejects with
 * `CORRUPT_SESSION`) from the items actually stored, in one transaction: rows without an item
 * are deleted, the others keep their order with their gaps closed, and the record is rewritten
 * to match. A sound session is left as it is.
 */
export function repairSession(sessionId: string, options?: RepairSessionOptions): Promise<RepairReport>;
"#;

/// The class `IndexedDbSession` extends (in the package's JS, over the main module's) and
/// `MemorySession` forwards to (the memory module's): one class over either store, so that
/// each method is written once.
#[wasm_bindgen(skip_typescript)]
pub struct Session {
    state: Rc<Store>,
    settings: Object,
}

#[wasm_bindgen]
impl Session {
    #[wasm_bindgen(getter, js_name = sessionId)]
    pub fn session_id(&self) -> String {
        self.state.core().session_id.clone()
    }

    #[wasm_bindgen(getter)]
    pub fn settings(&self) -> Object {
        self.settings.clone()
    }

    #[wasm_bindgen(js_name = getSessionId)]
    pub fn get_session_id(&self) -> Promise {
        match self.state.core().check_open("getSessionId") {
            Ok(()) => Promise::resolve(&JsValue::from_str(&self.state.core().session_id)),
            Err(e) => session::rejected(e),
        }
    }

    #[wasm_bindgen(js_name = getItems)]
    pub fn get_items(&self, limit: JsValue) -> Promise {
        session::queued(
            &self.state,
            "getItems",
            || take_limit(&limit, "limit"),
            async |s, limit| session::get_items(s, limit).await,
        )
    }

    #[wasm_bindgen(js_name = getRecentTurns)]
    pub fn get_recent_turns(&self, turns: JsValue) -> Promise {
        session::queued(
            &self.state,
            "getRecentTurns",
            || match take_limit(&turns, "turns")? {
                Some(turns) => Ok(turns),
                None => Err(SessionError::new(
                    SessionErrorCode::InvalidLimit,
                    "turns must be an integer, got nothing",
                )),
            },
            async |s, turns| session::recent_turns(s, turns).await,
        )
    }

    #[wasm_bindgen(js_name = getInfo)]
    pub fn get_info(&self) -> Promise {
        session::queued(
            &self.state,
            "getInfo",
            || Ok(()),
            async |s, ()| s.info().await,
        )
    }

    pub fn update(&self, changes: JsValue) -> Promise {
        session::queued(
            &self.state,
            "update",
            || take_changes(&changes),
            // For the change event, which the entry leaves out: `false` where it wrote nothing,
            // `true` where it set every field given but the title.
            async |s, changes| match s.update(changes).await? {
                Applied::All => Ok(JsValue::UNDEFINED),
                Applied::Nothing => Ok(JsValue::FALSE),
                Applied::AllButTitle => Ok(JsValue::TRUE),
            },
        )
    }

    /// The items are copied now: changing the caller's array afterwards changes nothing
    /// stored.
    #[wasm_bindgen(js_name = addItems)]
    pub fn add_items(&self, items: JsValue) -> Promise {
        session::queued(
            &self.state,
            "addItems",
            || take_items(&items),
            async |s, items| s.add_items(items).await.map(|()| JsValue::UNDEFINED),
        )
    }

    #[wasm_bindgen(js_name = popItem)]
    pub fn pop_item(&self) -> Promise {
        session::queued(
            &self.state,
            "popItem",
            || Ok(()),
            async |s, ()| Ok(s.pop_item().await?.unwrap_or(JsValue::UNDEFINED)),
        )
    }

    #[wasm_bindgen(js_name = clearSession)]
    pub fn clear_session(&self) -> Promise {
        session::queued(
            &self.state,
            "clearSession",
            || Ok(()),
            // Whether it wrote, for its change event (the package's class resolves `undefined`).
            async |s, ()| s.clear().await.map(JsValue::from),
        )
    }

    pub fn close(&self) -> Promise {
        session::close(&self.state)
    }

    #[wasm_bindgen(js_name = applyHistoryTransaction)]
    pub fn apply_history_transaction(&self, args: JsValue) -> Promise {
        session::queued(
            &self.state,
            "applyHistoryTransaction",
            || take_transaction(&args),
            // Whether it changed anything, for its change event (the package's class resolves
            // `undefined`, as the SDK's sessions do).
            async |s, taken| s.apply_transaction(taken).await.map(JsValue::from),
        )
    }

    /// The branch this object reads and writes.
    #[wasm_bindgen(getter, js_name = currentBranch)]
    pub fn current_branch(&self) -> String {
        self.state.branch()
    }

    #[wasm_bindgen(js_name = switchBranch)]
    pub fn switch_branch(&self, id: JsValue) -> Promise {
        methods::switch_branch(&self.state, &id)
    }

    #[wasm_bindgen(js_name = listBranches)]
    pub fn list_branches(&self) -> Promise {
        methods::list_branches(&self.state)
    }

    #[wasm_bindgen(js_name = getTurns)]
    pub fn get_turns(&self, options: JsValue) -> Promise {
        methods::get_turns(&self.state, &options)
    }

    #[wasm_bindgen(js_name = findTurns)]
    pub fn find_turns(&self, text: JsValue, options: JsValue) -> Promise {
        methods::find_turns(&self.state, &text, &options)
    }

    #[wasm_bindgen(js_name = storeRunUsage)]
    pub fn store_run_usage(&self, usage: JsValue) -> Promise {
        session::queued(
            &self.state,
            "storeRunUsage",
            || usage_from_js(&usage, "storeRunUsage()"),
            async |s, usage| s.store_usage(usage).await.map(|()| JsValue::UNDEFINED),
        )
    }

    #[wasm_bindgen(js_name = getSessionUsage)]
    pub fn get_session_usage(&self, options: JsValue) -> Promise {
        methods::get_session_usage(&self.state, &options)
    }

    #[wasm_bindgen(js_name = getTurnUsage)]
    pub fn get_turn_usage(&self, turn: JsValue, options: JsValue) -> Promise {
        methods::get_turn_usage(&self.state, &turn, &options)
    }

    #[wasm_bindgen(js_name = getToolUsage)]
    pub fn get_tool_usage(&self, options: JsValue) -> Promise {
        methods::get_tool_usage(&self.state, &options)
    }

    /// Runs the method `what` of this `IndexedDbSession` with `args` in the second module, in
    /// the object's call order, through `op` (see `backend::store::in_order`): the package's JS
    /// calls it for the methods that module serves; not part of the API.
    #[cfg(feature = "sessions")]
    #[wasm_bindgen(js_name = inOrder)]
    pub fn in_order(&self, what: String, args: js_sys::Array, op: js_sys::Function) -> Promise {
        crate::backend::store::in_order(&self.state, &what, &args, op)
    }

    /// `new IndexedDbSession(sessionId, options)` (`memory` false; the main module) or
    /// `new MemorySession(sessionId, options)` (`memory` true; the memory module, which the
    /// package's `MemorySession` loads at its first call).
    #[wasm_bindgen(constructor)]
    pub fn new(session_id: JsValue, options: JsValue, memory: bool) -> Result<Session, JsValue> {
        let (store, settings) = match memory {
            true => memory_store(&session_id, &options),
            false => indexeddb_store(&session_id, &options),
        }
        .map_err(|e| session_error(&e))?;
        Ok(Session {
            state: Rc::new(store),
            settings,
        })
    }

    /// An `IndexedDbSession`'s owner, or `null` for a session without one; `undefined` on a
    /// `MemorySession`, which has no owner.
    #[wasm_bindgen(getter, js_name = userId)]
    pub fn user_id(&self) -> JsValue {
        match &*self.state {
            #[cfg(feature = "sessions")]
            Store::IndexedDb(s) => s
                .user_id
                .as_deref()
                .map_or(JsValue::NULL, JsValue::from_str),
            #[cfg(feature = "memory")]
            Store::Memory(_) => JsValue::UNDEFINED,
        }
    }

    /// An `IndexedDbSession`'s database; `undefined` on a `MemorySession`.
    #[wasm_bindgen(getter, js_name = dbName)]
    pub fn db_name(&self) -> JsValue {
        match &*self.state {
            #[cfg(feature = "sessions")]
            Store::IndexedDb(s) => JsValue::from_str(&s.db_name),
            #[cfg(feature = "memory")]
            Store::Memory(_) => JsValue::UNDEFINED,
        }
    }
}

/// The methods an `IndexedDbSession` runs in the second sessions module: the package's JS
/// defines them over the main module's class, through `inOrder` (see `methods::call`), so the
/// main module does not export them; the memory module does, for `MemorySession`.
#[cfg(feature = "memory")]
#[wasm_bindgen]
impl Session {
    #[wasm_bindgen(js_name = applyHistoryMutations)]
    pub fn apply_history_mutations(&self, args: JsValue) -> Promise {
        methods::apply_history_mutations(&self.state, &args)
    }

    #[wasm_bindgen(js_name = replaceHistoryWithCompaction)]
    pub fn replace_history_with_compaction(&self, items: JsValue) -> Promise {
        methods::replace_history_with_compaction(&self.state, &items)
    }

    #[wasm_bindgen(js_name = replaceHistory)]
    pub fn replace_history(&self, items: JsValue, options: JsValue) -> Promise {
        methods::replace_history(&self.state, &items, &options)
    }

    #[wasm_bindgen(js_name = getArchivedItems)]
    pub fn get_archived_items(&self, options: JsValue) -> Promise {
        methods::get_archived_items(&self.state, &options)
    }

    #[wasm_bindgen(js_name = createBranchFromTurn)]
    pub fn create_branch_from_turn(&self, turn: JsValue, name: JsValue) -> Promise {
        methods::create_branch_from_turn(&self.state, &turn, &name)
    }

    #[wasm_bindgen(js_name = createBranchFromContent)]
    pub fn create_branch_from_content(&self, text: JsValue, name: JsValue) -> Promise {
        methods::create_branch_from_content(&self.state, &text, &name)
    }

    #[wasm_bindgen(js_name = deleteBranch)]
    pub fn delete_branch(&self, id: JsValue) -> Promise {
        methods::delete_branch(&self.state, &id)
    }
}

/// A `MemorySession`'s store (the memory module's).
#[cfg(feature = "memory")]
fn memory_store(session_id: &JsValue, options: &JsValue) -> Result<(Store, Object), SessionError> {
    let args = MemorySessionArgs::parse(session_id, options)?;
    let state = MemorySessionState::new(args.session_id, args.settings);
    Ok((Store::Memory(state), args.settings_js))
}

#[cfg(not(feature = "memory"))]
fn memory_store(_: &JsValue, _: &JsValue) -> Result<(Store, Object), SessionError> {
    Err(served_by_the_other_module("a MemorySession"))
}

/// An `IndexedDbSession`'s store (the main module's).
#[cfg(feature = "sessions")]
fn indexeddb_store(
    session_id: &JsValue,
    options: &JsValue,
) -> Result<(Store, Object), SessionError> {
    let args = IdbSessionArgs::parse(session_id, options)?;
    let state = IdbSessionState::new(
        args.db_name,
        args.session_id,
        args.user_id,
        args.settings,
        args.branch,
        None,
        args.index_tools,
    );
    Ok((Store::IndexedDb(state), args.settings_js))
}

#[cfg(not(feature = "sessions"))]
fn indexeddb_store(_: &JsValue, _: &JsValue) -> Result<(Store, Object), SessionError> {
    Err(served_by_the_other_module("an IndexedDbSession"))
}

#[cfg(not(all(feature = "sessions", feature = "memory")))]
fn served_by_the_other_module(what: &str) -> SessionError {
    SessionError::new(
        SessionErrorCode::InvalidSession,
        format!("{what} is not served by this module"),
    )
}

/// `new MemorySession(sessionId, options)`'s arguments, checked when it is made (the memory
/// module, which keeps its items, is loaded at its first call): `{ sessionId, settings }`, the
/// id (a random UUID when none was given) and the settings as the session's `settings` reports
/// them, a frozen copy. Not part of the API.
#[cfg(feature = "sessions")]
#[wasm_bindgen(js_name = memorySessionArgs, skip_typescript)]
pub fn memory_session_args(session_id: JsValue, options: JsValue) -> Result<Object, JsValue> {
    let args = MemorySessionArgs::parse(&session_id, &options).map_err(|e| session_error(&e))?;
    Ok(crate::backend::js::object(&[
        ("sessionId", args.session_id.into()),
        ("settings", args.settings_js.into()),
    ]))
}

/// Gives the main module the function that starts the search index's build of a database in
/// the second module (`builder(dbName)`), which it calls when an opened database needs one. Not
/// part of the API.
#[cfg(all(feature = "sessions", not(feature = "extras")))]
#[wasm_bindgen(js_name = setIndexBuilder, skip_typescript)]
pub fn set_index_builder(builder: js_sys::Function) {
    indexeddb::open::set_index_builder(builder);
}

/// The stored records of the sessions `listSessions` lists, newest first: the package's
/// `listSessions` gives each one's public fields (in one pass in JS, where reading and writing
/// ten fields of two hundred records costs no crossing between JS and WebAssembly).
#[cfg(feature = "sessions")]
#[wasm_bindgen(js_name = listSessionRecords, skip_typescript)]
pub fn list_session_records(options: JsValue) -> Promise {
    session::promise_of(list_args(&options), |(db_name, user_id)| async move {
        let conn = indexeddb::connection(&db_name).await?;
        let records = indexeddb::list_sessions(&conn, user_id.as_deref()).await?;
        Ok(records.into_iter().collect::<js_sys::Array>().into())
    })
}
