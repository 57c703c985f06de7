// Leaves a database as an earlier version or an interrupted build would have, by hand, with raw
// IndexedDB: for the tests of what the library makes of it.

const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));

/** In one read-write transaction on `dbName`: hands each stored item row to `change(row, i)`
 * (a row for which it returns true is put back, as changed), and stores what `meta` makes of
 * the search index's build record in its place. Resolves to the number of rows, once committed. */
export async function rewriteRows(dbName, change, meta) {
  const db = await request(indexedDB.open(dbName));
  try {
    const tx = db.transaction(['agent_messages', 'agent_meta'], 'readwrite');
    const committed = new Promise((ok, fail) => {
      tx.oncomplete = ok;
      tx.onabort = () => fail(tx.error);
    });
    const rows = await request(tx.objectStore('agent_messages').getAll());
    rows.forEach((row, i) => {
      if (change(row, i)) tx.objectStore('agent_messages').put(row);
    });
    tx.objectStore('agent_meta').put(meta(await request(tx.objectStore('agent_meta').get('searchIndex'))));
    await committed;
    return rows.length;
  } finally {
    db.close();
  }
}

/** Leaves `dbName` as a version before the search index left it: no row has terms, and no build
 * was done. */
export const asBeforeTheIndex = (dbName) =>
  rewriteRows(dbName, (row) => delete row.terms, () => ({ name: 'searchIndex', done: false, after: null, indexed: 0 }));
