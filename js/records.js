// Small records kept in a database of their own (one object store keyed `id`): the device keys of
// EncryptedSession, the sync state of SyncedSession. The connection is opened on the first call
// and kept; it closes as soon as another connection wants to upgrade or delete the database
// (the next call opens it again), so it never blocks one.
import { sessionError } from './errors.js';

/** `{ get(id), put(record), delete(id), batch(mode, issue) }` over store `store` of database
 * `dbName`; `batch` runs the requests `issue(store)` returns (an array) in one transaction and
 * resolves to their results once it committed. */
/** What IndexedDB failed with, as the package's errors are: `STORAGE_FULL`,
 * `STORAGE_UNAVAILABLE` (no IndexedDB, or refused: an open the browser refuses, as some privacy
 * modes do, with `InvalidAccessError`, `InvalidStateError` or `UnknownError`, as the sessions'
 * databases say), or `STORAGE_ERROR`; a failed request's own error (a `ConstraintError`) is left
 * for the caller to tell apart. */
function coded(error, dbName, opening = false) {
  if (error?.name === 'ConstraintError' || error?.name === 'SessionError') return error;
  const text = `${error?.name ?? 'Error'}: ${error?.message ?? error}`;
  if (error?.name === 'QuotaExceededError') return sessionError('STORAGE_FULL', `the browser's storage is full: database "${dbName}" could not be written (${text})`);
  const refused = opening && ['InvalidAccessError', 'InvalidStateError', 'UnknownError'].includes(error?.name);
  // (Where the browser refuses storage, as Firefox with cookies blocked, even reading `indexedDB`
  // throws a `SecurityError`: told first, so that it is not read again here.)
  if (refused || error?.name === 'SecurityError' || error instanceof ReferenceError || typeof indexedDB === 'undefined') {
    return sessionError('STORAGE_UNAVAILABLE', `IndexedDB is not available here: database "${dbName}" could not be opened (${text})`);
  }
  return Object.assign(sessionError('STORAGE_ERROR', `database "${dbName}": ${text}`), { cause: error });
}

/** How long an upgrade another connection blocks (it did not close on `versionchange`) is waited
 * for before the call fails with `DB_BLOCKED`, in milliseconds, as the sessions' databases do. */
const BLOCKED_FOR = 3000;

export function recordStore(dbName, store) {
  let connection = null;
  // An upgrade given up on as blocked, still waiting: an open now would wait behind it, and hear
  // no `blocked` of its own, so calls fail at once until it ends.
  let stuck = false;
  // At the version it is at (a new database: 1); one without the store (opened first by other
  // code, or DevTools, without a version) is upgraded to the next version with it.
  const open = (version) =>
    (connection ??= new Promise((resolve, reject) => {
      if (stuck) {
        queueMicrotask(() => (connection = null));
        reject(blockedError());
        return;
      }
      let request;
      try {
        request = indexedDB.open(dbName, version);
      } catch (error) {
        // (Once this promise is the connection: the next call tries again.)
        queueMicrotask(() => (connection = null));
        reject(coded(error, dbName, true));
        return;
      }
      let timer;
      request.onupgradeneeded = () => {
        // Not given up on once the upgrade runs.
        clearTimeout(timer);
        if (!request.result.objectStoreNames.contains(store)) request.result.createObjectStore(store, { keyPath: 'id' });
      };
      request.onblocked = () => {
        timer ??= setTimeout(() => {
          stuck = true;
          connection = null;
          reject(blockedError());
        }, BLOCKED_FOR);
      };
      // The upgrade goes on once the other connection closes; the call that asked for it has
      // failed, so its connection is closed (the next call opens again).
      const ended = (db) => {
        clearTimeout(timer);
        if (!stuck) return false;
        stuck = false;
        db?.close();
        return true;
      };
      request.onsuccess = () => {
        if (ended(request.result)) return;
        const db = request.result;
        if (!db.objectStoreNames.contains(store)) {
          db.close();
          connection = null;
          open(db.version + 1).then(resolve, reject);
          return;
        }
        db.onversionchange = () => {
          db.close();
          connection = null;
        };
        db.onclose = () => (connection = null);
        resolve(db);
      };
      request.onerror = () => {
        if (ended()) return;
        connection = null;
        reject(coded(request.error, dbName, true));
      };
    }));
  const blockedError = () =>
    sessionError('DB_BLOCKED', `opening IndexedDB database "${dbName}": its upgrade waits for another connection to it to close (a tab of this site on an older version, or code that opened it); close the other tabs of this site, then try again`);
  const attempt = async (mode, run) => {
    const db = await open();
    return new Promise((resolve, reject) => {
      const tx = db.transaction(store, mode);
      const requests = run(tx.objectStore(store));
      tx.oncomplete = () => resolve(Array.isArray(requests) ? requests.map((r) => r.result) : requests.result);
      // The failed request's error (the transaction's is set only once it has aborted).
      tx.onerror = (event) => reject(event.target?.error ?? tx.error);
      tx.onabort = () => reject(tx.error);
    });
  };
  // A connection closed since it was opened (the browser may close one) is opened again, once.
  const call = (mode, run) =>
    attempt(mode, run)
      .catch((error) => {
        if (error?.name !== 'InvalidStateError') throw error;
        connection = null;
        return attempt(mode, run);
      })
      .catch((error) => {
        throw coded(error, dbName);
      });
  return {
    get: (id) => call('readonly', (s) => s.get(id)),
    put: (record) => call('readwrite', (s) => s.put(record)),
    delete: (id) => call('readwrite', (s) => s.delete(id)),
    batch: (mode, issue) => call(mode, issue),
  };
}
