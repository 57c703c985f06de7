// The current user's chats in IndexedDB: their sessions, which one is open, and reading what the
// sidebar and the conversation show. The sidebar comes from `listSessions` (session records only)
// and the titles in titles.js; the only history read is the open chat's.
import { IndexedDbSession, listSessions } from './lib.js';
import { DB_NAME, state, newId, savedSessionId, selectSession } from './state.js';
import { setTitle, titleFromItems, titles } from './titles.js';
import { renderMessages, renderSidebar } from './view.js';

export function sessionFor(id) {
  let s = state.sessions.get(id);
  if (!s) {
    s = new IndexedDbSession(id, { userId: state.user, dbName: DB_NAME });
    state.sessions.set(id, s);
  }
  return s;
}

/** The open chat's session. */
export function current() {
  return sessionFor(state.sessionId);
}

/** Forgets the sessions of the current user's chats (before switching users). */
export function forgetSessions() {
  for (const s of state.sessions.values()) s.free?.();
  state.sessions.clear();
}

/** Forgets the session of one chat (after deleting it). */
export function forgetSession(id) {
  state.sessions.get(id)?.free?.();
  state.sessions.delete(id);
}

export function listChats() {
  return listSessions({ dbName: DB_NAME, userId: state.user });
}

/** Opens the chat the user had open last time, else the newest one, else a new one. */
export async function openInitialChat() {
  const saved = savedSessionId();
  const list = await listChats();
  if (saved && (list.some((s) => s.sessionId === saved) || !list.length)) {
    selectSession(saved);
  } else if (list.length) {
    selectSession(list[0].sessionId);
  } else {
    selectSession(newId());
  }
}

/** Re-reads the chat list and the open chat's items from IndexedDB and renders them. */
export async function refresh() {
  const list = await listChats();
  // A chat that is not in the list has not been saved yet: it has no items to read.
  const saved = list.some((c) => c.sessionId === state.sessionId);
  const items = saved ? await current().getItems() : [];
  const names = titles(state.user);
  if (items.length && !names.has(state.sessionId)) {
    // A chat with no title yet (saved by an older page, or its title lost with localStorage):
    // its items are at hand now, so name it from them.
    const title = titleFromItems(items);
    if (title) {
      setTitle(state.user, state.sessionId, title);
      names.set(state.sessionId, title);
    }
  }
  state.itemCount = items.length;
  renderSidebar(list.map((c) => ({ ...c, title: c.itemCount ? (names.get(c.sessionId) ?? 'Untitled chat') : 'New chat' })));
  renderMessages(items);
}
