// The library, imported from the copy of the package next to the page (www/build.mjs puts it
// there), as a user's page imports it. The runner entry also re-exports the sessions.
export {
  Agent,
  Runner,
  IndexedDbSession,
  listSessions,
  searchSessions,
  deleteSession,
  watchSessions,
  requestPersistentStorage,
  storageEstimate,
  exportSessions,
  importSessions,
  EncryptedSession,
  deriveKeyFromPassphrase,
  storeDeviceKey,
  loadDeviceKey,
  forgetDeviceKey,
  applyRetention,
  sessionLockName,
} from './vendor/agent-sessions/runner.js';
