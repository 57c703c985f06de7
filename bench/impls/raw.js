// Raw IndexedDB written by hand: the same schema and the same transactions as agent-sessions
// (src/backend/indexeddb/), with nothing else. Every ratio in the benchmark is against this.
// The same schema includes the two indexes every row feeds: the newest turns (`by_turn`) and
// full-text search (`by_term`, a multi-entry index over the row's `terms`, computed by
// bench/shared/terms.js). `create({ indexes: false })` leaves both out (the diagnostic
// `raw-bare`), which shows what they cost.
//
// Interface shared by every module in bench/impls/:
//   create({ dbName, userId }) -> { open(), getItems(sessionId, n?), addItems(sessionId, items),
//     popItem(sessionId), clearSession(sessionId), listSessions(userId?), close(), destroy() }
// An instance acts for one user; `destroy()` closes it and deletes its data. Implementations
// with the `historyTransactions` capability (impls/list.mjs) also have
//   replaceSuffix(sessionId, expectedSuffix, replacement): a `replace_suffix` history
//     transaction with a new operation id, rejected unless the history ends with expectedSuffix.
// and those with the `recentTurns` capability
//   getRecentTurns(sessionId, turns): the items of the newest `turns` whole turns (a turn starts
//     at a user message), oldest first.
// and those with the `branches` capability
//   createBranchFromTurn(sessionId, turn, name): creates branch `name` of the session's main
//     branch, showing everything before its turn `turn` (numbered from 1), without copying it;
//     resolves to the branch's id. getItems/addItems above keep acting on the main branch.
//   getBranchItems(sessionId, branch, n?), addBranchItems(sessionId, branch, items): getItems
//     and addItems on branch `branch`.

import { itemTerms } from '../shared/terms.js';

const SESSIONS = 'agent_sessions';
const MESSAGES = 'agent_messages';

/** Resolves with the request's result; rejects with its error. */
function request(req) {
  return new Promise((ok, fail) => {
    req.onsuccess = () => ok(req.result);
    req.onerror = () => fail(req.error);
  });
}

/** Resolves when the transaction commits; rejects when it aborts. */
function committed(tx) {
  return new Promise((ok, fail) => {
    tx.oncomplete = () => ok();
    tx.onabort = () => fail(tx.error ?? new Error('transaction aborted'));
  });
}

function openDatabase(name, indexes) {
  const req = indexedDB.open(name, 1);
  req.onupgradeneeded = () => {
    const db = req.result;
    const sessions = db.createObjectStore(SESSIONS, { keyPath: 'id' });
    sessions.createIndex('by_updated', 'updatedAt', { unique: false });
    sessions.createIndex('by_user_updated', ['userId', 'updatedAt'], { unique: false });
    const messages = db.createObjectStore(MESSAGES, { keyPath: ['sessionId', 'seq'] });
    if (indexes) {
      messages.createIndex('by_turn', ['sessionId', 'turn'], { unique: false });
      messages.createIndex('by_term', 'terms', { unique: false, multiEntry: true });
    }
  };
  return request(req);
}

/** A user message (a bare `{ role }` or a `message` item) opens a new turn. */
const startsTurn = (item) =>
  item.role === 'user' && (item.type === undefined || item.type === 'message');

export function deleteDatabase(name) {
  return new Promise((ok, fail) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = () => ok();
    req.onerror = () => fail(req.error);
    // Another connection still open: the deletion finishes when it closes; do not wait for it.
    req.onblocked = () => ok();
  });
}

export function create({ dbName, userId = null, indexes = true }) {
  let opening = null;
  const db = () => (opening ??= openDatabase(dbName, indexes));

  async function begin(mode) {
    const tx = (await db()).transaction([SESSIONS, MESSAGES], mode);
    return { tx, sessions: tx.objectStore(SESSIONS), messages: tx.objectStore(MESSAGES) };
  }

  function checkOwner(tx, record) {
    if (record.userId !== userId) {
      tx.abort();
      throw new Error(`session ${record.id} belongs to another user`);
    }
  }

  return {
    async open() {
      await db();
    },

    async getItems(sessionId, n) {
      const { tx, sessions, messages } = await begin('readonly');
      const record = await request(sessions.get(sessionId));
      if (!record) return [];
      checkOwner(tx, record);
      const count = n === undefined ? record.itemCount : Math.min(n, record.itemCount);
      if (count <= 0) return [];
      const range = IDBKeyRange.bound(
        [sessionId, record.nextSeq - count],
        [sessionId, record.nextSeq - 1],
      );
      const rows = await request(messages.getAll(range));
      return rows.map((row) => row.item);
    },

    // The newest turns through the turn index: from the first row of the oldest turn wanted
    // (`lastTurn + 1 - turns`, 0 when that takes in every turn) to the end, in one request.
    async getRecentTurns(sessionId, turns) {
      const { tx, sessions, messages } = await begin('readonly');
      const record = await request(sessions.get(sessionId));
      if (!record || record.itemCount === 0 || turns === 0) return [];
      checkOwner(tx, record);
      const oldest = Math.max(0, record.lastTurn + 1 - turns);
      const range = IDBKeyRange.bound([sessionId, oldest], [sessionId, Infinity]);
      const rows = await request(messages.index('by_turn').getAll(range));
      return rows.map((row) => row.item);
    },

    async addItems(sessionId, items) {
      if (items.length === 0) return;
      const { tx, sessions, messages } = await begin('readwrite');
      const done = committed(tx);
      const now = Date.now();
      const record = (await request(sessions.get(sessionId))) ?? {
        id: sessionId,
        userId,
        createdAt: now,
        updatedAt: now,
        itemCount: 0,
        firstSeq: 0,
        nextSeq: 0,
        lastTurn: 0,
      };
      checkOwner(tx, record);
      for (const item of items) {
        if (startsTurn(item)) record.lastTurn += 1;
        const row = { sessionId, seq: record.nextSeq++, turn: record.lastTurn, createdAt: now, item };
        if (indexes) row.terms = itemTerms(item, userId);
        messages.put(row);
      }
      record.itemCount += items.length;
      record.updatedAt = now;
      sessions.put(record);
      await done;
    },

    async popItem(sessionId) {
      const { tx, sessions, messages } = await begin('readwrite');
      const done = committed(tx);
      const record = await request(sessions.get(sessionId));
      if (!record || record.itemCount === 0) return undefined;
      checkOwner(tx, record);
      const seq = record.nextSeq - 1;
      // The item before the newest gives the session its new last turn; both reads go out at once.
      const newest = request(messages.get([sessionId, seq]));
      const previous = record.itemCount > 1 ? request(messages.get([sessionId, seq - 1])) : null;
      const row = await newest;
      const before = await previous;
      messages.delete([sessionId, seq]);
      record.itemCount -= 1;
      record.nextSeq -= 1;
      record.lastTurn = record.itemCount === 0 ? 0 : (before?.turn ?? record.lastTurn);
      record.updatedAt = Date.now();
      sessions.put(record);
      await done;
      return row.item;
    },

    async clearSession(sessionId) {
      const { tx, sessions, messages } = await begin('readwrite');
      const done = committed(tx);
      const record = await request(sessions.get(sessionId));
      if (!record) return;
      checkOwner(tx, record);
      messages.delete(IDBKeyRange.bound([sessionId, -Infinity], [sessionId, Infinity]));
      Object.assign(record, { firstSeq: record.nextSeq, itemCount: 0, lastTurn: 0, updatedAt: Date.now() });
      sessions.put(record);
      await done;
    },

    async listSessions(user = userId) {
      const tx = (await db()).transaction(SESSIONS, 'readonly');
      const index = tx.objectStore(SESSIONS).index('by_user_updated');
      const records = await request(index.getAll(IDBKeyRange.bound([user, -Infinity], [user, Infinity])));
      return records.reverse().map(sessionInfo);
    },

    async close() {
      if (opening) (await opening).close();
      opening = null;
    },

    async destroy() {
      await this.close();
      await deleteDatabase(dbName);
    },
  };
}

/** A session record of the shared schema as `listSessions` reports it. */
export function sessionInfo({ id, userId, createdAt, updatedAt, itemCount }) {
  return { sessionId: id, userId, createdAt, updatedAt, itemCount };
}
