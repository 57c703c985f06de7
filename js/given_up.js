// Opens given up on as blocked (src/backend/indexeddb/open.rs): an upgrade that another
// connection blocks fails its call after 3 s, while its open goes on waiting for the upgrade;
// an open of the same database in another tab or worker then waits behind it, and hears no
// `blocked` of its own. While such an open waits, its context holds a Web Lock named after the
// database, which the opens of the other contexts look for, to give up too.

const lockOf = (dbName) => `agent-sessions.blocked:${dbName}`;
/** The databases whose lock was seen held when last asked. */
const seen = new Set();

/** Gives the sessions modules (each has its own memory) the hooks they call, once per context. */
export function installGivenUp() {
  globalThis[Symbol.for('agent-sessions.givenUp')] ??= {
    /** Holds the lock of `dbName` until `done` settles. */
    hold: (dbName, done) => globalThis.navigator?.locks?.request(lockOf(dbName), () => done).catch(() => {}),
    /** Whether the lock of `dbName` was held (or asked for) in a context of the origin when
     * last asked, and asks again: an open that waits asks every 100 ms. */
    elsewhere(dbName) {
      globalThis.navigator?.locks?.query().then(({ held = [], pending = [] }) => {
        if ([...held, ...pending].some((lock) => lock.name === lockOf(dbName))) seen.add(dbName);
        else seen.delete(dbName);
      });
      return seen.has(dbName);
    },
  };
}
