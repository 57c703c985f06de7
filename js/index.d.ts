export {
  IndexedDbSession,
  MemorySession,
  listSessions,
  deleteSession,
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
} from './agent_sessions.js';
