// The second sessions module: search, backups, repair and storage sizes. The main entry imports
// this file at the first call that needs one of them (js/load_extras.js), so a page that never
// searches or exports never downloads it. It opens its own connections to the same databases,
// as another tab would.
import init from './agent_sessions_extras.js';

await init({ module_or_path: new URL('./agent_sessions_extras_bg.wasm', import.meta.url) });

export { searchSessions, buildSearchIndex, readBackup, restoreSession, sessionSizes, repairSession } from './agent_sessions_extras.js';
