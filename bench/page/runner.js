// The benchmark page's script (bundled to bench/dist/runner.js). Loads one implementation, named
// by `?impl=`, and exposes `window.bench` for Node to drive: prepare an operation (untimed
// set-up, fresh database), run it once per repeat, release it (delete the database).
import { OPERATIONS, USER, findOperation } from './ops.js';

const key = new URLSearchParams(location.search).get('impl');
const { create } = await import(new URL(`./impl-${key}.js`, import.meta.url).href);

const prepared = new Map();

window.bench = {
  operations: OPERATIONS.map((op) => op.key),

  async prepare(opKey, sizes, dbName) {
    const instances = [];
    const instance = (userId) => {
      const made = create({ dbName, userId });
      instances.push(made);
      return made;
    };
    const impl = instance(USER);
    await impl.open();
    const h = { sizes, dbName, impl, instance };
    prepared.set(opKey, { h, instances });
    return (await findOperation(opKey).prepare?.(h)) ?? null;
  },

  run(opKey, rep) {
    return findOperation(opKey).run(prepared.get(opKey).h, rep);
  },

  async release(opKey) {
    const { instances } = prepared.get(opKey);
    prepared.delete(opKey);
    for (const instance of instances) await instance.destroy();
  },
};
window.ready = true;
