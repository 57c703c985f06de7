// The current user's chats in IndexedDB: their sessions, which one is open, and reading what the
// sidebar and the conversation show.
import { IndexedDbSession, listSessions } from './lib.js';
import { DB_NAME, state, newId, savedSessionId, selectSession } from './state.js';
import { contentText, isUserMessage, shorten } from './items.js';
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

/** Re-reads the sessions and the open conversation from IndexedDB and renders them. */
export async function refresh() {
  const list = await listChats();
  const titled = await Promise.all(
    list.map(async (info) => {
      const items = info.itemCount ? await sessionFor(info.sessionId).getItems() : [];
      const first = items.find(isUserMessage);
      return { ...info, title: first ? shorten(contentText(first.content)) || 'Untitled chat' : 'Empty chat' };
    }),
  );
  const items = await current().getItems();
  state.itemCount = items.length;
  renderSidebar(titled);
  renderMessages(items);
}
