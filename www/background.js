// The work a reply leaves for after it is saved: the runner's summary of the chat and, after the
// first reply, its title (`result.background`). The page does not wait for it: the input stays
// usable, and the chat list and header are read again when it is done. What would change the chat
// under it (undo, clear, delete) or close its session waits for it first (chats.js).
import { state } from './state.js';
import { refreshChatInfo } from './chats.js';
import { whenIdle } from './busy.js';
import { setBackground, setStatus, showError } from './view.js';

/** How many replies' background work is followed now (until the view shows what it wrote). */
let following = 0;
const quietWaiters = [];

/** Whether no reply's background work is running or waiting to be shown. */
export function backgroundQuiet() {
  return following === 0;
}

/** Resolves once no reply's background work is running or waiting to be shown. */
export function whenBackgroundQuiet() {
  return following === 0 ? Promise.resolve() : new Promise((ok) => quietWaiters.push(ok));
}

/** Follows `work`, the background of a reply saved in chat `sessionId`. */
export function track(sessionId, work) {
  following++;
  // It never rejects, by contract; a rejection would be reported the same way.
  const done = Promise.resolve(work).then(
    (report) => report,
    (error) => ({ errors: [error] }),
  );
  const all = Promise.all([backgroundOf(sessionId), done]).then(() => {});
  state.background.set(sessionId, all);
  setBackground(true);
  done.then(async (report) => {
    if (state.background.get(sessionId) === all) state.background.delete(sessionId);
    try {
      // Shown once no action is in progress (one that is would show it when it ends anyway).
      await whenIdle();
      await refreshChatInfo();
      const errors = report?.errors ?? [];
      if (errors.length && !state.busy) {
        setStatus(`The reply was saved, but the chat's summary or title could not be written: ${errors.map((e) => e?.message ?? String(e)).join('; ')}`);
      }
    } catch (e) {
      showError(e);
    } finally {
      setBackground(state.background.size > 0);
      if (--following === 0) {
        // What the work wrote, it wrote before now (live.js tells other tabs' changes by this).
        state.lastActive = Date.now();
        for (const ok of quietWaiters.splice(0)) ok();
      }
    }
  });
}

function backgroundOf(sessionId) {
  return state.background.get(sessionId) ?? Promise.resolve();
}
