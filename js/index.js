// The package entry: instantiates the WebAssembly module once, then exposes the API.
// Works as a plain ES module over HTTP and in bundlers that understand
// `new URL('…', import.meta.url)` (Vite, webpack 5, Rollup, esbuild).
import init from './agent_sessions.js';

await init({ module_or_path: new URL('./agent_sessions_bg.wasm', import.meta.url) });

export {
  IndexedDbSession,
  MemorySession,
  listSessions,
  deleteSession,
  repairSession,
} from './agent_sessions.js';
