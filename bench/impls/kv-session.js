// Session semantics over a key-value store, the way many chat apps keep history: a session's
// whole history is one array under one key, and each user has an index key (session id ->
// { sessionId, userId, createdAt, updatedAt, itemCount }) that the sessions list reads.
// `kv` provides read(key), write(key, value) and change(key, fn): fn gets the current value
// (undefined when absent) and returns the new one, plus close() and destroy().

const historyKey = (sessionId) => `history:${sessionId}`;
const indexKey = (userId) => `sessions:${userId}`;

export function kvSession(kv, { userId = null }) {
  /** Applies `edit` to the session's index entry; `create` says whether a missing one is made. */
  const touch = (sessionId, edit, create) =>
    kv.change(indexKey(userId), (index = {}) => {
      const now = Date.now();
      let entry = index[sessionId];
      if (!entry) {
        if (!create) return index;
        entry = index[sessionId] = { sessionId, userId, createdAt: now, updatedAt: now, itemCount: 0 };
      }
      edit(entry);
      entry.updatedAt = now;
      return index;
    });

  return {
    async open() {
      await kv.read(indexKey(userId));
    },

    async getItems(sessionId, n) {
      const history = (await kv.read(historyKey(sessionId))) ?? [];
      if (n === undefined) return history;
      return n <= 0 ? [] : history.slice(-n);
    },

    async addItems(sessionId, items) {
      if (items.length === 0) return;
      await Promise.all([
        kv.change(historyKey(sessionId), (history = []) => {
          for (const item of items) history.push(item);
          return history;
        }),
        touch(sessionId, (entry) => (entry.itemCount += items.length), true),
      ]);
    },

    async popItem(sessionId) {
      let popped;
      await kv.change(historyKey(sessionId), (history = []) => {
        popped = history.pop();
        return history;
      });
      if (popped !== undefined) await touch(sessionId, (entry) => (entry.itemCount -= 1), false);
      return popped;
    },

    async clearSession(sessionId) {
      await Promise.all([
        kv.write(historyKey(sessionId), []),
        touch(sessionId, (entry) => (entry.itemCount = 0), false),
      ]);
    },

    async listSessions(user = userId) {
      const index = (await kv.read(indexKey(user))) ?? {};
      return Object.values(index).sort((a, b) => b.updatedAt - a.updatedAt);
    },

    close: () => kv.close(),
    destroy: () => kv.destroy(),
  };
}
