// The implementations the benchmark compares, in table order. `key` names the module in
// bench/impls/ (bundled to bench/dist/impl-<key>.js); `durable` is false for in-memory ones;
// `capabilities` names what an implementation offers beyond the shared interface (see
// CAPABILITIES), which an operation may require.
export const IMPLEMENTATIONS = [
  { key: 'ours', label: 'agent-sessions', durable: true, capabilities: ['historyTransactions', 'recentTurns', 'branches'] },
  { key: 'raw', label: 'raw IndexedDB', durable: true, capabilities: ['historyTransactions', 'recentTurns', 'branches'] },
  { key: 'dexie', label: 'Dexie 4', durable: true, capabilities: ['recentTurns'] },
  { key: 'idb-keyval', label: 'idb-keyval', durable: true },
  { key: 'localforage', label: 'localForage', durable: true },
  { key: 'sdk-memory', label: 'SDK MemorySession', durable: false, capabilities: ['historyTransactions'] },
];

/** The optional capabilities and what each is; the methods they add are listed in impls/raw.js. */
export const CAPABILITIES = {
  historyTransactions: 'history transactions (applyHistoryTransaction)',
  recentTurns: 'reads by turn (getRecentTurns)',
  branches: 'conversation branches (createBranchFromTurn)',
};

/** Whether `impl` can run `op`: every operation that requires nothing, else by capability. */
export const supports = (op, impl) => !op.requires || (impl.capabilities ?? []).includes(op.requires);

/** Measured only when asked for (`--impls=...,raw-clone`): raw IndexedDB plus the item copy, and
 * raw IndexedDB without the turn and search indexes (what those cost every write). */
export const DIAGNOSTIC = [
  { key: 'raw-clone', label: 'raw + structuredClone', durable: true },
  { key: 'raw-bare', label: 'raw, no turn/term index', durable: true },
];

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
