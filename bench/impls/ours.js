// agent-sessions through its public JS API, as an application uses it: one IndexedDbSession
// object per conversation, `listSessions` for the sessions list. The package is loaded from
// /pkg/ (the build under test), not bundled.
import { IndexedDbSession, listSessions } from '/pkg/index.js';
import { deleteDatabase } from './raw.js';

export function create({ dbName, userId = null }) {
  // One object per session and branch, as an application holds one per open conversation.
  const sessions = new Map();
  const open = (sessionId, branch) =>
    new IndexedDbSession(sessionId, userId === null ? { dbName, branch } : { dbName, userId, branch });
  const session = (sessionId, branch = 'main') => {
    const key = JSON.stringify([sessionId, branch]);
    let s = sessions.get(key);
    if (!s) {
      s = open(sessionId, branch);
      sessions.set(key, s);
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
    // The object that creates a branch moves onto it: a new one on the main branch does it (the
    // constructor only keeps its arguments), and then serves the branch.
    async createBranchFromTurn(sessionId, turn, name) {
      const s = open(sessionId, 'main');
      try {
        const id = await s.createBranchFromTurn(turn, name);
        sessions.set(JSON.stringify([sessionId, id]), s);
        return id;
      } catch (e) {
        s.free();
        throw e;
      }
    },
    getBranchItems: (sessionId, branch, n) => session(sessionId, branch).getItems(n),
    addBranchItems: (sessionId, branch, items) => session(sessionId, branch).addItems(items),
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
