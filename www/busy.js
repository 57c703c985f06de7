// One thing at a time: every action and every reply runs through `busy`, which disables the
// controls, shows any error in the page, then re-reads the view from IndexedDB. `whenIdle` waits
// for the action in progress, if any, to end. `sync` runs a re-read for a change made in another
// tab (live.js) between actions, holding no control up: an action started meanwhile waits for it.
// `afterEach` adds what is to be done each time the view has been read (live.js: following the
// chat and the user shown now).
import { lockedOut, openVersion, state } from './state.js';
import { refresh } from './chats.js';
import { edited, el, hideError, openEditor, putBack, setStatus, showError, updateControls } from './view.js';

/** The re-read for another tab's change in progress, if any. */
let syncing = null;

/** Runs `fn` unless something else is running. Resolves once the view shows what is stored.
 * `moved`, for an action on the open chat: run instead of `fn` where another chat (or version)
 * was opened in its place before its turn came (the page caught up with that chat's deletion in
 * another tab), so that the action is not done on the chat opened meanwhile. */
export async function busy(fn, moved) {
  if (state.busy) return;
  const focused = document.activeElement;
  const chat = openVersion();
  hideError();
  state.busy = true;
  updateControls();
  // A re-read for another tab's change ends first.
  if (syncing) await syncing;
  try {
    if (moved && openVersion() !== chat) moved();
    else await fn();
  } catch (e) {
    // An action given up with Stop says so, as a status.
    if (e?.name === 'AbortError') setStatus(e.message);
    else showError(e);
  }
  try {
    // What was saved, exactly as the sessions hold it now; a message being edited in the same
    // version stays in its box (an export, a rename, a message sent from the main box).
    await refreshKeepingEdit(chat);
  } catch (e) {
    showError(e);
  } finally {
    afterRead();
    // Whatever this tab wrote, it wrote before now (live.js tells other tabs' changes by this).
    state.lastActive = Date.now();
    state.busy = false;
    updateControls();
    refocus(focused);
    for (const ok of idleWaiters.splice(0)) ok();
  }
}

/** Gives the keyboard back to `focused`, what had it when an action started, if the action left
 * it nowhere: a button disabled while its action runs drops the focus, and a list drawn again
 * replaces its buttons (then the one that took its place, in the chat list or the search
 * results, gets it). An action that moved the focus on purpose keeps its choice. */
function refocus(focused) {
  const now = document.activeElement;
  // (One the action hid, as locking hides the message box, has the keyboard no more: the
  // browser moves it to the page at its next rendering.)
  if (!focused || focused === document.body || (now && now !== document.body && now.getClientRects().length)) return;
  const { key, sessionId } = focused.dataset ?? {};
  const target = focused.isConnected
    ? focused
    : key
      ? el.searchResults.querySelector(`button[data-key="${CSS.escape(key)}"]`)
      : sessionId && el.sessionList.querySelector(`button[data-session-id="${CSS.escape(sessionId)}"]`);
  if (target && !target.disabled && target.getClientRects().length) target.focus({ preventScroll: true });
  // The action disabled or hid its own button (Clear, the last Undo, locking): the message box
  // takes the keyboard rather than the page's start, or the passphrase box where the user is
  // locked now (a locked backup restored, a lock made in another tab).
  else if (!el.input.disabled && el.input.getClientRects().length) el.input.focus({ preventScroll: true });
  else if (lockedOut() && el.unlockPassphrase.getClientRects().length) el.unlockPassphrase.focus({ preventScroll: true });
}

/** Runs `fn`, which reads the view again for a change made in another tab (it writes nothing),
 * unless an action or another re-read is in progress (then it returns null). Errors are shown
 * (an error already shown stays). `data-sync` on the app says whether one is in progress. */
export function sync(fn) {
  if (state.busy || syncing) return null;
  el.app.dataset.sync = 'true';
  syncing = (async () => {
    try {
      await fn();
    } catch (e) {
      showError(e);
    } finally {
      afterRead();
      syncing = null;
      el.app.dataset.sync = 'false';
      // What the chat holds now decides Undo, Clear, Export and Delete.
      updateControls();
    }
  })();
  return syncing;
}

/** Whether a re-read for another tab's change is in progress. */
export function isSyncing() {
  return syncing !== null;
}

/** Resolves once no re-read for another tab's change is in progress. */
export function whenSynced() {
  return syncing ?? Promise.resolve();
}

const idleWaiters = [];
const afterReads = [];

/** Calls `fn` each time the view has been read again: at the end of every action and re-read. */
export function afterEach(fn) {
  afterReads.push(fn);
}

function afterRead() {
  for (const fn of afterReads) {
    try {
      fn();
    } catch (e) {
      showError(e);
    }
  }
}

/** Resolves once no action or reply is in progress (at once when none is). */
export function whenIdle() {
  return state.busy ? new Promise((ok) => idleWaiters.push(ok)) : Promise.resolve();
}

/** Reads the view again; a message being edited stays in its box, with what was typed, if the
 * message is still there, in the chat and version `chat` the box was opened in (another chat
 * opened in its place, its text is never carried over to a message there). */
export async function refreshKeepingEdit(chat) {
  const box = chat === openVersion() && el.messages.querySelector('.msg-editor textarea');
  const edit = box && {
    turn: box.closest('.msg').dataset.turn,
    focused: document.activeElement === box,
    original: box.closest('.msg').querySelector('.msg-text')?.textContent,
  };
  // Where the keyboard was (the input box, a control), to give it back: the editor takes it.
  const active = document.activeElement;
  await refresh();
  if (!edit) return;
  // (A message's tool that had it has it again in the messages read now.)
  const back = active?.isConnected ? active : document.activeElement;
  const li = el.messages.querySelector(`.msg[data-turn="${edit.turn}"]`);
  // (Nor where the message can no longer be edited: the chats were locked meanwhile, and an
  // encrypted chat has no branches to send an edit to.)
  if (!li?.querySelector('.msg-edit')) {
    // The message is gone (undone or cleared, here or in another tab): what was typed goes to the
    // message box, not lost (a box left as it was opened held nothing new). Not where it is
    // there but can no longer be edited, the chats locked: locking leaves no draft for whoever
    // comes to the screen next.
    if (!li && edited(box.value, edit.original) && !state.lock && !lockedOut()) {
      putBack(box.value);
      setStatus('The message you were editing is no longer in the chat (undone or cleared); your edited text is in the message box.');
    }
    return;
  }
  openEditor(li);
  const again = el.messages.querySelector('.msg-editor textarea');
  // What the box holds now (what was typed while the view was read included), and where its
  // cursor was: not moved to the end.
  again.value = box.value;
  again.setSelectionRange(box.selectionStart, box.selectionEnd, box.selectionDirection);
  if (!edit.focused) {
    again.blur();
    if (back && back !== document.body) back.focus();
  }
}
