// The current user's chats in IndexedDB: their sessions, which one is open, and reading what the
// sidebar and the conversation show. The sidebar comes from `listSessions` (session records only)
// and the titles in titles.js; the only history read is the open chat's.
import { IndexedDbSession, listSessions } from './lib.js';
import { DB_NAME, state, newId, savedSessionId, selectSession } from './state.js';
import { setTitle, titleFromItems, titles } from './titles.js';
import { renderMessages, renderSidebar } from './view.js';

/** A session of the current user's chat `id`. */
export function sessionFor(id) {
  return new IndexedDbSession(id, { userId: state.user, dbName: DB_NAME });
}

/** The open chat's session: made on first use, then the same object until the chat is left. */
export function current() {
  state.session ??= sessionFor(state.sessionId);
  return state.session;
}

/** Leaves the open chat (its session is closed) for chat `id`; `session`, when given, is the one
 * to use for it. */
export async function openChat(id, session = null) {
  await closeChat();
  selectSession(id);
  state.session = session;
}

/** Closes the open chat's session: when its chat is left (another chat or user) or deleted. */
export async function closeChat() {
  const session = state.session;
  if (!session) return;
  state.session = null;
  await closeSession(session);
}

/** `close()` waits for every earlier call on the session to take effect; then its memory is freed. */
export async function closeSession(session) {
  try {
    await session.close();
  } finally {
    session.free();
  }
}

export function listChats() {
  return listSessions({ dbName: DB_NAME, userId: state.user });
}

/** Opens the chat the user had open last time, else the newest one, else a new one. */
export async function openInitialChat() {
  const saved = savedSessionId();
  const list = await listChats();
  if (saved && (list.some((s) => s.sessionId === saved) || !list.length)) {
    await openChat(saved);
  } else if (list.length) {
    await openChat(list[0].sessionId);
  } else {
    await openChat(newId());
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
