// Diagnostic, not in the default set: raw IndexedDB without the two indexes every row of
// agent-sessions feeds (the newest turns and full-text search), as the benchmark's floor was
// before those existed. Against the floor, it shows what the indexes cost each write and read.
import { create as createRaw } from './raw.js';

export const create = (options) => createRaw({ ...options, indexes: false });
