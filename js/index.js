// The package entry: instantiates the WebAssembly module once, then exposes the API.
// Works as a plain ES module over HTTP, in bundlers that understand
// `new URL('…', import.meta.url)` (Vite, webpack 5; see the README for others) and in Node,
// which reads the wasm from disk (js/wasm_file.js).
import { sessionsWasm } from './sessions_wasm.js'; // first: its download starts before the rest is evaluated
import init, * as wasm from './agent_sessions.js';
import { bindSubscribe, callListener, needsListener, publish, subscribeSession, watchSessions as watch } from './events.js';
import { exportSessions, importSessions as importBackup, sessionRecords } from './backup.js';
import { blank, optionsOf, sessionError } from './errors.js';
import { copiedArguments } from './copy.js';
import { forgetSyncState, mayKeepSyncState, sessionLockName, setAsideSyncState, withoutSyncRound } from './sync.js';
import { extras, memory } from './load_extras.js';
import { installGivenUp } from './given_up.js';

installGivenUp();

await init({ module_or_path: sessionsWasm });

// An opened database whose rows were written before the search index existed (or hold the terms
// of an older tokeniser) gets them indexed in the background by the second module, which holds
// the build: the main module calls this when it opens one. A failure (offline, the database
// closed under it) leaves the rest to the next open or search.
wasm.setIndexBuilder((dbName) => {
  extras()
    .then((module) => module.buildSearchIndex({ dbName }))
    .catch(() => {});
});

/** `options` with its `onProgress` called as a listener is (what it throws, or a promise of it
 * that rejects, reported); as they are where it cannot be read (the module refuses them). */
function reporting(options) {
  try {
    // (Only a plain object is copied: one whose options are inherited keeps them.)
    const plain = [Object.prototype, null].includes(Object.getPrototypeOf(options ?? 0));
    const { onProgress } = options ?? {};
    if (plain && typeof onProgress === 'function') return { ...options, onProgress: (p) => callListener(onProgress, p) };
  } catch {
    // (Refused by the module, saying which.)
  }
  return options;
}

// Search, the index build and repair are the second module's, loaded by their first call.
export async function searchSessions(options) {
  // A search first indexes what is not indexed yet: a write that can find the quota used up.
  return (await extras()).searchSessions(reporting(options)).catch(quotaError);
}

export async function buildSearchIndex(options) {
  return (await extras()).buildSearchIndex(reporting(options)).catch(quotaError);
}
export { exportSessions };
import { CHANGE_EVENT } from './encrypted.js';
export { EncryptedSession, deriveKeyFromPassphrase, deviceKey, createDeviceKey, storeDeviceKey, loadDeviceKey, forgetDeviceKey } from './encrypted.js';
export { SyncedSession, sessionLockName } from './sync.js';

/** The events a wrapper of this package (`EncryptedSession`, `SyncedSession`) names a write of its own with,
 * where the write it makes is of another kind (a pop made as a history transaction). */
const NAMED = { __proto__: null, pop: { type: 'pop' }, mutations: { type: 'replace', change: 'mutations' }, compaction: { type: 'replace', change: 'compaction' }, sync: { type: 'replace', change: 'sync' } };

/** The writes that change a session, and the event each makes once it has committed (none when
 * it changed nothing), from its result and what `TAKEN` took of its arguments. */
const WRITES = {
  addItems: (_, count) => (count ? { type: 'add', count } : null),
  popItem: (popped) => (popped === undefined ? null : { type: 'pop' }),
  // (`false`: a session that does not exist, left so.)
  clearSession: (wrote) => (wrote === false ? null : { type: 'clear' }),
  // (`false`: an operation applied before, replayed: nothing changed.)
  applyHistoryTransaction: (applied, named) => (applied === false ? null : (named ?? { type: 'replace', change: 'transaction' })),
  // (`false`: no call of the history has their ids.)
  applyHistoryMutations: (changed) => (changed === false ? null : { type: 'replace', change: 'mutations' }),
  replaceHistory: (_, named) => named ?? { type: 'replace', change: 'history' },
  replaceHistoryWithCompaction: () => ({ type: 'replace', change: 'compaction' }),
  // (`false`: nothing written, a session that does not exist left so; the caller gets `undefined`.)
  // (`true`: every field given but the title, whose `expectedTitle` no longer held.)
  update: (wrote, fields) => (wrote === false ? null : { type: 'update', fields: wrote === true ? fields?.filter((f) => f !== 'title') : fields }),
  storeRunUsage: () => ({ type: 'update', fields: ['usage'] }),
  // (`false`: a session never stored, on its `main` branch: nothing changed.)
  switchBranch: (wrote, branchId) => (wrote === false ? null : { type: 'branch', change: 'switch', branchId }),
  createBranchFromTurn: (branchId) => ({ type: 'branch', change: 'create', branchId }),
  createBranchFromContent: (branchId) => ({ type: 'branch', change: 'create', branchId }),
  deleteBranch: (_, branchId) => ({ type: 'branch', change: 'delete', branchId }),
};

/** What an event needs of a write's arguments, taken when the write is called (as the write
 * copies them): an array emptied or an object changed while the write is under way does not
 * change what its event says. */
const TAKEN = {
  addItems: ([items]) => (Array.isArray(items) ? items.length : 0),
  // The fields it sets (one given as `undefined` is left as it is).
  update: ([changes]) => Object.keys(changes ?? {}).filter((k) => changes[k] !== undefined && k !== 'expectedTitle' && k !== 'expectedCreatedAt'),
  // (Looked up here, where what cannot be read is caught: the named event, or none.)
  applyHistoryTransaction: ([args]) => NAMED[args?.[CHANGE_EVENT]],
  replaceHistory: ([, options]) => NAMED[options?.[CHANGE_EVENT]],
  switchBranch: ([branchId]) => branchId,
  deleteBranch: ([branchId]) => branchId,
};

/** Adds what the browser says about this origin's storage (`usage`, `quota`, in bytes) to a
 * `STORAGE_FULL` error, where it can tell. */
async function withQuota(error) {
  if (error?.code === 'STORAGE_FULL' && typeof navigator !== 'undefined' && navigator.storage?.estimate) {
    try {
      const { usage, quota } = await navigator.storage.estimate();
      Object.assign(error, { usage, quota });
    } catch {
      // The error stands without the figures.
    }
  }
  return error;
}

/** Rejects with `error`, with the figures `withQuota` adds. */
const quotaError = async (error) => {
  throw await withQuota(error);
};

/** Makes each write of `Base` tell `emit` what it changed, after it resolved. The write itself
 * is called at once, so calls keep their order and a closed session still refuses them. */
function withEvents(Base, emit) {
  const Session = class extends Base {};
  for (const [name, describe] of Object.entries(WRITES)) {
    const write = Base.prototype[name];
    Object.defineProperty(Session.prototype, name, {
      configurable: true,
      writable: true,
      value: async function (...args) {
        const pending = write.apply(this, args);
        let taken;
        try {
          taken = TAKEN[name]?.(args);
        } catch {
          // An argument that cannot be read (a throwing Proxy) fails the write itself.
        }
        let result;
        try {
          result = await pending;
        } catch (error) {
          throw await withQuota(error);
        }
        const event = describe(result, taken);
        if (event) emit(this, { ...event, sessionId: this.sessionId, branch: this.currentBranch });
        // (A write's boolean result is for its event only: whether it wrote, or for `update`,
        // `true`, that it set every field given but the title.)
        return typeof result === 'boolean' ? undefined : result;
      },
    });
  }
  return Session;
}

// The methods of an IndexedDbSession the second module serves (a MemorySession's are the memory
// module's, below): each runs there, with its own connection, in this object's call order. The main
// module checks and copies the arguments and takes the call's place in the order now and, once
// every earlier call is done, calls the function given with what the second module needs to act
// as this object (`{ dbName, sessionId, userId, branch, branchCreatedAt, indexTools }`) and the
// copies; `sessionCall` resolves to the method's result and the branch the object is on after it
// (with when that was created), where the main module moves the object.
const inOrder = wasm.Session.prototype.inOrder;
delete wasm.Session.prototype.inOrder;
const SECOND_MODULE_METHODS = [
  'createBranchFromTurn', 'createBranchFromContent', 'deleteBranch', 'getArchivedItems',
  'replaceHistory', 'replaceHistoryWithCompaction', 'applyHistoryMutations',
];
const IndexedDbBase = class extends wasm.Session {
  free() {
    // A write under way still commits: it resolves, and its event names this branch (read from
    // the freed object, the module would throw).
    const branch = this.currentBranch;
    super.free();
    // Its calls now reject with CLOSED, as a freed MemorySession's (the module's would throw);
    // it stays an object of its class.
    Object.setPrototypeOf(this, freedFrom(Object.getPrototypeOf(this)));
    Object.defineProperty(this, 'currentBranch', { value: branch });
  }
};
for (const name of SECOND_MODULE_METHODS) {
  Object.defineProperty(IndexedDbBase.prototype, name, {
    configurable: true,
    writable: true,
    value: function (...args) {
      // The module's download starts now, beside the earlier calls still under way; its failure
      // is this call's, reported when its turn comes.
      const module = extras();
      module.catch(() => {});
      return inOrder.call(this, name, args, async (context, taken) => (await module).sessionCall(name, context, taken));
    },
  });
}

/** Gives each object of `Base` its own bound `subscribe` over `listenTo(session, listener)`
 * (which returns the listener's removal). `close()` and `free()` remove the object's listeners,
 * which would read a closed session, and a closed object takes none. */
function withSubscriptions(Base, listenTo) {
  const Session = class extends Base {
    #stops = new Set();
    #ended = false;

    constructor(...args) {
      super(...args);
      bindSubscribe(this);
    }

    subscribe(listener) {
      if (this.#ended) throw sessionError('CLOSED', 'subscribe: the session was closed; create a new session object to use it again');
      const stop = listenTo(this, listener);
      this.#stops.add(stop);
      return () => {
        this.#stops.delete(stop);
        stop();
      };
    }

    #end() {
      this.#ended = true;
      for (const stop of this.#stops) stop();
      this.#stops.clear();
    }

    close() {
      this.#end();
      return super.close();
    }

    free() {
      this.#end();
      super.free();
    }
  };
  // `using session = new …Session()` frees it (and its listeners) at the end of the block.
  if (typeof Symbol.dispose === 'symbol') Session.prototype[Symbol.dispose] = Session.prototype.free;
  return Session;
}

/** A session stored in IndexedDB; `subscribe` hears every change to it, from any tab. */
export class IndexedDbSession extends withSubscriptions(
  withEvents(IndexedDbBase, (s, event) => publish(s.dbName, { ...event, userId: s.userId })),
  (s, listener) => subscribeSession(s.dbName, s.sessionId, s.userId, listener),
) {
  // What never changes for the object, read from the module once: every write's change event
  // names all three, and each read through the module is a crossing and a string decoded.
  #sessionId;
  #dbName;
  #userId;

  constructor(sessionId, options) {
    super(sessionId, options, false);
    this.#sessionId = super.sessionId;
    this.#dbName = super.dbName;
    this.#userId = super.userId;
  }

  get sessionId() {
    return this.#sessionId;
  }

  get dbName() {
    return this.#dbName;
  }

  get userId() {
    return this.#userId;
  }
}

// Both session kinds store a run's usage given with a history transaction (`args.usage`) in
// the same transaction as the items; the runner looks for this mark to send it that way.
const TRANSACTION_USAGE = Symbol.for('agent-sessions.transactionUsage');
Object.defineProperty(IndexedDbSession.prototype, TRANSACTION_USAGE, { value: true });

/** The listeners of each memory session object (its changes are its own). */
const memoryListeners = new WeakMap();

/** Every method of a session object: what a MemorySession forwards (the main module's class
 * has those the second module serves only as IndexedDbSession defines them, above). */
const SESSION_METHODS = Object.getOwnPropertyNames(wasm.Session.prototype).filter(
  (name) =>
    typeof Object.getOwnPropertyDescriptor(wasm.Session.prototype, name).value === 'function' &&
    !['constructor', 'free', '__destroy_into_raw'].includes(name),
).concat(SECOND_MODULE_METHODS);

/** What a call on a freed session object rejects with. */
const freedError = (name) => sessionError('CLOSED', `${name}: the session was freed (free()); create a new session object to use it again`);

/** What a call on a freed session object gives: closing again resolves, any other call rejects. */
const freedCall = (name) => (name === 'close' ? Promise.resolve() : Promise.reject(freedError(name)));

/** What a freed `IndexedDbSession` of class prototype `proto` is made of, made once per class:
 * its class, with every call rejecting (closing again resolves, freeing or disposing again does
 * nothing). */
const freedPrototypes = new WeakMap();
function freedFrom(proto) {
  let freed = freedPrototypes.get(proto);
  if (!freed) {
    const calls = [...SESSION_METHODS, 'free', Symbol.dispose ?? 'free'].map((name) => [
      name,
      { value: () => (typeof name !== 'string' || name === 'free' ? undefined : freedCall(name)) },
    ]);
    freedPrototypes.set(proto, (freed = Object.create(proto, Object.fromEntries(calls))));
  }
  return freed;
}

// A MemorySession's items live in the memory module's memory (js/memory.js), so that the module
// every page loads holds the IndexedDB backend alone. Its arguments are checked when it is
// made, as an IndexedDbSession's are; its first call loads the module (as a search loads the
// second one) and makes the object it acts through there. Calls made until then wait for it,
// in their order, with their arguments copied when they were made.
class MemoryBase {
  #args;
  #inner;
  #loading;
  #waiting = 0;
  #closed = false;
  #freed = false;
  #lastBranch;

  constructor(sessionId, options) {
    this.#args = wasm.memorySessionArgs(sessionId, options);
  }

  get sessionId() {
    return this.#args.sessionId;
  }

  get settings() {
    return this.#args.settings;
  }

  get currentBranch() {
    return this.#freed ? this.#lastBranch : (this.#inner?.currentBranch ?? 'main');
  }

  get userId() {
    return undefined;
  }

  get dbName() {
    return undefined;
  }

  free() {
    // (A write under way resolves, its event naming this branch: see IndexedDbBase.)
    this.#lastBranch ??= this.currentBranch;
    this.#closed = true;
    this.#freed = true;
    this.#inner?.free();
  }

  #load() {
    this.#loading ??= memory().then(
      (module) => {
        const inner = new module.Session(this.#args.sessionId, { settings: this.#args.settings }, true);
        // Freed while its module loaded: so is what it would have acted through.
        if (this.#freed) inner.free();
        return (this.#inner = inner);
      },
      (error) => {
        this.#loading = undefined;
        throw error;
      },
    );
    return this.#loading;
  }

  static forward(name) {
    return function (...args) {
      // Freed: every call rejects, as on a closed object (closing again resolves).
      if (this.#freed) return freedCall(name);
      if (this.#inner && this.#waiting === 0) return this.#inner[name](...args);
      // Before the module is loaded, the object answers what needs nothing of it: its id, and
      // its close (and, once closed, every call, as the loaded object would).
      if (!this.#loading && (this.#closed || name === 'close' || name === 'getSessionId')) {
        // (Closing again resolves, as on a loaded object.)
        if (name === 'close') {
          this.#closed = true;
          return Promise.resolve();
        }
        if (this.#closed) return Promise.reject(sessionError('CLOSED', `${name}: the session was closed; create a new session object to use it again`));
        return Promise.resolve(this.#args.sessionId);
      }
      const copied = copiedArguments(args);
      this.#waiting += 1;
      return this.#load().then(
        (inner) => {
          this.#waiting -= 1;
          if (this.#freed) throw freedError(name);
          return inner[name](...copied);
        },
        (error) => {
          this.#waiting -= 1;
          throw error;
        },
      );
    };
  }
}
for (const name of SESSION_METHODS) {
  Object.defineProperty(MemoryBase.prototype, name, { configurable: true, writable: true, value: MemoryBase.forward(name) });
}

/** A session kept in memory; `subscribe` hears the changes made through this object. */
export class MemorySession extends withSubscriptions(
  withEvents(MemoryBase, (s, event) => {
    const at = Date.now();
    const set = memoryListeners.get(s) ?? new Set();
    // A listener removed by an earlier one is not called.
    for (const fn of [...set]) if (set.has(fn)) callListener(fn, structuredClone({ ...event, userId: null, at }));
  }),
  (s, listener) => {
    needsListener(listener, 'subscribe');
    const set = memoryListeners.get(s) ?? new Set();
    memoryListeners.set(s, set);
    const entry = (event) => listener(event);
    set.add(entry);
    return () => set.delete(entry);
  },
) {}

Object.defineProperty(MemorySession.prototype, TRANSACTION_USAGE, { value: true });

export async function deleteSession(sessionId, options) {
  // Not while a run of this package answers in it, in any tab: the run's save would make the
  // chat again, with that turn.
  const remove = async (lock) => {
    if (lock === null) throw sessionError('SESSION_BUSY', `deleteSession: session ${JSON.stringify(sessionId)} is in use (a run answering in it, or another deletion, in this tab or another): nothing was deleted; stop the run, or try again once it ended`);
    const gone = await (await extras()).deleteSession(sessionId, options).catch(quotaError);
    // Queued to be told as soon as it is done, while its lock is held (before the sync state
    // goes, another database): queued later, it could be told after a write that made the chat
    // again, which the same message carries.
    if (gone) publish(dbName, { type: 'delete', sessionId });
    return gone;
  };
  let lock = null;
  let dbName;
  try {
    dbName = options?.dbName ?? 'agent-sessions';
    lock = sessionLockName(dbName, sessionId);
  } catch {
    // Arguments that cannot be read: the call refuses them, with their code.
  }
  const locks = globalThis.navigator?.locks;
  const removed = () => (lock && locks ? locks.request(lock, { ifAvailable: true }, remove) : remove({}));
  if (lock === null) return removed();
  const synced = mayKeepSyncState();
  // While no sync round of it runs (in any tab): one under way would save, after the delete,
  // the state it began with, which the next round would take for this session's, every item of
  // it deleted here, and delete them remotely. Its sync state goes with it (see
  // `forgetSyncState`): kept, it would take room for good.
  const existed = await withoutSyncRound(
    dbName,
    sessionId,
    async () => {
      const gone = await removed();
      if (gone && (await synced)) await forgetSyncState(dbName, sessionId).catch(() => {});
      return gone;
    },
    synced,
  );
  return existed;
}

export async function repairSession(sessionId, options) {
  const report = await (await extras()).repairSession(sessionId, options).catch(quotaError);
  if (report.existed) publish(options?.dbName ?? 'agent-sessions', { type: 'replace', change: 'repair', sessionId, userId: report.userId });
  return report;
}

/** The item count and turn count of the branch a stored session record is on, as its `getInfo()`
 * gives them: `main`'s are the record's; another branch shows the items from where the first
 * branch of its chain (its `base`s) starts to its own end. */
function shownCounts(r) {
  const entries = Array.isArray(r.branches) ? r.branches : [];
  const on = r.currentBranch && r.currentBranch !== 'main' && entries.find((e) => e?.id === r.currentBranch);
  if (!on) return [r.itemCount, r.lastTurn];
  let root = on;
  for (let n = 0; root && root.base != null && n <= entries.length; n++) root = root.base === 'main' ? { first: r.firstSeq } : entries.find((e) => e?.id === root.base);
  const count = on.next - root?.first;
  return [count >= 0 ? count : null, on.lastTurn];
}

/** A stored session record as `listSessions` reports it: the public fields and the metadata a
 * sidebar shows, renamed; a field the record lacks is `null` (the branch: `'main'`). */
function sessionInfo(r) {
  const [itemCount, turnCount] = shownCounts(r);
  return {
    sessionId: r.id ?? null,
    userId: r.userId ?? null,
    createdAt: r.createdAt ?? null,
    updatedAt: r.updatedAt ?? null,
    itemCount: itemCount ?? null,
    turnCount: turnCount ?? null,
    title: r.title ?? null,
    summary: r.summary ?? null,
    currentBranch: r.currentBranch ?? 'main',
    bytes: r.bytes ?? null,
  };
}

export async function listSessions(options) {
  return (await sessionRecords(options)).map(sessionInfo);
}

export function watchSessions(options, listener) {
  return watch(listSessions, options, listener);
}

/**
 * Asks the browser to keep this origin's data under storage pressure (`navigator.storage.persist()`):
 * resolves to whether it is persisted now (`false` where the browser refused or has no such API;
 * in a worker, which has `persisted()` but not `persist()`, whether it is).
 * Browsers may grant it without asking (Chromium does for sites the user engages with) or show a
 * prompt (Firefox).
 */
export async function requestPersistentStorage() {
  const storage = typeof navigator === 'undefined' ? undefined : navigator.storage;
  try {
    // (A worker has `persisted()` but no `persist()`: it tells, though it cannot ask.)
    if (await storage?.persisted?.()) return true;
    return !!(await storage?.persist?.());
  } catch {
    return false;
  }
}

/** `[{ sessionId, bytes }]` of the sessions `listSessions` lists, from the sizes their records
 * keep; only a session whose record has none yet (written before sizes were kept) needs the
 * second module, which measures it once and keeps the figure. */
async function sessionSizes(options) {
  const records = (await sessionRecords(options)).filter((r) => typeof r.id === 'string');
  if (records.every((r) => typeof r.bytes === 'number')) return records.map((r) => ({ sessionId: r.id, bytes: r.bytes }));
  const ids = new Set(records.map((r) => r.id));
  return (await extras()).sessionSizes(options).then((sizes) => sizes.filter((s) => ids.has(s.sessionId)), quotaError);
}

/**
 * What this origin stores and may store (`usage`, `quota`, from `navigator.storage.estimate()`),
 * whether the browser keeps it under pressure (`persisted`), and about how many bytes each
 * session's items take, from the sizes its record keeps (no item is read).
 */
export async function storageEstimate(options = {}) {
  const storage = typeof navigator === 'undefined' ? undefined : navigator.storage;
  const [sessions, estimate, persisted] = await Promise.all([
    sessionSizes(options),
    storage?.estimate ? storage.estimate().catch(() => ({})) : {},
    storage?.persisted ? storage.persisted().catch(() => false) : false,
  ]);
  return { usage: estimate.usage ?? null, quota: estimate.quota ?? null, persisted, sessions };
}

/** `importSessions(source, options)` (see backup.js); every session written is announced to the
 * listeners of its database, as a `'replace'` with `change: 'import'`, and its sync state is
 * forgotten (see `forgetSyncState`; with 'replace', set aside before the write and put back
 * where the session was not written over), all while no sync round of it runs. */
export async function importSessions(source, options) {
  const dbName = optionsOf(options, 'importSessions').dbName ?? 'agent-sessions';
  const synced = mayKeepSyncState(); // whether there is sync state to forget, asked once
  let copies = null;
  // (Not awaited by an import that fails first.)
  synced.catch(() => {});
  return importBackup(source, options, {
    written: async (sessionId, userId) => {
      publish(dbName, { type: 'replace', change: 'import', sessionId, userId });
      // (Where the sync state's own database fails, a round over the session fails as well.)
      if (await synced) await forgetSyncState(dbName, sessionId).catch(() => {});
    },
    // Each session is written, and its state forgotten, while no sync round of it runs: under
    // the backup's id, and with 'replace' under each earlier copy of it too (`chat-2`, listed
    // once), which a restore replaces where it is the same session (a new copy goes under an
    // id no round follows yet). The locks are taken in order of their ids.
    around: async (sessionId, owner, write) => {
      const replacing = options?.onConflict === 'replace';
      let ids = [sessionId];
      // Where the backup's id is another user's, an earlier copy of the owner's (`chat-2`) is
      // what a 'replace' replaces.
      let mayReplace = [sessionId];
      if (replacing) {
        // (A listing that failed is asked again by the next session's write.)
        copies ??= sessionRecords({ dbName }).catch((error) => {
          copies = null;
          throw error;
        });
        const records = await copies;
        // (A record of another id type, another program's, is none.)
        const copy = (id) => typeof id === 'string' && id.startsWith(`${sessionId}-`) && /^\d+$/.test(id.slice(sessionId.length + 1));
        const theirs = records.filter((r) => copy(r.id));
        ids = [sessionId, ...theirs.map((r) => r.id)].sort();
        if (records.some((r) => r.id === sessionId && (r.userId ?? null) !== owner)) mayReplace = theirs.filter((r) => (r.userId ?? null) === owner).map((r) => r.id).sort();
      }
      // The sync state of what a 'replace' may replace is set aside before the restore writes,
      // not forgotten after: a restore cut short (the tab closed) never leaves the restored
      // history beside the old state, whose next round would delete on the remote what the
      // backup lacks. Each is put back where nothing was written over its session (a restore
      // refused, another copy written): without it, the next round would take the items the
      // remote holds and this history no longer does (popped here, not yet synced) for new.
      const writing = replacing
        ? async () => {
            const aside = [];
            // (It never throws: a state that cannot be put back is forgotten.)
            const putBack = async (kept) => {
              for (const [id, again] of aside) if (id !== kept) await again().catch(() => {});
            };
            try {
              if (await synced) for (const id of mayReplace) aside.push([id, await setAsideSyncState(dbName, id)]);
              // (A 'replace' restores or renames, never skips: the id it wrote over, if any, is
              // the one it names.)
              const done = await write();
              await putBack(done.sessionId);
              return done;
            } catch (error) {
              await putBack();
              throw error;
            }
          }
        : write;
      // A session replaced is not one a run answers in (in any tab): its save would go on from
      // the history it read, after the restored one (or fail). Refused, as a delete is.
      const locks = globalThis.navigator?.locks;
      const replace = (i) =>
        i === mayReplace.length
          ? writing()
          : locks.request(sessionLockName(dbName, mayReplace[i]), { ifAvailable: true }, (lock) => {
              if (lock === null) throw sessionError('SESSION_BUSY', `importSessions: session ${JSON.stringify(mayReplace[i])} is in use (a run answering in it, in this tab or another): it was not restored; restore it again once the run ended`);
              return replace(i + 1);
            });
      const last = replacing && locks ? () => replace(0) : writing;
      const run = (i) => (i === ids.length ? last() : withoutSyncRound(dbName, ids[i], () => run(i + 1), synced));
      return run(0);
    },
  }).catch(quotaError);
}

/** Whether `v` is no id or owner a call can name (not a string, blank, or with a lone surrogate). */
const unnamed = (v) => typeof v !== 'string' || blank(v) || /\p{Cs}/u.test(v);

/**
 * Deletes whole sessions of a database (one user's with `userId`) by `updatedAt`, oldest first:
 * those unchanged for more than `maxAgeDays`, then the oldest past the newest
 * `maxSessionsPerUser` of each user. Resolves to what it deleted: `[{ sessionId, userId,
 * updatedAt }]`. A session written after it was listed (a chat reopened in another tab) is
 * kept. Works on encrypted sessions as on any other (it reads only session records).
 */
export async function applyRetention(options) {
  const { dbName, userId, maxAgeDays, maxSessionsPerUser, now = Date.now() } = optionsOf(options, 'applyRetention', 'dbName userId maxAgeDays maxSessionsPerUser now');
  // (A clock that is no number, a date string say, deleted nothing by age, without a word; a
  // Date is its milliseconds.)
  // (`null`, `true` or `[]` read as a number were a clock too; a bigint threw a TypeError.)
  if (!(typeof now === 'number' || Object.prototype.toString.call(now) === '[object Date]') || !Number.isFinite(Number(now))) throw sessionError('INVALID_OPTIONS', `options.now must be milliseconds since the epoch (or a Date), got ${typeof now === 'string' ? JSON.stringify(now) : typeof now === 'bigint' ? `${now}n` : String(now)}`);
  for (const [name, value] of [['maxAgeDays', maxAgeDays], ['maxSessionsPerUser', maxSessionsPerUser]]) {
    if (value !== undefined && !(typeof value === 'number' && value >= 0 && (name === 'maxAgeDays' ? Number.isFinite(value) : Number.isInteger(value)))) {
      throw sessionError('INVALID_OPTIONS', `options.${name} must be a non-negative ${name === 'maxAgeDays' ? 'number' : 'integer'}, got ${String(value)}`);
    }
  }
  const base = dbName === undefined ? {} : { dbName };
  const sessions = await listSessions(userId === undefined ? base : { ...base, userId });
  // listSessions is newest first; each user's sessions counted separately.
  const doomed = [];
  const kept = new Map();
  for (const s of sessions) {
    // A damaged record (no time, or an infinite one) is neither counted nor deleted:
    // repairSession rebuilds it. Nor is one under an id no call can name (blank, with a lone
    // surrogate: stored by other code): deleting it would fail, and every run after with it.
    if (!Number.isFinite(s.updatedAt) || unnamed(s.sessionId)) continue;
    const tooOld = maxAgeDays !== undefined && now - s.updatedAt > maxAgeDays * 86_400_000;
    const count = kept.get(s.userId) ?? 0;
    const tooMany = maxSessionsPerUser !== undefined && count >= maxSessionsPerUser;
    if (tooOld || tooMany) doomed.push(s);
    else kept.set(s.userId, count + 1);
  }
  doomed.reverse(); // oldest first
  const deleted = [];
  try {
    for (const s of doomed) {
      // Only if unchanged since listed: a chat reopened meanwhile (in this tab or another) stays,
      // and so does another user's made under its id since. (Nor one a run is answering in: in
      // use, it is kept.)
      // (An owner no call can name, stored by other code, is not asked for: it would fail.)
      const owner = s.userId === null || !unnamed(s.userId) ? { userId: s.userId } : {};
      const gone = await deleteSession(s.sessionId, { ...base, ...owner, expectedUpdatedAt: s.updatedAt }).catch((e) => {
        if (e?.code !== 'SESSION_BUSY' && e?.code !== 'USER_MISMATCH') throw e;
      });
      if (gone) deleted.push({ sessionId: s.sessionId, userId: s.userId, updatedAt: s.updatedAt });
    }
  } catch (error) {
    // The sessions deleted before the failure are gone: the error says which.
    throw Object.assign(error, { deleted });
  }
  return deleted;
}
