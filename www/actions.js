// What the buttons do to chats and users: switch user, new chat, select a chat, undo, clear, delete, export
// and import. Each runs through `busy`, so the view is re-read from IndexedDB afterwards.
import { deleteSession } from './lib.js';
import { DB_NAME, state, newId, saveUsers } from './state.js';
import { closeChat, closeSession, current, listChats, openChat, openInitialChat, sessionFor } from './chats.js';
import { contentText, isUserMessage } from './items.js';
import { forgetTitle, setTitle, titleFromItems } from './titles.js';
import { busy } from './busy.js';
import { el, renderUsers, setStatus } from './view.js';

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

export function switchUser(user) {
  if (user === state.user) return;
  return busy(async () => {
    await closeChat();
    state.user = user;
    saveUsers();
    renderUsers();
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
    await openChat(newId());
    setStatus('New chat. It is saved with its first message.');
    el.input.focus();
  });
}

export function selectChat(id) {
  // Selecting the open chat only reads it again.
  return busy(() => (id === state.sessionId ? undefined : openChat(id)));
}

/** Pops items until a user message has been popped: the last answer and its question. */
export function undoLastExchange() {
  return busy(async () => {
    const session = current();
    const popped = [];
    for (;;) {
      const item = await session.popItem();
      if (item === undefined) break;
      popped.push(item);
      if (isUserMessage(item)) break;
    }
    const question = popped.find(isUserMessage);
    if (question && !el.input.value.trim()) el.input.value = contentText(question.content);
    setStatus(popped.length ? `Removed ${plural(popped.length, 'item')}; the question is back in the input box.` : 'Nothing to undo.');
  });
}

export function clearChat() {
  return busy(async () => {
    await current().clearSession();
    forgetTitle(state.user, state.sessionId);
    setStatus('Chat cleared.');
  });
}

/** Deletes the open chat, once the user confirms. */
export function deleteChat() {
  if (state.busy) return;
  if (!confirm(`Delete the chat “${el.chatTitle.textContent}”? Its messages are removed from this browser.`)) {
    setStatus('The chat was kept.');
    return;
  }
  return busy(async () => {
    const id = state.sessionId;
    await closeChat();
    await deleteSession(id, { dbName: DB_NAME });
    forgetTitle(state.user, id);
    const list = await listChats();
    await openChat(list.length ? list[0].sessionId : newId());
    setStatus('Chat deleted.');
  });
}

export function exportChat() {
  return busy(async () => {
    const items = await current().getItems();
    const data = { sessionId: state.sessionId, userId: state.user, items };
    const blob = new Blob([JSON.stringify(data, null, 2)], { type: 'application/json' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = `chat-${state.sessionId}.json`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    setStatus(`Exported ${plural(items.length, 'item')}.`);
  });
}

/** Reads an export (or a bare array of items) into a new chat, and opens it. */
export function importChat(file) {
  return busy(async () => {
    let data;
    try {
      data = JSON.parse(await file.text());
    } catch {
      throw new Error(`${file.name} is not a JSON file`);
    }
    const items = Array.isArray(data) ? data : data?.items;
    if (!Array.isArray(items)) throw new Error(`${file.name} has no "items" array (expected { sessionId, userId, items })`);
    const id = newId();
    const session = sessionFor(id);
    try {
      // The library checks every item (plain objects only) and writes all of them or none.
      await session.addItems(items);
    } catch (e) {
      await closeSession(session);
      throw e;
    }
    // The items are at hand (the user gave them), so the title comes from them now.
    setTitle(state.user, id, titleFromItems(items));
    await openChat(id, session);
    setStatus(`Imported ${plural(items.length, 'item')} into a new chat.`);
  });
}
