// "Lock this user's chats with a passphrase", and what follows: the unlock prompt, "Remember on
// this device", "Lock now" and "Forget on this device". How the keys are made, checked and kept
// is keys.js; how the chats are encrypted in place, seal.js. Each action runs through `busy`, so
// the view is read again afterwards (and asks for the passphrase whenever the current user is
// locked and not unlocked in this tab).
//
// A wrong passphrase is found out by the lock's check before anything else happens: no chat is
// read or written with a key that does not fit.
import { lockedOut, readLock, saveLock, saveUsers, state } from './state.js';
import { clearMessageBox, closeChat, forgetLockedTitles } from './chats.js';
import { busy, whenIdle } from './busy.js';
import { settleChats } from './actions.js';
import { clearSearch } from './search.js';
import { REMEMBERED, followMark, forgetKey, keyOf, newLock, normalized, rememberKey } from './keys.js';
import { notSealed, sealChats, unlockWith } from './seal.js';
import { el, renderLock, setStatus } from './view.js';

/** The shortest passphrase taken (the field says so too). */
const MIN_LENGTH = 8;

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Shows `text` under a form (`p` its error paragraph); an empty text hides it. */
function formError(p, text) {
  p.textContent = text;
  p.hidden = !text;
}

/** Opens the lock form (the sidebar's button). */
export function openLockForm() {
  if (state.busy || state.lock) return;
  el.lockForm.hidden = false;
  el.lockOpen.hidden = true;
  el.lockOpen.setAttribute('aria-expanded', 'true');
  formError(el.lockError, '');
  el.lockPassphrase.focus();
}

/** Closes it, forgetting what was typed. */
export function closeLockForm() {
  el.lockForm.hidden = true;
  el.lockForm.reset();
  formError(el.lockError, '');
  el.lockOpen.hidden = state.lock !== null;
  el.lockOpen.setAttribute('aria-expanded', 'false');
}

/** Locks the current user's chats with `passphrase` (typed twice: `again`): every chat is
 * encrypted in place, and from then on opened through an EncryptedSession. With `remember`, this
 * device keeps the key. */
export function lockChats(passphrase, again, remember) {
  if (state.busy || state.lock) return;
  if (normalized(passphrase).length < MIN_LENGTH) return formError(el.lockError, `The passphrase must have at least ${MIN_LENGTH} characters.`);
  if (normalized(passphrase) !== normalized(again)) return formError(el.lockError, 'The two passphrases differ: type the same one twice.');
  formError(el.lockError, '');
  return busy(async () => {
    const user = state.user;
    // What replies are still writing in clear (summaries, titles) lands before the chats are
    // sealed, not after.
    await settleChats();
    // One lock at a time per user, across tabs: two tabs locking at once with two passphrases
    // would each seal some chats, under two keys, one of which no record keeps.
    const failed = await oneAtATime(user, async () => {
      const first = readLock(user);
      if (first) {
        // Another tab locked them first: its passphrase is the one.
        state.lock = first;
        await closeForLock(user);
        closeLockForm();
        setStatus(`${user}'s chats were locked in another tab first: unlock them with that passphrase.`);
        return [];
      }
      setStatus('Encrypting the chats…');
      const { key, record } = await newLock(user, passphrase);
      // Nothing writes through the open chat's plain session any more; it reopens encrypted.
      await closeChat();
      state.branch = 'main';
      clearSearch();
      // The lock is recorded before the first chat is sealed, marked pending until the last one
      // is: a reload in between asks for the passphrase, then finishes the job (seal.js).
      saveLock(user, record);
      state.keys.set(user, key);
      // (The passphrase leaves the form now, whatever comes next.)
      closeLockForm();
      const { sealed, failed } = await sealChats(user, key);
      if (failed.length === 0) saveLock(user, { ...record, pending: false });
      // The chats are locked whether or not this device can keep the key (storage full): said,
      // not taken for a failed lock.
      const remembered = remember && (await rememberKey(user, key).then(() => true, () => false));
      const note = remember ? (remembered ? ' This device remembers the key.' : ' This device could not keep the key: the passphrase will be asked after a reload.') : '';
      setStatus(`Locked: ${plural(sealed.length, 'chat')} of ${user}'s encrypted.${note}`);
      return failed;
    });
    if (failed.length) throw notSealed(failed);
  });
}

/** Runs `fn` while no other tab of the site locks `user`'s chats (a Web Lock, where the browser
 * has them). */
function oneAtATime(user, fn) {
  return navigator.locks?.request ? navigator.locks.request(`agent-sessions-demo.locking.${user}`, fn) : fn();
}

/** Unlocks the current user's chats with `passphrase`, if it is theirs; with `remember`, this
 * device keeps the key. A wrong one is said under the field, and nothing else happens. */
export function unlock(passphrase, remember) {
  if (state.busy || !lockedOut()) return;
  formError(el.unlockError, '');
  return busy(async () => {
    const user = state.user;
    const record = state.lock;
    setStatus('Checking the passphrase…');
    const key = await keyOf(user, passphrase, record);
    if (!key) {
      setStatus('');
      formError(el.unlockError, 'That is not the passphrase of these chats. Nothing was changed.');
      el.unlockPassphrase.select();
      return;
    }
    el.unlockForm.reset();
    // The passphrase was right: the chats open whether or not this device can keep the key.
    const remembered = remember && (await rememberKey(user, key).then(() => true, () => false));
    const { failed } = await unlockWith(user, key);
    const note = remember ? (remembered ? ' This device remembers the key.' : ' This device could not keep the key: the passphrase will be asked after a reload.') : '';
    setStatus(`Unlocked ${user}'s chats.${note}`);
    if (failed.length) throw notSealed(failed);
  });
}

/** Locks the current user's chats again now: the key leaves this tab and this device; the
 * passphrase opens them again. */
export function lockNow() {
  return busy(async () => {
    const user = state.user;
    await settleChats();
    await closeChat();
    // A message typed (or put back by Undo) in a locked chat is not left for whoever comes next.
    clearMessageBox();
    state.keys.delete(user);
    // The sidebar named the chats opened in this tab after their first message: not any more.
    forgetLockedTitles(user);
    // Every tab locks them: the others hear it and close what they hold open (before this
    // device forgets the key, which may fail: they lock all the same).
    localStorage.setItem(`${LOCKED_NOW}${user}`, String(Date.now()));
    try {
      await forgetKey(user);
    } catch (e) {
      // Locked in the tabs, but not on this device: said plainly, beside the error.
      setStatus(`${user}'s chats are locked in the open tabs, but this device could not forget the key: after a reload they open without the passphrase. Unlock and choose Lock now again once the storage works.`);
      throw e;
    }
    setStatus(`${user}'s chats are locked. The passphrase opens them again.`);
  });
}

/** The key of the mark Lock now leaves for the other tabs, followed by the user's name. */
const LOCKED_NOW = 'agent-sessions-demo.lockedNow.';

/** This device forgets the current user's key: the passphrase is asked after the next reload
 * (the chats stay open in this tab until then, or until Lock now). */
export function forgetOnDevice() {
  return busy(async () => {
    await forgetKey(state.user);
    setStatus('This device no longer remembers the key: the passphrase will be asked after a reload.');
  });
}

/** Follows the locks other tabs make: when the current user's lock changes in another tab (they
 * were locked there), this tab closes the open chat, which its plain session would otherwise go
 * on writing in clear, and asks for the passphrase, once the action in progress here is over.
 * A key remembered or forgotten on this device in another tab is said here too. */
export function followLocksElsewhere() {
  window.addEventListener('storage', async (e) => {
    if (e.storageArea !== localStorage) return;
    if (e.key?.startsWith(REMEMBERED)) {
      // Remembered or forgotten on this device in another tab: this tab says so too (its Forget
      // on this device button comes and goes with it).
      // (What the mark says now: an event may come after this tab's own, newer one.)
      const user = e.key.slice(REMEMBERED.length);
      followMark(user);
      if (user === state.user) renderLock();
      return;
    }
    if (e.key?.startsWith(LOCKED_NOW)) {
      // Lock now in another tab: this one forgets the key too.
      const user = e.key.slice(LOCKED_NOW.length);
      while (state.busy) await whenIdle();
      if (!state.keys.has(user)) return;
      if (user !== state.user) {
        // Another user of this tab: their key goes too, so switching to them asks for it (what
        // the device remembers is what the locking tab said: forgotten, unless that failed).
        state.keys.delete(user);
        followMark(user);
        forgetLockedTitles(user);
        return;
      }
      await busy(async () => {
        await closeForLock(user);
        setStatus(`${user}'s chats were locked in another tab.`);
      });
      return;
    }
    if (e.key !== null && !e.key.startsWith('agent-sessions-demo.lock.')) return;
    while (state.busy) await whenIdle();
    const record = readLock(state.user);
    // The storage cleared in another tab (the chats kept): what this tab knows is written back,
    // the users and the lock, which does not go with it: the chats stay encrypted here, and ask
    // for the passphrase in every tab opened after.
    if (e.key === null) {
      saveUsers();
      if (record === null && state.lock) {
        saveLock(state.user, state.lock);
        return;
      }
    }
    // The same lock (its `pending` mark cleared): nothing to close.
    if (record?.salt === state.lock?.salt) {
      state.lock = record;
      return;
    }
    await busy(async () => {
      state.lock = readLock(state.user);
      await closeForLock(state.user);
      setStatus(`${state.user}'s chats were locked in another tab.`);
    });
  });
}

/** What follows a lock of `user`'s chats (the current user's) that did not come from this tab's
 * Lock button (another tab's, a restored backup's): the chat open in clear is closed, with what
 * this tab knew of the key and of the chats' first messages, and the search; the passphrase is
 * asked next. */
export async function closeForLock(user) {
  await closeChat();
  clearMessageBox();
  // A passphrase typed into the lock form is not kept there.
  closeLockForm();
  state.keys.delete(user);
  // (Whether this device remembers the key is what the tabs last said: the tab that locked them
  // may have kept it, and said so before this one got here.)
  followMark(user);
  forgetLockedTitles(user);
  clearSearch();
}
