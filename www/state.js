// The page's state, all in one object, and the part of it that outlives the page: the users, each
// user's open chat, the model settings and each locked user's lock record (its salt and
// passphrase check: nothing secret) in localStorage; the API key in sessionStorage only. The
// current user and each user's open chat are in sessionStorage too: a reload opens what this tab
// had open, not what another tab picked last (a new tab opens what any tab opened last, a reload
// included). The
// chats themselves, their titles and summaries included, are the library's, in IndexedDB. The
// keys of locked users are in memory only (or, remembered on this device, in keys.js's store).
export const DB_NAME = 'agent-sessions-demo';

const KEYS = {
  users: 'agent-sessions-demo.users',
  currentUser: 'agent-sessions-demo.currentUser',
  currentSession: (user) => `agent-sessions-demo.currentSession.${user}`,
  settings: 'agent-sessions-demo.settings',
  // sessionStorage only: the key lives as long as the tab, never in localStorage or IndexedDB.
  apiKey: 'agent-sessions-demo.apiKey',
  /** The endpoint the API key was typed for. */
  apiKeyFor: 'agent-sessions-demo.apiKeyFor',
  // Only for a user whose chats are locked: `{ salt, check, pending }` (see keys.js).
  lock: (user) => `agent-sessions-demo.lock.${user}`,
};

const DEFAULT_SETTINGS = { baseUrl: '', api: 'chat_completions', model: '', historyTurns: 0, summaries: true };

export const state = {
  /** The user names, in the order they were added. */
  users: [],
  /** The current user. */
  user: '',
  /** The current user's passphrase lock, `{ salt, check, pending }` (keys.js), or null when
   * their chats are stored as plain text. */
  lock: null,
  /** The master keys of the locked users unlocked in this tab, by user (never stored as such). */
  keys: new Map(),
  /** The locked users whose key this device remembers, as far as this tab knows. */
  remembered: new Set(),
  /** The session id of the open chat. */
  sessionId: '',
  /** The open chat's IndexedDbSession, or its EncryptedSession for a locked user (null until
   * first used): one object for everything done to the chat while it is open, closed when it is
   * left. */
  session: null,
  /** The branch of the open chat that its session object shows: 'main', or one made by editing
   * a message. A chat reopens on the branch it was on (the library remembers it). */
  branch: 'main',
  /** The open chat's branches ('main' included), by id, as last read. */
  branchIds: ['main'],
  /** The search hit the open chat shows now (`actions.openHit`), for search.js to reveal. */
  hitShown: null,
  /** How many items the open chat held when the view was last read. */
  itemCount: 0,
  /** The agent answering in the open chat (of its branch), by name: the one its history was
   * last handed off to, or null for the first agent (nothing handed off). The next reply starts
   * with it. */
  agent: null,
  /** The open chat's `getInfo()` as last read (title, summary…); null for a chat not saved yet. */
  info: null,
  /** True while an action or a reply is in progress; then every other action waits. */
  busy: false,
  /** Aborts the reply being streamed, or gives up an action's wait for the last reply's summary
   * and title; null when there is neither. */
  controller: null,
  /** True while an action waits for the last reply's summary and title (`settleOpenChat`). */
  settling: false,
  /** Where replies come from: `{ baseUrl, api, model }`; an empty baseUrl is the offline model.
   * `historyTurns`: how many of the newest turns each run sends as history (0: all of them).
   * `summaries`: whether the model summarises and titles each chat after its replies. */
  settings: { ...DEFAULT_SETTINGS },
  apiKey: '',
  /** The endpoint `apiKey` was typed for: it is sent to that one only. The offline model sends
   * none, and keeps it for when that endpoint is chosen again. */
  keyFor: '',
  /** When this tab last finished writing (an action ended, or a reply's background work): a
   * change event published later, while the tab stayed idle, was made by another tab. */
  lastActive: 0,
  /** The chat list as the sidebar last showed it: its `signature` and each chat's, by session id
   * in `chats` (what it shows of them, see `listSignature` in chats.js). */
  listed: { signature: '', chats: new Map() },
  /** Whether a list shown since the open chat was opened held it: gone from the database, it
   * was deleted (one never listed is a new chat, not saved yet). */
  openListed: false,
  /** The runner and agents made for the current settings: `{ signature, runner, agent, agents }`
   * (`agent` the first one, `agents` all of them by name; see model.js). */
  model: null,
  /** The work replies left running after they were saved (the chat's summary and title), by
   * session id: a promise that settles when all of it is done. */
  background: new Map(),
};

/** The chat and version the view shows. */
export const openVersion = () => JSON.stringify([state.sessionId, state.branch]);

/** The most turns of history a run can be limited to. */
export const MAX_HISTORY_TURNS = 1000;

/** A whole number of turns from 1 to MAX_HISTORY_TURNS, else 0 (all of the history). */
export function historyTurns(value) {
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 && n <= MAX_HISTORY_TURNS ? n : 0;
}

function readJson(key, fallback) {
  try {
    return JSON.parse(localStorage.getItem(key)) ?? fallback;
  } catch {
    return fallback;
  }
}

/** The model settings as stored (each field checked). */
function readSettings() {
  const s = readJson(KEYS.settings, {});
  return {
    baseUrl: typeof s.baseUrl === 'string' ? s.baseUrl : '',
    api: s.api === 'responses' ? 'responses' : 'chat_completions',
    model: typeof s.model === 'string' ? s.model : '',
    historyTurns: historyTurns(s.historyTurns),
    summaries: s.summaries !== false,
  };
}

/** Fills `state` from storage: the users (at least one), the current user, the settings, the key. */
export function loadState() {
  state.users = [];
  mergeStoredUsers();
  if (state.users.length === 0) state.users = ['Guest'];
  const current = tabFirst(KEYS.currentUser);
  state.user = state.users.includes(current) ? current : state.users[0];
  saveUsers();
  state.lock = readLock(state.user);

  state.settings = readSettings();
  state.apiKey = sessionStorage.getItem(KEYS.apiKey) ?? '';
  // (A key kept before the endpoint was kept with it was for the endpoint in use.)
  state.keyFor = sessionStorage.getItem(KEYS.apiKeyFor) ?? state.settings.baseUrl;
  // Another tab changed the endpoint while this one could not hear it (a tab the browser
  // discarded keeps its session storage, and reloads): the key is not sent to the new one.
  const keyDropped = keyNotFor(state.settings.baseUrl);
  if (keyDropped) saveKey('', '');
  return { keyDropped };
}

/** Whether the API key must be forgotten for settings that use endpoint `baseUrl`: it was typed
 * for another one (the offline model, which sends none, keeps it). */
export function keyNotFor(baseUrl) {
  return state.apiKey !== '' && baseUrl !== '' && baseUrl !== state.keyFor;
}

/** Adds to `state.users` the users another tab stored since this one read them (each tab writes
 * the whole list, so a tab that wrote from what it read at load would drop them). Whether any
 * were added. */
export function mergeStoredUsers() {
  const stored = readJson(KEYS.users, []);
  const added = (Array.isArray(stored) ? stored : []).filter((u) => typeof u === 'string' && u.trim() && !state.users.includes(u));
  state.users.push(...added);
  return added.length > 0;
}

/** Follows what other tabs store: users they add (`renderUsers` is called), and model settings
 * they save (taken here too, so that this tab's next message uses them and its next save does not
 * undo them; `renderSettings({ keyDropped })` is called, `keyDropped` when this tab's API key was
 * forgotten because the endpoint changed). */
export function followOtherTabs({ renderUsers, renderSettings }) {
  window.addEventListener('storage', (e) => {
    if (e.storageArea !== localStorage) return;
    if ((e.key === null || e.key === KEYS.users) && mergeStoredUsers()) renderUsers();
    if (e.key === null || e.key === KEYS.settings) {
      state.settings = readSettings();
      // This tab's key was typed for the endpoint it had: it is not sent to another one.
      const dropped = keyNotFor(state.settings.baseUrl);
      if (dropped) saveKey('', '');
      renderSettings({ keyDropped: dropped, elsewhere: true });
    }
  });
}

export function saveUsers() {
  mergeStoredUsers();
  localStorage.setItem(KEYS.users, JSON.stringify(state.users));
  keepForTab(KEYS.currentUser, state.user);
}

/** What this tab keeps under `key`, else what any tab kept there last. */
const tabFirst = (key) => sessionStorage.getItem(key) ?? localStorage.getItem(key);

/** Keeps `value` under `key` for this tab, and as what a new tab opens. */
function keepForTab(key, value) {
  localStorage.setItem(key, value);
  sessionStorage.setItem(key, value);
}

/** The lock record of `user`, or null when their chats are not locked (or it is unreadable). */
export function readLock(user) {
  const record = readJson(KEYS.lock(user), null);
  return record && typeof record.salt === 'string' && Array.isArray(record.check) ? record : null;
}

/** Stores `user`'s lock record (the current user's is `state.lock` too). */
export function saveLock(user, record) {
  localStorage.setItem(KEYS.lock(user), JSON.stringify(record));
  if (user === state.user) state.lock = record;
}

/** Makes `user` the current user, and remembers it. */
export function setUser(user) {
  state.user = user;
  state.lock = readLock(user);
  saveUsers();
}

/** Whether the current user's chats are locked and not unlocked in this tab: nothing of them can
 * be read or written until the passphrase is entered. */
export function lockedOut() {
  return state.lock !== null && !state.keys.has(state.user);
}

/** The chat the current user had open last in this tab, or else in any tab, if any. */
export function savedSessionId() {
  return tabFirst(KEYS.currentSession(state.user));
}

/** Makes `id` the open chat's id, and remembers it for the current user. */
export function selectSession(id) {
  state.sessionId = id;
  keepForTab(KEYS.currentSession(state.user), id);
}

/** Saves the model settings, and the API key typed for endpoint `keyFor`. */
export function saveSettings(settings, apiKey, keyFor) {
  state.settings = settings;
  localStorage.setItem(KEYS.settings, JSON.stringify(settings));
  saveKey(apiKey, keyFor);
}

/** Keeps the API key for this tab's life (in sessionStorage), with the endpoint it is for. */
function saveKey(apiKey, keyFor) {
  state.apiKey = apiKey;
  state.keyFor = apiKey ? keyFor : '';
  for (const [key, value] of [[KEYS.apiKey, apiKey], [KEYS.apiKeyFor, state.keyFor]]) {
    if (apiKey) sessionStorage.setItem(key, value);
    else sessionStorage.removeItem(key);
  }
}

export function newId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}
