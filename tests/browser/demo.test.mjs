// The bundled demo page (www/) in headless Chromium: users and their sessions, undo, clear,
// delete (confirmed first), export and import (title included), a chat list from the library's
// session records alone (its titles; no history read), renaming a chat, the summary under the
// title after a reply, the "last N turns" history setting, one session object per open chat,
// streaming and Stop, replies rendered as sanitised Markdown (HTML shown as text, no script, no
// javascript: links, no image requests), a real OpenAI-compatible endpoint in both API styles,
// editing a message onto a new branch and switching between its versions, the tokens used, two
// tabs following each other's changes live, "Keep my chats on this device", backing up and
// restoring all of a user's chats (the library's backup file) and the storage meter, the
// layout at desktop and phone widths, searching a user's chats (the matched words marked as
// text; a result opens its chat at the message), and locking a user's chats with a passphrase
// (encrypted at rest, nothing of them left in clear) and deleting old chats; and a second agent
// the first hands off to and back (named in the header, also after a reload), with the offline
// model and with a real endpoint.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { root, CHROMIUM_ARGS, chromiumPath } from './harness.mjs';
import { serve } from '../../scripts/serve.mjs';
import { startModelServer } from '../server/model-server.mjs';

const DB_NAME = 'agent-sessions-demo';
const artifacts = join(root, 'tests', 'artifacts');

let server;
let url;
let browser;
let model;
before(async () => {
  execFileSync(process.execPath, [join(root, 'www', 'build.mjs')], { cwd: root, stdio: 'pipe' });
  server = await serve(join(root, 'www'));
  ({ url } = server);
  browser = await chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS });
  model = await startModelServer();
});
after(async () => {
  await browser?.close();
  await model?.close();
  await server?.close();
});
beforeEach(() => model.reset());

/** A fresh context (empty storage) with the demo loaded; page errors are collected. `init` runs
 * in the page before its own scripts, on every load. */
async function openDemo(options = {}, { init } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true, ...options });
  if (init) await context.addInitScript(init);
  const page = await openTab(context);
  return { context, page };
}

/** Another tab of `context` (the same storage as its other tabs) with the demo loaded; page
 * errors are collected. */
async function openTab(context) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.requests = [];
  page.on('request', (r) => page.requests.push(r.url()));
  // Dialogs are answered as `answerDialog` said; any other dialog is an error (and dismissed).
  page.dialogAnswers = [];
  page.on('dialog', async (d) => {
    const answer = page.dialogAnswers.shift();
    if (!answer) {
      page.errors.push(`unexpected dialog: ${d.message()}`);
      d.dismiss();
      return;
    }
    answer.seen({ type: d.type(), message: d.message() });
    // What happens elsewhere (another tab) while the dialog is open.
    await answer.meanwhile?.();
    if (answer.accept) d.accept();
    else d.dismiss();
  });
  await page.goto(`${url}/`);
  await ready(page);
  return page;
}

/** Answers the page's next dialog (accepts it, or dismisses it, after `meanwhile()` when given);
 * resolves to `{ type, message }` once it has been shown. */
function answerDialog(page, accept, meanwhile) {
  return new Promise((seen) => page.dialogAnswers.push({ accept, seen, meanwhile }));
}

async function ready(page) {
  try {
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 15000 });
  } catch (e) {
    // A page that never gets ready has usually thrown while loading: say what.
    if (page.errors.length) e.message += `; page errors: ${page.errors.join('; ')}`;
    throw e;
  }
  await idle(page);
}

async function reload(page) {
  await page.reload();
  await ready(page);
}

/** Waits until no run or action is in progress and the view has been re-read. */
async function idle(page) {
  await page.waitForFunction(() => document.getElementById('app').dataset.busy === 'false', null, { timeout: 15000 });
}

/** Waits until, besides, no reply's background work (summary, title) is running and the chat
 * list and header show what it wrote. */
async function settled(page) {
  await page.waitForFunction(
    () => {
      const app = document.getElementById('app');
      return app.dataset.busy === 'false' && app.dataset.background === 'false';
    },
    null,
    { timeout: 15000 },
  );
}

/** Types a message, sends it with Enter, and waits for the reply to be saved and shown, and for
 * its background work to be done. */
async function say(page, text) {
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
  await settled(page);
}

/** Opens Model settings, lets `fill` change the form, and saves it. */
async function saveSettings(page, fill) {
  if (!(await page.isVisible('#settings-form'))) await page.click('#settings summary');
  await fill();
  await page.click('#save-settings');
}

async function addUser(page, name) {
  await page.fill('#new-user-name', name);
  await page.press('#new-user-name', 'Enter');
  await idle(page);
  assert.equal(await page.inputValue('#user-select'), name);
}

async function selectUser(page, name) {
  await page.selectOption('#user-select', name);
  await idle(page);
}

/** The rendered conversation: `[{ role, text }]`. */
function rendered(page) {
  return page.$$eval('#messages .msg', (els) => els.map((e) => ({ role: e.dataset.role, text: e.querySelector('.msg-text').textContent })));
}

const lastAssistant = async (page) => (await rendered(page)).filter((m) => m.role === 'assistant').at(-1)?.text;

function currentSessionId(page) {
  return page.$eval('#session-list .session[aria-current="true"]', (b) => b.dataset.sessionId);
}

function sidebarIds(page) {
  return page.$$eval('#session-list .session', (els) => els.map((b) => b.dataset.sessionId));
}

/** Calls the library inside the page, imported from the same place the page imports it. */
function lib(page, body, args = {}) {
  return page.evaluate(
    async ({ body, args, dbName }) => {
      const lib = await import(new URL('./vendor/agent-sessions/index.js', location.href).href);
      return eval(`(${body})`)({ lib, dbName, ...args });
    },
    { body: body.toString(), args, dbName: DB_NAME },
  );
}

const itemsOf = (page, userId, sessionId) =>
  lib(page, async ({ lib, dbName, userId, sessionId }) => new lib.IndexedDbSession(sessionId, { userId, dbName }).getItems(), { userId, sessionId });

const sessionsOf = (page, userId) => lib(page, async ({ lib, dbName, userId }) => lib.listSessions({ dbName, userId }), { userId });

const infoOf = (page, userId, sessionId) =>
  lib(page, async ({ lib, dbName, userId, sessionId }) => new lib.IndexedDbSession(sessionId, { userId, dbName }).getInfo(), { userId, sessionId });

/** The text of a stored item, as the page shows it. */
const itemText = (item) => (typeof item.content === 'string' ? item.content : item.content.map((p) => p.text).join(''));

/** Every record of every IndexedDB database of the page, as one JSON string. */
function dumpIndexedDb(page) {
  return page.evaluate(async () => {
    const out = {};
    for (const { name } of await indexedDB.databases()) {
      const db = await new Promise((ok, fail) => {
        const r = indexedDB.open(name);
        r.onsuccess = () => ok(r.result);
        r.onerror = () => fail(r.error);
      });
      out[name] = {};
      for (const store of db.objectStoreNames) {
        out[name][store] = await new Promise((ok, fail) => {
          const r = db.transaction(store).objectStore(store).getAll();
          r.onsuccess = () => ok(r.result);
          r.onerror = () => fail(r.error);
        });
      }
      db.close();
    }
    return JSON.stringify(out);
  });
}

async function exportChat(page) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  const path = await download.path();
  return { path, name: download.suggestedFilename(), text: await readFile(path, 'utf8') };
}

test('the page preloads the package: each of its files is downloaded once, from the first moment', async () => {
  const { context, page } = await openDemo();
  const ours = page.requests.filter((u) => u.includes('/vendor/agent-sessions/')).map((u) => new URL(u).pathname.split('/').pop());
  assert.deepEqual(
    [...ours].sort(),
    ['agent_sessions_bg.wasm', 'agent_sessions_runner_bg.wasm', 'index.js', 'runner.js', 'runner_wasm.js'],
    'one request per file: the module imports and the wasm fetches used what the links preloaded',
  );
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('two users on one page keep separate histories, and both survive a reload', async () => {
  const { context, page } = await openDemo();
  try {
    await addUser(page, 'Alice');
    await say(page, 'my hobby is horse racing');
    assert.match(await lastAssistant(page), /your hobby is horse racing.*\(I was given 0 earlier items\.\)/);
    const aliceSession = await currentSessionId(page);

    await addUser(page, 'Bob');
    assert.deepEqual(await rendered(page), [], "Bob starts with an empty chat, not Alice's");
    await say(page, 'what is my hobby?');
    const bobAnswer = await lastAssistant(page);
    assert.match(bobAnswer, /I don't know your hobby/);
    assert.match(bobAnswer, /\(I was given 0 earlier items\.\)/);
    assert.doesNotMatch(bobAnswer, /horse/);
    const bobSession = await currentSessionId(page);
    assert.notEqual(bobSession, aliceSession);

    await selectUser(page, 'Alice');
    assert.equal(await currentSessionId(page), aliceSession);
    assert.equal((await rendered(page)).length, 2);
    await say(page, 'what is my hobby?');
    assert.equal(await lastAssistant(page), 'Your hobby is horse racing. (I was given 2 earlier items.)');

    await reload(page);
    assert.equal(await page.inputValue('#user-select'), 'Alice', 'the current user is remembered');
    assert.deepEqual(
      await page.$$eval('#user-select option', (os) => os.map((o) => o.value)),
      ['Guest', 'Alice', 'Bob'],
    );
    const alice = await rendered(page);
    assert.deepEqual(alice.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
    assert.equal(alice[0].text, 'my hobby is horse racing');
    assert.equal(alice[3].text, 'Your hobby is horse racing. (I was given 2 earlier items.)');
    await selectUser(page, 'Bob');
    const bob = await rendered(page);
    assert.deepEqual(bob.map((m) => m.text), ['what is my hobby?', bobAnswer]);

    // The same, read through the library.
    const [aliceInfo, bobInfo] = [await sessionsOf(page, 'Alice'), await sessionsOf(page, 'Bob')];
    assert.deepEqual(aliceInfo.map((s) => [s.sessionId, s.userId, s.itemCount]), [[aliceSession, 'Alice', 4]]);
    assert.deepEqual(bobInfo.map((s) => [s.sessionId, s.userId, s.itemCount]), [[bobSession, 'Bob', 2]]);
    const aliceItems = await itemsOf(page, 'Alice', aliceSession);
    assert.deepEqual(aliceItems.map(itemText), alice.map((m) => m.text));
    assert.deepEqual(aliceItems[0], { type: 'message', role: 'user', content: 'my hobby is horse racing' });
    assert.deepEqual((await itemsOf(page, 'Bob', bobSession)).map(itemText), bob.map((m) => m.text));
    // A session belongs to its user: Bob cannot open Alice's.
    const mismatch = await lib(
      page,
      async ({ lib, dbName, id }) => new lib.IndexedDbSession(id, { userId: 'Bob', dbName }).getItems().then(() => null, (e) => e.code),
      { id: aliceSession },
    );
    assert.equal(mismatch, 'USER_MISMATCH');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('switching user with messages typed and not sent asks first: kept where the user says no (the list shows the user still chatting), dropped where yes; nothing typed, nothing asked', async () => {
  const { context, page } = await openDemo();
  try {
    await addUser(page, 'Bob');
    await selectUser(page, 'Guest');
    await say(page, 'my name is Ann');
    const ann = await currentSessionId(page);
    // A draft in this chat, another in a new one.
    await page.fill('#input', 'half a question');
    await page.click('#new-chat');
    await idle(page);
    await page.fill('#input', 'another draft');
    const declined = answerDialog(page, false);
    await selectUser(page, 'Bob');
    assert.equal(page.dialogAnswers.length, 0, 'the page asked first');
    assert.match((await declined).message, /^Switch to Bob\? The messages you typed and did not send are dropped/);
    assert.equal(await page.inputValue('#user-select'), 'Guest', 'the list shows who is still chatting');
    assert.equal(await page.inputValue('#input'), 'another draft');
    assert.match(await page.textContent('#status'), /Still chatting as Guest/);
    // Adding a user switches to them: asked too.
    const declinedAdd = answerDialog(page, false);
    await page.fill('#new-user-name', 'Cleo');
    await page.press('#new-user-name', 'Enter');
    await idle(page);
    assert.equal(page.dialogAnswers.length, 0, 'asked before adding');
    assert.match((await declinedAdd).message, /^Switch to Cleo\? The messages you typed/);
    assert.equal(await page.inputValue('#user-select'), 'Guest');
    assert.equal(await page.inputValue('#input'), 'another draft');
    await page.click(`#session-list .session[data-session-id="${ann}"]`);
    await idle(page);
    assert.equal(await page.inputValue('#input'), 'half a question', 'the other chat keeps its draft');
    // Yes: the switch drops them, for whoever comes to the screen next.
    const accepted = answerDialog(page, true);
    await selectUser(page, 'Bob');
    await accepted;
    assert.equal(await page.inputValue('#user-select'), 'Bob');
    assert.equal(await page.inputValue('#input'), '');
    // Nothing typed: no question.
    await selectUser(page, 'Guest');
    assert.equal(await page.inputValue('#user-select'), 'Guest');
    assert.equal(await page.inputValue('#input'), '', 'the drafts went with the switch');
    // A message being edited, its text changed, is one too; opened and not changed, it is not.
    await page.click(`#session-list .session[data-session-id="${ann}"]`);
    await idle(page);
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my name is Anna');
    const declinedEdit = answerDialog(page, false);
    await selectUser(page, 'Bob');
    assert.equal(page.dialogAnswers.length, 0, 'asked before dropping the edit');
    assert.match((await declinedEdit).message, /^Switch to Bob\? The message you typed and did not send is dropped/);
    assert.equal(await page.inputValue('#messages .msg-editor textarea'), 'my name is Anna', 'the edit is kept');
    await page.fill('#messages .msg-editor textarea', 'my name is Ann');
    await selectUser(page, 'Bob');
    assert.equal(await page.inputValue('#user-select'), 'Bob', 'an edit box left as it was: nothing asked');
    // Nor one opened on a message with Windows line ends (the box gives them as \n).
    await say(page, 'hello');
    const bobChat = await currentSessionId(page);
    await lib(page, async ({ lib, dbName, id }) => new lib.IndexedDbSession(id, { userId: 'Bob', dbName }).addItems([{ role: 'user', content: 'line one\r\nline two' }, { role: 'assistant', content: 'ok' }]), { id: bobChat });
    await page.click('#messages .msg[data-turn="2"] .msg-edit');
    assert.equal(await page.inputValue('#messages .msg-editor textarea'), 'line one\nline two');
    await selectUser(page, 'Guest');
    assert.equal(await page.inputValue('#user-select'), 'Guest', 'nothing asked');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a reload opens the user and chat its own tab had open, not those another tab picked last', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my name is Ann');
    const ann = await currentSessionId(page);
    const other = await openTab(context);
    assert.equal(await currentSessionId(other), ann, 'a new tab opens the chat picked last');
    await other.click('#new-chat');
    await idle(other);
    await say(other, 'my city is Oslo');
    const oslo = await currentSessionId(other);
    assert.notEqual(oslo, ann);

    await reload(page);
    assert.equal(await currentSessionId(page), ann);
    assert.equal((await rendered(page))[0].text, 'my name is Ann');

    await addUser(other, 'Bob');
    await say(other, 'my hobby is chess');
    await reload(page);
    assert.equal(await page.inputValue('#user-select'), 'Guest');
    assert.equal(await currentSessionId(page), ann);
    await reload(other);
    assert.equal(await other.inputValue('#user-select'), 'Bob');
    assert.equal((await rendered(other))[0].text, 'my hobby is chess');

    // A tab opened now opens what was picked last: Bob, in his chat.
    const third = await openTab(context);
    assert.equal(await third.inputValue('#user-select'), 'Bob');
    assert.equal((await rendered(third))[0].text, 'my hobby is chess');
    assert.deepEqual([...page.errors, ...other.errors, ...third.errors], []);
  } finally {
    await context.close();
  }
});

test('undo, clear, delete, export and import', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my name is Ann');
    await say(page, 'my hobby is chess');
    const first = await currentSessionId(page);
    const four = await itemsOf(page, 'Guest', first);
    assert.equal(four.length, 4);

    // Undo: exactly the last answer and its question are gone; the question is back in the box.
    await page.click('#undo');
    await idle(page);
    assert.deepEqual(await itemsOf(page, 'Guest', first), four.slice(0, 2));
    assert.equal((await rendered(page)).length, 2);
    assert.equal(await page.inputValue('#input'), 'my hobby is chess');

    // A second chat. What was typed in the first, and not sent, stays with the first.
    await page.click('#new-chat');
    await idle(page);
    const second = await currentSessionId(page);
    assert.notEqual(second, first);
    assert.deepEqual(await rendered(page), []);
    assert.equal(await page.inputValue('#input'), '');
    await say(page, 'my city is Oslo');
    assert.deepEqual(await sidebarIds(page), [second, first], 'newest first');
    const secondItems = await itemsOf(page, 'Guest', second);
    assert.equal(secondItems.length, 2);
    const titles = await page.$$eval('#session-list .session-title', (els) => els.map((e) => e.textContent));
    assert.deepEqual(titles, ['my city is Oslo', 'my name is Ann']);
    assert.match(await page.textContent(`.session[data-session-id="${second}"] .session-meta`), /^2 items · /);

    // Clear the first chat only, once the user confirms: a misclick loses nothing.
    await page.click(`.session[data-session-id="${first}"]`);
    await idle(page);
    assert.equal(await currentSessionId(page), first);
    assert.equal(await page.inputValue('#input'), 'my hobby is chess', 'back with its chat');
    await page.fill('#input', '');
    await page.click(`.session[data-session-id="${second}"]`);
    await idle(page);
    assert.equal(await page.inputValue('#input'), '', 'the second chat’s message was sent');
    await page.fill('#input', 'and my street?');
    await page.click(`.session[data-session-id="${first}"]`);
    await idle(page);
    assert.equal(await page.inputValue('#input'), '', 'emptied, the box stays empty');
    // Typed in a new chat, not saved yet, then left: the next new chat has it.
    await page.click('#new-chat');
    await idle(page);
    await page.fill('#input', 'a thought for a new chat');
    await page.click(`.session[data-session-id="${first}"]`);
    await idle(page);
    assert.equal(await page.inputValue('#input'), '');
    await page.click('#new-chat');
    await idle(page);
    assert.equal(await page.inputValue('#input'), 'a thought for a new chat');
    await page.fill('#input', '');
    await page.click(`.session[data-session-id="${first}"]`);
    await idle(page);
    let dialog = answerDialog(page, false);
    await page.click('#clear');
    assert.equal((await dialog).type, 'confirm');
    assert.match((await dialog).message, /^Clear the chat “my name is Ann”\? Its messages are removed/);
    await idle(page);
    assert.equal((await itemsOf(page, 'Guest', first)).length, 2, 'dismissed: nothing cleared');
    assert.equal((await rendered(page)).length, 2);
    assert.match(await page.textContent('#status'), /The chat was kept/);
    dialog = answerDialog(page, true);
    await page.click('#clear');
    await dialog;
    await idle(page);
    assert.deepEqual(await rendered(page), []);
    assert.deepEqual(await itemsOf(page, 'Guest', first), []);
    assert.deepEqual(await itemsOf(page, 'Guest', second), secondItems, 'the other chat keeps its items');
    // A cleared chat forgets its title and summary, and is named again by its next first message.
    const cleared = await infoOf(page, 'Guest', first);
    assert.deepEqual([cleared.title, cleared.summary, cleared.topics], [null, null, null]);
    assert.equal(await page.textContent('#chat-title'), 'New chat');
    assert.equal(await page.textContent(`.session[data-session-id="${first}"] .session-title`), 'New chat');
    assert.equal(await page.isHidden('#chat-summary'), true);

    // Delete asks first; dismissing the question keeps the chat.
    dialog = answerDialog(page, false);
    await page.click('#delete-chat');
    assert.equal((await dialog).type, 'confirm');
    assert.match((await dialog).message, /^Delete the chat/);
    await idle(page);
    assert.equal(await currentSessionId(page), first);
    assert.deepEqual(new Set(await sidebarIds(page)), new Set([first, second]));
    assert.deepEqual((await sessionsOf(page, 'Guest')).map((s) => s.sessionId).sort(), [first, second].sort());
    assert.match(await page.textContent('#status'), /kept/);

    // Delete the first chat: gone from the sidebar and from the database.
    dialog = answerDialog(page, true);
    await page.click('#delete-chat');
    await dialog;
    await idle(page);
    assert.deepEqual(await sidebarIds(page), [second]);
    assert.deepEqual((await sessionsOf(page, 'Guest')).map((s) => s.sessionId), [second]);
    assert.equal(await currentSessionId(page), second);
    assert.equal(await page.inputValue('#input'), 'and my street?', 'the message typed in it is back with it');

    // Export, then import into a new chat: the same items, and the same title (the export's,
    // not one made from the items: the chat was renamed first).
    await say(page, 'what is my city?');
    assert.match(await lastAssistant(page), /^Your city is Oslo\./);
    await page.click('#rename');
    await page.fill('#rename-input', 'Where I live');
    await page.press('#rename-input', 'Enter');
    await idle(page);
    const items = await itemsOf(page, 'Guest', second);
    assert.equal(items.length, 4);
    const info = await infoOf(page, 'Guest', second);
    assert.equal(info.title, 'Where I live');
    const exported = await exportChat(page);
    assert.equal(exported.name, `chat-${second}.json`);
    const data = JSON.parse(exported.text);
    assert.deepEqual(Object.keys(data).sort(), ['items', 'metadata', 'sessionId', 'userId']);
    assert.deepEqual(data, {
      sessionId: second,
      userId: 'Guest',
      metadata: { title: 'Where I live', summary: info.summary, topics: info.topics },
      items,
    });
    await page.setInputFiles('#import-file', exported.path);
    await page.waitForFunction((old) => document.querySelector('.session[aria-current="true"]')?.dataset.sessionId !== old, second);
    await idle(page);
    const imported = await currentSessionId(page);
    assert.notEqual(imported, second);
    assert.deepEqual(await itemsOf(page, 'Guest', imported), items);
    assert.deepEqual(await itemsOf(page, 'Guest', second), items, 'the original is untouched');
    assert.deepEqual((await rendered(page)).map((m) => m.text), items.map(itemText));
    assert.deepEqual(new Set(await sidebarIds(page)), new Set([imported, second]));
    assert.equal(await page.textContent(`.session[data-session-id="${imported}"] .session-title`), 'Where I live', 'the title restored from the export');
    assert.equal(await page.textContent('#chat-title'), 'Where I live');
    const importedInfo = await infoOf(page, 'Guest', imported);
    assert.deepEqual([importedInfo.title, importedInfo.summary, importedInfo.topics], [info.title, info.summary, info.topics]);
    assert.equal(await page.isHidden('#error'), true);

    // A bare array of items (no metadata) is named by the library from its first user message.
    await page.setInputFiles('#import-file', { name: 'bare.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(items)) });
    await page.waitForFunction((old) => !old.includes(document.querySelector('.session[aria-current="true"]')?.dataset.sessionId), [imported, second]);
    await idle(page);
    const bare = await currentSessionId(page);
    assert.equal(await page.textContent('#chat-title'), 'my city is Oslo');
    assert.equal((await infoOf(page, 'Guest', bare)).title, 'my city is Oslo');
    assert.equal(await page.isHidden('#error'), true);
    assert.equal((await sessionsOf(page, 'Guest')).length, 3);

    // An export without a title (a locked chat's has none) keeps the one its items give.
    const untitled = { sessionId: second, userId: 'Guest', metadata: { title: null, summary: null, topics: null }, items };
    await page.setInputFiles('#import-file', { name: 'untitled.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(untitled)) });
    await page.waitForFunction((old) => !old.includes(document.querySelector('.session[aria-current="true"]')?.dataset.sessionId), [imported, second, bare]);
    await idle(page);
    assert.equal(await page.textContent('#chat-title'), 'my city is Oslo');
    assert.equal((await infoOf(page, 'Guest', await currentSessionId(page))).title, 'my city is Oslo');
    assert.equal((await sessionsOf(page, 'Guest')).length, 4);

    // A file that is not an export is refused in the page, and nothing is created.
    await page.setInputFiles('#import-file', { name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from('{"items": [1, 2]}') });
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error-text'), /INVALID_ITEM/);
    assert.equal((await sessionsOf(page, 'Guest')).length, 4);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** Records every call the page makes on an IndexedDbSession, in `window.__calls`:
 * `{ method, sessionId, object }`, where `object` numbers the session objects in the order they
 * were first used. The library module is imported before the page's own scripts get to use it,
 * so the wrappers are in place from the first call on, reloads included. */
function recordSessionCalls() {
  if (!location.protocol.startsWith('http')) return;
  window.__calls = [];
  const objects = new WeakMap();
  let count = 0;
  import('/vendor/agent-sessions/index.js').then(({ IndexedDbSession }) => {
    for (const method of ['getItems', 'getRecentTurns', 'getInfo', 'update', 'addItems', 'applyHistoryTransaction', 'popItem', 'clearSession', 'close']) {
      const original = IndexedDbSession.prototype[method];
      IndexedDbSession.prototype[method] = function (...args) {
        if (!objects.has(this)) objects.set(this, ++count);
        window.__calls.push({ method, sessionId: this.sessionId, object: objects.get(this) });
        return original.apply(this, args);
      };
    }
    window.__callsRecorded = true;
  });
}

/** The session calls since the last call to `calls` or `reads`. */
async function calls(page) {
  assert.equal(await page.evaluate(() => window.__callsRecorded), true);
  return page.evaluate(() => window.__calls.splice(0));
}

/** The sessions whose history was read (`getItems`, `getRecentTurns`) since the last call to
 * `calls` or `reads`, each once, in order. */
async function reads(page) {
  const history = new Set(['getItems', 'getRecentTurns']);
  return [...new Set((await calls(page)).filter((c) => history.has(c.method)).map((c) => c.sessionId))];
}

const sidebarTitles = (page) => page.$$eval('#session-list .session-title', (els) => els.map((e) => e.textContent));

test("the chat list reads no history: the titles are the library's, only the open chat is read", async () => {
  const { context, page } = await openDemo({}, { init: recordSessionCalls });
  try {
    assert.deepEqual(await reads(page), [], 'a first visit has nothing to read');
    await say(page, 'my name is Ann');
    const a = await currentSessionId(page);
    assert.deepEqual(await reads(page), [a]);

    await page.click('#new-chat');
    await idle(page);
    const b = await currentSessionId(page);
    assert.deepEqual(await reads(page), [], 'a new chat is not read before it is saved');
    await say(page, 'my city is Oslo');
    assert.deepEqual(await reads(page), [b], 'sending reads the open chat only');

    await page.click('#new-chat');
    await idle(page);
    await say(page, 'my hobby is chess');
    const c = await currentSessionId(page);
    assert.deepEqual(await reads(page), [c]);
    assert.deepEqual(await sidebarIds(page), [c, b, a]);
    assert.deepEqual(await sidebarTitles(page), ['my hobby is chess', 'my city is Oslo', 'my name is Ann']);

    // Switching chats reads the chat switched to, and nothing else.
    await page.click(`.session[data-session-id="${a}"]`);
    await idle(page);
    assert.deepEqual(await reads(page), [a]);
    assert.equal((await rendered(page)).length, 2);
    await say(page, 'what is my name?');
    assert.deepEqual(await reads(page), [a]);
    assert.deepEqual(await sidebarIds(page), [a, c, b]);
    assert.equal(await page.textContent('#chat-title'), 'my name is Ann');

    // Another user and back: nothing of the first user's chats but the one that opens.
    await addUser(page, 'Bob');
    assert.deepEqual(await reads(page), []);
    await selectUser(page, 'Guest');
    assert.deepEqual(await reads(page), [a]);

    // A reload reads the open chat only.
    await reload(page);
    assert.deepEqual(await reads(page), [a]);
    assert.deepEqual(await sidebarTitles(page), ['my name is Ann', 'my hobby is chess', 'my city is Oslo']);

    // The titles are the library's, in the session records: the page keeps none of its own.
    assert.deepEqual(
      (await sessionsOf(page, 'Guest')).map((s) => [s.sessionId, s.title]),
      [[a, 'my name is Ann'], [c, 'my hobby is chess'], [b, 'my city is Oslo']],
    );
    const local = await page.evaluate(() => Object.keys(localStorage).sort());
    assert.deepEqual(local, [
      'agent-sessions-demo.currentSession.Bob',
      'agent-sessions-demo.currentSession.Guest',
      'agent-sessions-demo.currentUser',
      'agent-sessions-demo.users',
    ]);
    // A title set elsewhere (another tab, here the library called directly) and a chat with no
    // title yet (nothing but an assistant message) show on the next read, still without reading
    // either chat.
    const untitled = 'untitled-chat';
    await lib(
      page,
      async ({ lib, dbName, b, untitled }) => {
        const other = new lib.IndexedDbSession(b, { userId: 'Guest', dbName });
        await other.update({ title: 'Oslo, renamed in another tab' });
        const bare = new lib.IndexedDbSession(untitled, { userId: 'Guest', dbName });
        await bare.addItems([{ role: 'assistant', content: 'Hello! Ask me anything.' }]);
      },
      { b, untitled },
    );
    await calls(page);
    await reload(page);
    assert.deepEqual(await reads(page), [a]);
    assert.deepEqual(await sidebarIds(page), [untitled, a, c, b]);
    assert.deepEqual(await sidebarTitles(page), ['New chat', 'my name is Ann', 'my hobby is chess', 'Oslo, renamed in another tab']);
    assert.equal(await page.textContent('#chat-title'), 'my name is Ann');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('one session object per open chat, reused while it is open and closed when it is left', async () => {
  const { context, page } = await openDemo({}, { init: recordSessionCalls });
  try {
    /** Each session object serves one chat, and is used no more after its close(). */
    const check = (log) => {
      const chatOf = new Map();
      const closed = new Set();
      for (const { method, sessionId, object } of log) {
        assert.equal(chatOf.get(object) ?? sessionId, sessionId, `object ${object} serves one chat`);
        chatOf.set(object, sessionId);
        assert.ok(!closed.has(object), `object ${object} is not used after close(): ${method}`);
        if (method === 'close') closed.add(object);
      }
    };
    const all = [];
    const step = async () => {
      const log = await calls(page);
      all.push(...log);
      return log;
    };
    /** The one object that served `sessionId` in `log`. */
    const objectOf = (log, sessionId) => {
      const objects = new Set(log.filter((c) => c.sessionId === sessionId).map((c) => c.object));
      assert.equal(objects.size, 1, `one object for ${sessionId}: ${JSON.stringify(log)}`);
      return [...objects][0];
    };

    // Two exchanges, an undo and a clear in one chat: one object for all of them.
    await say(page, 'my name is Ann');
    await say(page, 'my hobby is chess');
    await page.click('#undo');
    await idle(page);
    await page.fill('#input', '');
    const cleared = answerDialog(page, true);
    await page.click('#clear');
    await cleared;
    await idle(page);
    await say(page, 'my name is Ann');
    const a = await currentSessionId(page);
    let log = await step();
    const aObject = objectOf(log, a);
    // The runner writes each turn through history transactions (the session has them); the page
    // reads the chat's info and clears its title with the same object. (The runner's background
    // work, where there is some, uses it too.)
    const methods = new Set(log.map((c) => c.method));
    for (const m of ['getItems', 'getInfo', 'update', 'applyHistoryTransaction', 'popItem', 'clearSession']) assert.ok(methods.has(m), m);
    for (const m of methods) assert.ok(['getItems', 'getRecentTurns', 'getInfo', 'update', 'applyHistoryTransaction', 'popItem', 'clearSession'].includes(m), m);

    // A new chat: the first one is closed.
    await page.click('#new-chat');
    await idle(page);
    log = await step();
    assert.deepEqual(log, [{ method: 'close', sessionId: a, object: aObject }]);
    await say(page, 'my city is Oslo');
    const b = await currentSessionId(page);
    log = await step();
    const bObject = objectOf(log, b);
    assert.notEqual(bObject, aObject);

    // Back to the first chat: the second is closed, the first gets a new object.
    await page.click(`.session[data-session-id="${a}"]`);
    await idle(page);
    log = await step();
    assert.deepEqual(log[0], { method: 'close', sessionId: b, object: bObject });
    assert.equal(objectOf(log.slice(1), a) > bObject, true);
    // Selecting the open chat again keeps its object.
    await page.click(`.session[data-session-id="${a}"]`);
    await idle(page);
    assert.ok(!(await step()).some((c) => c.method === 'close'));

    // Another user: the chat is closed; so is Bob's when going back.
    await addUser(page, 'Bob');
    log = await step();
    assert.deepEqual(log.map((c) => [c.method, c.sessionId]), [['close', a]]);
    await say(page, 'hello');
    const bob = await currentSessionId(page);
    await selectUser(page, 'Guest');
    log = await step();
    assert.deepEqual(log.filter((c) => c.method === 'close').map((c) => c.sessionId), [bob]);
    assert.equal(await currentSessionId(page), a);

    // Delete: the chat is closed before it is deleted.
    answerDialog(page, true);
    await page.click('#delete-chat');
    await idle(page);
    log = await step();
    assert.deepEqual(log.filter((c) => c.method === 'close').map((c) => c.sessionId), [a]);
    assert.deepEqual(await sidebarIds(page), [b]);

    check(all);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('an Enter that confirms an input method’s composition (Japanese, Chinese) sends nothing, in the message box or a message being edited, also where the browser ends the composition first (Safari: keyCode 229)', async () => {
  const { context, page } = await openDemo();
  try {
    const composingEnter = (selector) =>
      page.$eval(selector, (box) => {
        for (const init of [{ isComposing: true }, { keyCode: 229 }]) {
          box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true, ...init }));
        }
      });
    await page.fill('#input', 'にほんご');
    await composingEnter('#input');
    await new Promise((ok) => setTimeout(ok, 300));
    assert.equal(await page.inputValue('#input'), 'にほんご', 'still in the box');
    assert.deepEqual(await rendered(page), []);
    assert.equal(model.requests.length, 0);
    await page.press('#input', 'Enter');
    await settled(page);
    assert.equal((await rendered(page))[0].text, 'にほんご');
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'にほんごで');
    await composingEnter('#messages .msg-editor textarea');
    await new Promise((ok) => setTimeout(ok, 300));
    assert.equal(await page.isVisible('#messages .msg-editor textarea'), true, 'the editor is still open');
    assert.equal((await rendered(page))[0].text, 'にほんご');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('the chat actions toolbar answers the arrow keys, Home and End, skipping what is disabled', async () => {
  const { context, page } = await openDemo();
  try {
    const focused = () => page.evaluate(() => document.activeElement?.id);
    // An empty chat: Undo, Clear and Export are disabled; Import and Delete are what is left.
    await page.focus('#import');
    await page.keyboard.press('ArrowRight');
    assert.equal(await focused(), 'import', 'Delete is disabled for a chat not saved yet: nothing to move to');
    await say(page, 'my name is Ann');
    await settled(page);
    await page.focus('#undo');
    await page.keyboard.press('ArrowRight');
    assert.equal(await focused(), 'clear');
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(), 'export');
    await page.keyboard.press('End');
    assert.equal(await focused(), 'delete-chat');
    await page.keyboard.press('ArrowRight');
    assert.equal(await focused(), 'undo', 'round from the last to the first');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await focused(), 'delete-chat', 'and from the first to the last');
    await page.keyboard.press('Home');
    assert.equal(await focused(), 'undo');
    // The keys move the focus only: nothing was pressed.
    assert.equal((await rendered(page)).length, 2);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('rename a chat: Rename (or a double-click on the title), Enter saves, Escape cancels; the name shows in the sidebar and header and survives a reload', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my name is Ann');
    const a = await currentSessionId(page);
    assert.equal(await page.textContent('#chat-title'), 'my name is Ann');
    assert.equal(await page.isHidden('#rename-form'), true);

    // Keyboard only: Enter on Rename opens the box with the title in it, selected; typing replaces it.
    await page.focus('#rename');
    await page.keyboard.press('Enter');
    assert.equal(await page.isVisible('#rename-input'), true);
    assert.equal(await page.isHidden('#chat-title'), true);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'rename-input');
    assert.equal(await page.inputValue('#rename-input'), 'my name is Ann');
    await page.keyboard.type('About   Ann ');
    await page.keyboard.press('Enter');
    await idle(page);
    assert.equal(await page.isHidden('#rename-form'), true);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'rename', 'focus is back on Rename');
    assert.equal(await page.textContent('#chat-title'), 'About Ann', 'one line, trimmed');
    assert.deepEqual(await sidebarTitles(page), ['About Ann']);
    assert.match(await page.getAttribute(`.session[data-session-id="${a}"]`, 'aria-label'), /^About Ann, /);
    assert.equal((await infoOf(page, 'Guest', a)).title, 'About Ann', 'stored with update({ title })');
    assert.match(await page.textContent('#status'), /renamed/);

    // Later replies keep the name (the model titles a chat after its first reply only).
    await say(page, 'what is my name?');
    assert.match(await lastAssistant(page), /^Your name is Ann\./);
    assert.equal(await page.textContent('#chat-title'), 'About Ann');

    // A double-click on the title opens the box too; Escape (or Cancel) leaves the name as it was.
    await page.dblclick('#chat-title');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'rename-input');
    await page.keyboard.type('Not saved');
    await page.keyboard.press('Escape');
    assert.equal(await page.isHidden('#rename-form'), true);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'rename');
    await page.click('#rename');
    await page.fill('#rename-input', 'Not saved either');
    await page.click('#rename-cancel');
    assert.equal(await page.isHidden('#rename-form'), true);
    assert.equal(await page.textContent('#chat-title'), 'About Ann');
    assert.equal((await infoOf(page, 'Guest', a)).title, 'About Ann');

    // Over 1,000 characters: the library refuses it, the page shows its error, and the box stays
    // open with the text in it to shorten. A blank name is refused by the page.
    await page.click('#rename');
    await page.fill('#rename-input', 'x'.repeat(1001));
    await page.press('#rename-input', 'Enter');
    await idle(page);
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error-text'), /INVALID_TITLE.*1000/);
    assert.equal(await page.isVisible('#rename-form'), true);
    assert.equal((await page.inputValue('#rename-input')).length, 1001);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'rename-input');
    assert.equal((await infoOf(page, 'Guest', a)).title, 'About Ann', 'nothing written');
    await page.fill('#rename-input', '   ');
    await page.press('#rename-input', 'Enter');
    await idle(page);
    assert.match(await page.textContent('#error-text'), /cannot be empty/);
    assert.equal((await infoOf(page, 'Guest', a)).title, 'About Ann');
    // Exactly 1,000 is allowed; the header keeps it on one line.
    await page.fill('#rename-input', 'y'.repeat(1000));
    await page.press('#rename-input', 'Enter');
    await idle(page);
    assert.equal(await page.isHidden('#error'), true);
    assert.equal((await infoOf(page, 'Guest', a)).title, 'y'.repeat(1000));
    assert.equal((await page.textContent('#chat-title')).length, 1000);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal scrolling');
    const box = await page.$eval('#chat-title', (h) => h.getBoundingClientRect().height);
    assert.ok(box < 40, `one line: ${box}px`);
    await page.click('#rename');
    await page.fill('#rename-input', 'About Ann');
    await page.press('#rename-input', 'Enter');
    await idle(page);

    // A new chat can be named before its first message: it is saved with its name, and the
    // name stays when the first reply comes (the model does not title it).
    await page.click('#new-chat');
    await idle(page);
    const b = await currentSessionId(page);
    assert.equal(await page.textContent('#chat-title'), 'New chat');
    await page.click('#rename');
    // The box is empty: the header’s “New chat” is no title to keep (Enter would have saved it,
    // and the model would never title the chat).
    assert.equal(await page.inputValue('#rename-input'), '');
    assert.equal(await page.getAttribute('#rename-input', 'placeholder'), 'New chat');
    await page.press('#rename-input', 'Enter');
    await idle(page);
    assert.match(await page.textContent('#error-text'), /cannot be empty/);
    assert.equal(await page.isVisible('#rename-form'), true);
    await page.fill('#rename-input', 'Trip plans');
    await page.press('#rename-input', 'Enter');
    await idle(page);
    assert.deepEqual(await sidebarIds(page), [b, a]);
    assert.deepEqual(await sidebarTitles(page), ['Trip plans', 'About Ann']);
    await say(page, 'my destination is Tromsø and my budget is small');
    assert.equal(await page.textContent('#chat-title'), 'Trip plans');
    assert.equal((await infoOf(page, 'Guest', b)).title, 'Trip plans');

    // Both names survive a reload, in the sidebar and in the header.
    await reload(page);
    assert.deepEqual(await sidebarTitles(page), ['Trip plans', 'About Ann']);
    assert.equal(await page.textContent('#chat-title'), 'Trip plans');
    await page.click(`.session[data-session-id="${a}"]`);
    await idle(page);
    assert.equal(await page.textContent('#chat-title'), 'About Ann');

    // Switching chats closes an open rename box: it never renames the wrong chat.
    await page.click('#rename');
    await page.fill('#rename-input', 'Meant for Ann');
    await page.click(`.session[data-session-id="${b}"]`);
    await idle(page);
    assert.equal(await page.isHidden('#rename-form'), true);
    assert.equal(await page.textContent('#chat-title'), 'Trip plans');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('an action waiting for a slow summary and title can be given up with Stop: nothing changes, the page is usable, and the work goes on', async () => {
  const { context, page } = await openDemo();
  try {
    // The work after the reply waits, as behind a slow model: its lock is held here.
    const id = await currentSessionId(page);
    await page.evaluate(async (name) => {
      await new Promise((held) => navigator.locks.request(name, () => (held(), new Promise((release) => (window.releaseAfterTurn = release)))));
    }, `agent-sessions-after-turn:${JSON.stringify([DB_NAME, id])}`);
    await page.fill('#input', 'my hobby is falconry');
    await page.press('#input', 'Enter');
    await idle(page);
    assert.equal(await page.getAttribute('#app', 'data-background'), 'true');
    await page.click('#undo');
    await page.waitForFunction(() => /Waiting for the chat’s summary and title/.test(document.getElementById('status').textContent));
    assert.equal(await page.isEnabled('#stop'), true, 'Stop gives the wait up');
    await page.click('#stop');
    await idle(page);
    assert.match(await page.textContent('#status'), /^Not done: stopped while the chat’s summary and title were being written/);
    assert.equal(await page.isVisible('#error'), false, 'not an error');
    assert.deepEqual((await rendered(page)).map((m) => m.role), ['user', 'assistant'], 'nothing undone');
    assert.equal(await page.isEnabled('#send'), true);
    // A rename sent while the wait lasts, given up with Escape in its box: not renamed.
    await page.click('#rename');
    await page.fill('#rename-input', 'Falconry notes');
    await page.press('#rename-input', 'Enter');
    await page.waitForFunction(() => /Waiting for the chat’s summary and title/.test(document.getElementById('status').textContent));
    await page.press('#rename-input', 'Escape');
    await idle(page);
    assert.match(await page.textContent('#status'), /^Not done: stopped/);
    assert.notEqual(await page.textContent('#chat-title'), 'Falconry notes');
    // So do "Delete old chats" and locking the chats, which wait for every chat's work.
    await page.fill('#retention-days', '0');
    const asked = answerDialog(page, true);
    await page.click('#retention');
    await asked;
    await page.waitForFunction(() => /Waiting for the chat’s summary and title/.test(document.getElementById('status').textContent));
    await page.click('#stop');
    await idle(page);
    assert.match(await page.textContent('#status'), /^Not done: stopped/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 2, 'nothing deleted');
    await page.click('#lock-open');
    await page.fill('#lock-passphrase', 'a passphrase of the guest');
    await page.fill('#lock-confirm', 'a passphrase of the guest');
    await page.click('#lock-submit');
    await page.waitForFunction(() => /Waiting for the chat’s summary and title/.test(document.getElementById('status').textContent));
    await page.click('#stop');
    await idle(page);
    assert.match(await page.textContent('#status'), /^Not done: stopped/);
    assert.equal(await page.evaluate(() => localStorage.getItem('agent-sessions-demo.lock.Guest')), null, 'not locked');
    // And "Back up all chats".
    await page.click('#backup');
    await page.waitForFunction(() => /Waiting for the chat’s summary and title/.test(document.getElementById('status').textContent));
    assert.equal(await page.isEnabled('#stop'), true);
    await page.click('#stop');
    await idle(page);
    assert.match(await page.textContent('#status'), /^Not done: stopped/);
    await page.evaluate(() => window.releaseAfterTurn());
    await settled(page);
    assert.notEqual(await page.textContent('#chat-title'), 'Falconry notes', 'the rename given up was not made after all');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('the summary shows under the title after a reply, written in the background without holding up the page; the model titles the chat after its first reply', async () => {
  const { context, page } = await openDemo();
  const tokenDelay = (ms) => page.evaluate(async (ms) => (await import('/offline-model.js')).setTokenDelay(ms), ms);
  try {
    assert.equal(await page.isHidden('#chat-summary'), true);
    assert.equal(await page.isChecked('#set-summaries'), true, 'on by default');
    // The offline model answers slowly, so that the background work can be seen running (its
    // whole answers wait one delay: long enough that the reply's own end is seen first even on a
    // busy machine).
    await tokenDelay(400);
    const first = 'please remember that my hobby is horse racing';
    await page.fill('#input', first);
    await page.press('#input', 'Enter');
    await idle(page);
    // The reply is saved and shown; its summary and title are still being written, and the page
    // can be used meanwhile.
    assert.match(await lastAssistant(page), /your hobby is horse racing/);
    assert.equal(await page.getAttribute('#app', 'data-background'), 'true');
    assert.equal(await page.isEnabled('#send'), true);
    assert.equal(await page.isEnabled('#new-chat'), true);
    assert.equal(await page.isEnabled('#rename'), true);
    assert.equal(await page.isHidden('#chat-summary'), true);
    assert.equal(await page.textContent('#chat-title'), first, "the library's title, from the first message");
    await settled(page);
    const a = await currentSessionId(page);
    const summary1 = await page.textContent('#chat-summary');
    assert.equal(await page.isVisible('#chat-summary'), true);
    assert.match(summary1, /The user's hobby is horse racing\./);
    assert.deepEqual(await page.$$eval('#chat-topics li', (els) => els.map((e) => e.textContent)), ['hobby']);
    // The model's title (at most six words) replaced the library's.
    assert.equal(await page.textContent('#chat-title'), 'please remember that my hobby is');
    assert.deepEqual(await sidebarTitles(page), ['please remember that my hobby is']);
    const info = await infoOf(page, 'Guest', a);
    assert.deepEqual([info.title, info.summary, info.topics], ['please remember that my hobby is', summary1, ['hobby']]);

    // The next reply updates the summary (what it said so far is kept), not the title.
    await tokenDelay(5);
    await say(page, 'my city is Oslo');
    const summary2 = await page.textContent('#chat-summary');
    assert.match(summary2, /The user's hobby is horse racing\. The user's city is Oslo\./);
    assert.deepEqual(await page.$$eval('#chat-topics li', (els) => els.map((e) => e.textContent)), ['hobby', 'city']);
    assert.equal(await page.textContent('#chat-title'), 'please remember that my hobby is');

    // It is stored: a reload shows it again.
    await reload(page);
    assert.equal(await page.textContent('#chat-summary'), summary2);
    assert.equal((await infoOf(page, 'Guest', a)).summary, summary2);

    // A new chat has no summary; with "Summarise chats" off, none is written and the title stays
    // the library's.
    await page.click('#new-chat');
    await idle(page);
    assert.equal(await page.isHidden('#chat-summary'), true);
    await saveSettings(page, () => page.uncheck('#set-summaries'));
    const long = 'my name is Ann and I would like some tea';
    await say(page, long);
    const b = await currentSessionId(page);
    assert.equal(await page.isHidden('#chat-summary'), true);
    assert.equal(await page.textContent('#chat-title'), long);
    assert.deepEqual([(await infoOf(page, 'Guest', b)).summary, (await infoOf(page, 'Guest', b)).title], [null, long]);
    await reload(page);
    await page.click('#settings summary');
    assert.equal(await page.isChecked('#set-summaries'), false, 'the setting is kept');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('"History sent to the model: the last N turns" limits what the model receives; the chat keeps everything', async () => {
  const { context, page } = await openDemo();
  try {
    // The offline model says what it was given.
    await saveSettings(page, async () => {
      assert.equal(await page.inputValue('#set-history'), 'all');
      assert.equal(await page.isDisabled('#set-history-turns'), true);
      await page.selectOption('#set-history', 'turns');
      assert.equal(await page.isEnabled('#set-history-turns'), true);
      await page.fill('#set-history-turns', '1');
    });
    assert.match(await page.textContent('#model-line'), /history: the last 1 turn$/);
    await say(page, 'my hobby is chess');
    await say(page, 'my city is Oslo');
    await say(page, 'what is my city?');
    assert.equal(await lastAssistant(page), 'Your city is Oslo. (I was given 2 earlier items.)', 'the previous turn only');
    await say(page, 'what is my hobby?');
    assert.match(await lastAssistant(page), /^I don't know your hobby.*\(I was given 2 earlier items\.\)$/, 'the first turn was not sent');
    const id = await currentSessionId(page);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 8, 'every turn is kept');
    assert.equal((await rendered(page)).length, 8, 'and shown');

    // Kept with the other settings; "All of the chat" sends everything again.
    await reload(page);
    await page.click('#settings summary');
    assert.equal(await page.inputValue('#set-history'), 'turns');
    assert.equal(await page.inputValue('#set-history-turns'), '1');
    await saveSettings(page, () => page.fill('#set-history-turns', '3'));
    await say(page, 'what is my hobby?');
    assert.match(await lastAssistant(page), /^I don't know your hobby.*\(I was given 6 earlier items\.\)$/, 'three turns');
    await saveSettings(page, () => page.selectOption('#set-history', 'all'));
    assert.doesNotMatch(await page.textContent('#model-line'), /history/);
    await say(page, 'what is my hobby?');
    assert.equal(await lastAssistant(page), 'Your hobby is chess. (I was given 10 earlier items.)');

    // A real endpoint: the request body holds the newest turn of the history and the new message.
    await saveSettings(page, async () => {
      await page.fill('#set-base-url', model.url);
      await page.fill('#set-model', 'test-model');
      await page.uncheck('#set-summaries');
      await page.selectOption('#set-history', 'turns');
      await page.fill('#set-history-turns', '1');
    });
    await page.click('#new-chat');
    await idle(page);
    for (const q of ['first question', 'second question', 'third question']) await say(page, q);
    assert.equal(model.requests.length, 3);
    const sent = (req) => req.body.messages.filter((m) => m.role === 'user' || m.role === 'assistant').map((m) => [m.role, itemText(m)]);
    const [, second, third] = model.requests;
    assert.deepEqual(sent(second).map(([role, text]) => (role === 'user' ? text : role)), ['first question', 'assistant', 'second question']);
    assert.deepEqual(sent(third).map(([role, text]) => (role === 'user' ? text : role)), ['second question', 'assistant', 'third question']);
    assert.doesNotMatch(third.raw, /first question/, 'the earlier turn is absent');
    assert.equal(sent(third)[1][1], itemText((await itemsOf(page, 'Guest', await currentSessionId(page)))[3]), 'the answer to the second question');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a reader who scrolls up while a reply streams stays where they are; one at the end follows the reply', async () => {
  const { context, page } = await openDemo({ viewport: { width: 900, height: 500 } });
  try {
    for (let i = 0; i < 3; i++) await say(page, 'tell me a story');
    const streaming = async () => {
      await page.fill('#input', 'tell me a story');
      await page.press('#input', 'Enter');
      await page.waitForFunction(() => document.querySelector('#messages .msg.streaming .msg-text')?.textContent.length > 0, null, { polling: 10 });
    };
    const place = () => page.$eval('#messages', (m) => ({ top: m.scrollTop, end: m.scrollHeight - m.clientHeight }));
    // At the end: the reply is followed as it grows.
    await streaming();
    await page.waitForTimeout(300);
    const followed = await place();
    assert.ok(followed.end > 0, 'the conversation is longer than its box');
    assert.ok(followed.end - followed.top < 24, JSON.stringify(followed));
    await idle(page);
    // Scrolled up: the page leaves the reader there while the reply goes on.
    await streaming();
    await page.$eval('#messages', (m) => {
      m.scrollTop = 0;
    });
    await page.waitForTimeout(300);
    assert.equal(await page.$eval('#messages .msg.streaming', () => true).catch(() => false), true, 'still streaming');
    assert.equal((await place()).top, 0);
    await idle(page);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('replies stream into the page; Stop leaves a consistent history', async () => {
  const { context, page } = await openDemo();
  try {
    await page.fill('#input', 'tell me a story');
    await page.press('#input', 'Enter');
    // While the run is in progress the reply already shows part of its text.
    const partial = await (
      await page.waitForFunction(() => {
        const reply = document.querySelector('#messages .msg.streaming .msg-text');
        return reply && reply.textContent.length > 0 && reply.textContent;
      }, null, { polling: 10, timeout: 10000 })
    ).jsonValue();
    await idle(page);
    const final = await lastAssistant(page);
    assert.ok(final.startsWith(partial), 'the partial text is the start of the reply');
    assert.ok(partial.length < final.length, `partial "${partial}" is shorter than the final reply`);
    assert.match(final, /The end\. \(I was given 0 earlier items\.\)$/);
    // A screen reader hears the whole reply once, from a polite live region.
    assert.equal(await page.textContent('#announce'), `Assistant: ${final}`);
    assert.equal(await page.getAttribute('#announce', 'aria-live'), 'polite');
    const id = await currentSessionId(page);
    const done = await itemsOf(page, 'Guest', id);
    assert.equal(done.length, 2);

    // Stop in the middle of the next reply.
    await page.fill('#input', 'another story, please');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelector('#messages .msg.streaming .msg-text')?.textContent.length > 0, null, { polling: 10 });
    assert.equal(await page.isEnabled('#stop'), true);
    await page.click('#stop');
    await idle(page);
    const history = await itemsOf(page, 'Guest', id);
    assert.deepEqual(history, [...done, { type: 'message', role: 'user', content: 'another story, please' }], 'the complete exchange and the question alone');
    assert.deepEqual((await rendered(page)).map((m) => m.text), history.map(itemText), 'the page shows what the session holds');
    assert.match(await page.textContent('#status'), /Stopped/);
    assert.equal(await page.isDisabled('#stop'), true);
    assert.equal(await page.isHidden('#error'), true);

    // The chat goes on from there: the model gets the stopped question as history.
    await say(page, 'what is my hobby?');
    assert.match(await lastAssistant(page), /I don't know your hobby.*\(I was given 3 earlier items\.\)/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 5);

    // Escape stops a reply too (keyboard only).
    await page.fill('#input', 'one more story');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelector('#messages .msg.streaming .msg-text')?.textContent.length > 0, null, { polling: 10 });
    await page.keyboard.press('Escape');
    await idle(page);
    const after = await itemsOf(page, 'Guest', id);
    assert.equal(after.length, 6);
    assert.deepEqual(after.at(-1), { type: 'message', role: 'user', content: 'one more story' });
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'input', 'focus is back in the input box');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('Stop pressed as the answer is being saved: the exchange is saved and said to be, the question is not put back, and an edit keeps its version', async () => {
  const { context, page } = await openDemo();
  try {
    // Stop is pressed once the answer's save reached the session, before the run heard back.
    await lib(page, async ({ lib }) => {
      const save = lib.IndexedDbSession.prototype.applyHistoryTransaction;
      lib.IndexedDbSession.prototype.applyHistoryTransaction = async function (...args) {
        const done = await save.apply(this, args);
        if (window.stopOnSave && JSON.stringify(args[0]).includes('"assistant"')) {
          window.stopOnSave = false;
          document.getElementById('stop').click();
        }
        return done;
      };
    });
    await page.evaluate(() => (window.stopOnSave = true));
    await page.fill('#input', 'tell me a story');
    await page.press('#input', 'Enter');
    await idle(page);
    assert.equal(await page.evaluate(() => window.stopOnSave), false, 'Stop was pressed during the save');
    const id = await currentSessionId(page);
    const items = await itemsOf(page, 'Guest', id);
    assert.equal(items.length, 2);
    assert.equal(await page.inputValue('#input'), '', 'the saved question is not put back to be sent twice');
    assert.equal(await page.textContent('#status'), 'Saved to IndexedDB.');
    assert.deepEqual((await rendered(page)).map((m) => m.text), items.map(itemText));

    await page.evaluate(() => (window.stopOnSave = true));
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'tell me a short story');
    await page.press('#messages .msg-editor textarea', 'Enter');
    await idle(page);
    assert.equal(await page.evaluate(() => window.stopOnSave), false, 'Stop was pressed during the save');
    const branches = await lib(page, async ({ lib, dbName, id }) => (await new lib.IndexedDbSession(id, { userId: 'Guest', dbName }).listBranches()).map((b) => b.branchId), { id });
    assert.equal(branches.length, 2, 'the version made for the edit, which holds its saved answer, is kept');
    assert.match(await page.textContent('#status'), /^Saved on a new branch/);
    const shown = await rendered(page);
    assert.deepEqual(shown.map((m) => m.role), ['user', 'assistant']);
    assert.equal(shown[0].text, 'tell me a short story');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('HTML in a reply is shown as text and never runs', async () => {
  const { context, page } = await openDemo();
  try {
    const img = '<img src=x onerror="window.__pwned=1">';
    const script = '<script>window.__pwned=1</script>';
    await say(page, `say: ${img} and ${script}`);
    const check = async () => {
      const reply = await lastAssistant(page);
      assert.ok(reply.startsWith(`${img} and ${script}`), reply);
      assert.equal(await page.evaluate(() => document.querySelectorAll('#messages img, #messages script').length), 0);
      // Give a broken image time to fire its error handler, were it ever an element.
      await page.waitForTimeout(200);
      assert.equal(await page.evaluate(() => window.__pwned), undefined);
    };
    await check();
    const stored = await itemsOf(page, 'Guest', await currentSessionId(page));
    assert.ok(itemText(stored[1]).startsWith(`${img} and ${script}`), 'stored verbatim');
    await reload(page);
    await check();
    assert.ok((await page.textContent('#chat-title')).startsWith('say: <img'), 'the title is text too');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** The elements of the last reply, for checks run in the page. */
const lastReply = '#messages .msg-assistant:last-child .msg-text';

test('a reply is rendered as Markdown: emphasis, lists, code blocks, tables and links', async () => {
  await mkdir(artifacts, { recursive: true });
  const { context, page } = await openDemo();
  try {
    const markdown = [
      'say: Here is **bold**, *italic* and `inline code`.',
      '',
      '1. first',
      '2. second',
      '   - nested',
      '',
      '```js',
      'const ok = 1 < 2 && "<b>";',
      '```',
      '',
      '| name | value |',
      '|------|-------|',
      '| a    | 1     |',
      '',
      '> quoted',
      '',
      'See [the docs](https://example.com/docs) or https://example.org/page.',
    ].join('\n');
    await say(page, markdown);
    const check = async () => {
      const reply = await page.$eval(lastReply, (body) => ({
        strong: body.querySelector('p > strong')?.textContent,
        em: body.querySelector('p > em')?.textContent,
        inline: body.querySelector('p > code')?.textContent,
        ol: [...body.querySelectorAll('ol > li')].map((li) => li.firstChild.textContent.trim()),
        nested: body.querySelector('ol ul > li')?.textContent,
        pre: body.querySelector('pre > code')?.textContent,
        table: [...body.querySelectorAll('table tr')].map((tr) => [...tr.children].map((c) => `${c.tagName}:${c.textContent}`)),
        quote: body.querySelector('blockquote')?.textContent.trim(),
        links: [...body.querySelectorAll('a')].map((a) => [a.getAttribute('href'), a.textContent, a.target, a.rel]),
        elements: [...body.querySelectorAll('*')].map((e) => e.tagName.toLowerCase()),
      }));
      assert.equal(reply.strong, 'bold');
      assert.equal(reply.em, 'italic');
      assert.equal(reply.inline, 'inline code');
      assert.deepEqual(reply.ol, ['first', 'second']);
      assert.equal(reply.nested, 'nested');
      assert.equal(reply.pre, 'const ok = 1 < 2 && "<b>";\n');
      assert.deepEqual(reply.table, [['TH:name', 'TH:value'], ['TD:a', 'TD:1']]);
      assert.equal(reply.quote, 'quoted');
      assert.deepEqual(reply.links, [
        ['https://example.com/docs', 'the docs', '_blank', 'noopener noreferrer'],
        ['https://example.org/page', 'https://example.org/page', '_blank', 'noopener noreferrer'],
      ]);
      assert.ok(!reply.elements.includes('b'), 'HTML inside a code block is text');
      // The user's message is plain text.
      const user = await page.$eval('#messages .msg-user .msg-text', (b) => ({ text: b.textContent, children: b.children.length }));
      assert.deepEqual(user, { text: markdown, children: 0 });
    };
    await check();
    await page.evaluate(() => document.activeElement?.blur());
    await page.screenshot({ path: join(artifacts, 'demo-markdown.png') });
    await reload(page);
    await check();

    // Everything the page loaded came from its own origin.
    const foreign = page.requests.filter((u) => !u.startsWith(`${url}/`) && !/^(data|blob):/.test(u));
    assert.deepEqual(foreign, []);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('HTML carried in Markdown is shown as text and never runs', async () => {
  const { context, page } = await openDemo();
  try {
    const html = [
      '<script>window.__pwned = 1</script>',
      '<div onmouseover="window.__pwned = 2">hover me</div>',
      '<svg onload="window.__pwned = 3"></svg>',
      '<iframe src="javascript:window.__pwned = 4"></iframe>',
      '<style>body { display: none }</style>',
    ];
    const markdown = [
      'say: - a list item <img src=x onerror="window.__pwned = 5">',
      '- **bold <img src=y onerror="window.__pwned = 6">**',
      '',
      ...html.flatMap((h) => [h, '']),
      '<details open><summary>details</summary><img src=z onerror="window.__pwned = 7"></details>',
    ].join('\n');
    await say(page, markdown);
    const check = async () => {
      const found = await page.$eval(lastReply, (body) => ({
        elements: [...new Set([...body.querySelectorAll('*')].map((e) => e.tagName.toLowerCase()))].sort(),
        attributes: [...body.querySelectorAll('*')].flatMap((e) => [...e.attributes].map((a) => a.name)),
        text: body.textContent,
      }));
      assert.deepEqual(found.elements, ['li', 'p', 'strong', 'ul']);
      assert.deepEqual(found.attributes, []);
      assert.match(found.text, /a list item <img src=x onerror="window.__pwned = 5">/);
      for (const h of html) assert.ok(found.text.includes(h), `shown as text: ${h}`);
      await page.hover(`${lastReply} p:has-text("hover me")`);
      await page.waitForTimeout(200);
      assert.equal(await page.evaluate(() => window.__pwned), undefined);
      assert.equal(await page.isVisible('#messages'), true);
    };
    await check();
    await reload(page);
    await check();
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('javascript: and other non-web links in a reply are not links', async () => {
  const { context, page } = await openDemo();
  try {
    const markdown = [
      'say: [one](javascript:window.__pwned=1)',
      '[two](JaVaScRiPt:window.__pwned=2)',
      '[three](%20javascript:window.__pwned=3)',
      '[four](java&#115;cript:window.__pwned=4)',
      '[five](javascript&colon;window.__pwned=5)',
      '<javascript:window.__pwned=6>',
      '[seven](data:text/html,%3Cscript%3Ewindow.__pwned=7%3C/script%3E)',
      '[eight](vbscript:msgbox)',
      '[nine][ref]',
      '[ten](#top)',
      '',
      '[ref]: javascript:window.__pwned=9',
      '',
      'Only [this one](https://example.com/) is a link.',
    ].join('\n');
    await say(page, markdown);
    const check = async () => {
      const links = await page.$$eval(`${lastReply} a`, (as) => as.map((a) => ({ text: a.textContent, href: a.getAttribute('href') })));
      assert.deepEqual(
        links.filter((l) => l.href !== null),
        [{ text: 'this one', href: 'https://example.com/' }],
        'every other link lost its address',
      );
      // Clicking what was meant as a link does nothing.
      const pages = context.pages().length;
      for (const word of ['one', 'two', 'three', 'four', 'five', 'seven', 'eight', 'nine', 'ten']) {
        await page.click(`${lastReply} >> text=${word}`);
      }
      await page.waitForTimeout(200);
      assert.equal(await page.evaluate(() => window.__pwned), undefined);
      assert.equal(page.url(), `${url}/`);
      assert.equal(context.pages().length, pages, 'no new tab');
    };
    await check();
    await reload(page);
    await check();
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('an image in a reply is not loaded: no beacon reaches its server', async () => {
  const { context, page } = await openDemo();
  try {
    const origin = new URL(model.url).origin;
    const markdown = [
      `say: ![a chart](${origin}/beacon-markdown?reader=1)`,
      '',
      `![](${origin}/beacon-no-alt)`,
      '',
      `[![linked](${origin}/beacon-linked)](https://example.com/)`,
      '',
      '![by reference][img]',
      '',
      `<img src="${origin}/beacon-html">`,
      '',
      `[img]: ${origin}/beacon-reference`,
      '',
      'The end.',
    ].join('\n');
    await say(page, markdown);
    const check = async () => {
      const reply = await page.$eval(lastReply, (body) => ({
        images: body.querySelectorAll('img, picture, source, video, audio, object, embed, iframe').length,
        text: body.textContent,
      }));
      assert.equal(reply.images, 0);
      for (const alt of ['[image: a chart]', '[image]', '[image: linked]', '[image: by reference]']) {
        assert.ok(reply.text.includes(alt), `the alt text stands in: ${alt} in ${reply.text}`);
      }
      // Time for an image request to be made, were there one.
      await page.waitForTimeout(500);
      assert.deepEqual(model.requests.filter((r) => r.path.includes('beacon')), [], 'the server saw no request');
      assert.deepEqual(page.requests.filter((u) => u.includes('beacon')), [], 'the page made no request');
    };
    await check();
    await reload(page);
    await check();
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

for (const api of ['chat_completions', 'responses']) {
  test(`a real endpoint (${api}): history across a reload, the key only in the Authorization header`, async () => {
    const { context, page } = await openDemo();
    const key = `sk-demo-${api}-4242`;
    try {
      model.state.deltaDelayMs = 5;
      model.script({ text: 'First answer from the server.' }, { text: 'Second answer <b>from</b> the server.' });
      await page.click('#settings summary');
      await page.fill('#set-base-url', model.url);
      await page.selectOption('#set-api', api);
      await page.fill('#set-model', 'test-model');
      await page.fill('#set-api-key', key);
      // The server answers from a script: no summary or title requests to use up its answers.
      await page.uncheck('#set-summaries');
      await page.click('#save-settings');
      assert.match(await page.textContent('#model-line'), /test-model/);

      await say(page, 'first question');
      assert.equal(await lastAssistant(page), 'First answer from the server.');
      await reload(page);
      await page.click('#settings summary');
      assert.equal(await page.inputValue('#set-base-url'), model.url);
      assert.equal(await page.inputValue('#set-api'), api);
      assert.equal(await page.inputValue('#set-model'), 'test-model');
      assert.equal(await page.inputValue('#set-api-key'), key, 'the key lasts as long as the tab');
      assert.equal(await page.isChecked('#set-summaries'), false);
      await say(page, 'second question');
      assert.equal(await lastAssistant(page), 'Second answer <b>from</b> the server.');

      assert.equal(model.requests.length, 2);
      const [first, second] = model.requests;
      for (const req of model.requests) {
        assert.equal(req.path, api === 'responses' ? '/v1/responses' : '/v1/chat/completions');
        assert.equal(req.headers.authorization, `Bearer ${key}`);
        assert.equal(req.body.model, 'test-model');
        assert.equal(req.body.stream, true);
        assert.doesNotMatch(req.raw, new RegExp(key));
      }
      const sent = (req) =>
        (req.body.messages ?? req.body.input)
          .filter((m) => m.role === 'user' || m.role === 'assistant')
          .map((m) => [m.role, typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('')]);
      assert.deepEqual(sent(first), [['user', 'first question']]);
      assert.deepEqual(sent(second), [
        ['user', 'first question'],
        ['assistant', 'First answer from the server.'],
        ['user', 'second question'],
      ]);

      // The key is nowhere but in this tab's sessionStorage.
      const local = await page.evaluate(() => JSON.stringify({ ...localStorage }));
      assert.doesNotMatch(local, new RegExp(key));
      assert.match(local, /test-model/, 'the other settings are in localStorage');
      const idb = await dumpIndexedDb(page);
      assert.match(idb, /second question/);
      assert.doesNotMatch(idb, new RegExp(key));
      const exported = await exportChat(page);
      assert.match(exported.text, /Second answer/);
      assert.doesNotMatch(exported.text, new RegExp(key));

      // A ModelError from the endpoint is shown in the page; the question is kept.
      model.script({ error: 401, message: 'Incorrect API key provided' });
      await say(page, 'third question');
      await page.waitForSelector('#error:not([hidden])');
      const error = await page.textContent('#error-text');
      assert.match(error, /HTTP 401/);
      assert.match(error, /Incorrect API key provided/);
      assert.doesNotMatch(error, /sends no API key/, 'this tab sent one');
      const items = await itemsOf(page, 'Guest', await currentSessionId(page));
      assert.equal(items.length, 5);
      assert.equal(itemText(items[4]), 'third question');
      // Undo takes it back, to send it again once the settings are fixed.
      assert.match(await page.textContent('#status'), /Undo takes it out of the chat and back into the input box \(above anything typed there\)/);
      await page.click('#undo');
      await idle(page);
      assert.equal(await page.inputValue('#input'), 'third question');
      assert.equal((await itemsOf(page, 'Guest', await currentSessionId(page))).length, 4);
      // Another tab has the settings, not the key: a refusal says where to give it.
      const other = await openTab(context);
      model.script({ error: 401, message: 'Missing bearer authentication in header' });
      await say(other, 'from the other tab');
      await other.waitForSelector('#error:not([hidden])');
      assert.equal(model.requests.at(-1).headers.authorization, undefined);
      assert.match(await other.textContent('#error-text'), /HTTP 401.*This tab sends no API key \(a key is kept per tab, for the endpoint it was typed for\): enter it in Model settings\./);
      assert.deepEqual(page.errors, []);
      assert.deepEqual(other.errors, []);
    } finally {
      await context.close();
    }
  });
}

/** The agent the chat header names (the one answering). */
const headerAgent = (page) => page.textContent('#chat-agent');

/** The label and text of the last answer shown. */
const lastAnswer = (page) =>
  page.$eval('#messages', (ol) => {
    const li = [...ol.querySelectorAll('.msg-assistant')].at(-1);
    return li && { who: li.querySelector('.msg-who').textContent, text: li.querySelector('.msg-text').textContent };
  });

/** The "Handed off to …" lines of the conversation. */
const handoffLines = (page) => page.$$eval('#messages .msg-handoff', (els) => els.map((e) => e.textContent.trim()));

test('a second agent: "plan a trip" hands the chat to the Trip planner (named in the header at once, its answers labelled), which still answers after a reload, until "back to the assistant" hands it back', async () => {
  const { context, page } = await openDemo();
  try {
    assert.equal(await headerAgent(page), 'Agent: Assistant');
    assert.match(await page.textContent('#empty'), /plan a trip to Lisbon/, 'the page says how to reach the second agent');
    await say(page, 'my hobby is chess');
    assert.deepEqual(await lastAnswer(page), { who: 'Assistant', text: 'Noted: your hobby is chess. Ask me "what is my hobby?" later, even after a reload. (I was given 0 earlier items.)' });

    // The handoff shows in the header while the Trip planner's answer is still streaming.
    await page.fill('#input', 'Please plan a trip to Lisbon');
    await page.press('#input', 'Enter');
    await page.waitForFunction(
      () => document.getElementById('chat-agent').textContent === 'Agent: Trip planner' && document.getElementById('app').dataset.busy === 'true',
      null,
      { polling: 10, timeout: 10000 },
    );
    await settled(page);
    assert.equal(await headerAgent(page), 'Agent: Trip planner');
    assert.deepEqual(await handoffLines(page), ['Handed off to Trip planner']);
    const plan = await lastAnswer(page);
    assert.equal(plan.who, 'Trip planner');
    assert.match(plan.text, /^Trip planner here\. A three-day plan for Lisbon: .* To go back, ask for the assistant\. \(I was given 2 earlier items\.\)$/);
    const text = await page.textContent('#messages');
    assert.doesNotMatch(text, /transfer_to_|"assistant"/, 'no raw tool call or output is shown');
    assert.deepEqual(
      (await rendered(page)).map((m) => m.role),
      ['user', 'assistant', 'user', 'handoff', 'assistant'],
      'the handoff is one line between the question and the answer',
    );

    // After a reload the chat is still with the Trip planner, which answers from the whole history.
    await reload(page);
    assert.equal(await headerAgent(page), 'Agent: Trip planner');
    assert.deepEqual(await handoffLines(page), ['Handed off to Trip planner']);
    assert.equal((await lastAnswer(page)).who, 'Trip planner');
    await say(page, 'what is my hobby?');
    assert.equal(await headerAgent(page), 'Agent: Trip planner');
    assert.deepEqual(await handoffLines(page), ['Handed off to Trip planner'], 'no new handoff: it answered from the start');
    const hobby = await lastAnswer(page);
    assert.equal(hobby.who, 'Trip planner');
    assert.match(hobby.text, /^Trip planner here\. Your hobby is chess\. To go back, ask for the assistant\./);

    // Asking for the assistant hands the chat back.
    await say(page, 'Thanks! Back to the assistant, please.');
    assert.equal(await headerAgent(page), 'Agent: Assistant');
    assert.deepEqual(await handoffLines(page), ['Handed off to Trip planner', 'Handed off to Assistant']);
    const back = await lastAnswer(page);
    assert.equal(back.who, 'Assistant');
    assert.match(back.text, /^I am the offline demo model/);
    await reload(page);
    assert.equal(await headerAgent(page), 'Agent: Assistant');
    await say(page, 'what is my hobby?');
    assert.deepEqual(await lastAnswer(page), { who: 'Assistant', text: 'Your hobby is chess. (I was given 12 earlier items.)' });
    // The earlier answers keep the names of the agents that gave them.
    assert.deepEqual(
      await page.$$eval('#messages .msg-assistant .msg-who', (els) => els.map((e) => e.textContent)),
      ['Assistant', 'Trip planner', 'Trip planner', 'Assistant', 'Assistant'],
    );

    // A chat of its own starts with the first agent.
    await page.click('#new-chat');
    await idle(page);
    assert.equal(await headerAgent(page), 'Agent: Assistant');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

for (const api of ['chat_completions', 'responses']) {
  test(`a real endpoint (${api}) is offered the handoffs too: its call hands the chat to the Trip planner, whose instructions and handoff back the next request carries, after a reload too`, async () => {
    const { context, page } = await openDemo();
    try {
      model.state.deltaDelayMs = 5;
      model.script({ calls: [{ name: 'transfer_to_Trip_planner', arguments: '{}' }] }, { text: 'Lisbon in three days.' }, { text: 'Pack light.' });
      await saveSettings(page, async () => {
        await page.fill('#set-base-url', model.url);
        await page.selectOption('#set-api', api);
        await page.fill('#set-model', 'test-model');
        await page.uncheck('#set-summaries');
      });
      await say(page, 'I would like a holiday');
      assert.equal(await headerAgent(page), 'Agent: Trip planner');
      assert.deepEqual(await handoffLines(page), ['Handed off to Trip planner']);
      assert.deepEqual(await lastAnswer(page), { who: 'Trip planner', text: 'Lisbon in three days.' });
      await reload(page);
      assert.equal(await headerAgent(page), 'Agent: Trip planner');
      await say(page, 'what should I pack?');
      assert.deepEqual(await lastAnswer(page), { who: 'Trip planner', text: 'Pack light.' });

      const toolNames = (req) => (req.body.tools ?? []).map((t) => t.function?.name ?? t.name);
      const instructions = (req) =>
        [
          req.body.instructions ?? '',
          ...(req.body.messages ?? req.body.input)
            .filter((m) => m.role === 'system' || m.role === 'developer')
            .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''))),
        ].join('\n');
      const [first, second, third] = model.requests;
      assert.equal(model.requests.length, 3);
      assert.deepEqual(toolNames(first), ['transfer_to_Trip_planner']);
      const offered = (first.body.tools ?? [])[0];
      assert.match(offered.function?.description ?? offered.description, /^Handoff to the Trip planner agent to handle the request\. Plans trips/);
      assert.doesNotMatch(instructions(first), /You are the Trip planner agent/);
      for (const req of [second, third]) {
        assert.deepEqual(toolNames(req), ['transfer_to_Assistant'], 'the Trip planner can hand back');
        assert.match(instructions(req), /You are the Trip planner agent/);
      }
      assert.deepEqual(page.errors, []);
    } finally {
      await context.close();
    }
  });
}

/** The `‹ k/n ›` switcher of user message `turn`: its position ("2/2"), or null without one. */
function switcherAt(page, turn) {
  return page.$eval(`#messages .msg[data-turn="${turn}"]`, (li) => li.querySelector('.branch-position')?.textContent ?? null);
}

const usageOf = (page, sessionId, options) =>
  lib(page, async ({ lib, dbName, sessionId, options }) => new lib.IndexedDbSession(sessionId, { userId: 'Guest', dbName }).getSessionUsage(options), {
    sessionId,
    options,
  });

test('edit a message: the edited text is answered on a new branch, the original stays a click away (‹ 1/2 ›), the branch survives a reload, and the header shows the tokens used', async () => {
  const { context, page } = await openDemo();
  try {
    assert.equal(await page.isVisible('#chat-usage'), false, 'a new chat has used no tokens');
    await say(page, 'my hobby is chess');
    await say(page, 'what is my hobby?');
    const id = await currentSessionId(page);
    const original = await rendered(page);
    assert.equal(original[3].text, 'Your hobby is chess. (I was given 2 earlier items.)');

    // The tokens used, as the library sums them (the offline model reports usage).
    const usage = await usageOf(page, id);
    assert.ok(usage.requests >= 2 && usage.totalTokens > 0, JSON.stringify(usage));
    assert.equal(await page.textContent('#chat-usage'), `${usage.totalTokens.toLocaleString('en-US')} tokens · ${usage.requests} requests`);
    assert.equal(await page.isVisible('#chat-branch'), false, 'a chat without branches names none');
    assert.equal(await page.locator('#messages .branch-switcher').count(), 0, 'no message has another version yet');
    assert.deepEqual(await page.$$eval('#messages .msg-edit', (bs) => bs.map((b) => b.getAttribute('aria-label'))), ['Edit message 1', 'Edit message 2']);

    // Edit, from the keyboard; Escape closes the box and changes nothing.
    await page.focus('#messages .msg[data-turn="1"] .msg-edit');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement.closest('.msg-editor') !== null), true, 'the edit box has the focus');
    assert.equal(await page.inputValue('#messages .msg-editor textarea'), 'my hobby is chess');
    await page.keyboard.press('Escape');
    assert.equal(await page.locator('#messages .msg-editor').count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Edit message 1', 'focus returns to Edit');
    assert.deepEqual(await rendered(page), original);

    // Edit the first message and send it: a new branch shows the edited message and its answer only.
    await page.keyboard.press('Enter');
    await page.fill('#messages .msg-editor textarea', 'my hobby is go');
    await page.press('#messages .msg-editor textarea', 'Enter');
    await settled(page);
    let shown = await rendered(page);
    assert.deepEqual(shown.map((m) => m.role), ['user', 'assistant']);
    assert.equal(shown[0].text, 'my hobby is go');
    assert.match(shown[1].text, /^Noted: your hobby is go\..*\(I was given 0 earlier items\.\)$/);
    assert.equal(await switcherAt(page, 1), '2/2');
    assert.equal(await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent), 'Branch “turn-1”');
    await say(page, 'what is my hobby?');
    assert.equal(await lastAssistant(page), 'Your hobby is go. (I was given 2 earlier items.)', "the branch's history is its own");
    assert.equal(await switcherAt(page, 2), null, 'the new question has a single version');
    const branch = await rendered(page);
    let stored = await sessionsOf(page, 'Guest');
    assert.deepEqual(stored.map((s) => [s.sessionId, s.currentBranch]), [[id, 'turn-1']]);

    // The header counts the tokens of every branch, and went up with the replies on the new one.
    const later = await usageOf(page, id);
    assert.ok(later.totalTokens > usage.totalTokens && later.requests > usage.requests, JSON.stringify(later));
    assert.equal(await page.textContent('#chat-usage'), `${later.totalTokens.toLocaleString('en-US')} tokens · ${later.requests} requests`);

    // ‹ goes back to the original: main's answer is still there.
    assert.equal(await page.isDisabled('#messages .msg[data-turn="1"] .branch-next'), true, 'the last version has no next one');
    await page.click('#messages .msg[data-turn="1"] .branch-prev');
    await idle(page);
    assert.deepEqual(await rendered(page), original);
    assert.equal(await switcherAt(page, 1), '1/2');
    assert.equal(await switcherAt(page, 2), null);
    assert.equal(await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent), 'Original conversation');
    assert.equal(await page.isDisabled('#messages .msg[data-turn="1"] .branch-prev'), true, 'the first version has no previous one');
    assert.equal(await page.evaluate(() => document.activeElement.classList.contains('branch-next')), true, 'the focus stays on the switcher');

    // › from the keyboard; the chat reopens on the branch it was on after a reload.
    await page.keyboard.press('Enter');
    await idle(page);
    assert.deepEqual(await rendered(page), branch);
    assert.equal(await switcherAt(page, 1), '2/2');
    await reload(page);
    assert.equal(await currentSessionId(page), id);
    assert.deepEqual(await rendered(page), branch, 'the branch is shown after a reload');
    assert.equal(await switcherAt(page, 1), '2/2');
    assert.equal(await page.textContent('#chat-usage'), `${later.totalTokens.toLocaleString('en-US')} tokens · ${later.requests} requests`);

    // Editing a message of the branch makes a branch of the branch: message 2 has two versions,
    // and message 1 still has the two it had.
    await page.click('#messages .msg[data-turn="2"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'say: edited twice');
    await page.click('#messages .msg-editor .edit-send');
    await settled(page);
    shown = await rendered(page);
    assert.deepEqual(shown.map((m) => m.text), [branch[0].text, branch[1].text, 'say: edited twice', 'edited twice (I was given 2 earlier items.)']);
    assert.equal(await switcherAt(page, 1), '2/2');
    assert.equal(await switcherAt(page, 2), '2/2');
    await page.click('#messages .msg[data-turn="2"] .branch-prev');
    await idle(page);
    assert.deepEqual(await rendered(page), branch);
    assert.equal(await switcherAt(page, 2), '1/2');
    await page.click('#messages .msg[data-turn="1"] .branch-prev');
    await idle(page);
    assert.deepEqual(await rendered(page), original, 'main is untouched by the edits');
    assert.equal(await switcherAt(page, 1), '1/2');
    assert.equal(await switcherAt(page, 2), null, "main's second message was never edited");

    // Every branch is in the library, where it was made from.
    const branches = await lib(page, async ({ lib, dbName, id }) => new lib.IndexedDbSession(id, { userId: 'Guest', dbName }).listBranches(), { id });
    assert.deepEqual(
      branches.map((b) => [b.branchId, b.parent, b.fromTurn]),
      [
        ['main', null, null],
        ['turn-1', 'main', 1],
        ['turn-2', 'turn-1', 2],
      ],
    );
    stored = await sessionsOf(page, 'Guest');
    assert.equal(stored[0].currentBranch, 'main');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a version emptied by Undo or Clear stays one choice among the others: the header lists every version, and the chat keeps its title', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await settled(page);
    const title = await page.textContent('#chat-title');
    const original = await rendered(page);
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my hobby is go');
    await page.click('#messages .msg-editor .edit-send');
    await settled(page);
    const versions = () => page.$$eval('#chat-branch option', (os) => os.map((o) => [o.value, o.textContent, o.selected]));
    assert.deepEqual(await versions(), [
      ['main', 'Original conversation', false],
      ['turn-1', 'Branch “turn-1”', true],
    ]);

    // Undo the branch's only exchange: it shows nothing, no message to carry a switcher, and the
    // header still offers the original; the chat keeps its title.
    await page.click('#undo');
    await idle(page);
    assert.deepEqual(await rendered(page), []);
    assert.equal(await page.inputValue('#input'), 'my hobby is go', 'the question is back in the box');
    assert.match(await page.textContent('#status'), /the question is back in the input box/);
    assert.equal(await page.textContent('#chat-title'), title, 'the original version still names the chat');
    assert.deepEqual((await versions()).map(([id, , selected]) => [id, selected]), [['main', false], ['turn-1', true]]);
    await page.selectOption('#chat-branch', 'main');
    await idle(page);
    assert.deepEqual(await rendered(page), original, 'the original is one choice away');

    // Undo with text in the box: the question goes back above it, neither lost.
    await page.fill('#input', 'half a thought');
    await page.click('#undo');
    await idle(page);
    assert.equal(await page.inputValue('#input'), 'my hobby is chess\n\nhalf a thought');
    assert.match(await page.textContent('#status'), /the question is back in the input box, above your text/);

    // Clear asks first when there are other versions, and clears only the one shown.
    await page.fill('#input', '');
    await say(page, 'my hobby is chess');
    await settled(page);
    let dialog = answerDialog(page, false);
    await page.click('#clear');
    assert.match((await dialog).message, /Clear this version of the chat\? Its other versions are kept\./);
    await idle(page);
    assert.equal((await rendered(page)).length, 2, 'dismissed: nothing cleared');
    dialog = answerDialog(page, true);
    await page.click('#clear');
    await dialog;
    await idle(page);
    assert.deepEqual(await rendered(page), []);
    assert.equal(await page.textContent('#chat-title'), title);
    assert.equal(await page.isVisible('#chat-branch'), true, 'the other version is still offered');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** Has `page` hold chat `id`'s lock, as a reply written there in that tab does, until
 * `window.releaseChat()` there. */
async function holdChat(page, id) {
  await page.evaluate(async ({ id }) => {
    const { sessionLockName } = await import('./lib.js');
    await new Promise((held) => {
      navigator.locks.request(sessionLockName('agent-sessions-demo', id), () => {
        held();
        return new Promise((release) => (window.releaseChat = release));
      });
    });
  }, { id });
}

/** Waits until `page` says its reply waits for the one another tab is writing. */
function waitingBehindOtherTab(page) {
  return page.waitForFunction(() => /Waiting for the reply being written in another tab/.test(document.getElementById('status').textContent), null, { timeout: 10000 });
}

/** Says a first message in a new chat, has a second tab hold the chat's lock (as a reply
 * written there would), then sends `text`, which waits behind that tab. */
async function sendBehindOtherTab(page, context, text) {
  await say(page, 'my hobby is chess');
  await settled(page);
  const id = await currentSessionId(page);
  const other = await openTab(context);
  await holdChat(other, id);
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
  await waitingBehindOtherTab(page);
  return { id, other };
}

test('Undo and Clear while another tab writes a reply in the chat change nothing, and say why; once it is done, they do', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await settled(page);
    const id = await currentSessionId(page);
    const other = await openTab(context);
    await holdChat(other, id);
    await page.click('#undo');
    await idle(page);
    assert.match(await page.textContent('#status'), /^Nothing was undone: the chat is in use in another tab \(a reply being written, most likely\)/);
    const dialog = answerDialog(page, true);
    await page.click('#clear');
    await dialog;
    await idle(page);
    assert.match(await page.textContent('#status'), /^The chat was kept: the chat is in use in another tab/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 2, 'nothing removed');
    assert.deepEqual((await rendered(page)).map((m) => m.role), ['user', 'assistant']);
    await other.evaluate(() => window.releaseChat());
    await page.click('#undo');
    await idle(page);
    assert.deepEqual(await itemsOf(page, 'Guest', id), []);
    assert.equal(await page.inputValue('#input'), 'my hobby is chess');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('Stop while another tab holds the chat: nothing was saved, and the message is back in the input box, before what was typed there meanwhile', async () => {
  const { context, page } = await openDemo();
  try {
    const { id } = await sendBehindOtherTab(page, context, 'tell me a story');
    assert.equal(await page.isEnabled('#stop'), true);
    // The box stays usable while the reply waits: a draft typed there is kept too.
    await page.fill('#input', 'a draft typed meanwhile');
    await page.click('#stop');
    await idle(page);
    assert.equal(await page.inputValue('#input'), 'tell me a story\n\na draft typed meanwhile');
    assert.match(await page.textContent('#status'), /Stopped before your message was saved/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 2, 'nothing was saved');
    assert.equal(await page.isDisabled('#stop'), true, 'nothing left to stop');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a message sent while another tab writes a reply that hands the chat to the Trip planner is answered by the Trip planner, and labelled so', async () => {
  const { context, page } = await openDemo();
  try {
    // Another tab writes a reply in the chat (it holds the chat's lock), which hands it over.
    const { id, other } = await sendBehindOtherTab(page, context, 'what is my hobby?');
    await lib(other, async ({ lib, dbName, id }) => {
      const call = { type: 'function_call', callId: 'h1', name: 'transfer_to_trip_planner', arguments: '{}', status: 'completed' };
      const done = { type: 'function_call_result', callId: 'h1', name: 'transfer_to_trip_planner', status: 'completed', output: { type: 'text', text: '{"assistant":"Trip planner"}' } };
      await new lib.IndexedDbSession(id, { userId: 'Guest', dbName }).addItems([{ role: 'user', content: 'Please plan a trip to Lisbon' }, call, done, { role: 'assistant', content: 'Trip planner here.' }]);
      window.releaseChat();
    }, { id });
    await settled(page);
    const answer = await lastAnswer(page);
    assert.equal(answer.who, 'Trip planner');
    assert.match(answer.text, /^Trip planner here\./);
    assert.equal(await headerAgent(page), 'Agent: Trip planner');
    assert.deepEqual([...page.errors, ...other.errors], []);
  } finally {
    await context.close();
  }
});

test('the open chat’s row counts the items of the version on screen, also after another tab moved the chat to another version', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await say(page, 'tell me a story');
    await settled(page);
    const id = await currentSessionId(page);
    await page.evaluate((id) => (document.querySelector(`.session[data-session-id="${id}"]`).dataset.drawnBefore = 'yes'), id);
    // Another tab edits the second message: the chat is recorded as on that version, of 3 items.
    const other = await openTab(context);
    await lib(other, async ({ lib, dbName, id }) => {
      const s = new lib.IndexedDbSession(id, { userId: 'Guest', dbName });
      await s.createBranchFromTurn(2);
      await s.addItems([{ role: 'user', content: 'tell me a poem' }]);
    }, { id });
    // The sidebar drawn again from the list that says so.
    await until(page, (id) => document.querySelector(`.session[data-session-id="${id}"]`)?.dataset.drawnBefore === undefined, id);
    // This tab still shows the first version, whose 4 items its row counts.
    assert.equal((await rendered(page)).length, 4);
    assert.match(await page.textContent(`.session[data-session-id="${id}"] .session-meta`), /^4 items · /);
    assert.deepEqual([...page.errors, ...other.errors], []);
  } finally {
    await context.close();
  }
});

test('Stop on an edit sent while another tab holds the chat: the chat stays on its version, no branch is left behind, and the edit is open again with its text', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    const id = await currentSessionId(page);
    const original = await rendered(page);
    const other = await openTab(context);
    await holdChat(other, id);
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my hobby is go');
    await page.press('#messages .msg-editor textarea', 'Enter');
    await waitingBehindOtherTab(page);
    await page.click('#stop');
    await idle(page);
    assert.deepEqual(await rendered(page), original, 'the version the chat was on');
    assert.equal(await page.inputValue('#messages .msg-editor textarea'), 'my hobby is go', 'the edit is open again');
    assert.equal(await page.inputValue('#input'), '', 'not moved to the message box');
    assert.equal(await page.textContent('#status'), 'Your edit was not saved: it is open again, on the version the chat was on.');
    const branches = await lib(page, async ({ lib, dbName, id }) => (await new lib.IndexedDbSession(id, { userId: 'Guest', dbName }).listBranches()).map((b) => b.branchId), { id });
    assert.deepEqual(branches, ['main']);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('an edit box open while a reply streams: Escape there closes the box and leaves the reply running, and typing there keeps the keyboard when the reply ends', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#input', 'tell me a story');
    await page.press('#input', 'Enter');
    await page.waitForSelector('#messages .msg.streaming');
    await page.focus('#messages .msg-editor textarea');
    await page.keyboard.type(' and go');
    await idle(page);
    assert.equal(await page.evaluate(() => document.activeElement.closest('.msg-editor') !== null), true, 'the edit box kept the keyboard');
    assert.match(await lastAssistant(page), /The end\./);
    await page.fill('#input', 'tell me a story');
    await page.press('#input', 'Enter');
    await page.waitForSelector('#messages .msg.streaming');
    await page.focus('#messages .msg-editor textarea');
    await page.keyboard.press('Escape');
    assert.equal(await page.locator('#messages .msg-editor').count(), 0, 'the box closed');
    await idle(page);
    assert.match(await lastAssistant(page), /The end\./, 'the reply was not stopped');
    assert.doesNotMatch(await page.textContent('#status'), /Stopped/);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** Dispatches on the element `selector` names the keydown of Escape an input method sends while
 * it composes (the Escape that closes its candidates), bubbling as a real one does. */
const composingEscape = (page, selector) =>
  page.$eval(selector, (el) => el.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', isComposing: true, bubbles: true, cancelable: true })));

test('an Escape an input method is composing with (closing its candidates) stops no reply, closes no edit box and clears no search; a plain Escape still does', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my hobby is go');
    await page.fill('#search-input', 'hobby');
    await page.fill('#input', 'tell me a story');
    await page.press('#input', 'Enter');
    await page.waitForSelector('#messages .msg.streaming');
    await page.fill('#input', '次の');
    await composingEscape(page, '#messages .msg-editor textarea');
    await composingEscape(page, '#search-input');
    await composingEscape(page, '#input');
    assert.equal(await page.locator('#messages .msg-editor').count(), 1, 'the edit box stays open');
    assert.equal(await page.inputValue('#messages .msg-editor textarea'), 'my hobby is go', 'with what was typed in it');
    assert.equal(await page.inputValue('#search-input'), 'hobby', 'the search keeps its words');
    assert.equal(await page.inputValue('#input'), '次の');
    await idle(page);
    assert.match(await lastAssistant(page), /The end\./, 'the reply was not stopped');
    assert.doesNotMatch(await page.textContent('#status'), /Stopped/);
    // A plain Escape still closes the box.
    await page.press('#messages .msg-editor textarea', 'Escape');
    assert.equal(await page.locator('#messages .msg-editor').count(), 0);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** Has tab `other` add the user message `text` to the Guest's chat `id`, as another tab of the
 * page (or one that knows nothing of a lock) writes. */
const writeFromTab = (other, id, text) =>
  lib(other, async ({ lib, dbName, id, text }) => new lib.IndexedDbSession(id, { userId: 'Guest', dbName }).addItems([{ role: 'user', content: text }]), { id, text });

/** Clicks Delete chat in `page` and says yes, after another tab (returned as `other`) has
 * written `text` to the open chat (its `id`) while the confirmation was open. */
async function deleteWhileOtherTabWrites(page, context, text) {
  const id = await currentSessionId(page);
  const other = await openTab(context);
  const deleting = answerDialog(page, true, () => writeFromTab(other, id, text));
  await page.click('#delete-chat');
  await deleting;
  await idle(page);
  return { id, other };
}

test('Delete chat keeps a chat another tab wrote to while the confirmation was open, and says so; the settings’ number of turns chosen in another tab shows here', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'the door code is 4411');
    const { id, other } = await deleteWhileOtherTabWrites(page, context, 'and the alarm code is 9902');
    assert.match(await page.textContent('#status'), /The chat was kept: another tab wrote to it/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 3, 'nothing was deleted');
    assert.equal(await currentSessionId(page), id, 'the chat is still open');
    assert.match((await rendered(page)).at(-1).text, /alarm code is 9902/, 'showing what the other tab wrote');
    // Asked again, now that it shows everything: deleted.
    const again = answerDialog(page, true);
    await page.click('#delete-chat');
    await again;
    await idle(page);
    assert.match(await page.textContent('#status'), /Chat deleted/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 0);

    // History "All" here; the other tab chooses the newest 5 turns.
    assert.equal(await page.inputValue('#set-history'), 'all');
    await other.click('#settings summary');
    await other.selectOption('#set-history', 'turns');
    await other.fill('#set-history-turns', '5');
    await other.click('#save-settings');
    await until(page, () => document.getElementById('set-history').value === 'turns');
    assert.equal(await page.inputValue('#set-history-turns'), '5');
    assert.deepEqual([...page.errors, ...other.errors], []);
  } finally {
    await context.close();
  }
});

test('Clear chat keeps a chat another tab wrote to while the confirmation was open, and does not make again one another tab deleted then', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'the door code is 4411');
    const id = await currentSessionId(page);
    const other = await openTab(context);
    const clearing = answerDialog(page, true, () => writeFromTab(other, id, 'and the alarm code is 9902'));
    await page.click('#clear');
    await clearing;
    await idle(page);
    assert.match(await page.textContent('#status'), /The chat was kept: another tab wrote to it/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 3, 'nothing was cleared');
    assert.match((await rendered(page)).at(-1).text, /alarm code is 9902/, 'showing what the other tab wrote');

    // The other tab deletes it while this one asks: what was typed in the box stays there.
    await page.fill('#input', 'typed before clearing');
    const deleting = answerDialog(page, true, () => lib(other, async ({ lib, dbName, id }) => lib.deleteSession(id, { dbName }), { id }));
    await page.click('#clear');
    await deleting;
    await idle(page);
    assert.match(await page.textContent('#status'), /deleted in another tab/);
    assert.equal(await page.inputValue('#input'), 'typed before clearing');
    const listed = await lib(page, async ({ lib, dbName }) => (await lib.listSessions({ dbName, userId: 'Guest' })).map((s) => s.sessionId), {});
    assert.ok(!listed.includes(id), 'the deleted chat was not made again, empty');
    assert.notEqual(await currentSessionId(page), id);
    assert.deepEqual([...page.errors, ...other.errors], []);
  } finally {
    await context.close();
  }
});

test('Delete chat keeps a locked chat another tab wrote to while the confirmation was open, as it keeps any other', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'the door code is 4411');
    await lockChats(page, 'a passphrase of the guest');
    const { id } = await deleteWhileOtherTabWrites(page, context, 'written meanwhile');
    assert.match(await page.textContent('#status'), /The chat was kept: another tab wrote to it/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 3, 'nothing was deleted');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('items of a locked chat that do not decrypt are said once: dismissed, the error stays away at later re-reads, and comes back when more are left out', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'the door code is 4411');
    await lockChats(page, 'a passphrase of the guest');
    const id = await currentSessionId(page);
    const other = await openTab(context);
    // Another tab that knows nothing of the lock writes in clear: the locked view leaves it out.
    const writeInClear = (text) => writeFromTab(other, id, text);
    const errorSays = (text) => until(page, (text) => !document.getElementById('error').hidden && document.getElementById('error-text').textContent.startsWith(text), text);
    await writeInClear('written in clear');
    await errorSays('1 item of this chat could not be decrypted');
    await page.click('#error-close');
    assert.equal(await page.isVisible('#error'), false);
    // A reply re-reads the chat: the same item left out is not said again.
    await say(page, 'and the gate code is 7');
    assert.ok((await rendered(page)).some((m) => m.text === 'and the gate code is 7'));
    assert.equal(await page.isVisible('#error'), false, 'the dismissed error stays away');
    await writeInClear('written in clear again');
    await errorSays('2 items of this chat could not be decrypted');
    assert.deepEqual([...page.errors, ...other.errors], []);
  } finally {
    await context.close();
  }
});

test('a message’s Edit button that has the keyboard keeps it when another tab’s message re-renders the chat, with a message being edited too', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await say(page, 'my colour is teal');
    const id = await currentSessionId(page);
    const other = await openTab(context);
    const count = async () => (await rendered(page)).length;
    const writeThere = async (text) => {
      const before = await count();
      await writeFromTab(other, id, text);
      await until(page, (n) => document.querySelectorAll('#messages .msg').length > n, before);
      await page.waitForFunction(() => document.getElementById('app').dataset.sync !== 'true');
    };
    const focused = () => page.evaluate(() => {
      const at = document.activeElement;
      return at.closest('.msg') ? `${at.closest('.msg').dataset.turn}:${at.className}` : at.id || at.tagName;
    });
    await page.focus('#messages .msg[data-turn="1"] .msg-edit');
    await writeThere('written in another tab');
    assert.equal(await focused(), '1:small msg-edit');
    // Message 2 is being edited while the keyboard is on message 1's Edit: both are kept.
    await page.click('#messages .msg[data-turn="2"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my colour is red');
    await page.focus('#messages .msg[data-turn="1"] .msg-edit');
    await writeThere('written there again');
    assert.equal(await focused(), '1:small msg-edit');
    assert.equal(await page.inputValue('#messages .msg-editor textarea'), 'my colour is red');
    assert.deepEqual([...page.errors, ...other.errors], []);
  } finally {
    await context.close();
  }
});

test('Delete chat keeps a chat another tab’s run is answering in (its save would make the chat again), and says so', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'remember the blue door');
    const id = await currentSessionId(page);
    const other = await openTab(context);
    // The other tab's run holds the chat, as the runner does while it answers.
    const name = `agent-sessions:${JSON.stringify([DB_NAME, id])}`;
    await other.evaluate(({ name }) => {
      navigator.locks.request(name, () => new Promise((done) => (window.runEnds = done)));
    }, { name });
    const deleting = answerDialog(page, true);
    await page.click('#delete-chat');
    await deleting;
    await idle(page);
    assert.match(await page.textContent('#status'), /The chat was kept: another tab is writing in it/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 2, 'nothing was deleted');
    assert.equal(await currentSessionId(page), id, 'the chat is open again');
    // Once the run ended: deleted.
    await other.evaluate(async ({ name }) => {
      window.runEnds();
      await navigator.locks.request(name, () => {});
    }, { name });
    const again = answerDialog(page, true);
    await page.click('#delete-chat');
    await again;
    await idle(page);
    assert.match(await page.textContent('#status'), /Chat deleted/);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 0);
    assert.deepEqual([...page.errors, ...other.errors], []);
  } finally {
    await context.close();
  }
});

test('a message that could not be saved (storage full) is back in the input box, with the reason shown', async () => {
  // The browser refuses the write as it does when the site's quota is used up. (Chromium's quota
  // override for an origin does not reach this page's storage, whose estimate keeps the default
  // quota: the refusal is made in the page, by IndexedDB's own put, for this message's rows.)
  const { context, page } = await openDemo({}, {
    init: () => {
      const put = IDBObjectStore.prototype.put;
      IDBObjectStore.prototype.put = function (value, ...rest) {
        if (value?.item?.content === 'a message too big for what is left') throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return put.call(this, value, ...rest);
      };
    },
  });
  try {
    await say(page, 'my hobby is chess');
    await settled(page);
    const id = await currentSessionId(page);
    await page.fill('#input', 'a message too big for what is left');
    await page.press('#input', 'Enter');
    await idle(page);
    assert.equal(await page.inputValue('#input'), 'a message too big for what is left', 'the message is not lost');
    assert.match(await page.textContent('#status'), /Your message was not saved; it is back in the input box/);
    // What to do first, with the browser's figures; the library's words after.
    assert.match(await page.textContent('#error-text'), /^The browser’s storage for this site is full \([\d.]+ MB of [\d.]+ MB used\): what failed was not saved\. Back up and delete old chats to make room\. \(SessionError STORAGE_FULL: /);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 2, 'nothing was saved');
  } finally {
    await context.close();
  }
});

test('an answer that could not be saved (storage full) after its question was: the page says the question is kept, and not that nothing was saved', async () => {
  const { context, page } = await openDemo({}, {
    init: () => {
      const put = IDBObjectStore.prototype.put;
      IDBObjectStore.prototype.put = function (value, ...rest) {
        if (window.answersFail && value?.item?.role === 'assistant') throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return put.call(this, value, ...rest);
      };
    },
  });
  try {
    await say(page, 'my hobby is chess');
    await settled(page);
    const id = await currentSessionId(page);
    await page.evaluate(() => (window.answersFail = true));
    await page.fill('#input', 'and my other hobby?');
    await page.press('#input', 'Enter');
    await idle(page);
    assert.match(await page.textContent('#status'), /Your message is saved without an answer/);
    const error = await page.textContent('#error-text');
    assert.match(error, /^The browser’s storage for this site is full \([\d.]+ MB of [\d.]+ MB used\): what failed was not saved\./);
    assert.doesNotMatch(error, /nothing of this was saved/);
    const items = await itemsOf(page, 'Guest', id);
    assert.equal(items.length, 3, 'the question is kept, the answer is not');
    assert.equal(items.at(-1).content, 'and my other hobby?');
  } finally {
    await context.close();
  }
});

/** A page of the site (not the demo) that opens the demo's database itself at `version`, as
 * other code of the site would: with `hold`, it keeps the connection open as `window.held`
 * (and does not close it when asked to), else it closes it at once. */
async function openDemoDb(context, version, { hold = false } = {}) {
  const page = await context.newPage();
  await page.goto(`${url}/lib.js`);
  await page.evaluate(
    ({ version, hold }) =>
      new Promise((ok, fail) => {
        const request = indexedDB.open('agent-sessions-demo', version);
        request.onsuccess = () => {
          if (hold) window.held = request.result;
          else request.result.close();
          ok();
        };
        request.onerror = () => fail(request.error);
      }),
    { version, hold },
  );
  return page;
}

test('a database another connection keeps from upgrading: the page says why, and works once that connection closes', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    // Another page of the site holds the demo's database open at an older version and does not
    // close it when asked to.
    const holder = await openDemoDb(context, 1, { hold: true });
    const page = await openTab(context);
    assert.match(await page.textContent('#error-text'), /^Another tab of this site runs an older version of this page .* close it, then try again\. \(SessionError DB_BLOCKED: .*close the other tabs of this site, then try again\)$/);
    // No chat is open: nothing to rename, by the button or by a double-click on the header.
    assert.equal(await page.isDisabled('#rename'), true);
    await page.dblclick('#chat-title');
    assert.equal(await page.isHidden('#rename-form'), true, 'no rename box with no chat open');
    // Once it closes, the upgrade the page asked for runs (an open after it waits for it).
    const version = await holder.evaluate(() => {
      window.held.close();
      return new Promise((ok) => {
        const request = indexedDB.open('agent-sessions-demo');
        request.onsuccess = () => {
          ok(request.result.version);
          request.result.close();
        };
      });
    });
    assert.equal(version, 12);
    // Try again opens the chat now; a message is saved.
    assert.equal(await page.textContent('#error-action'), 'Try again');
    await page.click('#error-action');
    await idle(page);
    assert.equal(await page.isVisible('#error-action'), false);
    assert.ok(await currentSessionId(page), 'a chat is open');
    await say(page, 'my hobby is chess');
    assert.deepEqual((await rendered(page)).map((m) => m.role), ['user', 'assistant']);
    const id = await currentSessionId(page);
    assert.equal((await itemsOf(page, 'Guest', id)).length, 2);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a change heard from another tab that cannot be read (a newer page upgraded the storage) is shown as an error with Reload, not left in the console', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await settled(page);
    // A newer version of the site, in another tab, upgrades the database and writes to it.
    const newer = await openDemoDb(context, 99);
    await newer.evaluate(() => {
      const channel = new BroadcastChannel('agent-sessions:agent-sessions-demo');
      channel.postMessage([{ type: 'add', sessionId: 'from-the-newer-page', userId: 'Guest', branch: 'main', dbName: 'agent-sessions-demo', at: Date.now(), count: 1 }]);
      channel.close();
    });
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error-text'), /DB_VERSION/);
    assert.equal(await page.textContent('#error-action'), 'Reload');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('the keyboard stays where it was: on the chat picked in the list, and on the version chosen', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    const first = await currentSessionId(page);
    await page.click('#new-chat');
    await idle(page);
    await say(page, 'my hobby is go');
    // Back to the first chat, from the keyboard.
    await page.focus(`#session-list button[data-session-id="${first}"]`);
    await page.keyboard.press('Enter');
    await idle(page);
    await page.waitForFunction((id) => document.activeElement?.dataset?.sessionId === id, first, { timeout: 5000 });
    assert.equal(await currentSessionId(page), first);
    // An edit makes a second version; choosing one keeps the keyboard on the choice.
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my hobby is chess boxing');
    await page.click('#messages .msg-editor .edit-send');
    await settled(page);
    await page.focus('#chat-branch');
    await page.selectOption('#chat-branch', 'main');
    await idle(page);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'chat-branch');
    assert.equal(await page.inputValue('#chat-branch'), 'main');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a database a newer version of the page upgraded: the page says to reload, and offers it', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    await openDemoDb(context, 99);
    const page = await openTab(context);
    assert.match(await page.textContent('#error-text'), /^Another tab runs a newer version of this page, which upgraded the chats’ storage: reload this page to go on\. \(SessionError DB_VERSION: /);
    assert.equal(await page.textContent('#error-action'), 'Reload');
    const reloaded = page.waitForEvent('load');
    await page.click('#error-action');
    await reloaded;
    await ready(page);
    assert.match(await page.textContent('#error-text'), /DB_VERSION/, 'the page was loaded again (and the database is still newer)');
  } finally {
    await context.close();
  }
});

test('keyboard, labels and layout at desktop and phone widths (screenshots in tests/artifacts/)', async () => {
  await mkdir(artifacts, { recursive: true });
  for (const [name, viewport] of [
    ['desktop', { width: 1280, height: 800 }],
    ['phone', { width: 390, height: 844 }],
  ]) {
    const { context, page } = await openDemo({ viewport });
    try {
      // Shift+Enter makes a new line; Enter sends.
      await page.focus('#input');
      await page.keyboard.type('my favourite colour is green');
      await page.keyboard.press('Shift+Enter');
      await page.keyboard.type('thanks');
      assert.equal(await page.inputValue('#input'), 'my favourite colour is green\nthanks');
      assert.deepEqual(await rendered(page), []);
      await page.keyboard.press('Enter');
      // The first reply's summary written before the second message (this test is about the
      // keyboard and the layout, not about a message sent while a summary is being written).
      await settled(page);
      await page.focus('#input');
      await page.keyboard.type('what is my favourite colour?');
      await page.keyboard.press('Enter');
      await settled(page);
      assert.match(await lastAssistant(page), /^Your favourite colour is green\./);
      assert.match(await page.textContent('#chat-summary'), /favourite colour is green/);

      // Every control has a name; focus is visible.
      const unlabelled = await page.evaluate(() =>
        [...document.querySelectorAll('button, input, select, textarea')]
          .filter((c) => {
            if (c.tagName === 'BUTTON') return !(c.textContent.trim() || c.getAttribute('aria-label'));
            return !(c.labels?.length || c.getAttribute('aria-label'));
          })
          .map((c) => c.id || c.outerHTML),
      );
      assert.deepEqual(unlabelled, []);
      await page.focus('#input');
      await page.keyboard.press('Shift+Tab');
      const outline = await page.evaluate(() => {
        const s = getComputedStyle(document.activeElement);
        return { tag: document.activeElement.tagName, style: s.outlineStyle, width: parseFloat(s.outlineWidth) };
      });
      assert.notEqual(outline.style, 'none', JSON.stringify(outline));
      assert.ok(outline.width >= 2, JSON.stringify(outline));

      // Nothing is wider than the screen.
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal scrolling');
      if (name === 'phone') {
        assert.equal(await page.isVisible('#session-list'), false, 'the chat list is collapsed on a phone');
        await page.click('#toggle-sidebar');
        assert.equal(await page.isVisible('#session-list'), true);
        assert.equal(await page.getAttribute('#toggle-sidebar', 'aria-expanded'), 'true');
        // The keyboard is in the list it opened (above the button), on the open chat.
        assert.equal(await page.evaluate(() => document.activeElement.closest('#sidebar') !== null && document.activeElement.getAttribute('aria-current')), 'true');
        await page.screenshot({ path: join(artifacts, 'demo-phone-chats.png') });
        await page.click('#toggle-sidebar');
      } else {
        assert.equal(await page.isVisible('#session-list'), true);
        assert.equal(await page.isVisible('#toggle-sidebar'), false);
      }
      await page.evaluate(() => document.activeElement?.blur());
      await page.screenshot({ path: join(artifacts, `demo-${name}.png`) });

      // The rename box in the title's place.
      await page.click('#rename');
      assert.equal(await page.isVisible('#rename-input'), true);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal scrolling');
      await page.screenshot({ path: join(artifacts, `demo-${name}-rename.png`) });
      await page.keyboard.press('Escape');
      assert.equal(await page.isVisible('#chat-title'), true);
      assert.deepEqual(page.errors, []);
    } finally {
      await context.close();
    }
  }
});

/** Waits, in `page`, until `fn(arg)` is true: for what another tab did to show here. */
async function until(page, fn, arg) {
  try {
    await page.waitForFunction(fn, arg, { timeout: 30000 });
  } catch (e) {
    if (page.errors.length) e.message += `; page errors: ${page.errors.join('; ')}`;
    throw e;
  }
}

/** Waits until no action, reply or re-read for another tab's change is in progress. */
async function synced(page) {
  await until(page, () => {
    const app = document.getElementById('app');
    return app.dataset.busy === 'false' && app.dataset.sync === 'false';
  });
}

/** Waits until the sidebar of `page` lists exactly the chats `ids`, in that order. */
async function untilSidebar(page, ids) {
  await until(page, (ids) => JSON.stringify([...document.querySelectorAll('#session-list .session')].map((b) => b.dataset.sessionId)) === JSON.stringify(ids), ids);
  await synced(page);
}

test('users added and settings saved in one tab show in the other (a field being typed in there keeps what was typed), and all users are kept; Delete waits for a saved chat; a message sent to an endpoint without a model name stays in the box, nothing saved', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await openTab(context);
    const addUser = async (page, name) => {
      await page.fill('#new-user-name', name);
      await page.press('#new-user-name', 'Enter');
      await idle(page);
    };
    const users = (page) => page.$$eval('#user-select option', (os) => os.map((o) => o.value).sort());
    await addUser(a, 'Alice');
    await until(b, () => [...document.querySelectorAll('#user-select option')].some((o) => o.value === 'Alice'));
    // B writes the list with its own user: Alice, added in A, stays.
    await addUser(b, 'Bob');
    await reload(a);
    assert.deepEqual(await users(a), ['Alice', 'Bob', 'Guest']);
    assert.deepEqual(await users(b), ['Alice', 'Bob', 'Guest']);

    assert.equal(await a.isDisabled('#delete-chat'), true, 'a chat not saved yet has nothing to delete');
    await say(a, 'hello');
    assert.equal(await a.isDisabled('#delete-chat'), false);

    await a.click('#settings summary');
    await a.fill('#set-base-url', model.url);
    await a.fill('#set-model', '');
    await a.click('#save-settings');
    assert.match(await a.textContent('#status'), /Set a model name/);
    await a.fill('#input', 'a question worth keeping');
    await a.press('#input', 'Enter');
    await idle(a);
    assert.equal(await a.inputValue('#input'), 'a question worth keeping', 'the message is still there to send again');
    assert.match(await a.textContent('#error-text'), /Set a model name/);
    assert.equal(await a.$$eval('#messages .msg', (m) => m.length), 2, 'nothing more was saved');
    assert.equal(model.requests.length, 0);
    assert.equal(await a.textContent('#error-text'), 'Set a model name in the model settings (for example gpt-4.1-mini or llama3.2).', 'shown as it is said');
    // So does an edit of a message: its box stays open with the edited text, and no branch is made.
    await a.click('#messages .msg[data-turn="1"] .msg-edit');
    await a.fill('#messages .msg-editor textarea', 'hello, edited');
    await a.click('#messages .msg-editor .edit-send');
    await idle(a);
    assert.equal(await a.inputValue('#messages .msg[data-turn="1"] .msg-editor textarea'), 'hello, edited', 'the edit is still there to send again');
    assert.match(await a.textContent('#error-text'), /Set a model name/);
    assert.equal(await a.isVisible('#chat-branch'), false, 'no branch was made');
    await a.press('#messages .msg-editor textarea', 'Escape');

    // B has a key for this endpoint.
    await saveSettings(b, () => b.fill('#set-api-key', 'sk-for-the-first-endpoint'));
    assert.equal(await b.evaluate(() => sessionStorage.getItem('agent-sessions-demo.apiKey')), 'sk-for-the-first-endpoint');
    // B starts changing its model name, and has not saved it when A's settings arrive.
    await b.fill('#set-model', 'typed in b');

    // An endpoint nothing answers at: the error says what to check.
    await a.fill('#set-base-url', 'http://127.0.0.1:9/v1');
    await a.fill('#set-model', 'some-model');
    await a.click('#save-settings');
    // The other tab takes the settings saved here; the key it had for the endpoint before is
    // not sent to this one.
    await until(b, () => /^Model: some-model via .* at http:\/\/127\.0\.0\.1:9\/v1/.test(document.getElementById('model-line').textContent));
    assert.equal(await b.inputValue('#set-api-key'), '');
    assert.equal(await b.inputValue('#set-model'), 'typed in b', 'a field being typed in keeps what was typed');
    assert.equal(await b.inputValue('#set-base-url'), 'http://127.0.0.1:9/v1', 'the others follow');
    assert.equal(await b.evaluate(() => sessionStorage.getItem('agent-sessions-demo.apiKey')), null);
    assert.match(await b.textContent('#status'), /forgot its API key/);
    // The same in the tab itself: a key typed for one endpoint is not kept for another chosen
    // there, unless a key is typed with it.
    await saveSettings(b, () => b.fill('#set-api-key', 'sk-for-port-9'));
    await saveSettings(b, () => b.fill('#set-base-url', 'http://127.0.0.1:8/v1'));
    assert.equal(await b.inputValue('#set-api-key'), '');
    assert.equal(await b.evaluate(() => sessionStorage.getItem('agent-sessions-demo.apiKey')), null);
    assert.match(await b.textContent('#status'), /API key .*was for http:\/\/127\.0\.0\.1:9\/v1/);
    await saveSettings(b, async () => {
      await b.fill('#set-base-url', 'http://127.0.0.1:9/v1');
      await b.fill('#set-api-key', 'sk-typed-with-it');
    });
    assert.equal(await b.evaluate(() => sessionStorage.getItem('agent-sessions-demo.apiKey')), 'sk-typed-with-it');
    await until(a, () => /at http:\/\/127\.0\.0\.1:9\/v1/.test(document.getElementById('model-line').textContent));
    await a.press('#input', 'Enter');
    await idle(a);
    assert.match(await a.textContent('#error-text'), /^The model call failed: .*Check the endpoint’s URL, that it is running, and that it lets this page call it \(CORS\)\.$/);
    // "Use offline model" sends no key and keeps it for the endpoint it was typed for: chosen
    // again, that endpoint has it; another one does not.
    await b.click('#reset-settings');
    assert.equal(await b.textContent('#status'), 'Using the offline model.');
    assert.equal(await b.evaluate(() => sessionStorage.getItem('agent-sessions-demo.apiKey')), 'sk-typed-with-it');
    await saveSettings(b, () => b.fill('#set-base-url', 'http://127.0.0.1:9/v1'));
    assert.match(await b.textContent('#status'), /^Using .* at http:\/\/127\.0\.0\.1:9\/v1\.$/);
    assert.equal(await b.inputValue('#set-api-key'), 'sk-typed-with-it');
    await b.click('#reset-settings');
    await saveSettings(b, () => b.fill('#set-base-url', 'http://127.0.0.1:8/v1'));
    assert.match(await b.textContent('#status'), /The API key was for http:\/\/127\.0\.0\.1:9\/v1: it is not sent to this endpoint/);
    assert.equal(await b.evaluate(() => sessionStorage.getItem('agent-sessions-demo.apiKey')), null);
    // A tab that could not hear another's change of endpoint (the browser discarded it: its
    // session storage is kept, and it reloads): its key is not sent to the new endpoint.
    await saveSettings(b, async () => {
      await b.fill('#set-base-url', 'http://127.0.0.1:9/v1');
      await b.fill('#set-api-key', 'sk-for-port-9-again');
    });
    await b.evaluate(() => {
      const settings = JSON.parse(localStorage.getItem('agent-sessions-demo.settings'));
      localStorage.setItem('agent-sessions-demo.settings', JSON.stringify({ ...settings, baseUrl: 'http://127.0.0.1:8/v1' }));
    });
    await reload(b);
    assert.equal(await b.evaluate(() => sessionStorage.getItem('agent-sessions-demo.apiKey')), null, 'forgotten at the reload');
    assert.equal(await b.inputValue('#set-api-key'), '');
    assert.match(await b.textContent('#status'), /forgot its API key/, 'and said so');
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

/** In a second tab of `a`'s context (returned), the edit of the first message of a chat `a` said
 * something in opens with `text`; `meanwhile()` runs in that tab, then `a` says more, and once
 * the second tab shows it, the test goes on. */
async function editWhileAnotherTabSays(context, a, text, meanwhile) {
  const b = await openTab(context);
  await say(a, 'my hobby is chess');
  await until(b, () => document.querySelectorAll('#messages .msg').length === 2);
  await synced(b);
  await b.click('#messages .msg[data-turn="1"] .msg-edit');
  await b.fill('#messages .msg-editor textarea', text);
  await meanwhile(b);
  await say(a, 'what is my hobby?');
  await until(b, () => document.querySelectorAll('#messages .msg').length === 4);
  await synced(b);
  return b;
}

test('another tab’s message, heard while a message is being edited, leaves the keyboard in the input box', async () => {
  const { context, page: a } = await openDemo();
  try {
    // B has an edit open on the first message, and types in the input box.
    const b = await editWhileAnotherTabSays(context, a, 'my hobby is go', async (b) => {
      await b.focus('#input');
      await b.keyboard.type('half a');
    });
    await b.keyboard.type(' thought');
    assert.equal(await b.inputValue('#input'), 'half a thought', 'every key reached the input box');
    assert.equal(await b.inputValue('#messages .msg-editor textarea'), 'my hobby is go', 'the edit stays open');
    assert.deepEqual(b.errors, []);
  } finally {
    await context.close();
  }
});

test('another tab’s message, heard while a message is being edited in the middle of its text, leaves the cursor where it was', async () => {
  const { context, page: a } = await openDemo();
  try {
    // The cursor after "my ", where the user types.
    const b = await editWhileAnotherTabSays(context, a, 'my hobby is chess', (b) =>
      b.evaluate(() => document.querySelector('#messages .msg-editor textarea').setSelectionRange(3, 3)),
    );
    await b.keyboard.type('main ');
    assert.equal(await b.inputValue('#messages .msg-editor textarea'), 'my main hobby is chess', 'typed where the cursor was, not at the end');
    assert.deepEqual(b.errors, []);
  } finally {
    await context.close();
  }
});

test('an edit open in a chat another tab deletes is not carried to the chat opened in its place; a message typed in the box stays there', async () => {
  const { context, page: a } = await openDemo();
  try {
    await say(a, 'my city is Oslo');
    const other = await currentSessionId(a);
    await a.click('#new-chat');
    await idle(a);
    await say(a, 'my hobby is chess');
    await settled(a);
    const doomed = await currentSessionId(a);
    await a.click('#messages .msg[data-turn="1"] .msg-edit');
    await a.fill('#messages .msg-editor textarea', 'my hobby is go');
    await a.fill('#input', 'and my street?');
    const b = await openTab(context);
    await lib(b, async ({ lib, dbName, id }) => lib.deleteSession(id, { dbName }), { id: doomed });
    await until(a, (id) => document.querySelector('#session-list .session[aria-current="true"]')?.dataset.sessionId === id, other);
    await synced(a);
    assert.match(await a.textContent('#status'), /deleted in another tab/);
    assert.equal(await a.$$eval('#messages .msg-editor', (e) => e.length), 0, 'no edit box on the other chat’s message');
    assert.equal((await rendered(a))[0].text, 'my city is Oslo');
    // What was typed in the message box is not lost: this tab did not choose to leave the chat.
    assert.equal(await a.inputValue('#input'), 'and my street?');
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('an edit whose version cannot be made (storage full) stays open with what was typed', async () => {
  const { context, page } = await openDemo({}, {
    init: () => {
      const put = IDBObjectStore.prototype.put;
      // The session record of a chat given its first version: refused as a full quota refuses.
      IDBObjectStore.prototype.put = function (value, ...rest) {
        if (Array.isArray(value?.branches) && value.branches.length > 0) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return put.call(this, value, ...rest);
      };
    },
  });
  try {
    await say(page, 'my hobby is chess');
    await settled(page);
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my hobby is go');
    await page.click('#messages .msg-editor .edit-send');
    await idle(page);
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error-text'), /STORAGE_FULL/);
    assert.equal(await page.inputValue('#messages .msg[data-turn="1"] .msg-editor textarea'), 'my hobby is go', 'the edit is still there to send again');
    assert.equal(await page.isVisible('#chat-branch'), false, 'no version was made');
  } finally {
    await context.close();
  }
});

test('two tabs of one user follow each other live: a message sent in one shows in the other, a new chat shows in its sidebar', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await openTab(context);
    // The second tab opens the chat the first one has open (the last one the user had open).
    const first = await currentSessionId(a);
    assert.equal(await currentSessionId(b), first);

    // A message sent in A shows in B's open chat, answer included, without a reload.
    await say(a, 'my name is Ann');
    await until(b, () => document.querySelectorAll('#messages .msg').length === 2);
    await synced(b);
    assert.deepEqual(await rendered(b), await rendered(a));
    assert.equal((await rendered(b))[0].text, 'my name is Ann');
    // The title and summary A's reply wrote in the background show too.
    const [title, summary] = [await a.textContent('#chat-title'), await a.textContent('#chat-summary')];
    assert.match(summary, /name is Ann/);
    await until(
      b,
      ([title, summary]) => document.getElementById('chat-title').textContent === title && document.getElementById('chat-summary').textContent === summary,
      [title, summary],
    );
    await synced(b);
    assert.deepEqual(await sidebarIds(b), [first]);

    // A new chat made in A shows in B's sidebar; B stays on its chat.
    await a.click('#new-chat');
    await idle(a);
    await say(a, 'my city is Oslo');
    const second = await currentSessionId(a);
    assert.notEqual(second, first);
    await untilSidebar(b, [second, first]);
    assert.equal(await currentSessionId(b), first);
    assert.equal((await rendered(b)).length, 2);
    await until(b, (titles) => JSON.stringify([...document.querySelectorAll('#session-list .session-title')].map((e) => e.textContent)) === JSON.stringify(titles), await sidebarTitles(a));

    // And the other way: a message sent in B moves its chat to the top of A's sidebar, with its
    // new item count; A stays on the chat it has open.
    await say(b, 'what is my name?');
    assert.equal(await lastAssistant(b), 'Your name is Ann. (I was given 2 earlier items.)');
    await untilSidebar(a, [first, second]);
    await until(a, (id) => /^4 items/.test(document.querySelector(`.session[data-session-id="${id}"] .session-meta`)?.textContent ?? ''), first);
    assert.equal(await currentSessionId(a), second);
    assert.deepEqual((await rendered(a)).map((m) => m.text)[0], 'my city is Oslo');

    // Back in A's first chat, the exchange B had is there.
    await a.click(`.session[data-session-id="${first}"]`);
    await idle(a);
    assert.deepEqual(await rendered(a), await rendered(b));
    assert.deepEqual(a.errors, []);
    assert.deepEqual(b.errors, []);
  } finally {
    await context.close();
  }
});

test('a change to the open chat that the chat list does not show (its topics, set in another tab) is read again', async () => {
  const { context, page: a } = await openDemo();
  try {
    await say(a, 'my hobby is chess');
    await settled(a);
    await synced(a);
    const id = await currentSessionId(a);
    const b = await openTab(context);
    await lib(b, async ({ lib, dbName, id }) => new lib.IndexedDbSession(id, { userId: 'Guest', dbName }).update({ topics: ['board games', 'openings'] }), { id });
    await until(a, () => [...document.querySelectorAll('#chat-topics li')].map((e) => e.textContent).join('|') === 'board games|openings');
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('deleting a chat opens the next one on the version it was last on, as a reload does', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my name is Ann');
    const first = await currentSessionId(page);
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my name is Bo');
    await page.click('#messages .msg-editor .edit-send');
    await idle(page);
    const edited = await rendered(page);
    assert.equal(edited[0].text, 'my name is Bo');
    await page.click('#new-chat');
    await idle(page);
    await say(page, 'my city is Oslo');
    const asked = answerDialog(page, true);
    await page.click('#delete-chat');
    await asked;
    await idle(page);
    assert.equal(await currentSessionId(page), first);
    assert.deepEqual(await rendered(page), edited, 'the edited version, where its next message goes');
    assert.equal(await page.inputValue('#chat-branch'), 'turn-1');
    await reload(page);
    assert.deepEqual(await rendered(page), edited);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a chat deleted in one tab leaves the sidebar of the other; a tab whose open chat was deleted opens another', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await openTab(context);
    await say(a, 'my name is Ann');
    const first = await currentSessionId(a);
    await a.click('#new-chat');
    await idle(a);
    await say(a, 'my city is Oslo');
    const second = await currentSessionId(a);
    await untilSidebar(b, [second, first]);
    assert.equal(await currentSessionId(b), first);

    // A deletes the chat it has open; B, on the other one, loses it from its sidebar.
    const asked = answerDialog(a, true);
    await a.click('#delete-chat');
    await asked;
    await idle(a);
    assert.deepEqual(await sidebarIds(a), [first]);
    await untilSidebar(b, [first]);
    assert.equal(await currentSessionId(b), first);
    assert.equal((await rendered(b)).length, 2);

    // A deletes the chat B has open: B opens a new chat in its place, and says why.
    assert.equal(await currentSessionId(a), first);
    const again = answerDialog(a, true);
    await a.click('#delete-chat');
    await again;
    await idle(a);
    await until(b, (id) => document.querySelector('#session-list .session[aria-current="true"]')?.dataset.sessionId !== id, first);
    await synced(b);
    const ids = await sidebarIds(b);
    assert.equal(ids.length, 1, 'only the new, unsaved chat');
    assert.notEqual(ids[0], first);
    assert.equal(await currentSessionId(b), ids[0]);
    assert.deepEqual(await rendered(b), []);
    assert.match(await b.textContent('#status'), /deleted in another tab/);
    assert.deepEqual(await sessionsOf(b, 'Guest'), []);
    assert.deepEqual(a.errors, []);
    assert.deepEqual(b.errors, []);
  } finally {
    await context.close();
  }
});

test('a chat deleted in another tab while its summary is written here closes here too (the list redrawn after the summary lacked it already)', async () => {
  const { context, page: a } = await openDemo();
  const tokenDelay = (ms) => a.evaluate(async (ms) => (await import('/offline-model.js')).setTokenDelay(ms), ms);
  try {
    const b = await openTab(context);
    await say(a, 'my name is Ann');
    // The next reply's summary and title are slow: the chat is deleted while they are written,
    // with a message typed in its box.
    await tokenDelay(400);
    await a.fill('#input', 'my city is Oslo');
    await a.press('#input', 'Enter');
    await idle(a);
    await a.fill('#input', 'half a thought');
    const id = await currentSessionId(a);
    await lib(b, async ({ lib, dbName, id }) => lib.deleteSession(id, { dbName }), { id });
    await settled(a);
    await until(a, (id) => document.querySelector('#session-list .session[aria-current="true"]')?.dataset.sessionId !== id, id);
    await synced(a);
    assert.notEqual(await currentSessionId(a), id);
    assert.match(await a.textContent('#status'), /deleted in another tab/);
    assert.equal(await a.inputValue('#input'), 'half a thought', 'what was typed stays in the box, once');
    assert.ok(!(await sessionsOf(a, 'Guest')).some((s) => s.sessionId === id), 'not made again');
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('"Keep my chats on this device" asks the browser and shows its answer, yes or no', async () => {
  const { context, page } = await openDemo();
  try {
    const KEPT = 'Your chats are kept when space runs low. Clearing this site’s data still removes them (and Safari, after 7 days without a visit): back them up to keep a copy.';
    const NOT_KEPT = 'The browser did not agree to keep them; it may clear them when space runs low.';
    assert.equal(await page.isVisible('#keep-chats'), true);
    // A browser that keeps the chats already says so at once; otherwise the button asks.
    if (!(await page.isDisabled('#keep-chats'))) await page.click('#keep-chats');
    await until(page, (texts) => texts.includes(document.getElementById('keep-status').textContent), [KEPT, NOT_KEPT]);
    const text = await page.textContent('#keep-status');
    const persisted = await page.evaluate(() => navigator.storage.persisted());
    // What is shown is what the browser says now.
    assert.equal(text, persisted ? KEPT : NOT_KEPT);
    assert.equal(await page.isDisabled('#keep-chats'), persisted, 'asking again only while not kept');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** Clicks "Back up all chats" and waits for the file: `{ path, name, text, lines }`, `lines` the
 * file's lines parsed. */
async function backUp(page) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#backup')]);
  const path = await download.path();
  const text = await readFile(path, 'utf8');
  await idle(page);
  return { path, name: download.suggestedFilename(), text, lines: text.split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

/** Records every text the status line shows from now on, in `window.__statuses`. */
function recordStatuses(page) {
  return page.evaluate(() => {
    const status = document.getElementById('status');
    window.__statuses = [];
    new MutationObserver(() => window.__statuses.push(status.textContent)).observe(status, { childList: true, characterData: true, subtree: true });
  });
}

/** What the storage meter says of `userId`'s chats, once it shows what the library says now
 * (the sum of `storageEstimate`'s sizes; it measures a moment after each change): `{ text,
 * bytes }`. */
async function chatStorage(page, userId) {
  const deadline = Date.now() + 15000;
  for (;;) {
    const sizes = await lib(page, async ({ lib, dbName, userId }) => (await lib.storageEstimate({ dbName, userId })).sessions, { userId });
    const shown = await page.evaluate(() => ({
      text: document.getElementById('storage-chats').textContent,
      bytes: Number(document.getElementById('storage').dataset.chatBytes),
    }));
    const bytes = sizes.reduce((sum, s) => sum + s.bytes, 0);
    const chats = `${sizes.length} chat${sizes.length === 1 ? '' : 's'}`;
    if (shown.bytes === bytes && shown.text.endsWith(` in ${chats}`)) return shown;
    if (Date.now() > deadline) assert.fail(`the meter shows ${JSON.stringify(shown)}, the library says ${bytes} bytes in ${chats}`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

test('a backup with a chat the library could not write out says so, naming it, and counts the others', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    // A chat holding what IndexedDB stores and JSON cannot write (a BigInt), written by other code.
    await lib(page, async ({ lib, dbName }) => {
      const s = new lib.IndexedDbSession('odd-chat', { userId: 'Guest', dbName });
      await s.addItems([{ role: 'user', content: 'a big number', value: 10n }]);
      s.free();
    });
    const backup = await backUp(page);
    assert.equal(backup.lines.filter((l) => l.failed).map((l) => l.failed.sessionId).join(), 'odd-chat');
    assert.match(await page.textContent('#status'), /^Backed up 1 chat into /);
    assert.equal(await page.isVisible('#error'), true);
    assert.match(await page.textContent('#error-text'), /^1 chat could not be backed up \(the backup has the others\): odd-chat \(INVALID_ITEM: /);
  } finally {
    await context.close();
  }
});

test('a backup the library cannot write says why (the module it needs unreachable here), not the browser’s “Failed to fetch”', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    // The module that writes backups cannot be fetched (offline, say), and the page has not
    // loaded it yet.
    const loaded = await page.evaluate(() => performance.getEntriesByType('resource').some((e) => /agent_sessions_extras/.test(e.name)));
    assert.equal(loaded, false, 'the backup module is not loaded yet');
    await page.route(/agent_sessions_extras|\/extras\.js/, (route) => route.abort());
    await page.click('#backup');
    await idle(page);
    const error = await page.textContent('#error-text');
    assert.notEqual(error, 'TypeError: Failed to fetch');
    assert.match(error, /^SessionError MODULE_UNAVAILABLE: the second sessions module/);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('"Back up all chats" saves all of a user\'s chats in one file, "Restore chats" brings them back (one already here as a renamed copy, a damaged one named by its line), and the storage meter shows what they take', async () => {
  const { context, page } = await openDemo();
  try {
    await addUser(page, 'Ann');
    assert.equal(await page.isDisabled('#backup'), true, 'nothing to back up before the first chat');
    assert.equal(await page.isDisabled('#restore'), false);
    await say(page, 'my name is Ann');
    const first = await currentSessionId(page);
    await page.click('#new-chat');
    await idle(page);
    await say(page, 'my city is Oslo');
    const second = await currentSessionId(page);
    assert.deepEqual(await sidebarIds(page), [second, first]);
    assert.equal(await page.isDisabled('#backup'), false);

    // The meter: the user's chats (the sizes the library keeps), and the site's use of its quota.
    const measured = await chatStorage(page, 'Ann');
    assert.match(measured.text, /^Ann’s chats: \d+(\.\d)? (B|KB|MB) in 2 chats$/);
    assert.ok(measured.bytes > 0);
    const site = await page.evaluate(() => navigator.storage.estimate());
    if (typeof site.quota === 'number') {
      assert.match(await page.textContent('#storage-site'), /^Site storage: \d+(\.\d)? (B|KB|MB|GB) of \d+(\.\d)? (KB|MB|GB|TB)$/);
      const meter = await page.$eval('#storage-meter', (m) => ({ hidden: m.hidden, value: m.value, max: m.max }));
      assert.equal(meter.hidden, false);
      assert.ok(meter.value > 0 && meter.value <= meter.max, JSON.stringify(meter));
    }

    // Back up: one NDJSON file, the header first, then both chats (each record, rows, end).
    const items = { [first]: await itemsOf(page, 'Ann', first), [second]: await itemsOf(page, 'Ann', second) };
    const infos = { [first]: await infoOf(page, 'Ann', first), [second]: await infoOf(page, 'Ann', second) };
    const backup = await backUp(page);
    const today = await page.evaluate(() => {
      const d = new Date();
      return [d.getFullYear(), d.getMonth() + 1, d.getDate()].map((n) => String(n).padStart(2, '0')).join('-');
    });
    assert.equal(backup.name, `chats-Ann-${today}.ndjson`);
    assert.ok(backup.text.startsWith('{"format":"agent-sessions-backup",'), backup.text.slice(0, 80));
    const [header, ...rest] = backup.lines;
    assert.deepEqual([header.format, header.version, header.sessions], ['agent-sessions-backup', 1, 2]);
    assert.deepEqual(rest.filter((l) => l.session).map((l) => l.session.id).sort(), [first, second].sort());
    assert.deepEqual(rest.filter((l) => l.end).map((l) => l.end.sessionId).sort(), [first, second].sort());
    for (const id of [first, second]) {
      assert.deepEqual(rest.filter((l) => l.item?.sessionId === id).map((l) => l.item.item), items[id], `the items of ${id}`);
    }
    assert.equal(await page.textContent('#status'), `Backed up 2 chats into ${backup.name}.`);
    assert.equal(await page.isHidden('#error'), true);

    // The first chat is deleted; the second stays open.
    await page.click(`.session[data-session-id="${first}"]`);
    await idle(page);
    const asked = answerDialog(page, true);
    await page.click('#delete-chat');
    await asked;
    await idle(page);
    assert.deepEqual(await sidebarIds(page), [second]);
    assert.equal(await currentSessionId(page), second);
    const shown = await rendered(page);

    // Restore: the deleted chat is back as it was; the one still here comes in renamed, as a
    // third chat; the open chat is left as it is. The status line follows the restore.
    await recordStatuses(page);
    await page.setInputFiles('#restore-file', backup.path);
    await until(page, () => /^Restored /.test(document.getElementById('status').textContent));
    await idle(page);
    const copy = `${second}-2`;
    assert.deepEqual(new Set(await sidebarIds(page)), new Set([first, second, copy]));
    assert.deepEqual((await sessionsOf(page, 'Ann')).map((s) => s.sessionId).sort(), [first, second, copy].sort());
    assert.deepEqual(await itemsOf(page, 'Ann', first), items[first]);
    assert.deepEqual(await itemsOf(page, 'Ann', second), items[second]);
    assert.deepEqual(await itemsOf(page, 'Ann', copy), items[second]);
    const restored = await infoOf(page, 'Ann', first);
    assert.deepEqual([restored.title, restored.summary, restored.topics], [infos[first].title, infos[first].summary, infos[first].topics]);
    assert.equal(await page.textContent(`.session[data-session-id="${first}"] .session-title`), infos[first].title);
    assert.equal(await currentSessionId(page), second, 'the open chat stays open');
    assert.deepEqual(await rendered(page), shown);
    const status = await page.textContent('#status');
    assert.match(status, /^Restored 2 chats: 1 as it was; 1 renamed: a chat with its id is here already, so it came in as a copy\.$/);
    const statuses = await page.evaluate(() => window.__statuses);
    assert.ok(statuses.includes('Restoring… 1 of 2 chats'), JSON.stringify(statuses));
    assert.ok(statuses.includes('Restoring… 2 of 2 chats'), JSON.stringify(statuses));
    assert.equal(await page.isHidden('#error'), true);

    // A long message makes the user's chats take more.
    const before = await chatStorage(page, 'Ann');
    assert.match(before.text, / in 3 chats$/);
    await say(page, `a long note: ${'x'.repeat(20000)}`);
    const after = await chatStorage(page, 'Ann');
    assert.ok(after.bytes >= before.bytes + 20000, `${before.bytes} → ${after.bytes}`);
    assert.notEqual(after.text, before.text);

    // A damaged backup: one item line of the second chat is no longer JSON. That chat is not
    // restored, and the error names the line; the first one is (as a copy: it is here again).
    const lines = backup.text.split('\n');
    const bad = lines.findIndex((l) => l.startsWith('{"item":') && JSON.parse(l).item.sessionId === second);
    lines[bad] = lines[bad].slice(0, -1);
    await page.setInputFiles('#restore-file', { name: 'damaged.ndjson', mimeType: 'application/x-ndjson', buffer: Buffer.from(lines.join('\n')) });
    await page.waitForSelector('#error:not([hidden])');
    await idle(page);
    assert.match(await page.textContent('#error-text'), new RegExp(`^1 chat could not be restored \\(nothing of it was written\\): line ${bad + 1} of the backup is not JSON`));
    assert.match(await page.textContent('#status'), /^Restored 1 chat: 1 renamed: .*; 1 not restored\.$/);
    assert.deepEqual((await sessionsOf(page, 'Ann')).map((s) => s.sessionId).sort(), [first, `${first}-2`, second, copy].sort());
    assert.deepEqual(await itemsOf(page, 'Ann', `${first}-2`), items[first]);
    assert.equal(await currentSessionId(page), second);

    // Dismissed from the keyboard, the error leaves it in the message box, not on the page.
    await page.focus('#error-close');
    await page.keyboard.press('Enter');
    assert.equal(await page.isVisible('#error'), false);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'input');
    // A file that is no backup at all is refused whole.
    await page.setInputFiles('#restore-file', { name: 'chat.json', mimeType: 'application/json', buffer: Buffer.from('{"items": []}') });
    await page.waitForSelector('#error:not([hidden])');
    await idle(page);
    assert.match(await page.textContent('#error-text'), /^SessionError IMPORT_INVALID: chat\.json is not a backup of chats: line 1 /);
    assert.equal((await sessionsOf(page, 'Ann')).length, 4);
    // A backup cut short after its header: every chat it counts is said to be lost, not one.
    const counted = JSON.parse(lines[0]).sessions;
    assert.ok(counted >= 2, `${counted}`);
    await page.click('#error-close');
    await page.setInputFiles('#restore-file', { name: 'cut.ndjson', mimeType: 'application/x-ndjson', buffer: Buffer.from(`${lines[0]}\n`) });
    await page.waitForSelector('#error:not([hidden])');
    await idle(page);
    assert.match(await page.textContent('#error-text'), new RegExp(`^${counted} chats could not be restored \\(nothing of them was written\\): line 2: the backup ends after 0 of the ${counted} sessions`));
    assert.equal(await page.textContent('#status'), `Restored 0 chats: ${counted} not restored.`);
    assert.equal((await sessionsOf(page, 'Ann')).length, 4);

    // Another user's chats are theirs: Guest has none to back up, and a meter of their own.
    await selectUser(page, 'Guest');
    assert.equal(await page.isDisabled('#backup'), true);
    assert.equal((await chatStorage(page, 'Guest')).text, 'Guest’s chats: 0 B in 0 chats');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** The messages the search shows: `[{ sessionId, title, meta, snippet, marks, elements }]`,
 * `marks` the text of each <mark> in the snippet, `elements` every element in it. */
function searchResults(page) {
  return page.$$eval('#search-results .search-hit', (bs) =>
    bs.map((b) => {
      const snippet = b.querySelector('.search-hit-snippet');
      return {
        sessionId: b.dataset.sessionId,
        title: b.querySelector('.search-hit-title').textContent,
        meta: b.querySelector('.search-hit-meta').textContent,
        snippet: snippet.textContent,
        marks: [...snippet.querySelectorAll('mark')].map((m) => m.textContent),
        elements: [...snippet.querySelectorAll('*')].map((e) => e.tagName.toLowerCase()),
      };
    }),
  );
}

/** Types `query` into the search box (as keystrokes, or all at once with `fill`), then Enter
 * unless `enter` is false (the search then runs once the typing pauses), and waits for its
 * results. */
async function searchChats(page, query, { type = false, enter = true } = {}) {
  if (type) {
    await page.fill('#search-input', '');
    await page.locator('#search-input').pressSequentially(query, { delay: 20 });
  } else {
    await page.fill('#search-input', query);
  }
  if (enter) await page.press('#search-input', 'Enter');
  await until(page, (q) => document.getElementById('search-results').dataset.query === q, query);
  return searchResults(page);
}

/** Whether the chat list or the search results are shown (the results' list, when empty, has
 * no height: its `hidden` says), and the search's status line. */
async function listShown(page) {
  return {
    list: await page.isVisible('#session-list'),
    results: await page.$eval('#search-results', (ul) => !ul.hidden),
    status: await page.textContent('#search-status'),
  };
}

/** The message a search result opened: its role and text, the text of its marks, the elements
 * in it, and whether it is in view in the conversation. */
function foundMessage(page) {
  return page.evaluate(() => {
    const found = document.querySelectorAll('#messages .msg-found');
    if (found.length !== 1) return { count: found.length };
    const [li] = found;
    const body = li.querySelector('.msg-text');
    const box = document.getElementById('messages').getBoundingClientRect();
    const mark = body.querySelector('mark')?.getBoundingClientRect();
    return {
      count: 1,
      role: li.dataset.role,
      text: body.textContent,
      marks: [...body.querySelectorAll('mark')].map((m) => m.textContent),
      elements: [...new Set([...body.querySelectorAll('*')].map((e) => e.tagName.toLowerCase()))].sort(),
      inView: Boolean(mark) && mark.top >= box.top && mark.bottom <= box.bottom,
      atEnd: document.getElementById('messages').scrollTop + document.getElementById('messages').clientHeight >= document.getElementById('messages').scrollHeight - 2,
    };
  });
}

/** Clicks the search result whose snippet contains `text`, and waits for its chat to show. */
async function openResult(page, text) {
  await page.click(`#search-results .search-hit:has(.search-hit-snippet:has-text("${text}"))`);
  await idle(page);
  await until(page, () => document.querySelectorAll('#messages .msg-found').length === 1);
}

test('search the chats: only the current user’s, words marked as text (accents folded, Greek’s too; Japanese and Thai as pairs), a result opens its chat at the message; the results follow changes; Escape, × and an empty box bring the list back', async () => {
  const { context, page } = await openDemo();
  try {
    // Two chats of Guest's and one of Ann's, written through the library; a long chat, so that
    // its first message is far from where the conversation opens (at its end).
    const [zoo, tokyo, ann] = ['chat-zoo', 'chat-tokyo', 'chat-ann'];
    const filler = [];
    for (let i = 2; i <= 25; i++) filler.push({ role: 'user', content: `filler question ${i}` }, { role: 'assistant', content: `filler answer ${i}, nothing to see` });
    await lib(
      page,
      async ({ lib, dbName, zoo, tokyo, ann, filler }) => {
        const write = async (id, userId, title, items) => {
          const s = new lib.IndexedDbSession(id, { userId, dbName });
          await s.addItems(items);
          await s.update({ title });
          await s.close();
          s.free();
        };
        await write(zoo, 'Guest', 'Zoo trip', [
          { role: 'user', content: 'We saw a hippopotamus near the café by the river.' },
          { role: 'assistant', content: 'A **hippopotamus** runs fast; the café sounds nice.' },
          ...filler,
          { role: 'user', content: 'The <b>bold</b> hippopotamus yawned <img src=x onerror="window.__pwned=1">.' },
          { role: 'assistant', content: 'Noted.' },
        ]);
        await write(ann, 'Ann', 'Ann’s zoo', [{ role: 'user', content: 'Ann saw a hippopotamus too.' }]);
        await write(tokyo, 'Guest', 'Weather', [
          { role: 'user', content: '東京の天気はどうですか？' },
          { role: 'assistant', content: '東京は晴れです。' },
          { role: 'user', content: 'Μετά στην Αθήνα, ฉันชอบกินข้าว' },
        ]);
      },
      { zoo, tokyo, ann, filler },
    );
    await reload(page);
    assert.deepEqual(await sidebarIds(page), [tokyo, zoo]);
    assert.equal(await currentSessionId(page), tokyo);
    assert.deepEqual(await listShown(page), { list: true, results: false, status: '' });
    assert.equal(await page.isVisible('#search-clear'), false);

    // hippo*, typed: Guest's three messages (not Ann's), the start of the word marked, the
    // message's HTML shown as text.
    let found = await searchChats(page, 'hippo*', { type: true, enter: false });
    assert.deepEqual(await listShown(page), { list: false, results: true, status: '3 messages found' });
    assert.equal(await page.isVisible('#search-clear'), true);
    assert.deepEqual(new Set(found.map((r) => r.sessionId)), new Set([zoo]), JSON.stringify(found));
    for (const r of found) {
      assert.equal(r.title, 'Zoo trip');
      assert.deepEqual(r.marks, ['hippo'], JSON.stringify(r));
      assert.deepEqual(r.elements, ['mark'], 'nothing but the marks is an element');
      assert.match(r.snippet, /hippopotamus/);
    }
    assert.deepEqual(found.map((r) => r.meta.split(' · ')[0]).sort(), ['Assistant', 'You', 'You']);
    const bold = found.find((r) => r.snippet.includes('<b>bold</b>'));
    assert.ok(bold, 'the message with <b> in it is found, its HTML shown as text');
    assert.ok(bold.snippet.includes('<img src=x onerror="window.__pwned=1">'), bold.snippet);
    // The mark is the start of "hippopotamus", the rest of the word right after it.
    const after = await page.$$eval('#search-results .search-hit-snippet mark', (ms) => ms.map((m) => m.textContent + m.nextSibling.textContent.slice(0, 7)));
    assert.deepEqual(after, ['hippopotamus', 'hippopotamus', 'hippopotamus']);
    // A whole word is marked whole.
    found = await searchChats(page, 'HIPPOPOTAMUS');
    assert.equal(found.length, 3);
    for (const r of found) assert.deepEqual(r.marks, ['hippopotamus']);

    // Accents folded both ways: "cafe" finds "café", and the mark holds the accented word.
    found = await searchChats(page, 'cafe');
    assert.equal(found.length, 2, JSON.stringify(found));
    for (const r of found) {
      assert.equal(r.sessionId, zoo);
      assert.deepEqual(r.marks, ['café']);
    }
    // Japanese, as pairs of characters.
    found = await searchChats(page, '東京');
    assert.deepEqual(found.map((r) => [r.sessionId, r.title]), [[tokyo, 'Weather'], [tokyo, 'Weather']]);
    for (const r of found) assert.deepEqual(r.marks, ['東京']);
    found = await searchChats(page, '東京の天気');
    assert.deepEqual(found.map((r) => r.marks), [['東京の天気']]);
    // Greek without its accents, and Thai as pairs, marked as they were found.
    found = await searchChats(page, 'αθηνα');
    assert.deepEqual(found.map((r) => r.marks), [['Αθήνα']]);
    found = await searchChats(page, 'กินข้าว');
    assert.deepEqual(found.map((r) => r.marks), [['กินข้าว']]);
    found = await searchChats(page, 'zebra');
    assert.deepEqual(found, []);
    assert.deepEqual(await listShown(page), { list: false, results: true, status: 'No messages match' });

    // An empty box shows the chat list.
    await page.fill('#search-input', '');
    assert.deepEqual(await listShown(page), { list: true, results: false, status: '' });

    // A result opens its chat, scrolled to the message, the word marked in it.
    found = await searchChats(page, 'hippopotamus');
    await openResult(page, 'We saw a');
    assert.equal(await currentSessionId(page), zoo);
    let message = await foundMessage(page);
    assert.equal(message.role, 'user');
    assert.equal(message.text, 'We saw a hippopotamus near the café by the river.');
    assert.deepEqual(message.marks, ['hippopotamus']);
    assert.equal(message.inView, true, 'the message is scrolled into view');
    assert.equal(message.atEnd, false, 'the conversation is not at its end');
    // The search stays open.
    assert.equal(await page.inputValue('#search-input'), 'hippopotamus');
    assert.equal((await searchResults(page)).length, 3);
    // The answer, rendered from Markdown: the mark inside its <strong>.
    await openResult(page, 'runs fast');
    message = await foundMessage(page);
    assert.equal(message.role, 'assistant');
    assert.deepEqual(message.marks, ['hippopotamus']);
    assert.deepEqual(message.elements, ['mark', 'p', 'strong']);
    assert.equal(await page.$eval('#messages .msg-found mark', (m) => m.parentElement.tagName), 'STRONG');
    // The message with HTML in it: shown as text, the mark around the word only.
    await openResult(page, 'yawned');
    message = await foundMessage(page);
    assert.equal(message.text, 'The <b>bold</b> hippopotamus yawned <img src=x onerror="window.__pwned=1">.');
    assert.deepEqual(message.elements, ['mark']);
    assert.deepEqual(message.marks, ['hippopotamus']);
    assert.equal(message.inView, true);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);

    // The results follow the chats: a message written elsewhere (another tab, here the library)
    // shows up in them.
    await lib(page, async ({ lib, dbName, tokyo }) => {
      const s = new lib.IndexedDbSession(tokyo, { userId: 'Guest', dbName });
      await s.addItems([{ role: 'user', content: 'Is there a hippopotamus in Tokyo?' }]);
      await s.close();
      s.free();
    }, { tokyo });
    await until(page, (tokyo) => [...document.querySelectorAll('#search-results .search-hit')].some((b) => b.dataset.sessionId === tokyo), tokyo);
    found = await searchResults(page);
    assert.equal(found.length, 4);
    assert.deepEqual(found.find((r) => r.sessionId === tokyo).marks, ['hippopotamus']);
    await synced(page);
    // A result in another chat opens that one.
    await openResult(page, 'in Tokyo');
    assert.equal(await currentSessionId(page), tokyo);
    assert.equal((await foundMessage(page)).text, 'Is there a hippopotamus in Tokyo?');

    // A message on a branch opens that branch; one on the main branch that the branch the chat
    // is on shows (before the turn it was made from) opens there; another, the main branch.
    await lib(page, async ({ lib, dbName, zoo }) => {
      const s = new lib.IndexedDbSession(zoo, { userId: 'Guest', dbName });
      await s.createBranchFromTurn(26, 'other-ending');
      await s.addItems([{ role: 'user', content: 'The rhinoceros yawned instead.' }, { role: 'assistant', content: 'Fine.' }]);
      await s.close();
      s.free();
    }, { zoo });
    found = await searchChats(page, 'rhinoceros');
    assert.deepEqual(found.map((r) => [r.sessionId, r.meta.split(' · ').slice(0, 2).join(' · ')]), [[zoo, 'You · branch “other-ending”']]);
    await openResult(page, 'rhinoceros');
    assert.equal(await currentSessionId(page), zoo);
    assert.equal(await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent), 'Branch “other-ending”');
    message = await foundMessage(page);
    assert.deepEqual([message.text, message.marks, message.inView], ['The rhinoceros yawned instead.', ['rhinoceros'], true]);
    await searchChats(page, 'river');
    await openResult(page, 'river');
    assert.equal(await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent), 'Branch “other-ending”');
    message = await foundMessage(page);
    assert.deepEqual([message.text.startsWith('We saw'), message.marks, message.inView], [true, ['river'], true]);
    await searchChats(page, 'onerror');
    await openResult(page, 'onerror');
    assert.equal(await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent), 'Original conversation');
    message = await foundMessage(page);
    assert.deepEqual([message.text.startsWith('The <b>bold</b>'), message.inView], [true, true]);

    // Escape, then ×, bring the chat list back and empty the box.
    await page.focus('#search-input');
    await page.keyboard.press('Escape');
    assert.equal(await page.inputValue('#search-input'), '');
    assert.deepEqual(await listShown(page), { list: true, results: false, status: '' });
    assert.deepEqual(await sidebarIds(page), [zoo, tokyo]);
    await searchChats(page, 'hippopotamus');
    await page.click('#search-clear');
    assert.equal(await page.inputValue('#search-input'), '');
    assert.deepEqual(await listShown(page), { list: true, results: false, status: '' });
    assert.equal(await page.evaluate(() => document.activeElement.id), 'search-input');

    // A query the library refuses: its error is shown where errors are; the next search takes it away.
    await searchChats(page, 'a'.repeat(1001));
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.textContent('#error-text'), /INVALID_QUERY/);
    assert.equal(await page.textContent('#search-status'), 'The search could not be run.');
    await searchChats(page, 'hippopotamus');
    assert.equal(await page.isHidden('#error'), true);

    // Another user: the box is emptied, and searches only their chats.
    await addUser(page, 'Ann');
    assert.equal(await page.inputValue('#search-input'), '');
    assert.deepEqual(await listShown(page), { list: true, results: false, status: '' });
    found = await searchChats(page, 'hippo*');
    assert.deepEqual(found.map((r) => [r.sessionId, r.title, r.marks]), [[ann, 'Ann’s zoo', ['hippo']]]);
    await selectUser(page, 'Guest');
    assert.equal(await page.inputValue('#search-input'), '');

    // On a phone: the results fit the screen; a result closes the chat list and shows its message.
    await page.setViewportSize({ width: 380, height: 800 });
    await page.click('#toggle-sidebar');
    await searchChats(page, 'hippopotamus');
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal scrolling');
    await mkdir(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'demo-phone-search.png') });
    await openResult(page, 'We saw a');
    assert.equal(await page.isVisible('#session-list'), false, 'the sidebar closed');
    assert.equal(await page.evaluate(() => document.activeElement.classList.contains('msg-found')), true, 'the message has the focus');
    const mark = await page.$eval('#messages .msg-found mark', (m) => {
      const r = m.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= window.innerHeight;
    });
    assert.equal(mark, true, 'the mark is on screen');
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal scrolling');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a locked chat emptied by Clear is named by its first message no more', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is falconry');
    await lockChats(page, 'correct horse battery staple');
    await reload(page);
    await unlockChats(page, 'correct horse battery staple');
    assert.deepEqual(await sidebarTitles(page), ['my hobby is falconry']);
    const dialog = answerDialog(page, true);
    await page.click('#clear');
    await dialog;
    await idle(page);
    assert.deepEqual(await rendered(page), []);
    assert.deepEqual(await sidebarTitles(page), ['New chat']);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a message being edited when the chats are locked: its box closes (an encrypted chat has no versions to send an edit to), and nothing fails', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is pottery');
    await page.click('#messages .msg[data-turn="1"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'my hobby is sculpture');
    await lockChats(page, 'correct horse battery staple');
    assert.equal(await page.$$eval('#messages .msg-editor', (e) => e.length), 0, 'no edit box');
    assert.equal(await page.$$eval('#messages .msg-edit', (e) => e.length), 0, 'nothing to edit');
    assert.equal(await page.isVisible('#error'), false);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** Locks the current user's chats with `passphrase` (typed twice) through the sidebar's form;
 * `remember` checks "Remember on this device". */
async function lockChats(page, passphrase, { again = passphrase, remember = false } = {}) {
  if (await page.isVisible('#lock-open')) await page.click('#lock-open');
  await page.fill('#lock-passphrase', passphrase);
  await page.fill('#lock-confirm', again);
  await page.setChecked('#lock-remember', remember);
  await page.click('#lock-submit');
  await idle(page);
}

/** Types `passphrase` into the unlock prompt and submits it. */
async function unlockChats(page, passphrase, { remember = false } = {}) {
  await page.fill('#unlock-passphrase', passphrase);
  await page.setChecked('#unlock-remember', remember);
  await page.click('#unlock-submit');
  await idle(page);
}

/** Whether the unlock prompt is shown in the chat's place (and the conversation is not). */
async function asksPassphrase(page) {
  const [prompt, messages, composer] = await Promise.all(['#unlock', '#messages', '#composer'].map((s) => page.isVisible(s)));
  assert.equal(messages, !prompt, 'the conversation shows exactly when the prompt does not');
  assert.equal(composer, !prompt);
  return prompt;
}

test('a locked user whose lock this browser lost (its localStorage cleared, the chats kept) is asked the passphrase again, the lock found in their chats: no ciphertext shown, nothing written in clear', async () => {
  const { context, page } = await openDemo();
  const PASSPHRASE = 'correct horse battery staple';
  try {
    await addUser(page, 'Lena');
    await say(page, 'my hobby is falconry');
    await lockChats(page, PASSPHRASE);
    // A chat begun after the lock, the newest, does not carry it yet: an older one does.
    await page.click('#new-chat');
    await say(page, 'my other hobby is chess');
    await page.evaluate(() => localStorage.clear());
    await reload(page);
    // The users went with localStorage: Lena is added again by name.
    await addUser(page, 'Lena');
    assert.equal(await asksPassphrase(page), true);
    await unlockChats(page, PASSPHRASE);
    assert.equal(await asksPassphrase(page), false);
    assert.match((await rendered(page)).map((m) => m.text).join(' '), /my other hobby is chess/);
    assert.doesNotMatch(await dumpIndexedDb(page), /chess/, 'nothing written in clear');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('lock a user’s chats with a passphrase: encrypted in place (nothing of them left in clear), unlocked after a reload only by the right passphrase (a wrong one writes nothing), new messages stored encrypted, "Remember on this device", and deleting old chats', async () => {
  const { context, page } = await openDemo();
  const PASSPHRASE = 'correct horse battery staple';
  try {
    // Guest keeps a chat in clear: the lock is Lena's only.
    await say(page, 'my city is Oslo');
    const guestChat = await currentSessionId(page);
    await addUser(page, 'Lena');
    assert.equal(await page.textContent('#lock-state'), "Lena's chats are stored as plain text in this browser.");
    await say(page, 'my hobby is falconry');
    const chat = await currentSessionId(page);
    const shown = await rendered(page);
    assert.equal(shown.length, 2);
    assert.match(await dumpIndexedDb(page), /falconry/, 'in clear before the lock: items, title, summary, search index');
    assert.equal((await sessionsOf(page, 'Lena'))[0].title, 'my hobby is falconry');

    // The two passphrases must be the same; nothing happens until they are.
    await lockChats(page, PASSPHRASE, { again: 'correct horse battery stapler' });
    assert.match(await page.textContent('#lock-error'), /differ/);
    assert.equal(await page.isVisible('#lock-error'), true);
    assert.equal(await page.evaluate(() => localStorage.getItem('agent-sessions-demo.lock.Lena')), null);
    assert.match(await dumpIndexedDb(page), /falconry/);

    await lockChats(page, PASSPHRASE);
    assert.equal(await page.textContent('#status'), 'Locked: 1 chat of Lena\'s encrypted.');
    assert.equal(await page.isVisible('#lock-form'), false);
    // Nothing of the chat is left in clear anywhere in IndexedDB (items, title, summary, topics,
    // search index, turns), nor in localStorage (the lock keeps a salt and a check only).
    const locked = await dumpIndexedDb(page);
    assert.doesNotMatch(locked, /falconry|hobby/i);
    assert.match(locked, /Oslo/, 'Guest’s chat is not locked');
    assert.doesNotMatch(await page.evaluate(() => JSON.stringify({ ...localStorage })), /falconry|hobby|correct horse/i);
    const stored = await itemsOf(page, 'Lena', chat);
    assert.equal(stored.length, 2);
    for (const item of stored) assert.deepEqual(Object.keys(item).sort(), ['__enc', 'ct', 'iv']);
    const [record] = await sessionsOf(page, 'Lena');
    assert.deepEqual([record.sessionId, record.title, record.summary, record.itemCount], [chat, null, null, 2]);
    // The chat still shows, decrypted, with the page's own title (its first message, in memory
    // only); no rename, no edit (a branch), no search for a locked user.
    assert.deepEqual(await rendered(page), shown);
    assert.equal(await page.textContent('#chat-title'), 'my hobby is falconry');
    assert.equal(await page.isVisible('#rename'), false);
    assert.equal(await page.$$eval('#messages .msg-edit', (b) => b.length), 0);
    assert.equal(await page.isDisabled('#search-input'), true);
    assert.match(await page.textContent('#lock-state'), /encrypted; unlocked in this tab/);
    // Export asks first (its lock says backups stay encrypted), then writes the messages as they
    // read, and says the file is not locked.
    const declined = answerDialog(page, false);
    await page.click('#export');
    assert.match((await declined).message, /This chat is locked\. The exported file holds its messages in clear/);
    await page.waitForFunction(() => document.getElementById('status').textContent === 'The chat was not exported.');
    const exporting = answerDialog(page, true);
    const exported = await exportChat(page);
    await exporting;
    assert.match(exported.text, /falconry/);
    await idle(page);
    assert.equal(await page.textContent('#status'), 'Exported 2 items, decrypted: the file is not locked, keep it safe.');

    // After a reload, nothing is shown before the passphrase, whose field has the keyboard.
    await reload(page);
    assert.equal(await page.inputValue('#user-select'), 'Lena');
    assert.equal(await asksPassphrase(page), true);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'unlock-passphrase');
    assert.equal(await page.textContent('#unlock-heading'), 'Lena\'s chats are locked');
    assert.deepEqual(await rendered(page), []);
    assert.equal(await page.isDisabled('#new-chat'), true);
    assert.deepEqual(await sidebarIds(page), [chat]);
    assert.equal(await page.isDisabled(`.session[data-session-id="${chat}"]`), true);
    assert.deepEqual(await sidebarTitles(page), ['Locked chat']);

    // A wrong passphrase: an error, and not one byte written.
    const before = await dumpIndexedDb(page);
    await unlockChats(page, 'incorrect horse battery staple');
    assert.equal(await page.isVisible('#unlock-error'), true);
    assert.match(await page.textContent('#unlock-error'), /not the passphrase/);
    assert.equal(await asksPassphrase(page), true);
    assert.deepEqual(await rendered(page), []);
    assert.equal(await dumpIndexedDb(page), before);

    // The right one opens the chat.
    await unlockChats(page, PASSPHRASE);
    assert.equal(await asksPassphrase(page), false);
    assert.equal(await page.isVisible('#unlock-error'), false);
    assert.equal(await page.textContent('#status'), 'Unlocked Lena\'s chats.');
    assert.equal(await currentSessionId(page), chat);
    assert.deepEqual(await rendered(page), shown);
    assert.equal(await dumpIndexedDb(page), before, 'unlocking writes nothing either');

    // A new message: the model is given the decrypted history, and all of it is stored encrypted,
    // without a title or summary.
    await say(page, 'what is my hobby?');
    assert.equal(await lastAssistant(page), 'Your hobby is falconry. (I was given 2 earlier items.)');
    const after = await dumpIndexedDb(page);
    assert.doesNotMatch(after, /falconry|hobby/i);
    const four = await itemsOf(page, 'Lena', chat);
    assert.equal(four.length, 4);
    for (const item of four) assert.deepEqual(Object.keys(item).sort(), ['__enc', 'ct', 'iv']);
    assert.deepEqual((await sessionsOf(page, 'Lena')).map((s) => [s.title, s.summary]), [[null, null]]);

    // Another user is not asked anything; coming back in this tab does not ask again.
    await selectUser(page, 'Guest');
    assert.equal(await asksPassphrase(page), false);
    assert.equal(await currentSessionId(page), guestChat);
    assert.equal(await page.isDisabled('#search-input'), false);
    await selectUser(page, 'Lena');
    assert.equal(await asksPassphrase(page), false);
    assert.equal((await rendered(page)).length, 4);

    // "Remember on this device": the next reload opens the chats without asking.
    await reload(page);
    assert.equal(await asksPassphrase(page), true);
    await unlockChats(page, PASSPHRASE, { remember: true });
    assert.equal(await asksPassphrase(page), false);
    assert.match(await page.textContent('#lock-state'), /remembered on this device/);
    await reload(page);
    assert.equal(await asksPassphrase(page), false);
    assert.equal((await rendered(page)).length, 4);
    assert.equal(await page.textContent('#chat-title'), 'my hobby is falconry');
    assert.doesNotMatch(await dumpIndexedDb(page), /falconry|hobby|correct horse/i, 'the remembered key is a key object, not the passphrase');

    // A second chat; the sidebar names the chats opened in this page, "Locked chat" the others.
    await page.click('#new-chat');
    await idle(page);
    await say(page, 'my colour is teal');
    const second = await currentSessionId(page);
    assert.deepEqual(await sidebarTitles(page), ['my colour is teal', 'my hobby is falconry']);
    await reload(page);
    assert.equal(await asksPassphrase(page), false);
    assert.deepEqual(await sidebarIds(page), [second, chat]);
    assert.deepEqual(await sidebarTitles(page), ['my colour is teal', 'Locked chat']);

    // Lock now: the passphrase is asked again, after a reload too (the device forgot the key).
    await page.click('#lock-now');
    await idle(page);
    assert.equal(await asksPassphrase(page), true);
    assert.deepEqual(await sidebarTitles(page), ['Locked chat', 'Locked chat'], 'no first message left in the sidebar');
    await reload(page);
    assert.equal(await asksPassphrase(page), true);

    // Deleting old chats works on locked chats without the passphrase (session records only),
    // after asking; "older than 0 days" is every chat of Lena's, none of Guest's.
    await page.fill('#retention-days', '0');
    const refused = answerDialog(page, false);
    await page.click('#retention');
    assert.match((await refused).message, /^Delete 2 chats of Lena's not used for more than 0 days\?/);
    await idle(page);
    assert.equal(await page.textContent('#status'), 'No chat was deleted.');
    assert.equal((await sessionsOf(page, 'Lena')).length, 2);
    const accepted = answerDialog(page, true);
    await page.click('#retention');
    assert.equal((await accepted).type, 'confirm');
    await idle(page);
    assert.equal(await page.textContent('#status'), 'Deleted 2 chats.');
    assert.deepEqual(await sessionsOf(page, 'Lena'), []);
    assert.equal(await sidebarIds(page).then((ids) => ids.includes(chat) || ids.includes(second)), false);
    assert.equal((await sessionsOf(page, 'Guest')).length, 1);

    // Still locked: the passphrase opens the (now empty) chats, and a new one is encrypted too.
    await unlockChats(page, PASSPHRASE);
    assert.equal(await asksPassphrase(page), false);
    await say(page, 'my pet is a heron');
    assert.match(await lastAssistant(page), /heron/);
    assert.doesNotMatch(await dumpIndexedDb(page), /heron/);

    // A real endpoint, with "Summarise chats" on: one request per message (a locked chat's
    // summary and title are not asked for: they could only be stored in clear), holding the
    // decrypted history.
    model.state.deltaDelayMs = 5;
    model.script({ text: 'Herons are patient hunters.' });
    await saveSettings(page, async () => {
      await page.fill('#set-base-url', model.url);
      await page.fill('#set-model', 'test-model');
      assert.equal(await page.isChecked('#set-summaries'), true);
    });
    await say(page, 'tell me about herons');
    assert.equal(await lastAssistant(page), 'Herons are patient hunters.');
    assert.equal(model.requests.length, 1, 'no summary or title request');
    const sent = model.requests[0].body.messages.filter((m) => m.role === 'user').map(itemText);
    assert.deepEqual(sent, ['my pet is a heron', 'tell me about herons']);
    assert.doesNotMatch(await dumpIndexedDb(page), /heron/i);
    assert.deepEqual((await sessionsOf(page, 'Lena')).map((s) => [s.title, s.summary, s.itemCount]), [[null, null, 4]]);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

/** Makes user Lena in tab `a`, with one chat, and opens a second tab on her: resolves to it. */
async function lenaInTwoTabs(context, a) {
  await addUser(a, 'Lena');
  await say(a, 'my hobby is falconry');
  const b = await openTab(context);
  await selectUser(b, 'Lena');
  return b;
}

test('an edit being typed when its message is undone, here or in another tab, goes to the message box once, not lost', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await lenaInTwoTabs(context, a);
    await say(a, 'my city is Lima');
    const editing = async (text) => {
      await a.click('#messages .msg[data-turn="2"] .msg-edit');
      await a.fill('#messages .msg-editor textarea', text);
    };
    // Undone in this tab: the question is back in the box, after the edited text.
    await editing('my city is Cusco');
    await a.click('#undo');
    await idle(a);
    assert.equal(await a.inputValue('#input'), 'my city is Cusco\n\nmy city is Lima');
    assert.match(await a.textContent('#status'), /your edited text is in the message box/);
    await a.fill('#input', '');
    await say(a, 'my city is Lima');
    // Undone in the other tab while this one edits.
    await editing('my city is Arequipa');
    await b.click('#undo');
    await idle(b);
    await until(a, () => !document.querySelector('#messages .msg[data-turn="2"]') && document.getElementById('app').dataset.sync === 'false');
    assert.equal(await a.inputValue('#input'), 'my city is Arequipa');
    assert.match(await a.textContent('#status'), /your edited text is in the message box/);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('a message sent while the page catches up with its chat’s deletion in another tab is not sent to the chat opened in its place: it is back in the message box', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await lenaInTwoTabs(context, a);
    const deleted = await currentSessionId(a);
    await a.fill('#input', 'for the deleted chat');
    // Sent the moment this tab starts catching up with the other tab's change.
    await a.evaluate(() => {
      const app = document.getElementById('app');
      new MutationObserver((_, seen) => {
        if (app.dataset.sync !== 'true') return;
        seen.disconnect();
        document.getElementById('composer').requestSubmit();
      }).observe(app, { attributes: true, attributeFilter: ['data-sync'] });
    });
    const dialog = answerDialog(b, true);
    await b.click('#delete-chat');
    await dialog;
    await idle(b);
    await until(a, () => document.getElementById('app').dataset.sync === 'false' && document.getElementById('app').dataset.busy === 'false');
    await idle(a);
    assert.notEqual(await currentSessionId(a), deleted);
    assert.equal(await a.inputValue('#input'), 'for the deleted chat');
    assert.match(await a.textContent('#status'), /back in the message box, not sent/);
    const stored = await sessionsOf(a, 'Lena');
    assert.equal(stored.some((s) => s.sessionId === deleted), false, 'the deleted chat stays deleted');
    assert.doesNotMatch(JSON.stringify(await rendered(a)), /for the deleted chat/);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('Undo, or an edit sent, while the page catches up with its chat’s deletion in another tab is not done to the chat opened in its place; the edited text is back in the message box', async () => {
  const { context, page: a } = await openDemo();
  try {
    await say(a, 'my city is Oslo');
    const other = await currentSessionId(a);
    const kept = await itemsOf(a, 'Guest', other);
    const b = await openTab(context);
    for (const act of ['undo', 'edit']) {
      await a.click('#new-chat');
      await idle(a);
      await say(a, 'my hobby is chess');
      await settled(a);
      const doomed = await currentSessionId(a);
      if (act === 'edit') {
        await a.click('#messages .msg[data-turn="1"] .msg-edit');
        await a.fill('#messages .msg-editor textarea', 'my hobby is go');
      }
      // Done the moment this tab starts catching up with the other tab's deletion.
      await a.evaluate((act) => {
        const app = document.getElementById('app');
        window.acted = false;
        new MutationObserver((_, seen) => {
          if (app.dataset.sync !== 'true') return;
          seen.disconnect();
          window.acted = true;
          if (act === 'undo') document.getElementById('undo').click();
          else document.querySelector('#messages .msg-editor').requestSubmit();
        }).observe(app, { attributes: true, attributeFilter: ['data-sync'] });
      }, act);
      await lib(b, async ({ lib, dbName, id }) => lib.deleteSession(id, { dbName }), { id: doomed });
      await until(a, () => window.acted && document.getElementById('app').dataset.sync === 'false' && document.getElementById('app').dataset.busy === 'false');
      await idle(a);
      assert.equal(await currentSessionId(a), other, act);
      assert.deepEqual(await itemsOf(a, 'Guest', other), kept, `${act}: the chat opened in its place is as it was`);
      const branches = await lib(a, async ({ lib, dbName, id }) => (await new lib.IndexedDbSession(id, { userId: 'Guest', dbName }).listBranches()).map((x) => x.branchId), { id: other });
      assert.deepEqual(branches, ['main'], `${act}: no version made in it`);
      if (act === 'undo') {
        assert.match(await a.textContent('#status'), /Nothing was undone/);
        assert.equal(await a.inputValue('#input'), '');
      } else {
        assert.match(await a.textContent('#status'), /your edited text is in the message box, not sent/);
        assert.equal(await a.inputValue('#input'), 'my hobby is go');
      }
      assert.deepEqual((await rendered(a)).map((m) => m.text), kept.map(itemText));
    }
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('a key forgotten on this device in one tab is said so in the others, which offer to forget it no more', async () => {
  const { context, page } = await openDemo();
  try {
    await addUser(page, 'Lena');
    await say(page, 'my hobby is falconry');
    await lockChats(page, 'a passphrase of Lena', { remember: true });
    const other = await openTab(context);
    assert.equal(await asksPassphrase(other), false, 'the device remembers the key');
    assert.match(await other.textContent('#lock-state'), /unlocked and remembered on this device/);
    assert.equal(await other.isVisible('#lock-forget'), true);

    await page.click('#lock-forget');
    await idle(page);
    assert.match(await page.textContent('#status'), /no longer remembers the key/);
    await other.waitForFunction(() => document.getElementById('lock-forget').hidden);
    assert.match(await other.textContent('#lock-state'), /unlocked in this tab/);
    assert.equal(await asksPassphrase(other), false, 'still open there until a reload or Lock now');

    // Remembered again in the other tab (its passphrase typed there): said here.
    await reload(other);
    assert.equal(await asksPassphrase(other), true);
    await unlockChats(other, 'a passphrase of Lena', { remember: true });
    await page.waitForFunction(() => !document.getElementById('lock-forget').hidden);
    assert.match(await page.textContent('#lock-state'), /unlocked and remembered on this device/);
    assert.deepEqual([...page.errors, ...other.errors], []);
  } finally {
    await context.close();
  }
});

test('closing the tab while a reply is being written asks first; once it is saved, nothing is asked', async () => {
  const { context, page } = await openDemo();
  try {
    await page.evaluate(async () => (await import('/offline-model.js')).setTokenDelay(300));
    await page.fill('#input', 'my hobby is falconry');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => !document.getElementById('stop').disabled);
    const asked = answerDialog(page, false);
    const closed = page.waitForEvent('close', { timeout: 0 }).then(() => ({ type: 'closed without asking' }));
    await page.close({ runBeforeUnload: true });
    assert.equal((await Promise.race([asked, closed])).type, 'beforeunload');
    assert.equal(page.isClosed(), false, 'stayed, as the user chose');
    await idle(page);
    await page.evaluate(async () => (await import('/offline-model.js')).setTokenDelay(0));
    await settled(page);
    assert.match(await lastAssistant(page), /falconry/);
    await page.close({ runBeforeUnload: true });
    assert.equal((await Promise.race([closed, new Promise((ok) => page.once('dialog', () => ok({ type: 'asked' })))])).type, 'closed without asking');
    assert.deepEqual(page.errors, [], 'no dialog asked once the reply was saved');
  } finally {
    await context.close();
  }
});

test('deleting old chats that fails part way: the open chat, deleted before the failure, makes way for the newest one left, not said later to be deleted in another tab', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my name is Ann');
    const a = await currentSessionId(page);
    await page.click('#new-chat');
    await idle(page);
    await say(page, 'my city is Oslo');
    const b = await currentSessionId(page);
    await page.click('#new-chat');
    await idle(page);
    await say(page, 'my hobby is chess');
    const c = await currentSessionId(page);
    await page.click(`.session[data-session-id="${a}"]`);
    await idle(page);
    await page.fill('#input', 'typed in the oldest chat');
    // The oldest goes first (the open one); deleting the next one's record fails.
    await page.evaluate((b) => {
      const remove = IDBObjectStore.prototype.delete;
      IDBObjectStore.prototype.delete = function (key, ...rest) {
        if (this.name === 'agent_sessions' && key === b) throw new DOMException('refused', 'UnknownError');
        return remove.call(this, key, ...rest);
      };
    }, b);
    await page.fill('#retention-days', '0');
    const asked = answerDialog(page, true);
    await page.click('#retention');
    await asked;
    await idle(page);
    assert.equal(await page.isVisible('#error'), true, 'the failure is told');
    assert.equal(await page.textContent('#status'), 'Deleted 1 chat before it failed.');
    assert.deepEqual((await sessionsOf(page, 'Guest')).map((s) => s.sessionId).sort(), [b, c].sort());
    assert.equal(await currentSessionId(page), c, 'the newest chat left is open');
    assert.equal((await rendered(page))[0].text, 'my hobby is chess');
    assert.equal(await page.inputValue('#input'), '', 'the deleted chat’s draft went with it');
    // The view is read again after the action: nothing else is said of the chat.
    await page.evaluate(() => new Promise((r) => setTimeout(r, 300)));
    await idle(page);
    assert.equal(await page.textContent('#status'), 'Deleted 1 chat before it failed.');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('Lock now whose device cannot forget the key (its storage refuses) says the chats open without the passphrase after a reload, as they do', async () => {
  const { context, page } = await openDemo();
  try {
    await addUser(page, 'Lena');
    await say(page, 'my hobby is falconry');
    await lockChats(page, 'a passphrase of Lena', { remember: true });
    // The device keys' store refuses deletions from now on.
    await page.evaluate(() => {
      const remove = IDBObjectStore.prototype.delete;
      IDBObjectStore.prototype.delete = function (...args) {
        if (this.name === 'keys') throw new DOMException('refused', 'UnknownError');
        return remove.apply(this, args);
      };
    });
    await page.click('#lock-now');
    await idle(page);
    assert.equal(await asksPassphrase(page), true, 'this tab is locked');
    assert.match(await page.textContent('#status'), /this device could not forget the key: after a reload they open without the passphrase/);
    assert.equal(await page.isVisible('#error'), true, 'with the error');
    await reload(page);
    assert.equal(await asksPassphrase(page), false, 'as said: the device still had the key');
  } finally {
    await context.close();
  }
});

test('a passphrase opens its chats however its accents were typed (one character, or a letter and an accent), and a lock made from the text as typed still opens', async () => {
  const { context, page } = await openDemo();
  const composed = 'crème brûlée tonight';
  const decomposed = composed.normalize('NFD');
  assert.notEqual(composed, decomposed);
  try {
    await addUser(page, 'Lena');
    await say(page, 'my hobby is falconry');
    await lockChats(page, decomposed);
    await reload(page);
    assert.equal(await asksPassphrase(page), true);
    await unlockChats(page, composed);
    assert.equal(await asksPassphrase(page), false, 'the composed form opens what the decomposed one locked');
    assert.match(JSON.stringify(await rendered(page)), /falconry/);

    // A lock made before passphrases were normalized: its key came from the text as typed.
    await addUser(page, 'Max');
    await say(page, 'my city is Lima');
    await page.evaluate(() => {
      window.realNormalize = String.prototype.normalize;
      String.prototype.normalize = function () {
        return String(this);
      };
    });
    await lockChats(page, decomposed);
    await reload(page);
    assert.equal(await asksPassphrase(page), true);
    await unlockChats(page, decomposed);
    assert.equal(await asksPassphrase(page), false, 'the text as typed opens a lock made from it');
    assert.match(JSON.stringify(await rendered(page)), /Lima/);
  } finally {
    await context.close();
  }
});

test('two tabs locking one user at once, with two passphrases: one lock wins, the other tab says so, and every chat opens with the winning passphrase', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await lenaInTwoTabs(context, a);
    const passphrases = ['passphrase number one', 'passphrase number two'];
    for (const [page, passphrase] of [[a, passphrases[0]], [b, passphrases[1]]]) {
      if (await page.isVisible('#lock-open')) await page.click('#lock-open');
      await page.fill('#lock-passphrase', passphrase);
      await page.fill('#lock-confirm', passphrase);
    }
    // Both at once (a click each waits for its button to be ready, by which time the other
    // tab's lock may have closed this form).
    await Promise.all([a, b].map((page) => page.evaluate(() => document.getElementById('lock-submit').click())));
    await Promise.all([idle(a), idle(b)]);
    const statuses = [await a.textContent('#status'), await b.textContent('#status')];
    const lost = statuses.findIndex((t) => /locked in another tab first/.test(t));
    assert.notEqual(lost, -1, statuses.join(' | '));
    assert.match(statuses[1 - lost], /^Locked: 1 chat of Lena's encrypted/);
    const loser = [a, b][lost];
    assert.equal(await asksPassphrase(loser), true, 'the tab that lost asks for the passphrase');
    await unlockChats(loser, passphrases[1 - lost]);
    assert.deepEqual((await rendered(loser)).map((m) => m.role), ['user', 'assistant']);
    assert.match((await rendered(loser))[0].text, /falconry/);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('Lock now in one tab locks the chats in every tab: the others close the open chat and ask for the passphrase', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await lenaInTwoTabs(context, a);
    await lockChats(b, 'a passphrase of Lena');
    await until(a, () => !document.getElementById('unlock').hidden && document.getElementById('app').dataset.busy === 'false');
    await unlockChats(a, 'a passphrase of Lena');
    assert.equal(await asksPassphrase(a), false);
    assert.equal(await asksPassphrase(b), false);
    // Messages typed and not sent: locking leaves neither for whoever comes to the screen next.
    await a.fill('#input', 'a draft in the other tab');
    await say(b, 'my locker is 12');
    assert.notEqual(await b.textContent('#announce'), '', 'the reply was told to a screen reader');
    await b.fill('#input', 'my PIN is 4321');
    await b.click('#lock-now');
    await idle(b);
    assert.equal(await asksPassphrase(b), true);
    assert.equal(await b.inputValue('#input'), '');
    assert.equal(await b.textContent('#announce'), '', 'nor the last reply, for a screen reader');
    await until(a, () => !document.getElementById('unlock').hidden && document.getElementById('app').dataset.busy === 'false');
    assert.equal(await asksPassphrase(a), true);
    assert.equal(await a.inputValue('#input'), '');
    assert.equal(await a.textContent('#status'), "Lena's chats were locked in another tab.");
    // A tab on another user forgets Lena's key too: switching to her asks for it.
    await unlockChats(a, 'a passphrase of Lena');
    // Nor does switching to another user.
    await a.fill('#input', 'Lena’s draft');
    const asked = answerDialog(a, true);
    await selectUser(a, 'Guest');
    assert.match((await asked).message, /Switch to Guest\? The message you typed and did not send is dropped/);
    assert.equal(await a.inputValue('#input'), '');
    await unlockChats(b, 'a passphrase of Lena');
    await b.click('#lock-now');
    await idle(b);
    const held = () => a.evaluate(async () => (await import('./state.js')).state.keys.has('Lena'));
    for (let i = 0; i < 100 && (await held()); i++) await new Promise((ok) => setTimeout(ok, 20));
    await selectUser(a, 'Lena');
    assert.equal(await asksPassphrase(a), true);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('locking waits for a reply another tab is writing in a chat, then seals it with the rest: nothing of it is left in clear', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await lenaInTwoTabs(context, a);
    const id = await currentSessionId(a);
    // Tab b writes a reply in the chat: it holds the chat's lock, as a run does, until saved.
    await holdChat(b, id);
    const locking = lockChats(a, 'a passphrase of Lena');
    // The lock is recorded just before the chats are sealed (the key made): then a moment more.
    await until(a, () => Object.keys(localStorage).some((k) => k.startsWith('agent-sessions-demo.lock.')));
    await new Promise((ok) => setTimeout(ok, 300));
    await lib(b, async ({ lib, dbName, id }) => {
      await new lib.IndexedDbSession(id, { userId: 'Lena', dbName }).addItems([{ role: 'user', content: 'late question' }, { role: 'assistant', content: 'late answer' }]);
      window.releaseChat();
    }, { id });
    await locking;
    const items = await itemsOf(a, 'Lena', id);
    assert.equal(items.length, 4, 'the reply is kept');
    for (const item of items) assert.deepEqual(Object.keys(item).sort(), ['__enc', 'ct', 'iv'], 'and sealed');
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('localStorage cleared in another tab (the chats kept) does not unlock a locked user here: the lock is written back, and new messages are stored encrypted', async () => {
  const { context, page: a } = await openDemo();
  try {
    await addUser(a, 'Lena');
    await say(a, 'my hobby is falconry');
    const chat = await currentSessionId(a);
    await lockChats(a, 'a passphrase of Lena');
    const b = await openTab(context);
    // (Heard after the page's own listener, which writes back before it yields.)
    await a.evaluate(() => addEventListener('storage', (e) => e.key === null && (window.cleared = true)));
    await b.evaluate(() => localStorage.clear());
    await until(a, () => window.cleared && document.getElementById('app').dataset.busy === 'false');
    assert.notEqual(await a.evaluate(() => localStorage.getItem('agent-sessions-demo.lock.Lena')), null, 'the lock is written back');
    assert.doesNotMatch(await a.textContent('#status'), /locked in another tab/);
    await say(a, 'my locker is 12');
    const stored = await itemsOf(a, 'Lena', chat);
    assert.equal(stored.length, 4);
    for (const item of stored) assert.deepEqual(Object.keys(item).sort(), ['__enc', 'ct', 'iv'], 'nothing stored in clear');
    // A tab opened now asks for the passphrase.
    const c = await openTab(context);
    await selectUser(c, 'Lena');
    assert.equal(await asksPassphrase(c), true);
    assert.deepEqual([...a.errors, ...b.errors, ...c.errors], []);
  } finally {
    await context.close();
  }
});

// (Whatever lands first, the seal or the summary and title, none of them is left in clear.)
test('a chat locked in another tab while this tab still writes its summary and title: they are not left in clear', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await lenaInTwoTabs(context, a);
    await settled(a);
    const id = await currentSessionId(b);
    // B's summary and title take a while (the offline model answers slowly).
    await b.evaluate(async () => (await import('/offline-model.js')).setTokenDelay(600));
    await b.fill('#input', 'my city is Bergen');
    await b.press('#input', 'Enter');
    await idle(b);
    assert.equal(await b.getAttribute('#app', 'data-background'), 'true', 'the summary is being written');
    await lockChats(a, 'a passphrase of Lena');
    await settled(b);
    // (The clear after the background work lands a moment later.)
    let info;
    for (let i = 0; i < 30; i++) {
      info = await infoOf(a, 'Lena', id);
      if (info.title === null && info.summary === null) break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    assert.deepEqual([info.title, info.summary, info.topics], [null, null, null], JSON.stringify(info));
    assert.doesNotMatch(await dumpIndexedDb(a), /Bergen|falconry/);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('a user locked in another tab while this tab types: the passphrase box takes the keyboard, not the page, and a passphrase typed into this tab\'s lock form is not kept', async () => {
  const { context, page: a } = await openDemo();
  try {
    const b = await lenaInTwoTabs(context, a);
    // A has begun a lock of its own, its passphrase typed and not sent.
    if (await a.isVisible('#lock-open')) await a.click('#lock-open');
    await a.fill('#lock-passphrase', 'half a passphrase');
    await a.focus('#input');
    await a.keyboard.type('half a thought');
    await lockChats(b, 'a passphrase of Lena');
    await until(a, () => !document.getElementById('unlock').hidden && document.getElementById('app').dataset.busy === 'false');
    assert.equal(await a.evaluate(() => document.activeElement.id || `${document.activeElement.tagName}.${document.activeElement.className}`), 'unlock-passphrase');
    assert.equal(await a.inputValue('#lock-passphrase'), '', 'the passphrase typed is not kept in the hidden form');
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await context.close();
  }
});

test('a locked user’s backup restored on another device (or after the site’s data was cleared) opens with the passphrase alone, and locks the user there; a user with chats of their own is not locked by it, and one locked with another passphrase is given none of it', async () => {
  const PASSPHRASE = 'correct horse battery staple';
  const first = await openDemo();
  let backup;
  let chats;
  try {
    await addUser(first.page, 'Lena');
    await say(first.page, 'my hobby is falconry');
    await lockChats(first.page, PASSPHRASE);
    // A chat made after the lock: the backup carries the lock for it too.
    await first.page.click('#new-chat');
    await idle(first.page);
    await say(first.page, 'my tea is oolong');
    chats = await sidebarIds(first.page);
    assert.equal(chats.length, 2);
    backup = await backUp(first.page);
    assert.doesNotMatch(backup.text, /falconry|oolong|correct horse/i, 'nothing in clear');
    assert.deepEqual(await first.page.evaluate(() => document.getElementById('status').textContent), `Backed up 2 chats into ${backup.name}.`);
  } finally {
    await first.context.close();
  }

  // Another browser. (The first, closed, took its download with it: the file as it was saved.)
  const file = { name: backup.name, mimeType: 'application/x-ndjson', buffer: Buffer.from(backup.text) };
  const restore = async (page) => {
    await page.setInputFiles('#restore-file', file);
    await until(page, () => /^Restored /.test(document.getElementById('status').textContent));
    await idle(page);
  };
  const { context, page } = await openDemo();
  try {
    // Ann has a chat of her own in clear: the restore does not lock her (she may not know the
    // passphrase): nothing is restored, and the error says where to restore it.
    await addUser(page, 'Ann');
    await say(page, 'my city is Rome');
    const annChat = await currentSessionId(page);
    await page.setInputFiles('#restore-file', file);
    await page.waitForSelector('#error:not([hidden])');
    await idle(page);
    assert.match(await page.textContent('#error-text'), /are locked with a passphrase, and Ann has chats of their own: restore it into a new user \(Add user\)/);
    assert.deepEqual(await sidebarIds(page), [annChat]);
    assert.equal(await asksPassphrase(page), false);
    assert.equal((await rendered(page))[0].text, 'my city is Rome');
    assert.equal(await page.evaluate(() => localStorage.getItem('agent-sessions-demo.lock.Ann')), null);

    // Bob's chats are locked here with another passphrase: the backup's could never be opened
    // with his, so nothing is restored.
    await addUser(page, 'Bob');
    await say(page, 'my car is red');
    await lockChats(page, 'another passphrase entirely');
    const bobChats = await sidebarIds(page);
    await page.setInputFiles('#restore-file', file);
    await page.waitForSelector('#error:not([hidden])');
    await idle(page);
    assert.match(await page.textContent('#error-text'), /are locked by another lock than Bob's \(another passphrase, or the same one locked anew\): restore it into a new user \(Add user\)/);
    assert.deepEqual(await sidebarIds(page), bobChats);
    await page.click('#error-close');

    // Lena, without chats here: locked by the backup’s lock, opened by its passphrase alone.
    await addUser(page, 'Lena');
    await restore(page);
    assert.equal(await page.textContent('#status'), 'Restored 2 chats: 2 as they were. They are locked: enter the passphrase they were locked with.');
    assert.equal(await asksPassphrase(page), true);
    assert.deepEqual(await rendered(page), []);
    // A wrong passphrase opens nothing.
    await unlockChats(page, 'incorrect horse battery staple');
    assert.match(await page.textContent('#unlock-error'), /not the passphrase/);
    await unlockChats(page, PASSPHRASE);
    assert.equal(await asksPassphrase(page), false);
    const shown = await sidebarIds(page);
    assert.ok(chats.every((id) => shown.includes(id)), JSON.stringify(shown));
    const texts = [];
    for (const id of chats) {
      await page.click(`.session[data-session-id="${id}"]`);
      await idle(page);
      texts.push((await rendered(page))[0]?.text);
    }
    assert.deepEqual(texts.sort(), ['my hobby is falconry', 'my tea is oolong']);
    // Lena is locked here now: what she writes is stored encrypted.
    await say(page, 'my dog is Rex');
    assert.doesNotMatch(await dumpIndexedDb(page), /falconry|oolong|Rex/);
    await reload(page);
    assert.equal(await asksPassphrase(page), true);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a reasoning model’s reasoning items show as its summary, or as one line where it gave none: not as their JSON (encrypted content included)', async () => {
  const { context, page } = await openDemo();
  try {
    const chat = 'chat-with-reasoning';
    await lib(
      page,
      async ({ lib, dbName, chat }) => {
        const s = new lib.IndexedDbSession(chat, { userId: 'Guest', dbName });
        await s.addItems([
          { role: 'user', content: 'plan my week' },
          { type: 'reasoning', id: 'rs_1', content: [{ type: 'input_text', text: 'Weighing the meetings first.' }], providerData: { encrypted_content: 'gAAAA-secret' } },
          { role: 'assistant', content: 'Meetings on Monday.' },
          { role: 'user', content: 'and Friday?' },
          { type: 'reasoning', id: 'rs_2', content: [], providerData: { encrypted_content: 'gAAAA-other' } },
          { role: 'assistant', content: 'Friday is free.' },
        ]);
      },
      { chat },
    );
    await reload(page);
    await page.click(`#session-list .session[data-session-id="${chat}"]`);
    await idle(page);
    const shown = await rendered(page);
    assert.deepEqual(shown.map((m) => m.role), ['user', 'other', 'assistant', 'user', 'other', 'assistant']);
    assert.equal(shown[1].text, 'Weighing the meetings first.');
    assert.equal(shown[4].text, 'The model reasoned before answering (no summary of it was given).');
    assert.deepEqual(await page.$$eval('#messages .msg-other .msg-who', (ls) => ls.map((l) => l.textContent)), ['Reasoning', 'Reasoning']);
    assert.doesNotMatch(await page.textContent('#messages'), /gAAAA|encrypted_content|rs_1/);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('an item with role “user” but another type is not a message: Edit buttons are numbered by the turns the library counts, and editing message 2 rewrites turn 2', async () => {
  const { context, page } = await openDemo();
  try {
    const chat = 'chat-with-note';
    await lib(
      page,
      async ({ lib, dbName, chat }) => {
        const s = new lib.IndexedDbSession(chat, { userId: 'Guest', dbName });
        await s.addItems([
          { role: 'user', content: 'first question' },
          { role: 'assistant', content: 'first answer' },
          { type: 'attachment_note', role: 'user', content: 'a note the app keeps' },
          { role: 'user', content: 'second question' },
          { role: 'assistant', content: 'second answer' },
        ]);
      },
      { chat },
    );
    await reload(page);
    await page.click(`#session-list .session[data-session-id="${chat}"]`);
    await idle(page);
    assert.deepEqual(await page.$$eval('#messages .msg-edit', (bs) => bs.map((b) => b.getAttribute('aria-label'))), ['Edit message 1', 'Edit message 2']);
    assert.deepEqual(
      await page.$$eval('#messages .msg', (ms) => ms.map((m) => [m.dataset.role, m.dataset.inTurn, m.dataset.turn ?? null])),
      [['user', '1', '1'], ['assistant', '1', null], ['other', '1', null], ['user', '2', '2'], ['assistant', '2', null]],
    );
    await page.click('#messages .msg[data-turn="2"] .msg-edit');
    assert.equal(await page.inputValue('#messages .msg-editor textarea'), 'second question');
    await page.fill('#messages .msg-editor textarea', 'second question, edited');
    await page.click('#messages .msg-editor .edit-send');
    await settled(page);
    const shown = await rendered(page);
    assert.deepEqual(shown.slice(0, 4).map((m) => m.role), ['user', 'assistant', 'other', 'user']);
    assert.deepEqual([shown[0].text, shown[1].text, shown[3].text], ['first question', 'first answer', 'second question, edited'], 'turn 1 kept whole, with the note');
    assert.equal(await switcherAt(page, 2), '2/2', 'message 2 has two versions');
    assert.equal(await switcherAt(page, 1), null);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a search result of a message an edited chat still shows opens it there, on the edited version, not on the original', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await say(page, 'what is my hobby?');
    // Edit the second message: the new version shows the first message, the original's.
    await page.click('#messages .msg[data-turn="2"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'tell me about my hobby');
    await page.press('#messages .msg-editor textarea', 'Enter');
    await settled(page);
    const edited = await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent);
    assert.equal(edited, 'Branch “turn-2”');
    await searchChats(page, 'my hobby is chess');
    await openResult(page, 'my hobby is chess');
    assert.equal(await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent), edited, 'still on the edited version');
    const found = await foundMessage(page);
    assert.equal(found.role, 'user');
    assert.equal(found.text, 'my hobby is chess');
    assert.equal((await sessionsOf(page, 'Guest'))[0].currentBranch, 'turn-2');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('a search result of a message the original wrote after it was undone below an edit opens on the original: the edited version, which kept the undone turns, does not show it', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    await say(page, 'i live in rome');
    await say(page, 'i like trains');
    await page.click('#messages .msg[data-turn="3"] .msg-edit');
    await page.fill('#messages .msg-editor textarea', 'tell me about trains');
    await page.press('#messages .msg-editor textarea', 'Enter');
    await settled(page);
    // On the original: Undo twice (the edit keeps 'i live in rome'), then a new second message.
    await page.selectOption('#chat-branch', 'main');
    await idle(page);
    await page.click('#undo');
    await idle(page);
    await page.click('#undo');
    await idle(page);
    await say(page, 'i moved to madrid');
    await page.selectOption('#chat-branch', 'turn-3');
    await idle(page);
    const edited = await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent);
    await searchChats(page, 'madrid');
    await openResult(page, 'i moved to madrid');
    assert.notEqual(await page.$eval('#chat-branch', (s) => s.selectedOptions[0]?.textContent), edited, 'not on the edited version, which does not show it');
    const found = await foundMessage(page);
    assert.equal(found.text, 'i moved to madrid');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('while a reply runs, search results cannot be chosen (they open their chat once it ends); a toolbar button used from the keyboard keeps the focus through its action', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'my hobby is chess');
    assert.ok((await searchChats(page, 'chess')).length >= 1);
    assert.ok((await page.$$eval('#search-results .search-hit', (bs) => bs.map((b) => b.disabled))).every((d) => !d));
    model.state.deltaDelayMs = 40;
    model.script({ text: 'Chess is a game of two players on a board of sixty-four squares, and it is old.' });
    await saveSettings(page, async () => {
      await page.fill('#set-base-url', model.url);
      await page.fill('#set-model', 'test-model');
    });
    await page.fill('#input', 'tell me about chess');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelector('#messages .msg.streaming') !== null, null, { polling: 10 });
    assert.ok((await page.$$eval('#search-results .search-hit', (bs) => bs.map((b) => b.disabled))).every((d) => d), 'not while the reply runs');
    await settled(page);
    assert.ok((await page.$$eval('#search-results .search-hit', (bs) => bs.map((b) => b.disabled))).every((d) => !d), 'usable again');

    // Export from the keyboard: the focus is on Export again once the file is made.
    await page.focus('#export');
    const [download] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
    assert.ok(download);
    await idle(page);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'export');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('the keyboard stays where the person went while a reply ran (an API key being typed is not sent when the reply ends), and an action that disables its own button leaves it in the message box', async () => {
  const { context, page } = await openDemo();
  try {
    await say(page, 'hello');
    model.state.deltaDelayMs = 40;
    model.script({ text: 'A reply long enough to take a while, arriving in many small pieces over the stream.' });
    await saveSettings(page, async () => {
      await page.fill('#set-base-url', model.url);
      await page.fill('#set-model', 'test-model');
    });
    await page.fill('#input', 'tell me more');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelector('#messages .msg.streaming') !== null, null, { polling: 10 });
    await page.focus('#set-api-key');
    await page.keyboard.type('sk-typed-while-it-ran');
    await settled(page);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'set-api-key', 'the focus stayed in the settings');
    await page.keyboard.type('-more');
    assert.equal(await page.inputValue('#set-api-key'), 'sk-typed-while-it-ran-more');
    assert.equal(await page.inputValue('#input'), '');

    // Undo from the keyboard, of the chat's every exchange: Undo is disabled then, and the
    // message box (holding the question put back) has the keyboard, not the page's start.
    model.state.deltaDelayMs = 0;
    const id = await currentSessionId(page);
    for (let left = (await itemsOf(page, 'Guest', id)).length; left > 0; left = (await itemsOf(page, 'Guest', id)).length) {
      await page.fill('#input', '');
      await page.focus('#undo');
      await page.keyboard.press('Enter');
      await idle(page);
    }
    assert.equal(await page.isDisabled('#undo'), true);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'input');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});

test('reading back in a long chat: an action that reads the chat again (Export) leaves the reader where they were, and an edit being typed open; a new message goes to the end', async () => {
  const { context, page } = await openDemo({ viewport: { width: 1280, height: 480 } });
  try {
    for (let i = 0; i < 5; i++) await say(page, `message ${i}: ${'a longer line of text '.repeat(20)}`);
    assert.ok(await page.$eval('#messages', (m) => m.scrollHeight > m.clientHeight + 200), 'the chat scrolls');
    assert.ok(await page.$eval('#messages', (m) => m.scrollHeight - m.scrollTop - m.clientHeight < 8), 'at the end after a reply');
    await page.$eval('#messages', (m) => {
      m.scrollTop = 40;
    });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
    assert.ok(download);
    await idle(page);
    assert.equal(await page.$eval('#messages', (m) => m.scrollTop), 40, 'the place is kept');
    await say(page, 'one more');
    assert.ok(await page.$eval('#messages', (m) => m.scrollHeight - m.scrollTop - m.clientHeight < 8), 'a new message goes to the end');
    // An edit being typed is kept through an action that reads the chat again.
    await page.click('.msg[data-turn="1"] .msg-edit');
    await page.fill('.msg-editor textarea', 'an edit being typed');
    const [again] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
    assert.ok(again);
    await idle(page);
    assert.equal(await page.inputValue('.msg[data-turn="1"] .msg-editor textarea'), 'an edit being typed');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
  }
});
