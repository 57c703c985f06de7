// Change events: after a write commits, the session object that made it posts one event on a
// `BroadcastChannel` named after its database. Every tab, worker and object of the origin that
// subscribed receives it from there (this page's own objects too: a channel delivers to every
// other channel of its name), so all of them see the same events in the order each writer
// committed them. Listening costs nothing until something subscribes: the receiving channel of a
// database is opened by its first subscription and closed with its last.
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

/** Calls a listener; one that throws is reported without stopping the others or the write. */
function call(fn, event) {
  try {
    fn(event);
  } catch (error) {
    if (typeof reportError === 'function') reportError(error);
    else setTimeout(() => { throw error; });
  }
}

/** Events waiting to be posted, per database, in commit order. */
const outbox = new Map();
let flushing = false;

/** Posts what waits, one message per database. */
function flush() {
  flushing = false;
  for (const [dbName, events] of outbox) {
    let channel = senders.get(dbName);
    if (!channel) {
      channel = new BroadcastChannel(PREFIX + dbName);
      senders.set(dbName, channel);
    }
    channel.postMessage(events);
  }
  outbox.clear();
}

// A page being left posts what waits at once.
globalThis.addEventListener?.('pagehide', flush);

/**
 * Queues `event` (a plain object with `type` and `sessionId`) for the database `dbName`. Posting
 * crosses into the browser process, which costs more than the write's own bookkeeping: it is done
 * in a task of its own, after the write's caller has gone on (so it overlaps the next write's
 * wait for IndexedDB), with every event queued by then in one message, in order.
 */
export function publish(dbName, event) {
  if (!hasChannels) return;
  const events = outbox.get(dbName);
  const stamped = { ...event, dbName, at: Date.now() };
  if (events) events.push(stamped);
  else outbox.set(dbName, [stamped]);
  if (!flushing) {
    flushing = true;
    setTimeout(flush, 0);
  }
}

/** Adds a listener for the events of `dbName` that `accepts`; returns its removal. */
function listen(dbName, entry) {
  let receiver = receivers.get(dbName);
  if (!receiver) {
    const channel = hasChannels ? new BroadcastChannel(PREFIX + dbName) : null;
    receiver = { channel, entries: new Set() };
    if (channel) {
      channel.onmessage = (message) => {
        const events = Array.isArray(message.data) ? message.data : [];
        for (const event of events) {
          if (!event || typeof event !== 'object') continue;
          // A listener removed by an earlier one (during this dispatch) is not called.
          for (const e of [...receiver.entries]) if (receiver.entries.has(e) && e.accepts(event)) call(e.fn, event);
        }
      };
    }
    receivers.set(dbName, receiver);
  }
  receiver.entries.add(entry);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    receiver.entries.delete(entry);
    if (receiver.entries.size === 0) {
      receiver.channel?.close();
      receivers.delete(dbName);
    }
  };
}

/** The events of one session (every branch), from every object, tab and worker of the origin. */
export function subscribeSession(dbName, sessionId, fn) {
  needsListener(fn, 'subscribe');
  return listen(dbName, { fn, accepts: (e) => e.sessionId === sessionId });
}

/**
 * `watchSessions({ dbName, userId }, listener)`: the sessions of a database (one user's, with
 * `userId`; `null` for those without a user) being created, updated and deleted, for sidebars.
 * Whether a write created its session is told from the sessions known when watching began (one
 * `listSessions` read) and those seen since.
 */
export function watchSessions(listSessions, options, fn) {
  needsListener(fn, 'watchSessions');
  const dbName = options?.dbName ?? 'agent-sessions';
  const filtered = options != null && 'userId' in options;
  const userId = options?.userId ?? null;
  const known = new Set();
  const early = [];
  let ready = false;
  const deliver = (event) => {
    if (event.type === 'delete') {
      if (known.delete(event.sessionId)) call(fn, { type: 'deleted', sessionId: event.sessionId, userId: event.userId });
      return;
    }
    const type = known.has(event.sessionId) ? 'updated' : 'created';
    known.add(event.sessionId);
    call(fn, { type, sessionId: event.sessionId, userId: event.userId, change: event.type });
  };
  const stop = listen(dbName, {
    fn: (event) => (ready ? deliver(event) : early.push(event)),
    accepts: (e) => !filtered || e.userId === userId || e.type === 'delete',
  });
  // `stop.ready` settles once the sessions known at the start are read: changes made after it
  // are told apart as created or updated exactly.
  stop.ready = listSessions(filtered && userId !== null ? { dbName, userId } : { dbName })
    .then((list) => {
      for (const s of list) if (!filtered || s.userId === userId) known.add(s.sessionId);
    })
    .catch(() => {})
    .finally(() => {
      ready = true;
      for (const event of early.splice(0)) deliver(event);
    });
  return stop;
}
