import type { SessionError } from './agent_sessions.js';

export {
  IndexedDbSession,
  MemorySession,
  listSessions,
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
  userId?: string | null;
  /** The event behind it (`add`, `pop`, `update`…). */
  change?: 'add' | 'pop' | 'clear' | 'replace' | 'update' | 'delete' | 'branch';
}

/** Reports sessions of a database (one user's with `userId`; `null`: those without one) being
 * created, updated and deleted, from every tab and worker of the origin. Returns the function
 * that stops it; its `ready` settles once the sessions that existed at the start were read
 * (until then a change is held back, so none is lost). */
export function watchSessions(
  options: { dbName?: string; userId?: string | null } | undefined,
  listener: (change: SessionListChange) => void,
): (() => void) & { ready: Promise<void> };

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
 * with `userId`). */
export function storageEstimate(options?: { dbName?: string; userId?: string }): Promise<StorageEstimate>;

/** Which sessions `exportSessions` writes: a database's (one user's with `userId`), only
 * `sessionIds` when given. */
export interface ExportSessionsOptions {
  dbName?: string;
  userId?: string;
  sessionIds?: string[];
}

/** The sessions as a stream of UTF-8 NDJSON (the backup format in the README), read a page at a
 * time as the stream is pulled. Save it with `new Response(stream).blob()`. */
export function exportSessions(options?: ExportSessionsOptions): ReadableStream<Uint8Array>;

export interface ImportSessionsOptions {
  dbName?: string;
  /** The owner the imported sessions get (`null`: no user); absent, each keeps its own. */
  userId?: string | null;
  /** A session id already stored for the same owner: keep it and skip the import (default),
   * replace it, or import under a new id (`<id>-2`, …). A session of another owner is never
   * touched: the import takes a new id. */
  onConflict?: 'skip' | 'replace' | 'rename';
  /** Called after each session, written or not. */
  onProgress?: (progress: { sessions: number; of: number | null; lines: number }) => void;
}

/** What `importSessions` did, session by session. */
export interface ImportReport {
  imported: string[];
  replaced: string[];
  renamed: { from: string; sessionId: string }[];
  skipped: string[];
  /** One `IMPORT_INVALID` `SessionError` per session not written, with the `line` at fault and
   * the `sessionId` where the line that names it could be read. */
  failed: (SessionError & { line?: number; sessionId?: string })[];
  /** The lines read. */
  lines: number;
}

/** Writes the sessions of a backup (a string, a `Blob`, or a `ReadableStream` of bytes or
 * strings) into a database. Each session is checked whole and written in one transaction: a bad
 * line costs only its session, and the others are written. Rejects with `IMPORT_INVALID` only
 * when the backup as a whole is unreadable (no header, or a newer format). */
export function importSessions(
  source: string | Blob | ReadableStream<Uint8Array | string>,
  options?: ImportSessionsOptions,
): Promise<ImportReport>;
