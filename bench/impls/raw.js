// Raw IndexedDB written by hand: the same schema and the same transactions as agent-sessions
// (src/backend/indexeddb/), with nothing else. Its session record holds what the library's does
// (the counters, the size of the items, the default title), kept up to date by the same writes. Every ratio in the benchmark is against this.
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
const OPERATIONS = 'agent_operations';
/** How many applied history transactions a session's log keeps (the newest). */
const OPERATION_LOG = 1000;

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

/** Tells the browser that no request follows, so that it commits as soon as the last one is done
 * rather than after that request's events reached the page (a round trip sooner; the library
 * does the same), and waits for the commit: `done` is `committed(tx)`. */
function commit(tx, done) {
  tx.commit();
  return done;
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
    const operations = db.createObjectStore(OPERATIONS, { keyPath: ['sessionId', 'opSeq'] });
    operations.createIndex('by_operation', ['sessionId', 'operationId'], { unique: true });
  };
  return request(req);
}

/** A user message (a bare `{ role }` or a `message` item) opens a new turn. */
const startsTurn = (item) =>
  item.role === 'user' && (item.type === undefined || item.type === 'message');

/** About how many bytes an item takes, as the library counts it: the length of its JSON. */
const size = (item) => JSON.stringify(item).length;
const sizeOf = (items) => items.reduce((sum, item) => sum + size(item), 0);

/** A session's default title, as the library gives one: its first user message's text, white
 * space collapsed, cut at a word to at most 80 characters. */
function defaultTitle(items) {
  const first = items.find((item) => startsTurn(item));
  if (!first) return null;
  const text =
    typeof first.content === 'string'
      ? first.content
      : (first.content ?? []).filter((p) => typeof p?.text === 'string').map((p) => p.text).join(' ');
  const line = text.split(/\s+/).filter(Boolean).join(' ');
  if (line.length <= 80) return line || null;
  const room = line.slice(0, 79);
  const space = room.lastIndexOf(' ');
  return `${(space > 0 ? room.slice(0, space) : room).trimEnd()}…`;
}

/** Whether two JSON values are equal (object members in any order). */
function sameJson(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
}

/** JSON with object members sorted by key: one text for one value, whatever its key order. */
function canonicalJson(value) {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

/** A 128-bit digest of `text` (four 32-bit FNV-1a lanes, each seeded differently), as hex. */
function digest(text) {
  const lanes = [0x811c9dc5, 0x01000193, 0x9e3779b9, 0x85ebca6b];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    for (let l = 0; l < 4; l++) lanes[l] = Math.imul(lanes[l] ^ (c + l), 0x01000193) >>> 0;
  }
  return lanes.map((x) => x.toString(16).padStart(8, '0')).join('');
}

/** The message rows' session key of a branch: the session id for `main`, else `[id, branch]`. */
const rowsKey = (sessionId, branch) => (branch === 'main' ? sessionId : [sessionId, branch]);

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

  async function begin(mode, stores = [SESSIONS, MESSAGES]) {
    const tx = (await db()).transaction(stores, mode);
    return { tx, sessions: tx.objectStore(SESSIONS), messages: tx.objectStore(MESSAGES) };
  }

  /** A message row as the library stores it, with the search index's terms where it keeps them. */
  function messageRow(sessionKey, seq, turn, createdAt, item) {
    const row = { sessionId: sessionKey, seq, turn, createdAt, item };
    if (indexes) row.terms = itemTerms(item, userId);
    return row;
  }

  /** The record of branch `branch` of `record` (`main`: the record's own counters). */
  function branchOf(tx, record, branch) {
    if (branch === 'main') return { id: 'main', base: null, first: record.firstSeq, next: record.nextSeq, lastTurn: record.lastTurn };
    const found = (record.branches ?? []).find((b) => b.id === branch);
    if (!found) {
      tx.abort();
      throw new Error(`session ${record.id} has no branch ${branch}`);
    }
    return found;
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
        nextOpSeq: 0,
        archivedCount: 0,
        rewrites: 0,
        bytes: 0,
      };
      checkOwner(tx, record);
      for (const item of items) {
        if (startsTurn(item)) record.lastTurn += 1;
        messages.put(messageRow(sessionId, record.nextSeq++, record.lastTurn, now, item));
      }
      record.bytes += sizeOf(items);
      record.title ??= defaultTitle(items);
      record.itemCount += items.length;
      record.updatedAt = now;
      sessions.put(record);
      await commit(tx, done);
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
      record.bytes -= size(row.item);
      record.itemCount -= 1;
      record.nextSeq -= 1;
      record.lastTurn = record.itemCount === 0 ? 0 : (before?.turn ?? record.lastTurn);
      record.updatedAt = Date.now();
      sessions.put(record);
      await commit(tx, done);
      return row.item;
    },

    // The items and the operation log go, as the library clears a session.
    async clearSession(sessionId) {
      const { tx, sessions, messages } = await begin('readwrite', [SESSIONS, MESSAGES, OPERATIONS]);
      const done = committed(tx);
      const record = await request(sessions.get(sessionId));
      if (!record) return;
      checkOwner(tx, record);
      const all = IDBKeyRange.bound([sessionId, -Infinity], [sessionId, Infinity]);
      messages.delete(all);
      tx.objectStore(OPERATIONS).delete(all);
      Object.assign(record, { firstSeq: record.nextSeq, itemCount: 0, lastTurn: 0, bytes: 0, updatedAt: Date.now() });
      sessions.put(record);
      await commit(tx, done);
    },

    // A `replace_suffix` history transaction under a new operation id, as the library applies one:
    // the operation log asked whether the id was applied, the stored suffix compared, the rows
    // overwritten in place (the extra ones deleted), the log entry written, in one transaction.
    async replaceSuffix(sessionId, expectedSuffix, replacement) {
      const operationId = crypto.randomUUID();
      const opDigest = digest(canonicalJson({ type: 'replace_suffix', expectedSuffix, replacement }));
      const { tx, sessions, messages } = await begin('readwrite', [SESSIONS, MESSAGES, OPERATIONS]);
      const operations = tx.objectStore(OPERATIONS);
      const done = committed(tx);
      const [record, applied] = await Promise.all([
        request(sessions.get(sessionId)),
        request(operations.index('by_operation').get([sessionId, operationId])),
      ]);
      if (applied) {
        if (applied.digest !== opDigest) {
          tx.abort();
          throw new Error(`operation ${operationId} was applied with other contents`);
        }
        return;
      }
      if (!record) {
        tx.abort();
        throw new Error(`session ${sessionId} does not exist`);
      }
      checkOwner(tx, record);
      const k = expectedSuffix.length;
      const start = record.nextSeq - k;
      const rows =
        k === 0 || k > record.itemCount
          ? []
          : await request(messages.getAll(IDBKeyRange.bound([sessionId, start], [sessionId, record.nextSeq - 1])));
      if (rows.length !== k || rows.some((row, i) => !sameJson(row.item, expectedSuffix[i]))) {
        tx.abort();
        throw new Error(`session ${sessionId} does not end with the expected items`);
      }
      // The turn of the item before the suffix, from the suffix's first row.
      let turn = k === 0 ? record.lastTurn : rows[0].turn - (startsTurn(rows[0].item) ? 1 : 0);
      const now = Date.now();
      replacement.forEach((item, i) => {
        if (startsTurn(item)) turn += 1;
        messages.put(messageRow(sessionId, start + i, turn, now, item));
      });
      const end = start + replacement.length;
      if (end < record.nextSeq) messages.delete(IDBKeyRange.bound([sessionId, end], [sessionId, record.nextSeq - 1]));
      const opSeq = record.nextOpSeq ?? 0;
      record.itemCount += replacement.length - k;
      record.nextSeq = end;
      record.lastTurn = record.itemCount === 0 ? 0 : turn;
      record.nextOpSeq = opSeq + 1;
      record.rewrites = (record.rewrites ?? 0) + 1;
      record.bytes += sizeOf(replacement) - sizeOf(rows.map((row) => row.item));
      record.updatedAt = now;
      sessions.put(record);
      operations.put({ sessionId, opSeq, operationId, digest: opDigest, appliedAt: now });
      if (opSeq >= OPERATION_LOG) operations.delete([sessionId, opSeq - OPERATION_LOG]);
      await commit(tx, done);
    },

    // A branch of the main branch from its turn `turn`, as the library stores one: an entry in
    // the session record naming where the branch's view leaves the main branch (the first row of
    // that turn, found through the turn index), nothing copied.
    async createBranchFromTurn(sessionId, turn, name) {
      const { tx, sessions, messages } = await begin('readwrite');
      const done = committed(tx);
      const record = await request(sessions.get(sessionId));
      if (!record) {
        tx.abort();
        throw new Error(`session ${sessionId} does not exist`);
      }
      checkOwner(tx, record);
      const key = await request(messages.index('by_turn').getKey(IDBKeyRange.only([sessionId, turn])));
      if (key === undefined || (record.branches ?? []).some((b) => b.id === name)) {
        tx.abort();
        throw new Error(`session ${sessionId} has no turn ${turn}, or a branch ${name} already`);
      }
      const now = Date.now();
      const first = key[1];
      const branch = { id: name, parent: 'main', fromTurn: turn, createdAt: now, base: 'main', first, next: first, lastTurn: turn - 1, forkTurn: turn - 1 };
      record.branches = [...(record.branches ?? []), branch];
      record.currentBranch = name;
      record.updatedAt = now;
      sessions.put(record);
      await commit(tx, done);
      return name;
    },

    // The newest `n` items of a branch: its own rows, then those of each branch below it up to
    // where the one above leaves it, every read sent at once.
    async getBranchItems(sessionId, branchId, n) {
      const { tx, sessions, messages } = await begin('readonly');
      const record = await request(sessions.get(sessionId));
      if (!record) return [];
      checkOwner(tx, record);
      const reads = [];
      let wanted = n ?? Infinity;
      let branch = branchOf(tx, record, branchId);
      let below = branch.next;
      for (;;) {
        const to = Math.min(below, branch.next);
        const from = Math.max(branch.first, to - wanted);
        if (from < to) {
          const key = rowsKey(sessionId, branch.id);
          reads.push(request(messages.getAll(IDBKeyRange.bound([key, from], [key, to - 1]))));
          wanted -= to - from;
        }
        if (wanted <= 0 || branch.base === null) break;
        below = branch.first;
        branch = branchOf(tx, record, branch.base);
      }
      const parts = await Promise.all(reads);
      return parts.reverse().flat().map((row) => row.item);
    },

    async addBranchItems(sessionId, branchId, items) {
      if (items.length === 0) return;
      const { tx, sessions, messages } = await begin('readwrite');
      const done = committed(tx);
      const record = await request(sessions.get(sessionId));
      if (!record || branchId === 'main') {
        tx.abort();
        throw new Error(`session ${sessionId} has no branch ${branchId}`);
      }
      checkOwner(tx, record);
      const branch = branchOf(tx, record, branchId);
      const key = rowsKey(sessionId, branchId);
      const now = Date.now();
      for (const item of items) {
        if (startsTurn(item)) branch.lastTurn += 1;
        messages.put(messageRow(key, branch.next++, branch.lastTurn, now, item));
      }
      record.bytes += sizeOf(items);
      record.updatedAt = now;
      sessions.put(record);
      await commit(tx, done);
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
