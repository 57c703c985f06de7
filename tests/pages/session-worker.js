// A dedicated module worker that uses the package the way a page does: it imports the entry
// (top-level await instantiates the wasm inside the worker) and runs session calls sent to it.
import { IndexedDbSession, MemorySession, listSessions, deleteSession } from '/pkg/index.js';

const sessions = new Map();
const session = (id, options) => {
  const key = JSON.stringify([id, options ?? null]);
  if (!sessions.has(key)) sessions.set(key, new IndexedDbSession(id, options));
  return sessions.get(key);
};

const ops = {
  add: (id, items, options) => session(id, options).addItems(items),
  // Several addItems calls at once, not awaited one by one.
  addEach: (id, batches, options) => Promise.all(batches.map((b) => session(id, options).addItems(b))),
  get: (id, limit, options) => session(id, options).getItems(limit),
  pop: (id, options) => session(id, options).popItem(),
  clear: (id, options) => session(id, options).clearSession(),
  // Loads the second sessions module inside the worker.
  branch: async (id, turn, options) => {
    const s = session(id, options);
    const branchId = await s.createBranchFromTurn(turn);
    return { branchId, current: s.currentBranch, items: await s.getItems() };
  },
  list: (options) => listSessions(options),
  remove: (id, options) => deleteSession(id, options),
  memory: async (items) => {
    const s = new MemorySession();
    await s.addItems(items);
    return { id: s.sessionId, items: await s.getItems() };
  },
  scope: () => ({
    isWorker: typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope,
    hasWindow: typeof window !== 'undefined',
  }),
};

self.onmessage = async ({ data: { seq, op, args } }) => {
  try {
    self.postMessage({ seq, ok: true, value: await ops[op](...args) });
  } catch (e) {
    self.postMessage({ seq, ok: false, error: { name: e?.name, code: e?.code, message: e?.message } });
  }
};
self.postMessage({ ready: true });
