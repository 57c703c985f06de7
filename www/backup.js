// Backing up and restoring all of the current user's chats at once, through the library. "Back
// up all chats" saves one NDJSON file (`exportSessions`): every chat as the database holds it,
// its branches, archive, token usage, title and summary included, read a page at a time. "Restore
// chats" writes such a file back (`importSessions`), each chat checked whole before any of it is
// written, so a damaged line costs only its own chat. A chat whose id is here already comes in
// as a copy under a new id (`onConflict: 'rename'`): a restore never overwrites a chat, and the
// open one stays as it is. (Export and Import in the toolbar copy one chat's shown items in the
// page's own JSON instead; see actions.js.)
//
// A locked user's backup holds their chats as stored: encrypted, each carrying the lock (its salt
// and check, in the chat's `state`: keys.js), so that the passphrase alone opens them wherever
// the backup is restored. Restoring locked chats into a user without a lock or chats locks that
// user with it (the passphrase is asked); a user with chats in clear is asked to restore them
// into a new user instead (they might not know the passphrase). Restoring into
// a locked user skips a chat whose id is here already instead (a copy under a new id could not be
// decrypted: each chat's key is derived from its id), and encrypts what came in in clear (seal.js).
import { exportSessions, importSessions, listSessions } from './lib.js';
import { DB_NAME, lockedOut, saveLock, state } from './state.js';
import { busy } from './busy.js';
import { lockOfState } from './keys.js';
import { closeForLock } from './lock.js';
import { carryLock, notSealed, sealChats } from './seal.js';
import { settleChats } from './actions.js';
import { setStatus } from './view.js';

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Saves every chat of the current user as `chats-<user>-<yyyy-mm-dd>.ndjson`. */
export function backUpChats() {
  return busy(async () => {
    // The summaries and titles replies are still writing belong in the backup (Stop gives the
    // backup up, as it gives up the other actions that wait for them).
    await settleChats();
    const user = state.user;
    setStatus('Backing up…');
    if (state.lock) await carryLock(user, state.lock);
    const stream = exportSessions({ dbName: DB_NAME, userId: user });
    // A stream the library ended with its error is read by the browser as its own "Failed to
    // fetch" (Chromium): the report holds what went wrong.
    const blob = await new Response(stream).blob().catch((e) => stream.report.then(() => Promise.reject(e)));
    const name = backupName(user);
    download(new Blob([blob], { type: 'application/x-ndjson' }), name);
    // A chat the library could not write out has a line saying so in its place: said now, not
    // found out at the restore. (One deleted while it was written is not counted either.)
    const { sessions, failed } = await stream.report;
    setStatus(`Backed up ${plural(sessions, 'chat')} into ${name}.`);
    if (failed.length) {
      throw new Error(`${plural(failed.length, 'chat')} could not be backed up (the backup has the others): ${failed.map((f) => `${f.sessionId} (${f.code}: ${f.message})`).join('; ')}`);
    }
  });
}

/** Restores the chats of backup `file` (a `File`) for the current user, showing how far it got;
 * then says what came in, and shows an error naming the line of each chat that could not. */
export function restoreChats(file) {
  return busy(async () => {
    // A backup of locked chats, restored into a user without a lock: that user takes the lock
    // (their chats in clear would be encrypted once the passphrase is given, which they may not
    // know: only a user with no chat yet), and no chat comes in under a new id (its key is
    // derived from its id: a copy could not be decrypted).
    const lockOfFile = await lockOfBackup(file);
    // Locked with another passphrase than this user's: no passphrase would open all their chats.
    if (state.lock && lockOfFile && lockOfFile.salt !== state.lock.salt) {
      throw new Error(`The chats of ${file.name} are locked by another lock than ${state.user}'s (another passphrase, or the same one locked anew): restore it into a new user (Add user), then enter the passphrase they were locked with.`);
    }
    const carried = state.lock ? null : lockOfFile;
    if (carried && (await listSessions({ dbName: DB_NAME, userId: state.user })).length > 0) {
      throw new Error(`The chats of ${file.name} are locked with a passphrase, and ${state.user} has chats of their own: restore it into a new user (Add user), then enter the passphrase.`);
    }
    setStatus(`Restoring chats from ${file.name}…`);
    let report;
    try {
      const onConflict = state.lock || carried ? 'skip' : 'rename';
      report = await importSessions(file, { dbName: DB_NAME, userId: state.user, onConflict, onProgress: showProgress });
    } catch (e) {
      // Chats written before the browser refused one (storage full, say) stay written.
      setStatus(e?.report ? summary(e.report) : '');
      if (e?.report && carried && restored(e.report)) await adoptLock(carried);
      // (Said with the error, not in place of it, nor replaced by it: chats of a locked user
      // left in clear.)
      const unsealed = e?.report ? await sealRestored(e.report).then(() => null, (x) => x) : null;
      if (e?.code === 'IMPORT_INVALID') e.message = `${file.name} is not a backup of chats: ${e.message}`;
      if (unsealed) e.message += ` ${unsealed.message}`;
      throw e;
    }
    const locked = carried && restored(report);
    if (locked) await adoptLock(carried);
    setStatus(summary(report) + (locked ? ' They are locked: enter the passphrase they were locked with.' : ''));
    // Both said, where the chats could not all be encrypted and some were not restored.
    const unsealed = await sealRestored(report).then(() => null, (x) => x);
    const errors = [unsealed, report.failed.length ? notRestored(report.failed) : null].filter(Boolean);
    if (errors.length > 1) throw new Error(errors.map((x) => x.message).join(' '));
    if (errors.length) throw errors[0];
  });
}

/** The lock backup `file` carries: its first chat's (every chat of a locked user's backup
 * carries it), read up to that chat's record only; null for a backup of chats in clear. */
async function lockOfBackup(file) {
  const reader = file.stream().pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return null;
      text += value;
      for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n')) {
        const line = text.slice(0, end);
        text = text.slice(end + 1);
        if (line.startsWith('{"session":')) {
          try {
            return lockOfState(JSON.parse(line).session?.state);
          } catch {
            return null;
          }
        }
      }
    }
  } catch {
    return null; // Not read here: the restore says what is wrong with it.
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** Locks the current user (who had no lock and no chats) with the lock `carried` that the
 * restored chats came with: their chats are closed until the passphrase is given. */
async function adoptLock(carried) {
  saveLock(state.user, carried);
  state.branch = 'main';
  await closeForLock(state.user);
}

/** Whether a restore (its `report`) wrote any chat. */
const restored = ({ imported, replaced, renamed }) => imported.length + replaced.length + renamed.length > 0;

/** For a locked user: encrypts the chats a restore wrote (`report`, `importSessions`'), those of
 * a backup made before the lock being in clear. */
async function sealRestored(report) {
  // (A lock the restore brought is sealed once the passphrase is given: its record is `pending`.)
  if (!state.lock || lockedOut()) return;
  const { failed } = await sealChats(state.user, state.keys.get(state.user), [...report.imported, ...report.replaced, ...report.renamed.map((r) => r.sessionId)]);
  if (failed.length) throw notSealed(failed);
}

/** "Restoring… 3 of 10 chats", after each chat of the backup. */
function showProgress({ sessions, of }) {
  setStatus(of == null ? `Restoring… ${plural(sessions, 'chat')}` : `Restoring… ${sessions} of ${plural(of, 'chat')}`);
}

/** How many chats a restore's `failed` stands for: a backup cut short is one error for every
 * chat it lost (`missing`). */
const lostIn = (failed) => failed.reduce((n, e) => n + (e?.missing ?? 1), 0);

/** What a restore did, in a sentence. */
function summary({ imported, replaced, renamed, skipped, failed }) {
  const restored = imported.length + replaced.length + renamed.length;
  if (restored + skipped.length + failed.length === 0) return 'The backup holds no chats.';
  const parts = [];
  if (imported.length) parts.push(`${imported.length} as ${imported.length === 1 ? 'it was' : 'they were'}`);
  if (renamed.length) {
    parts.push(`${renamed.length} renamed: ${renamed.length === 1 ? 'a chat with its id is' : 'chats with their ids are'} here already, so ${renamed.length === 1 ? 'it came in as a copy' : 'they came in as copies'}`);
  }
  if (replaced.length) parts.push(`${replaced.length} replaced`);
  if (skipped.length) parts.push(`${skipped.length} skipped`);
  if (failed.length) parts.push(`${lostIn(failed)} not restored`);
  return `Restored ${plural(restored, 'chat')}: ${parts.join('; ')}.`;
}

/** The error shown for the chats of a backup that were not written: each one's line, and why. */
function notRestored(failed) {
  const reasons = failed.map((e) => {
    const message = e?.message ?? String(e);
    // The library's messages name the line already ("line 17 of the backup is not JSON").
    return typeof e?.line === 'number' && !message.startsWith(`line ${e.line} `) ? `line ${e.line}: ${message}` : message;
  });
  const lost = lostIn(failed);
  return new Error(`${plural(lost, 'chat')} could not be restored (nothing of ${lost === 1 ? 'it' : 'them'} was written): ${reasons.join('; ')}`);
}

/** `chats-<user>-<yyyy-mm-dd>.ndjson`, today's local date, the user's name made safe for a file
 * name (any run of other characters than letters, digits, '.', '_' and '-' becomes one '-'). */
function backupName(user) {
  const d = new Date();
  const date = [d.getFullYear(), d.getMonth() + 1, d.getDate()].map((n) => String(n).padStart(2, '0')).join('-');
  const safe = user.replace(/[^\p{L}\p{N}._-]+/gu, '-').replace(/^[-.]+|-+$/g, '') || 'user';
  return `chats-${safe}-${date}.ndjson`;
}

/** Has the browser download `blob` as `name`. */
function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
