export {
  IndexedDbSession,
  MemorySession,
  listSessions,
  deleteSession,
  repairSession,
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
