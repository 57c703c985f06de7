// The second sessions module: search, backups, repair, storage sizes, deleting sessions, and the methods of an
// IndexedDbSession a chat calls now and then (making and deleting branches, whole-history
// rewrites, the archive). The main entry imports this file at the first call that needs one of
// them (js/load_extras.js), so a page that never does never downloads it. It opens its own
// connections to the same databases, as another tab would.
import init from './agent_sessions_extras.js';
import { wasmFile } from './wasm_file.js';

/** Instantiates the module (once; a failed attempt, such as a download cut off, can be made
 * again: the browser keeps the failure of a module's top-level code, so it is not done there). */
export const instantiate = () => init({ module_or_path: wasmFile(new URL('./agent_sessions_extras_bg.wasm', import.meta.url)) });

export { searchSessions, buildSearchIndex, readBackup, restoreSession, sessionSizes, repairSession, deleteSession, sessionCall } from './agent_sessions_extras.js';
