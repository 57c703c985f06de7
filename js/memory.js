// The memory module: MemorySession's store (its session class). A MemorySession's items live in
// this module's memory. The main entry imports this file at a MemorySession's first call
// (js/load_extras.js), so a page that keeps its sessions in IndexedDB never downloads it.
import init from './agent_sessions_memory.js';
import { wasmFile } from './wasm_file.js';

/** Instantiates the module (once; a failed attempt, such as a download cut off, can be made
 * again: the browser keeps the failure of a module's top-level code, so it is not done there). */
export const instantiate = () => init({ module_or_path: wasmFile(new URL('./agent_sessions_memory_bg.wasm', import.meta.url)) });

export { Session } from './agent_sessions_memory.js';
