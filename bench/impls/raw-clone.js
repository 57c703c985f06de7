// Diagnostic, not in the default set: raw IndexedDB plus the one step agent-sessions adds on
// writes, a structuredClone of every item when addItems is called (the library copies items up
// front so that later changes to the caller's objects never reach storage). Shows how much of
// the write cost is that copy.
import { create as createRaw } from './raw.js';

export function create(options) {
  const raw = createRaw(options);
  return { ...raw, addItems: (sessionId, items) => raw.addItems(sessionId, items.map((i) => structuredClone(i))) };
}
