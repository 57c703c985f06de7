// The demo page: several users, each with several chats, every chat an IndexedDbSession in one
// database; replies streamed by the library's runner from the built-in offline model or from any
// OpenAI-compatible endpoint.
import { IndexedDbSession, listSessions, deleteSession, Agent, Runner } from './lib.js';
import { offlineFetch, OFFLINE_BASE_URL, OFFLINE_MODEL_NAME } from './offline-model.js';

const DB_NAME = 'agent-sessions-demo';
const KEYS = {
  users: 'agent-sessions-demo.users',
  currentUser: 'agent-sessions-demo.currentUser',
  currentSession: (user) => `agent-sessions-demo.currentSession.${user}`,
  settings: 'agent-sessions-demo.settings',
  // sessionStorage only: the key lives as long as the tab, never in localStorage or IndexedDB.
  apiKey: 'agent-sessions-demo.apiKey',
};
const INSTRUCTIONS = 'You are a helpful assistant in a small demo chat page. Reply concisely.';

const $ = (id) => document.getElementById(id);
const el = {
  app: $('app'),
  userSelect: $('user-select'),
  newUserForm: $('new-user-form'),
  newUserName: $('new-user-name'),
  sidebar: $('sidebar'),
  toggleSidebar: $('toggle-sidebar'),
  newChat: $('new-chat'),
  sessionList: $('session-list'),
  settingsForm: $('settings-form'),
  baseUrl: $('set-base-url'),
  api: $('set-api'),
  model: $('set-model'),
  apiKey: $('set-api-key'),
  resetSettings: $('reset-settings'),
  chatTitle: $('chat-title'),
  modelLine: $('model-line'),
  undo: $('undo'),
  clear: $('clear'),
  exportBtn: $('export'),
  importBtn: $('import'),
  importFile: $('import-file'),
  deleteChat: $('delete-chat'),
  error: $('error'),
  errorText: $('error-text'),
  errorClose: $('error-close'),
  messages: $('messages'),
  empty: $('empty'),
  composer: $('composer'),
  input: $('input'),
  send: $('send'),
  stop: $('stop'),
  status: $('status'),
};

// ---------------------------------------------------------------------------------------------
// Small helpers

function readJson(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v ?? fallback;
  } catch {
    return fallback;
  }
}

function newId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

/** The visible text of an item's `content`: a string or an array of text parts. */
function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (typeof p === 'string' ? p : typeof p?.text === 'string' ? p.text : typeof p?.refusal === 'string' ? p.refusal : ''))
      .join('');
  }
  return '';
}

/** How an item is shown: `{ kind, label, text }`. */
function describe(item) {
  if (item?.role === 'user' || item?.role === 'assistant' || item?.role === 'system' || item?.role === 'developer') {
    return { kind: item.role, label: item.role === 'user' ? 'You' : item.role === 'assistant' ? 'Assistant' : 'System', text: contentText(item.content) };
  }
  if (item?.type === 'function_call') {
    return { kind: 'tool', label: 'Tool call', text: `${item.name ?? '?'}(${item.arguments ?? ''})` };
  }
  if (item?.type === 'function_call_result' || item?.type === 'function_call_output') {
    const out = item.output;
    return { kind: 'tool', label: 'Tool result', text: typeof out === 'string' ? out : contentText([out]) || JSON.stringify(out) };
  }
  return { kind: 'other', label: item?.type ?? 'Item', text: JSON.stringify(item) };
}

const isUserMessage = (item) => item?.role === 'user';

function shorten(text, max = 42) {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

function formatTime(ms) {
  const d = new Date(ms);
  const today = new Date();
  const sameDay = d.toDateString() === today.toDateString();
  return sameDay
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

function showError(error) {
  let text;
  if (error?.name === 'ModelError') {
    text = `The model call failed${error.status ? ` (HTTP ${error.status})` : ''}: ${error.message}`;
  } else if (error?.name) {
    text = `${error.name}${error.code ? ` ${error.code}` : ''}: ${error.message}`;
  } else {
    text = String(error);
  }
  el.errorText.textContent = text;
  el.error.hidden = false;
  console.error(error);
}

function hideError() {
  el.error.hidden = true;
  el.errorText.textContent = '';
}

function setStatus(text) {
  el.status.textContent = text;
}

// ---------------------------------------------------------------------------------------------
// Users

const state = {
  users: [],
  user: '',
  sessionId: '',
  sessions: new Map(), // sessionId -> IndexedDbSession of the current user
  busy: false,
  controller: null,
  renderToken: 0,
};

function loadUsers() {
  const users = readJson(KEYS.users, []);
  state.users = Array.isArray(users) ? users.filter((u) => typeof u === 'string' && u.trim()) : [];
  if (state.users.length === 0) state.users = ['Guest'];
  const current = localStorage.getItem(KEYS.currentUser);
  state.user = state.users.includes(current) ? current : state.users[0];
  saveUsers();
}

function saveUsers() {
  localStorage.setItem(KEYS.users, JSON.stringify(state.users));
  localStorage.setItem(KEYS.currentUser, state.user);
}

function renderUsers() {
  el.userSelect.replaceChildren(
    ...state.users.map((u) => {
      const o = document.createElement('option');
      o.value = u;
      o.textContent = u;
      o.selected = u === state.user;
      return o;
    }),
  );
}

async function switchUser(user) {
  if (user === state.user || state.busy) return;
  state.busy = true;
  updateControls();
  hideError();
  try {
    for (const s of state.sessions.values()) s.free?.();
    state.sessions.clear();
    state.user = user;
    saveUsers();
    renderUsers();
    await chooseInitialSession();
    setStatus(`Now chatting as ${user}.`);
  } catch (e) {
    showError(e);
  } finally {
    state.busy = false;
  }
  await settle();
}

// ---------------------------------------------------------------------------------------------
// Sessions

function sessionFor(id) {
  let s = state.sessions.get(id);
  if (!s) {
    s = new IndexedDbSession(id, { userId: state.user, dbName: DB_NAME });
    state.sessions.set(id, s);
  }
  return s;
}

function current() {
  return sessionFor(state.sessionId);
}

function selectSession(id) {
  state.sessionId = id;
  localStorage.setItem(KEYS.currentSession(state.user), id);
}

async function chooseInitialSession() {
  const saved = localStorage.getItem(KEYS.currentSession(state.user));
  const list = await listSessions({ dbName: DB_NAME, userId: state.user });
  if (saved && (list.some((s) => s.sessionId === saved) || !list.length)) {
    selectSession(saved);
  } else if (list.length) {
    selectSession(list[0].sessionId);
  } else {
    selectSession(newId());
  }
}

/** Re-reads the sessions and the current conversation from IndexedDB and renders them. */
async function refresh() {
  const token = ++state.renderToken;
  const list = await listSessions({ dbName: DB_NAME, userId: state.user });
  const titled = await Promise.all(
    list.map(async (info) => {
      const items = info.itemCount ? await sessionFor(info.sessionId).getItems() : [];
      const first = items.find(isUserMessage);
      return { ...info, title: first ? shorten(contentText(first.content)) || 'Untitled chat' : 'Empty chat' };
    }),
  );
  const items = await current().getItems();
  if (token !== state.renderToken) return;
  renderSidebar(titled);
  renderMessages(items);
  const mine = titled.find((s) => s.sessionId === state.sessionId);
  el.chatTitle.textContent = mine ? mine.title : 'New chat';
  updateControls(items.length);
}

function renderSidebar(list) {
  const rows = [];
  if (!list.some((s) => s.sessionId === state.sessionId)) {
    rows.push(sessionRow({ sessionId: state.sessionId, title: 'New chat', itemCount: 0, updatedAt: null }));
  }
  for (const info of list) rows.push(sessionRow(info));
  el.sessionList.replaceChildren(...rows);
  el.toggleSidebar.textContent = `Chats (${list.length})`;
}

function sessionRow(info) {
  const li = document.createElement('li');
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'session';
  b.dataset.sessionId = info.sessionId;
  if (info.sessionId === state.sessionId) b.setAttribute('aria-current', 'true');
  const title = document.createElement('span');
  title.className = 'session-title';
  title.textContent = info.title;
  const meta = document.createElement('span');
  meta.className = 'session-meta';
  const count = `${info.itemCount} item${info.itemCount === 1 ? '' : 's'}`;
  meta.textContent = info.updatedAt == null ? 'not saved yet' : `${count} · ${formatTime(info.updatedAt)}`;
  b.append(title, meta);
  b.setAttribute('aria-label', `${info.title}, ${meta.textContent}`);
  b.disabled = state.busy;
  li.append(b);
  return li;
}

function messageElement(kind, label, text) {
  const li = document.createElement('li');
  li.className = `msg msg-${kind}`;
  li.dataset.role = kind;
  const who = document.createElement('span');
  who.className = 'msg-who';
  who.textContent = label;
  const body = document.createElement('div');
  body.className = 'msg-text';
  // Model output is text, never HTML.
  body.textContent = text;
  li.append(who, body);
  return li;
}

function renderMessages(items) {
  el.messages.replaceChildren(
    ...items.map((item) => {
      const { kind, label, text } = describe(item);
      return messageElement(kind, label, text);
    }),
  );
  el.empty.hidden = items.length > 0;
  scrollToEnd();
}

function scrollToEnd() {
  el.messages.scrollTop = el.messages.scrollHeight;
}

function updateControls(itemCount = el.messages.children.length) {
  const busy = state.busy;
  el.send.disabled = busy;
  el.stop.disabled = !busy;
  el.undo.disabled = busy || itemCount === 0;
  el.clear.disabled = busy || itemCount === 0;
  el.exportBtn.disabled = busy || itemCount === 0;
  el.importBtn.disabled = busy;
  el.deleteChat.disabled = busy;
  el.newChat.disabled = busy;
  el.userSelect.disabled = busy;
  el.newUserForm.querySelector('button').disabled = busy;
  for (const b of el.sessionList.querySelectorAll('button')) b.disabled = busy;
  el.app.dataset.busy = String(busy);
}

// ---------------------------------------------------------------------------------------------
// Settings: endpoint, API style and model in localStorage; the API key in sessionStorage only.

function loadSettings() {
  const s = readJson(KEYS.settings, {});
  return {
    baseUrl: typeof s.baseUrl === 'string' ? s.baseUrl : '',
    api: s.api === 'responses' ? 'responses' : 'chat_completions',
    model: typeof s.model === 'string' ? s.model : '',
  };
}

let settings = loadSettings();
let apiKey = sessionStorage.getItem(KEYS.apiKey) ?? '';
let cached = null; // { signature, runner, agent }

function renderSettings() {
  el.baseUrl.value = settings.baseUrl;
  el.api.value = settings.api;
  el.model.value = settings.model;
  el.apiKey.value = apiKey;
  el.modelLine.textContent = settings.baseUrl
    ? `Model: ${settings.model || '(no model name)'} via ${settings.api === 'responses' ? 'Responses' : 'Chat Completions'} at ${settings.baseUrl}`
    : 'Model: the built-in offline model (runs in this page)';
}

function saveSettings() {
  settings = {
    baseUrl: el.baseUrl.value.trim(),
    api: el.api.value === 'responses' ? 'responses' : 'chat_completions',
    model: el.model.value.trim(),
  };
  localStorage.setItem(KEYS.settings, JSON.stringify(settings));
  apiKey = el.apiKey.value.trim();
  if (apiKey) sessionStorage.setItem(KEYS.apiKey, apiKey);
  else sessionStorage.removeItem(KEYS.apiKey);
  renderSettings();
}

/** The runner and agent for the current settings (made once per change of settings). */
function model() {
  const signature = JSON.stringify([settings, apiKey]);
  if (cached?.signature === signature) return cached;
  let runner;
  let agent;
  if (!settings.baseUrl) {
    runner = new Runner({ baseUrl: OFFLINE_BASE_URL, api: 'chat_completions', fetch: offlineFetch });
    agent = new Agent({ name: 'Offline assistant', instructions: INSTRUCTIONS, model: OFFLINE_MODEL_NAME });
  } else {
    if (!settings.model) throw new Error('Set a model name in the model settings (for example gpt-4.1-mini or llama3.2).');
    runner = new Runner({ baseUrl: settings.baseUrl, api: settings.api, ...(apiKey ? { apiKey } : {}) });
    agent = new Agent({ name: 'Assistant', instructions: INSTRUCTIONS, model: settings.model });
  }
  cached = { signature, runner, agent };
  return cached;
}

// ---------------------------------------------------------------------------------------------
// Chatting

async function send(text) {
  if (state.busy || !text.trim()) return;
  hideError();
  let m;
  try {
    m = model();
  } catch (e) {
    showError(e);
    return;
  }
  const session = current();
  state.busy = true;
  updateControls();
  el.empty.hidden = true;
  el.messages.append(messageElement('user', 'You', text));
  const answer = messageElement('assistant', 'Assistant', '');
  answer.classList.add('streaming');
  answer.setAttribute('aria-busy', 'true');
  el.messages.append(answer);
  scrollToEnd();
  const body = answer.querySelector('.msg-text');
  const controller = new AbortController();
  state.controller = controller;
  setStatus('The model is answering…');
  try {
    const run = m.runner.runStreamed(m.agent, text, { session, signal: controller.signal });
    for await (const event of run) {
      if (event.type === 'text_delta') {
        body.textContent += event.delta;
        scrollToEnd();
      }
    }
    await run.result;
    setStatus('Saved to IndexedDB.');
  } catch (e) {
    if (e?.name === 'AbortError' || controller.signal.aborted) {
      setStatus('Stopped. The unfinished answer was not saved; your message was.');
    } else {
      showError(e);
      setStatus('');
    }
  } finally {
    state.controller = null;
    state.busy = false;
    answer.classList.remove('streaming');
    answer.removeAttribute('aria-busy');
    // The runner saved what it finished; show exactly what the session holds now.
    await settle();
    el.input.focus();
  }
}

function stop() {
  state.controller?.abort();
}

// ---------------------------------------------------------------------------------------------
// Chat actions

/** Pops items until a user message has been popped: the last answer and its question. */
async function undoLastExchange() {
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
  setStatus(popped.length ? `Removed ${popped.length} item${popped.length === 1 ? '' : 's'}; the question is back in the input box.` : 'Nothing to undo.');
}

async function clearChat() {
  await current().clearSession();
  setStatus('Chat cleared.');
}

async function deleteChat() {
  const id = state.sessionId;
  await deleteSession(id, { dbName: DB_NAME });
  state.sessions.get(id)?.free?.();
  state.sessions.delete(id);
  const list = await listSessions({ dbName: DB_NAME, userId: state.user });
  selectSession(list.length ? list[0].sessionId : newId());
  setStatus('Chat deleted.');
}

function newChat() {
  selectSession(newId());
  setStatus('New chat. It is saved with its first message.');
}

async function exportChat() {
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
  setStatus(`Exported ${items.length} item${items.length === 1 ? '' : 's'}.`);
}

async function importChat(file) {
  let data;
  try {
    data = JSON.parse(await file.text());
  } catch {
    throw new Error(`${file.name} is not a JSON file`);
  }
  const items = Array.isArray(data) ? data : data?.items;
  if (!Array.isArray(items)) throw new Error(`${file.name} has no "items" array (expected { sessionId, userId, items })`);
  const id = newId();
  // The library checks every item (plain objects only) and writes all of them or none.
  await sessionFor(id).addItems(items);
  selectSession(id);
  setStatus(`Imported ${items.length} item${items.length === 1 ? '' : 's'} into a new chat.`);
}

/** Re-reads the view from IndexedDB; errors show in the page. */
async function settle() {
  try {
    await refresh();
  } catch (e) {
    showError(e);
    updateControls();
  }
}

/** Runs a UI action (one at a time): errors show in the page, then the view is re-read. */
async function action(fn) {
  if (state.busy) return;
  hideError();
  state.busy = true;
  updateControls();
  try {
    await fn();
  } catch (e) {
    showError(e);
  } finally {
    state.busy = false;
  }
  await settle();
}

// ---------------------------------------------------------------------------------------------
// Wiring

function wire() {
  el.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = el.input.value;
    if (!text.trim() || state.busy) return;
    el.input.value = '';
    send(text);
  });
  el.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      el.composer.requestSubmit();
    }
  });
  el.stop.addEventListener('click', stop);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.controller) stop();
  });
  el.undo.addEventListener('click', () => action(undoLastExchange));
  el.clear.addEventListener('click', () => action(clearChat));
  el.deleteChat.addEventListener('click', () => action(deleteChat));
  el.newChat.addEventListener('click', () =>
    action(async () => {
      newChat();
      el.input.focus();
    }),
  );
  el.exportBtn.addEventListener('click', () => action(exportChat));
  el.importBtn.addEventListener('click', () => el.importFile.click());
  el.importFile.addEventListener('change', () => {
    const file = el.importFile.files?.[0];
    el.importFile.value = '';
    if (file) action(() => importChat(file));
  });
  el.sessionList.addEventListener('click', (e) => {
    const b = e.target.closest('button.session');
    if (!b || state.busy) return;
    action(async () => {
      selectSession(b.dataset.sessionId);
      el.app.dataset.sidebar = 'closed';
      el.toggleSidebar.setAttribute('aria-expanded', 'false');
    });
  });
  el.userSelect.addEventListener('change', () => switchUser(el.userSelect.value));
  el.newUserForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const name = el.newUserName.value.trim();
    if (!name || state.busy) return;
    if (!state.users.includes(name)) state.users.push(name);
    el.newUserName.value = '';
    saveUsers();
    renderUsers();
    switchUser(name);
  });
  el.settingsForm.addEventListener('submit', (e) => {
    e.preventDefault();
    saveSettings();
    setStatus(settings.baseUrl ? `Using ${settings.model || 'a model'} at ${settings.baseUrl}.` : 'Using the offline model.');
  });
  el.resetSettings.addEventListener('click', () => {
    el.baseUrl.value = '';
    saveSettings();
    setStatus('Using the offline model.');
  });
  el.errorClose.addEventListener('click', hideError);
  el.toggleSidebar.addEventListener('click', () => {
    const open = el.app.dataset.sidebar !== 'open';
    el.app.dataset.sidebar = open ? 'open' : 'closed';
    el.toggleSidebar.setAttribute('aria-expanded', String(open));
  });
}

async function main() {
  wire();
  loadUsers();
  renderUsers();
  renderSettings();
  try {
    await chooseInitialSession();
  } catch (e) {
    showError(e);
  }
  await settle();
  document.documentElement.dataset.ready = 'true';
}

main();
