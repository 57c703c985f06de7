// The search box over the current user's chats (the library's `searchSessions`, a full-text
// index kept with every write). Typing searches after a short pause (Enter at once); the messages
// found take the chat list's place, each with its chat's title, who wrote it, and the text around
// the match with the query's words marked. Choosing one opens its chat (main.js, through
// actions.openHit) on a branch that shows it, scrolled to the message, the words marked in it.
// Escape or × brings the chat list back; so does an empty box. The results follow the chats:
// whenever the chat list shown changes (an action, a reply, another tab), the search runs again.
// Everything shown is text: snippets and messages are a user's or a model's, and the marks are
// built from text nodes (highlight.js).
import { searchSessions } from './lib.js';
import { DB_NAME, state } from './state.js';
import { onList } from './chats.js';
import { describe } from './items.js';
import { el, formatTime, hideError, messageSource, showError, titleOf } from './view.js';
import { highlightElement, highlightText, matchRanges, parseQuery } from './highlight.js';

/** How long typing pauses before the search runs. */
const DEBOUNCE_MS = 200;
/** The most messages shown. */
const LIMIT = 20;

/** The search waiting for the typing to pause. */
let timer = 0;
/** Counts the searches started (and the clears): only the newest one's answer is shown. */
let searches = 0;
/** The chat list signature the newest search was run against (see `onList` below). */
let searchedList = null;
/** What the results show: `{ query, user, hits }`; null while the chat list is shown. */
let shown = null;
/** The chats of the list the sidebar last showed, by session id: the results' titles. */
let chats = new Map();
/** The text of the error the last search showed, to take it away once a search works again. */
let searchError = null;

/** Searches once the typing pauses; an empty box shows the chat list at once. */
export function searchSoon() {
  clearTimeout(timer);
  el.searchClear.hidden = el.searchInput.value === '';
  if (!el.searchInput.value.trim()) {
    showChatList();
    return;
  }
  timer = setTimeout(search, DEBOUNCE_MS);
}

/** Searches now (Enter). */
export function searchNow() {
  clearTimeout(timer);
  return search();
}

/** Empties the box and shows the chat list again (Escape, ×, another user). */
export function clearSearch() {
  clearTimeout(timer);
  el.searchInput.value = '';
  el.searchClear.hidden = true;
  showChatList();
}

/** Whether the search results are shown (rather than the chat list). */
export function searching() {
  return shown !== null;
}

/** Runs the query in the box for the current user, and shows what it finds. */
async function search() {
  timer = 0;
  const query = el.searchInput.value;
  if (!query.trim()) {
    showChatList();
    return;
  }
  const n = ++searches;
  const user = state.user;
  searchedList = state.listed.signature;
  let hits;
  try {
    // A search first indexes what is not indexed yet (after an upgrade of the library, the whole
    // history again): that is said while it lasts.
    const onProgress = ({ done, total }) => {
      if (n === searches && user === state.user && total > 0) {
        el.searchStatus.textContent = `Updating the search index: ${done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} messages…`;
      }
    };
    hits = await searchSessions({ dbName: DB_NAME, userId: user, query, limit: LIMIT, onProgress });
  } catch (e) {
    if (n !== searches || user !== state.user) return;
    // A query the library refuses (INVALID_QUERY: too long): said where every error is.
    showError(e);
    searchError = el.errorText.textContent;
    showResults(query, user, null);
    return;
  }
  if (n !== searches || user !== state.user) return;
  if (searchError !== null && !el.error.hidden && el.errorText.textContent === searchError) hideError();
  searchError = null;
  showResults(query, user, hits);
}

/** Puts the chat list back in the results' place. */
function showChatList() {
  // A search still running is not shown.
  searches++;
  shown = null;
  searchedList = null;
  el.searchResults.replaceChildren();
  el.searchResults.hidden = true;
  delete el.searchResults.dataset.query;
  el.searchStatus.textContent = '';
  el.sessionList.hidden = false;
  if (searchError !== null && !el.error.hidden && el.errorText.textContent === searchError) hideError();
  searchError = null;
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Shows `hits` (null: the search failed) in the chat list's place. The hit that had the focus
 * keeps it, if it is still found. */
function showResults(query, user, hits) {
  const focused = el.searchResults.contains(document.activeElement) ? document.activeElement.dataset.key : null;
  shown = { query, user, hits: hits ?? [], failed: hits === null };
  el.sessionList.hidden = true;
  el.searchResults.hidden = false;
  // What the results are for (the tests wait on it).
  el.searchResults.dataset.query = query;
  el.searchStatus.textContent =
    hits === null
      ? 'The search could not be run.'
      : hits.length === 0
        ? 'No messages match'
        : `${plural(hits.length, 'message')} found${hits.length === LIMIT ? ' (the best matches)' : ''}`;
  const clauses = parseQuery(query);
  el.searchResults.replaceChildren(...shown.hits.map((hit, i) => resultRow(hit, i, clauses)));
  if (focused) el.searchResults.querySelector(`button[data-key="${CSS.escape(focused)}"]`)?.focus();
}

/** A key naming a hit's message: its chat, branch and place. */
const keyOf = (hit) => JSON.stringify([hit.sessionId, hit.branch ?? 'main', hit.seq]);

const MESSAGE_ROLES = new Set(['user', 'assistant', 'system', 'developer']);

/** How the page shows an item of `role` (a hit's `role`: a message's role or an item's type):
 * `{ kind, label }`, as the conversation labels it. */
const shownAs = (role) => describe(MESSAGE_ROLES.has(role) ? { role } : { type: role });

function resultRow(hit, index, clauses) {
  const li = document.createElement('li');
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'search-hit';
  b.dataset.index = String(index);
  b.dataset.key = keyOf(hit);
  b.dataset.sessionId = hit.sessionId;
  // Drawn during an action (the results follow the chats): usable once it ends (view.js).
  b.disabled = state.busy;
  if (hit.sessionId === state.sessionId) b.classList.add('search-hit-open');
  const title = document.createElement('span');
  title.className = 'search-hit-title';
  title.textContent = titleOf(chats.get(hit.sessionId));
  const meta = document.createElement('span');
  meta.className = 'search-hit-meta';
  const parts = [shownAs(hit.role).label];
  if (hit.branch) parts.push(`branch “${hit.branch}”`);
  if (hit.createdAt) parts.push(formatTime(hit.createdAt));
  meta.textContent = parts.join(' · ');
  const snippet = document.createElement('span');
  snippet.className = 'search-hit-snippet';
  snippet.append(highlightText(hit.snippet, clauses));
  b.append(title, meta, snippet);
  li.append(b);
  return li;
}

/** The hit of result button `b`, with the query that found it: `{ hit, query }`. */
export function hitOf(b) {
  const hit = shown?.hits[Number(b.dataset.index)];
  return hit ? { hit, query: shown.query } : null;
}

/** The rendered message of `hit` in the open chat, or null.
 *
 * A hit names its item by `seq`, the item's sequence number in its branch's storage. The page
 * cannot turn that into a position: the numbers start wherever the chat's last Clear or
 * compaction left them, and `getInfo()` does not say where. What it relies on instead is the
 * hit's `turn` and `role`: the library numbers turns from 1, each starting at a user message
 * (the items before the first one are turn 0), on every branch alike, and renumbers them when it
 * rewrites a history; the view counts them the same way (`data-in-turn`, view.js). A turn
 * holds one user message and, usually, one answer; when it holds several messages of the hit's
 * role (tool calls, several answers), the one whose text holds the snippet is the one (the
 * snippet is the item's own text, white space collapsed), else the first that holds the query's
 * words. */
function messageOf(hit, clauses) {
  const kind = shownAs(hit.role).kind;
  const candidates = [...el.messages.querySelectorAll('.msg')].filter((li) => li.dataset.inTurn === String(hit.turn) && li.dataset.role === kind);
  if (candidates.length <= 1) return candidates[0] ?? null;
  const collapse = (text) => text.replace(/\s+/g, ' ').trim();
  const core = collapse(hit.snippet.replace(/^…/, '').replace(/…$/, ''));
  return (
    candidates.find((li) => collapse(messageSource(li)).includes(core)) ??
    candidates.find((li) => matchRanges(messageSource(li), clauses).length > 0) ??
    candidates[0]
  );
}

/** Once `hit`'s chat is open (on a branch that shows its message, `actions.openHit`): scrolls
 * its message into view, with the query's words marked in it. Returns whether the message was
 * found. */
export function revealHit({ hit, query }) {
  if (hit.sessionId !== state.sessionId || state.hitShown !== hit) return false;
  const clauses = parseQuery(query);
  for (const old of el.messages.querySelectorAll('.msg-found')) old.classList.remove('msg-found');
  const li = messageOf(hit, clauses);
  if (!li) return false;
  li.classList.add('msg-found');
  const marks = highlightElement(li.querySelector('.msg-text'), clauses);
  (marks[0] ?? li).scrollIntoView({ block: 'center', inline: 'nearest' });
  // On a phone the sidebar (and the result chosen in it) is gone: the message takes the focus.
  if (el.searchInput.getClientRects().length === 0) {
    li.tabIndex = -1;
    li.focus({ preventScroll: true });
  }
  return true;
}

// The results follow the chats: a list that differs from the one the search ran against (a
// message added or removed, a chat renamed, made or deleted, here or in another tab) runs it
// again. The titles come from the list.
onList((list) => {
  chats = new Map(list.map((c) => [c.sessionId, c]));
  // The messages of the open chat stand out (another chat may be open by now).
  for (const b of el.searchResults.querySelectorAll('.search-hit')) b.classList.toggle('search-hit-open', b.dataset.sessionId === state.sessionId);
  // Nothing searched, or a query the library refused: nothing to run again.
  if ((!shown && searchedList === null) || shown?.failed) return;
  if (shown && shown.user !== state.user) {
    clearSearch();
    return;
  }
  if (state.listed.signature !== searchedList && !timer) searchSoon();
});
