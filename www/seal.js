// Encrypting a user's chats in place, when they are locked. Each chat's items are read as stored
// and written back through an EncryptedSession over the same session (`replaceHistory(items,
// { archive: false })`: one transaction, so a chat is never half encrypted, and the plaintext is
// not moved to the archive). What else the library keeps in clear goes too: the title, summary,
// topics and state (the library cannot title an encrypted chat; the page shows its own titles,
// in memory only), and the chat's other branches: a locked chat keeps the version it showed,
// since the library cannot tell the turns of encrypted items apart to branch them.
//
// It can be run again at any time: a chat already sealed is left alone, one sealed in part (a
// crash, a tab that wrote in clear) is finished, its encrypted items decrypted and its plaintext
// ones encrypted. A chat with an item this key does not decrypt is left as it is: nothing that
// cannot be read is ever replaced.
import { EncryptedSession, IndexedDbSession, listSessions, sessionLockName } from './lib.js';
import { DB_NAME, readLock, saveLock, state } from './state.js';
import { isEnvelope, lockOfState, lockState, openItems } from './keys.js';

/** Encrypts chat `chat` (a `listSessions` entry) of `user` with `key`; resolves to whether
 * anything had to change. */
async function sealChat(user, key, chat) {
  const id = chat.sessionId;
  const branch = chat.currentBranch ?? 'main';
  const options = { userId: user, dbName: DB_NAME };
  const main = new IndexedDbSession(id, options);
  // The items of the branch the chat shows are the ones kept.
  const shown = branch === 'main' ? main : new IndexedDbSession(id, { ...options, branch });
  try {
    const stored = await shown.getItems();
    const [branches, info] = await Promise.all([main.listBranches(), main.getInfo()]);
    // (The lock a backup carries in the chat's state is no metadata in clear: see keys.js.)
    const metadata = [info.title, info.summary, info.topics].some((v) => v != null) || (info.state != null && !lockOfState(info.state));
    // Opened first: a chat sealed under another key (by another tab's lock) is refused, never
    // taken for done.
    const items = await openItems(id, key, stored);
    if (stored.every(isEnvelope) && branches.length === 1 && !metadata) return false;
    // Only if the history is still what was read (on the main branch, which is replaced): a
    // write from a tab that does not know of the lock yet is never replaced, it fails the chat,
    // which the next unlock seals.
    const expected = branch === 'main' ? { expectedItems: items } : {};
    await new EncryptedSession(main, { key }).replaceHistory(items, { archive: false, ...expected });
    if (branch !== 'main') await main.switchBranch('main');
    for (const b of branches) if (b.branchId !== 'main') await main.deleteBranch(b.branchId);
    // The lock's salt and check go in its state instead (neither is secret): a browser that lost
    // the lock's record (site's localStorage cleared apart from its chats) finds it there.
    const record = readLock(user);
    await main.update({ title: null, summary: null, topics: null, state: record ? lockState(user, record) : null });
    return true;
  } finally {
    if (shown !== main) await close(shown);
    await close(main);
  }
}

async function close(session) {
  try {
    await session.close();
  } catch {
    // Closed already.
  } finally {
    session.free?.();
  }
}

/** Finds the lock of `user`, whose record this browser lost (it is in localStorage, which can be
 * cleared apart from the chats), in the newest of their chats that carries it (sealed, unlocked
 * since, or restored from a backup; one begun since the last unlock does not yet): recorded
 * again (to be checked and finished at the next unlock), so the chats ask for the passphrase
 * instead of showing ciphertext and taking new messages in clear. Only chats without a title
 * are looked at (a locked user's have none: the library cannot title an encrypted chat), and
 * their records only, not their histories (as the chat list reads none). */
export async function recoverLock(user) {
  const untitled = (await listSessions({ dbName: DB_NAME, userId: user })).filter((c) => c.title == null);
  for (const chat of untitled) {
    const session = new IndexedDbSession(chat.sessionId, { userId: user, dbName: DB_NAME });
    try {
      const lock = lockOfState((await session.getInfo()).state);
      if (lock) return saveLock(user, lock);
    } finally {
      session.free();
    }
  }
}

/** Encrypts `user`'s chats with `key` (only `ids` when given): `{ sealed, failed }`, the ids of
 * those that changed and the errors of those that could not be read. */
export async function sealChats(user, key, ids = null) {
  const list = await listSessions({ dbName: DB_NAME, userId: user });
  const sealed = [];
  const failed = [];
  for (const chat of list) {
    if (ids && !ids.includes(chat.sessionId)) continue;
    try {
      // Under the chat's lock, which a reply being written holds in any tab: the reply is
      // saved first, then sealed with the rest (sealing while it is written would refuse its
      // save, or delete the branch it is saved to).
      const locks = navigator.locks;
      const seal = () => sealChat(user, key, chat);
      if (await (locks?.request ? locks.request(sessionLockName(DB_NAME, chat.sessionId), seal) : seal())) sealed.push(chat.sessionId);
    } catch (e) {
      failed.push(e);
    }
  }
  return { sealed, failed };
}

/** Once `user` is unlocked: finishes a lock a reload interrupted (every chat), and seals any chat
 * written in clear since (another tab that did not know of the lock yet: it has a title or a
 * summary, which the library never gives an encrypted chat). */
export async function finishSealing(user, key) {
  const record = readLock(user);
  if (!record) return { sealed: [], failed: [] };
  let ids = null;
  if (!record.pending) {
    const list = await listSessions({ dbName: DB_NAME, userId: user });
    ids = list.filter((c) => c.title != null || c.summary != null).map((c) => c.sessionId);
    if (ids.length === 0) return { sealed: [], failed: [] };
  }
  const result = await sealChats(user, key, ids);
  if (record.pending && result.failed.length === 0) saveLock(user, { ...record, pending: false });
  return result;
}

/** Unlocks `user` in this tab with `key` (checked already), and finishes what sealing is left
 * (`finishSealing`); each chat then carries the lock (one sealed by an earlier version, or made
 * since the lock, did not), where a browser that lost its record finds it. */
export async function unlockWith(user, key) {
  state.keys.set(user, key);
  const result = await finishSealing(user, key);
  const record = readLock(user);
  if (record) await carryLock(user, record).catch(() => {});
  return result;
}

/** Has every chat of locked `user` carry lock `record` in its state (a chat made since the lock
 * does not yet); `update` leaves its history and `updatedAt` as they are. A chat that cannot be
 * given it (the storage full) is backed up without it: the others carry it. */
export async function carryLock(user, record) {
  const carried = lockState(user, record);
  for (const { sessionId } of await listSessions({ dbName: DB_NAME, userId: user })) {
    const session = new IndexedDbSession(sessionId, { userId: user, dbName: DB_NAME });
    try {
      if (lockOfState((await session.getInfo()).state)?.salt !== record.salt) await session.update({ state: carried });
    } catch {
      // Backed up as it is.
    } finally {
      session.free();
    }
  }
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The error shown for the chats `sealChats` could not encrypt (`failed`, its errors). */
export function notSealed(failed) {
  const reasons = [...new Set(failed.map((e) => e?.message ?? String(e)))];
  return new Error(`${plural(failed.length, 'chat')} could not be encrypted and ${failed.length === 1 ? 'was' : 'were'} left as ${failed.length === 1 ? 'it was' : 'they were'}: ${reasons.join('; ')}`);
}
