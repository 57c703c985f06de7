// Change events: after a write commits, the session object that made it posts one event on a
// `BroadcastChannel` named after its database. Every tab, worker and object of the origin that
// subscribed receives it from there (this page's own objects too: a channel delivers to every
// other channel of its name), so all of them see the same events in the order each writer
// committed them. Listening costs nothing until something subscribes: the receiving channel of a
// database is opened by its first subscription and closed a task after its last, unless one
// came back.
//
// This is browser plumbing with no logic worth compiling, so it lives in JavaScript beside the
// WebAssembly module rather than in it.

import { sessionError } from './errors.js';

const PREFIX = 'agent-sessions:';

/** Refuses a listener that is not a function, as every other bad argument is refused. */
export function needsListener(fn, what) {
  if (typeof fn !== 'function') throw sessionError('INVALID_OPTIONS', `${what}() takes a listener function, got ${typeof fn}`);
}
const hasChannels = typeof BroadcastChannel === 'function';

/** The channel each database's events are posted on, opened on the first write. */
const senders = new Map();

/** Per database: the receiving channel and its listeners (`{ sessionId | null, userId, fn }`). */
const receivers = new Map();

/** Reports an error of the app's code (a listener's) as the page reports its uncaught errors,
 * without stopping what called it. */
export function report(error) {
  if (typeof reportError === 'function') reportError(error);
  // Node has none, and an error thrown later would end the process there.
  else if (typeof process === 'object' && process?.versions?.node) console.error(error);
  else setTimeout(() => { throw error; });
}

/** Calls a listener; one that throws, or returns a promise that rejects (an `async` one), is
 * reported without stopping the others or the write. */
export function callListener(fn, ...args) {
  try {
    const returned = fn(...args);
    if (typeof returned?.then === 'function') Promise.resolve(returned).catch(report);
  } catch (error) {
    report(error);
  }
}

/** Events waiting to be posted, per database, in commit order. */
const outbox = new Map();
let flushing = false;

/** Posts what waits, one message per database. Where the browser has no `BroadcastChannel`,
 * the listeners of this page (or worker) hear it all the same. */
function flush() {
  flushing = false;
  for (const [dbName, events] of outbox) {
    if (!hasChannels) {
      const receiver = receivers.get(dbName);
      if (receiver) dispatch(receiver, events);
      continue;
    }
    let channel = senders.get(dbName);
    if (!channel) {
      channel = new BroadcastChannel(PREFIX + dbName);
      // In Node (a test run over an IndexedDB written in JS), the channel a write posts on,
      // kept for the next, does not keep the process alive once its work is done; a listener's
      // channel does, until it is stopped, as Node's own channels do.
      channel.unref?.();
      senders.set(dbName, channel);
    }
    channel.postMessage(events);
  }
  outbox.clear();
}

// A page being left posts what waits at once.
globalThis.addEventListener?.('pagehide', flush);

/** The port whose messages run the functions of `tasks`, each in a task of its own: a message,
 * unlike a timer, is not held back in a hidden tab (by a second, or a minute, in Chromium). */
let wake;
const tasks = [];

/** Runs `fn` in a later task (a timer where there are no message channels). */
function inTask(fn) {
  if (typeof MessageChannel !== 'function') return setTimeout(fn, 0);
  if (!wake) {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => tasks.shift()?.();
    // (In Node, the port would keep the process alive once its work is done.)
    port1.unref?.();
    wake = port2;
  }
  tasks.push(fn);
  wake.postMessage(null);
}

/** Runs `flush` soon. In a page, in a task after the write's caller has gone on; in a worker,
 * which has no `pagehide` and may close right after its last write, before that caller goes on. */
function schedule() {
  if (typeof document === 'undefined') return queueMicrotask(flush);
  inTask(flush);
}

/**
 * Queues `event` (a plain object with `type` and `sessionId`) for the database `dbName`. Posting
 * crosses into the browser process, which costs more than the write's own bookkeeping: it is done
 * in a task of its own, after the write's caller has gone on (so it overlaps the next write's
 * wait for IndexedDB), with every event queued by then in one message, in order.
 */
export function publish(dbName, event) {
  const events = outbox.get(dbName);
  const stamped = { ...event, dbName, at: Date.now() };
  if (events) events.push(stamped);
  else outbox.set(dbName, [stamped]);
  if (!flushing) {
    flushing = true;
    schedule();
  }
}

/** Hands `events` to the listeners of `receiver` that accept each. */
function dispatch(receiver, events) {
  for (const event of events) {
    if (!event || typeof event !== 'object') continue;
    // A listener removed by an earlier one (during this dispatch) is not called. Each gets its
    // own copy, deep (an update's `fields`): one that changes it changes nothing another hears
    // (a watch decides later).
    for (const e of [...receiver.entries]) if (receiver.entries.has(e) && e.accepts(event)) callListener(e.fn, structuredClone(event));
  }
}

/** Marks a listener of the package's own (an `EncryptedSession`'s) that keeps no Node process
 * running by itself, as an app's listeners do. */
export const QUIET = Symbol('quiet listener');

/** Whether the channel of `receiver` keeps a Node process running: while an app listens. */
function holdProcess(receiver) {
  const { channel } = receiver;
  if (typeof channel?.unref !== 'function') return;
  if ([...receiver.entries].some((e) => !e.fn[QUIET])) channel.ref();
  else channel.unref();
}

/** Adds a listener for the events of `dbName` that `accepts`; returns its removal. */
function listen(dbName, entry) {
  let receiver = receivers.get(dbName);
  if (!receiver) {
    const channel = hasChannels ? new BroadcastChannel(PREFIX + dbName) : null;
    receiver = { channel, entries: new Set() };
    if (channel) channel.onmessage = (message) => dispatch(receiver, Array.isArray(message.data) ? message.data : []);
    receivers.set(dbName, receiver);
  }
  receiver.entries.add(entry);
  holdProcess(receiver);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    receiver.entries.delete(entry);
    holdProcess(receiver);
    // Closed in a later task, if no listener came back by then: one removed and added again in a
    // listener (an object for the branch just switched to) keeps the channel, and with it the
    // rest of the message being dispatched and the messages already on their way.
    if (receiver.entries.size === 0) {
      inTask(() => {
        if (receiver.entries.size > 0 || receivers.get(dbName) !== receiver) return;
        receiver.channel?.close();
        receivers.delete(dbName);
      });
    }
  };
}

/** Gives `session` its own `subscribe`, bound to it, so that it can be handed on by itself
 * (`useSyncExternalStore(session.subscribe, …)`), and the same function every time. */
export function bindSubscribe(session) {
  Object.defineProperty(session, 'subscribe', { configurable: true, writable: true, value: session.subscribe.bind(session) });
}

/** The `subscribe` of a session object that wraps another: each listener goes to `listen` (the
 * wrapped session's `subscribe`), and its removal into `stops`, which `endListeners` empties at
 * the object's `close()`; once `closed()`, it throws `CLOSED` (`what` names the object). */
export function wrappedSubscribe(listen, stops, closed, what) {
  return (listener) => {
    if (closed()) throw sessionError('CLOSED', `subscribe: the ${what} was closed; create a new one to use the session again`);
    const stop = listen(listener);
    stops.add(stop);
    return () => {
      stops.delete(stop);
      stop?.();
    };
  };
}

/** Removes the listeners whose removals `stops` holds (see `wrappedSubscribe`). */
export function endListeners(stops) {
  for (const stop of stops) stop?.();
  stops.clear();
}

/** The events of one session (every branch), from every object, tab and worker of the origin:
 * `userId`'s (a session of that id another user made once this one's was deleted is not it; a
 * deletion names no user). */
export function subscribeSession(dbName, sessionId, userId, fn) {
  needsListener(fn, 'subscribe');
  return listen(dbName, { fn, accepts: (e) => e.sessionId === sessionId && (e.userId === undefined || (e.userId ?? null) === (userId ?? null)) });
}

/**
 * `watchSessions({ dbName, userId }, listener)`: the sessions of a database (one user's, with
 * `userId`; `null` for those without a user) being created, updated and deleted, for sidebars.
 * Whether a write created its session is told from the sessions known when watching began (one
 * `listSessions` read, which `ready` resolves to) and those seen since. When that read fails (bad options, a database that
 * cannot be opened), `ready` rejects with its error and the watch ends: nothing could tell a
 * created session from an updated one.
 *
 * Events from different tabs carry nothing that orders them: a tab may post a write's event after
 * another tab's deletion of that session was heard. So a session is told created, or deleted, only
 * once a read of the sessions begun after its event arrived agrees (one read serves every event
 * that arrived before it began); the events after it wait behind that read, in order. A late
 * event cannot bring back a deleted chat, nor hide one written again since. A session created and
 * deleted before the read began is told neither; where the read fails, the events are told as
 * they were heard.
 */
export function watchSessions(listSessions, options, fn) {
  needsListener(fn, 'watchSessions');
  const given = typeof options === 'object' && options !== null ? options : {};
  const dbName = given.dbName ?? 'agent-sessions';
  // `userId: undefined` is no filter, as in listSessions (`{ userId: user?.id }` logged out).
  const filtered = given.userId !== undefined;
  const userId = given.userId ?? null;
  /** The sessions known to exist, with their users. */
  const known = new Map();
  let stopped = false;
  // A clear of a session never stored (or deleted since) writes nothing, nor a switch to its
  // main branch, nor history mutations (they only rewrite calls the session holds): none made a
  // session.
  const makesNone = (event) => event.type === 'clear' || event.type === 'branch' || event.change === 'mutations';
  /** Whether `event` would tell a session created or deleted: told only once a read agrees. */
  const told = (event) => (event.type === 'delete' ? known.has(event.sessionId) : !known.has(event.sessionId) && !makesNone(event));
  /** Delivers `event`; `listed`: the ids of the sessions a read begun after it arrived found. */
  const deliver = (event, listed) => {
    const { sessionId } = event;
    if (event.type === 'delete') {
      // Written again since (its write's event still on its way, or heard before this one).
      if (listed?.has(sessionId)) return;
      if (known.has(sessionId)) callListener(fn, { type: 'deleted', sessionId, userId: known.get(sessionId), change: 'delete' });
      known.delete(sessionId);
      return;
    }
    const existed = known.has(sessionId);
    // A write the session's deletion came after, heard late.
    if (!existed && (makesNone(event) || (listed && !listed.has(sessionId)))) return;
    known.set(sessionId, event.userId ?? null);
    callListener(fn, { type: existed ? 'updated' : 'created', sessionId, userId: event.userId ?? null, change: event.type });
  };
  /** Events heard and not yet delivered, each with its number in the order heard; all of them
   * wait until the sessions known at the start are read (`ready`). */
  const queue = [];
  let heard = 0;
  let ready = false;
  /** The last read of the sessions: the ids it found, and how many events had been heard when it
   * began; `reading` while one is under way. */
  let last = { upTo: 0, ids: null };
  let reading = false;
  const drain = () => {
    while (queue.length > 0 && !stopped && !reading) {
      const [event, n] = queue[0];
      const fresh = last.upTo >= n;
      if (told(event) && !fresh) {
        reading = true;
        // Begun in a later task, so that one read serves the rest of the message (or burst) too.
        inTask(() => {
          const upTo = heard;
          const done = (ids) => {
            last = { upTo, ids };
            reading = false;
            drain();
          };
          // A read that fails confirms nothing: the events are told as heard.
          sessionsNow().then((list) => done(new Set(list.map((s) => s.sessionId))), () => done(null));
        });
        return;
      }
      queue.shift();
      deliver(event, fresh ? last.ids : null);
    }
  };
  const unlisten = listen(dbName, {
    fn: (event) => {
      queue.push([event, ++heard]);
      if (ready) drain();
    },
    accepts: (e) => !filtered || e.userId === userId || e.type === 'delete',
  });
  const stop = () => {
    stopped = true;
    unlisten();
  };
  // `stop.ready` settles once the sessions known at the start are read: changes made after it
  // are told apart as created or updated exactly.
  // Options that are not an object, or of a name it does not take (`userID`, which would watch
  // every user's), are refused by the read, as `listSessions` refuses them.
  // (`userId: null` lists every user's, then keeps those without one.)
  const sessionsNow = () =>
    listSessions(given !== options && options != null ? options : { ...given, dbName, userId: filtered && userId !== null ? userId : undefined }).then((list) =>
      list.filter((s) => !filtered || s.userId === userId),
    );
  stop.ready = sessionsNow().then(
    (start) => {
      // The list the changes follow from: a sidebar drawn from it misses none and has none twice.
      for (const s of start) known.set(s.sessionId, s.userId);
      // The changes held back reach the listener after `ready` gave the list (in a later task),
      // in order, with any that come meanwhile: a sidebar drawn from the list hears them after.
      inTask(() => {
        ready = true;
        drain();
      });
      return start;
    },
    (error) => {
      stop();
      throw error;
    },
  );
  // A watch whose caller does not await `ready` does not report its failure as unhandled.
  stop.ready.catch(() => {});
  return stop;
}
