import type { SessionError, ImportReport, Item, IndexedDbSession, SessionHistoryTransactionArgs, SessionHistoryRewriteArgs, ListSessionsOptions, SessionInfo, ArchiveWindow, SessionSettings } from './agent_sessions.js';

export {
  IndexedDbSession,
  MemorySession,
  deleteSession,
  repairSession,
  searchSessions,
  buildSearchIndex,
} from './agent_sessions.js';
export type {
  Item,
  SessionSettings,
  SessionInfo,
  SessionDetails,
  SessionUpdate,
  SessionError,
  SessionErrorCode,
  ImportReport,
  SessionMethods,
  IndexedDbSessionOptions,
  MemorySessionOptions,
  ListSessionsOptions,
  DeleteSessionOptions,
  RepairSessionOptions,
  RepairReport,
  SessionHistoryTransaction,
  SessionHistoryTransactionArgs,
  SessionHistoryReplaceFunctionCallMutation,
  SessionHistoryRewriteArgs,
  ReplaceHistoryOptions,
  ArchiveWindow,
  BranchInfo,
  BranchView,
  BranchOption,
  TurnInfo,
  UsageCounts,
  SessionUsage,
  TurnUsage,
  ToolUsage,
  SessionChangeEvent,
  SearchSessionsOptions,
  SearchHit,
  SearchIndexProgress,
} from './agent_sessions.js';

/** A change to the sessions list, for sidebars: a session created, written to, or deleted. */
export interface SessionListChange {
  type: 'created' | 'updated' | 'deleted';
  sessionId: string;
  /** The session's user (`null`: none). */
  userId: string | null;
  /** The event behind it (`add`, `pop`, `update`…). */
  change: 'add' | 'pop' | 'clear' | 'replace' | 'update' | 'delete' | 'branch';
}

/** The sessions of a database (one user's, with `userId`), newest `updatedAt` first. */
export function listSessions(options?: ListSessionsOptions): Promise<SessionInfo[]>;

/** Reports sessions of a database (one user's with `userId`; `null`: those without one) being
 * created, updated and deleted, from every tab and worker of the origin. Returns the function
 * that stops it; its `ready` resolves to the sessions that existed at the start, as
 * `listSessions` lists them, once they were read (until then a change is held back, so none is
 * lost): the list the changes follow from, which a sidebar starts from so that it misses no
 * change and sees none twice. When that read fails (options that are not valid:
 * `INVALID_OPTIONS`, `INVALID_USER_ID`; a database that cannot be opened), `ready` rejects with
 * its error and the watch ends. */
export function watchSessions(
  options: { dbName?: string | null; userId?: string | null } | null | undefined,
  listener: (change: SessionListChange) => void,
): (() => void) & { ready: Promise<SessionInfo[]> };

/** The name of the Web Lock (`navigator.locks`) a run holds on a session from reading its
 * history to saving its turn, and a `SyncedSession` round while it rewrites the local history:
 * hold it to keep runs out of a session, in every tab, while the app works on it. `dbName`
 * `null` or `undefined`: the default database, `"agent-sessions"`. */
export function sessionLockName(dbName: string | null | undefined, sessionId: string): string;

/** Asks the browser to keep this origin's data under storage pressure
 * (`navigator.storage.persist()`); resolves to whether it is persisted. */
export function requestPersistentStorage(): Promise<boolean>;

/** What `storageEstimate()` reports. */
export interface StorageEstimate {
  /** Bytes this origin stores, all of its storage included (`navigator.storage.estimate()`);
   * `null` where the browser does not say. */
  usage: number | null;
  /** Bytes it may store; `null` where the browser does not say. */
  quota: number | null;
  /** Whether the browser keeps this origin's data under storage pressure. */
  persisted: boolean;
  /** About how many bytes each session's items take (the JSON length of each, its branches and
   * archive included), newest first. From the sizes kept in each session record at write time:
   * no item is read. */
  sessions: { sessionId: string; bytes: number }[];
}

/** This origin's storage use and quota, and the size of each session of a database (one user's
 * with `userId`; `null`: those without a user). */
export function storageEstimate(options?: { dbName?: string | null; userId?: string | null }): Promise<StorageEstimate>;

/** Which sessions `exportSessions` writes: a database's (one user's with `userId`; `null`: those
 * without a user), only `sessionIds` when given. */
export interface ExportSessionsOptions {
  dbName?: string | null;
  userId?: string | null;
  sessionIds?: string[];
}

/** What an export wrote, once its stream ended. */
export interface ExportReport {
  /** The sessions written out whole. */
  sessions: number;
  /** The sessions written as a `failed` line (what of them went out before is not restored):
   * a damaged record (`CORRUPT_SESSION`), an item JSON cannot write (`INVALID_ITEM`), a record
   * stored under an id no call can name (`INVALID_SESSION_ID`), one rewritten while it was read,
   * again and again (`SESSION_BUSY`). Back them up again. */
  failed: { sessionId: string; code: string; message: string }[];
  /** The sessions deleted after the export listed them (or deleted and made again by another
   * user than the one exported). */
  deleted: string[];
}

/** The sessions as a stream of UTF-8 NDJSON (the backup format in the README), read a page at a
 * time as the stream is pulled; a session rewritten while it is read (popped or compacted in
 * another tab) is read again. Save it with `new Response(stream).blob()`, then read
 * `stream.report`: it resolves once the stream ended (rejecting with its error, or the reason it
 * was cancelled). */
export function exportSessions(options?: ExportSessionsOptions): ReadableStream<Uint8Array> & { readonly report: Promise<ExportReport> };

export interface ImportSessionsOptions {
  dbName?: string | null;
  /** The owner the imported sessions get (`null`: no user); absent, each keeps its own. */
  userId?: string | null;
  /** A session id already stored for the same owner: keep it and skip the import (default),
   * replace it, or import under a new id (`<id>-2`, …). A session of another owner is never
   * touched: the import takes a new id. */
  onConflict?: 'skip' | 'replace' | 'rename';
  /** Called after each session, written or not. */
  onProgress?: (progress: { sessions: number; of: number | null; lines: number }) => void;
}

/** Writes the sessions of a backup (a string, a `Blob`, or a `ReadableStream` of bytes or
 * strings) into a database. Each session is checked whole and written in one transaction: a bad
 * line costs only its session (in `failed`), and the others are written; so does, with
 * `onConflict: 'replace'`, a session a run answers in (`SESSION_BUSY`, left as it is). Rejects with
 * `IMPORT_INVALID` when the backup as a whole is unreadable (no header, a header whose version
 * or count of sessions is no whole number, a newer format, a source
 * of another type, a stream that fails: with the `report` of what was imported before); with
 * `INVALID_OPTIONS` / `INVALID_USER_ID` for bad options, before anything is read; and with a
 * storage error (`STORAGE_FULL`...), `report` attached, when a write fails. */
export function importSessions(
  source: string | Blob | ReadableStream<ArrayBufferView | ArrayBuffer | string>,
  options?: ImportSessionsOptions,
): Promise<ImportReport>;

/** What `EncryptedSession` takes. */
export interface EncryptedSessionOptions {
  /** The master key: an HKDF `CryptoKey` (from `deriveKeyFromPassphrase`, `loadDeviceKey`, or
   * `crypto.subtle.importKey('raw', bytes, 'HKDF', false, ['deriveKey'])`), 32 raw bytes, or
   * their base64 as an encoder writes it, padded or not (a passphrase is `INVALID_KEY`: give it
   * to `deriveKeyFromPassphrase`). Each session's key is derived from it (HKDF-SHA256, the
   * session id as info). */
  key: CryptoKey | Uint8Array | ArrayBuffer | string;
  /** Seconds an item lives: older items are left out of reads; `purgeExpired()` deletes them. */
  ttl?: number;
  /** The clock, milliseconds since the epoch (default `Date.now`), for tests; one that returns
   * anything but a finite number makes the calls that read it reject with `INVALID_OPTIONS`. */
  now?: () => number;
  /** Called after a read that skipped items that do not decrypt (wrong key, tampered, another
   * session's, stored in clear), with how many and what was read: the history, or the archive
   * (`getArchivedItems`; after a key change it stays under the old key). A throw, or a promise
   * it returns that rejects, is reported (`reportError`), not thrown. */
  onUndecryptable?: (count: number, read: { source: 'history' | 'archive' }) => void;
}

/** The session protocol every wrapped session speaks. */
interface WrappableSessionBase {
  getItems(limit?: number): Promise<unknown[]>;
  addItems(items: object[]): Promise<void>;
  popItem(): Promise<unknown | undefined>;
  clearSession(): Promise<void>;
}

/** A wrapped session that says its id through `getSessionId()` (ours, the SDK's `MemorySession`,
 * whose `sessionId` is private). */
export interface WrappableSessionWithGetId extends WrappableSessionBase {
  getSessionId(): Promise<string>;
}

/** A wrapped session that says its id through a `sessionId` property. */
export interface WrappableSessionWithId extends WrappableSessionBase {
  readonly sessionId: string;
}

/** The session protocol the wrapped session must speak (ours, the SDK's, or your own), with the
 * session id the key is derived for: `getSessionId()`, else a `sessionId` property. (A class of
 * yours implements one of the two.) */
export type WrappableSession = WrappableSessionWithGetId | WrappableSessionWithId;

/** A Session that stores every item of `inner` encrypted with AES-256-GCM (see the README's
 * stored format); itself a Session, for our runner and the SDK's `run()`. */
export class EncryptedSession {
  constructor(inner: WrappableSession, options: EncryptedSessionOptions);
  /** The wrapped session's, where it has them. */
  readonly sessionId: string | undefined;
  readonly dbName: string | undefined;
  readonly userId: string | null | undefined;
  /** The wrapped session's settings, where it has them: the window `getItems()` takes by
   * default, after decrypting. */
  readonly settings: Readonly<SessionSettings> | undefined;
  /** How many items the last read skipped because they did not decrypt. */
  lastSkipped: number;
  getSessionId(): Promise<string>;
  getItems<T extends object = Item>(limit?: number | null): Promise<T[]>;
  /** Encrypts and appends `items`. Rejects with `INVALID_KEY`, nothing written, when the key
   * opens none of the session's newest encrypted items (a wrong key or passphrase). */
  addItems(items: readonly object[]): Promise<void>;
  /** Removes and returns the newest item reads show, with the expired items after it (one write
   * over this package's sessions); `undefined`, nothing removed, when none is shown.
   * `INVALID_KEY`, nothing removed, when the newest item does not decrypt. */
  popItem<T extends object = Item>(): Promise<T | undefined>;
  clearSession(): Promise<void>;
  /** Replaces the whole history by `items`, encrypted (the wrapped session's `replaceHistory`,
   * one transaction for ours): also how a plaintext session is encrypted in place. With
   * `expectedItems`, only if the history still shows exactly those items (`SUFFIX_MISMATCH`
   * otherwise): as this object reads it, or with the items it cannot open (in clear, under
   * another key) as stored. Items already in the history keep when they were added. Where
   * `expectedItems` match only as this object reads them, the items left out are archived as
   * stored (`archive` left out), and `archive: false` is refused (`INVALID_OPTIONS`, nothing
   * changed): they would be deleted unseen. `undefined` over a session without
   * `replaceHistory` (the SDK's). */
  replaceHistory?: (items: readonly object[], options?: { archive?: boolean; expectedItems?: readonly object[] }) => Promise<void>;
  /** The SDK runner's replacement after a compaction item: `replaceHistory(items, { archive:
   * true })`, told as a `compaction` change, and refused (`INVALID_KEY`, nothing written) under a
   * key that opens none of the history. `undefined` where `replaceHistory` is. */
  replaceHistoryWithCompaction?: (items: readonly object[]) => Promise<void>;
  /** The SDK's history transaction, its items encrypted, applied by the wrapped session in one
   * transaction: `expectedSuffix` compared with the decrypted newest items, a retried
   * `operationId` a no-op with the same transaction and `TRANSACTION_CONFLICT` with another.
   * Only over this package's sessions (`IndexedDbSession`, `MemorySession`, `SyncedSession`);
   * `undefined` over any other, as on a session without it. */
  applyHistoryTransaction?: (args: SessionHistoryTransactionArgs) => Promise<void>;
  /** The wrapped session's change events (ours: from any tab), where it has them (`undefined`
   * where it does not): what changed, never an item; read the items again through this object.
   * Bound, as theirs is; `close()` stops the listeners, and a closed object throws `CLOSED`. */
  subscribe?: IndexedDbSession['subscribe'];
  /** The SDK's history rewrite (`replace_function_call`), the replacement encrypted, as one
   * `replaceHistory` of the wrapped session conditioned on what it read (`SUFFIX_MISMATCH` after
   * a write in between). Only over `IndexedDbSession`, `MemorySession` and `SyncedSession`;
   * `undefined` over any other. */
  applyHistoryMutations?: (args: SessionHistoryRewriteArgs) => Promise<void>;
  /** The wrapped session's `storeRunUsage`, in this object's call order (usage is numbers: stored
   * as given), where it has one; `undefined` where it does not. Our runner stores through it the
   * usage of a run that ends with nothing to save (a failed model call, an answer its
   * guardrail or `outputType` refused). */
  storeRunUsage?: IndexedDbSession['storeRunUsage'];
  /** The items compaction (or `replaceHistory`) archived, decrypted, oldest first; `[]` where
   * the wrapped session keeps no archive. */
  getArchivedItems<T extends object = Item>(options?: ArchiveWindow): Promise<T[]>;
  /** Deletes the expired items; resolves to how many (0 without a `ttl`). */
  purgeExpired(): Promise<number>;
  /** Gives the history a new key: every item, read with this object's key, sealed again under
   * `key` with when it was added (one stored in clear as added now, but one JSON cannot write,
   * such as bytes, which stays as it is), in one write conditioned on the history read (`SUFFIX_MISMATCH`
   * after another tab's write); this object then uses `key`. `INVALID_KEY`, nothing changed,
   * when an encrypted item does not open with this object's key (a mistyped old passphrase);
   * `SESSION_BUSY`, nothing changed, while a run holds the session (its Web Lock, in any tab).
   * The archive stays under the old key. */
  changeKey(key: EncryptedSessionOptions['key']): Promise<void>;
  /** Resolves when every earlier call is done, then forgets the key and closes the wrapped
   * session; any later call rejects with `CLOSED`. */
  close(): Promise<void>;
}

/** An HKDF base key from a passphrase: PBKDF2-SHA256 over it and `salt` (at least 16 bytes; not
 * secret, keep it with the data), `iterations` (default 600,000; 100,000 to 4,294,967,295). The passphrase is taken as
 * given: normalise it (`normalize('NFC')`) where users type it on several devices. Any other
 * option (a misspelt `iteration`, which would give another key) is `INVALID_OPTIONS`. */
export function deriveKeyFromPassphrase(
  passphrase: string,
  options: { salt: ArrayBufferView | ArrayBuffer | string; iterations?: number },
): Promise<CryptoKey>;

/** Which device key: one per database (default `'agent-sessions'`, also for `null`) and user (`null`, the
 * default: the sessions without one). Options that are not an object (a user id given alone),
 * and any other option (a misspelt `userID`), are `INVALID_OPTIONS`, never taken for the key of
 * the sessions without a user; where a key is made or stored, a `userId` that is no non-empty
 * string or `null` is `INVALID_USER_ID`, and an empty `dbName` `INVALID_OPTIONS`. */
export interface DeviceKeyOptions {
  dbName?: string | null;
  userId?: string | null;
}

/** This device's key for the database's user, made and stored (non-extractable) on first use;
 * callers asking at the same time, in any tab, get the same key. `INVALID_KEY` where the record
 * of it holds no key (`forgetDeviceKey()` removes it). */
export function deviceKey(options?: DeviceKeyOptions): Promise<CryptoKey>;
/** Makes and stores a new non-extractable key for this database's user on this device,
 * replacing one there was (what it encrypted no longer decrypts). */
export function createDeviceKey(options?: DeviceKeyOptions): Promise<CryptoKey>;
/** Keeps a non-extractable HKDF key (a passphrase's, from `deriveKeyFromPassphrase`) as this
 * device's key for the database's user; `INVALID_KEY` for any other key. */
export function storeDeviceKey(key: CryptoKey, options?: DeviceKeyOptions): Promise<void>;
/** This device's key for the database's user, or `null`. */
export function loadDeviceKey(options?: DeviceKeyOptions): Promise<CryptoKey | null>;
/** Forgets it: what it encrypted can no longer be read on this device by sessions made after
 * (an `EncryptedSession` already holding the key keeps it until it is closed or the page
 * reloads). */
export function forgetDeviceKey(options?: DeviceKeyOptions): Promise<void>;

/** Deletes whole sessions by `updatedAt`, oldest first: older than `maxAgeDays`, or past the
 * newest `maxSessionsPerUser` of each user; a session written after it was listed is kept
 * (`update()` and `switchBranch()` leave `updatedAt` as it is: a rename is no write to it).
 * Only `userId`'s sessions when given (`null`: only those without a user). Resolves to what it
 * deleted; a failure part way rejects with an error whose `deleted` lists the sessions deleted
 * before it. */
export function applyRetention(options?: {
  dbName?: string | null;
  userId?: string | null;
  maxAgeDays?: number;
  maxSessionsPerUser?: number;
  /** The clock, milliseconds since the epoch (default now). */
  now?: number | Date;
}): Promise<{ sessionId: string; userId: string | null; updatedAt: number }[]>;

/** What `SyncedSession` takes. */
export interface SyncedSessionOptions {
  /** Also sync every `intervalMs` (pulls what other devices wrote); default: on open, after
   * each write, on the `online` event, and on `sync()`. */
  intervalMs?: number;
  /** The first retry after a failed round (doubling up to `maxRetryDelayMs`); default 1,000. */
  retryDelayMs?: number;
  /** Default 60,000. */
  maxRetryDelayMs?: number;
  /** Sync when made; default `true`. */
  syncOnOpen?: boolean;
}

/** What `sync()` rejects with when a run (or a write) held the session, or the session or the
 * remote changed while the round read them. Not a failure: `syncStatus.lastError` stays as it
 * was, and the next round comes soon. */
export interface SyncError extends Error {
  name: 'SyncError';
  code: 'SESSION_BUSY';
}

/** Where a `SyncedSession` stands. */
export interface SyncStatus {
  /** Changes made here that the remote does not have yet (the outbox): items written, and
   * synced items removed (a pop, a clear) that are not deleted there yet. */
  pending: number;
  /** Items kept on this device only: the remote did not hold them after they were pushed, or
   * refused them (HTTP 400, 413 or 422 while taking other items, or `INVALID_ITEM`: no form
   * for them); not sent again. */
  localOnly: number;
  /** When a round last finished with both histories the same (ms since the epoch). */
  lastSyncedAt: number | null;
  /** What the last round failed with (`status`: the HTTP status of a remote error), or `null`. */
  /** `serverCode`: the remote's own code for it, where it gave one (`conversation_locked`). */
  lastError: { name: string; message: string; status?: number; code?: string; serverCode?: string } | null;
  /** `navigator.onLine`. */
  online: boolean;
  /** A round is running. */
  syncing: boolean;
}

/** A session with the protocol a `SyncedSession` syncs with (any Session; `deleteItem(id)` where
 * the remote can delete one item by the id its `getItems()` items carry). */
export interface RemoteSession {
  getItems(limit?: number): Promise<unknown[]>;
  addItems(items: object[]): Promise<void>;
  popItem(): Promise<unknown | undefined>;
  clearSession(): Promise<void>;
  deleteItem?(itemId: string): Promise<void>;
}

/**
 * A Session read from `local` (fast, offline) whose writes also reach `remote` (typically an
 * `OpenAIConversationsSession`), with what other devices wrote there pulled back. See the
 * README's "Beyond one device" for the conflict rule.
 */
export class SyncedSession extends EventTarget {
  constructor(local: IndexedDbSession, remote: RemoteSession, options?: SyncedSessionOptions);
  readonly dbName: string;
  readonly sessionId: string;
  readonly userId: string | null;
  /** The branch the local session is on. */
  readonly currentBranch: string;
  readonly syncStatus: SyncStatus;
  /** The local session's settings (the window its reads take by default). */
  readonly settings: Readonly<SessionSettings>;
  getSessionId(): Promise<string>;
  getItems<T extends object = Item>(limit?: number | null): Promise<T[]>;
  addItems(items: readonly object[]): Promise<void>;
  popItem<T extends object = Item>(): Promise<T | undefined>;
  clearSession(): Promise<void>;
  applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void>;
  /** The local session's `replaceHistory` (what a compaction does), in call order with the
   * other writes; the next round takes the change to the remote. */
  replaceHistory(items: readonly object[], options?: { archive?: boolean; expectedItems?: readonly object[] }): Promise<void>;
  /** The local session's `replaceHistoryWithCompaction` (the SDK runner's replacement after a
   * compaction item), synced as `replaceHistory` is. */
  replaceHistoryWithCompaction(items: readonly object[]): Promise<void>;
  /** The local session's, passed through (turns, metadata and usage are not synced). */
  getRecentTurns<T extends object = Item>(turns: number): Promise<T[]>;
  getTurns: IndexedDbSession['getTurns'];
  getInfo: IndexedDbSession['getInfo'];
  update: IndexedDbSession['update'];
  storeRunUsage: IndexedDbSession['storeRunUsage'];
  /** What a compaction (`replaceHistory`) archived, on this device. */
  getArchivedItems: IndexedDbSession['getArchivedItems'];
  /** What the runs on this device cost, by turn and by tool (usage is not synced). */
  getSessionUsage: IndexedDbSession['getSessionUsage'];
  getTurnUsage: IndexedDbSession['getTurnUsage'];
  getToolUsage: IndexedDbSession['getToolUsage'];
  /** Every change of the local session, a sync round's rewrites included, until `close()`
   * (a closed object throws `CLOSED`). */
  subscribe: IndexedDbSession['subscribe'];
  /** A round now: resolves once both histories are the same, rejects with what failed (a
   * `SyncError` when a run or a write held the session: not a failure, tried again soon). */
  sync(): Promise<SyncStatus>;
  /** Stops syncing (a round in progress stops before its next remote write, rejecting with
   * `CLOSED`) and the listeners given to its `subscribe`; the two sessions stay usable. */
  close(): void;
  addEventListener(type: 'syncstatus', listener: (event: CustomEvent<SyncStatus>) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener(type: 'syncstatus', listener: (event: CustomEvent<SyncStatus>) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
}
