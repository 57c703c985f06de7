// Loads the second sessions module (js/extras.js) once, at the first call that needs it.
import { sessionError } from './errors.js';

let loading;

/** The second module's exports, once its WebAssembly is instantiated. A failed load (offline
 * before it was ever downloaded: its JS or its wasm) rejects with `MODULE_UNAVAILABLE`, and the
 * next call tries again. */
export function extras() {
  loading ??= import('./extras.js')
    .then(async (module) => {
      await module.instantiate();
      return module;
    })
    .catch((cause) => {
      loading = undefined;
      throw Object.assign(
        sessionError('MODULE_UNAVAILABLE', `the second sessions module (search, backups, repair, storage sizes, making and deleting branches, history rewrites, the archive: extras.js and its wasm) could not be loaded: ${cause?.message ?? cause}`),
        { cause },
      );
    });
  return loading;
}
