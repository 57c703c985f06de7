// The keys of "Lock this user's chats with a passphrase". A locked user's chats are stored
// through the library's EncryptedSession, under one master key per user derived from the
// passphrase (`deriveKeyFromPassphrase`: PBKDF2-SHA256 over the passphrase and a random salt).
// What the page keeps of a lock is its record in localStorage (state.js): the salt, which is not
// secret, and a passphrase check, a known item encrypted with the key, which tells a wrong
// passphrase from the right one before anything is read or written, even for a user who has no
// chat yet. The key itself is never stored as bytes: it lives in this tab's memory
// (`state.keys`) and, with "Remember on this device", as the non-extractable CryptoKey object in
// the page's own IndexedDB database (see `rememberKey`).
import { EncryptedSession, IndexedDbSession, deriveKeyFromPassphrase, storeDeviceKey, loadDeviceKey, forgetDeviceKey } from './lib.js';
import { DB_NAME, state } from './state.js';

/** The item the passphrase check encrypts. */
const CHECK = { type: 'passphrase_check', text: 'agent-sessions demo passphrase check' };

/** The id the check is encrypted under (each session id has a key of its own). */
const checkId = (user) => `agent-sessions-demo/passphrase-check/${user}`;

/**
 * A session of a few items held in an array, and nothing more: what EncryptedSession wraps to
 * make the passphrase check (whose envelope is then stored in the lock record) and to read it
 * back, and to decrypt stored items one at a time (seal.js). Not a MemorySession: this one
 * hands its array over as it is, so the envelopes can be taken out and put in.
 */
class ArraySession {
  constructor(id, items = []) {
    this.sessionId = id;
    this.items = items;
  }

  async getSessionId() {
    return this.sessionId;
  }

  async getItems(limit) {
    if (limit === undefined) return [...this.items];
    return limit > 0 ? this.items.slice(-limit) : [];
  }

  async addItems(items) {
    this.items.push(...items);
  }

  async popItem() {
    return this.items.pop();
  }

  async clearSession() {
    this.items = [];
  }
}

const toBase64 = (bytes) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** A passphrase as its key is made from: in Unicode's composed form (NFC), so that the same
 * words typed on another keyboard or system (an "é" as one character or as "e" and an accent)
 * give the same key. */
export const normalized = (passphrase) => passphrase.normalize('NFC');

/** A new lock for `user` with `passphrase`: `{ key, record }`, the record with a fresh random
 * salt and the check. `pending` says the chats are still being encrypted (seal.js). */
export async function newLock(user, passphrase) {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const key = await deriveKeyFromPassphrase(normalized(passphrase), { salt });
  const box = new ArraySession(checkId(user));
  await new EncryptedSession(box, { key }).addItems([CHECK]);
  return { key, record: { salt: toBase64(salt), check: box.items, pending: true } };
}

/** The key of `user`'s lock `record` that `passphrase` gives, or null where it is not that
 * lock's passphrase. Tried in the composed form, then, where it differs, as typed: the locks
 * made before passphrases were normalized took the text as it came. */
export async function keyOf(user, passphrase, record) {
  for (const text of new Set([normalized(passphrase), passphrase])) {
    const key = await deriveKeyFromPassphrase(text, { salt: fromBase64(record.salt) });
    if (await keyFits(user, key, record)) return key;
  }
  return null;
}

/** Whether `key` is the key of `user`'s lock `record`: whether it decrypts the check. A wrong key
 * does not decrypt it (the read skips it: `lastSkipped` is 1). */
export async function keyFits(user, key, record) {
  // (A lock that came with a backup of another user's chats has its check under that user's id.)
  const check = new EncryptedSession(new ArraySession(checkId(record.checkUser ?? user), [...record.check]), { key });
  const [item] = await check.getItems();
  return check.lastSkipped === 0 && item?.text === CHECK.text;
}

/** Whether a stored item is an EncryptedSession envelope (`{ __enc: 1, iv, ct }`). */
export const isEnvelope = (item) => item?.__enc === 1 && typeof item.iv === 'string' && typeof item.ct === 'string';

/** Where a locked chat's `state` (the library keeps it with the chat, in backups too) carries the
 * lock: its salt and check, neither of them secret, so that a backup restored on another device,
 * or after this site's data was cleared, opens with the passphrase alone. */
const LOCK_STATE = 'agent-sessions-demo.lock';

/** The `state` a locked chat of `user` carries for lock `record`. */
export const lockState = (user, record) => ({ [LOCK_STATE]: { salt: record.salt, check: record.check, user: record.checkUser ?? user } });

/** The lock a chat's `state` carries, as a lock record (`pending`: its chats still to be checked
 * and sealed), or null. */
export function lockOfState(state) {
  const lock = state?.[LOCK_STATE];
  if (!(typeof lock?.salt === 'string' && Array.isArray(lock.check) && lock.check.every(isEnvelope) && typeof lock.user === 'string')) return null;
  return { salt: lock.salt, check: lock.check, checkUser: lock.user, pending: true };
}

/** The items `stored` in chat `id` as they were added: envelopes decrypted with `key`, any
 * plaintext item as it is. Throws when an envelope does not decrypt (another key's). */
export async function openItems(id, key, stored) {
  const box = new ArraySession(id);
  const reader = new EncryptedSession(box, { key });
  const items = [];
  for (const item of stored) {
    if (!isEnvelope(item)) {
      items.push(item);
      continue;
    }
    box.items = [item];
    const [opened] = await reader.getItems();
    if (reader.lastSkipped) throw new Error(`a message of chat ${id} does not decrypt with this passphrase`);
    items.push(opened);
  }
  return items;
}

/** The IndexedDbSession each EncryptedSession the page made wraps. */
const inners = new WeakMap();

/** Chat `id` of `user` through an EncryptedSession with `key` (on its main branch: a locked chat
 * has no other). */
export function encryptedSession(id, user, key) {
  const inner = new IndexedDbSession(id, { userId: user, dbName: DB_NAME });
  const session = new EncryptedSession(inner, { key });
  inners.set(session, inner);
  return session;
}

/** Whether `session` is a locked chat's EncryptedSession. */
export const isEncrypted = (session) => session instanceof EncryptedSession;

/** The IndexedDbSession under `session` (itself for a plain one): what frees the memory and
 * hears the changes. */
export const plainOf = (session) => inners.get(session) ?? session;

// "Remember on this device": the CryptoKey that the passphrase gave, kept by the library as the
// user's device key (`storeDeviceKey`: the browser stores a non-extractable key without any
// script being able to read its bytes). It is the passphrase's key itself, so the passphrase and
// the device open the same chats (createDeviceKey would make a new random key, which the
// passphrase could not open).
const where = (user) => ({ dbName: DB_NAME, userId: user });

/** The key of the mark left for the other tabs when this device remembers or forgets a user's
 * key, followed by the user's name: `1` or `0`, a colon, the time (so that each change is heard). */
export const REMEMBERED = 'agent-sessions-demo.remembered.';

/** Tells the other tabs whether this device now remembers `user`'s key (they say so). Best
 * effort: the key is kept or forgotten all the same. */
function tellOtherTabs(user, remembered) {
  try {
    localStorage.setItem(`${REMEMBERED}${user}`, `${remembered ? 1 : 0}:${Date.now()}`);
  } catch {
    // (Storage full or refused: the other tabs say what they knew.)
  }
}

/** Says in this tab what the tabs last said: whether this device remembers `user`'s key. */
export function followMark(user) {
  if (localStorage.getItem(`${REMEMBERED}${user}`)?.startsWith('1:')) state.remembered.add(user);
  else state.remembered.delete(user);
}

/** Keeps `user`'s key on this device. */
export async function rememberKey(user, key) {
  await storeDeviceKey(key, where(user));
  state.remembered.add(user);
  tellOtherTabs(user, true);
}

/** Forgets `user`'s key on this device: the passphrase is asked after the next reload. */
export async function forgetKey(user) {
  await forgetDeviceKey(where(user));
  state.remembered.delete(user);
  tellOtherTabs(user, false);
}

/** The key this device remembers for `user`'s lock `record`, or null. One that no longer fits
 * (the user was locked again with another passphrase) is forgotten. */
export async function recallKey(user, record) {
  const key = await loadDeviceKey(where(user));
  if (key && (await keyFits(user, key, record))) {
    state.remembered.add(user);
    return key;
  }
  if (key) await forgetKey(user);
  return null;
}
