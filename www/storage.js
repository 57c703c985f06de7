// The chats on this device: "Keep my chats on this device", and the storage meter.
//
// Keeping: asks the browser to keep this origin's storage, the chats in IndexedDB included, when
// space runs low (the library's `requestPersistentStorage`, which wraps
// `navigator.storage.persist()`). The browser decides: Chromium answers at once from how the site
// is used, Firefox may ask the user. Either answer is shown; asking again is allowed until the
// browser agrees. It changes no chat, so it does not wait for an action to end, nor hold one up.
//
// The meter: how much the current user's chats take, and how much of what the browser allows the
// whole site it uses (the library's `storageEstimate`: the sizes the session records keep, and
// `navigator.storage.estimate()`; no item is read). It is measured again a moment after anything
// changes: a reply, a restore or another tab writes many times in a row, and one measure after
// them all is enough.
import { requestPersistentStorage, storageEstimate } from './lib.js';
import { DB_NAME, state } from './state.js';
import { el } from './view.js';

const KEPT = 'Your chats are kept when space runs low. Clearing this site’s data still removes them (and Safari, after 7 days without a visit): back them up to keep a copy.';
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

/** How long the meter waits after a change before measuring. */
const MEASURE_DELAY = 300;
/** The measure waiting to be taken, if any. */
let timer = 0;
/** Counts the measures, so that a slow one never draws over a newer one. */
let measures = 0;

/** Measures again in a moment: changes heard meanwhile are all in that one measure. */
export function measureSoon() {
  timer ||= setTimeout(measure, MEASURE_DELAY);
}

async function measure() {
  timer = 0;
  const read = ++measures;
  const user = state.user;
  let estimate;
  try {
    estimate = await storageEstimate({ dbName: DB_NAME, userId: user });
  } catch (e) {
    // The meter is an aside: it keeps its last figures rather than getting in the way.
    console.warn('The storage meter could not measure:', e);
    return;
  }
  // A newer measure is under way, or another user's chats are shown by now (the switch measures).
  if (read !== measures || user !== state.user) return;
  showMeter(estimate, user);
}

/** Shows what `storageEstimate` said of `user`'s chats and of the site. */
function showMeter({ usage, quota, persisted, sessions }, user) {
  const bytes = sessions.reduce((sum, s) => sum + s.bytes, 0);
  el.storageChats.textContent = `${user}’s chats: ${formatBytes(bytes)} in ${sessions.length} chat${sessions.length === 1 ? '' : 's'}`;
  el.storage.dataset.chatBytes = String(bytes);
  // The browser may say neither figure, or the usage only.
  const known = typeof usage === 'number';
  const limited = known && typeof quota === 'number' && quota > 0;
  el.storageSite.textContent = known ? `Site storage: ${formatBytes(usage)}${limited ? ` of ${formatBytes(quota)}` : ''}` : '';
  el.storageSite.hidden = !known;
  el.storageMeter.hidden = !limited;
  if (limited) {
    el.storageMeter.max = quota;
    el.storageMeter.value = usage;
    // Green while the site uses under half of what it may, then amber, red past nine tenths.
    el.storageMeter.low = quota / 2;
    el.storageMeter.high = quota * 0.9;
    el.storageMeter.optimum = 0;
    el.storageMeter.title = `${percent(usage / quota)} of what the browser allows this site`;
  }
  el.storage.hidden = false;
  // The browser says whether it keeps the data; the keep button shows it once it does.
  if (persisted) show(true);
}

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

/** `n` bytes, readably: "812 B", "3.4 KB", "27 MB", "1.0 GB" (1 KB is 1,024 bytes). */
export function formatBytes(n) {
  let unit = 0;
  // From 1,000 on, the next unit: "0.98 MB" reads better as "1.0 MB" than "1003 KB" does.
  while (n >= 1000 && unit < UNITS.length - 1) {
    n /= 1024;
    unit++;
  }
  return `${unit === 0 || n >= 10 ? Math.round(n) : n.toFixed(1)} ${UNITS[unit]}`;
}

/** A share as a percentage, with a decimal below 10% ("0.3%", "42%"). */
function percent(share) {
  const p = share * 100;
  return `${p < 10 ? p.toFixed(1) : Math.round(p)}%`;
}
