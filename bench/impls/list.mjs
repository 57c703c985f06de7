// The implementations the benchmark compares, in table order. `key` names the module in
// bench/impls/ (bundled to bench/dist/impl-<key>.js); `durable` is false for in-memory ones.
export const IMPLEMENTATIONS = [
  { key: 'ours', label: 'agent-sessions', durable: true },
  { key: 'raw', label: 'raw IndexedDB', durable: true },
  { key: 'dexie', label: 'Dexie 4', durable: true },
  { key: 'idb-keyval', label: 'idb-keyval', durable: true },
  { key: 'localforage', label: 'localForage', durable: true },
  { key: 'sdk-memory', label: 'SDK MemorySession', durable: false },
];

/** Measured only when asked for (`--impls=...,raw-clone`): raw IndexedDB plus the item copy. */
export const DIAGNOSTIC = [{ key: 'raw-clone', label: 'raw + structuredClone', durable: true }];

export const BASELINE = 'raw';
export const OURS = 'ours';

export function findImplementations(keys) {
  const all = [...IMPLEMENTATIONS, ...DIAGNOSTIC];
  return keys.map((key) => {
    const found = all.find((impl) => impl.key === key);
    if (!found) throw new Error(`unknown implementation "${key}"; known: ${all.map((i) => i.key).join(', ')}`);
    return found;
  });
}
