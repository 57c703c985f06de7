// Loads the second sessions module (js/extras.js) once, at the first call that needs it.
import { sessionError } from './errors.js';

let loading;

/** The second module's exports. A failed load (offline before it was ever downloaded) rejects
 * with `MODULE_UNAVAILABLE`, and the next call tries again. */
export function extras() {
  loading ??= import('./extras.js').catch((cause) => {
    loading = undefined;
    throw Object.assign(
      sessionError('MODULE_UNAVAILABLE', `the module of search, backups, repair and storage sizes (extras.js) could not be loaded: ${cause?.message ?? cause}`),
      { cause },
    );
  });
  return loading;
}
