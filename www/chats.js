// The current user's chats in IndexedDB: their sessions, which one is open (and on which of its
// branches), and reading what the sidebar and the chat header and conversation show (the agent
// answering in the header is read from the history: the last handoff in it). The sidebar
// comes from `listSessions` (session records only: titles, summaries and the branch each chat was
// last on included); the header from the open chat's `getInfo()` and `getSessionUsage()`; the only
// history read is the open chat's (its branches' turns too, when it has branches).
//
// A locked user's chats (keys.js) are opened through an EncryptedSession, on their main branch
// only; the library keeps no title, summary or usage for them and cannot read them, so the page
// shows its own title for the open chat (its first message, in memory only) and nothing is read
// at all until the passphrase is entered.
import { IndexedDbSession, listSessions } from './lib.js';
import { DB_NAME, lockedOut, state, newId, savedSessionId, selectSession } from './state.js';
import { NO_SWITCHERS, readBranches } from './branches.js';
import { encryptedSession, isEncrypted, plainOf, recallKey } from './keys.js';
import { notSealed, recoverLock, unlockWith } from './seal.js';
import { activeAgentOf, contentText, isUserMessage } from './items.js';
import { closeRename, edited, el, renderAgent, renderHeader, renderLock, renderMessages, renderSidebar, renderUsage, showError } from './view.js';

/** A session of the current user's chat `id`, on its branch `branch`; for a locked user, an
 * EncryptedSession (there is no other branch), which needs the user unlocked. */
export function sessionFor(id, branch = 'main') {
  if (state.lock) {
    const key = state.keys.get(state.user);
    if (!key) throw new Error(`${state.user}'s chats are locked: enter the passphrase first.`);
    return encryptedSession(id, state.user, key);
  }
  return new IndexedDbSession(id, { userId: state.user, dbName: DB_NAME, branch });
}

/** Hears every change to chat `id` of the current user, from any tab; returns how to stop. (A
 * change event tells nothing of the content: a locked chat is heard too.) */
export function subscribeChat(id, listener) {
  const session = new IndexedDbSession(id, { userId: state.user, dbName: DB_NAME });
  let stop;
  try {
    stop = session.subscribe(listener);
  } catch (e) {
    session.free();
    throw e;
  }
  // The object lives as long as its subscription: freeing it stops its listeners.
  return () => {
    stop();
    session.free();
  };
}

/** The open chat's session: made on first use (on the chat's branch), then the same object until
 * the chat is left. */
export function current() {
  state.session ??= sessionFor(state.sessionId, state.branch);
  return state.session;
}

/** The branch chat `id` was last on, from a `listSessions` list ('main' for a chat not in it). */
export function branchOf(list, id) {
  return list.find((c) => c.sessionId === id)?.currentBranch ?? 'main';
}

/** Messages typed in a chat and not sent, by chat id (a chat not saved yet: under '', so that
 * the next new chat has it): each chat keeps its own while others are open. Only in this tab's
 * memory, and only the current user's: see `clearMessageBox`. */
const drafts = new Map();

/** The ids this tab made for new chats (see `newChatId`). */
const made = new Set();

/** An id for a new chat, not saved until its first message. */
export function newChatId() {
  const id = newId();
  made.add(id);
  return id;
}

const draftKey = (id) => (made.has(id) && !(id === state.sessionId ? state.openListed : state.listed.chats.has(id)) ? '' : id);

/** Leaves the open chat (its session is closed) for chat `id`, on its branch `branch`; `session`,
 * when given, is the one to use for it. What was typed in the message box stays with its chat. */
export async function openChat(id, session = null, branch = 'main') {
  if (id !== state.sessionId) {
    const text = el.input.value;
    const [left, next] = [draftKey(state.sessionId), draftKey(id)];
    if (text.trim()) drafts.set(left, text);
    else drafts.delete(left);
    el.input.value = drafts.get(next) ?? '';
    drafts.delete(next);
  }
  await closeChat();
  selectSession(id);
  state.openListed = state.listed.chats.has(id);
  state.session = session;
  state.branch = session?.currentBranch ?? (state.lock ? 'main' : branch);
  closeRename();
}

/** How many messages typed and not sent there are: the open chat's (in the message box, and in
 * an edit box whose text was changed) and the other chats' drafts. */
export function unsentChats() {
  const editor = el.messages.querySelector('.msg-editor textarea');
  const editing = editor && edited(editor.value, editor.closest('.msg')?.querySelector('.msg-text')?.textContent);
  return drafts.size + (el.input.value.trim() ? 1 : 0) + (editing ? 1 : 0);
}

/** Forgets what was typed in chat `id`, deleted (the chat open now keeps its own). */
export function dropDraft(id) {
  drafts.delete(id);
}

/** Empties the message box and forgets the other chats' unsent messages, and the last reply a
 * screen reader was given and the title in the rename box: a switch of user or a lock leaves
 * none of them for whoever comes to the screen next. */
export function clearMessageBox() {
  el.input.value = '';
  el.announce.textContent = '';
  el.renameInput.value = '';
  drafts.clear();
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
    // An EncryptedSession's memory is its IndexedDbSession's.
    plainOf(session).free();
  }
}

/** Resolves once the background work of chat `id`'s replies (if any is running) is done. */
export function backgroundDone(id) {
  return state.background.get(id) ?? Promise.resolve();
}

export function listChats() {
  return listSessions({ dbName: DB_NAME, userId: state.user });
}

/** What the sidebar shows of a chat of a `listSessions` list, and what tells that it changed (its
 * history's `updatedAt`, its title, summary and branch), as one string to compare. */
export function chatSignature(c) {
  return JSON.stringify([c.sessionId, c.updatedAt, c.itemCount, c.title, c.summary, c.currentBranch]);
}

/** The same, of a whole list (its order included). */
export function listSignature(list) {
  return list.map(chatSignature).join('\n');
}

/** What is told of each list the sidebar shows (search.js: the search results follow it). */
const listListeners = [];

/** Calls `fn(list)` each time the sidebar shows the chat list again: after every action, every
 * re-read for another tab's change and every reply's background work. */
export function onList(fn) {
  listListeners.push(fn);
}

/** The titles the page gave locked chats, by session id: their first message, read when the
 * chat was open, kept in memory only (the library can store no title for them without storing it
 * in clear). */
const lockedTitles = new Map();

/** Whose chat each title names (only the user who locks again forgets theirs). */
const titleOwners = new Map();

/** Forgets the titles the page gave `user`'s locked chats (their chats were locked again). */
export function forgetLockedTitles(user) {
  for (const [id, owner] of titleOwners) {
    if (owner !== user) continue;
    lockedTitles.delete(id);
    titleOwners.delete(id);
  }
}

/** The longest title the page gives a locked chat. */
const TITLE_LENGTH = 60;

/** A locked chat's title: its first user message on one line, cut to TITLE_LENGTH; else null. */
function titleFrom(items) {
  const first = items.find(isUserMessage);
  const text = first ? contentText(first.content).replace(/\s+/g, ' ').trim() : '';
  if (!text) return null;
  return text.length > TITLE_LENGTH ? `${text.slice(0, TITLE_LENGTH - 1).trimEnd()}…` : text;
}

/** What the sidebar shows of chat `c`: a locked chat with the page's title, "Locked chat" for one
 * not opened yet. */
function shownChat(c) {
  // The open chat's count is that of the version on screen: the list counts the version the
  // chat was last moved to, which another tab may have done.
  if (c.sessionId === state.sessionId && c.currentBranch !== state.branch && !lockedOut()) c = { ...c, itemCount: state.itemCount };
  if (!state.lock) return c;
  return { ...c, title: lockedTitles.get(c.sessionId) ?? (c.itemCount ? 'Locked chat' : null) };
}

/** Renders the sidebar from `list`, and remembers what it shows (live.js compares with it). */
export function showList(list) {
  state.listed = {
    signature: listSignature(list),
    chats: new Map(list.map((c) => [c.sessionId, chatSignature(c)])),
  };
  if (state.listed.chats.has(state.sessionId)) state.openListed = true;
  renderSidebar(list.map(shownChat));
  for (const fn of listListeners) {
    try {
      fn(list);
    } catch (e) {
      showError(e);
    }
  }
}

/** Opens the chat the user had open last time, else the newest one, else a new one. A locked
 * user's chats open at once when this device remembers their key; otherwise the view asks for
 * the passphrase. */
export async function openInitialChat() {
  // (Best effort: a chat that cannot be read is told when it is opened.)
  if (!state.lock) await recoverLock(state.user).catch(() => {});
  if (lockedOut()) {
    const user = state.user;
    const key = await recallKey(user, state.lock);
    const { failed } = key ? await unlockWith(user, key) : { failed: [] };
    if (failed.length) showError(notSealed(failed));
  }
  const saved = savedSessionId();
  const list = await listChats();
  // Each chat reopens on the branch it was last on.
  if (saved && (list.some((s) => s.sessionId === saved) || !list.length)) {
    // (A new chat of this tab's, before a reload: its draft goes to the next new chat.)
    if (!list.length) made.add(saved);
    await openChat(saved, null, branchOf(list, saved));
  } else if (list.length) {
    await openChat(list[0].sessionId, null, list[0].currentBranch);
  } else {
    await openChat(newChatId());
  }
}

/** Counts the reads of the view, so that a read of the chat info never draws over a newer read. */
let reads = 0;

/** How many items of each locked chat the view last said could not be decrypted. */
const skippedSaid = new Map();

/** Re-reads the chat list, the open chat's info, usage, branches and items from IndexedDB and
 * renders them. */
export async function refresh() {
  reads++;
  const list = await listChats();
  // A chat that is not in the list has not been saved yet: it has nothing to read.
  const entry = list.find((c) => c.sessionId === state.sessionId);
  const saved = entry !== undefined;
  let items = [];
  let info = null;
  let usage = null;
  let switchers = NO_SWITCHERS;
  if (lockedOut()) {
    // Nothing of a locked chat is read without the key: the view asks for the passphrase.
    state.branch = 'main';
    state.branchIds = ['main'];
  } else if (saved && state.lock) {
    const session = current();
    // (The chat read: another may be open by the time the read ends.)
    const id = state.sessionId;
    items = await session.getItems();
    const title = titleFrom(items);
    if (title) {
      lockedTitles.set(id, title);
      titleOwners.set(id, state.user);
    } else {
      // Emptied (Clear, Undo of its only exchange): its first message names it no more.
      lockedTitles.delete(id);
      titleOwners.delete(id);
    }
    // (When it was last written, as the list read just now says: Delete keeps a chat another
    // tab wrote to since, locked or not.)
    info = { title, summary: null, topics: null, updatedAt: entry.updatedAt };
    state.branch = 'main';
    state.branchIds = ['main'];
    // Said when more items are left out than were last said: not again at every re-read (a
    // reply, another tab's change) once the user dismissed it.
    const skipped = session.lastSkipped;
    if (skipped > (skippedSaid.get(id) ?? 0)) showError(new Error(`${skipped} item${skipped === 1 ? '' : 's'} of this chat could not be decrypted with this passphrase and ${skipped === 1 ? 'is' : 'are'} not shown.`));
    skippedSaid.set(id, skipped);
  } else if (saved) {
    let session = current();
    const read = () =>
      Promise.all([session.getItems(), session.getInfo(), session.getSessionUsage(), readBranches(session)]);
    let branches;
    try {
      [items, info, usage, { switchers, branches }] = await read();
    } catch (e) {
      // The branch this chat was on is gone (deleted in another tab): back to its main branch.
      if (e?.code !== 'BRANCH_NOT_FOUND' || session.currentBranch === 'main') throw e;
      await closeChat();
      state.branch = 'main';
      session = current();
      [items, info, usage, { switchers, branches }] = await read();
    }
    state.branch = session.currentBranch;
    state.branchIds = branches.map((b) => b.branchId);
  } else {
    state.branchIds = ['main'];
  }
  state.itemCount = items.length;
  state.info = info;
  // The agent the history was last handed off to answers next, after a reload too.
  state.agent = activeAgentOf(items);
  showList(list);
  renderHeader(info);
  renderAgent(state.agent);
  renderUsage(usage, state.branch, state.branchIds);
  // Editing a message makes a branch: not for a locked chat.
  renderMessages(items, switchers, { editable: !state.lock });
  renderLock();
}

/** Re-reads the chat list and the open chat's info (titles, summary), not its items: after a
 * reply's background work. Called while no action is in progress. */
export async function refreshChatInfo() {
  const read = ++reads;
  const id = state.sessionId;
  // Both reads start now, before any later action could close the session.
  const session = state.session;
  // A locked chat has no info to read: its title is the page's.
  const plain = session && !isEncrypted(session);
  const [list, info, usage] = await Promise.all([
    listChats(),
    plain ? session.getInfo() : null,
    plain ? session.getSessionUsage() : null,
  ]);
  // A later read shows newer data, or another chat is open by now.
  if (read !== reads || id !== state.sessionId) return;
  if (!state.lock) state.info = info ?? list.find((c) => c.sessionId === id) ?? null;
  showList(list);
  renderHeader(state.info);
  if (usage) renderUsage(usage, state.branch, state.branchIds);
}
