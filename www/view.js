// Everything the page draws: the users, the chat list, the chat header (title, rename box,
// summary, the agent answering, branch and token usage), the conversation (with the Edit button
// and the branch switcher of your messages, the box to edit one, and a line for each handoff
// from one agent to another), the settings, the passphrase lock (the
// sidebar's part and the unlock prompt in the chat's place), the controls, errors and the status
// line. It only writes the DOM; it never reads storage.
import { MAX_HISTORY_TURNS, historyTurns, lockedOut, openVersion, state } from './state.js';
import { ASSISTANT_LABEL, callIdOf, describe, handoffCalls, handoffTarget, isHandoffCall, isUserMessage } from './items.js';
import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);

/** The page's elements, by role. */
export const el = {
  app: $('app'),
  userSelect: $('user-select'),
  newUserForm: $('new-user-form'),
  newUserName: $('new-user-name'),
  toggleSidebar: $('toggle-sidebar'),
  newChat: $('new-chat'),
  sessionList: $('session-list'),
  searchInput: $('search-input'),
  searchClear: $('search-clear'),
  searchStatus: $('search-status'),
  searchResults: $('search-results'),
  settingsForm: $('settings-form'),
  baseUrl: $('set-base-url'),
  api: $('set-api'),
  model: $('set-model'),
  apiKey: $('set-api-key'),
  history: $('set-history'),
  historyTurns: $('set-history-turns'),
  summaries: $('set-summaries'),
  resetSettings: $('reset-settings'),
  keep: $('keep-chats'),
  keepStatus: $('keep-status'),
  storage: $('storage'),
  storageChats: $('storage-chats'),
  storageMeter: $('storage-meter'),
  storageSite: $('storage-site'),
  backup: $('backup'),
  restore: $('restore'),
  restoreFile: $('restore-file'),
  retentionForm: $('retention-form'),
  retentionDays: $('retention-days'),
  retention: $('retention'),
  lockState: $('lock-state'),
  lockOpen: $('lock-open'),
  lockForm: $('lock-form'),
  lockPassphrase: $('lock-passphrase'),
  lockConfirm: $('lock-confirm'),
  lockRemember: $('lock-remember'),
  lockError: $('lock-error'),
  lockSubmit: $('lock-submit'),
  lockCancel: $('lock-cancel'),
  lockActions: $('lock-actions'),
  lockNow: $('lock-now'),
  lockForget: $('lock-forget'),
  lockUsernames: document.querySelectorAll('.lock-username'),
  unlock: $('unlock'),
  unlockHeading: $('unlock-heading'),
  unlockForm: $('unlock-form'),
  unlockPassphrase: $('unlock-passphrase'),
  unlockRemember: $('unlock-remember'),
  unlockError: $('unlock-error'),
  unlockSubmit: $('unlock-submit'),
  chatTitle: $('chat-title'),
  chatTitleRow: $('chat-title-row'),
  rename: $('rename'),
  renameForm: $('rename-form'),
  renameInput: $('rename-input'),
  renameSave: $('rename-save'),
  renameCancel: $('rename-cancel'),
  chatSummary: $('chat-summary'),
  chatTopics: $('chat-topics'),
  chatMeta: $('chat-meta'),
  chatAgent: $('chat-agent'),
  chatBranch: $('chat-branch'),
  chatBranchLine: $('chat-branch-line'),
  chatUsage: $('chat-usage'),
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
  errorAction: $('error-action'),
  messages: $('messages'),
  announce: $('announce'),
  empty: $('empty'),
  composer: $('composer'),
  input: $('input'),
  send: $('send'),
  stop: $('stop'),
  status: $('status'),
};

/** Gives the message box the keyboard after a reply, unless the person went on elsewhere while
 * it ran (typing a search, an API key, an edit of a message): their typing stays where it is,
 * and Enter there does not send it to the model. */
export function focusInput() {
  const at = document.activeElement;
  if (at?.closest?.('.msg-editor')) return;
  if (!at || at === document.body || el.composer.contains(at) || el.messages.contains(at)) el.input.focus();
}

const megabytes = (bytes) => `${(bytes / 1048576).toFixed(1)} MB`;

/** What to do about the storage errors a user can act on. */
const STORAGE_ADVICE = {
  STORAGE_FULL: (e) =>
    `The browser’s storage for this site is full${typeof e.usage === 'number' && typeof e.quota === 'number' ? ` (${megabytes(e.usage)} of ${megabytes(e.quota)} used)` : ''}: what failed was not saved. Back up and delete old chats to make room.`,
  DB_VERSION: () => 'Another tab runs a newer version of this page, which upgraded the chats’ storage: reload this page to go on.',
  DB_BLOCKED: () => 'Another tab of this site runs an older version of this page and keeps the chats’ storage from being upgraded: close it, then try again.',
};

export function showError(error) {
  let text;
  if (error?.name === 'ModelError') {
    text = `The model call failed${error.status ? ` (HTTP ${error.status})` : ''}: ${error.message}`;
    // Refused for want of a key this tab does not send (kept per tab, for the endpoint it was
    // typed for): where to give it.
    const keyed = state.apiKey !== '' && state.keyFor === state.settings.baseUrl;
    if ((error.status === 401 || error.status === 403) && !keyed) text += ' This tab sends no API key (a key is kept per tab, for the endpoint it was typed for): enter it in Model settings.';
    // No answer at all: the request never reached a server that would let this page in.
    if (!error.status) text += ' Check the endpoint’s URL, that it is running, and that it lets this page call it (CORS).';
  } else if (error?.name === 'Error') {
    text = error.message;
  } else if (error?.name === 'SessionError' && STORAGE_ADVICE[error.code]) {
    // What the user can do about it first; the library's own words after.
    text = `${STORAGE_ADVICE[error.code](error)} (${error.name} ${error.code}: ${error.message})`;
  } else if (error?.name) {
    text = `${error.name}${error.code ? ` ${error.code}` : ''}: ${error.message}`;
  } else {
    text = String(error);
  }
  el.errorText.textContent = text;
  // What the user can do about it, one click away: reload (a newer tab upgraded the storage),
  // try again (once the older tab is closed).
  const action = error?.name === 'SessionError' && ERROR_ACTIONS[error.code];
  el.errorAction.hidden = !action;
  if (action) el.errorAction.textContent = action.label;
  el.errorAction.dataset.action = action ? action.name : '';
  el.error.hidden = false;
  console.error(error);
}

/** The button an error offers (main.js does what it names). */
const ERROR_ACTIONS = {
  DB_VERSION: { name: 'reload', label: 'Reload' },
  DB_BLOCKED: { name: 'retry', label: 'Try again' },
};

export function hideError() {
  el.error.hidden = true;
  el.errorText.textContent = '';
  el.errorAction.hidden = true;
}

export function setStatus(text) {
  el.status.textContent = text;
}

export function renderUsers() {
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

/** What each settings field was last filled with (see `renderSettings`). */
const filled = new Map();

/** Fills the settings form from `state`. With `elsewhere` (settings saved in another tab), a
 * field changed here since it was filled (being typed in) keeps what was typed; the model line
 * says what is in use. A key forgotten for another endpoint goes all the same. */
export function renderSettings({ keyDropped = false, elsewhere = false } = {}) {
  const { baseUrl, api, model, historyTurns: turns, summaries } = state.settings;
  if (keyDropped) setStatus('Another tab chose another endpoint: this tab forgot its API key, which was for another endpoint. Enter the key for the new one in Settings.');
  const fill = (field, value, prop = 'value') => {
    if (!elsewhere || field[prop] === filled.get(field) || (field === el.apiKey && keyDropped)) field[prop] = value;
    filled.set(field, value);
  };
  fill(el.baseUrl, baseUrl);
  fill(el.api, api);
  fill(el.model, model);
  fill(el.apiKey, state.apiKey);
  fill(el.history, turns > 0 ? 'turns' : 'all');
  if (turns > 0) fill(el.historyTurns, String(turns));
  // (Not filled yet: what it shows counts as filled, so that a number chosen in another tab
  // fills it, rather than being taken for one typed here.)
  else if (!filled.has(el.historyTurns)) filled.set(el.historyTurns, el.historyTurns.value);
  fill(el.summaries, summaries, 'checked');
  syncHistoryTurns();
  const source = baseUrl
    ? `Model: ${model || '(no model name)'} via ${api === 'responses' ? 'Responses' : 'Chat Completions'} at ${baseUrl}`
    : 'Model: the built-in offline model (runs in this page)';
  const history = turns > 0 ? ` · history: the last ${turns} turn${turns === 1 ? '' : 's'}` : '';
  el.modelLine.textContent = source + history;
}

/** The number of turns can be set only when the history is limited to some. */
export function syncHistoryTurns() {
  el.historyTurns.disabled = el.history.value !== 'turns';
}

/** What the settings form holds now: `{ settings, apiKey }`. A number of turns out of range is
 * brought into it. */
export function settingsFromForm() {
  const turns = Math.min(MAX_HISTORY_TURNS, Math.max(1, Math.round(Number(el.historyTurns.value)) || 1));
  return {
    settings: {
      baseUrl: el.baseUrl.value.trim(),
      api: el.api.value === 'responses' ? 'responses' : 'chat_completions',
      model: el.model.value.trim(),
      historyTurns: el.history.value === 'turns' ? historyTurns(turns) : 0,
      summaries: el.summaries.checked,
    },
    apiKey: el.apiKey.value.trim(),
  };
}

/** When `ms` was: the time today, else the date. */
export function formatTime(ms) {
  const d = new Date(ms);
  const sameDay = d.toDateString() === new Date().toDateString();
  return sameDay
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

/** What a chat is called: its title, or "New chat" while it has none. */
export const titleOf = (chat) => chat?.title ?? 'New chat';

/** The chat list: `chats` as `listSessions` gives them (`[{ sessionId, title, itemCount,
 * updatedAt }]`, newest first); the open chat gets a row even before it is saved. */
export function renderSidebar(chats) {
  const rows = [];
  // (None while no chat is open: a user switch whose open failed.)
  if (state.sessionId && !chats.some((c) => c.sessionId === state.sessionId)) {
    rows.push(sessionRow({ sessionId: state.sessionId, title: null, itemCount: 0, updatedAt: null }));
  }
  for (const chat of chats) rows.push(sessionRow(chat));
  // A list drawn again (another tab's change) keeps the keyboard on the chat it was on.
  const focused = el.sessionList.contains(document.activeElement) ? document.activeElement.dataset.sessionId : undefined;
  el.sessionList.replaceChildren(...rows);
  if (focused !== undefined) rows.map((li) => li.firstChild).find((b) => b.dataset.sessionId === focused && !b.disabled)?.focus();
  el.toggleSidebar.textContent = `Chats (${chats.length})`;
  // Another tab may have made the user's first chat, or deleted the last one.
  el.backup.disabled = state.busy || chats.length === 0;
}

/** The header of the open chat: its title, and its summary and topics when it has them. `info`
 * is the chat's `getInfo()` (or its `listSessions` entry), null for a chat not saved yet. */
export function renderHeader(info) {
  el.chatTitle.textContent = titleOf(info);
  el.chatTitle.dataset.untitled = info?.title == null ? 'yes' : '';
  const summary = typeof info?.summary === 'string' ? info.summary.trim() : '';
  el.chatSummary.textContent = summary;
  el.chatSummary.title = summary;
  el.chatSummary.hidden = !summary;
  const topics = Array.isArray(info?.topics) ? info.topics.filter((t) => typeof t === 'string' && t.trim()) : [];
  el.chatTopics.replaceChildren(
    ...topics.map((t) => {
      const li = document.createElement('li');
      li.textContent = t;
      return li;
    }),
  );
  el.chatTopics.hidden = topics.length === 0;
}

const numbers = new Intl.NumberFormat('en-US');

/** The open chat's branch, as a choice among all of them (when it has several: `branchIds`, the
 * ids `listBranches()` gives), and its token usage, all branches together: `usage` is
 * `getSessionUsage()`, null for a chat not saved yet; hidden while nothing was used. A version
 * emptied by Undo or Clear has no message to show a switcher on: the choice still reaches it and
 * the others. (The line they are on always shows the agent answering: `renderAgent`.) */
export function renderUsage(usage, branch, branchIds) {
  const onBranch = branchIds.length > 1;
  const name = (id) => (id === 'main' ? 'Original conversation' : `Branch “${id}”`);
  el.chatBranch.replaceChildren(...(onBranch ? branchIds : []).map((id) => new Option(name(id), id, false, id === branch)));
  el.chatBranchLine.hidden = !onBranch;
  const used = usage && usage.requests > 0;
  el.chatUsage.textContent = used
    ? `${numbers.format(usage.totalTokens)} token${usage.totalTokens === 1 ? '' : 's'} · ${numbers.format(usage.requests)} request${usage.requests === 1 ? '' : 's'}`
    : '';
  el.chatUsage.title = used
    ? `Used by this chat's replies${onBranch ? ', all branches together' : ''}: ${numbers.format(usage.inputTokens)} in, ${numbers.format(usage.outputTokens)} out`
    : '';
  el.chatUsage.hidden = !used;
}

/** The agent answering in the open chat, in the header: `name` (the one the chat was last handed
 * off to), or the first agent when null. */
export function renderAgent(name) {
  el.chatAgent.textContent = `Agent: ${name ?? ASSISTANT_LABEL}`;
}

/** Shows the rename box in place of the title, holding the title to edit. */
export function openRename() {
  // A locked chat's title would be stored in clear: it has none to rename. Nor is there one with
  // no chat open (the database could not be opened): a double-click on the header does nothing,
  // as the Rename button is disabled.
  if (state.busy || state.lock || !state.sessionId) return;
  // (A chat without a title shows "New chat", which is no title to keep.)
  el.renameInput.value = el.chatTitle.dataset.untitled ? '' : el.chatTitle.textContent;
  el.renameInput.placeholder = titleOf(null);
  el.chatTitleRow.hidden = true;
  el.renameForm.hidden = false;
  el.renameInput.focus();
  el.renameInput.select();
}

/** Puts the title back in place of the rename box. */
export function closeRename() {
  el.renameForm.hidden = true;
  el.chatTitleRow.hidden = false;
}

/** `data-background` on the app says whether a reply's background work (summary, title) runs. */
export function setBackground(running) {
  el.app.dataset.background = String(running);
}

function sessionRow(chat) {
  const li = document.createElement('li');
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'session';
  b.dataset.sessionId = chat.sessionId;
  if (chat.sessionId === state.sessionId) b.setAttribute('aria-current', 'true');
  const title = document.createElement('span');
  title.className = 'session-title';
  title.textContent = titleOf(chat);
  const meta = document.createElement('span');
  meta.className = 'session-meta';
  const count = `${chat.itemCount} item${chat.itemCount === 1 ? '' : 's'}`;
  meta.textContent = chat.updatedAt == null ? 'not saved yet' : `${count} · ${formatTime(chat.updatedAt)}`;
  b.append(title, meta);
  b.setAttribute('aria-label', `${titleOf(chat)}, ${meta.textContent}`);
  b.disabled = state.busy || lockedOut();
  li.append(b);
  return li;
}

/** Shows `text` in `body`: the model's answers as sanitised Markdown, everything else as text. */
function setText(body, kind, text) {
  if (kind === 'assistant') body.replaceChildren(renderMarkdown(text));
  else body.textContent = text;
}

function messageElement(kind, label, text) {
  const li = document.createElement('li');
  li.className = `msg msg-${kind}`;
  li.dataset.role = kind;
  const who = document.createElement('span');
  who.className = 'msg-who';
  who.textContent = label;
  const body = document.createElement('div');
  body.className = kind === 'assistant' ? 'msg-text msg-markdown' : 'msg-text';
  setText(body, kind, text);
  li.append(who, body);
  return li;
}

/** A button of a user message's tools. */
function toolButton(className, text, label) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = `small ${className}`;
  b.textContent = text;
  b.setAttribute('aria-label', label);
  b.disabled = state.busy;
  return b;
}

/** The switcher between the versions of turn `turn`: `‹ k/n ›`, each arrow naming the branch it
 * switches to in `data-branch` (disabled at either end). */
function switcherElement(turn, { index, count, prev, next }) {
  const group = document.createElement('div');
  group.className = 'branch-switcher';
  group.setAttribute('role', 'group');
  group.setAttribute('aria-label', `Versions of message ${turn}`);
  const step = (branch, dir, text, label) => {
    const b = toolButton(`branch-step branch-${dir}`, text, label);
    if (branch) b.dataset.branch = branch;
    else b.disabled = true;
    return b;
  };
  const position = document.createElement('span');
  position.className = 'branch-position';
  position.textContent = `${index}/${count}`;
  position.setAttribute('aria-label', `version ${index} of ${count}`);
  group.append(
    step(prev, 'prev', '‹', `Previous version of message ${turn}`),
    position,
    step(next, 'next', '›', `Next version of message ${turn}`),
  );
  return group;
}

/** The text each rendered message shows (before Markdown), by its element: how a search hit
 * finds its message (search.js). */
const sources = new WeakMap();

/** The text of rendered message `li`, as stored (an answer's Markdown source). */
export function messageSource(li) {
  return sources.get(li) ?? '';
}

/** The conversation: every item of the open chat (of its branch). Each user message, turn `t` (its
 * 1-based position among them), has an Edit button, and the switcher `switchers.get(t)` when the
 * turn has other versions (a locked chat's, `editable` false: neither, since editing makes a
 * branch). A handoff is one line, "Handed off to <agent>" (its result; the call is not shown
 * apart), and each answer is labelled with the agent that gave it: the one the last handoff
 * before it went to. Every message carries the library's turn number of its item in
 * `data-in-turn` (counted as the library counts them: a user message starts the next turn, the
 * items before the first one are turn 0), which is how a search hit's message is found. */
export function renderMessages(items, switchers = new Map(), { editable = true } = {}) {
  let turn = 0;
  let inTurn = 0;
  let agent = null;
  const calls = handoffCalls(items);
  // The handoff calls whose result is here: that line says it all.
  const answered = new Set(items.filter((item) => handoffTarget(item, calls)).map(callIdOf));
  const shown = items.filter((item) => !(isHandoffCall(item) && answered.has(callIdOf(item))));
  // The same version read again with nothing new (a rename, an export, another tab's tags)
  // keeps the reader where they were; new messages, another chat or version, or a reader at the
  // end already, go to the end.
  const box = el.messages;
  const view = openVersion();
  const stay = box.dataset.view === view && Number(box.dataset.count) >= items.length && box.scrollHeight - box.scrollTop - box.clientHeight > 8;
  const top = box.scrollTop;
  box.dataset.view = view;
  box.dataset.count = String(items.length);
  const keyboard = focusedTool();
  el.messages.replaceChildren(
    ...shown.map((item) => {
      const { kind, label, text } = describe(item, { agent, calls });
      if (kind === 'handoff') agent = handoffTarget(item, calls);
      const li = kind === 'handoff' ? handoffElement(text) : messageElement(kind, label, text);
      if (isUserMessage(item)) inTurn++;
      li.dataset.inTurn = String(inTurn);
      sources.set(li, text);
      if (kind === 'user') {
        turn++;
        li.dataset.turn = String(turn);
        const tools = document.createElement('div');
        tools.className = 'msg-tools';
        const switcher = switchers.get(turn);
        if (switcher) tools.append(switcherElement(turn, switcher));
        if (editable) tools.append(toolButton('msg-edit', 'Edit', `Edit message ${turn}`));
        if (tools.childElementCount) li.append(tools);
      }
      return li;
    }),
  );
  el.empty.hidden = items.length > 0;
  if (stay) box.scrollTop = top;
  else scrollToEnd();
  // A control that had the keyboard keeps it, where the message is still there and the control
  // still works (another tab's change re-renders the messages under it).
  const again = keyboard && el.messages.querySelector(`.msg[data-turn="${keyboard.turn}"] .${keyboard.tool}`);
  if (again && !again.disabled) again.focus({ preventScroll: true });
}

/** The message tool (Edit, a version arrow) that has the keyboard: its message's turn and its class. */
function focusedTool() {
  const at = document.activeElement;
  const turn = el.messages.contains(at) ? at.closest('.msg')?.dataset.turn : undefined;
  const tool = turn && ['msg-edit', 'branch-prev', 'branch-next'].find((c) => at.classList.contains(c));
  return tool ? { turn, tool } : null;
}

/** The line that says the conversation was handed to another agent: `text`, "Handed off to …". */
function handoffElement(text) {
  const li = document.createElement('li');
  li.className = 'msg msg-handoff';
  li.dataset.role = 'handoff';
  const body = document.createElement('span');
  body.className = 'msg-text';
  body.textContent = text;
  li.append(body);
  return li;
}

/** Puts an unsent message back into the input box, before what was typed there meanwhile (a
 * reply waited for another tab's, and the box stayed usable): nothing typed is lost. */
export function putBack(text) {
  el.input.value = el.input.value.trim() ? `${text}\n\n${el.input.value}` : text;
}

/** Opens the box to edit user message `li` in place of its text (closing any other one), and
 * focuses it. */
export function openEditor(li) {
  closeEditor();
  const text = li.querySelector('.msg-text').textContent;
  const form = document.createElement('form');
  form.className = 'msg-editor';
  form.autocomplete = 'off';
  const id = `edit-${li.dataset.turn}`;
  const label = document.createElement('label');
  label.className = 'visually-hidden';
  label.htmlFor = id;
  label.textContent = `Edit message ${li.dataset.turn}`;
  const input = document.createElement('textarea');
  input.id = id;
  input.rows = Math.min(8, Math.max(2, text.split('\n').length));
  input.value = text;
  input.setAttribute('aria-describedby', 'edit-hint');
  const hint = document.createElement('span');
  hint.id = 'edit-hint';
  hint.className = 'visually-hidden';
  hint.textContent = 'Enter sends the edited message on a new branch, keeping the earlier answer; Escape cancels.';
  const buttons = document.createElement('div');
  buttons.className = 'msg-editor-buttons';
  const save = document.createElement('button');
  save.type = 'submit';
  save.className = 'primary small edit-send';
  save.textContent = 'Send edit';
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.className = 'small edit-cancel';
  cancel.textContent = 'Cancel';
  buttons.append(save, cancel);
  form.append(label, input, hint, buttons);
  li.classList.add('editing');
  li.append(form);
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
}

/** Whether `text`, typed in an edit box, is an edit of the message `original` it was opened on:
 * not empty, and not the message as it was (a box gives its line ends as `\n`, whatever the
 * message held). */
export function edited(text, original) {
  return text.trim() !== '' && text !== (original ?? '').replace(/\r\n?/g, '\n');
}

/** Closes the edit box, if one is open; returns the message it was editing (or null). */
export function closeEditor() {
  const form = el.messages.querySelector('.msg-editor');
  if (!form) return null;
  const li = form.closest('.msg');
  form.remove();
  li.classList.remove('editing');
  return li;
}

/** Shows the user's message and an empty reply, labelled `agent` (the agent answering, else
 * "Assistant"), that fills as it streams. Returns the reply: `append(delta)` adds text,
 * `handoff(name)` shows that agent `name` answers from now on (a "Handed off to" line, the reply
 * labelled with it; what was said before the handoff stays above that line), `done()` ends the
 * streaming look. */
export function startExchange(text, agent = null) {
  el.empty.hidden = true;
  el.messages.append(messageElement('user', 'You', text));
  let answer;
  let body;
  let reply = '';
  let frame = 0;
  const draw = () => {
    frame = 0;
    // The reply is followed only by a reader who is at the end: one who scrolled up to read
    // something stays there.
    const following = atEnd();
    setText(body, 'assistant', reply);
    if (following) scrollToEnd();
  };
  const start = (label) => {
    answer = messageElement('assistant', label, '');
    answer.classList.add('streaming');
    answer.setAttribute('aria-busy', 'true');
    el.messages.append(answer);
    body = answer.querySelector('.msg-text');
    reply = '';
    scrollToEnd();
  };
  const finish = () => {
    if (frame) cancelAnimationFrame(frame);
    draw();
    answer.classList.remove('streaming');
    answer.removeAttribute('aria-busy');
    // A screen reader hears the reply once it is whole, not token by token.
    if (reply) el.announce.textContent = `${answer.querySelector('.msg-who').textContent}: ${body.textContent}`;
  };
  start(agent ?? ASSISTANT_LABEL);
  return {
    append(delta) {
      reply += delta;
      // The Markdown is rendered again as the text grows, at most once a frame.
      frame ||= requestAnimationFrame(draw);
    },
    handoff(name) {
      const line = handoffElement(`Handed off to ${name}`);
      if (reply) {
        finish();
        el.messages.append(line);
        start(name);
      } else {
        answer.before(line);
        this.relabel(name);
      }
      scrollToEnd();
    },
    /** Names the agent that answers, before any of its answer came. */
    relabel(name) {
      answer.querySelector('.msg-who').textContent = name;
    },
    done: finish,
  };
}

function scrollToEnd() {
  el.messages.scrollTop = el.messages.scrollHeight;
}

/** Whether the conversation is scrolled to its end (within a line). */
function atEnd() {
  const m = el.messages;
  return m.scrollHeight - m.scrollTop - m.clientHeight < 24;
}

/** Enables what can be used now: nothing but Stop while a reply is written, no Undo, Clear or Export on an
 * empty chat, and no Back up for a user without chats. `data-busy` on the app says whether an
 * action or a reply is in progress. */
export function updateControls() {
  const busy = state.busy;
  const empty = state.itemCount === 0;
  // A locked user not unlocked yet: the unlock prompt takes the chat's place (style.css hides the
  // rest by `data-locked`), and nothing that would read or write a chat can be used.
  const out = lockedOut();
  el.app.dataset.locked = String(out);
  el.unlock.hidden = !out;
  el.unlockSubmit.disabled = busy;
  el.unlockPassphrase.readOnly = busy;
  el.lockSubmit.disabled = busy;
  el.lockCancel.disabled = busy;
  el.lockOpen.disabled = busy;
  el.lockNow.disabled = busy;
  el.lockForget.disabled = busy;
  el.retention.disabled = busy;
  el.send.disabled = busy;
  // Stop stops a reply, nothing else (a backup, a restore, a lock go on to their end).
  el.stop.disabled = !state.controller;
  el.undo.disabled = busy || empty;
  el.clear.disabled = busy || empty;
  el.exportBtn.disabled = busy || empty;
  el.importBtn.disabled = busy;
  el.backup.disabled = busy || state.listed.chats.size === 0;
  // Restoring encrypts what it brings in: it needs the key.
  el.restore.disabled = busy || out;
  // A chat not saved yet (no message sent) has nothing to delete.
  el.deleteChat.disabled = busy || !state.listed.chats.has(state.sessionId);
  el.chatBranch.disabled = busy;
  // (No chat is open after a user switch that failed: nothing to rename.)
  el.rename.disabled = busy || !state.sessionId;
  el.rename.hidden = state.lock !== null;
  // A chat locked meanwhile (here or in another tab) cannot be renamed: an open rename box goes.
  if (state.lock !== null && !el.renameForm.hidden) closeRename();
  // Read-only rather than disabled, so that it keeps the focus while a rename is being saved.
  el.renameInput.readOnly = busy;
  el.renameSave.disabled = busy;
  el.renameCancel.disabled = busy;
  el.newChat.disabled = busy || out;
  el.userSelect.disabled = busy;
  el.newUserForm.querySelector('button').disabled = busy;
  for (const b of el.sessionList.querySelectorAll('button')) b.disabled = busy || out;
  // A search result opens its chat: not while something else runs.
  for (const b of el.searchResults.querySelectorAll('button')) b.disabled = busy || out;
  // A switcher's arrow at either end stays disabled.
  for (const b of el.messages.querySelectorAll('.msg-tools button')) b.disabled = busy || (b.classList.contains('branch-step') && !b.dataset.branch);
  for (const b of el.messages.querySelectorAll('.msg-editor button')) b.disabled = busy;
  el.app.dataset.busy = String(busy);
}

/** The passphrase lock of the current user: the sidebar's part (what state the lock is in, the
 * button that opens the lock form, Lock now and Forget on this device) and the unlock prompt's
 * heading; the search box is off for a locked user (the library indexes nothing of their chats). */
export function renderLock() {
  const { lock, user } = state;
  const unlocked = lock !== null && state.keys.has(user);
  const remembered = unlocked && state.remembered.has(user);
  el.lockState.textContent =
    lock === null
      ? `${user}'s chats are stored as plain text in this browser.`
      : unlocked
        ? `${user}'s chats are encrypted; unlocked${remembered ? ' and remembered on this device' : ' in this tab'}.`
        : `${user}'s chats are encrypted: enter the passphrase to read them.`;
  el.app.dataset.lock = lock === null ? 'none' : unlocked ? 'open' : 'locked';
  el.lockOpen.hidden = lock !== null || !el.lockForm.hidden;
  if (lock !== null) el.lockForm.hidden = true;
  el.lockOpen.setAttribute('aria-expanded', String(!el.lockForm.hidden));
  el.lockActions.hidden = !unlocked;
  el.lockForget.hidden = !remembered;
  el.unlockHeading.textContent = `${user}'s chats are locked`;
  el.chatTitle.title = lock === null ? 'Double-click to rename' : '';
  // For password managers: whose passphrase it is.
  for (const input of el.lockUsernames) input.defaultValue = input.value = user;
  el.searchInput.disabled = lock !== null;
  el.searchInput.placeholder = lock === null ? 'Search chats' : 'No search in locked chats';
}

/** Empties the unlock prompt and closes the lock form, forgetting what was typed in them: they
 * were for another user. */
export function resetLockForms() {
  for (const form of [el.unlockForm, el.lockForm]) form.reset();
  for (const p of [el.unlockError, el.lockError]) {
    p.textContent = '';
    p.hidden = true;
  }
  el.lockForm.hidden = true;
}

export function toggleSidebar(open = el.app.dataset.sidebar !== 'open') {
  el.app.dataset.sidebar = open ? 'open' : 'closed';
  el.toggleSidebar.setAttribute('aria-expanded', String(open));
}
