// Conversation branches ("edit a message and regenerate"), turn listings and usage, on
// IndexedDbSession in a real browser: a branch shows what its parent held before its turn and
// nothing the parent does later; pops, clears and deletions on one branch never change what
// another shows; the branch last used is remembered across a reload; two tabs on two branches
// do not interfere; every bad input is refused before anything is written.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness, reload } from './harness.mjs';
import { startModelServer } from '../server/model-server.mjs';

let env;
let model;
before(async () => {
  env = await start();
  model = await startModelServer();
});
after(async () => {
  await model?.close();
  await env?.close();
});

let counter = 0;
const fresh = (p) => `${p}-${++counter}`;

/** `n` turns of a question and an answer: q1, a1, q2, a2, … */
const turns = (n, tag = '') =>
  Array.from({ length: n }, (_, i) => [
    { role: 'user', content: `q${i + 1}${tag}` },
    { role: 'assistant', content: `a${i + 1}${tag}` },
  ]).flat();
const texts = (items) => items.map((i) => (typeof i.content === 'string' ? i.content : i.content?.[0]?.text));

test('branching from turn 2 of 5: main keeps its five turns, the branch shows turn 1, and writes stay on their branch', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(
    async ({ id, chat }) => {
      const s = new lib.IndexedDbSession(id);
      await s.addItems(chat);
      const out = { before: s.currentBranch };
      out.id = await s.createBranchFromTurn(2);
      out.after = s.currentBranch;
      out.branchItems = await s.getItems();
      await s.addItems([{ role: 'user', content: 'q2 edited' }, { role: 'assistant', content: 'a2 edited' }]);
      out.branchNow = await s.getItems();
      out.branchTwo = await s.getItems(2);
      out.branchTurn = await s.getRecentTurns(1);
      out.info = await s.getInfo();
      const main = new lib.IndexedDbSession(id);
      out.main = await main.getItems();
      await main.addItems([{ role: 'user', content: 'q6' }]);
      out.branchAfterMainAdd = await s.getItems();
      out.branches = await s.listBranches();
      out.mainTurns = await main.getRecentTurns(2);
      out.listed = (await lib.listSessions()).find((x) => x.sessionId === id);
      return out;
    },
    { id: fresh('five'), chat: turns(5) },
  );
  assert.equal(r.before, 'main');
  assert.equal(r.id, 'turn-2');
  assert.equal(r.after, 'turn-2');
  assert.deepEqual(texts(r.branchItems), ['q1', 'a1']);
  assert.deepEqual(texts(r.branchNow), ['q1', 'a1', 'q2 edited', 'a2 edited']);
  assert.deepEqual(texts(r.branchTwo), ['q2 edited', 'a2 edited']);
  assert.deepEqual(texts(r.branchTurn), ['q2 edited', 'a2 edited']);
  assert.equal(r.info.itemCount, 4);
  assert.equal(r.info.turnCount, 2);
  assert.deepEqual(texts(r.main), texts(turns(5)), 'main keeps its five turns');
  assert.deepEqual(texts(r.branchAfterMainAdd), ['q1', 'a1', 'q2 edited', 'a2 edited'], "main's add is not on the branch");
  assert.deepEqual(texts(r.mainTurns), ['q5', 'a5', 'q6']);
  assert.deepEqual(
    r.branches.map((b) => [b.branchId, b.parent, b.fromTurn, b.itemCount, b.current]),
    [
      ['main', null, null, 11, false],
      ['turn-2', 'main', 2, 4, true],
    ],
  );
  assert.equal(typeof r.branches[1].createdAt, 'number');
  assert.equal(r.listed.currentBranch, 'turn-2', 'the record remembers the branch');
  assert.equal(r.listed.itemCount, 4, 'listSessions counts the items of the branch the chat is on');
});

test('listSessions counts the items and turns of the branch each chat is on, as getInfo() does: after an edit, after an edit of an edit, and back on main', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(
    async ({ id, chat }) => {
      const dbName = `list-branch-counts-${Math.random()}`;
      const s = new lib.IndexedDbSession(id, { dbName, userId: 'ann' });
      await s.addItems(chat);
      const listed = async () => {
        const [row] = await lib.listSessions({ dbName, userId: 'ann' });
        const info = await new lib.IndexedDbSession(id, { dbName, userId: 'ann', branch: row.currentBranch }).getInfo();
        return { branch: row.currentBranch, listed: [row.itemCount, row.turnCount], info: [info.itemCount, info.turnCount] };
      };
      const out = {};
      // An edit of turn 2, answered.
      await s.createBranchFromTurn(2);
      await s.addItems([{ role: 'user', content: 'q2 edited' }, { role: 'assistant', content: 'a2 again' }]);
      out.edit = await listed();
      // An edit of that edit's turn 2: a branch of a branch.
      await s.createBranchFromTurn(2);
      await s.addItems([{ role: 'user', content: 'q2 edited twice' }]);
      out.twice = await listed();
      await s.switchBranch('main');
      out.main = await listed();
      return out;
    },
    { id: fresh('list-counts'), chat: turns(4) },
  );
  assert.deepEqual(r.edit, { branch: 'turn-2', listed: [4, 2], info: [4, 2] });
  assert.deepEqual(r.twice.listed, r.twice.info);
  assert.deepEqual(r.twice.listed, [3, 2]);
  assert.deepEqual(r.main, { branch: 'main', listed: [8, 4], info: [8, 4] });
});

test('creating and deleting branches, rewrites and the archive load the second module and keep the call order; offline, MODULE_UNAVAILABLE and nothing written', async () => {
  const { page } = await openHarness(env);
  const loadedExtras = () =>
    page.evaluate(() => performance.getEntriesByType('resource').some((e) => e.name.endsWith('/agent_sessions_extras_bg.wasm')));
  const id = fresh('order');
  // Opening a chat with its branch switchers and usage needs only the main module.
  const opened = await page.evaluate(
    async ({ id, chat }) => {
      window.s = new lib.IndexedDbSession(id, { dbName: 'second-module' });
      await s.addItems(chat);
      await s.switchBranch('main');
      return {
        branches: (await s.listBranches()).length,
        turns: (await s.getTurns()).length,
        found: (await s.findTurns('q2')).length,
        usage: (await s.getSessionUsage()).turns,
      };
    },
    { id, chat: turns(2) },
  );
  assert.deepEqual(opened, { branches: 1, turns: 2, found: 1, usage: 0 });
  assert.equal(await loadedExtras(), false, 'no second module for reading branches, turns and usage');

  const attempt = (call) =>
    page.evaluate(async (call) => {
      try {
        return { value: await eval(call) };
      } catch (e) {
        return { code: e.code, message: e.message };
      }
    }, call);
  // Offline before the module was ever loaded: refused, nothing written, and the calls after it run.
  await page.route('**/extras.js', (route) => route.abort('internetdisconnected'));
  const offline = await page.evaluate(async () => {
    const created = s.createBranchFromTurn(2).catch((e) => e.code);
    const added = s.addItems([{ role: 'user', content: 'q3' }]);
    return { created: await created, added: await added, branch: s.currentBranch, branches: (await s.listBranches()).length, items: (await s.getItems()).length };
  });
  assert.deepEqual(offline, { created: 'MODULE_UNAVAILABLE', added: undefined, branch: 'main', branches: 1, items: 5 });
  await page.unroute('**/extras.js');

  // Called without awaiting: each call acts on what the calls before it left, whichever module
  // serves it.
  const r = await page.evaluate(async () => {
    const calls = [
      s.addItems([{ role: 'assistant', content: 'a3' }]),
      s.createBranchFromTurn(3, 'edit'),
      s.addItems([{ role: 'user', content: 'q3 edited' }]),
      s.getItems(),
      s.createBranchFromTurn(99).catch((e) => e.code),
      s.replaceHistoryWithCompaction([{ role: 'user', content: 'summary of the edit branch' }]),
      s.getItems(),
      s.getArchivedItems(),
      s.switchBranch('main'),
      s.deleteBranch('edit'),
      s.listBranches(),
    ];
    const out = await Promise.all(calls);
    return {
      created: out[1],
      onBranch: out[3].map((i) => i.content),
      bad: out[4],
      compacted: out[6].map((i) => i.content),
      archived: out[7].map((i) => i.content),
      branches: out[10].map((b) => b.branchId),
      branch: s.currentBranch,
      main: (await s.getItems()).map((i) => i.content),
    };
  });
  assert.deepEqual(r, {
    created: 'edit',
    onBranch: ['q1', 'a1', 'q2', 'a2', 'q3 edited'],
    bad: 'INVALID_TURN',
    compacted: ['summary of the edit branch'],
    archived: ['q1', 'a1', 'q2', 'a2', 'q3 edited'],
    branches: ['main'],
    branch: 'main',
    main: ['q1', 'a1', 'q2', 'a2', 'q3', 'a3'],
  });
  assert.equal(await loadedExtras(), true);

  // Their arguments are read when they are called: a bad one is refused before the calls made
  // earlier have finished, and items changed by the caller afterwards are stored as they were.
  const early = await page.evaluate(async () => {
    const order = [];
    const read = s.getItems().then(() => order.push('read'));
    const refused = s.deleteBranch(42).catch((e) => order.push(e.code));
    const items = [{ role: 'user', content: 'kept' }];
    const replaced = s.replaceHistory(items, { archive: false });
    items[0].content = 'changed after the call';
    items.push({ role: 'user', content: 'pushed after the call' });
    await Promise.all([read, refused, replaced]);
    return { order, items: (await s.getItems()).map((i) => i.content) };
  });
  assert.deepEqual(early, { order: ['INVALID_OPTIONS', 'read'], items: ['kept'] });

  // A closed session refuses them at once, as every other method.
  const closed = await attempt('(s.close(), s.createBranchFromTurn(1))');
  assert.equal(closed.code, 'CLOSED');
  await page.close();
});

test('pop and clear on a branch leave its parent intact, and on the parent leave the branch intact', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(
    async ({ id, chat }) => {
      const main = new lib.IndexedDbSession(id);
      await main.addItems(chat);
      const b = new lib.IndexedDbSession(id);
      await b.createBranchFromTurn(3, 'edit');
      const out = {};
      // b shows q1 a1 q2 a2: popping goes into what it shares with main.
      out.popped = [await b.popItem(), await b.popItem(), await b.popItem()];
      out.b = await b.getItems();
      out.main = await main.getItems();
      await b.addItems([{ role: 'user', content: 'new' }]);
      out.bAfterAdd = await b.getItems();
      // A branch at main's tip shares all of it; main pops and clears under it.
      const tip = new lib.IndexedDbSession(id);
      await tip.createBranchFromTurn(3, 'tip');
      await tip.addItems([{ role: 'user', content: 'q3 again' }]);
      out.mainPopped = [await main.popItem(), await main.popItem(), await main.popItem()];
      out.mainAfterPop = await main.getItems();
      out.tipAfterMainPop = await tip.getItems();
      await main.clearSession();
      out.mainAfterClear = await main.getItems();
      out.tipAfterMainClear = await tip.getItems();
      out.bAfterMainClear = await b.getItems();
      out.tipTurns = await tip.getRecentTurns(1);
      await main.addItems([{ role: 'user', content: 'fresh start' }]);
      out.mainAgain = await main.getItems();
      await b.clearSession();
      out.bAfterClear = await b.getItems();
      out.tipAfterBClear = await tip.getItems();
      out.mainAfterBClear = await main.getItems();
      out.counts = (await main.listBranches()).map((x) => [x.branchId, x.itemCount]);
      return out;
    },
    { id: fresh('popclear'), chat: turns(3) },
  );
  assert.deepEqual(texts(r.popped), ['a2', 'q2', 'a1']);
  assert.deepEqual(texts(r.b), ['q1']);
  assert.deepEqual(texts(r.main), texts(turns(3)), 'main untouched by the pops');
  assert.deepEqual(texts(r.bAfterAdd), ['q1', 'new']);
  assert.deepEqual(texts(r.mainPopped), ['a3', 'q3', 'a2']);
  assert.deepEqual(texts(r.mainAfterPop), ['q1', 'a1', 'q2']);
  assert.deepEqual(texts(r.tipAfterMainPop), ['q1', 'a1', 'q2', 'a2', 'q3 again'], 'the branch keeps what main popped');
  assert.deepEqual(r.mainAfterClear, []);
  assert.deepEqual(texts(r.tipAfterMainClear), ['q1', 'a1', 'q2', 'a2', 'q3 again']);
  assert.deepEqual(texts(r.bAfterMainClear), ['q1', 'new']);
  assert.deepEqual(texts(r.tipTurns), ['q3 again']);
  assert.deepEqual(texts(r.mainAgain), ['fresh start']);
  assert.deepEqual(r.bAfterClear, []);
  assert.deepEqual(texts(r.tipAfterBClear), ['q1', 'a1', 'q2', 'a2', 'q3 again']);
  assert.deepEqual(texts(r.mainAfterBClear), ['fresh start']);
  assert.deepEqual(r.counts, [['main', 1], ['edit', 0], ['tip', 5]]);
});

/**
 * Opens the harness with two helpers in the page: `editedChat(id, chat)` stores `chat` and
 * branches it from turn 3 as `edit`, and gives two new objects on `edit` (`a` reads, `b` writes);
 * `countReads(proto, name, read)` counts the `getAll` requests on the stores or indexes of
 * `proto` named `name` that each `counted.read()` (one call of `read`) makes, into
 * `counted.asked`, and its items' contents into `counted.reads`, until `counted.stop()`.
 */
async function openCountingHarness() {
  const { page } = await openHarness(env);
  await page.evaluate(() => {
    window.editedChat = async (id, chat) => {
      const maker = new lib.IndexedDbSession(id);
      await maker.addItems(chat);
      await maker.createBranchFromTurn(3, 'edit');
      return { a: new lib.IndexedDbSession(id, { branch: 'edit' }), b: new lib.IndexedDbSession(id, { branch: 'edit' }) };
    };
    window.countReads = (proto, name, read) => {
      let requests = 0;
      const getAll = proto.getAll;
      proto.getAll = function (...args) {
        if (this.name === name) requests += 1;
        return getAll.apply(this, args);
      };
      const counted = { reads: [], asked: [], stop: () => (proto.getAll = getAll) };
      counted.read = async () => {
        const before = requests;
        counted.reads.push((await read()).map((i) => i.content));
        counted.asked.push(requests - before);
      };
      return counted;
    };
  });
  return page;
}

test('a read of a branch\'s newest items asks for the rows it read last time with the record, and reads what the branch holds after another object changed it', async () => {
  const page = await openCountingHarness();
  const r = await page.evaluate(
    async ({ id, chat }) => {
      const { a, b } = await editedChat(id, chat);
      const onMain = new lib.IndexedDbSession(id);
      // The message rows each read asks for.
      const { read, reads, asked, stop } = countReads(IDBObjectStore.prototype, 'agent_messages', () => a.getItems(3));
      await read(); // a new object: the record, then the rows it names
      await read(); // nothing changed: the rows asked with the record are the ones
      await b.addItems([{ role: 'user', content: 'q3 edited' }]);
      await read(); // the branch grew: its own rows now, besides main's
      await read();
      await b.popItem();
      await b.addItems([{ role: 'user', content: 'q3 again' }]);
      await read(); // as long as before, another newest item
      // Main gives up rows the branch shows: they are copied to the branch's own storage.
      await onMain.popItem();
      await onMain.popItem();
      await onMain.popItem();
      await read();
      await read();
      await b.clearSession();
      await read();
      await b.addItems([{ role: 'user', content: 'fresh' }]);
      await read();
      // The reader's own writes leave it knowing what its next read asks for.
      await a.addItems([{ role: 'assistant', content: 'a fresh' }]);
      await read();
      await a.popItem();
      await read();
      stop();
      return { reads, asked, main: (await onMain.getItems()).map((i) => i.content) };
    },
    { id: fresh('asked-with-record'), chat: turns(3) },
  );
  assert.deepEqual(r.reads, [
    ['a1', 'q2', 'a2'],
    ['a1', 'q2', 'a2'],
    ['q2', 'a2', 'q3 edited'],
    ['q2', 'a2', 'q3 edited'],
    ['q2', 'a2', 'q3 again'],
    ['q2', 'a2', 'q3 again'],
    ['q2', 'a2', 'q3 again'],
    [],
    ['fresh'],
    ['fresh', 'a fresh'],
    ['fresh'],
  ]);
  assert.deepEqual(r.main, ['q1', 'a1', 'q2']);
  // One request per part of storage the view spans (main's rows, the branch's own): the parts
  // the last read named, sent with the record, and the parts the record names after it only
  // where they differ (a new object; the branch grown by another object; main's rows copied to
  // the branch).
  assert.deepEqual(r.asked, [1, 1, 1 + 2, 2, 2, 2 + 2, 2, 2, 1, 1, 1]);
});

test("a read of a branch's newest turns asks for the turns it read last time with the record, and reads what the branch holds after another object changed it", async () => {
  const page = await openCountingHarness();
  const r = await page.evaluate(
    async ({ id, chat }) => {
      const { a, b } = await editedChat(id, chat);
      // The reads of the turn index each read asks for.
      const { read, reads, asked, stop } = countReads(IDBIndex.prototype, 'by_turn', () => a.getRecentTurns(2));
      await read(); // a new object: the record, then the turns it names
      await read(); // nothing changed: the turns asked with the record are the ones
      await b.addItems([{ role: 'user', content: 'q3 edited' }, { role: 'assistant', content: 'a3 edited' }]);
      await read(); // the branch grew: a turn of its own now, besides main's
      await read();
      const items = (await a.getItems(1)).map((i) => i.content); // a read of items in between
      await read();
      await b.popItem();
      await b.addItems([{ role: 'assistant', content: 'a3 again' }]);
      await read(); // the same turns and parts of storage: what was asked is the answer
      await b.clearSession();
      await read();
      await b.addItems([{ role: 'user', content: 'fresh' }]);
      await read();
      // The reader's own writes leave it knowing what its next read asks for.
      await a.addItems([{ role: 'assistant', content: 'a fresh' }, { role: 'user', content: 'q next' }]);
      await read();
      await a.popItem();
      await read();
      stop();
      return { reads, asked, items, main: (await new lib.IndexedDbSession(id).getItems()).map((i) => i.content) };
    },
    { id: fresh('turns-with-record'), chat: turns(4) },
  );
  assert.deepEqual(r.reads, [
    ['q1', 'a1', 'q2', 'a2'],
    ['q1', 'a1', 'q2', 'a2'],
    ['q2', 'a2', 'q3 edited', 'a3 edited'],
    ['q2', 'a2', 'q3 edited', 'a3 edited'],
    ['q2', 'a2', 'q3 edited', 'a3 edited'],
    ['q2', 'a2', 'q3 edited', 'a3 again'],
    [],
    ['fresh'],
    ['fresh', 'a fresh', 'q next'],
    ['fresh', 'a fresh'],
  ]);
  assert.deepEqual(r.items, ['a3 edited']);
  assert.deepEqual(r.main, texts(turns(4)));
  // One request per part of storage holding the turns (main's rows, the branch's own): those the
  // last read named, sent with the record, and those the record names after it only where they
  // differ (a new object; the branch grown by another object; a read of items in between; the
  // branch cleared).
  assert.deepEqual(r.asked, [1, 1, 1 + 2, 2, 2, 2, 2, 1, 1, 1]);
});

test('delete a branch; the branch used last survives a reload; branches of branches keep what they show', async () => {
  const { page } = await openHarness(env);
  const id = fresh('reload');
  const r = await page.evaluate(
    async ({ id, chat }) => {
      const s = new lib.IndexedDbSession(id);
      await s.addItems(chat);
      await s.createBranchFromTurn(3, 'a');
      await s.addItems([{ role: 'user', content: 'q3 on a' }, { role: 'assistant', content: 'a3 on a' }]);
      await s.createBranchFromContent('Q3 ON', 'b'); // case-insensitive; from a's turn 3
      await s.addItems([{ role: 'user', content: 'q3 on b' }]);
      const out = { b: await s.getItems() };
      await s.switchBranch('main');
      out.mainNow = s.currentBranch;
      await s.deleteBranch('a');
      out.bAfterDelete = await new lib.IndexedDbSession(id, { branch: 'b' }).getItems();
      out.branches = (await s.listBranches()).map((x) => [x.branchId, x.parent, x.fromTurn, x.itemCount]);
      await s.switchBranch('b');
      return out;
    },
    { id, chat: turns(4) },
  );
  assert.deepEqual(texts(r.b), ['q1', 'a1', 'q2', 'a2', 'q3 on b']);
  assert.equal(r.mainNow, 'main');
  assert.deepEqual(texts(r.bAfterDelete), ['q1', 'a1', 'q2', 'a2', 'q3 on b'], "b keeps what it showed of a's");
  // b was made from a to replace a's turn 3; a from main to replace main's: b is main's from then on.
  assert.deepEqual(r.branches, [['main', null, null, 8], ['b', 'main', 3, 5]]);
  await reload(page);
  const after = await page.evaluate(async (id) => {
    const [info] = (await lib.listSessions()).filter((x) => x.sessionId === id);
    const s = new lib.IndexedDbSession(id, { branch: info.currentBranch });
    return { remembered: info.currentBranch, items: await s.getItems(), main: await new lib.IndexedDbSession(id).getItems() };
  }, id);
  assert.equal(after.remembered, 'b');
  assert.deepEqual(texts(after.items), ['q1', 'a1', 'q2', 'a2', 'q3 on b']);
  assert.deepEqual(texts(after.main), texts(turns(4)));
});

// A write rebuilds the session record's entry of each branch it changes and keeps the others as
// they were stored: a field this version does not know (one a newer version wrote) survives on a
// branch that was not written to.
test('writes on one branch keep the stored entries of the others as they were, fields this version does not know included, also when a delete moves them', async () => {
  const { page } = await openHarness(env);
  const id = fresh('entries');
  const dbName = fresh('entries-db');
  const r = await page.evaluate(
    async ({ id, dbName, chat }) => {
      const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
      /** The session's record, changed by `change` when given. */
      const record = async (change) => {
        const db = await request(indexedDB.open(dbName));
        const tx = db.transaction('agent_sessions', 'readwrite');
        const value = await request(tx.objectStore('agent_sessions').get(id));
        if (change) {
          change(value);
          tx.objectStore('agent_sessions').put(value);
        }
        await new Promise((ok) => (tx.oncomplete = ok));
        db.close();
        return value;
      };
      const s = new lib.IndexedDbSession(id, { dbName });
      await s.addItems(chat);
      await s.createBranchFromTurn(2, 'a');
      await s.switchBranch('main');
      await s.createBranchFromTurn(3, 'b');
      await s.switchBranch('main');
      await record((v) => {
        for (const b of v.branches) b.later = { from: 'a newer version', of: b.id };
      });
      // On main, then on b: a's entry is not touched by either; b's is, by the second.
      await s.addItems([{ role: 'user', content: 'q5' }]);
      await s.switchBranch('b');
      await s.addItems([{ role: 'user', content: 'q3 on b' }]);
      await s.popItem();
      await s.addItems([{ role: 'user', content: 'q3 again on b' }, { role: 'assistant', content: 'a3 on b' }]);
      await s.createBranchFromTurn(3, 'c');
      const stored = await record();
      const read = {
        entries: stored.branches.map((b) => [b.id, b.later?.of ?? null]),
        b: await new lib.IndexedDbSession(id, { dbName, branch: 'b' }).getItems(),
        a: await new lib.IndexedDbSession(id, { dbName, branch: 'a' }).getItems(),
        main: await new lib.IndexedDbSession(id, { dbName }).getItems(),
      };
      // A branch deleted before them moves the others up: each keeps its entry all the same.
      await record((v) => {
        for (const b of v.branches) b.later = { from: 'a newer version', of: b.id };
      });
      await s.switchBranch('main');
      await s.deleteBranch('a');
      return { ...read, moved: (await record()).branches.map((b) => [b.id, b.later?.of ?? null]) };
    },
    { id, dbName, chat: turns(4) },
  );
  assert.deepEqual(r.entries, [['a', 'a'], ['b', null], ['c', null]], 'a kept its entry; b and c were written by this version');
  assert.deepEqual(r.moved, [['b', 'b'], ['c', 'c']], 'moved up by a delete, b and c kept theirs');
  assert.deepEqual(texts(r.a), ['q1', 'a1']);
  assert.deepEqual(texts(r.b), ['q1', 'a1', 'q2', 'a2', 'q3 again on b', 'a3 on b']);
  assert.deepEqual(texts(r.main), [...texts(turns(4)), 'q5']);
});

test('two tabs on two branches of one session do not interfere', async () => {
  const { page, context } = await openHarness(env);
  const { page: other } = await openHarness(env, context);
  const id = fresh('tabs');
  await page.evaluate(
    async ({ id, chat }) => {
      const s = new lib.IndexedDbSession(id);
      await s.addItems(chat);
      await s.createBranchFromTurn(2, 'left');
      await s.switchBranch('main');
      await s.createBranchFromTurn(2, 'right');
    },
    { id, chat: turns(2) },
  );
  const write = (p, branch) =>
    p.evaluate(
      async ({ id, branch }) => {
        const s = new lib.IndexedDbSession(id, { branch });
        for (let i = 0; i < 20; i++) {
          await s.addItems([{ role: 'user', content: `${branch} ${i}` }, { role: 'assistant', content: `${branch} answer ${i}` }]);
          if (i % 5 === 4) await s.popItem();
        }
        return s.getItems();
      },
      { id, branch },
    );
  const [left, right] = await Promise.all([write(page, 'left'), write(other, 'right')]);
  const check = (items, branch) => {
    assert.deepEqual(texts(items.slice(0, 2)), ['q1', 'a1']);
    assert.ok(items.slice(2).every((i) => i.content.startsWith(branch)), `${branch} holds only its own writes`);
    assert.equal(items.length, 2 + 40 - 4);
  };
  check(left, 'left');
  check(right, 'right');
  const main = await page.evaluate((id) => new lib.IndexedDbSession(id).getItems(), id);
  assert.deepEqual(texts(main), texts(turns(2)));
});

// A branch deleted in one tab and created again under its name (a name `createBranchFromTurn`
// picks, `turn-<n>`, comes back the same way) is another branch: an object of another tab that
// was on the deleted one refuses to read or write it, until it switches onto it.
test('an object on a branch another tab deleted and created again under its name refuses it until it switches', async () => {
  const { page, context } = await openHarness(env);
  const { page: other } = await openHarness(env, context);
  const id = fresh('reused');
  const first = await page.evaluate(
    async ({ id, chat }) => {
      window.kept = new lib.IndexedDbSession(id);
      await kept.addItems(chat);
      const name = await kept.createBranchFromTurn(2);
      await kept.addItems([{ role: 'user', content: 'old branch' }]);
      // This one learns which branch it is on from a method the second module serves.
      window.late = new lib.IndexedDbSession(id, { branch: name });
      await late.getArchivedItems();
      return name;
    },
    { id, chat: turns(3) },
  );
  assert.equal(first, 'turn-2');
  const again = await other.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id);
    await s.deleteBranch('turn-2');
    const name = await s.createBranchFromTurn(2);
    await s.addItems([{ role: 'user', content: 'new branch' }]);
    return name;
  }, id);
  assert.equal(again, 'turn-2', 'the name comes back');
  const r = await page.evaluate(async (id) => {
    const failed = async (f) => {
      try {
        await f();
        return 'resolved';
      } catch (e) {
        return `${e.name} ${e.code}: ${e.message}`;
      }
    };
    const out = {
      add: await failed(() => kept.addItems([{ role: 'user', content: 'lost' }])),
      get: await failed(() => kept.getItems()),
      pop: await failed(() => kept.popItem()),
      clear: await failed(() => kept.clearSession()),
      turns: await failed(() => kept.getTurns()),
      usage: await failed(() => kept.storeRunUsage({ inputTokens: 1, outputTokens: 1 })),
      turnUsage: await failed(() => kept.getTurnUsage()),
      toolUsage: await failed(() => kept.getToolUsage()),
      info: await failed(() => kept.getInfo()),
      fork: await failed(() => kept.createBranchFromTurn(1)),
      rewrite: await failed(() => kept.replaceHistory([{ role: 'user', content: 'lost' }])),
      update: await failed(() => kept.update({ title: 'lost' })),
      lateGet: await failed(() => late.getItems()),
      current: kept.currentBranch,
      listed: (await kept.listBranches()).map((b) => [b.branchId, b.current]),
      named: (await kept.getTurns({ branch: 'turn-2' })).map((t) => t.content),
      namedUsage: (await kept.getSessionUsage({ branch: 'turn-2' })).requests,
      fresh: await new lib.IndexedDbSession(id, { branch: 'turn-2' }).getItems(),
    };
    await kept.switchBranch('turn-2');
    out.switched = await kept.getItems();
    await kept.addItems([{ role: 'assistant', content: 'answer on the new branch' }]);
    out.after = await new lib.IndexedDbSession(id, { branch: 'turn-2' }).getItems();
    out.listedAfter = (await kept.listBranches()).map((b) => [b.branchId, b.current]);
    return out;
  }, id);
  const refused = `SessionError BRANCH_NOT_FOUND: the branch "turn-2" this object was on was deleted from session "${id}", and the branch of that name there now is another one; switchBranch("turn-2") moves onto it`;
  for (const k of ['add', 'get', 'pop', 'clear', 'turns', 'usage', 'turnUsage', 'toolUsage', 'info', 'fork', 'rewrite', 'update', 'lateGet']) {
    assert.equal(r[k], refused, k);
  }
  assert.equal(r.current, 'turn-2');
  assert.deepEqual(r.listed, [['main', false], ['turn-2', false]], 'the new branch is not this object\'s');
  assert.deepEqual(r.named, ['q1', 'new branch'], 'a call naming the branch reads the one there now');
  assert.equal(r.namedUsage, 0);
  const newBranch = ['q1', 'a1', 'new branch'];
  assert.deepEqual(texts(r.fresh), newBranch, 'nothing was written by the refused calls');
  assert.deepEqual(texts(r.switched), newBranch);
  assert.deepEqual(texts(r.after), [...newBranch, 'answer on the new branch']);
  assert.deepEqual(r.listedAfter, [['main', false], ['turn-2', true]]);
});

test('a branch deleted and created again under its name within the same millisecond is still another branch to an object that was on it', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async ({ id, chat }) => {
    const kept = new lib.IndexedDbSession(id);
    const other = new lib.IndexedDbSession(id);
    await kept.addItems(chat);
    // Every call below sees the same time, as calls made in one go on a fast machine do.
    const realNow = Date.now;
    const at = realNow();
    Date.now = () => at;
    try {
      await kept.createBranchFromTurn(2, 'x');
      await other.deleteBranch('x');
      await other.createBranchFromTurn(2, 'x');
    } finally {
      Date.now = realNow;
    }
    let add;
    try {
      await kept.addItems([{ role: 'user', content: 'lost' }]);
      add = 'resolved';
    } catch (e) {
      add = `${e.name} ${e.code}`;
    }
    return { add, items: (await other.getItems()).map((i) => i.content), times: (await other.listBranches()).map((b) => b.createdAt - at) };
  }, { id: fresh('same-ms'), chat: turns(3) });
  assert.equal(r.add, 'SessionError BRANCH_NOT_FOUND');
  assert.deepEqual(r.items, ['q1', 'a1'], 'nothing written on the new branch');
  assert.deepEqual(r.times.slice(1), [1], 'the second branch made in that millisecond is dated the one after');
});

test('getTurns and findTurns: user turns with their text, case-insensitive, CJK included', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id);
    await s.addItems([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: '東京の天気は？' },
      { type: 'function_call', callId: 'c1', name: 'weather', arguments: '{"city":"Tokyo"}' },
      { type: 'function_call_result', callId: 'c1', output: 'sunny' },
      { role: 'assistant', content: '晴れです' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And in OSAKA?' }] },
      { type: 'function_call', callId: 'c2', name: 'weather', arguments: '{"city":"Osaka"}' },
      { type: 'function_call', callId: 'c3', name: 'map', arguments: '{}' },
      { role: 'assistant', content: 'rain' },
      { role: 'user', content: 'İstanbul next week' },
      { role: 'user', content: 'καλησπέρα σας' },
    ]);
    return {
      turns: await s.getTurns(),
      tokyo: await s.findTurns('東京'),
      osaka: await s.findTurns('osaka'),
      none: await s.findTurns('kyoto'),
      // The dotted capital, as search folds it: either way round.
      istanbul: [await s.findTurns('istanbul'), await s.findTurns('İSTANBUL')],
      // A capital sigma ending the query lowers to the final form, the same letter inside a word
      // to the other: either matches.
      sigma: [await s.findTurns('ΚΑΛΗΣ'), await s.findTurns('καλης')],
      tools: await s.getToolUsage(),
    };
  }, fresh('turns'));
  assert.deepEqual(
    r.turns.map((t) => [t.turn, t.content, t.itemCount]),
    [
      [1, '東京の天気は？', 4],
      [2, 'And in OSAKA?', 4],
      [3, 'İstanbul next week', 1],
      [4, 'καλησπέρα σας', 1],
    ],
  );
  assert.deepEqual(r.sigma.map((found) => found.map((t) => t.turn)), [[4], [4]]);
  assert.deepEqual(r.istanbul.map((found) => found.map((t) => t.turn)), [[3], [3]]);
  assert.equal(typeof r.turns[0].createdAt, 'number');
  assert.deepEqual(r.tokyo.map((t) => t.turn), [1]);
  assert.deepEqual(r.osaka.map((t) => t.turn), [2]);
  assert.deepEqual(r.none, []);
  assert.deepEqual(r.tools, [
    { name: 'weather', count: 1, turn: 1 },
    { name: 'weather', count: 1, turn: 2 },
    { name: 'map', count: 1, turn: 2 },
  ]);
});

for (const kind of ['indexeddb', 'memory']) test(`${kind}: usage: stored per turn and branch, summed per session and per branch, read per turn of any branch`, async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async ({ kind, id, chat }) => {
    const s = make(kind, id);
    await s.addItems(chat.slice(0, 2));
    await s.storeRunUsage({ requests: 1, inputTokens: 10, outputTokens: 5 });
    await s.addItems(chat.slice(2, 4));
    await s.storeRunUsage({ requests: 2, inputTokens: 20, outputTokens: 8, totalTokens: 30 });
    await s.storeRunUsage({ requests: 1, inputTokens: 1, outputTokens: 1 });
    await s.createBranchFromTurn(2, 'alt');
    await s.addItems([{ role: 'user', content: 'q2 alt' }]);
    await s.storeRunUsage({ requests: 1, inputTokens: 7, outputTokens: 3 });
    const out = {
      session: await s.getSessionUsage(),
      alt: await s.getSessionUsage({ branch: 'alt' }),
      main: await s.getSessionUsage({ branch: 'main' }),
      altTurns: await s.getTurnUsage(),
      altTurn2: await s.getTurnUsage(2),
      altTurn1: await s.getTurnUsage(1),
      // Another branch's, as the Python SDK's get_turn_usage(turn, branch_id) reads it, without
      // moving onto it.
      mainFromAlt: await s.getTurnUsage(null, { branch: 'main' }),
      mainTurn1FromAlt: await s.getTurnUsage(1, { branch: 'main' }),
      unknownBranch: await outcome(() => s.getTurnUsage(1, { branch: 'nope' })),
      misspelt: await outcome(() => s.getTurnUsage(1, { branchId: 'main' })),
      stillOn: s.currentBranch,
    };
    await s.switchBranch('main');
    out.mainTurns = await s.getTurnUsage();
    await s.deleteBranch('alt');
    out.afterDelete = await s.getSessionUsage();
    return out;
  }, { kind, id: fresh(`usage-${kind}`), chat: turns(2) });
  assert.deepEqual(r.session, { requests: 5, inputTokens: 38, outputTokens: 17, totalTokens: 57, turns: 3 });
  assert.deepEqual(r.alt, { requests: 1, inputTokens: 7, outputTokens: 3, totalTokens: 10, turns: 1 });
  assert.deepEqual(r.main, { requests: 4, inputTokens: 31, outputTokens: 14, totalTokens: 47, turns: 2 });
  assert.deepEqual(r.altTurns, [{ turn: 2, requests: 1, inputTokens: 7, outputTokens: 3, totalTokens: 10 }]);
  assert.deepEqual(r.altTurn2, r.altTurns[0]);
  assert.equal(r.altTurn1, null);
  assert.deepEqual(r.mainTurns, [
    { turn: 1, requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 },
    { turn: 2, requests: 3, inputTokens: 21, outputTokens: 9, totalTokens: 32 },
  ]);
  assert.deepEqual(r.afterDelete, r.main, "a deleted branch's usage goes with it");
  assert.deepEqual(r.mainFromAlt, r.mainTurns);
  assert.deepEqual(r.mainTurn1FromAlt, r.mainTurns[0]);
  assert.equal(r.unknownBranch, 'SessionError BRANCH_NOT_FOUND');
  assert.equal(r.misspelt, 'SessionError INVALID_OPTIONS');
  assert.equal(r.stillOn, 'alt');
});

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: getToolUsage counts the calls of the computer, shell and apply-patch tools as those tools, beside function and hosted tool calls`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const s = make(kind, id);
        await s.addItems([
          { role: 'user', content: 'fix the build' },
          { type: 'function_call', callId: 'f1', name: 'read_file', arguments: '{}', status: 'completed' },
          { type: 'function_call_result', callId: 'f1', name: 'read_file', status: 'completed', output: 'ok' },
          { type: 'shell_call', callId: 's1', status: 'completed', action: { commands: ['make'] } },
          { type: 'shell_call', callId: 's2', status: 'completed', action: { commands: ['make test'] } },
          { type: 'apply_patch_call', callId: 'p1', status: 'completed', operation: { type: 'update_file', path: 'a.c', diff: '' } },
          { type: 'computer_call', callId: 'c1', status: 'completed', action: { type: 'screenshot' } },
          { type: 'hosted_tool_call', name: 'web_search_call', status: 'completed' },
          { role: 'assistant', content: 'fixed' },
        ]);
        return (await s.getToolUsage()).map((u) => `${u.turn} ${u.name} ${u.count}`).sort();
      },
      { kind, id: fresh(`tool-kinds-${kind}`) },
    );
    assert.deepEqual(r, ['1 apply_patch 1', '1 computer 1', '1 read_file 1', '1 shell 2', '1 web_search_call 1']);
  });
}

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: after a compaction numbers the kept turns from 1, their usage and their branches follow them`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const s = make(kind, id);
        for (let n = 1; n <= 6; n++) {
          await s.addItems([{ role: 'user', content: `q${n}` }, { role: 'assistant', content: `a${n}` }]);
          await s.storeRunUsage({ requests: 1, inputTokens: n, outputTokens: 0 });
        }
        // An edit of turn 5, made before the compaction.
        await s.createBranchFromTurn(5, 'edit5');
        await s.switchBranch('main');
        const kept = (await s.getItems()).slice(8); // q5 a5 q6 a6
        await s.replaceHistoryWithCompaction([{ type: 'compaction', encrypted_content: 'turns 1 to 4' }, ...kept]);
        const afterCompaction = await s.getTurnUsage();
        await s.addItems([{ role: 'user', content: 'q7' }, { role: 'assistant', content: 'a7' }]);
        await s.storeRunUsage({ requests: 1, inputTokens: 700, outputTokens: 0 });
        return {
          turns: (await s.getTurns()).map((t) => `${t.turn}:${t.content ?? t.text ?? ''}`),
          afterCompaction: afterCompaction.map((u) => [u.turn, u.inputTokens]),
          newTurn: await s.getTurnUsage(3),
          session: await s.getSessionUsage(),
          edit: (await s.listBranches()).find((b) => b.branchId === 'edit5'),
        };
      },
      { kind, id: fresh(`compacted-usage-${kind}`) },
    );
    // Turns 5 and 6 are now turns 1 and 2; what turns 1 to 4 used stands with the summary (0).
    assert.deepEqual(r.afterCompaction, [[0, 10], [1, 5], [2, 6]]);
    assert.equal(r.newTurn.inputTokens, 700, 'the new turn 3 has its own usage, not old turn 3’s added');
    assert.equal(r.newTurn.requests, 1);
    assert.equal(r.session.inputTokens, 721, 'nothing lost or counted twice');
    assert.equal(r.edit.fromTurn, 1, 'the edit of q5 still names q5’s turn');
  });

  test(`${kind}: a branch compacted whole shows none of its parent’s turns: its fromTurn is 0, as after a clear; written again whole with every turn kept, it keeps it`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const s = make(kind, id);
        for (let n = 1; n <= 3; n++) await s.addItems([{ role: 'user', content: `q${n}` }, { role: 'assistant', content: `a${n}` }]);
        await s.createBranchFromTurn(3, 'edit3');
        for (let n = 4; n <= 5; n++) await s.addItems([{ role: 'user', content: `q${n}` }, { role: 'assistant', content: `a${n}` }]);
        const before = (await s.listBranches()).find((b) => b.branchId === 'edit3').fromTurn;
        // Written again whole, every turn kept (as an encrypted chat's rewrite does): still made from turn 3.
        await s.replaceHistory(await s.getItems(), { archive: false });
        const rewritten = (await s.listBranches()).find((b) => b.branchId === 'edit3').fromTurn;
        const kept = (await s.getItems()).slice(-2);
        await s.replaceHistoryWithCompaction([{ type: 'compaction', encrypted_content: 'turns 1, 2 and 4' }, ...kept]);
        const branches = await s.listBranches();
        return { before, rewritten, after: branches.find((b) => b.branchId === 'edit3').fromTurn, items: (await s.getItems()).length };
      },
      { kind, id: fresh(`compacted-branch-${kind}`) },
    );
    assert.deepEqual(r, { before: 3, rewritten: 3, after: 0, items: 3 });
  });
}

// Three turns: q1 a1, q2 a2, q3 a3.
const THREE_TURNS = [1, 2, 3].flatMap((n) => [
  { role: 'user', content: `q${n}` },
  { role: 'assistant', content: `a${n}` },
]);

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: a turn a branch inherited, popped away there, takes the branch’s usage of it along: never to the branch it was made from, whose turn it is`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id, turns }) => {
        const s = make(kind, id);
        await s.addItems(turns);
        await s.storeRunUsage({ requests: 1, inputTokens: 100, outputTokens: 0 });
        // Editing q3: the branch shows turns 1 and 2, main's. A run that failed there stores
        // its usage on the newest turn the branch shows, turn 2.
        await s.createBranchFromTurn(3, 'edit');
        await s.storeRunUsage({ requests: 1, inputTokens: 10, outputTokens: 5 });
        // Undo q2 on the branch.
        await s.popItem();
        await s.popItem();
        const items = (await s.getItems()).map((i) => i.content);
        const main = (await s.getSessionUsage({ branch: 'main' })).inputTokens;
        const session = (await s.getSessionUsage()).inputTokens;
        await s.switchBranch('main');
        return { items, main, session, mainTurn2: await s.getTurnUsage(2) };
      },
      { kind, id: fresh(`inherited-usage-${kind}`), turns: THREE_TURNS },
    );
    assert.deepEqual(r.items, ['q1', 'a1']);
    assert.equal(r.main, 100, 'main keeps its own usage only');
    assert.equal(r.mainTurn2, null, 'main’s turn 2 was given none');
    assert.equal(r.session, 100, 'the undone run is not counted');
  });

  for (const how of ['popItem', 'a history transaction']) {
    test(`${kind}: a turn a branch inherited, taken away there by ${how}, hands the branch’s usage of it to a branch made from it that still shows the turn`, async () => {
      const { page } = await openHarness(env);
      const r = await page.evaluate(
        async ({ kind, id, turns, how }) => {
          const s = make(kind, id);
          await s.addItems(turns);
          // Editing q3: the branch shows main's turns 1 and 2, and stores a run's usage on turn 2.
          await s.createBranchFromTurn(3, 'edit');
          await s.storeRunUsage({ requests: 1, inputTokens: 10, outputTokens: 5 });
          await s.addItems([{ role: 'user', content: 'q3x' }, { role: 'assistant', content: 'a3x' }]);
          // A branch made from the edit's turn 3: it shows turns 1 and 2 as the edit does.
          await s.createBranchFromTurn(3, 'child');
          await s.switchBranch('edit');
          // Turn 3 and then turn 2 undone on the edit.
          const items = await s.getItems();
          if (how === 'popItem') {
            for (let i = 0; i < 4; i++) await s.popItem();
          } else {
            await s.applyHistoryTransaction({ operationId: 'undo', transaction: { type: 'replace_suffix', expectedSuffix: items.slice(-4), replacement: [] } });
          }
          const r = {
            edit: (await s.getItems()).map((i) => i.content),
            childTurn2: await s.getTurnUsage(2, { branch: 'child' }),
            editUsage: (await s.getSessionUsage({ branch: 'edit' })).requests,
            session: (await s.getSessionUsage()).inputTokens,
          };
          await s.switchBranch('child');
          return { ...r, child: (await s.getItems()).map((i) => i.content) };
        },
        { kind, id: fresh(`inherited-heir-${kind}-${how.length}`), turns: THREE_TURNS, how },
      );
      assert.deepEqual(r.edit, ['q1', 'a1']);
      assert.deepEqual(r.child, ['q1', 'a1', 'q2', 'a2'], 'the child still shows turn 2');
      assert.deepEqual(r.childTurn2, { turn: 2, requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }, 'its usage went with it');
      assert.equal(r.editUsage, 0);
      assert.equal(r.session, 10, 'the session’s usage keeps the run that turn 2 still shows');
    });
  }
}

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: after a clear, a turn popped away takes its usage with it though a branch was made from a later turn before the clear`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const u = (t) => ({ role: 'user', content: t });
        const a = (t) => ({ role: 'assistant', content: t });
        const s = make(kind, id);
        await s.addItems([u('q1'), a('a1'), u('q2'), a('a2'), u('q3'), a('a3')]);
        await s.createBranchFromTurn(3, 'edit3');
        await s.switchBranch('main');
        await s.clearSession();
        await s.addItems([u('n1'), a('r1'), u('n2'), a('r2')]);
        await s.storeRunUsage({ requests: 1, inputTokens: 100, outputTokens: 0 });
        // Undo turn 2, and answer it again.
        await s.popItem();
        await s.popItem();
        await s.addItems([u('n2b'), a('r2b')]);
        await s.storeRunUsage({ requests: 1, inputTokens: 5, outputTokens: 0 });
        const noMatch = await s.createBranchFromContent('NOT Here').then(() => 'made', (e) => `${e.code} ${e.message}`);
        const usage = {
          turn: await s.getTurnUsage(2),
          session: (await s.getSessionUsage()).inputTokens,
        };
        // A branch that shows no items has no turn for usage: named as the branch, in both stores.
        await s.createBranchFromTurn(1, 'from-start');
        const noTurn = await s.storeRunUsage({ requests: 1, inputTokens: 1, outputTokens: 0 }).then(() => 'stored', (e) => `${e.code} ${e.message}`);
        // Undo on it before anything is written pops nothing, and changes nothing.
        const emptyPop = await s.popItem();
        const fromStart = (await s.listBranches()).find((b) => b.branchId === 'from-start').fromTurn;
        const edit = (await s.listBranches()).find((b) => b.branchId === 'edit3').fromTurn;
        const editItems = (await s.switchBranch('edit3'), (await s.getItems()).map((i) => i.content));
        // A branch of a branch that is deleted: it keeps what it shows, and is made from the
        // deleted one's parent from then on (here at no turn: the deleted one showed none of it).
        await s.switchBranch('edit3');
        await s.addItems([u('q3 again'), a('a3 again')]);
        await s.createBranchFromTurn(3, 'edit3b');
        await s.switchBranch('main');
        await s.deleteBranch('edit3');
        const orphan = (await s.listBranches()).find((b) => b.branchId === 'edit3b');
        const orphaned = { parent: orphan.parent, fromTurn: orphan.fromTurn, items: (await s.switchBranch('edit3b'), (await s.getItems()).map((i) => i.content)) };
        await s.switchBranch('main');
        return {
          noMatch,
          noTurn,
          emptyPop: emptyPop === undefined,
          fromStart,
          orphaned,
          turn: [usage.turn.requests, usage.turn.inputTokens],
          session: usage.session,
          edit,
          editItems,
        };
      },
      { kind, id: fresh(`cleared-usage-${kind}`) },
    );
    assert.match(r.noMatch, /^INVALID_TURN .*contains "NOT Here"/, 'the text as given');
    assert.match(r.noTurn, /^INVALID_TURN branch "from-start" of session "[^"]+" has no turn to store usage against: it shows no items$/);
    assert.equal(r.emptyPop, true);
    assert.equal(r.fromStart, 1, 'an empty branch popped still replaces turn 1');
    assert.deepEqual(r.orphaned, { parent: 'main', fromTurn: 0, items: ['q1', 'a1', 'q2', 'a2'] }, 'the same in both stores');
    assert.deepEqual(r.turn, [1, 5], 'the new turn 2 has its own usage only');
    assert.equal(r.session, 5, 'the undone run is not counted');
    assert.equal(r.edit, 0, 'the branch shows no turn of the cleared main');
    assert.deepEqual(r.editItems, ['q1', 'a1', 'q2', 'a2'], 'the branch keeps what it showed');
  });
}

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: a branch whose parent is deleted is made from its parent’s parent, at the last turn they share; the usage of a turn it still shows goes to it when popped there; cleared, it shows no turn of it`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const u = (t) => ({ role: 'user', content: t });
        const a = (t) => ({ role: 'assistant', content: t });
        const s = make(kind, id);
        const usage = (inputTokens) => s.storeRunUsage({ requests: 1, inputTokens, outputTokens: 0 });
        await s.addItems([u('q1'), a('a1')]);
        await usage(1);
        await s.addItems([u('q2'), a('a2')]);
        await usage(10);
        await s.addItems([u('q3'), a('a3')]);
        await usage(100);
        // edit: main's turns 1 and 2, then its own turns 3 and 4; again: edit's first three.
        await s.createBranchFromTurn(3, 'edit');
        await s.addItems([u('q3 edited'), a('a3 edited'), u('q4'), a('a4')]);
        await s.createBranchFromTurn(4, 'again');
        await s.switchBranch('main');
        await s.deleteBranch('edit');
        const listed = (await s.listBranches()).map((b) => [b.branchId, b.parent, b.fromTurn]);
        // Undo main's turns 3 and 2: again still shows turn 2, so what it used goes there.
        for (let i = 0; i < 4; i++) await s.popItem();
        const mainUsage = (await s.getSessionUsage({ branch: 'main' })).inputTokens;
        const againUsage = (await s.getSessionUsage({ branch: 'again' })).inputTokens;
        // Main's new turn 2 has its own usage only.
        await s.addItems([u('q2 again'), a('a2 again')]);
        await usage(1000);
        const newTurn = (await s.getTurnUsage(2)).inputTokens;
        await s.switchBranch('again');
        const again = (await s.getItems()).map((i) => i.content);
        // Cleared, it shows no turn of main any more, and what its turns used goes with them.
        await s.clearSession();
        const cleared = (await s.listBranches()).find((b) => b.branchId === 'again');
        const sessionUsage = (await s.getSessionUsage()).inputTokens;
        return { listed, mainUsage, againUsage, newTurn, sessionUsage, again, cleared: [cleared.parent, cleared.fromTurn] };
      },
      { kind, id: fresh(`adopted-${kind}`) },
    );
    assert.deepEqual(r.listed, [['main', null, null], ['again', 'main', 3]]);
    assert.deepEqual(r.again, ['q1', 'a1', 'q2', 'a2', 'q3 edited', 'a3 edited']);
    assert.equal(r.mainUsage, 1, 'turn 3’s usage goes with it, turn 2’s to the branch that shows it');
    assert.equal(r.againUsage, 10);
    assert.equal(r.newTurn, 1000, 'main’s new turn 2 has its own usage, not the old one’s added');
    assert.equal(r.sessionUsage, 1001, 'nothing counted twice, nothing left of the cleared turns');
    assert.deepEqual(r.cleared, ['main', 0]);
  });
}

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: a branch undone below the turns it shares with its parent shares fewer: the parent’s turns it no longer shows take their usage with them when popped`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const s = make(kind, id);
        for (const t of [1, 2, 3, 4]) {
          await s.addItems([{ role: 'user', content: `q${t}` }, { role: 'assistant', content: `a${t}` }]);
          await s.storeRunUsage({ requests: 1, inputTokens: 10 ** t, outputTokens: 0 });
        }
        // b shows main's turns 1 to 3; undone there down to turn 1.
        await s.createBranchFromTurn(4, 'b');
        for (let i = 0; i < 4; i++) await s.popItem();
        const fromTurn = (await s.listBranches()).find((x) => x.branchId === 'b').fromTurn;
        // Main's turns 4 and 3 undone: b shows neither.
        await s.switchBranch('main');
        for (let i = 0; i < 4; i++) await s.popItem();
        const session = (await s.getSessionUsage()).inputTokens;
        await s.addItems([{ role: 'user', content: 'q3 again' }, { role: 'assistant', content: 'a3 again' }]);
        await s.storeRunUsage({ requests: 1, inputTokens: 7, outputTokens: 0 });
        const turn3 = await s.getTurnUsage(3);
        await s.switchBranch('b');
        const b = (await s.getItems()).map((i) => i.content);
        return { fromTurn, session, turn3: [turn3.requests, turn3.inputTokens], b };
      },
      { kind, id: fresh(`undone-below-${kind}`) },
    );
    assert.equal(r.fromTurn, 2, 'b now shares turn 1 only');
    assert.deepEqual(r.b, ['q1', 'a1']);
    assert.equal(r.session, 110, 'the undone turns 3 and 4 are not counted');
    assert.deepEqual(r.turn3, [1, 7], 'the new turn 3 has its own usage only');
  });
}

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: turns undone by history transactions (as an EncryptedSession pops) on a session with branches are popped: their usage goes with them or to the branch that shows them, and fromTurn follows`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const s = make(kind, id);
        for (const t of [1, 2, 3, 4]) {
          await s.addItems([{ role: 'user', content: `q${t}` }, { role: 'assistant', content: `a${t}` }]);
          await s.storeRunUsage({ requests: 1, inputTokens: 10 ** t, outputTokens: 0 });
        }
        let op = 0;
        const undo = async (n = 2) => {
          const items = await s.getItems();
          await s.applyHistoryTransaction({ operationId: `undo-${op++}`, transaction: { type: 'replace_suffix', expectedSuffix: items.slice(-n), replacement: [] } });
        };
        // b shows main's turns 1 to 3; its turn 3 undone there.
        await s.createBranchFromTurn(4, 'b');
        await undo();
        const fromTurn = (await s.listBranches()).find((x) => x.branchId === 'b').fromTurn;
        // Main's turns 4, 3 and 2 undone in one transaction: b shows only turn 2 of them, whose
        // usage goes to it.
        await s.switchBranch('main');
        await undo(6);
        const usage = { main: (await s.getSessionUsage({ branch: 'main' })).inputTokens, b: (await s.getSessionUsage({ branch: 'b' })).inputTokens };
        // Main's new turn 2 has its own usage only.
        await s.addItems([{ role: 'user', content: 'q2 again' }, { role: 'assistant', content: 'a2 again' }]);
        await s.storeRunUsage({ requests: 1, inputTokens: 7, outputTokens: 0 });
        const turn2 = await s.getTurnUsage(2);
        return { fromTurn, usage, turn2: [turn2.requests, turn2.inputTokens], b: (await s.switchBranch('b'), (await s.getItems()).map((i) => i.content)) };
      },
      { kind, id: fresh(`undone-by-transactions-${kind}`) },
    );
    assert.equal(r.fromTurn, 3, 'b now shares turns 1 and 2 only');
    assert.deepEqual(r.usage, { main: 10, b: 100 }, 'turns 3 and 4 went with their usage; turn 2’s went to b');
    assert.deepEqual(r.turn2, [1, 7], 'the new turn 2 has its own usage only');
    assert.deepEqual(r.b, ['q1', 'a1', 'q2', 'a2']);
  });
}

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: a turn given again after its first one went to a branch is its own: popped, its usage goes with it, not to the branch that shows the first`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const s = make(kind, id);
        for (const t of [1, 2, 3]) {
          await s.addItems([{ role: 'user', content: `q${t}` }, { role: 'assistant', content: `a${t}` }]);
          await s.storeRunUsage({ requests: 1, inputTokens: 10 ** t, outputTokens: 0 });
        }
        await s.createBranchFromTurn(3, 'b');
        await s.switchBranch('main');
        // Turn 2's usage goes to b, which shows it.
        for (let i = 0; i < 4; i++) await s.popItem();
        // Main's turn 2 given again, then undone: b never showed this one.
        for (let n = 0; n < 3; n++) {
          await s.addItems([{ role: 'user', content: 'q2 again' }, { role: 'assistant', content: 'a2 again' }]);
          await s.storeRunUsage({ requests: 1, inputTokens: 7, outputTokens: 0 });
          await s.popItem();
          await s.popItem();
        }
        return { b: (await s.getSessionUsage({ branch: 'b' })).inputTokens, session: (await s.getSessionUsage()).inputTokens };
      },
      { kind, id: fresh(`again-${kind}`) },
    );
    assert.equal(r.b, 100, 'b keeps the first turn 2’s usage, nothing more');
    assert.equal(r.session, 110);
  });
}

for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: a session whose only item was popped is still one written to: getInfo gives its times and counts the pop as a rewrite; before any write, main has no time either`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        const s = make(kind, id);
        const before = await s.getInfo();
        const [mainBefore] = await s.listBranches();
        await s.addItems([{ role: 'user', content: 'hi' }]);
        await s.popItem();
        const after = await s.getInfo();
        const [mainAfter] = await s.listBranches();
        const noTurn = await s.storeRunUsage({ requests: 1, inputTokens: 1, outputTokens: 0 }).then(() => 'stored', (e) => `${e.code} ${e.message}`);
        return {
          noTurn,
          before: [before.createdAt, before.rewrites, mainBefore.createdAt],
          after: [typeof after.createdAt, typeof after.updatedAt, after.rewrites, after.itemCount, typeof mainAfter.createdAt],
        };
      },
      { kind, id: fresh(`popped-info-${kind}`) },
    );
    assert.deepEqual(r.before, [null, 0, null], 'nothing written yet: no times, main’s neither');
    assert.deepEqual(r.after, ['number', 'number', 1, 0, 'number']);
    assert.match(r.noTurn, /^INVALID_TURN branch "main" of session "[^"]+" has no turn to store usage against: it shows no items$/, 'named alike in both stores');
  });
}

test('a deep chain of branches reads right at every depth, and is flattened past the bound', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id);
    await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
    const out = [];
    for (let depth = 2; depth <= 24; depth++) {
      await s.addItems([{ role: 'user', content: `q${depth}` }]);
      await s.createBranchFromTurn(depth, `d${depth}`);
      await s.addItems([{ role: 'user', content: `q${depth}'` }, { role: 'assistant', content: `a${depth}'` }]);
      out.push(await s.getItems());
    }
    out.push(await s.getItems(3), await s.getRecentTurns(2));
    return out;
  }, fresh('deep'));
  for (let depth = 2; depth <= 24; depth++) {
    const expected = ['q1', 'a1'];
    for (let k = 2; k < depth; k++) expected.push(`q${k}'`, `a${k}'`);
    expected.push(`q${depth}'`, `a${depth}'`);
    assert.deepEqual(texts(r[depth - 2]), expected, `depth ${depth}`);
  }
  assert.deepEqual(texts(r.at(-2)), ["a23'", "q24'", "a24'"]);
  assert.deepEqual(texts(r.at(-1)), ["q23'", "a23'", "q24'", "a24'"]);
});

test('the runner against the test model server: three turns (one with a tool) and a branch, usage summed per turn, tools counted', async () => {
  const { page } = await openHarness(env);
  model.reset();
  model.script(
    { text: 'one answer' },
    { calls: [{ name: 'lookup', arguments: { q: 'two' } }] },
    { text: 'two answer' },
    { text: 'three answer' },
    { text: 'two again answer' },
  );
  const r = await page.evaluate(
    async ({ id, url }) => {
      const lookup = { type: 'function', name: 'lookup', description: 'looks up', parameters: { type: 'object', properties: { q: { type: 'string' } } }, execute: async () => 'found' };
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'a', model: 'm', tools: [lookup] });
      const s = new lib.IndexedDbSession(id);
      const usages = [];
      for (const q of ['one', 'two', 'three']) usages.push((await runner.run(agent, q, { session: s })).usage);
      await s.createBranchFromTurn(2);
      usages.push((await runner.run(agent, 'two, again', { session: s })).usage);
      return {
        usages,
        branch: await s.getItems(),
        main: await new lib.IndexedDbSession(id).getItems(),
        session: await s.getSessionUsage(),
        mainUsage: await s.getSessionUsage({ branch: 'main' }),
        branchTurns: await s.getTurnUsage(),
        mainTools: await s.getToolUsage({ branch: 'main' }),
        branchTools: await s.getToolUsage(),
      };
    },
    { id: fresh('runner'), url: model.url },
  );
  const sum = (list) =>
    list.reduce(
      (a, u) => ({
        requests: a.requests + u.requests,
        inputTokens: a.inputTokens + u.inputTokens,
        outputTokens: a.outputTokens + u.outputTokens,
        totalTokens: a.totalTokens + u.totalTokens,
      }),
      { requests: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    );
  assert.deepEqual(r.usages.map((u) => u.requests), [1, 2, 1, 1], 'the tool turn took two requests');
  assert.deepEqual(r.session, { ...sum(r.usages), turns: 4 });
  assert.deepEqual(r.mainUsage, { ...sum(r.usages.slice(0, 3)), turns: 3 });
  assert.deepEqual(r.branchTurns, [{ turn: 2, ...r.usages[3] }]);
  assert.deepEqual(texts(r.branch), ['one', 'one answer', 'two, again', 'two again answer']);
  assert.equal(r.main.length, 8, 'main: three turns, the second with its tool call and output');
  assert.deepEqual(r.mainTools, [{ name: 'lookup', count: 1, turn: 2 }]);
  assert.deepEqual(r.branchTools, [], 'the branch does not show the tool call of the turn it replaced');
});

test('usage given with a history transaction is stored with its items, once, on the turn it leaves (both session kinds)', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async ({ id, chat }) => {
    const out = {};
    for (const Kind of [lib.IndexedDbSession, lib.MemorySession]) {
      const s = new Kind(`${id}-${Kind.name}`);
      const q2 = { role: 'user', content: 'q2' };
      const a2 = { role: 'assistant', content: 'a2' };
      await s.addItems(chat.slice(0, 2));
      const apply = (operationId, transaction, usage) => s.applyHistoryTransaction({ operationId, transaction, usage });
      await apply('op1', { type: 'append_items', items: [q2] }, { requests: 1, inputTokens: 10, outputTokens: 5 });
      await apply('op1', { type: 'append_items', items: [q2] }, { requests: 1, inputTokens: 10, outputTokens: 5 });
      await apply('op2', { type: 'replace_suffix', expectedSuffix: [q2], replacement: [q2, a2] }, { requests: 1, inputTokens: 3, outputTokens: 2 });
      const o = { mark: s[Symbol.for('agent-sessions.transactionUsage')], turns: await s.getTurnUsage() };
      o.badUsage = await outcome(() => apply('op3', { type: 'append_items', items: [{ role: 'user', content: 'q3' }] }, { inputTokens: -1 }));
      const all = await s.getItems();
      o.emptying = await outcome(() => apply('op4', { type: 'replace_suffix', expectedSuffix: all, replacement: [] }, { requests: 1 }));
      o.after = await s.getItems();
      o.turnsAfter = await s.getTurnUsage();
      await s.createBranchFromTurn(2, 'alt');
      await apply('op5', { type: 'append_items', items: [{ role: 'user', content: 'q2 alt' }] }, { requests: 1, inputTokens: 7, outputTokens: 1 });
      o.alt = await s.getTurnUsage();
      o.main = await s.getSessionUsage({ branch: 'main' });
      out[Kind.name] = o;
    }
    return out;
  }, { id: fresh('tx-usage'), chat: turns(1) });
  for (const kind of ['IndexedDbSession', 'MemorySession']) {
    const o = r[kind];
    assert.equal(o.mark, true, `${kind} says it takes usage with a transaction`);
    assert.deepEqual(
      o.turns,
      [{ turn: 2, requests: 2, inputTokens: 13, outputTokens: 7, totalTokens: 20 }],
      `${kind}: the retried operation added nothing, the replacement added to the same turn`,
    );
    assert.equal(o.badUsage, 'SessionError INVALID_USAGE');
    assert.equal(o.emptying, 'SessionError INVALID_USAGE', 'usage needs a turn to go to');
    assert.deepEqual(texts(o.after), ['q1', 'a1', 'q2', 'a2'], `${kind}: a refused transaction wrote none of its items`);
    assert.deepEqual(o.turnsAfter, o.turns, `${kind}: nor any usage`);
    assert.deepEqual(o.alt, [{ turn: 2, requests: 1, inputTokens: 7, outputTokens: 1, totalTokens: 8 }], `${kind}: on a branch, to its own turn`);
    assert.deepEqual(o.main, { requests: 2, inputTokens: 13, outputTokens: 7, totalTokens: 20, turns: 1 });
  }
});

test('a clear of a session never written to writes nothing; after close() and free() an object still says the branch it was on (both session kinds)', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async ({ id, chat }) => {
    const out = {};
    for (const Kind of [lib.IndexedDbSession, lib.MemorySession]) {
      const s = new Kind(`${id}-${Kind.name}`);
      // A clear of a session never written to writes nothing: no times, no rewrite.
      await s.clearSession();
      const { createdAt, updatedAt, rewrites } = await s.getInfo();
      await s.addItems(chat);
      await s.createBranchFromTurn(2, 'alt');
      await s.close();
      const closed = s.currentBranch;
      s.free();
      // An empty transaction is remembered (its operation id): a clear then forgets it.
      const e = new Kind(`${id}-${Kind.name}-empty-tx`);
      await e.applyHistoryTransaction({ operationId: 'op', transaction: { type: 'append_items', items: [] } });
      await e.clearSession();
      const reused = await e.applyHistoryTransaction({ operationId: 'op', transaction: { type: 'append_items', items: [{ role: 'user', content: 'q' }] } }).then(() => 'applied', (err) => err.code);
      out[Kind.name] = [closed, s.currentBranch, createdAt, updatedAt, rewrites, reused];
    }
    return out;
  }, { id: fresh('closed-branch'), chat: turns(2) });
  assert.deepEqual(r, { IndexedDbSession: ['alt', 'alt', null, null, 0, 'applied'], MemorySession: ['alt', 'alt', null, null, 0, 'applied'] });
});

test("the runner saves a run's usage with its answer where the session takes it, else through storeRunUsage", async () => {
  const { page } = await openHarness(env);
  model.reset();
  model.script({ text: 'first answer' }, { text: 'second answer' });
  const r = await page.evaluate(
    async ({ id, url }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'a', model: 'm' });
      const ours = new lib.IndexedDbSession(`${id}-ours`);
      const calls = { ours: 0, plain: 0 };
      const storeRunUsage = ours.storeRunUsage.bind(ours);
      ours.storeRunUsage = (u) => (calls.ours++, storeRunUsage(u));
      const usages = [(await runner.run(agent, 'one', { session: ours })).usage];
      // A session of another kind with the same methods, which does not say it takes usage
      // with a transaction: the runner stores the usage the other way.
      const inner = new lib.IndexedDbSession(`${id}-plain`);
      const plain = {};
      for (const m of ['getSessionId', 'getItems', 'addItems', 'popItem', 'clearSession', 'applyHistoryTransaction', 'getRecentTurns']) plain[m] = (...a) => inner[m](...a);
      plain.storeRunUsage = (u) => (calls.plain++, inner.storeRunUsage(u));
      usages.push((await runner.run(agent, 'two', { session: plain })).usage);
      return { calls, usages, ours: await ours.getTurnUsage(), plain: await inner.getTurnUsage(), items: (await ours.getItems()).length };
    },
    { id: fresh('runner-usage'), url: model.url },
  );
  assert.deepEqual(r.calls, { ours: 0, plain: 1 });
  assert.equal(r.items, 2);
  assert.deepEqual(r.ours, [{ turn: 1, ...r.usages[0] }]);
  assert.deepEqual(r.plain, [{ turn: 1, ...r.usages[1] }]);
});

test('bad input: unknown branches and turns, taken names, deleting main or the current branch; nothing is written', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async ({ id, chat }) => {
    const s = new lib.IndexedDbSession(id);
    await s.addItems(chat);
    await s.createBranchFromTurn(2, 'x');
    await s.switchBranch('main');
    const out = {
      switchUnknown: await outcome(() => s.switchBranch('nope')),
      unknownOption: await outcome(() => new lib.IndexedDbSession(id, { branch: 'nope' }).getItems()),
      unknownAdd: await outcome(() => new lib.IndexedDbSession(id, { branch: 'nope' }).addItems([{ role: 'user', content: 'lost' }])),
      unknownUpdate: await outcome(() => new lib.IndexedDbSession(id, { branch: 'nope' }).update({ title: 'lost', state: { lost: true } })),
      unknownUpdateNew: await outcome(() => new lib.IndexedDbSession(id + '-never', { branch: 'nope' }).update({ title: 'lost' })),
      deleteUnknown: await outcome(() => s.deleteBranch('nope')),
      turnZero: await outcome(() => s.createBranchFromTurn(0)),
      turnPast: await outcome(() => s.createBranchFromTurn(9)),
      turnText: await outcome(() => s.createBranchFromTurn('2')),
      turnFraction: await outcome(() => s.createBranchFromTurn(1.5)),
      noContent: await outcome(() => s.createBranchFromContent('never said')),
      emptyContent: await outcome(() => s.createBranchFromContent('')),
      taken: await outcome(() => s.createBranchFromTurn(1, 'x')),
      takenMain: await outcome(() => s.createBranchFromTurn(1, 'main')),
      blankName: await outcome(() => s.createBranchFromTurn(1, '  ')),
      // Names and texts are kept exactly: one with a lone surrogate is refused, not changed.
      loneName: await outcome(() => s.createBranchFromTurn(1, 'y\uD800')),
      loneSwitch: await outcome(() => s.switchBranch('x\uDC00')),
      loneText: await outcome(() => s.findTurns('q\uD800')),
      deleteMain: await outcome(() => s.deleteBranch('main')),
      badUsage: await outcome(() => s.storeRunUsage({ inputTokens: -1 })),
      badUsageType: await outcome(() => s.storeRunUsage('lots')),
      // None of its fields: Python's names, a run's result instead of its usage (a turn that
      // cost nothing, stored).
      pythonUsage: await outcome(() => s.storeRunUsage({ input_tokens: 10, output_tokens: 2 })),
      resultUsage: await outcome(() => s.storeRunUsage({ finalOutput: 'Paris', state: {} })),
      badBranchOption: await outcome(() => s.getTurns({ branch: 7 })),
      badConstructor: await outcome(async () => new lib.IndexedDbSession(id, { branch: '' })),
      emptySession: await outcome(() => new lib.IndexedDbSession(id + '-empty').createBranchFromTurn(1)),
    };
    const x = new lib.IndexedDbSession(id, { branch: 'x' });
    out.deleteCurrent = await outcome(() => x.deleteBranch('x'));
    out.branches = (await s.listBranches()).map((b) => [b.branchId, b.itemCount]);
    out.main = await s.getItems();
    out.usage = await s.getSessionUsage();
    out.current = s.currentBranch;
    out.emptyListed = (await lib.listSessions()).some((i) => i.sessionId === id + '-empty');
    out.info = await s.getInfo();
    out.neverListed = (await lib.listSessions()).some((i) => i.sessionId === id + '-never');
    return out;
  }, { id: fresh('bad'), chat: turns(2) });
  assert.equal(r.switchUnknown, 'SessionError BRANCH_NOT_FOUND');
  assert.equal(r.unknownOption, 'SessionError BRANCH_NOT_FOUND');
  assert.equal(r.unknownAdd, 'SessionError BRANCH_NOT_FOUND');
  assert.equal(r.unknownUpdate, 'SessionError BRANCH_NOT_FOUND');
  assert.equal(r.unknownUpdateNew, 'SessionError BRANCH_NOT_FOUND');
  assert.equal(r.info.title === 'lost' || r.info.state?.lost === true, false, 'the refused update wrote nothing');
  assert.equal(r.neverListed, false, 'nor made a session');
  assert.equal(r.deleteUnknown, 'SessionError BRANCH_NOT_FOUND');
  for (const k of ['turnZero', 'turnPast', 'turnText', 'turnFraction', 'noContent', 'emptySession']) {
    assert.equal(r[k], 'SessionError INVALID_TURN', k);
  }
  assert.equal(r.emptyContent, 'SessionError INVALID_OPTIONS');
  assert.equal(r.taken, 'SessionError BRANCH_EXISTS');
  assert.equal(r.takenMain, 'SessionError BRANCH_EXISTS');
  assert.equal(r.blankName, 'SessionError INVALID_OPTIONS');
  for (const k of ['loneName', 'loneSwitch', 'loneText']) assert.equal(r[k], 'SessionError INVALID_OPTIONS', k);
  assert.equal(r.deleteMain, 'SessionError BRANCH_IN_USE');
  assert.equal(r.deleteCurrent, 'SessionError BRANCH_IN_USE');
  assert.equal(r.badUsage, 'SessionError INVALID_USAGE');
  assert.equal(r.badUsageType, 'SessionError INVALID_USAGE');
  assert.equal(r.pythonUsage, 'SessionError INVALID_USAGE');
  assert.equal(r.resultUsage, 'SessionError INVALID_USAGE');
  assert.equal(r.badBranchOption, 'SessionError INVALID_OPTIONS');
  assert.equal(r.badConstructor, 'SessionError INVALID_OPTIONS');
  assert.deepEqual(r.branches, [['main', 4], ['x', 2]]);
  assert.deepEqual(texts(r.main), texts(turns(2)));
  assert.deepEqual(r.usage, { requests: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0, turns: 0 });
  assert.equal(r.current, 'main');
  assert.equal(r.emptyListed, false, 'a failed branch creation writes no record');
});

test('MemorySession: the same branches, turn listings and usage, in memory', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (chat) => {
    const s = new lib.MemorySession();
    await s.addItems(chat);
    const out = { start: s.currentBranch };
    out.id = await s.createBranchFromTurn(2);
    out.branch = await s.getItems();
    await s.addItems([{ role: 'user', content: 'Q2 東京' }]);
    await s.storeRunUsage({ requests: 1, inputTokens: 3, outputTokens: 2 });
    out.found = (await s.findTurns('q2 東')).map((t) => [t.turn, t.content]);
    out.popped = (await s.popItem()).content;
    out.poppedAgain = (await s.popItem()).content;
    out.afterPops = await s.getItems();
    // The turn popped away took its usage with it; the branch's turn 1 gets some of its own.
    out.usageAfterPops = (await s.getSessionUsage()).requests;
    await s.storeRunUsage({ requests: 1, inputTokens: 3, outputTokens: 2 });
    out.turns = (await s.getTurns({ branch: 'main' })).map((t) => [t.turn, t.content, t.itemCount]);
    out.branches = (await s.listBranches()).map((b) => [b.branchId, b.parent, b.fromTurn, b.itemCount, b.current]);
    out.usage = await s.getSessionUsage();
    out.turnUsage = await s.getTurnUsage();
    out.errors = {
      taken: await outcome(() => s.createBranchFromTurn(1, 'turn-2')),
      noTurn: await outcome(() => s.createBranchFromTurn(7)),
      noText: await outcome(() => s.createBranchFromContent('never')),
      deleteCurrent: await outcome(() => s.deleteBranch('turn-2')),
      deleteMain: await outcome(() => s.deleteBranch('main')),
      unknown: await outcome(() => s.switchBranch('nope')),
    };
    await s.switchBranch('main');
    out.main = await s.getItems();
    await s.deleteBranch('turn-2');
    out.afterDelete = (await s.listBranches()).map((b) => b.branchId);
    out.usageAfterDelete = await s.getSessionUsage();
    return out;
  }, turns(3));
  assert.equal(r.start, 'main');
  assert.equal(r.id, 'turn-2');
  assert.deepEqual(texts(r.branch), ['q1', 'a1']);
  assert.deepEqual(r.found, [[2, 'Q2 東京']]);
  assert.equal(r.popped, 'Q2 東京');
  assert.equal(r.poppedAgain, 'a1');
  assert.deepEqual(texts(r.afterPops), ['q1']);
  assert.deepEqual(r.turns, [[1, 'q1', 2], [2, 'q2', 2], [3, 'q3', 2]]);
  assert.deepEqual(r.branches, [['main', null, null, 6, false], ['turn-2', 'main', 2, 1, true]]);
  assert.equal(r.usageAfterPops, 0);
  assert.deepEqual(r.usage, { requests: 1, inputTokens: 3, outputTokens: 2, totalTokens: 5, turns: 1 });
  assert.deepEqual(r.turnUsage, [{ turn: 1, requests: 1, inputTokens: 3, outputTokens: 2, totalTokens: 5 }]);
  assert.deepEqual(r.errors, {
    taken: 'SessionError BRANCH_EXISTS',
    noTurn: 'SessionError INVALID_TURN',
    noText: 'SessionError INVALID_TURN',
    deleteCurrent: 'SessionError BRANCH_IN_USE',
    deleteMain: 'SessionError BRANCH_IN_USE',
    unknown: 'SessionError BRANCH_NOT_FOUND',
  });
  assert.deepEqual(texts(r.main), texts(turns(3)));
  assert.deepEqual(r.afterDelete, ['main']);
  assert.deepEqual(r.usageAfterDelete, { requests: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0, turns: 0 });
});

test('rewrites on branches: compaction and mutations act on one branch, the others keep what they show', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (id) => {
    const call = (callId, args) => ({ type: 'function_call', callId, name: 'lookup', arguments: args, status: 'completed' });
    const s = new lib.IndexedDbSession(id);
    await s.addItems([
      { role: 'user', content: 'q1' },
      call('c1', '{"v":1}'),
      { type: 'function_call_result', callId: 'c1', output: 'r1' },
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'q2' },
      { role: 'assistant', content: 'a2' },
    ]);
    await s.createBranchFromTurn(2, 'b');
    await s.addItems([{ role: 'user', content: 'q2 on b' }]);
    const out = {};
    // A mutation on b changes an item it shares with main: main keeps the original.
    const timesBefore = (await s.getTurns()).map((t) => t.createdAt);
    await new Promise((ok) => setTimeout(ok, 5));
    await s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: call('c1', '{"v":2}') }] });
    out.timesKept = JSON.stringify((await s.getTurns()).map((t) => t.createdAt)) === JSON.stringify(timesBefore);
    out.b = await s.getItems();
    out.mainAfterMutation = await new lib.IndexedDbSession(id).getItems();
    // Compaction on b archives what b showed; main is untouched.
    await s.replaceHistoryWithCompaction([{ type: 'compaction', id: 'cmp_b', encrypted_content: 'E' }, { role: 'user', content: 'q2 on b' }]);
    out.bCompacted = await s.getItems();
    out.bArchive = await s.getArchivedItems();
    out.bTurns = (await s.getTurns()).map((t) => [t.turn, t.content]);
    out.mainAfterCompaction = await new lib.IndexedDbSession(id).getItems();
    out.mainArchive = await new lib.IndexedDbSession(id).getArchivedItems();
    // Compaction on main, which a new branch shares: the branch keeps its items.
    await s.switchBranch('main');
    await s.createBranchFromTurn(2, 'c');
    await s.switchBranch('main');
    await s.replaceHistory([{ role: 'user', content: 'main summary' }], { archive: true });
    out.main = await s.getItems();
    out.mainArchive2 = (await s.getArchivedItems()).length;
    out.c = await new lib.IndexedDbSession(id, { branch: 'c' }).getItems();
    await s.addItems([{ role: 'assistant', content: 'more' }]);
    out.mainTx = await (async () => {
      await s.applyHistoryTransaction({ operationId: 'op-1', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: 'more' }], replacement: [{ role: 'assistant', content: 'less' }] } });
      return s.getItems();
    })();
    out.cAfter = await new lib.IndexedDbSession(id, { branch: 'c' }).getItems();
    await s.deleteBranch('b');
    out.branches = (await s.listBranches()).map((x) => [x.branchId, x.itemCount]);
    return out;
  }, fresh('rewrite'));
  const args = (items) => items.filter((i) => i.type === 'function_call').map((i) => i.arguments);
  assert.deepEqual(args(r.b), ['{"v":2}']);
  assert.equal(r.timesKept, true, 'rewritten rows keep their creation times');
  assert.equal(r.b.length, 5);
  assert.deepEqual(args(r.mainAfterMutation), ['{"v":1}']);
  assert.equal(r.mainAfterMutation.length, 6);
  assert.deepEqual(r.bCompacted.map((i) => i.type ?? i.content), ['compaction', 'q2 on b']);
  assert.deepEqual(r.bArchive, r.b.slice(0, -1), "b's archive holds what b showed, the mutated call included, but the question the compaction kept");
  assert.deepEqual(r.bTurns, [[1, 'q2 on b']]);
  assert.deepEqual(r.mainAfterCompaction, r.mainAfterMutation);
  assert.deepEqual(r.mainArchive, [], "main's archive is its own");
  assert.deepEqual(r.main.map((i) => i.content), ['main summary']);
  assert.equal(r.mainArchive2, 6);
  assert.deepEqual(r.c, r.mainAfterMutation.slice(0, 4), 'the branch of main keeps what it showed');
  assert.deepEqual(r.mainTx.map((i) => i.content), ['main summary', 'less']);
  assert.deepEqual(r.cAfter, r.c);
  assert.deepEqual(r.branches, [['main', 2], ['c', 4]]);
});

// A seeded run of random operations on the branches of one session, checked after every step
// against a plain model (each branch an array of its items): every branch must show exactly
// what the model says, whatever was created, popped, cleared, rewritten or deleted before.
for (const kind of ['indexeddb', 'memory']) {
  test(`${kind}: 300 random operations on branches match a plain model at every step`, async () => {
    const { page } = await openHarness(env);
    const r = await page.evaluate(
      async ({ kind, id }) => {
        let seed = 0x2545f491;
        const rand = (n) => {
          seed ^= seed << 13;
          seed ^= seed >>> 17;
          seed ^= seed << 5;
          return (seed >>> 0) % n;
        };
        const s = kind === 'memory' ? new lib.MemorySession(id) : new lib.IndexedDbSession(id);
        const model = new Map([['main', []]]);
        let current = 'main';
        let n = 0;
        const isUser = (i) => i.role === 'user';
        const turnStarts = (items) => items.flatMap((i, k) => (isUser(i) ? [k] : []));
        const log = [];
        for (let step = 0; step < 300; step++) {
          const items = model.get(current);
          const op = rand(100);
          let what;
          if (op < 35) {
            const batch = Array.from({ length: 1 + rand(3) }, () => (rand(3) === 0 ? { role: 'user', content: `u${++n}` } : { role: 'assistant', content: `a${++n}` }));
            await s.addItems(batch);
            items.push(...batch);
            what = `add ${batch.length}`;
          } else if (op < 50) {
            const popped = await s.popItem();
            const expected = items.pop();
            if (JSON.stringify(popped) !== JSON.stringify(expected)) return { step, error: `pop gave ${JSON.stringify(popped)}, expected ${JSON.stringify(expected)}`, log };
            what = 'pop';
          } else if (op < 53) {
            await s.clearSession();
            items.length = 0;
            what = 'clear';
          } else if (op < 68) {
            const starts = turnStarts(items);
            if (!starts.length) continue;
            const t = 1 + rand(starts.length);
            const name = `b${step}`;
            await s.createBranchFromTurn(t, name);
            model.set(name, items.slice(0, starts[t - 1]));
            current = name;
            what = `branch ${name} from turn ${t}`;
          } else if (op < 80) {
            const names = [...model.keys()];
            current = names[rand(names.length)];
            await s.switchBranch(current);
            what = `switch ${current}`;
          } else if (op < 85) {
            const names = [...model.keys()].filter((b) => b !== 'main' && b !== current);
            if (!names.length) continue;
            const victim = names[rand(names.length)];
            await s.deleteBranch(victim);
            model.delete(victim);
            what = `delete ${victim}`;
          } else if (op < 95) {
            const k = Math.min(items.length, 1 + rand(3));
            const replacement = Array.from({ length: rand(3) }, () => ({ role: rand(2) ? 'user' : 'assistant', content: `r${++n}` }));
            await s.applyHistoryTransaction({ operationId: `op${step}`, transaction: { type: 'replace_suffix', expectedSuffix: items.slice(items.length - k), replacement } });
            items.splice(items.length - k, k, ...replacement);
            what = `replace ${k} by ${replacement.length}`;
          } else {
            const kept = items.slice(-2);
            await s.replaceHistory(kept, { archive: rand(2) === 0 });
            items.splice(0, items.length, ...kept);
            what = 'replaceHistory';
          }
          log.push(what);
          // Every branch shows what the model says, read through objects on each branch.
          for (const [name, expected] of model) {
            const o = kind === 'memory' ? null : new lib.IndexedDbSession(id, { branch: name });
            const got = o ? await o.getItems() : name === current ? await s.getItems() : null;
            if (got && JSON.stringify(got) !== JSON.stringify(expected)) {
              return { step, error: `${name}: ${JSON.stringify(got.map((i) => i.content))} instead of ${JSON.stringify(expected.map((i) => i.content))}`, log: log.slice(-12) };
            }
            if (o && name === current) {
              const newest = await o.getItems(5);
              if (JSON.stringify(newest) !== JSON.stringify(expected.slice(-5))) return { step, error: `${name}: getItems(5) wrong`, log: log.slice(-12) };
              const starts = turnStarts(expected);
              const last2 = starts.length >= 2 ? expected.slice(starts.at(-2)) : expected;
              const turns = await o.getRecentTurns(2);
              if (JSON.stringify(turns) !== JSON.stringify(last2)) return { step, error: `${name}: getRecentTurns(2) ${JSON.stringify(turns.map((i) => i.content))} instead of ${JSON.stringify(last2.map((i) => i.content))}`, log: log.slice(-12) };
            }
            if (o) o.free();
          }
          const listed = await s.listBranches();
          for (const b of listed) {
            if (b.itemCount !== model.get(b.branchId)?.length) return { step, error: `listBranches: ${b.branchId} has ${b.itemCount}`, log: log.slice(-12) };
          }
          if (listed.length !== model.size) return { step, error: 'listBranches: wrong branches', log };
        }
        return { ok: true, branches: model.size, steps: log.length };
      },
      { kind, id: fresh(`fuzz-${kind}`) },
    );
    assert.equal(r.error, undefined, `step ${r.step}: ${r.error}\n${(r.log ?? []).join('\n')}`);
    assert.ok(r.branches > 3, `the run made branches (${r.branches})`);
  });
}

test('the operation log is shared by the branches: clearing main keeps it while other branches exist; repairSession refuses a session with branches', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async ({ id, chat }) => {
    const s = new lib.IndexedDbSession(id);
    await s.addItems(chat);
    await s.createBranchFromTurn(2, 'b');
    const tx = { operationId: 'op-b', transaction: { type: 'append_items', items: [{ role: 'user', content: 'once' }] } };
    await s.applyHistoryTransaction(tx);
    const turnsBefore = await s.getTurns();
    await new lib.IndexedDbSession(id).clearSession();
    await s.applyHistoryTransaction(tx); // a retry after a lost reply: applied already
    const out = { b: await s.getItems(), turnsBefore, turnsAfter: await s.getTurns() };
    try {
      await lib.repairSession(id);
      out.repair = 'resolved';
    } catch (e) {
      out.repair = `${e.code}: ${e.message}`;
    }
    out.stillB = await s.getItems();
    return out;
  }, { id: fresh('oplog'), chat: turns(2) });
  assert.deepEqual(texts(r.b), ['q1', 'a1', 'once'], 'the retried operation is not applied twice');
  assert.deepEqual(r.turnsAfter, r.turnsBefore, 'turns and their times are kept');
  assert.match(r.repair, /^CORRUPT_SESSION: .*has branches other than "main"/);
  assert.deepEqual(r.stillB, r.b);
});
