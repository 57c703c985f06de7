// One thing at a time: every action and every reply runs through `busy`, which disables the
// controls, shows any error in the page, then re-reads the view from IndexedDB. `whenIdle` waits
// for the action in progress, if any, to end.
import { state } from './state.js';
import { refresh } from './chats.js';
import { hideError, showError, updateControls } from './view.js';

/** Runs `fn` unless something else is running. Resolves once the view shows what is stored. */
export async function busy(fn) {
  if (state.busy) return;
  hideError();
  state.busy = true;
  updateControls();
  try {
    await fn();
  } catch (e) {
    showError(e);
  }
  try {
    // What was saved, exactly as the sessions hold it now.
    await refresh();
  } catch (e) {
    showError(e);
  } finally {
    state.busy = false;
    updateControls();
    for (const ok of idleWaiters.splice(0)) ok();
  }
}

const idleWaiters = [];

/** Resolves once no action or reply is in progress (at once when none is). */
export function whenIdle() {
  return state.busy ? new Promise((ok) => idleWaiters.push(ok)) : Promise.resolve();
}
