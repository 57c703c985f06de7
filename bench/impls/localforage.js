// localForage 1.10 on its IndexedDB driver: one key per session history, one index key per user
// (see kv-session.js). It has no read-modify-write call, so a change is getItem then setItem.
import localforage from 'localforage';
import { kvSession } from './kv-session.js';

export function create({ dbName, userId = null }) {
  const store = localforage.createInstance({
    name: dbName,
    storeName: 'keyval',
    driver: localforage.INDEXEDDB,
  });
  const kv = {
    read: (key) => store.getItem(key).then((value) => value ?? undefined),
    write: (key, value) => store.setItem(key, value),
    async change(key, fn) {
      const value = await kv.read(key);
      await store.setItem(key, fn(value));
    },
    close: async () => {},
    destroy: () => store.dropInstance({ name: dbName }),
  };
  return kvSession(kv, { userId });
}
