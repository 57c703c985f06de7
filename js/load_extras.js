// Loads the modules the main entry imports when first needed, each once: the second sessions
// module (js/extras.js) and the memory module (js/memory.js).
import { sessionError } from './errors.js';

/** A function resolving to the exports of the module `load` imports, once its WebAssembly is
 * instantiated. A failed load (offline before it was ever downloaded: its JS or its wasm)
 * rejects with `MODULE_UNAVAILABLE`, saying which module (`what`), and the next call tries
 * again. */
function loader(load, what) {
  let loading;
  return () => {
    loading ??= load()
      .then(async (module) => {
        await module.instantiate();
        return module;
      })
      .catch((cause) => {
        loading = undefined;
        throw Object.assign(sessionError('MODULE_UNAVAILABLE', `${what} could not be loaded: ${cause?.message ?? cause}`), { cause });
      });
    return loading;
  };
}

export const extras = loader(
  () => import('./extras.js'),
  'the second sessions module (search, backups, repair, storage sizes, making and deleting branches, history rewrites, the archive: extras.js and its wasm)',
);

export const memory = loader(() => import('./memory.js'), 'the memory module (MemorySession: memory.js and its wasm)');
