// OpenAIConversationsSession: a Session whose history OpenAI's Conversations API keeps (or any
// server speaking it), with the behaviour of the SDK's class of that name: the conversation is
// created by the first write (or `getSessionId()`), items are converted to and from the API's shapes (in the WebAssembly
// module, as the runner converts them), calls are applied one at a time in call order.
import { toConversationItems, fromConversationItems } from './agent_sessions_runner.js';
import { later, optionsOf, sessionError } from './errors.js';

/** The API takes at most this many items per `POST /conversations/{id}/items`. */
const ITEMS_PER_WRITE = 20;
/** The largest page `GET /conversations/{id}/items` gives. */
const PAGE = 100;

/** A failed request, as the runner's: `ModelError` with the HTTP `status` (0 when none came),
 * and what the server's answer adds (`serverCode`, its error's code; `retryAfter`, the wait its
 * `Retry-After` asks, in ms). */
function requestError(what, status, serverMessage, more) {
  const message = status === 0 ? `${what} failed: ${serverMessage}` : `${what} failed with HTTP ${status}: ${serverMessage}`;
  return Object.assign(new Error(message), { name: 'ModelError', code: 'MODEL_ERROR', status, serverMessage }, more);
}


/** What `Retry-After` asks (seconds or a date), in ms; `undefined` where it asks nothing
 * readable. */
function retryAfterMs(headers) {
  const header = headers?.get?.('retry-after')?.trim();
  let ms = header ? Number(header) * 1000 : NaN;
  if (header && Number.isNaN(ms)) ms = Math.max(0, Date.parse(header) - Date.now());
  return ms >= 0 ? ms : undefined;
}

/** How long to wait before retry `attempt` (0-based), as the runner waits: what `Retry-After`
 * asks (at most a minute), else half a second doubling up to 8 s. */
function retryDelay(attempt, headers) {
  const asked = retryAfterMs(headers);
  return asked === undefined ? Math.min(500 * 2 ** attempt, 8_000) : Math.min(asked, 60_000);
}

function optionalString(value, name) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') throw sessionError('INVALID_OPTIONS', `${name} must be a non-empty string, got ${typeof value}`);
  return value;
}

/** A signal that aborts after `ms` (`AbortSignal.timeout`, or a timer where a browser has none:
 * every request failed there with a TypeError no caller could classify). */
function timeoutSignal(ms) {
  if (typeof AbortSignal.timeout === 'function') return { signal: AbortSignal.timeout(ms), clear() {} };
  const controller = new AbortController();
  // (The request's own rejection says why.)
  const timer = setTimeout(() => controller.abort(), ms);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/**
 * A Session kept by the Conversations API. `getItems(limit)` reads the newest `limit` items
 * (`order=desc`), returned oldest first, or every page without a limit; `addItems` writes them
 * (20 per request); `popItem` reads the newest item and deletes it; `clearSession` deletes the
 * conversation (the next write starts a new one; reads before it create none); `getSessionId()` is the conversation id. The
 * API key is only ever sent as the `Authorization` header to `baseUrl`.
 */
export class OpenAIConversationsSession {
  #baseUrl;
  #apiKey;
  #fetch;
  #headers;
  #conversationId;
  #timeoutMs;
  #retries;
  #tail = Promise.resolve();

  constructor(options = {}) {
    let given;
    try {
      given = optionsOf(options, 'OpenAIConversationsSession', 'baseUrl apiKey conversationId fetch headers timeoutMs retries');
      this.#baseUrl = (optionalString(given.baseUrl, 'options.baseUrl') ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
      this.#apiKey = optionalString(given.apiKey, 'options.apiKey');
      this.#conversationId = optionalString(given.conversationId, 'options.conversationId');
      const fetchFn = given.fetch;
      if (fetchFn !== undefined && fetchFn !== null && typeof fetchFn !== 'function') throw sessionError('INVALID_OPTIONS', 'options.fetch must be a function');
      // Called without a receiver (as the runner calls its `fetch`): `window.fetch` given as is
      // refuses to run with this session as its `this`.
      this.#fetch = (...args) => (fetchFn ?? globalThis.fetch)(...args);
      const headers = given.headers ?? {};
      if (typeof headers !== 'object') throw sessionError('INVALID_OPTIONS', 'options.headers must be a Headers object, an object of strings or a list of pairs');
      // Read as fetch reads them (a Headers object, pairs, or a plain object), so none is lost.
      this.#headers = new Headers(headers);
      const timeoutMs = given.timeoutMs ?? 60_000;
      if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw sessionError('INVALID_OPTIONS', `options.timeoutMs must be a positive number, got ${String(timeoutMs)}`);
      // (A time limit is a whole number of ms; one longer than 2^31 - 1 would fire at once.)
      this.#timeoutMs = Math.min(Math.ceil(timeoutMs), 2 ** 31 - 1);
      const retries = given.retries ?? 2;
      if (!(Number.isInteger(retries) && retries >= 0)) throw sessionError('INVALID_OPTIONS', `options.retries must be a whole number >= 0, got ${String(retries)}`);
      this.#retries = retries;
    } catch (e) {
      throw e?.name === 'SessionError' ? e : sessionError('INVALID_OPTIONS', `the options could not be read (${e?.message ?? e})`);
    }
  }

  /** The conversation id, `undefined` until a write or `getSessionId()` created it. */
  get sessionId() {
    return this.#conversationId;
  }

  /** Calls take effect one at a time, in call order. */
  #serial(call) {
    const run = this.#tail.then(call);
    this.#tail = run.catch(() => {});
    return run;
  }

  async #request(what, method, path, body) {
    // The body's type and the key replace what `headers` says of them (set, not appended).
    const headers = new Headers(this.#headers);
    if (body !== undefined) headers.set('content-type', 'application/json');
    if (this.#apiKey) headers.set('authorization', `Bearer ${this.#apiKey}`);
    // 429 is retried for every request (nothing was done), 408, 409 and 5xx only where doing it
    // twice changes nothing (a read, the conversation's delete): not for a write of items, which
    // the server may have stored, nor for the creation of a conversation (a second one, left
    // empty), nor for an item's delete (done already, it would then be a 404: taken for another
    // device's).
    const safe = method === 'GET' || (method === 'DELETE' && !path.includes('/items'));
    for (let attempt = 0; ; attempt++) {
      // A request that never answers would hold every later call: each has a time limit, kept
      // here too, so a `fetch` that does not honour the signal cannot outlast it.
      const { signal, clear } = timeoutSignal(this.#timeoutMs);
      const late = new Promise((_, reject) => signal.addEventListener('abort', () => reject(requestError(what, 0, `no answer within ${this.#timeoutMs} ms`)), { once: true }));
      late.catch(() => {});
      let response;
      let text = '';
      try {
        try {
          // A plain object, as wrappers of fetch that read `init.headers` expect.
          response = await Promise.race([this.#fetch(`${this.#baseUrl}${path}`, { method, headers: Object.fromEntries(headers), signal, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }), late]);
        } catch (e) {
          if (e?.name === 'ModelError') throw e;
          throw requestError(what, 0, signal.aborted ? `no answer within ${this.#timeoutMs} ms` : (e?.message ?? String(e)));
        }
        try {
          text = await Promise.race([response.text(), late]);
        } catch (e) {
          if (e?.name === 'ModelError') throw e;
          throw requestError(what, 0, `the response could not be read (${e?.message ?? e})`);
        }
      } finally {
        // (The timer of a browser without AbortSignal.timeout goes with its request.)
        clear();
      }
      const { status } = response;
      let json = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = null;
      }
      const serverCode = json?.error?.code ?? undefined;
      if (attempt < this.#retries && (later(status, serverCode) || (safe && (status === 408 || status === 409 || status >= 500)))) {
        await new Promise((done) => setTimeout(done, retryDelay(attempt, response.headers)));
        continue;
      }
      if (!response.ok) {
        // (Only where the header says a wait: a server of another origin must expose it.)
        const retryAfter = retryAfterMs(response.headers);
        throw requestError(what, status, json?.error?.message ?? (text.slice(0, 200) || response.statusText), { serverCode, retryAfter });
      }
      if (json === null && text) throw requestError(what, status, 'the response is not JSON');
      return json;
    }
  }

  async #id() {
    if (!this.#conversationId) {
      const created = await this.#request('creating a conversation', 'POST', '/conversations', { items: [] });
      if (typeof created?.id !== 'string') throw requestError('creating a conversation', 200, 'the response has no conversation id');
      this.#conversationId = created.id;
    }
    return this.#conversationId;
  }

  #itemsPath(id, query) {
    return `/conversations/${encodeURIComponent(id)}/items${query ? `?${new URLSearchParams(query)}` : ''}`;
  }

  /** The newest `limit` items (all without a limit), oldest first, in the API's shapes. */
  async #list(id, limit) {
    const all = limit === undefined;
    const listed = [];
    let after;
    for (;;) {
      const want = all ? PAGE : Math.min(PAGE, limit - listed.length);
      const query = { order: all ? 'asc' : 'desc', limit: String(want), ...(after ? { after } : {}) };
      const page = await this.#request('listing the conversation items', 'GET', this.#itemsPath(id, query));
      // A page without its list (an empty answer, a gateway's or a proxy's own) is no list: taken
      // for an empty one, the items synced here would be taken for deleted on another device.
      if (!Array.isArray(page?.data) || (page.has_more !== undefined && typeof page.has_more !== 'boolean')) {
        throw requestError('listing the conversation items', 200, 'no list of items');
      }
      const { data } = page;
      listed.push(...data);
      const next = page?.last_id ?? data.at(-1)?.id;
      // A server that leaves `has_more` out (one speaking the same API, whose pages may be
      // shorter than asked) is read until a page comes empty: taken for the end, the items past
      // the first page would be taken for deleted by a sync.
      const more = page.has_more ?? data.length > 0;
      if (!more || (!all && listed.length >= limit)) break;
      // A page that says there is more but gives nothing to go on from: a list cut short here
      // would have the items past it taken for deleted.
      if (data.length === 0 || typeof next !== 'string' || next === after) throw requestError('listing the conversation items', 200, 'a page says there are more but gives no cursor to them');
      after = next;
    }
    return all ? listed : listed.slice(0, limit).reverse();
  }

  /** Deletes item `itemId` of conversation `id`: whether it did (`false`: it was gone already,
   * deleted by another device, which is no error). */
  async #delete(id, itemId) {
    try {
      await this.#request('deleting a conversation item', 'DELETE', `/conversations/${encodeURIComponent(id)}/items/${encodeURIComponent(itemId)}`);
      return true;
    } catch (e) {
      if (e?.status !== 404) throw e;
      return false;
    }
  }

  getSessionId() {
    return this.#serial(() => this.#id());
  }

  // The hooks the SDK's run() asks a session for, as its own OpenAIConversationsSession answers.

  /** An assistant message replayed to the model goes without the conversation's id and
   * `providerData` (its `phase` kept), which a request outside the conversation cannot refer to. */
  prepareHistoryItemForModelInput(item) {
    if (item === null || typeof item !== 'object' || Array.isArray(item) || item.type !== 'message' || item.role !== 'assistant') return item;
    const { id: _id, providerData, provider_data: _providerData, ...rest } = item;
    if (rest.phase === undefined && providerData && typeof providerData === 'object' && !Array.isArray(providerData) && providerData.phase !== undefined) {
      rest.phase = providerData.phase;
    }
    return rest;
  }

  /** Items as this session stores them, to tell what a run already saved. */
  prepareHistoryItemsForPersistenceComparison(items) {
    try {
      return toConversationItems(items);
    } catch {
      return items;
    }
  }

  /** Reasoning items keep their ids when saved (their encrypted content refers to them). */
  preserveReasoningItemIdsForPersistence() {
    return true;
  }

  getItems(limit) {
    // As the other sessions read it: `<= 0` nothing, `Infinity` (or none) everything.
    const n = limit ?? Infinity;
    if (typeof n !== 'number' || !(n <= 0 || n === Infinity || Number.isInteger(n))) {
      return Promise.reject(sessionError('INVALID_LIMIT', `limit must be an integer, got ${String(limit)}`));
    }
    return this.#serial(async () => {
      // No conversation yet: nothing to read, and none is created for a read.
      const id = this.#conversationId;
      if (n <= 0 || !id) return [];
      const items = fromConversationItems(await this.#list(id, n === Infinity ? undefined : n));
      // One listed item can stand for several of the SDK's: the newest `limit` of those.
      return items.length > n ? items.slice(items.length - n) : items;
    });
  }

  addItems(items) {
    let converted;
    try {
      converted = toConversationItems(items);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#serial(async () => {
      if (converted.length === 0) return;
      const id = await this.#id();
      for (let i = 0; i < converted.length; i += ITEMS_PER_WRITE) {
        try {
          await this.#request('adding conversation items', 'POST', this.#itemsPath(id), { items: converted.slice(i, i + ITEMS_PER_WRITE) });
        } catch (e) {
          // The requests before this one stored their items: the message says how many.
          if (i > 0) e.message += ` (the first ${i} of the ${converted.length} items were stored)`;
          throw e;
        }
      }
    });
  }

  /** What the SDK's run() calls with a history that begins with a compaction item (the server
   * compacted it): appended, as the SDK's class does, since the conversation keeps its own
   * compaction. (Without it, the run would clear the conversation, deleting it for every device
   * that names it, and go on in a new one.) */
  replaceHistoryWithCompaction(items) {
    return this.addItems(items);
  }

  popItem() {
    return this.#serial(async () => {
      const id = this.#conversationId;
      // Another device may delete the newest item between the read and the delete (the delete
      // finds it gone): the item newest then is popped instead, so two pops remove two items.
      for (let tries = 0; id && tries < 5; tries++) {
        const [newest] = await this.#list(id, 1);
        if (!newest) return undefined;
        // (One listed item can stand for several of the SDK's: the newest of them.)
        // An item without an id cannot be deleted: returned, it would come back at the next read.
        if (typeof newest.id !== 'string') throw requestError('popping the newest item', 200, 'the newest item has no id');
        let deleted;
        try {
          deleted = await this.#delete(id, newest.id);
        } catch (e) {
          // No answer, or one that failed after the server may have deleted it (a timeout, a
          // 5xx): the item is looked up. Gone, the pop is done: an error would lose it, and a
          // pop tried again would remove the next one too.
          if (!(e?.status === 0 || e?.status === 408 || e?.status >= 500)) throw e;
          // (And no longer the newest: a conversation deleted meanwhile, or a server without
          // that lookup, answers 404 too.)
          const gone =
            (await this.#request('popping the newest item', 'GET', `/conversations/${encodeURIComponent(id)}/items/${encodeURIComponent(newest.id)}`).then(
              () => false,
              (lookup) => lookup?.status === 404,
            )) && (await this.#list(id, 1).then(([now]) => now?.id !== newest.id, () => false));
          if (!gone) throw e;
          deleted = true;
        }
        if (deleted) return fromConversationItems([newest]).at(-1);
      }
      // (Each of five newest items was gone before it could be deleted: other devices popping.
      // `undefined` would say the conversation is empty.)
      // (409, as a conflict is answered: a 404 would say the conversation is gone.)
      if (id) throw requestError('popping the newest item', 409, 'another device deleted the newest item each of 5 times; nothing was popped');
      return undefined;
    });
  }

  /** Deletes one item by the id the server gave it (`getItems()` items carry it); an item
   * already gone is not an error. */
  deleteItem(itemId) {
    if (typeof itemId !== 'string' || itemId === '') {
      const got = itemId === '' ? 'an empty string' : itemId === null ? 'null' : typeof itemId;
      const of = this.#conversationId ? `conversation "${this.#conversationId}"` : 'a conversation not created yet';
      return Promise.reject(sessionError('INVALID_OPTIONS', `deleteItem() of ${of} needs the id of an item (a non-empty string), got ${got}`));
    }
    return this.#serial(async () => {
      if (this.#conversationId) await this.#delete(this.#conversationId, itemId);
    });
  }

  clearSession() {
    return this.#serial(async () => {
      if (!this.#conversationId) return;
      try {
        await this.#request('deleting the conversation', 'DELETE', `/conversations/${encodeURIComponent(this.#conversationId)}`);
      } catch (e) {
        if (e?.status !== 404) throw e;
      }
      this.#conversationId = undefined;
    });
  }
}

// The mark by which `CompactionSession` refuses it (as the SDK's compaction session refuses the
// SDK's class): a compaction would clear the conversation, deleting it on every device.
Object.defineProperty(OpenAIConversationsSession.prototype, Symbol.for('agent-sessions.serverConversation'), { value: true });
