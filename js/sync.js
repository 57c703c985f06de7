// SyncedSession: a session that lives in this browser (an IndexedDbSession: reads are local,
// fast, and work offline) and is kept in step with a remote Session, typically an
// OpenAIConversationsSession, so the same person's other devices see the same history.
//
// The outbox is the local history past what was synced: a write enters it in the transaction
// that stores it, so it survives reloads and crashes. A sync round, one at a time across the
// origin's tabs (a Web Lock), compares three lists: what was synced last (kept in a database of
// its own, with the remote id of every synced item), the local history, and the remote one.
// - What the local history lost since (a pop, a clear) is deleted remotely, item by item (the
//   conversation the devices share stays); what the remote lost (another device's pop) is
//   removed locally: a deletion wins.
// - The remote's new items are pulled; the local new items are pushed, at most 20 per write. The
//   items of a push are recorded before it is sent, so a push whose answer never came (a dropped
//   response, a closed tab) is recognised on the remote the next time instead of being sent again.
// - Both devices then hold the remote's order: where the remote put another device's items
//   between, the local history is rewritten once to match, in one transaction that is refused
//   (and the round tried again) if the history changed meanwhile.
import { recordStore } from './records.js';
import { sessionError } from './errors.js';

const state = recordStore('agent-sessions-sync', 'sessions');

/** Items per remote write (the Conversations API's limit). */
const PUSH_SIZE = 20;

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part?.text === 'string' ? part.text : typeof part?.refusal === 'string' ? part.refusal : '')).join('');
}

/** A call output as text, as the Conversations API stores it (the runner's rule). */
function outputText(output) {
  if (output === undefined || output === null) return '';
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) {
    const texts = output.map((p) => p?.text);
    return texts.every((t) => typeof t === 'string') ? texts.join('') : JSON.stringify(output);
  }
  if (typeof output === 'object' && ['text', 'input_text', 'output_text'].includes(output.type) && typeof output.text === 'string') return output.text;
  return JSON.stringify(output);
}

/**
 * What identifies an item whatever store holds it: the parts that survive a round trip through
 * the Conversations API (role and text of a message; id, name and arguments of a call; call id and
 * output of a call's output), in one string.
 */
export function fingerprint(item) {
  const type = item?.type ?? (item?.role ? 'message' : '');
  switch (type) {
    case 'message':
      return JSON.stringify(['m', item.role ?? '', textOf(item.content)]);
    case 'function_call':
      return JSON.stringify(['c', item.callId ?? item.call_id ?? '', item.name ?? '', item.arguments ?? '']);
    case 'function_call_result':
    case 'function_call_output':
      return JSON.stringify(['o', item.callId ?? item.call_id ?? '', outputText(item.output)]);
    default: {
      const { id: _id, providerData: _p, ...rest } = item ?? {};
      return JSON.stringify(['x', type, rest]);
    }
  }
}

/** An item pulled from the remote, stored locally without the remote's id (as a local write
 * would be); a reasoning item keeps it (its encrypted content refers to it). */
function pulled(item) {
  if (item && typeof item === 'object' && 'id' in item && item.type !== 'reasoning') {
    const { id: _id, ...rest } = item;
    return rest;
  }
  return item;
}

/** How many items at the start of `local` are still as they were synced (`synced`: their
 * fingerprints); the rest is the outbox. */
function keptCount(synced, local) {
  let kept = 0;
  while (kept < synced.length && kept < local.length && fingerprint(local[kept]) === synced[kept].fp) kept += 1;
  return kept;
}

/** The remote's items with their keys: the remote's id, or for a remote without ids the
 * fingerprint and which occurrence of it this is (two identical items are two items). */
function keyed(items) {
  const seen = new Map();
  return items.map((item) => {
    const fp = fingerprint(item);
    if (typeof item?.id === 'string') return { item, fp, key: `id:${item.id}` };
    const n = seen.get(fp) ?? 0;
    seen.set(fp, n + 1);
    return { item, fp, key: `fp:${fp}#${n}` };
  });
}

/** A round that stopped because something else is using the session; tried again soon. */
function busy(message) {
  return Object.assign(new Error(message), { name: 'SyncError', code: 'SESSION_BUSY' });
}

function errorInfo(error) {
  return { name: error?.name ?? 'Error', message: error?.message ?? String(error), ...(typeof error?.status === 'number' ? { status: error.status } : {}), ...(error?.code ? { code: error.code } : {}) };
}

/** Runs `run(lock)` holding the Web Lock `name` (`lock` is `null` when `ifAvailable` found it
 * taken). Where the browser has no Web Locks (an insecure origin), `run` runs unlocked. */
function withLock(name, run, options = {}) {
  const locks = globalThis.navigator?.locks;
  return locks ? locks.request(name, options, run) : run({ name });
}

const online = () => globalThis.navigator?.onLine !== false;

/**
 * A Session whose reads are local and whose writes are also pushed to `remote` (any Session),
 * with the remote's new items pulled back. See the README's "Beyond one device".
 */
export class SyncedSession extends EventTarget {
  #local;
  #remote;
  #id;
  #lockName;
  #status;
  #timer = null;
  #interval = null;
  #attempt = 0;
  #running = null;
  #again = false;
  #closed = false;
  #minDelay;
  #maxDelay;
  #onOnline;
  #onOffline;

  constructor(local, remote, options = {}) {
    super();
    const named = local && typeof local === 'object' && typeof local.dbName === 'string' && typeof local.sessionId === 'string';
    if (!named || typeof local.applyHistoryTransaction !== 'function') {
      throw sessionError('INVALID_SESSION', 'SyncedSession needs an IndexedDbSession as its local session (its first argument)');
    }
    for (const method of ['getItems', 'addItems', 'popItem', 'clearSession']) {
      if (typeof remote?.[method] !== 'function') throw sessionError('INVALID_SESSION', `the remote session (second argument) must have a ${method}() method`);
    }
    const { intervalMs, retryDelayMs = 1000, maxRetryDelayMs = 60_000, syncOnOpen = true } = options ?? {};
    for (const [name, value] of [['intervalMs', intervalMs], ['retryDelayMs', retryDelayMs], ['maxRetryDelayMs', maxRetryDelayMs]]) {
      if (value !== undefined && !(Number.isFinite(value) && value > 0)) throw sessionError('INVALID_OPTIONS', `options.${name} must be a positive number of milliseconds, got ${String(value)}`);
    }
    this.#local = local;
    this.#remote = remote;
    this.#id = JSON.stringify([local.dbName, local.sessionId]);
    this.#lockName = `agent-sessions-sync:${local.dbName}:${local.sessionId}`;
    this.#minDelay = retryDelayMs;
    this.#maxDelay = Math.max(maxRetryDelayMs, retryDelayMs);
    this.#status = { pending: 0, lastSyncedAt: null, lastError: null, online: online(), syncing: false };
    this.#onOnline = () => {
      this.#setStatus({ online: true });
      this.#attempt = 0;
      this.#schedule(0);
    };
    this.#onOffline = () => this.#setStatus({ online: false });
    globalThis.addEventListener?.('online', this.#onOnline);
    globalThis.addEventListener?.('offline', this.#onOffline);
    if (intervalMs) this.#interval = setInterval(() => this.#schedule(0), intervalMs);
    if (syncOnOpen) this.#schedule(0);
    // The outbox as this device left it (a reload while offline still shows it).
    this.#pendingCount().then(
      (pending) => this.#setStatus({ pending }),
      () => {},
    );
  }

  // Where the session is stored: what a run's lock and past-session tools look at.
  get dbName() {
    return this.#local.dbName;
  }

  get sessionId() {
    return this.#local.sessionId;
  }

  get userId() {
    return this.#local.userId;
  }

  /** `{ pending, lastSyncedAt, lastError, online, syncing }`; a `syncstatus` event (its
   * `detail` is the same object) tells each change. */
  get syncStatus() {
    return { ...this.#status };
  }

  #setStatus(changes) {
    const next = { ...this.#status, ...changes };
    if (JSON.stringify(next) === JSON.stringify(this.#status)) return;
    this.#status = next;
    this.dispatchEvent(new CustomEvent('syncstatus', { detail: { ...next } }));
  }

  getSessionId() {
    return this.#local.getSessionId();
  }

  getItems(limit) {
    return this.#local.getItems(limit);
  }

  /** A local write, then a sync round soon (at once when online). The outbox is counted after
   * the write resolves (the count reads the whole history: a write does not wait for it). */
  async #write(call) {
    const result = await call();
    this.#pendingCount().then(
      (pending) => this.#setStatus({ pending }),
      () => {},
    );
    this.#schedule(0);
    return result;
  }

  addItems(items) {
    return this.#write(() => this.#local.addItems(items));
  }

  popItem() {
    return this.#write(() => this.#local.popItem());
  }

  clearSession() {
    return this.#write(() => this.#local.clearSession());
  }

  applyHistoryTransaction(args) {
    return this.#write(() => this.#local.applyHistoryTransaction(args));
  }

  // The local session's other reads and its metadata pass through (only the items sync).
  getRecentTurns(...args) {
    return this.#local.getRecentTurns(...args);
  }

  getTurns(...args) {
    return this.#local.getTurns(...args);
  }

  getInfo(...args) {
    return this.#local.getInfo(...args);
  }

  update(...args) {
    return this.#local.update(...args);
  }

  storeRunUsage(...args) {
    return this.#local.storeRunUsage(...args);
  }

  // Usage given with a history transaction goes to the local session with it.
  get [Symbol.for('agent-sessions.transactionUsage')]() {
    return this.#local[Symbol.for('agent-sessions.transactionUsage')] === true;
  }

  /** Hears every change of the local session, the rewrites of a sync round included. */
  subscribe(listener) {
    return this.#local.subscribe(listener);
  }

  /**
   * Runs a sync round now (after the one running, if any): resolves to the status once the
   * local and remote histories are the same, rejects with what failed (also in
   * `syncStatus.lastError`; a retry is scheduled with backoff).
   */
  sync() {
    if (this.#closed) return Promise.reject(sessionError('CLOSED', 'sync(): the session was closed'));
    if (this.#running) {
      this.#again = true;
      return this.#running.then(
        () => this.sync(),
        () => this.sync(),
      );
    }
    clearTimeout(this.#timer);
    this.#timer = null;
    let retryIn = null;
    const run = (async () => {
      this.#setStatus({ syncing: true, online: online() });
      try {
        await withLock(this.#lockName, () => this.#round());
        this.#attempt = 0;
        const pending = await this.#pendingCount().catch(() => 0);
        this.#setStatus({ syncing: false, pending, lastSyncedAt: Date.now(), lastError: null });
        return this.syncStatus;
      } catch (error) {
        const pending = await this.#pendingCount().catch(() => this.#status.pending);
        if (error?.code === 'SESSION_BUSY') {
          // A run (or a write) was using the session: not a failure, just later.
          this.#setStatus({ syncing: false, pending });
          retryIn = this.#minDelay;
        } else {
          this.#attempt += 1;
          this.#setStatus({ syncing: false, pending, lastError: errorInfo(error), online: online() });
          if (online()) retryIn = Math.min(this.#maxDelay, this.#minDelay * 2 ** (this.#attempt - 1));
        }
        throw error;
      }
    })();
    this.#running = run.finally(() => {
      this.#running = null;
      const again = this.#again;
      this.#again = false;
      // A failed round waits its backoff, even when writes asked for a round meanwhile.
      if (retryIn !== null) this.#schedule(retryIn);
      else if (again) this.#schedule(0);
    });
    this.#running.catch(() => {});
    return run;
  }

  #schedule(ms) {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#timer !== null) {
      if (ms > 0) return;
      clearTimeout(this.#timer);
    }
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (!online()) {
        this.#setStatus({ online: false });
        return;
      }
      this.sync().catch(() => {});
    }, ms);
  }

  /** The outbox's length: local items past what is still as synced, and the synced items the
   * local history lost since (deletions the remote has not seen yet). */
  async #pendingCount() {
    const saved = (await state.get(this.#id)) ?? {};
    const synced = Array.isArray(saved.synced) ? saved.synced : [];
    const local = await this.#local.getItems();
    const kept = keptCount(synced, local);
    return local.length - kept + (synced.length - kept);
  }

  /** Stops syncing (timers, listeners); the sessions stay usable on their own. */
  close() {
    this.#closed = true;
    clearTimeout(this.#timer);
    clearInterval(this.#interval);
    globalThis.removeEventListener?.('online', this.#onOnline);
    globalThis.removeEventListener?.('offline', this.#onOffline);
  }

  /** One round: see the header of this file. */
  async #round() {
    const remote = this.#remote;
    const saved = (await state.get(this.#id)) ?? {};
    const synced = Array.isArray(saved.synced) ? saved.synced : [];
    const tombstones = new Set(saved.tombstones ?? []);
    const local = await this.#local.getItems();
    let all = keyed(await remote.getItems());
    const reread = async () => {
      all = keyed(await remote.getItems());
    };
    const visible = () => all.filter((e) => !tombstones.has(e.key));

    // The local history: what is still as synced, then the outbox.
    const kept = keptCount(synced, local);
    const fresh = local.slice(kept);
    const known = new Set(synced.slice(0, kept).map((s) => s.key));

    // This device's pushes the remote holds but the state does not know yet: those confirmed,
    // and the write in flight when the last round stopped, if it took effect.
    const added = visible().filter((e) => !known.has(e.key) && !synced.some((s) => s.key === e.key));
    const claimed = [];
    const free = (e) => !claimed.includes(e);
    for (const fp of saved.inFlight?.confirmed ?? []) {
      const e = added.find((a) => free(a) && a.fp === fp);
      if (e) claimed.push(e);
    }
    const chunk = saved.inFlight?.chunk ?? [];
    for (let at = added.length - chunk.length; chunk.length > 0 && at >= 0; at -= 1) {
      const run = added.slice(at, at + chunk.length);
      if (run.every((e, i) => free(e) && e.fp === chunk[i])) {
        claimed.push(...run);
        break;
      }
    }
    // Pair them with the outbox; a claimed item the outbox no longer has was removed here.
    const paired = new Map(); // remote entry -> local item
    const unpaired = [...fresh];
    for (const e of claimed) {
      const i = unpaired.findIndex((item) => fingerprint(item) === e.fp);
      if (i >= 0) paired.set(e, unpaired.splice(i, 1)[0]);
    }
    const orphans = claimed.filter((e) => !paired.has(e));

    // Deletions: what the local history lost since the last sync, and orphaned pushes.
    const doomed = [...synced.slice(kept).map((s) => s.key), ...orphans.map((e) => e.key)];
    if (doomed.length > 0) {
      for (const key of doomed.reverse()) {
        if (!all.some((e) => e.key === key)) continue;
        if (typeof remote.deleteItem === 'function' && key.startsWith('id:')) {
          await remote.deleteItem(key.slice(3));
        } else if (all.at(-1)?.key === key) {
          await remote.popItem();
          all = all.slice(0, -1);
        } else {
          tombstones.add(key); // no way to delete it there: ignored from now on
        }
      }
      await reread();
    }

    // Push the rest, each write recorded before it is sent.
    const confirmed = [...paired.values()].map(fingerprint);
    const write = (inFlight) => state.put({ id: this.#id, synced: synced.slice(0, kept), inFlight, tombstones: [...tombstones] });
    for (let i = 0; i < unpaired.length; i += PUSH_SIZE) {
      const part = unpaired.slice(i, i + PUSH_SIZE);
      await write({ confirmed, chunk: part.map(fingerprint) });
      await remote.addItems(part);
      confirmed.push(...part.map(fingerprint));
    }
    if (unpaired.length > 0) await reread();

    // The remote's order, with this device's items as they were written here.
    const byKey = new Map(synced.slice(0, kept).map((s, i) => [s.key, local[i]]));
    const byEntry = new Map([...paired].map(([e, item]) => [e.key, item]));
    const waiting = unpaired.map((item) => ({ item, fp: fingerprint(item), used: false }));
    const wanted = [];
    const entries = [];
    for (const e of visible()) {
      let mine = byKey.get(e.key) ?? byEntry.get(e.key);
      if (mine === undefined && !known.has(e.key)) {
        const match = waiting.find((w) => !w.used && w.fp === e.fp);
        if (match) {
          match.used = true;
          mine = match.item;
        }
      }
      wanted.push(mine ?? pulled(e.item));
      entries.push({ key: e.key, fp: e.fp });
    }
    const unplaced = waiting.filter((w) => !w.used).map((w) => w.item);
    wanted.push(...unplaced);

    // Rewrite the local history where it differs: under the lock runs take (a run in progress
    // means "later"), after checking nothing was written since it was read, as one transaction
    // that expects the history to end as it was read.
    if (this.#closed) return;
    await withLock(`agent-sessions:${this.#local.dbName}:${this.#local.sessionId}`, async (lock) => {
      if (lock === null) throw busy('a run holds the session; the sync round is tried again soon');
      const now = await this.#local.getItems();
      const same = (a, b) => a.length === b.length && a.every((item, i) => fingerprint(item) === fingerprint(b[i]));
      if (!same(now, local)) throw busy('the session changed during the sync round; it is tried again');
      let from = 0;
      while (from < local.length && from < wanted.length && fingerprint(local[from]) === fingerprint(wanted[from])) from += 1;
      if (from === local.length && from === wanted.length) return;
      const start = from === local.length && from > 0 ? from - 1 : from; // an append expects the last item
      const expectedSuffix = local.slice(start);
      const replacement = wanted.slice(start);
      const transaction = expectedSuffix.length > 0 ? { type: 'replace_suffix', expectedSuffix, replacement } : { type: 'append_items', items: replacement };
      await this.#local.applyHistoryTransaction({ operationId: `sync:${crypto.randomUUID()}`, transaction });
    }, { ifAvailable: true });
    await state.put({ id: this.#id, synced: entries, inFlight: null, tombstones: [...tombstones] });
    if (unplaced.length > 0) throw Object.assign(new Error(`${unplaced.length} item(s) written here did not reach the remote yet`), { name: 'SyncError' });
  }
}
