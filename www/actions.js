// What the buttons do to chats and users: switch user, new chat, select a chat, switch the branch
// of the open chat, rename, undo, clear, delete, export and import. Each runs through `busy`, so the view is re-read from IndexedDB
// afterwards. A locked user's chat (an EncryptedSession) has no metadata the page could write in
// clear: no rename, and undo, clear, export and import leave titles and summaries alone.
import { deleteSession, sessionLockName } from './lib.js';
import { DB_NAME, state, newId, saveUsers, setUser } from './state.js';
import { backgroundDone, branchOf, clearMessageBox, closeChat, closeSession, dropDraft, current, listChats, newChatId, openChat, openInitialChat, sessionFor } from './chats.js';
import { contentText, isUserMessage } from './items.js';
import { busy } from './busy.js';
import { clearSearch } from './search.js';
import { isEncrypted } from './keys.js';
import { closeRename, el, putBack, renderUsers, resetLockForms, setStatus, updateControls } from './view.js';

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

export function switchUser(user) {
  if (user === state.user) return;
  return busy(async () => {
    // The search box searched the other user's chats, and the message box held a message of
    // theirs.
    clearSearch();
    clearMessageBox();
    await closeChat();
    // The other user's chat is no longer open: where opening one of this user's fails, the
    // page has none open (Try again opens one) rather than the other user's id.
    state.sessionId = '';
    state.branch = 'main';
    setUser(user);
    renderUsers();
    // The unlock prompt (if they are locked) and the lock form are this user's now.
    resetLockForms();
    await openInitialChat();
    setStatus(`Now chatting as ${user}.`);
  });
}

export function addUser(name) {
  if (state.busy) return;
  if (!state.users.includes(name)) state.users.push(name);
  saveUsers();
  renderUsers();
  return switchUser(name);
}

export function newChat() {
  return busy(async () => {
    await openChat(newChatId());
    setStatus('New chat. It is saved with its first message.');
    el.input.focus();
  });
}

export function selectChat(id) {
  // Selecting the open chat only reads it again. Another chat opens on the branch it was last on.
  return busy(async () => {
    if (id !== state.sessionId) await openChat(id, null, branchOf(await listChats(), id));
  });
}

/** Whether the open chat's branch `branch` shows the message of search hit `hit`: it is on the
 * hit's branch (`hit.branch`, else 'main'), or the branch's `view` (the stored rows it shows)
 * holds the hit's row, as on a branch made from the hit's after its turn. */
async function showsHit(branch, hit) {
  const own = hit.branch ?? 'main';
  if (branch === own) return true;
  const entry = (await current().listBranches()).find((b) => b.branchId === branch);
  return !!entry?.view?.some((v) => v.branchId === own && hit.seq >= v.from && hit.seq < v.to);
}

/** Opens the chat of search hit `hit` (a `searchSessions` hit) on a branch that shows its
 * message: the one the chat is on where it does (an edited chat shows the messages before the
 * edit), else `hit.branch`, else 'main' (which is then remembered, as the switcher does). The
 * chat is the current user's: the search is theirs only. search.js then shows the message. */
export function openHit(hit) {
  state.hitShown = null;
  return busy(async () => {
    const branch = hit.branch ?? 'main';
    if (hit.sessionId !== state.sessionId) {
      const list = await listChats();
      if (!list.some((c) => c.sessionId === hit.sessionId)) throw new Error('That chat is no longer here: it was deleted.');
      await openChat(hit.sessionId, null, branchOf(list, hit.sessionId));
    }
    if (!(await showsHit(state.branch, hit))) {
      await settleOpenChat();
      await current().switchBranch(branch);
      state.branch = branch;
      // (The wait above said what it waited for; this is what came of it.)
      showingBranch(branch);
    }
    // Only now (not after a Stop or a failure on the way): the chat shows the hit's message.
    state.hitShown = hit;
  });
}

/** Shows branch `id` of the open chat (the switcher on a message), and remembers it: the chat
 * reopens on it. */
export function switchBranch(id) {
  return busy(async () => {
    await settleOpenChat();
    await current().switchBranch(id);
    state.branch = id;
    showingBranch(id);
  }, () => setStatus(CLOSED('No other version was shown')));
}

/** What an action on a chat closed before its turn came says (see `busy`). */
const CLOSED = (what) => `${what}: the chat or version it was asked in was closed before it could be done (deleted in another tab).`;

const showingBranch = (id) => setStatus(id === 'main' ? 'Showing the original conversation.' : `Showing branch “${id}”.`);

/** Renames the open chat (saving it, if it was not yet). The library refuses a title longer than
 * 1,000 characters; the error is shown and the title stays in the box to be shortened. */
export function renameChat(text) {
  // (A title is the chat's, whatever version it shows: only another chat opened in its place
  // meanwhile, see `busy`, keeps it from being set.)
  const id = state.sessionId;
  return busy(async () => {
    if (state.sessionId !== id) {
      closeRename();
      setStatus(CLOSED('No chat was renamed'));
      return;
    }
    const title = text.replace(/\s+/g, ' ').trim();
    if (!title) throw new Error('A chat title cannot be empty.');
    if (state.lock) throw new Error('A locked chat cannot be renamed: its title would be stored unencrypted.');
    // A title the model is writing now would land on top of this one.
    await settleOpenChat();
    await current().update({ title });
    closeRename();
    setStatus(`Chat renamed to “${title.length > 60 ? `${title.slice(0, 59)}…` : title}”.`);
  });
}

/** Waits for the background work of the open chat's last reply (its summary and title): what
 * is about to change the chat (or its branch) must not have that work land on top of it. */
export function settleOpenChat() {
  return settleChats([state.sessionId]);
}

/** Waits for the background work of chats `ids` (by default every chat's): their summaries and
 * titles land before what is about to change them (delete, seal), not after. A slow model can
 * take minutes: Stop (or Escape) gives up the action instead (an `AbortError`, which `busy`
 * reports as a status), and the work goes on. */
export async function settleChats(ids = [...state.background.keys()]) {
  const pending = ids.filter((id) => state.background.has(id));
  if (pending.length === 0) return;
  const one = pending.length === 1;
  setStatus(`Waiting for the ${one ? 'chat’s summary and title' : 'chats’ summaries and titles'} to be written… (Stop gives up)`);
  const controller = new AbortController();
  state.controller = controller;
  state.settling = true;
  updateControls();
  try {
    await new Promise((done, fail) => {
      Promise.all(pending.map(backgroundDone)).then(done, fail);
      controller.signal.addEventListener('abort', () =>
        fail(new DOMException(`Not done: stopped while the ${one ? 'chat’s summary and title were' : 'chats’ summaries and titles were'} being written. Try again once they are.`, 'AbortError')),
      );
    });
  } finally {
    state.controller = null;
    state.settling = false;
    updateControls();
  }
}

/** Runs `change` on the chat `session` while no reply is being written in it, in any tab (the
 * lock a run holds from reading the history to saving its answer): `false`, nothing run, when
 * one is. (Undone or cleared under it, the question that reply answers would be gone, and its
 * answer, paid for, refused when saved.) */
async function whileNoReply(session, change) {
  if (!navigator.locks?.request) {
    await change();
    return true;
  }
  return navigator.locks.request(sessionLockName(session.dbName, session.sessionId), { ifAvailable: true }, async (lock) => {
    if (!lock) return false;
    await change();
    return true;
  });
}

const WRITING = 'the chat is in use in another tab (a reply being written, most likely)';

/** Pops items until a user message has been popped: the last answer and its question. */
export function undoLastExchange() {
  return busy(async () => {
    await settleOpenChat();
    const session = current();
    const popped = [];
    const free = await whileNoReply(session, async () => {
      for (;;) {
        const item = await session.popItem();
        if (item === undefined) break;
        popped.push(item);
        if (isUserMessage(item)) break;
      }
    });
    if (!free) {
      setStatus(`Nothing was undone: ${WRITING}. Undo once it is done.`);
      return;
    }
    // Undoing every exchange of a chat without other versions empties it, as Clear does: its
    // title and summary go too.
    if (popped.length && state.branchIds.length === 1 && !isEncrypted(session) && (await session.getInfo()).itemCount === 0) await forgetMetadata(session);
    const question = popped.find(isUserMessage);
    // (Above what the box holds, if anything: neither is lost. A question of images only has no
    // text to put back.)
    const text = question ? contentText(question.content) : '';
    const typed = el.input.value.trim() !== '';
    if (text.trim()) putBack(text);
    const back = text.trim() ? `the question is back in the input box${typed ? ', above your text' : ''}` : 'the question had no text to put back';
    setStatus(!popped.length ? 'Nothing to undo.' : `Removed ${plural(popped.length, 'item')}; ${question ? back : 'no question was among them'}.`);
  }, () => setStatus(CLOSED('Nothing was undone')));
}

/** What the model and the library wrote about a chat that is now empty: its next first message
 * names it again. (A locked chat has none.) */
function forgetMetadata(session) {
  if (isEncrypted(session)) return;
  return session.update({ title: null, summary: null, topics: null });
}

/** Empties the open chat, once the user confirms (nothing brings it back), and forgets its
 * title and summary: its next first message names it. A chat with other versions (branches)
 * loses only the one shown; the others keep the chat's title and stay a choice in the header. */
export function clearChat() {
  if (state.busy) return;
  const versions = state.branchIds.length > 1;
  const question = versions
    ? 'Clear this version of the chat? Its other versions are kept.'
    : `Clear the chat “${el.chatTitle.textContent}”? Its messages are removed from this browser; the chat stays in the list, empty.`;
  // The chat as it was shown when the user said yes (see deleteChat).
  const shown = state.info?.updatedAt;
  // An empty chat has nothing to lose.
  if (state.itemCount > 0 && !confirm(question)) {
    setStatus('The chat was kept.');
    return;
  }
  return busy(async () => {
    await settleOpenChat();
    const session = current();
    // One another tab wrote to since is kept (the clear would erase what it wrote), and one it
    // deleted is not made again (forgetting its title would store it anew, empty).
    const id = state.sessionId;
    const list = await listChats();
    const now = list.find((c) => c.sessionId === id);
    if (typeof shown === 'number' && now?.updatedAt !== shown) {
      if (now) {
        await openChat(id, null, state.branch);
        setStatus('The chat was kept: another tab wrote to it after you asked to clear it. Read it, then clear it again to empty it.');
      } else {
        // What was typed in it stays in the box, after what was typed in the chat open now (a
        // clear empties the chat, not the box), as when the page finds the deletion itself.
        const typed = el.input.value;
        await openChat(list.length ? list[0].sessionId : newChatId(), null, list[0]?.currentBranch);
        dropDraft(id);
        if (typed.trim()) el.input.value = el.input.value.trim() ? `${el.input.value}\n\n${typed}` : typed;
        setStatus('The chat was deleted in another tab.');
      }
      return;
    }
    if (!(await whileNoReply(session, () => session.clearSession()))) {
      setStatus(`The chat was kept: ${WRITING}. Clear it once that is done.`);
      return;
    }
    if (!versions) await forgetMetadata(session);
    setStatus(versions ? 'This version was cleared; the others are kept (Version, above).' : 'Chat cleared.');
  }, () => setStatus(CLOSED('Nothing was cleared')));
}

/** Deletes the open chat, once the user confirms. */
export function deleteChat() {
  if (state.busy) return;
  if (!confirm(`Delete the chat “${el.chatTitle.textContent}”? Its messages are removed from this browser.`)) {
    setStatus('The chat was kept.');
    return;
  }
  // The chat as it was shown when the user said yes: one another tab wrote to since is kept.
  const shown = state.info?.updatedAt;
  // (The chat's, whatever version it shows: only another chat opened in its place meanwhile,
  // see `busy`, keeps it from being deleted.)
  const asked = state.sessionId;
  return busy(async () => {
    const id = state.sessionId;
    if (id !== asked) {
      setStatus(CLOSED('Nothing was deleted'));
      return;
    }
    const branch = state.branch;
    // Closed only once nothing writes to it any more: a summary written after the delete would
    // bring the chat back.
    await settleOpenChat();
    await closeChat();
    const guard = typeof shown === 'number' ? { expectedUpdatedAt: shown } : {};
    let removed;
    try {
      removed = await deleteSession(id, { dbName: DB_NAME, ...guard });
    } catch (e) {
      if (e?.code !== 'SESSION_BUSY') throw e;
      // Another tab's run is writing its reply in it (or a deletion): kept, and shown again.
      await openChat(id, null, branch);
      setStatus('The chat was kept: another tab is writing in it (a reply, most likely). Delete it once that is done.');
      return;
    }
    const list = await listChats();
    if (!removed && list.some((c) => c.sessionId === id)) {
      await openChat(id, null, branch);
      setStatus('The chat was kept: another tab wrote to it after you asked to delete it. Read it, then delete it again to remove it.');
      return;
    }
    // The next chat opens on the branch it was last on, as after a reload. What was typed in
    // the deleted one goes with it.
    await openChat(list.length ? list[0].sessionId : newChatId(), null, list[0]?.currentBranch);
    dropDraft(id);
    setStatus('Chat deleted.');
  });
}

/** Saves the open chat as a JSON file: `{ sessionId, userId, metadata: { title, summary,
 * topics }, items }`. */
export function exportChat() {
  if (state.busy) return;
  // A locked chat goes out decrypted (the user asked for its messages), though its lock says its
  // backups stay encrypted: asked first.
  if (isEncrypted(current()) && !confirm('This chat is locked. The exported file holds its messages in clear (Back up keeps them locked). Export it anyway?')) {
    setStatus('The chat was not exported.');
    return;
  }
  return busy(async () => {
    // The title and summary the last reply is still writing belong in the file.
    await settleOpenChat();
    const session = current();
    // A locked chat's items are exported decrypted (the user asked for them); it has no metadata.
    const [items, info] = await Promise.all([session.getItems(), isEncrypted(session) ? {} : session.getInfo()]);
    // The items of the branch shown.
    const metadata = { title: info.title ?? null, summary: info.summary ?? null, topics: info.topics ?? null };
    const data = { sessionId: state.sessionId, userId: state.user, metadata, items };
    const blob = new Blob([JSON.stringify(data, null, 2)], { type: 'application/json' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = `chat-${state.sessionId}.json`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    // The file is plain JSON whatever the chat is: a locked chat's user is told so.
    setStatus(`Exported ${plural(items.length, 'item')}${isEncrypted(session) ? ', decrypted: the file is not locked, keep it safe' : ''}.`);
  }, () => setStatus(CLOSED('Nothing was exported')));
}

/** Reads an export (or a bare array of items) into a new chat, and opens it. The library titles
 * the chat from its first user message as the items are added; an export's own title (and
 * summary and topics), when it has them, are then restored. */
export function importChat(file) {
  return busy(async () => {
    let data;
    try {
      data = JSON.parse(await file.text());
    } catch {
      throw new Error(`${file.name} is not a JSON file`);
    }
    const items = Array.isArray(data) ? data : data?.items;
    if (!Array.isArray(items)) throw new Error(`${file.name} has no "items" array (expected { sessionId, userId, metadata, items })`);
    const metadata = Array.isArray(data) ? undefined : data.metadata;
    if (metadata !== undefined && (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))) {
      throw new Error(`${file.name} has a "metadata" that is not an object`);
    }
    const changes = {};
    for (const key of ['title', 'summary', 'topics']) {
      // A `null` (an export of a locked chat has no title) leaves the title the items gave.
      if (metadata?.[key] != null) changes[key] = metadata[key];
    }
    const id = newId();
    const session = sessionFor(id);
    try {
      // The library checks every item (plain objects only) and writes all of them or none.
      await session.addItems(items);
    } catch (e) {
      await closeSession(session);
      throw e;
    }
    // The library checks these too; the items are kept even if it refuses them.
    let refused = null;
    // Into a locked user's chats, the items only: the metadata would be stored in clear.
    if (Object.keys(changes).length && !isEncrypted(session)) {
      try {
        await session.update(changes);
      } catch (e) {
        refused = e;
      }
    }
    await openChat(id, session);
    setStatus(`Imported ${plural(items.length, 'item')} into a new chat.`);
    if (refused) {
      refused.message = `the items were imported, but not the chat's title and summary: ${refused.message}`;
      throw refused;
    }
  });
}
