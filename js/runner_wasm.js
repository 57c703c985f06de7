// The runner module's download, started as soon as the runner entry's imports are evaluated:
// this module is imported before the main entry, whose evaluation instantiates the sessions
// module, so the two downloads overlap instead of following each other.
import { wasmFile } from './wasm_file.js';

export const runnerWasm = wasmFile(new URL('./agent_sessions_runner_bg.wasm', import.meta.url));
// A failed download is reported by the runner entry's init(), which awaits this promise.
runnerWasm.catch(() => {});
