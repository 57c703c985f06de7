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
  SessionError,
  SessionErrorCode,
  SessionMethods,
  IndexedDbSessionOptions,
  MemorySessionOptions,
  ListSessionsOptions,
  DeleteSessionOptions,
  RepairSessionOptions,
  RepairReport,
} from './agent_sessions.js';
