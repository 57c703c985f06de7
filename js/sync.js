// SyncedSession: a session that lives in this browser (an IndexedDbSession: reads are local,
// fast, and work offline) and is kept in step with a remote Session, typically an
// OpenAIConversationsSession, so the same person's other devices see the same history.
//
// The outbox is the local history past what was synced: a write enters it in the transaction
// that stores it, so it survives reloads and crashes. A sync round, one at a time across the
// origin's tabs (a Web Lock), compares three lists: what was synced last (kept in a database of
// its own, with the remote id of every synced item), the local history, and the remote one.
// - What the local history lost since (a pop, a clear) is deleted remotely; what the remote lost
//   (another device's pop) is removed locally: a deletion wins.
// - The remote's new items are pulled; the local new items are pushed, at most 20 per write. The
//   items of a push are recorded before it is sent, so a push whose answer never came (a dropped
//   response, a closed tab) is recognised on the remote the next time instead of being sent again.
// - Both devices then hold the remote's order: where the remote put another device's items
//   between, the local history is rewritten once to match, in one transaction that is refused
//   (and the round tried again) if the history changed meanwhile.
import { recordStore } from './records.js';
import { sessionError } from './encrypted.js';

const state = recordStore('agent-sessions-sync', 'sessions');

/** Items per remote write (the Conversations API's limit). */
const PUSH_SIZE = 20;

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part?.text === 'string' ? part.text : typeof part?.refusal === 'string' ? part.refusal : '')).join('');
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
    case 'function_call_output': {
      const output = item.output;
      const text = typeof output === 'string' ? output : typeof output?.text === 'string' ? output.text : JSON.stringify(output ?? '');
      return JSON.stringify(['o', item.callId ?? item.call_id ?? '', text]);
    }
    default: {
      const { id: _id, providerData: _p, ...rest } = item ?? {};
      return JSON.stringify(['x', type, rest]);
    }
  }
}

/** An item pulled from the remote, stored locally without the remote's id (as a local write
 * would be). */
function pulled(item) {
  if (item && typeof item === 'object' && 'id' in item) {
    const { id: _id, ...rest } = item;
    return rest;
  }
  return item;
}

const keyOf = (item) => (typeof item?.id === 'string' ? `id:${item.id}` : `fp:${fingerprint(item)}`);

function errorInfo(error) {
  return { name: error?.name ?? 'Error', message: error?.message ?? String(error), ...(typeof error?.status === 'number' ? { status: error.status } : {}), ...(error?.code ? { code: error.code } : {}) };
}

function withLock(name, run) {
  const locks = globalThis.navigator?.locks;
  return locks ? locks.request(name, run) : run();
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

  /** A local write, then a sync round soon (at once when online). */
  async #write(call, pending) {
    const result = await call();
    if (pending) this.#setStatus({ pending: this.#status.pending + pending });
    this.#schedule(0);
    return result;
  }

  addItems(items) {
    return this.#write(() => this.#local.addItems(items), Array.isArray(items) ? items.length : 0);
  }

  popItem() {
    return this.#write(() => this.#local.popItem(), 0);
  }

  clearSession() {
    return this.#write(() => this.#local.clearSession(), 0);
  }

  applyHistoryTransaction(args) {
    return this.#write(() => this.#local.applyHistoryTransaction(args), 0);
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
      return this.#running.then(() => this.sync());
    }
    clearTimeout(this.#timer);
    this.#timer = null;
    let retryIn = null;
    const run = (async () => {
      this.#setStatus({ syncing: true, online: online() });
      try {
        await withLock(this.#lockName, () => this.#round());
        this.#attempt = 0;
        this.#setStatus({ syncing: false, pending: 0, lastSyncedAt: Date.now(), lastError: null });
        return this.syncStatus;
      } catch (error) {
        this.#attempt += 1;
        const pending = await this.#pendingCount().catch(() => this.#status.pending);
        this.#setStatus({ syncing: false, pending, lastError: errorInfo(error), online: online() });
        if (online()) retryIn = Math.min(this.#maxDelay, this.#minDelay * 2 ** (this.#attempt - 1));
        throw error;
      }
    })();
    this.#running = run.finally(() => {
      this.#running = null;
      if (this.#again) {
        this.#again = false;
        this.#schedule(0);
      } else if (retryIn !== null) {
        this.#schedule(retryIn);
      }
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

  async #pendingCount() {
    const saved = (await state.get(this.#id)) ?? { synced: [] };
    const local = await this.#local.getItems();
    return Math.max(0, local.length - saved.synced.length);
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
    const saved = (await state.get(this.#id)) ?? { id: this.#id, synced: [], inFlight: null, tombstones: [] };
    const tombstones = new Set(saved.tombstones ?? []);
    const local = await this.#local.getItems();
    let listed = (await remote.getItems()).filter((item) => !tombstones.has(keyOf(item)));

    // What the local history lost since the last sync is deleted remotely.
    let kept = 0;
    while (kept < saved.synced.length && kept < local.length && fingerprint(local[kept]) === saved.synced[kept].fp) kept += 1;
    const lost = saved.synced.slice(kept);
    if (lost.length > 0) {
      if (kept === 0) {
        await remote.clearSession();
      } else {
        const there = new Set(listed.map(keyOf));
        for (const entry of [...lost].reverse()) {
          if (!there.has(entry.key)) continue;
          if (typeof remote.deleteItem === 'function' && entry.key.startsWith('id:')) {
            await remote.deleteItem(entry.key.slice(3));
          } else if (keyOf(listed.at(-1)) === entry.key) {
            await remote.popItem();
            listed = listed.slice(0, -1);
          } else {
            tombstones.add(entry.key); // no way to delete it there: ignored from now on
          }
        }
      }
      listed = (await remote.getItems()).filter((item) => !tombstones.has(keyOf(item)));
    }
    const synced = saved.synced.slice(0, kept);
    const fresh = local.slice(kept); // the outbox

    // A push recorded but never confirmed: its items are on the remote if it took effect.
    const known = new Set(synced.map((s) => s.key));
    const added = listed.filter((item) => !known.has(keyOf(item)));
    let landed = 0;
    const flight = saved.inFlight?.fps ?? [];
    if (flight.length > 0 && flight.every((fp, i) => fresh[i] !== undefined && fingerprint(fresh[i]) === fp)) {
      const fps = added.map(fingerprint);
      for (let at = fps.length - flight.length; at >= 0; at -= 1) {
        if (flight.every((fp, i) => fps[at + i] === fp)) {
          landed = flight.length;
          break;
        }
      }
    }

    // Push the rest, recording each write before it is sent.
    const toPush = fresh.slice(landed);
    let pushed = false;
    for (let i = 0; i < toPush.length; i += PUSH_SIZE) {
      const chunk = toPush.slice(i, i + PUSH_SIZE);
      await state.put({ ...saved, synced: saved.synced, tombstones: [...tombstones], inFlight: { fps: fresh.slice(0, landed + i + chunk.length).map(fingerprint) } });
      await remote.addItems(chunk);
      pushed = true;
    }
    if (pushed) listed = (await remote.getItems()).filter((item) => !tombstones.has(keyOf(item)));

    // The remote's order, with this device's items as they were written here.
    const byKey = new Map(synced.map((s, i) => [s.key, local[i]]));
    const ours = fresh.map((item) => ({ item, fp: fingerprint(item), used: false }));
    const next = [];
    const entries = [];
    for (const item of listed) {
      const key = keyOf(item);
      const fp = fingerprint(item);
      let mine = byKey.get(key);
      if (mine === undefined) {
        const match = ours.find((o) => !o.used && o.fp === fp);
        if (match) {
          match.used = true;
          mine = match.item;
        }
      }
      next.push(mine ?? pulled(item));
      entries.push({ key, fp });
    }
    const unplaced = ours.filter((o) => !o.used).map((o) => o.item);
    const wanted = [...next, ...unplaced];

    // Rewrite the local history where it differs, in one transaction, under the lock runs take.
    let same = 0;
    while (same < local.length && same < wanted.length && fingerprint(local[same]) === fingerprint(wanted[same])) same += 1;
    if (same < local.length || same < wanted.length) {
      const expectedSuffix = local.slice(same);
      const replacement = wanted.slice(same);
      const transaction = expectedSuffix.length > 0 ? { type: 'replace_suffix', expectedSuffix, replacement } : { type: 'append_items', items: replacement };
      const operationId = `sync:${crypto.randomUUID()}`;
      await withLock(`agent-sessions:${this.#local.dbName}:${this.#local.sessionId}`, () => this.#local.applyHistoryTransaction({ operationId, transaction }));
    }
    await state.put({ id: this.#id, synced: entries, inFlight: null, tombstones: [...tombstones] });
    if (unplaced.length > 0) throw Object.assign(new Error(`${unplaced.length} item(s) written here did not reach the remote yet`), { name: 'SyncError' });
  }
}
