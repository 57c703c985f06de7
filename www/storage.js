// "Keep my chats on this device": asks the browser to keep this origin's storage, the chats in
// IndexedDB included, when space runs low (the library's `requestPersistentStorage`, which wraps
// `navigator.storage.persist()`). The browser decides: Chromium answers at once from how the site
// is used, Firefox may ask the user. Either answer is shown; asking again is allowed until the
// browser agrees. It changes no chat, so it does not wait for an action to end, nor hold one up.
import { requestPersistentStorage } from './lib.js';
import { el } from './view.js';

const KEPT = 'Your chats are kept on this device.';
const NOT_KEPT = 'The browser did not agree to keep them; it may clear them when space runs low.';

/** Shows whether the chats are kept: `kept` true, false, or null before anything is known. */
function show(kept) {
  el.keepStatus.textContent = kept === null ? '' : kept ? KEPT : NOT_KEPT;
  el.keep.dataset.kept = kept === null ? '' : String(kept);
  // Once kept, there is nothing more to ask for.
  el.keep.disabled = kept === true;
}

/** Asks the browser, and shows its answer. */
export async function keepChats() {
  if (el.keep.getAttribute('aria-busy') === 'true') return;
  el.keep.setAttribute('aria-busy', 'true');
  el.keepStatus.textContent = 'Asking the browser…';
  let kept = false;
  try {
    kept = await requestPersistentStorage();
  } finally {
    el.keep.removeAttribute('aria-busy');
    show(kept === true);
  }
}

/** Shows at load whether the browser keeps the chats already (it says so without asking). */
export async function showKept() {
  try {
    if (await navigator.storage?.persisted?.()) show(true);
  } catch {
    // Unknown: the button stays, to ask.
  }
}
