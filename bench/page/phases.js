// Instruments IndexedDB in the page to split each call of an implementation into phases:
//   before  from the call to its transaction being created (argument checks, copies, queueing)
//   storage the IndexedDB requests, from issue to success event (summed)
//   between the code that runs between one request's success and the next request
//   commit  from the last request's success to the transaction's complete event (writes)
//   after   from the last event to the caller's await resuming (result conversion, promises)
// Used by bench/phases.mjs to see where a library spends time that raw IndexedDB does not.

let current = null;

function wrap(proto, name, onCall) {
  const original = proto[name];
  proto[name] = function (...args) {
    const result = original.apply(this, args);
    if (current) onCall(result);
    return result;
  };
}

function trackRequest(req) {
  const entry = { issued: performance.now(), done: NaN };
  current.requests.push(entry);
  req.addEventListener('success', () => (entry.done = performance.now()));
}

wrap(IDBDatabase.prototype, 'transaction', (tx) => {
  const entry = { created: performance.now(), complete: NaN };
  current.transactions.push(entry);
  tx.addEventListener('complete', () => (entry.complete = performance.now()));
});
for (const proto of [IDBObjectStore.prototype, IDBIndex.prototype]) {
  for (const name of ['get', 'getAll', 'put', 'add', 'delete', 'count', 'openCursor', 'getAllKeys']) {
    if (proto[name]) wrap(proto, name, trackRequest);
  }
}

/** Runs `call` once with the instruments on and returns its phases in milliseconds. */
export async function phasesOf(call) {
  current = { requests: [], transactions: [] };
  const start = performance.now();
  await call();
  const end = performance.now();
  const { requests, transactions } = current;
  current = null;
  const created = transactions[0]?.created ?? end;
  const storage = requests.reduce((sum, r) => sum + (r.done - r.issued || 0), 0);
  const lastSuccess = Math.max(created, ...requests.map((r) => r.done).filter(Number.isFinite));
  const complete = Math.max(...transactions.map((t) => t.complete).filter(Number.isFinite), -Infinity);
  const lastEvent = Math.max(lastSuccess, complete);
  const span = lastSuccess - created;
  return {
    total: end - start,
    before: created - start,
    storage,
    between: Math.max(0, span - storage),
    commit: Number.isFinite(complete) && complete > lastSuccess ? complete - lastSuccess : 0,
    after: Math.max(0, end - lastEvent),
    requests: requests.length,
  };
}
