// idb-keyval 6: one key per session history, one index key per user (see kv-session.js).
// `update` reads and writes a key in one transaction.
import { createStore, get, set, update } from 'idb-keyval';
import { kvSession } from './kv-session.js';
import { deleteDatabase } from './raw.js';

export function create({ dbName, userId = null }) {
  const store = createStore(dbName, 'keyval');
  const kv = {
    read: (key) => get(key, store),
    write: (key, value) => set(key, value, store),
    change: (key, fn) => update(key, fn, store),
    // idb-keyval has no close(); its store function hands out the transaction, whose
    // connection can be closed so that the database can be deleted.
    close: () => store('readonly', (s) => s.transaction.db.close()),
    async destroy() {
      await kv.close();
      await deleteDatabase(dbName);
    },
  };
  return kvSession(kv, { userId });
}
