// Small records kept in a database of their own (one object store keyed `id`): the device keys of
// EncryptedSession, the sync state of SyncedSession. Each call opens the database, runs one
// request in one transaction, and closes it again, so no connection blocks an upgrade.

/** `{ get(id), put(record), delete(id), batch(mode, issue) }` over store `store` of database
 * `dbName`; `batch` runs the requests `issue(store)` returns (an array) in one transaction and
 * resolves to their results once it committed. */
export function recordStore(dbName, store) {
  const open = () =>
    new Promise((resolve, reject) => {
      const request = indexedDB.open(dbName, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(store, { keyPath: 'id' });
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  const call = async (mode, run) => {
    const db = await open();
    try {
      return await new Promise((resolve, reject) => {
        const tx = db.transaction(store, mode);
        const requests = run(tx.objectStore(store));
        tx.oncomplete = () => resolve(Array.isArray(requests) ? requests.map((r) => r.result) : requests.result);
        tx.onerror = () => reject(tx.error);
        tx.onabort = () => reject(tx.error);
      });
    } finally {
      db.close();
    }
  };
  return {
    get: (id) => call('readonly', (s) => s.get(id)),
    put: (record) => call('readwrite', (s) => s.put(record)),
    delete: (id) => call('readwrite', (s) => s.delete(id)),
    batch: (mode, issue) => call(mode, issue),
  };
}
