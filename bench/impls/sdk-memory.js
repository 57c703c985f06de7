// The in-memory reference: @openai/agents' MemorySession, one per conversation. Not durable.
// The SDK has no sessions list, so a small registry per database name keeps what
// listSessions reports, the way an application would beside it.
import { MemorySession } from '@openai/agents';

const registries = new Map();

export function create({ dbName, userId = null }) {
  if (!registries.has(dbName)) registries.set(dbName, new Map());
  const registry = registries.get(dbName);

  const entry = (sessionId) => {
    let e = registry.get(sessionId);
    if (!e) {
      const now = Date.now();
      e = {
        session: new MemorySession({ sessionId }),
        info: { sessionId, userId, createdAt: now, updatedAt: now, itemCount: 0 },
      };
      registry.set(sessionId, e);
    }
    return e;
  };
  const touch = (e, itemCount) => {
    e.info.itemCount = itemCount;
    e.info.updatedAt = Date.now();
  };

  return {
    async open() {},

    async getItems(sessionId, n) {
      const e = registry.get(sessionId);
      return e ? e.session.getItems(n) : [];
    },

    async addItems(sessionId, items) {
      if (items.length === 0) return;
      const e = entry(sessionId);
      await e.session.addItems(items);
      touch(e, e.info.itemCount + items.length);
    },

    async popItem(sessionId) {
      const e = registry.get(sessionId);
      const item = e ? await e.session.popItem() : undefined;
      if (item !== undefined) touch(e, e.info.itemCount - 1);
      return item;
    },

    async clearSession(sessionId) {
      const e = registry.get(sessionId);
      if (!e) return;
      await e.session.clearSession();
      touch(e, 0);
    },

    // Each call is a new operation, so a fresh id: the same id again would change nothing.
    async replaceSuffix(sessionId, expectedSuffix, replacement) {
      const e = entry(sessionId);
      await e.session.applyHistoryTransaction({
        operationId: crypto.randomUUID(),
        transaction: { type: 'replace_suffix', expectedSuffix, replacement },
      });
      touch(e, e.info.itemCount - expectedSuffix.length + replacement.length);
    },

    async listSessions(user = userId) {
      return [...registry.values()]
        .map((e) => ({ ...e.info }))
        .filter((info) => info.userId === user)
        .sort((a, b) => b.updatedAt - a.updatedAt);
    },

    async close() {},

    async destroy() {
      registries.delete(dbName);
    },
  };
}
