// Encryption at rest with WebCrypto: EncryptedSession wraps any Session and stores each item as
// AES-256-GCM ciphertext under a key derived per session; keys from a passphrase or kept on the
// device (non-extractable); and retention for whole sessions. All the cryptography is the
// browser's (crypto.subtle): this file only arranges it.
import { recordStore } from './records.js';
import { checkTarget, optionsOf, sessionError } from './errors.js';
import { copiedArguments, LONGEST } from './copy.js';
import { endListeners, QUIET, report, wrappedSubscribe } from './events.js';
import { sessionLockName } from './sync.js';

/** WebCrypto's `subtle`, which only a secure context has (https, or localhost). */
const subtle = () =>
  globalThis.crypto?.subtle ??
  (() => {
    throw sessionError('STORAGE_UNAVAILABLE', 'encryption needs WebCrypto (crypto.subtle), which only a secure context has (a page served over https, or from localhost)');
  })();
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A `JSON.stringify` replacer refusing what JSON would give back as something else: bytes (a
 * `Uint8Array`, an `ArrayBuffer`: the SDK's image and file tool outputs may hold them), which it
 * writes as an object of numbers; an instance of a class other than `Date` (a `Map`, a `Set`:
 * `{}`); a number that is not finite (`null`); `undefined` in an array (`null`). (A function
 * or symbol is refused before, as the items are copied.) A `Date` is written as its text (its `toJSON` runs first), and a field set to
 * `undefined` is left out, as JSON does. */
function binaryRefused(_, value) {
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) throw new TypeError(`it holds ${value.constructor.name} data, which JSON does not keep (give it as base64)`);
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`it holds the number ${value}, which JSON writes as null`);
  if (value === undefined && Array.isArray(this)) throw new TypeError('an array in it holds undefined, which JSON writes as null');
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new TypeError(`it holds a ${proto?.constructor?.name || 'class instance'}, which JSON does not give back as it was`);
  }
  return value;
}

/** How many of the newest stored items a write checks its key against, once per object. */
const KEY_CHECK_ITEMS = 8;

/** Stops the listener an `EncryptedSession` dropped without `close()` kept on its wrapped
 * session (see `#watch`). */
const dropped = new FinalizationRegistry((stop) => stop());

/** The changes that may have given the history another key: written whole (`changeKey`, an
 * import, a repair), pulled from another device by a sync round, cleared or deleted. */
const rewrites = (e) => e?.type === 'clear' || e?.type === 'delete' || (e?.type === 'replace' && ['history', 'import', 'repair', 'sync'].includes(e.change));

/** The salt of the per-session key derivation (HKDF-SHA256; its info is the session id). */
const SESSION_SALT = encoder.encode('agent-sessions/EncryptedSession/v1');

function toBase64(bytes) {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

function fromBase64(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

/** A master key as given (`CryptoKey` for HKDF, 32 bytes, or their base64), checked when the
 * session is made: the `CryptoKey`, or a copy of its 32 bytes (a caller that wipes its copy after
 * handing it over keeps this one whole). Throws `INVALID_KEY`. */
function keyMaterial(key) {
  if (typeof CryptoKey !== 'undefined' && key instanceof CryptoKey) {
    if (key.algorithm?.name !== 'HKDF' || !key.usages.includes('deriveKey')) {
      throw sessionError('INVALID_KEY', `options.key must be an HKDF CryptoKey usable with deriveKey, got a ${key.algorithm?.name} key for ${key.usages.join(', ')}`);
    }
    return key;
  }
  let bytes;
  if (typeof key === 'string') {
    try {
      bytes = fromBase64(key.trim());
    } catch {
      throw sessionError('INVALID_KEY', 'options.key is a string that is not base64');
    }
    // Only the base64 of the bytes as an encoder writes it, with or without its padding: a
    // passphrase of 43 letters and digits decodes to 32 bytes (used unstretched), but its last
    // character is one an encoder writes there only once in 16. A passphrase goes through
    // deriveKeyFromPassphrase.
    if (bytes.length === 32 && btoa(String.fromCharCode(...bytes)).replace(/=/g, '') !== key.replace(/[\s=]/g, '')) {
      throw sessionError('INVALID_KEY', 'options.key is a string that is not the base64 of 32 bytes as an encoder writes it; a passphrase goes through deriveKeyFromPassphrase');
    }
  } else if (key instanceof Uint8Array || key instanceof ArrayBuffer) {
    bytes = new Uint8Array(key).slice();
  } else {
    throw sessionError('INVALID_KEY', `options.key must be a CryptoKey, 32 bytes or their base64, got ${key === null ? 'null' : typeof key}`);
  }
  if (bytes.length !== 32) throw sessionError('INVALID_KEY', `options.key must be 32 bytes (256 bits), got ${bytes.length}`);
  return bytes;
}

/** A checked master key (`keyMaterial`) as an HKDF base key. */
async function baseKey(material) {
  return material instanceof Uint8Array ? subtle().importKey('raw', material, 'HKDF', false, ['deriveKey']) : material;
}

/** The AES-256-GCM key of one session, derived from the base key with HKDF-SHA256. */
function sessionKey(base, sessionId) {
  return subtle().deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: SESSION_SALT, info: encoder.encode(sessionId) },
    base,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  );
}

/** Where a wrapping session gives the digest of the transaction it stands for. */
const TRANSACTION_DIGEST = Symbol.for('agent-sessions.transactionDigest');
/** Marks a write to the wrapped session with the change event it is for this object's caller
 * (`'pop'`, `'mutations'`), where the wrapped write would be named by its own kind: a pop made as
 * a history transaction is still a pop to listeners. */
export const CHANGE_EVENT = Symbol.for('agent-sessions.changeEvent');

/** The salt of the derivation of the key of transaction digests: another salt than the AES
 * keys', so no session's AES key is another session's HMAC key. */
const DIGEST_SALT = encoder.encode('agent-sessions/EncryptedSession/digest/v1');

/** The HMAC-SHA256 key of one session's transaction digests (HKDF-SHA256; its info is the
 * session id). */
function digestKey(base, sessionId) {
  return subtle().deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: DIGEST_SALT, info: encoder.encode(sessionId) },
    base,
    { name: 'HMAC', hash: 'SHA-256', length: 256 },
    false,
    ['sign'],
  );
}

/** Whether `session` is one of this package's, which take any item in a history transaction
 * (the SDK's check that items are its own shapes, which an encrypted item is not). */
function takesTransactions(session) {
  try {
    return session[Symbol.for('agent-sessions.transactionUsage')] === true && typeof session.applyHistoryTransaction === 'function';
  } catch {
    // A session that throws on being asked is not one of ours.
    return false;
  }
}

/** Refuses `list` (named `name`) where the library refuses it unread for its length (`code`),
 * before anything here walks it. */
function notTooLong(list, name, code) {
  if (Array.isArray(list) && list.length > LONGEST) throw sessionError(code, `${name} has ${list.length} elements, more than the 1,048,576 one call takes`);
}

/** The arguments copied now (`copiedArguments`). One that holds what cannot be stored (a
 * function, a DOM node) or is a Proxy (the state objects of Vue, MobX or Valtio are) is refused
 * now with `code`, as the wrapped session refuses it: passed on, it would be read only when the
 * call's turn comes (after the calls before it, and the key), and encrypted as the caller's
 * object is by then; JSON would drop a function without a word. */
function copiedNow(args, code, call, what = 'an item') {
  return copiedArguments(args, (error) => {
    throw sessionError(code, `${call}: ${what} holds what cannot be stored (a function, a DOM node) or is a Proxy (Vue, MobX or Valtio state): hand over a plain copy; nothing was written (${error.message})`);
  });
}

/** `then(copies)` of `args` copied now (`copiedNow`), or a rejection with what refused them. */
function withCopies(args, code, call, then, what) {
  let copies;
  try {
    copies = copiedNow(args, code, call, what);
  } catch (error) {
    return Promise.reject(error);
  }
  return then(copies);
}

/** The plaintext transaction of `applyHistoryTransaction`'s argument: `{ type, items }` or
 * `{ type, expectedSuffix, replacement }`, each field an array, no other field. The wrapped
 * session checks the rest (the operation id, the items) before it writes anything. */
function transactionParts(args) {
  const t = args?.transaction;
  const fields = t !== null && typeof t === 'object' ? Object.keys(t).sort().join() : '';
  // The lists copied now (the call waits for the calls before it): a caller that changes its
  // items afterwards does not change what is written.
  let parts = null;
  for (const name of ['items', 'expectedSuffix', 'replacement']) notTooLong(t?.[name], `transaction.${name}`, 'INVALID_TRANSACTION');
  if (fields === 'items,type' && t.type === 'append_items') {
    const [items] = copiedNow([t.items], 'INVALID_TRANSACTION', 'applyHistoryTransaction');
    parts = { type: t.type, items };
  } else if (fields === 'expectedSuffix,replacement,type' && t.type === 'replace_suffix') {
    const [expectedSuffix, replacement] = copiedNow([t.expectedSuffix, t.replacement], 'INVALID_TRANSACTION', 'applyHistoryTransaction');
    parts = { type: t.type, expectedSuffix, replacement };
  }
  const isItem = (item) => item !== null && typeof item === 'object' && !Array.isArray(item);
  if (!parts || !Object.values(parts).slice(1).every((list) => Array.isArray(list) && list.every(isItem))) {
    throw sessionError(
      'INVALID_TRANSACTION',
      'applyHistoryTransaction: transaction must be { type: "append_items", items } or { type: "replace_suffix", expectedSuffix, replacement }, with arrays of items (objects), and nothing else',
    );
  }
  // Each list's items as canonical text, made once: compared with what is stored, remembered
  // as what the object saved, and the transaction's own canonical text (what its digest signs)
  // is made of them.
  const texts = {};
  try {
    for (const name of Object.keys(parts).slice(1)) texts[name] = parts[name].map(canonical);
  } catch (error) {
    throw sessionError('INVALID_TRANSACTION', `applyHistoryTransaction: the transaction cannot be written as JSON (${error?.message ?? error}); nothing was written`);
  }
  const members = Object.keys(texts).map((name) => `"${name}":[${texts[name].join(',')}]`);
  return { ...parts, texts, text: `{${members.join(',')},"type":${JSON.stringify(parts.type)}}` };
}

/** The `replace_function_call` mutations of `applyHistoryMutations`' argument, in order;
 * mutations of another type are left out, as the SDK's `MemorySession` ignores them. */
function mutationParts(args) {
  const mutations = args?.mutations;
  const parts = Array.isArray(mutations) && mutations.every((m) => m !== null && typeof m === 'object')
    ? mutations.filter((m) => m.type === 'replace_function_call')
    : null;
  const writable = (item) => {
    try {
      // (Bytes too are refused here, as the transaction's, not when they are encrypted.)
      return JSON.stringify(item, binaryRefused) !== undefined;
    } catch {
      return false;
    }
  };
  if (!parts || !parts.every((m) => typeof m.callId === 'string' && m.replacement?.type === 'function_call' && writable(m.replacement))) {
    throw sessionError(
      'INVALID_TRANSACTION',
      'applyHistoryMutations: mutations must be an array of objects, each replace_function_call with a string callId and a function_call replacement JSON can write; nothing was changed',
    );
  }
  return parts;
}

/** Whether `value` has the methods a Session must have. */
function isSession(value) {
  try {
    return value !== null && typeof value === 'object' && ['getItems', 'addItems', 'popItem', 'clearSession'].every((m) => typeof value[m] === 'function');
  } catch {
    return false;
  }
}

/**
 * A Session that encrypts every item before `inner` stores it: AES-256-GCM with a fresh 96-bit
 * IV per item, under a key derived per session (HKDF-SHA256 from `key`, the session id as its
 * info), the session id as additional data (an item copied into another session does not
 * decrypt). Stored form: `{ __enc: 1, iv, ct }` (base64); the plaintext is the JSON of
 * `{ item, at }` (`at`: when it was added, for the TTL). Items that do not decrypt are skipped
 * and counted (`lastSkipped`, `onUndecryptable`); with `ttl` (seconds), expired items are left
 * out of reads and `purgeExpired()` deletes them.
 */
export class EncryptedSession {
  #inner;
  #key;
  #ttl;
  #now;
  #onUndecryptable;
  #sessionId;
  #tail = Promise.resolve();
  lastSkipped = 0;

  constructor(inner, options = {}) {
    if (!isSession(inner)) {
      throw sessionError('INVALID_SESSION', 'EncryptedSession wraps a session: an object with getItems, addItems, popItem and clearSession');
    }
    const { key, ttl, now = Date.now, onUndecryptable } = optionsOf(options, 'EncryptedSession', 'key ttl now onUndecryptable');
    if (ttl !== undefined && !(typeof ttl === 'number' && Number.isFinite(ttl) && ttl > 0)) {
      throw sessionError('INVALID_OPTIONS', `options.ttl must be a positive number of seconds, got ${String(ttl)}`);
    }
    if (typeof now !== 'function') throw sessionError('INVALID_OPTIONS', 'options.now must be a function returning milliseconds since the epoch');
    if (onUndecryptable !== undefined && typeof onUndecryptable !== 'function') throw sessionError('INVALID_OPTIONS', 'options.onUndecryptable must be a function');
    if (key === undefined) throw sessionError('INVALID_KEY', 'options.key is required: a CryptoKey, 32 bytes or their base64');
    // Refused at once when it cannot be a key; derived (asynchronously) on first use.
    const material = keyMaterial(key);
    this.#inner = inner;
    this.#ttl = ttl;
    // A clock that gives something else (a `Date`) would store times no TTL reads: the call that
    // reads it is refused, nothing written.
    this.#now = () => {
      const t = now();
      if (typeof t !== 'number' || !Number.isFinite(t)) throw sessionError('INVALID_OPTIONS', `options.now must return milliseconds since the epoch, a finite number; it returned ${typeof t === 'number' ? t : t === null ? 'null' : typeof t}`);
      return t;
    };
    this.#onUndecryptable = onUndecryptable;
    this.#key = null;
    this.#keyGiven = material;
    // A history transaction needs the wrapped session to take encrypted items in one (this
    // package's sessions): elsewhere the method is absent, so a runner saves with addItems.
    const transactions = takesTransactions(inner);
    // (Without `replaceHistory`, a compaction over it replaces the history as over a session
    // without it.)
    const replaces = typeof inner.replaceHistory === 'function';
    if (!transactions) this.applyHistoryTransaction = undefined;
    // Our runner then saves a run's usage with its turn, as through the wrapped session.
    else Object.defineProperty(this, Symbol.for('agent-sessions.transactionUsage'), { value: true });
    if (!replaces) {
      this.replaceHistory = undefined;
      this.replaceHistoryWithCompaction = undefined;
    }
    if (!transactions || !replaces) this.applyHistoryMutations = undefined;
    // A run's usage that has no save to go with (a failed or refused run) is stored through the
    // wrapped session, in call order: numbers only, nothing to seal.
    if (typeof inner.storeRunUsage === 'function') {
      Object.defineProperty(this, 'storeRunUsage', { configurable: true, writable: true, value: (usage) => this.#serial(() => inner.storeRunUsage(usage)) });
    }
    // The wrapped session's changes, where it tells them (ours: from any tab): what changed,
    // never an item, to be read again through this object. Bound, as theirs is; `close()` stops
    // the listeners.
    if (typeof inner.subscribe === 'function') {
      const subscribe = wrappedSubscribe((listener) => inner.subscribe(listener), this.#stops, () => this.#closed, 'EncryptedSession');
      Object.defineProperty(this, 'subscribe', { configurable: true, writable: true, value: subscribe });
    }
  }

  /** Takes the key as fitting the history (`fits`) or not, as a read or check begun at `epoch`
   * found it: not where a rewrite was heard since (see `#watch`, `#rewritten`). A rewrite of the
   * history (another tab's `changeKey`, while a run of the SDK here waited for its answer) has
   * the next write check the key again, which would else go under the old key, beside the new
   * one's items. */
  #fits(fits, epoch) {
    this.#keyFits = fits && epoch === this.#epoch;
  }

  /** Listens for rewrites from now on, until `close()`, where the wrapped session tells its
   * changes (a read or check begins with it, so that one heard while it reads counts); returns
   * the epoch that read or check is taken at (see `#fits`). */
  #watch() {
    if (this.#hearing || this.#closed || typeof this.#inner.subscribe !== 'function') return this.#epoch;
    let stop;
    try {
      stop = EncryptedSession.#listen(this.#inner, new WeakRef(this));
    } catch {
      // (A wrapped session closed already, whose writes refuse too.)
    }
    // (Asked once: a session whose `subscribe` gives no removal, or throws, is not asked again;
    // ours throw only once closed, for good.)
    this.#hearing = typeof stop === 'function' ? stop : () => {};
    // An object dropped without `close()` is still collected (the listener holds it weakly),
    // and its listener is removed then.
    if (typeof stop === 'function') dropped.register(this, stop, this);
    return this.#epoch;
  }

  /** Listens to `inner` for rewrites, for the object `ref` holds (made here, apart from the
   * object's other closures, so that the listener does not hold it). */
  static #listen(inner, ref) {
    const listener = (e) => rewrites(e) && ref.deref()?.#rewritten();
    // (It keeps no Node process running by itself.)
    listener[QUIET] = true;
    return inner.subscribe(listener);
  }

  #rewritten() {
    this.#epoch += 1;
    this.#keyFits = false;
  }

  #unhear() {
    const stop = this.#hearing;
    this.#hearing = null;
    if (stop) {
      dropped.unregister(this);
      stop();
    }
  }

  /** How many rewrites of the history were heard (see `#fits`). */
  #epoch = 0;
  /** The removal of the rewrite listener, from the first read or check until `close()`. */
  #hearing = null;

  #keyGiven;

  /** The wrapped session's id, database and owner, where it has them (so a run on it holds
   * the same cross-tab lock as a run on the wrapped session). */
  get sessionId() {
    return this.#inner.sessionId;
  }

  get dbName() {
    return this.#inner.dbName;
  }

  get userId() {
    return this.#inner.userId;
  }

  /** The wrapped session's settings (the window its reads take by default), which
   * `getItems()` applies after decrypting. */
  get settings() {
    return this.#inner.settings;
  }

  async #sessionKey() {
    if (!this.#key) {
      this.#sessionId ??= await this.#inner.getSessionId?.() ?? this.#inner.sessionId;
      if (typeof this.#sessionId !== 'string') throw sessionError('INVALID_SESSION', 'the wrapped session has no session id');
      const base = baseKey(this.#keyGiven);
      this.#key = base.then((b) => sessionKey(b, this.#sessionId));
      this.#digestKey = base.then((b) => digestKey(b, this.#sessionId));
      // A bad key is refused each time it is used, not kept as a rejected promise.
      this.#key.catch(() => (this.#key = null));
      this.#digestKey.catch(() => {});
    }
    return this.#key;
  }

  /** The HMAC key the digests of history transactions are made with (derived with the session
   * key, from the same base key). */
  #digestKey;

  /** Calls take effect in call order; after `close()`, none is taken (`CLOSED`). */
  #serial(call) {
    if (this.#closed) {
      const id = this.#sessionId ?? this.#inner.sessionId;
      const of = typeof id === 'string' ? ` of session "${id}"` : '';
      return Promise.reject(sessionError('CLOSED', `the EncryptedSession${of} was closed (its key forgotten); create a new one to use the session again`));
    }
    const run = this.#tail.then(call);
    this.#tail = run.catch(() => {});
    return run;
  }

  /** A write other than a history transaction, in call order: the object forgets what its last
   * transaction saved (`#newest`), since the history no longer ends with it. */
  #write(call) {
    return this.#serial(() => {
      this.#newest = null;
      return call();
    });
  }

  /** Encrypts `items` (each with when it was added: `at`, one time or one per item), every one
   * before anything is written: a failure writes nothing. The plaintext is JSON: an item JSON
   * cannot write (a cycle, a BigInt, a getter that throws) is refused as `INVALID_ITEM`, named
   * by its index among the caller's items (`indices`, where `items` are some of them). */
  async #sealAll(key, items, at, indices) {
    const texts = items.map((item, i) => {
      const proto = item !== null && typeof item === 'object' && Object.getPrototypeOf(item);
      const n = indices?.[i] ?? i;
      // A class instance (a Date, a Map) would come back as JSON makes it, not as given.
      if (proto !== Object.prototype && proto !== null) throw sessionError('INVALID_ITEM', `items[${n}] is not a plain object`);
      try {
        return JSON.stringify({ item, at: Array.isArray(at) ? at[i] : at }, binaryRefused);
      } catch (error) {
        throw sessionError('INVALID_ITEM', `items[${n}] cannot be written as JSON to be encrypted (${error?.message ?? error})`);
      }
    });
    return Promise.all(texts.map((text) => this.#seal(key, text)));
  }

  async #seal(key, text) {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const plain = encoder.encode(text);
    const ct = new Uint8Array(await subtle().encrypt({ name: 'AES-GCM', iv, additionalData: encoder.encode(this.#sessionId) }, key, plain));
    return { __enc: 1, iv: toBase64(iv), ct: toBase64(ct) };
  }

  /** The item of a stored envelope with when it was added, or `null` when it does not decrypt. */
  async #open(key, stored) {
    try {
      if (stored?.__enc !== 1 || typeof stored.iv !== 'string' || typeof stored.ct !== 'string') return null;
      const plain = await subtle().decrypt(
        { name: 'AES-GCM', iv: fromBase64(stored.iv), additionalData: encoder.encode(this.#sessionId) },
        key,
        fromBase64(stored.ct),
      );
      const { item, at } = JSON.parse(decoder.decode(plain));
      return item !== null && typeof item === 'object' ? { item, at } : null;
    } catch {
      return null;
    }
  }

  #expired(at) {
    return this.#ttl !== undefined && typeof at === 'number' && this.#now() - at > this.#ttl * 1000;
  }

  /** Whether this object's key was seen to open an item of the session, or the session was
   * seen to hold no encrypted item: until then, a write first checks it (`#checkKey`). */
  #keyFits = false;

  /** Refuses a write under a key that opens none of the session's newest encrypted items (a
   * mistyped passphrase, another user's key): written, the history would hold items under two
   * keys, part of it unreadable whichever key is used afterwards. Checked once per object, and
   * not at all after a read that opened an item; items that are not encrypted are not counted. */
  async #checkKey(key, doing) {
    if (this.#keyFits) return;
    const epoch = this.#watch();
    const encrypted = (items) => items.filter((s) => s?.__enc === 1);
    const read = await this.#inner.getItems(KEY_CHECK_ITEMS);
    let newest = encrypted(read);
    // Newest items all in clear (written without the key, a device that synced plaintext): the
    // newest encrypted items further back decide, else a wrong key would write beside them.
    if (newest.length === 0 && read.length >= KEY_CHECK_ITEMS) {
      newest = encrypted(await this.#inner.getItems(Number.MAX_SAFE_INTEGER)).slice(-KEY_CHECK_ITEMS);
    }
    const opened = await Promise.all(newest.map((s) => this.#open(key, s)));
    if (newest.length > 0 && opened.every((o) => o === null)) {
      this.#fits(false, epoch);
      throw sessionError('INVALID_KEY', `${doing}: none of the newest ${newest.length} encrypted items of session "${this.#sessionId}" decrypts with this key (a wrong key or passphrase); nothing was written (items this key wrote would leave the history under two keys). A history that no key opens any more can be emptied with clearSession()`);
    }
    // (A rewrite heard meanwhile: checked again at the next write.)
    this.#fits(true, epoch);
  }

  /** Decrypts stored items: the live ones, in order, and how many did not decrypt. Items of the
   * history that decrypt show the key fits it; the archive's do not (a history given a new key
   * keeps its archive under the old one, which is then no key to write with). */
  async #read(stored, history = true, epoch = this.#epoch) {
    const key = await this.#sessionKey();
    const opened = await Promise.all(stored.map((s) => this.#open(key, s)));
    const skipped = opened.filter((o) => o === null).length;
    // A read that opens none of the encrypted items it got (another object gave the history a
    // new key since this one's check) has the next write check the key again.
    if (history) this.#fits(skipped < opened.length || (this.#keyFits && !stored.some((s) => s?.__enc === 1)), epoch);
    this.lastSkipped = skipped;
    if (skipped && this.#onUndecryptable) {
      try {
        // (A promise it returns is not awaited; its rejection is reported, as a throw is.)
        const returned = this.#onUndecryptable(skipped, { source: history ? 'history' : 'archive' });
        if (typeof returned?.then === 'function') Promise.resolve(returned).catch(report);
      } catch (error) {
        report(error);
      }
    }
    return opened.filter((o) => o !== null && !this.#expired(o.at)).map((o) => o.item);
  }

  getSessionId() {
    return this.#serial(async () => {
      // (A key WebCrypto refuses still leaves the id to give.)
      await this.#sessionKey().catch((error) => {
        if (typeof this.#sessionId !== 'string') throw error;
      });
      return this.#sessionId;
    });
  }

  /** The newest items within `limit`, or the wrapped session's default window. A window of
   * turns (`settings.turns` of ours) is taken here, after decrypting: the stored items show no
   * role, so the wrapped session cannot tell where a turn starts. */
  getItems(limit) {
    return this.#serial(async () => {
      const turns = limit == null ? this.#turnWindow() : undefined;
      // (`null`, no limit, is given on as `undefined`: the SDK's sessions read `null` as 0.)
      // (Rewrites are listened for from before the read: see `#fits`.)
      const epoch = this.#watch();
      if (turns === undefined) return this.#read(await this.#inner.getItems(limit ?? undefined), true, epoch);
      const items = await this.#read(await this.#inner.getItems(Number.MAX_SAFE_INTEGER), true, epoch);
      return newestTurns(items, turns);
    });
  }

  /** The wrapped session's default window of turns, if it reads one. */
  #turnWindow() {
    try {
      const turns = this.#inner.settings?.turns;
      return Number.isInteger(turns) && turns >= 0 ? turns : undefined;
    } catch {
      return undefined;
    }
  }

  addItems(given) {
    // Copied now, as the wrapped session copies them when called: this call waits for the ones
    // before it, and the caller may reuse its array meanwhile.
    return withCopies([given], 'INVALID_ITEM', 'addItems', ([items]) => this.#write(async () => {
      if (!Array.isArray(items)) throw sessionError('INVALID_ITEM', `items must be an array, got ${items === null ? 'null' : typeof items}`);
      notTooLong(items, 'items', 'INVALID_ITEM');
      if (items.length === 0) return;
      const key = await this.#sessionKey();
      const sealed = await this.#sealAll(key, items, this.#now());
      await this.#checkKey(key, 'addItems');
      await this.#inner.addItems(sealed);
    }));
  }

  /** Removes and returns the newest item reads show. It is decrypted before anything is
   * removed: the newest stored item not decrypting (a wrong key, a damaged item) rejects with
   * `INVALID_KEY` and removes nothing. Expired items newer than it (never shown) go with it, in
   * the same write; a history that shows none is left as it is. Over a session with history
   * transactions (ours), the removal checks the history still ends with the items read, so
   * another tab's write in between is never removed. */
  popItem() {
    return this.#write(async () => {
      // (The clock is read before anything is removed: one that gives no number refuses the pop.)
      this.#now();
      const key = await this.#sessionKey();
      for (let mismatches = 0; ; ) {
        const newest = await this.#newestShown(key);
        // (A history whose items have all expired shows none: nothing to pop, nothing removed;
        // `purgeExpired` deletes them.)
        if (newest === null) return undefined;
        // Another tab wrote in between (the items read are no longer the newest): read again.
        if (await this.#removeNewest(newest.suffix, mismatches < 5)) return newest.item;
        mismatches += 1;
      }
    });
  }

  /**
   * The SDK's history transaction (`append_items`, `replace_suffix`), over a wrapped session of
   * this package (others do not take encrypted items in a transaction: the method is absent
   * there, as on a session without it). The items are encrypted as `addItems` encrypts them and
   * the wrapped session applies it in one transaction. `expectedSuffix` is compared here, with
   * the decrypted newest items, and the stored items read are what the wrapped session checks
   * again (so a write from anywhere in between is never replaced: `SUFFIX_MISMATCH`). A retried
   * `operationId` is a no-op with the same transaction and `TRANSACTION_CONFLICT` with another:
   * the operation log keeps a digest of the plaintext transaction keyed by the session's key
   * (ciphertext differs each time it is written; a plain hash would let anyone with the
   * database test a guess at the text). An undecryptable or expired item among the newest is a
   * mismatch.
   */
  applyHistoryTransaction(args) {
    // Read now, as the wrapped session reads its arguments when called: a caller that reuses the
    // object for its next operation does not change this one.
    let plain, operationId, usage;
    try {
      plain = transactionParts(args);
      ({ operationId, usage } = args);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#serial(async () => {
      const key = await this.#sessionKey();
      const digest = await this.#digest(plain.text);
      const now = this.#now();
      const seal = (items, name) =>
        this.#sealAll(key, items, now).catch((error) => {
          // Named as the wrapped session names a bad item of a transaction.
          if (error?.code === 'INVALID_ITEM') throw sessionError('INVALID_TRANSACTION', `applyHistoryTransaction: transaction.${name}: ${error.message}`);
          throw error;
        });
      const send = (transaction) => {
        const sent = { operationId, transaction, [TRANSACTION_DIGEST]: digest };
        if (usage !== undefined) sent.usage = usage;
        return this.#inner.applyHistoryTransaction(sent);
      };
      const known = this.#newest;
      this.#newest = null;
      if (plain.type === 'append_items') {
        const items = await seal(plain.items, 'items');
        await this.#checkKey(key, 'applyHistoryTransaction');
        await send({ type: 'append_items', items });
        this.#newest = { stored: items, texts: plain.texts.items, ats: items.map(() => now) };
        return;
      }
      const { expectedSuffix: expected, replacement } = plain;
      const { expectedSuffix: wanted, replacement: replacementTexts } = plain.texts;
      const count = wanted.length;
      // `newest`: the stored items the suffix is compared with (the newest `count`), what each
      // shows (its canonical text, `null` when it does not decrypt) and when it was added.
      const replace = async ({ stored, texts, ats }) => {
        const same = stored.length === count && texts.every((text, i) => text !== null && !this.#expired(ats[i]) && text === wanted[i]);
        // The replacement's first items that repeat the suffix (a runner saving again keeps what
        // it saved and adds to it) are written back as stored, not encrypted again: the wrapped
        // session sees an append, not a rewrite, and their TTL goes on.
        let kept = 0;
        while (same && kept < count && kept < replacement.length && replacementTexts[kept] === wanted[kept]) kept++;
        const fresh = await seal(replacement.slice(kept), 'replacement');
        // An empty suffix compares nothing: the key is checked as an append's is.
        if (count === 0) await this.#checkKey(key, 'applyHistoryTransaction');
        const written = [...stored.slice(0, kept), ...fresh];
        await send({
          type: 'replace_suffix',
          // On a mismatch the wrapped session is still asked, with a suffix no stored item
          // equals: it says whether the operation was applied before (a retry after its history
          // moved on) and refuses it otherwise, as it would a write in between.
          expectedSuffix: same ? stored : expected.map(() => ({ __enc: 1, iv: '', ct: '' })),
          replacement: written,
        });
        this.#newest = { stored: written, texts: replacementTexts, ats: [...ats.slice(0, kept), ...fresh.map(() => now)] };
      };
      // What this object wrote last is what it compares with, without reading it back (a
      // runner's save follows its own earlier save): the wrapped session checks those stored
      // items in its transaction, so after any other write (another tab, another object) it
      // refuses, and the suffix is read, decrypted and compared after all.
      if (count > 0 && known && known.stored.length >= count && known.texts.slice(-count).every((text, i) => text === wanted[i])) {
        try {
          return await replace({ stored: known.stored.slice(-count), texts: known.texts.slice(-count), ats: known.ats.slice(-count) });
        } catch (error) {
          if (error?.code !== 'SUFFIX_MISMATCH') throw error;
        }
      }
      const stored = count === 0 ? [] : await this.#inner.getItems(count);
      const opened = await Promise.all(stored.map((s) => this.#open(key, s)));
      await replace({ stored, texts: opened.map((o) => (o === null ? null : canonical(o.item))), ats: opened.map((o) => o?.at) });
    });
  }

  /** The items this object's last history transaction left newest, as stored, with what they
   * show and when they were added; `null` after any other write of this object. */
  #newest = null;

  /**
   * The SDK's history rewrite (`replace_function_call`: the first `function_call` with the
   * `callId` becomes the replacement, encrypted, and later ones with that id go; other mutation
   * types are ignored, as in the SDK), over a wrapped session of this package, as one
   * `replaceHistory` conditioned on the stored items it read: a write from anywhere in between
   * makes it `SUFFIX_MISMATCH`, nothing changed. The other items are written back as they were
   * stored (not encrypted again; their TTL goes on); the replacement keeps when the call it
   * replaces was added. Items that do not decrypt are kept, never matched.
   */
  applyHistoryMutations(args) {
    let mutations;
    try {
      // Copied now, as the other writes' arguments are: what the caller changes afterwards is
      // not what is stored.
      mutations = mutationParts(copiedNow([args], 'INVALID_TRANSACTION', 'applyHistoryMutations')[0]);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#write(async () => {
      if (mutations.length === 0) return;
      const key = await this.#sessionKey();
      const stored = await this.#inner.getItems(Number.MAX_SAFE_INTEGER);
      const opened = await Promise.all(stored.map((s) => this.#open(key, s)));
      // Each entry: the stored item (what reads show of it: nothing when it does not decrypt or
      // has expired, so it is never matched), or a replacement to encrypt with when its call
      // was added.
      let entries = stored.map((s, i) => {
        const o = opened[i];
        return { stored: s, item: o && !this.#expired(o.at) ? o.item : undefined, at: o?.at };
      });
      let changed = false;
      for (const { callId, replacement } of mutations) {
        let replaced = false;
        entries = entries.flatMap((e) => {
          if (e.item?.type !== 'function_call' || e.item.callId !== callId) return [e];
          changed = true;
          if (replaced) return [];
          replaced = true;
          return [{ item: replacement, at: e.at ?? this.#now() }];
        });
      }
      if (!changed) return;
      const fresh = entries.filter((e) => !e.stored);
      const sealed = await this.#sealAll(key, fresh.map((e) => e.item), fresh.map((e) => e.at));
      const items = entries.map((e) => e.stored ?? sealed[fresh.indexOf(e)]);
      await this.#inner.replaceHistory(items, { archive: false, expectedItems: stored, [CHANGE_EVENT]: 'mutations' });
    });
  }

  /** HMAC-SHA256 of `text` (the plaintext transaction's canonical JSON), base64. */
  async #digest(text) {
    const mac = await subtle().sign('HMAC', await this.#digestKey, encoder.encode(text));
    return toBase64(new Uint8Array(mac));
  }

  /** The newest item reads show (`item`) and the stored items from it on (`suffix`: it and the
   * expired ones after it, never shown), read newest first, more at a time until one has not
   * expired; `null` when none is left. An item that does not open on the way is `INVALID_KEY`. */
  async #newestShown(key) {
    for (let n = 1; ; n *= 8) {
      // (Each read from its newest item: another tab may have written or removed items since
      // the one before.)
      const stored = await this.#inner.getItems(n);
      for (let i = stored.length - 1; i >= 0; i--) {
        const opened = await this.#open(key, stored[i]);
        if (opened === null) {
          // (One stored in clear, by a write that did not go through an EncryptedSession, is
          // told apart: the key is not at fault.)
          const why = stored[i]?.__enc === 1 ? 'does not decrypt with this key (a wrong key, or an item damaged or copied from another session)' : 'is not encrypted (written without an EncryptedSession; pop it through the wrapped session)';
          throw sessionError('INVALID_KEY', `popItem: the newest ${i === stored.length - 1 ? 'item' : 'item before the expired ones'} of session "${this.#sessionId}" ${why}; nothing was removed`);
        }
        if (!this.#expired(opened.at)) return { item: opened.item, suffix: stored.slice(i) };
      }
      if (stored.length < n) return null;
    }
  }

  /** Removes the newest stored items, `suffix` (as read), in one write: only if they still are,
   * where the wrapped session can say so (this package's sessions, which take any item in a
   * history transaction; the SDK's check that items are its own shapes, which an encrypted item
   * is not), else one pop each. Whether it did (`false`: they are no longer the newest, where
   * `retry` allows asking again). */
  async #removeNewest(suffix, retry) {
    if (!takesTransactions(this.#inner)) {
      for (const _ of suffix) await this.#inner.popItem();
      return true;
    }
    try {
      await this.#replaceSuffix(suffix, [], 'pop');
      return true;
    } catch (error) {
      if (error?.code !== 'SUFFIX_MISMATCH') throw error;
      if (retry) return false;
      // Named as the call it was (the operation is this object's own, unknown to the caller).
      throw sessionError('SUFFIX_MISMATCH', `popItem: session "${this.#sessionId}" was written to each time its newest items were about to be removed (other tabs writing); nothing was removed`);
    }
  }

  /** A `replace_suffix` of the wrapped session under an operation id of its own, its change
   * event named `event` where given. */
  #replaceSuffix(expectedSuffix, replacement, event) {
    return this.#inner.applyHistoryTransaction({ operationId: `encrypted:${crypto.randomUUID()}`, transaction: { type: 'replace_suffix', expectedSuffix, replacement }, [CHANGE_EVENT]: event });
  }

  clearSession() {
    return this.#write(() => this.#inner.clearSession());
  }

  /**
   * Replaces the whole history by `items`, encrypted, in one call of the wrapped session's
   * `replaceHistory` (this package's sessions do it in one transaction; `{ archive }` passes
   * through). With `expectedItems` (what a compaction read), only if the history still shows
   * exactly those items, else `SUFFIX_MISMATCH` and nothing changes: the stored items read here
   * are handed on as the wrapped session's `expectedItems`, so a write from anywhere in between
   * is never replaced. An item that was in the history keeps when it was added (its TTL does not
   * start again). Also how a plaintext session is encrypted in place: read its items, replace
   * them through an EncryptedSession over it.
   */
  replaceHistory(givenItems, givenOptions = {}) {
    return this.#replace(givenItems, givenOptions, 'replaceHistory');
  }

  /** How the SDK's runner replaces the history when a model's output carries a compaction item
   * (the SDK's clear and add otherwise): `replaceHistory` with the replaced items archived, told
   * as a compaction, and refused under a key that opens none of the session's items (the SDK
   * calls it after reading an empty history, as a wrong key reads it). */
  replaceHistoryWithCompaction(items) {
    return this.#replace(items, { archive: true }, 'replaceHistoryWithCompaction');
  }

  #replace(givenItems, givenOptions, what) {
    const compaction = what === 'replaceHistoryWithCompaction';
    // What the write is told as (a compaction this package's runner makes through `replaceHistory`).
    let named = compaction ? 'compaction' : undefined;
    try {
      named ??= givenOptions?.[CHANGE_EVENT];
    } catch {
      // (Options that cannot be read are refused below.)
    }
    // Copied now (see addItems); options named as the wrapped session names them.
    const write = ([items], [options]) => this.#write(async () => {
      if (typeof this.#inner.replaceHistory !== 'function') {
        throw sessionError('INVALID_SESSION', 'replaceHistory needs a wrapped session that has it (this package\'s sessions do)');
      }
      if (!Array.isArray(items)) throw sessionError('INVALID_ITEM', `items must be an array, got ${items === null ? 'null' : typeof items}`);
      // Options that are no object, or an `archive` that is no boolean, are refused before
      // anything is read or written, as the wrapped session refuses them.
      optionsOf(options, 'replaceHistory', 'archive expectedItems');
      if (options?.archive != null && typeof options.archive !== 'boolean') {
        throw sessionError('INVALID_OPTIONS', `replaceHistory: options.archive must be a boolean, got ${typeof options.archive}; nothing changed`);
      }
      const expected = options?.expectedItems;
      let hidden = false;
      notTooLong(items, 'items', 'INVALID_ITEM');
      notTooLong(expected, 'options.expectedItems', 'INVALID_OPTIONS');
      if (expected !== undefined && expected !== null && !Array.isArray(expected)) {
        throw sessionError('INVALID_OPTIONS', `options.expectedItems must be an array of items, got ${typeof expected}`);
      }
      const key = await this.#sessionKey();
      if (compaction) await this.#checkKey(key, what);
      const stored = await this.#inner.getItems(Number.MAX_SAFE_INTEGER);
      const opened = await Promise.all(stored.map((s) => this.#open(key, s)));
      if (Array.isArray(expected)) {
        let texts;
        try {
          texts = expected.map(canonical);
        } catch (e) {
          throw sessionError('INVALID_OPTIONS', `options.expectedItems must be items JSON can write (${e?.message ?? e}); nothing changed`);
        }
        // The history as this object reads it, or with the items it cannot open (in clear, under
        // another key) as they are stored: what a history encrypted in place, or given a new
        // key, was read as.
        const shown = (all) =>
          opened.flatMap((o, i) => {
            if (o !== null) return this.#expired(o.at) ? [] : [o.item];
            return all ? [stored[i]] : [];
          });
        const same = (items) => {
          try {
            return items.length === texts.length && items.every((item, i) => canonical(item) === texts[i]);
          } catch {
            return false; // (stored in clear as JSON cannot write it: not what was read)
          }
        };
        if (!same(shown(true))) {
          if (!same(shown(false))) {
            throw sessionError('SUFFIX_MISMATCH', `replaceHistory: session "${this.#sessionId}" no longer holds exactly options.expectedItems (written to since they were read); nothing changed`);
          }
          // What was read left out items this key does not open. None of the encrypted ones
          // opening is a wrong key (its read was empty): replacing would delete the history.
          const sealed = stored.filter((s, i) => s?.__enc === 1 && opened[i] === null).length;
          if (sealed && !opened.some((o) => o !== null)) {
            throw sessionError('INVALID_KEY', `replaceHistory: none of the ${sealed} encrypted items of session "${this.#sessionId}" decrypts with this key (a wrong key or passphrase), so options.expectedItems cannot name them; nothing changed`);
          }
          // The others are kept in the archive, as they are stored: never deleted unseen.
          if (options?.archive === false) {
            throw sessionError('INVALID_OPTIONS', `${what}: options.expectedItems leave out ${opened.filter((o) => o === null).length} items of session "${this.#sessionId}" this key does not open (stored in clear, or under another key), which archive: false would delete unseen; nothing changed (with archive: true they are kept in the archive as stored)`);
          }
          hidden = true;
        }
      }
      // When each item was added: those shown in the history keep theirs, and are handed on as
      // they are stored, not encrypted again (the turns a compaction keeps, the questions a
      // server's compaction gives back): the wrapped session keeps them as they were, and
      // archives only what was replaced. Items repeated (a "continue" sent twice) are matched
      // from the newest, as a compaction keeps the newest. (One stored without its time is
      // sealed again, with one.)
      const added = new Map();
      opened.forEach((o, k) => {
        if (o === null || typeof o.at !== 'number' || this.#expired(o.at)) return;
        const text = canonical(o.item);
        added.set(text, [...(added.get(text) ?? []), k]);
      });
      const at = [];
      const reused = [];
      for (let i = items.length - 1; i >= 0; i--) {
        try {
          JSON.stringify(items[i], binaryRefused);
          reused[i] = added.get(canonical(items[i]))?.pop();
          at[i] = opened[reused[i]]?.at;
        } catch {
          // (refused below, naming the item)
        }
      }
      // A summary new to the history (ours, or a server's compaction item) is made from what it
      // replaces: it takes the time of the oldest of those, so that nothing outlives the TTL of
      // what it was made from (with the time of the compaction, a summary of day 1 would be read
      // on day 59 under a 30-day TTL, and each compaction would put it off again). Other new
      // items (the answer the SDK saves after a compaction item) are new: added now.
      const now = this.#now();
      // (What is left in `added` is what the new history replaced.)
      const oldest = [...added.values()].flat().reduce((a, k) => Math.min(a, opened[k].at), now);
      for (let i = 0; i < items.length; i++) at[i] ??= isSummary(items[i]) ? oldest : now;
      const fresh = items.flatMap((_, i) => (reused[i] === undefined ? [i] : []));
      const made = await this.#sealAll(key, fresh.map((i) => items[i]), fresh.map((i) => at[i]), fresh);
      const sealed = items.map((_, i) => (reused[i] === undefined ? made.shift() : stored[reused[i]]));
      // Archived by default only when every item replaced is under this key: a history in clear
      // (encrypted in place) or under another key (a new key given) would stay in the archive
      // as it was. Also when the items expected left some out: the caller never saw them.
      const archive = options?.archive ?? (hidden || opened.every((o) => o !== null));
      const told = typeof named === 'string' ? { [CHANGE_EVENT]: named } : {};
      await this.#inner.replaceHistory(sealed, { archive, ...(Array.isArray(expected) ? { expectedItems: stored } : {}), ...told });
    });
    return withCopies([givenItems], 'INVALID_ITEM', what, (items) => withCopies([givenOptions], 'INVALID_OPTIONS', what, (options) => write(items, options), 'the options'));
  }

  /** What compaction (or `replaceHistory` with `archive`) moved out of the history, decrypted:
   * the wrapped session's `getArchivedItems(options)`, items that do not decrypt or have expired
   * left out as reads leave them; `[]` where the wrapped session keeps no archive. */
  getArchivedItems(options) {
    return this.#serial(async () => {
      if (typeof this.#inner.getArchivedItems !== 'function') return [];
      return this.#read(await this.#inner.getArchivedItems(options), false);
    });
  }

  /** Deletes the expired items (and those that do not decrypt stay); resolves to how many went.
   * Over this package's sessions it is one transaction, conditioned on the history read
   * (`SUFFIX_MISMATCH` after a write in between); over others, a clear and an add. */
  purgeExpired() {
    return this.#write(async () => {
      if (this.#ttl === undefined) return 0;
      const key = await this.#sessionKey();
      // Every item, whatever window the inner session reads by default (its `settings`).
      const stored = await this.#inner.getItems(Number.MAX_SAFE_INTEGER);
      const opened = await Promise.all(stored.map((s) => this.#open(key, s)));
      const keep = stored.filter((_, i) => !(opened[i] && this.#expired(opened[i].at)));
      const removed = stored.length - keep.length;
      if (removed) await this.#rewrite(stored, keep);
      return removed;
    });
  }

  /** Gives the history a new key: each of its items, read with this object's key, is sealed
   * again under `key` with when it was added (items in clear are sealed too, as added now, but
   * one JSON cannot write, which stays as it is), in
   * one write conditioned on the history read; this object then uses `key`. An encrypted item
   * this object's key does not open (a wrong old key, an item under a third) is `INVALID_KEY`,
   * nothing changed: replaced, it would be lost to both keys. The archive stays as written. */
  changeKey(key) {
    let material;
    try {
      material = keyMaterial(key);
    } catch (error) {
      return Promise.reject(error);
    }
    // (The copy of the new key's bytes is wiped when the change fails, as `close()` wipes them.)
    const wiped = (error) => {
      if (material instanceof Uint8Array && this.#keyGiven !== material) material.fill(0);
      throw error;
    };
    // Holding the session's lock, as a run does from its read to its save (our runner, in any
    // tab): a run under way would save its turn under the old key, after the change.
    const dbName = this.#inner.dbName;
    const locks = globalThis.navigator?.locks;
    const held = (change) =>
      typeof dbName === 'string' && locks
        ? locks.request(sessionLockName(dbName, this.#inner.sessionId ?? this.#sessionId), { ifAvailable: true }, (lock) => {
            if (lock === null) throw sessionError('SESSION_BUSY', `changeKey: session "${this.#sessionId}" is in use (a run answering in it, a sync round, a deletion or a restore, in this tab or another): nothing changed; change the key once it ended`);
            return change();
          })
        : change();
    return this.#write(async () => {
      const old = await this.#sessionKey();
      await held(() => this.#changeKey(material, old));
    }).catch(wiped);
  }

  /** `changeKey` once it holds the session (`old`: the key it replaces). */
  async #changeKey(material, old) {
    const epoch = this.#watch();
    const stored = await this.#inner.getItems(Number.MAX_SAFE_INTEGER);
    const opened = await Promise.all(stored.map((s) => this.#open(old, s)));
    const shut = stored.filter((s, i) => s?.__enc === 1 && opened[i] === null).length;
    if (shut) throw sessionError('INVALID_KEY', `changeKey: ${shut} of the ${stored.length} items of session "${this.#sessionId}" do not decrypt with this object's key (a wrong key or passphrase, or items under another key); nothing changed`);
    const base = baseKey(material);
    const next = await base.then((b) => sessionKey(b, this.#sessionId));
    const now = this.#now();
    const one = (item, at) => this.#sealAll(next, [item], at).then(([e]) => e);
    // An item in clear is sealed as added now; one JSON cannot write (bytes, a Map: the wrapped
    // session keeps them) stays as it is, unread here as before, where it failed every change.
    const sealed = await Promise.all(stored.map((s, i) => (opened[i] ? one(opened[i].item, opened[i].at) : one(s, now).catch((e) => (e?.code === 'INVALID_ITEM' ? s : Promise.reject(e))))));
    // (An empty history has nothing to rewrite: no record is made, a deleted chat stays so. Nor
    // is it checked: this object's next write checks the key, as after an item another tab
    // wrote under the old key meanwhile.)
    if (stored.length) await this.#rewrite(stored, sealed);
    if (this.#keyGiven instanceof Uint8Array) this.#keyGiven.fill(0);
    this.#keyGiven = material;
    this.#key = Promise.resolve(next);
    this.#digestKey = base.then((b) => digestKey(b, this.#sessionId));
    this.#digestKey.catch(() => {});
    this.#fits(stored.length > 0, epoch);
  }

  /** Replaces the history `stored` (as read) by `items` (as stored), not archived: one write
   * conditioned on `stored` over this package's sessions (`SUFFIX_MISMATCH` after a write in
   * between); over others, a clear and an add, the history put back when the add fails. */
  async #rewrite(stored, items) {
    if (typeof this.#inner.replaceHistory === 'function') {
      await this.#inner.replaceHistory(items, { archive: false, expectedItems: stored });
    } else if (takesTransactions(this.#inner)) {
      // (`SyncedSession`: the whole history as the suffix, checked in one transaction.)
      await this.#replaceSuffix(stored, items);
    } else {
      await this.#inner.clearSession();
      try {
        if (items.length) await this.#inner.addItems(items);
      } catch (error) {
        // The history is put back (cleared again first: a write of several requests may have
        // stored part of it), as a compaction puts it back: a failed add never leaves it empty.
        await this.#inner.clearSession().then(() => this.#inner.addItems(stored)).catch(() => {});
        throw error;
      }
    }
  }

  #closed = false;
  #closing;
  /** The removals of the listeners given to `subscribe`. */
  #stops = new Set();

  /** Resolves when every earlier call has taken effect, then forgets the key (its bytes wiped
   * where bytes were given) and closes the wrapped session; any later call rejects with
   * `CLOSED`. */
  close() {
    // (A second call resolves when the first settles: once every earlier call is done.)
    if (this.#closed) return this.#closing.then(() => {}, () => {});
    endListeners(this.#stops);
    this.#unhear();
    const run = this.#serial(() => {
      if (this.#keyGiven instanceof Uint8Array) this.#keyGiven.fill(0);
      this.#keyGiven = this.#key = this.#digestKey = null;
      return this.#inner.close?.();
    });
    this.#closed = true;
    this.#closing = run;
    return run;
  }
}

/** JSON of `value` with every object's keys sorted: two items with the same fields, in any
 * order, have the same text. */
function canonical(value) {
  return JSON.stringify(value, (_, v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v));
}

/** Whether `item` opens a turn: a user message (the rule the sessions count turns by). */
const startsTurn = (item) => item?.role === 'user' && (item.type === undefined || item.type === 'message');

/** Whether `item` is a compaction summary (a `compaction` item, or one carrying the summary
 * marker, on itself or, as earlier versions stored it, in `providerData`). */
const isSummary = (item) =>
  item?.type === 'compaction' || item?.['agent-sessions.summary'] !== undefined || item?.providerData?.['agent-sessions.summary'] !== undefined;

/** The items of the newest `turns` turns of `items` (oldest first); items before the first
 * user message belong to no turn and are only shown when every turn is, but for compaction
 * summaries at the head, which every window shows. */
function newestTurns(items, turns) {
  if (turns === 0) return [];
  let seen = 0;
  for (let i = items.length - 1; i >= 0; i--) {
    if (startsTurn(items[i]) && ++seen === turns) {
      let head = 0;
      while (head < i && isSummary(items[head])) head += 1;
      return [...items.slice(0, head), ...items.slice(i)];
    }
  }
  return items;
}

/**
 * A key from a passphrase: PBKDF2-SHA256 (`iterations`, OWASP's 600,000 by default) over the
 * passphrase and `salt` (at least 16 bytes, kept with the app's data: it is not secret), as an
 * HKDF base key for `EncryptedSession`. The same passphrase and salt give the same key.
 */
export async function deriveKeyFromPassphrase(passphrase, options) {
  // A misspelt option (`iteration`) would give another key, silently: what it encrypts would
  // read as empty once the spelling is mended.
  const { salt, iterations = 600_000 } = optionsOf(options, 'deriveKeyFromPassphrase', 'salt iterations');
  if (typeof passphrase !== 'string' || passphrase.length === 0) throw sessionError('INVALID_KEY', 'the passphrase must be a non-empty string');
  const saltBytes =
    typeof salt === 'string' ? encoder.encode(salt)
    : salt instanceof ArrayBuffer ? new Uint8Array(salt.slice(0))
    : ArrayBuffer.isView(salt) ? new Uint8Array(salt.buffer, salt.byteOffset, salt.byteLength).slice()
    : null;
  if (!saltBytes) throw sessionError('INVALID_KEY', `options.salt must be bytes (a Uint8Array, an ArrayBuffer) or a string, got ${salt === null ? 'null' : typeof salt}`);
  if (saltBytes.length < 16) throw sessionError('INVALID_KEY', `options.salt must be at least 16 bytes, got ${saltBytes.length}`);
  // WebCrypto takes at most 2 ** 32 - 1 (and a count in the billions holds the tab for minutes).
  if (!Number.isInteger(iterations) || iterations < 100_000 || iterations > 2 ** 32 - 1) throw sessionError('INVALID_OPTIONS', `options.iterations must be an integer from 100,000 to 4,294,967,295, got ${String(iterations)}`);
  const material = await subtle().importKey('raw', encoder.encode(passphrase), 'PBKDF2', false, ['deriveBits']);
  const bits = await subtle().deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: saltBytes, iterations }, material, 256);
  return subtle().importKey('raw', bits, 'HKDF', false, ['deriveKey']);
}

// Device keys: a non-extractable CryptoKey kept in IndexedDB (the browser stores the key object
// itself; no script can read its bytes), one per database and user, in a database of its own.
const keys = recordStore('agent-sessions-keys', 'keys');

/** The record id of a database's user's device key, from the options of `what` (an object: a
 * user id given alone, `deviceKey('ann')`, was taken for no options, the key of the sessions
 * without a user), and the id an earlier version kept it under where `dbName` was `null` (the
 * default database, as the sessions take it; for another database, its id again). */
const keyIds = (options, what, made = true) => {
  // A misspelt option (`userID`) would be the key of the sessions without a user: refused. So
  // are a user id or database name no session takes, where a key is made or stored under them
  // (`loadDeviceKey` and `forgetDeviceKey` still reach one an earlier version stored so).
  const { dbName = null, userId = null } = optionsOf(options, what, 'dbName userId');
  if (made) checkTarget(userId, dbName, what);
  const id = JSON.stringify([dbName ?? 'agent-sessions', userId]);
  return [id, id === JSON.stringify(['agent-sessions', userId]) ? JSON.stringify([null, userId]) : id];
};

/** The key stored under `ids` (see `keyIds`), or `undefined`. */
const storedKey = async ([id, earlier]) => (await keys.get(id))?.key ?? (await keys.get(earlier))?.key;

/** Stores `key` under `ids` (see `keyIds`), replacing the one there was, an earlier version's
 * too. */
const putKey = ([id, earlier], key) => keys.batch('readwrite', (s) => [s.put({ id, key, createdAt: Date.now() }), ...(earlier === id ? [] : [s.delete(earlier)])]);

/** Makes a new device key for a database's user, stores it, and returns it (replacing one there
 * was: what it encrypted no longer decrypts). */
export async function createDeviceKey(options) {
  const ids = keyIds(options, 'createDeviceKey');
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const key = await subtle().importKey('raw', bytes, 'HKDF', false, ['deriveKey']);
  bytes.fill(0);
  await putKey(ids, key);
  return key;
}

/** The device key of a database's user, made and stored on first use. Made at most once: two
 * tabs (or two parts of a page) asking at the same time get the same key, where loading and
 * then creating could each make one, the second replacing the first and leaving what the first
 * encrypted unreadable. */
export async function deviceKey(options) {
  const ids = keyIds(options, 'deviceKey');
  const found = await storedKey(ids);
  if (found) return found;
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const key = await subtle().importKey('raw', bytes, 'HKDF', false, ['deriveKey']);
  bytes.fill(0);
  try {
    await keys.batch('readwrite', (s) => s.add({ id: ids[0], key, createdAt: Date.now() }));
    return key;
  } catch (error) {
    if (error?.name !== 'ConstraintError') throw error;
    // Another caller stored one first: that one is the key.
    const stored = await keys.get(ids[0]);
    // (Deleted again before it could be read: there is none, so one is made, as at first.)
    if (stored === undefined) return deviceKey(options);
    // A record that holds no key (another version's, or written by hand): asked again, the
    // same record would refuse the new key again, without end. Left as it is.
    if (!stored?.key) throw sessionError('INVALID_KEY', `deviceKey: the device key record ${ids[0]} holds no key; nothing changed (forgetDeviceKey() removes it)`);
    return stored.key;
  }
}

/** Keeps `key` (a non-extractable HKDF `CryptoKey`, such as `deriveKeyFromPassphrase` gives) as
 * the device key of a database's user, replacing one there was: the passphrase's key can then be
 * remembered on this device without the passphrase, and still opens the same sessions. */
export async function storeDeviceKey(key, options) {
  if (!(typeof CryptoKey !== 'undefined' && key instanceof CryptoKey) || key.algorithm?.name !== 'HKDF' || key.extractable || !key.usages.includes('deriveKey')) {
    throw sessionError('INVALID_KEY', 'storeDeviceKey needs a non-extractable HKDF CryptoKey usable with deriveKey (from deriveKeyFromPassphrase or createDeviceKey); the stored key was kept');
  }
  await putKey(keyIds(options, 'storeDeviceKey'), key);
}

/** The device key of a database's user, or `null` when this device has none. */
export async function loadDeviceKey(options) {
  return (await storedKey(keyIds(options, 'loadDeviceKey', false))) ?? null;
}

/** Forgets the device key of a database's user: what it encrypted can no longer be read here. */
export async function forgetDeviceKey(options) {
  const [id, earlier] = keyIds(options, 'forgetDeviceKey', false);
  await keys.batch('readwrite', (s) => [s.delete(id), s.delete(earlier)]);
}
