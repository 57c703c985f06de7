// The sessions module's download, started by the first statement the main entry evaluates: this
// module is imported before everything else, so the download does not wait for the rest of the
// entry (the wasm-bindgen glue's import table, the package's classes) to be evaluated first.
import { wasmFile } from './wasm_file.js';

export const sessionsWasm = wasmFile(new URL('./agent_sessions_bg.wasm', import.meta.url));
// A failed download is reported by the entry's init(), which awaits this promise.
sessionsWasm.catch(() => {});
