// agent-sessions through its public JS API, as an application uses it: one IndexedDbSession
// object per conversation, `listSessions` for the sessions list. The package is loaded from
// /pkg/ (the build under test), not bundled.
import { IndexedDbSession, listSessions } from '/pkg/index.js';
import { deleteDatabase } from './raw.js';

export function create({ dbName, userId = null }) {
  const sessions = new Map();
  const session = (sessionId) => {
    let s = sessions.get(sessionId);
    if (!s) {
      s = new IndexedDbSession(sessionId, userId === null ? { dbName } : { dbName, userId });
      sessions.set(sessionId, s);
    }
    return s;
  };

  return {
    // The library opens the database on the first call; nothing to do ahead of it.
    async open() {},
    getItems: (sessionId, n) => session(sessionId).getItems(n),
    getRecentTurns: (sessionId, turns) => session(sessionId).getRecentTurns(turns),
    addItems: (sessionId, items) => session(sessionId).addItems(items),
    popItem: (sessionId) => session(sessionId).popItem(),
    clearSession: (sessionId) => session(sessionId).clearSession(),
    // Each call is a new operation, so a fresh id: the same id again would change nothing.
    replaceSuffix: (sessionId, expectedSuffix, replacement) =>
      session(sessionId).applyHistoryTransaction({
        operationId: crypto.randomUUID(),
        transaction: { type: 'replace_suffix', expectedSuffix, replacement },
      }),
    listSessions: (user = userId) => listSessions({ dbName, userId: user }),
    async close() {
      await Promise.all([...sessions.values()].map((s) => s.close()));
      for (const s of sessions.values()) s.free();
      sessions.clear();
    },
    async destroy() {
      await this.close();
      // The library closes its shared connection when a deletion asks it to.
      await deleteDatabase(dbName);
    },
  };
}
