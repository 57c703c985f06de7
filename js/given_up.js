// Opens given up on as blocked (src/backend/indexeddb/open.rs): an upgrade that another
// connection blocks fails its call after 3 s, while its open goes on waiting for the upgrade;
// an open of the same database in another tab or worker then waits behind it, and hears no
// `blocked` of its own. Until the upgrade begins, the context of the open given up on holds a
// Web Lock named after the database, which the opens of the other contexts look for, to give
// up too.

const lockOf = (dbName) => `agent-sessions.blocked:${dbName}`;

/** Gives the sessions modules (each has its own memory) the hooks they call, once per context. */
export function installGivenUp() {
  globalThis[Symbol.for('agent-sessions.givenUp')] ??= {
    /** Holds the lock of `dbName` until `told` settles. */
    hold: (dbName, told) => globalThis.navigator?.locks?.request(lockOf(dbName), () => told).catch(() => {}),
    /** Whether the lock of `dbName` is held (or asked for) in a context of the origin now. */
    async elsewhere(dbName) {
      const { held = [], pending = [] } = (await globalThis.navigator?.locks?.query()) ?? {};
      return [...held, ...pending].some((lock) => lock.name === lockOf(dbName));
    },
  };
}
