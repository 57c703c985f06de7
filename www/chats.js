// The current user's chats in IndexedDB: their sessions, which one is open, and reading what the
// sidebar and the chat header and conversation show. The sidebar comes from `listSessions`
// (session records only: titles and summaries included); the header from the open chat's
// `getInfo()`; the only history read is the open chat's.
import { IndexedDbSession, listSessions } from './lib.js';
import { DB_NAME, state, newId, savedSessionId, selectSession } from './state.js';
import { closeRename, renderHeader, renderMessages, renderSidebar, showError } from './view.js';

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
  closeRename();
}

/** Closes the open chat's session: when its chat is left (another chat or user) or deleted. If a
 * reply's background work (its summary, its title) is still using the session, the session is
 * closed once that work is done, and the page goes on meanwhile. */
export async function closeChat() {
  const session = state.session;
  if (!session) return;
  state.session = null;
  const pending = state.background.get(session.sessionId);
  if (pending) {
    pending.then(() => closeSession(session)).catch(showError);
    return;
  }
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

/** Resolves once the background work of chat `id`'s replies (if any is running) is done. */
export function backgroundDone(id) {
  return state.background.get(id) ?? Promise.resolve();
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

/** Counts the reads of the view, so that a read of the chat info never draws over a newer read. */
let reads = 0;

/** Re-reads the chat list, the open chat's info and its items from IndexedDB and renders them. */
export async function refresh() {
  reads++;
  const list = await listChats();
  // A chat that is not in the list has not been saved yet: it has nothing to read.
  const saved = list.some((c) => c.sessionId === state.sessionId);
  const [items, info] = saved ? await Promise.all([current().getItems(), current().getInfo()]) : [[], null];
  state.itemCount = items.length;
  state.info = info;
  renderSidebar(list);
  renderHeader(info);
  renderMessages(items);
}

/** Re-reads the chat list and the open chat's info (titles, summary), not its items: after a
 * reply's background work. Called while no action is in progress. */
export async function refreshChatInfo() {
  const read = ++reads;
  const id = state.sessionId;
  // Both reads start now, before any later action could close the session.
  const session = state.session;
  const [list, info] = await Promise.all([listChats(), session ? session.getInfo() : null]);
  // A later read shows newer data, or another chat is open by now.
  if (read !== reads || id !== state.sessionId) return;
  state.info = info ?? list.find((c) => c.sessionId === id) ?? null;
  renderSidebar(list);
  renderHeader(state.info);
}
