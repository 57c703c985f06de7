// Puts transactions of the package in a known order. IndexedDB runs transactions on the same
// store in the order they were made: while a transaction made here is held open, every
// transaction made after it waits, and they run in the order they were made once it is let go.

/** Opens `dbName` and holds a read-write transaction on `stores` until the returned function is
 * called (which resolves once the transaction has ended). */
export async function holdStores(dbName, stores) {
  const db = await new Promise((ok, fail) => {
    const open = indexedDB.open(dbName);
    open.onsuccess = () => ok(open.result);
    open.onerror = () => fail(open.error);
  });
  const tx = db.transaction(stores, 'readwrite');
  const ended = new Promise((ok) => {
    tx.oncomplete = tx.onabort = tx.onerror = () => ok();
  });
  let held = true;
  const spin = () => {
    if (held) tx.objectStore(stores[0]).get('none').onsuccess = spin;
  };
  spin();
  return async () => {
    held = false;
    await ended;
    db.close();
  };
}

/** Lets the package make the transactions it makes next (a macrotask, then some): what a test
 * starts before this is queued before what it starts after. */
export const settle = () => new Promise((ok) => setTimeout(ok, 200));
