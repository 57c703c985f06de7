// Dexie 4 with the same schema as agent-sessions, in Dexie's terms: the same stores, keys and
// indexes (the turn index and the multi-entry search index over `terms`, bench/shared/terms.js),
// and one Dexie transaction per operation.
import Dexie from 'dexie';
import { sessionInfo } from './raw.js';
import { itemTerms } from '../shared/terms.js';

const startsTurn = (item) =>
  item.role === 'user' && (item.type === undefined || item.type === 'message');

export function create({ dbName, userId = null }) {
  const db = new Dexie(dbName);
  db.version(1).stores({
    agent_sessions: 'id, updatedAt, [userId+updatedAt]',
    agent_messages: '[sessionId+seq], [sessionId+turn], *terms',
  });
  const sessions = db.table('agent_sessions');
  const messages = db.table('agent_messages');

  const byKey = (sessionId, lo, hi) =>
    messages.where('[sessionId+seq]').between([sessionId, lo], [sessionId, hi], true, true);

  function checkOwner(record) {
    if (record.userId !== userId) throw new Error(`session ${record.id} belongs to another user`);
  }

  return {
    open: () => db.open(),

    getItems: (sessionId, n) =>
      db.transaction('r', sessions, messages, async () => {
        const record = await sessions.get(sessionId);
        if (!record) return [];
        checkOwner(record);
        const count = n === undefined ? record.itemCount : Math.min(n, record.itemCount);
        if (count <= 0) return [];
        const rows = await byKey(sessionId, record.nextSeq - count, record.nextSeq - 1).toArray();
        return rows.map((row) => row.item);
      }),

    getRecentTurns: (sessionId, turns) =>
      db.transaction('r', sessions, messages, async () => {
        const record = await sessions.get(sessionId);
        if (!record || record.itemCount === 0 || turns === 0) return [];
        checkOwner(record);
        const oldest = Math.max(0, record.lastTurn + 1 - turns);
        const rows = await messages.where('[sessionId+turn]').between([sessionId, oldest], [sessionId, Infinity], true, true).toArray();
        return rows.map((row) => row.item);
      }),

    addItems: (sessionId, items) =>
      items.length === 0
        ? Promise.resolve()
        : db.transaction('rw', sessions, messages, async () => {
            const now = Date.now();
            const record = (await sessions.get(sessionId)) ?? {
              id: sessionId,
              userId,
              createdAt: now,
              updatedAt: now,
              itemCount: 0,
              firstSeq: 0,
              nextSeq: 0,
              lastTurn: 0,
            };
            checkOwner(record);
            const rows = items.map((item) => {
              if (startsTurn(item)) record.lastTurn += 1;
              return { sessionId, seq: record.nextSeq++, turn: record.lastTurn, createdAt: now, item, terms: itemTerms(item, userId) };
            });
            record.itemCount += items.length;
            record.updatedAt = now;
            await messages.bulkPut(rows);
            await sessions.put(record);
          }),

    popItem: (sessionId) =>
      db.transaction('rw', sessions, messages, async () => {
        const record = await sessions.get(sessionId);
        if (!record || record.itemCount === 0) return undefined;
        checkOwner(record);
        const seq = record.nextSeq - 1;
        const [row, before] = await Promise.all([
          messages.get([sessionId, seq]),
          record.itemCount > 1 ? messages.get([sessionId, seq - 1]) : undefined,
        ]);
        record.itemCount -= 1;
        record.nextSeq -= 1;
        record.lastTurn = record.itemCount === 0 ? 0 : (before?.turn ?? record.lastTurn);
        record.updatedAt = Date.now();
        await Promise.all([messages.delete([sessionId, seq]), sessions.put(record)]);
        return row.item;
      }),

    clearSession: (sessionId) =>
      db.transaction('rw', sessions, messages, async () => {
        const record = await sessions.get(sessionId);
        if (!record) return;
        checkOwner(record);
        Object.assign(record, { firstSeq: record.nextSeq, itemCount: 0, lastTurn: 0, updatedAt: Date.now() });
        await Promise.all([byKey(sessionId, -Infinity, Infinity).delete(), sessions.put(record)]);
      }),

    async listSessions(user = userId) {
      const records = await sessions
        .where('[userId+updatedAt]')
        .between([user, -Infinity], [user, Infinity], true, true)
        .reverse()
        .toArray();
      return records.map(sessionInfo);
    },

    async close() {
      db.close();
    },

    async destroy() {
      await db.delete();
    },
  };
}
