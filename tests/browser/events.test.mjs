// Change events across objects, tabs and workers: one event per call, after it committed, in the
// order each writer committed; unsubscribing stops them; a throwing listener harms nothing; and
// watchSessions tells a sidebar which sessions were created, updated and deleted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness } from './harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

let counter = 0;
const fresh = (p) => `${p}-${++counter}`;

/** Starts collecting the events of `sessionId` in `page` (under `window.events[key]`). */
function collect(page, key, sessionId) {
  return page.evaluate(
    ({ key, sessionId }) => {
      window.events ??= {};
      window.stops ??= {};
      window.events[key] = [];
      const s = new lib.IndexedDbSession(sessionId);
      window.stops[key] = s.subscribe((e) => window.events[key].push(e));
    },
    { key, sessionId },
  );
}

const eventsOf = (page, key) => page.evaluate((key) => window.events[key], key);
const waitFor = (page, key, n) =>
  page.waitForFunction(({ key, n }) => window.events[key].length >= n, { key, n }, { timeout: 5000 });

test('a write in one tab reaches a listener in another, one event per call, in order', async () => {
  const { page: writer, context } = await openHarness(env);
  const { page: reader } = await openHarness(env, context);
  const id = fresh('tabs');
  await collect(reader, 'all', id);
  await writer.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id, { userId: undefined });
    await s.addItems([{ role: 'user', content: 'q1' }]);
    await s.addItems(Array.from({ length: 50 }, (_, i) => ({ role: 'assistant', content: `part ${i}` })));
    await s.addItems([]); // writes nothing: no event
    await s.popItem();
    await s.update({ title: 'Renamed' });
    await s.storeRunUsage({ requests: 1, inputTokens: 5 });
    await s.createBranchFromTurn(1, 'alt');
    await s.clearSession();
    await s.popItem(); // an empty branch: nothing popped, no event
  }, id);
  await waitFor(reader, 'all', 7);
  const events = await eventsOf(reader, 'all');
  assert.deepEqual(
    events.map((e) => [e.type, e.count ?? e.fields ?? e.branchId ?? null, e.branch]),
    [
      ['add', 1, 'main'],
      ['add', 50, 'main'],
      ['pop', null, 'main'],
      ['update', ['title'], 'main'],
      ['update', ['usage'], 'main'],
      ['branch', 'alt', 'alt'],
      ['clear', null, 'alt'],
    ],
  );
  assert.ok(events.every((e) => e.sessionId === id && e.dbName === 'agent-sessions' && e.userId === null));
  // The writes are committed when their events arrive: the reader sees them.
  const seen = await reader.evaluate((id) => new lib.IndexedDbSession(id).getItems(), id);
  assert.equal(seen.length, 50);
});

test('a burst of writes is heard whole and in order, also from a page left right after it', async () => {
  const { page: writer, context } = await openHarness(env);
  const { page: reader } = await openHarness(env, context);
  const id = fresh('burst');
  await collect(reader, 'burst', id);
  // Each event waits in the page for a task of its own to post it (with any others queued by
  // then); the last ones may still be waiting when the page is left, which posts them at once.
  await writer.evaluate((id) => {
    const s = new lib.IndexedDbSession(id);
    window.left = (async () => {
      for (let i = 0; i < 30; i++) await s.addItems([{ role: 'user', content: `q${i}` }]);
      await s.popItem();
      await s.update({ title: 'Last' });
      location.href = 'about:blank';
    })();
  }, id);
  await waitFor(reader, 'burst', 32);
  const events = await eventsOf(reader, 'burst');
  assert.deepEqual(
    events.map((e) => e.type),
    [...Array(30).fill('add'), 'pop', 'update'],
  );
  const at = events.map((e) => e.at);
  assert.deepEqual(at, [...at].sort((a, b) => a - b), 'in the order they were committed');
  assert.equal(await reader.evaluate((id) => new lib.IndexedDbSession(id).getItems().then((i) => i.length), id), 29);
});

test('the writing object and another object of the same page hear it too; unsubscribe stops; a throwing listener harms nothing', async () => {
  const { page } = await openHarness(env);
  const id = fresh('same-page');
  const r = await page.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id);
    const mine = [];
    const other = [];
    const stopMine = s.subscribe((e) => mine.push(e.type));
    const stopOther = new lib.IndexedDbSession(id).subscribe((e) => other.push(e.type));
    const stopThrowing = s.subscribe(() => {
      throw new Error('a broken listener');
    });
    // An async one whose promise rejects is reported too, not left an unhandled rejection.
    const stopRejecting = s.subscribe(async () => {
      throw new Error('a broken async listener');
    });
    const errors = [];
    const unhandled = [];
    window.addEventListener('error', (e) => errors.push(e.message));
    window.addEventListener('unhandledrejection', (e) => unhandled.push(String(e.reason)));
    const wrote = await s.addItems([{ role: 'user', content: 'one' }]).then(() => 'resolved');
    const until = async (list, n) => {
      for (let i = 0; i < 200 && list.length < n; i++) await new Promise((ok) => setTimeout(ok, 10));
    };
    await until(mine, 1);
    await until(other, 1);
    stopMine();
    stopMine(); // twice is harmless
    await s.addItems([{ role: 'user', content: 'two' }]);
    await until(other, 2);
    const afterStop = [...mine];
    stopOther();
    stopThrowing();
    stopRejecting();
    return { wrote, mine: afterStop, other, errors, unhandled, items: (await s.getItems()).length };
  }, id);
  assert.equal(r.wrote, 'resolved');
  assert.deepEqual(r.mine, ['add'], 'no event after unsubscribing');
  assert.deepEqual(r.other, ['add', 'add'], 'the other listener got both, though one listener threw');
  assert.ok(r.errors.some((m) => m.includes('a broken listener')), 'the throw is reported, not swallowed');
  assert.ok(r.errors.some((m) => m.includes('a broken async listener')), 'the rejection is reported too');
  assert.deepEqual(r.unhandled, []);
  assert.equal(r.items, 2);
});

test('a listener of one user’s session hears its deletion, and nothing of another user’s session made under its id after; sessionLockName of the default database is the same whether it is named or not', async () => {
  const { page } = await openHarness(env);
  const id = fresh('owner');
  const r = await page.evaluate(async (id) => {
    const heard = [];
    const ann = new lib.IndexedDbSession(id, { userId: 'ann' });
    ann.subscribe((e) => heard.push([e.type, e.userId ?? null]));
    await ann.addItems([{ role: 'user', content: 'ann here' }]);
    await lib.deleteSession(id);
    await new lib.IndexedDbSession(id, { userId: 'bob' }).addItems([{ role: 'user', content: 'bob here' }]);
    // Ann's listener is told of a write of hers after bob's: all of the above has reached it.
    const again = new lib.IndexedDbSession(`${id}-mark`, { userId: 'ann' });
    const marked = new Promise((ok) => again.subscribe(ok));
    await again.addItems([{ role: 'user', content: 'mark' }]);
    await marked;
    await new Promise((ok) => setTimeout(ok, 50));
    return {
      heard,
      locks: [lib.sessionLockName(null, 'x'), lib.sessionLockName(undefined, 'x'), lib.sessionLockName('agent-sessions', 'x')],
    };
  }, id);
  assert.deepEqual(r.heard, [['add', 'ann'], ['delete', null]], 'bob’s write is not an event of ann’s session');
  assert.equal(new Set(r.locks).size, 1, `one lock for the default database: ${r.locks}`);
});

test('a listener that unsubscribes and subscribes again from within a listener (the only one of its database) hears the rest of the message under way, and later ones', async () => {
  const { page } = await openHarness(env);
  const id = fresh('resubscribe');
  const r = await page.evaluate(async (id) => {
    const dbName = `resubscribe-${id}`;
    const heard = [];
    let stop = new lib.IndexedDbSession(id, { dbName }).subscribe((e) => {
      heard.push(['first', e.count]);
      // A new object (another branch, say), subscribed in place of this one.
      stop();
      stop = new lib.IndexedDbSession(id, { dbName }).subscribe((e2) => heard.push(['again', e2.count]));
    });
    // Another tab's message holding two events, as a burst of writes posts them.
    const other = new BroadcastChannel(`agent-sessions:${dbName}`);
    const event = (count) => ({ type: 'add', sessionId: id, userId: null, branch: 'main', dbName, at: Date.now(), count });
    other.postMessage([event(1), event(2)]);
    await new Promise((ok) => setTimeout(ok, 100));
    other.postMessage([event(3)]);
    await new Promise((ok) => setTimeout(ok, 100));
    other.close();
    stop();
    return heard;
  }, id);
  assert.deepEqual(r, [['first', 1], ['again', 2], ['again', 3]]);
});

for (const kind of ['IndexedDbSession', 'MemorySession'])
test(`${kind}: a listener another one removes while an event is delivered does not get that event, as with DOM events`, async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async ({ id, kind }) => {
    const s = new lib[kind](id);
    const heard = [];
    let stopSecond;
    // The first listener closes the panel the second one feeds.
    const stopFirst = s.subscribe((e) => {
      heard.push(`first ${e.type}`);
      stopSecond();
    });
    stopSecond = s.subscribe((e) => heard.push(`second ${e.type}`));
    await s.addItems([{ role: 'user', content: 'one' }]);
    for (let i = 0; i < 200 && heard.length < 1; i++) await new Promise((ok) => setTimeout(ok, 10));
    await new Promise((ok) => setTimeout(ok, 100));
    stopFirst();
    return heard;
  }, { id: fresh('removed-during-dispatch'), kind });
  assert.deepEqual(r, ['first add']);
});

test('close() and free() stop an object’s listeners, and a closed object takes none', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (id) => {
    const heard = { closed: [], freed: [], open: [] };
    const closed = new lib.IndexedDbSession(id);
    const freed = new lib.IndexedDbSession(id);
    const open = new lib.IndexedDbSession(id);
    for (const [key, s] of [['closed', closed], ['freed', freed], ['open', open]]) s.subscribe((e) => heard[key].push(e.type));
    const writer = new lib.IndexedDbSession(id);
    await writer.addItems([{ role: 'user', content: 'one' }]);
    for (let i = 0; i < 200 && heard.open.length < 1; i++) await new Promise((ok) => setTimeout(ok, 10));
    await closed.close();
    freed.free();
    // Another object's write: only the open one hears it (a closed one would read nothing).
    await writer.addItems([{ role: 'user', content: 'two' }]);
    for (let i = 0; i < 200 && heard.open.length < 2; i++) await new Promise((ok) => setTimeout(ok, 10));
    await new Promise((ok) => setTimeout(ok, 100));
    const refused = {};
    const memory = new lib.MemorySession();
    await memory.close();
    for (const [key, s] of [['closed', closed], ['memory', memory]]) {
      try {
        s.subscribe(() => {});
        refused[key] = 'subscribed';
      } catch (e) {
        refused[key] = `${e.name} ${e.code}`;
      }
    }
    return { heard, refused };
  }, fresh('closed-listeners'));
  assert.deepEqual(r.heard, { closed: ['add'], freed: ['add'], open: ['add', 'add'] });
  assert.deepEqual(r.refused, { closed: 'SessionError CLOSED', memory: 'SessionError CLOSED' });
});

test('a session freed while its write is under way (a component unmounted mid-save): the write resolves, is stored, and the others hear it', async () => {
  const { page } = await openHarness(env);
  const id = fresh('freed-mid-write');
  const r = await page.evaluate(async (id) => {
    const heard = [];
    const stop = new lib.IndexedDbSession(id).subscribe((e) => heard.push([e.type, e.branch]));
    const s = new lib.IndexedDbSession(id);
    const saving = s.addItems([{ role: 'user', content: 'saved' }]);
    s.free();
    const outcome = await saving.then(() => 'resolved', (e) => e.message);
    for (let i = 0; i < 200 && heard.length < 1; i++) await new Promise((ok) => setTimeout(ok, 10));
    stop();
    const memory = new lib.MemorySession();
    await memory.addItems([{ role: 'user', content: 'first' }]);
    const memorySaving = memory.addItems([{ role: 'user', content: 'second' }]);
    memory.free();
    return {
      outcome,
      heard,
      items: (await new lib.IndexedDbSession(id).getItems()).map((i) => i.content),
      branch: s.currentBranch,
      memory: await memorySaving.then(() => 'resolved', (e) => e.message),
      memoryBranch: memory.currentBranch,
    };
  }, id);
  assert.equal(r.outcome, 'resolved', 'the write committed: it does not reject');
  assert.deepEqual(r.heard, [['add', 'main']]);
  assert.deepEqual(r.items, ['saved']);
  assert.equal(r.branch, 'main');
  assert.equal(r.memory, 'resolved');
  assert.equal(r.memoryBranch, 'main');
});

test("a worker's write is seen by a page", async () => {
  const { page } = await openHarness(env);
  const id = fresh('worker');
  await collect(page, 'worker', id);
  // The worker of the worker tests (tests/pages/session-worker.js) runs an `add` when asked.
  await page.evaluate(
    (id) =>
      new Promise((ok, fail) => {
        const worker = new Worker('/tests/pages/session-worker.js', { type: 'module' });
        worker.onerror = (e) => fail(new Error(e.message || 'the worker failed to load'));
        worker.onmessage = ({ data }) => {
          if (data.ready) worker.postMessage({ seq: 1, op: 'add', args: [id, [{ role: 'user', content: 'from a worker' }]] });
          else if (data.ok) ok();
          else fail(new Error(data.error?.message));
        };
      }),
    id,
  );
  await waitFor(page, 'worker', 1);
  const [event] = await eventsOf(page, 'worker');
  assert.equal(event.type, 'add');
  assert.equal(event.count, 1);
});

test('each listener of another tab gets its own event: one that changes it changes nothing another listener, or a watch, hears', async () => {
  const { page: writer, context } = await openHarness(env);
  const { page: reader } = await openHarness(env, context);
  const dbName = fresh('own-copy');
  await reader.evaluate(async (dbName) => {
    window.heard = [];
    window.watched = [];
    // The first listener changes what it is given, an update's fields too.
    new lib.IndexedDbSession('chat', { dbName }).subscribe((e) => {
      e.type = 'changed';
      e.sessionId = 'another';
      e.fields?.push('state');
    });
    new lib.IndexedDbSession('chat', { dbName }).subscribe((e) => window.heard.push([e.type, e.sessionId, ...(e.fields ?? [])]));
    const stop = lib.watchSessions({ dbName }, (c) => window.watched.push([c.type, c.sessionId]));
    await stop.ready;
  }, dbName);
  await writer.evaluate(async (dbName) => {
    const s = new lib.IndexedDbSession('chat', { dbName });
    await s.addItems([{ role: 'user', content: 'hi' }]);
    await s.update({ title: 'Hello' });
  }, dbName);
  await reader.waitForFunction(() => window.heard.length === 2 && window.watched.length === 2, null, { timeout: 5000 });
  assert.deepEqual(await reader.evaluate(() => [window.heard, window.watched]), [
    [['add', 'chat'], ['update', 'chat', 'title']],
    [['created', 'chat'], ['updated', 'chat']],
  ]);
  // A MemorySession's listeners alike.
  const memory = await reader.evaluate(async () => {
    const s = new lib.MemorySession();
    const heard = [];
    s.subscribe((e) => e.fields?.push('state'));
    s.subscribe((e) => heard.push(e.fields));
    await s.update({ title: 'Hello' });
    return heard;
  });
  assert.deepEqual(memory, [['title']]);
});

test('watchSessions: a sidebar hears sessions created, updated and deleted, only its user’s', async () => {
  const { page: writer, context } = await openHarness(env);
  const { page: sidebar } = await openHarness(env, context);
  const dbName = fresh('watch-db');
  await writer.evaluate(async (dbName) => {
    const old = new lib.IndexedDbSession('old', { dbName, userId: 'ann' });
    // Written, and its event posted, before the sidebar starts watching.
    await new Promise((posted) => {
      const stop = old.subscribe(() => (stop(), posted()));
      old.addItems([{ role: 'user', content: 'before' }]);
    });
  }, dbName);
  await sidebar.evaluate(async (dbName) => {
    window.changes = [];
    window.stopWatching = lib.watchSessions({ dbName, userId: 'ann' }, (c) => window.changes.push(c));
    // The sessions that exist now are known: the list the changes follow from.
    window.start = (await window.stopWatching.ready).map((s) => [s.sessionId, s.userId, s.itemCount]);
    // `userId: undefined` is no filter, as in listSessions: every user's sessions.
    window.everyone = [];
    window.stopEveryone = lib.watchSessions({ dbName, userId: undefined }, (c) => window.everyone.push(c));
    await window.stopEveryone.ready;
  }, dbName);
  assert.deepEqual(await sidebar.evaluate(() => window.start), [['old', 'ann', 1]]);
  await writer.evaluate(async (dbName) => {
    await new lib.IndexedDbSession('old', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'again' }]);
    await new lib.IndexedDbSession('new', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'hi' }]);
    await new lib.IndexedDbSession('bobs', { dbName, userId: 'bob' }).addItems([{ role: 'user', content: 'not ann' }]);
  }, dbName);
  // (A session created and deleted before a sidebar's read could see it is told neither.)
  await sidebar.waitForFunction(() => window.everyone.some((c) => c.sessionId === 'bobs'), null, { timeout: 5000 });
  await writer.evaluate(async (dbName) => {
    await lib.deleteSession('old', { dbName });
    await lib.deleteSession('bobs', { dbName });
    await new lib.IndexedDbSession('new', { dbName, userId: 'ann' }).update({ title: 'Hello' });
    await lib.repairSession('new', { dbName });
  }, dbName);
  await sidebar.waitForFunction(() => window.changes.length >= 5 && window.everyone.filter((c) => c.sessionId === 'bobs').length >= 2, null, { timeout: 5000 });
  const changes = await sidebar.evaluate(() => window.changes.map((c) => [c.type, c.sessionId, c.change ?? null]));
  assert.deepEqual(changes, [
    ['updated', 'old', 'add'],
    ['created', 'new', 'add'],
    ['deleted', 'old', 'delete'],
    ['updated', 'new', 'update'],
    ['updated', 'new', 'replace'],
  ]);
  const everyone = await sidebar.evaluate(() => window.everyone.filter((c) => c.sessionId === 'bobs').map((c) => c.type));
  assert.deepEqual(everyone, ['created', 'deleted']);
});

test('MemorySession: subscribe hears the changes made through the object', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const s = new lib.MemorySession();
    const seen = [];
    const stop = s.subscribe((e) => seen.push([e.type, e.count ?? null]));
    await s.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
    await s.popItem();
    stop();
    await s.clearSession();
    let bad;
    try {
      s.subscribe('not a function');
    } catch (e) {
      bad = `${e.name} ${e.code} ${e.message}`;
    }
    return { seen, bad };
  });
  assert.deepEqual(r.seen, [['add', 2], ['pop', null]]);
  assert.equal(r.bad, 'SessionError INVALID_OPTIONS subscribe() takes a listener function, got string', 'refused as any bad argument is');
});

test('a history transaction retried under its operation id (a run resumed) changed nothing, and is no event; it still resolves to undefined (both session kinds, and on a branch)', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const out = {};
    const sessions = {
      indexeddb: new lib.IndexedDbSession(`retried-${Math.random()}`),
      memory: new lib.MemorySession(),
      branch: new lib.IndexedDbSession(`retried-branch-${Math.random()}`),
    };
    await sessions.branch.addItems([{ role: 'user', content: 'q0' }, { role: 'assistant', content: 'a0' }]);
    await sessions.branch.createBranchFromTurn(1, 'edit');
    for (const [name, s] of Object.entries(sessions)) {
      const seen = [];
      s.subscribe((e) => seen.push(e.change ? `${e.type}:${e.change}` : e.type));
      const save = { operationId: 'save-1', transaction: { type: 'append_items', items: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }] } };
      const first = await s.applyHistoryTransaction(save);
      const again = await s.applyHistoryTransaction(save);
      await new Promise((ok) => setTimeout(ok, 100));
      out[name] = { seen, results: [first, again], items: (await s.getItems()).length };
    }
    // What a caller puts under the mark a wrapper of this package names its events with is read
    // where a throw is caught: the write stands, with its own event.
    const marked = new lib.MemorySession();
    const heard = [];
    marked.subscribe((e) => heard.push(e.change ? `${e.type}:${e.change}` : e.type));
    const hostile = { toString() { throw new Error('no'); } };
    const written = await marked
      .applyHistoryTransaction({ operationId: 'h', transaction: { type: 'append_items', items: [{ role: 'user', content: 'q' }] }, [Symbol.for('agent-sessions.changeEvent')]: hostile })
      .then((v) => v ?? 'undefined', (e) => `${e.name}: ${e.message}`);
    out.hostile = { written, heard };
    return out;
  });
  assert.deepEqual(r.hostile, { written: 'undefined', heard: ['replace:transaction'] });
  for (const name of ['indexeddb', 'memory', 'branch']) {
    assert.deepEqual(r[name].seen, ['replace:transaction'], name);
    assert.deepEqual(r[name].results, [undefined, undefined], name);
    assert.equal(r[name].items, 2, name);
  }
});

/** Calls `call(session)` on a session never stored and on one holding an item, of each kind:
 * for each, the events its listener heard (each as `heard` maps it), what the call resolved to
 * and the branch it is on after; and whether the session never stored is listed after. Both
 * functions run in the page. */
async function onStoredAndNot(call, heard) {
  const { page } = await openHarness(env);
  return page.evaluate(
    async ({ call, heard }) => {
      [call, heard] = [eval(call), eval(heard)];
      const out = {};
      const stored = new lib.IndexedDbSession(`stored-${Math.random()}`);
      await stored.addItems([{ role: 'user', content: 'q' }]);
      const remembered = new lib.MemorySession();
      await remembered.addItems([{ role: 'user', content: 'q' }]);
      const sessions = { never: new lib.IndexedDbSession(`never-${Math.random()}`), neverMemory: new lib.MemorySession(), stored, remembered };
      for (const [name, s] of Object.entries(sessions)) {
        const seen = [];
        s.subscribe((e) => seen.push(heard(e)));
        const result = await call(s);
        await new Promise((ok) => setTimeout(ok, 100));
        out[name] = { seen, result: result === undefined ? 'undefined' : result, branch: s.currentBranch };
      }
      out.listed = (await lib.listSessions()).some((s) => s.sessionId === sessions.never.sessionId);
      return out;
    },
    { call: String(call), heard: String(heard) },
  );
}

test('a clear of a session never stored writes nothing and is no event; a clear of a stored one is, and both resolve to undefined (both session kinds)', async () => {
  const r = await onStoredAndNot(
    (s) => s.clearSession(),
    (e) => e.type,
  );
  assert.deepEqual(r.never, { seen: [], result: 'undefined', branch: 'main' });
  assert.deepEqual(r.neverMemory, { seen: [], result: 'undefined', branch: 'main' });
  assert.deepEqual(r.stored, { seen: ['clear'], result: 'undefined', branch: 'main' });
  assert.deepEqual(r.remembered, { seen: ['clear'], result: 'undefined', branch: 'main' });
  assert.equal(r.listed, false, 'no empty session appears in any list');
});

test('a switch to the main branch of a session never stored writes nothing and is no event; one of a stored session is, and both resolve to undefined (both session kinds)', async () => {
  const r = await onStoredAndNot(
    (s) => s.switchBranch('main'),
    (e) => [e.type, e.change, e.branchId],
  );
  assert.deepEqual(r.never, { seen: [], result: 'undefined', branch: 'main' });
  assert.deepEqual(r.neverMemory, { seen: [], result: 'undefined', branch: 'main' });
  assert.deepEqual(r.stored, { seen: [['branch', 'switch', 'main']], result: 'undefined', branch: 'main' });
  assert.deepEqual(r.remembered, { seen: [['branch', 'switch', 'main']], result: 'undefined', branch: 'main' });
  assert.equal(r.listed, false, 'no empty session appears in any list');
});

test('what an event says of a write is what the write was called with, whatever the caller changes while it is under way', async () => {
  const { page } = await openHarness(env);
  const id = fresh('taken');
  await collect(page, 'taken', id);
  const stored = await page.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id);
    const batch = [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }];
    const adding = s.addItems(batch);
    batch.length = 0; // an array reused for the next turn
    const changes = { title: 'First' };
    const updating = s.update(changes);
    changes.summary = 'added later';
    await Promise.all([adding, updating]);
    // A field given as undefined is not set, and not named.
    await s.update({ summary: 'Set', title: undefined });
    return (await s.getItems()).length;
  }, id);
  assert.equal(stored, 2);
  await waitFor(page, 'taken', 3);
  const events = await eventsOf(page, 'taken');
  assert.deepEqual(events.map((e) => [e.type, e.count ?? e.fields]), [['add', 2], ['update', ['title']], ['update', ['summary']]]);
});

test('switchBranch is an event: other tabs learn the branch a session is on', async () => {
  const { page: writer, context } = await openHarness(env);
  const { page: reader } = await openHarness(env, context);
  const id = fresh('switch');
  await collect(reader, 'switch', id);
  await writer.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id);
    await s.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
    await s.createBranchFromTurn(1, 'alt');
    await s.switchBranch('main');
  }, id);
  await waitFor(reader, 'switch', 3);
  const events = await eventsOf(reader, 'switch');
  assert.deepEqual(events.map((e) => [e.type, e.change ?? null, e.branchId ?? null, e.branch]), [
    ['add', null, null, 'main'],
    ['branch', 'create', 'alt', 'alt'],
    ['branch', 'switch', 'main', 'main'],
  ]);
});

test('a worker that closes right after its write has posted its event', async () => {
  const { page } = await openHarness(env);
  const id = fresh('closing-worker');
  await collect(page, 'closing', id);
  await page.evaluate(
    (id) =>
      new Promise((ok, fail) => {
        const source = `
          const { IndexedDbSession } = await import(${JSON.stringify(location.origin + '/pkg/index.js')});
          await new IndexedDbSession(${JSON.stringify(id)}).addItems([{ role: 'user', content: 'last words' }]);
          postMessage('done');
          close();`;
        const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })), { type: 'module' });
        worker.onerror = (e) => fail(new Error(e.message || 'the worker failed'));
        worker.onmessage = () => ok();
      }),
    id,
  );
  await waitFor(page, 'closing', 1);
  const [event] = await eventsOf(page, 'closing');
  assert.deepEqual([event.type, event.count], ['add', 1]);
});

test('subscribe is bound to its object: passed on by itself (useSyncExternalStore), it works, and is the same function each time', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (id) => {
    /** `s.subscribe` called by itself: whether it heard a write, is the same function each
     * time, and is not an own enumerable field. */
    const check = async (s) => {
      const subscribe = s.subscribe;
      const heard = [];
      const stop = subscribe(() => heard.push(1));
      await s.addItems([{ role: 'user', content: 'q' }]);
      for (let i = 0; i < 100 && heard.length < 1; i++) await new Promise((ok) => setTimeout(ok, 10));
      stop();
      return { heard: heard.length, same: s.subscribe === subscribe, own: Object.keys(s).includes('subscribe') };
    };
    const out = {};
    for (const kind of ['indexeddb', 'memory']) out[kind] = await check(make(kind, id));
    // A SyncedSession's too.
    const synced = new lib.SyncedSession(new lib.IndexedDbSession(`${id}-synced`), new lib.MemorySession(`${id}-remote`), { syncOnOpen: false });
    out.synced = await check(synced);
    synced.close();
    return out;
  }, fresh('bound'));
  assert.deepEqual(r, { indexeddb: { heard: 1, same: true, own: false }, memory: { heard: 1, same: true, own: false }, synced: { heard: 1, same: true, own: false } });
});

test('without BroadcastChannel, the listeners of the same page still hear its writes', async () => {
  const context = await env.browser.newContext();
  await context.addInitScript(() => {
    delete globalThis.BroadcastChannel;
  });
  const { page } = await openHarness(env, context);
  const id = fresh('no-channel');
  await collect(page, 'local', id);
  const r = await page.evaluate(async (id) => {
    const changes = [];
    const stop = lib.watchSessions({}, (c) => changes.push([c.type, c.sessionId]));
    await stop.ready;
    await new lib.IndexedDbSession(id).addItems([{ role: 'user', content: 'q' }]);
    await new Promise((ok) => setTimeout(ok, 50));
    stop();
    return { channel: typeof BroadcastChannel, changes };
  }, id);
  assert.equal(r.channel, 'undefined');
  assert.deepEqual(r.changes, [['created', id]]);
  await waitFor(page, 'local', 1);
  assert.deepEqual((await eventsOf(page, 'local')).map((e) => e.type), ['add']);
  await context.close();
});

test('watchSessions: no call after stop(), even of a change held back while the sessions were read', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (dbName) => {
    await new lib.IndexedDbSession('seed', { dbName }).addItems([{ role: 'user', content: 'seed' }]);
    // The first read of both watches waits behind a transaction held on the sessions store.
    const release = await holdStores(dbName, ['agent_sessions']);
    const stopped = [];
    const kept = [];
    const stop = lib.watchSessions({ dbName }, (c) => stopped.push(c.type));
    const keep = lib.watchSessions({ dbName }, (c) => kept.push(c.type));
    // Another tab's write, as its message arrives while the reads wait: held back by both.
    new BroadcastChannel(`agent-sessions:${dbName}`).postMessage([{ type: 'add', count: 1, sessionId: 'seed', userId: null, dbName }]);
    await new Promise((ok) => setTimeout(ok, 50));
    stop();
    await release();
    await Promise.all([stop.ready, keep.ready]);
    await new Promise((ok) => setTimeout(ok, 50));
    keep();
    return { stopped, kept };
  }, fresh('watch-stop'));
  assert.deepEqual(r, { stopped: [], kept: ['updated'] });
});

test('watchSessions: bad options reject ready and end the watch; a clear of a session never stored, a switch to its main branch or a rewrite of a call it lacks, is no change; a deletion names its user', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (dbName) => {
    const failure = async (options) => {
      const stop = lib.watchSessions(options, () => {});
      return stop.ready.then(() => 'resolved', (e) => `${e.name} ${e.code}`);
    };
    const bad = {
      string: await failure('my-db'),
      emptyDb: await failure({ dbName: '' }),
      emptyUser: await failure({ dbName, userId: '' }),
    };
    const changes = [];
    const stop = lib.watchSessions({ dbName, userId: 'ann' }, (c) => changes.push([c.type, c.sessionId, c.userId, c.change]));
    await stop.ready;
    await new lib.IndexedDbSession('never-written', { dbName, userId: 'ann' }).clearSession();
    await new lib.IndexedDbSession('never-written', { dbName, userId: 'ann' }).switchBranch('main');
    // A rewrite of a call the session does not hold writes nothing either.
    const replacement = { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}' };
    await new lib.IndexedDbSession('never-written', { dbName, userId: 'ann' }).applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement }] });
    bad.listed = (await lib.listSessions({ dbName })).map((s) => s.sessionId);
    await new lib.IndexedDbSession('chat', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'q' }]);
    // (A session created and deleted before the watch's read could see it is told neither.)
    for (let i = 0; i < 500 && changes.length < 1; i++) await new Promise((ok) => setTimeout(ok, 10));
    await lib.deleteSession('chat', { dbName });
    for (let i = 0; i < 100 && changes.length < 2; i++) await new Promise((ok) => setTimeout(ok, 10));
    await new Promise((ok) => setTimeout(ok, 50));
    stop();
    return { bad, changes };
  }, fresh('watch-options'));
  assert.deepEqual(r.bad, {
    string: 'SessionError INVALID_OPTIONS',
    emptyDb: 'SessionError INVALID_OPTIONS',
    emptyUser: 'SessionError INVALID_USER_ID',
    listed: [],
  });
  assert.deepEqual(r.changes, [
    ['created', 'chat', 'ann', 'add'],
    ['deleted', 'chat', 'ann', 'delete'],
  ]);
});

test('watchSessions: a change held back while the sessions were read reaches the listener after ready gave the list, so a sidebar drawn from it hears the change after', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (dbName) => {
    await new lib.IndexedDbSession('seed', { dbName }).addItems([{ role: 'user', content: 'seed' }]);
    const release = await holdStores(dbName, ['agent_sessions']);
    let sidebar = null;
    const heard = [];
    const stop = lib.watchSessions({ dbName }, (c) => heard.push([c.type, c.sessionId, sidebar !== null]));
    // Another tab's write, as its message arrives while the read waits.
    new BroadcastChannel(`agent-sessions:${dbName}`).postMessage([{ type: 'add', count: 1, sessionId: 'seed', userId: null, dbName }]);
    await new Promise((ok) => setTimeout(ok, 50));
    await release();
    sidebar = (await stop.ready).map((s) => s.sessionId);
    await new Promise((ok) => setTimeout(ok, 50));
    stop();
    return { sidebar, heard };
  }, fresh('watch-after-ready'));
  assert.deepEqual(r, { sidebar: ['seed'], heard: [['updated', 'seed', true]] });
});

test('watchSessions: an event another tab posts late cannot bring back a deleted chat in a sidebar, nor hide one written again since; a real creation and deletion are still told', async () => {
  const { page: writer, context } = await openHarness(env);
  const { page: sidebar } = await openHarness(env, context);
  const dbName = fresh('watch-late');
  await writer.evaluate(async (dbName) => {
    const chat = new lib.IndexedDbSession('chat', { dbName, userId: 'ann' });
    // Written, and its event posted, before the sidebar starts watching.
    await new Promise((posted) => {
      const stop = chat.subscribe(() => (stop(), posted()));
      chat.addItems([{ role: 'user', content: 'q' }]);
    });
  }, dbName);
  await sidebar.evaluate(async (dbName) => {
    window.changes = [];
    window.stopWatching = lib.watchSessions({ dbName, userId: 'ann' }, (c) => window.changes.push([c.type, c.sessionId]));
    await window.stopWatching.ready;
  }, dbName);
  // A third tab's deletion of 'chat', posted only after 'chat' was written again (as a tab whose
  // post waits behind a busy main thread does): 'chat' is still there, and is written to.
  await writer.evaluate((dbName) => new BroadcastChannel(`agent-sessions:${dbName}`).postMessage([{ type: 'delete', sessionId: 'chat', dbName }]), dbName);
  await writer.evaluate((dbName) => new lib.IndexedDbSession('chat', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'again' }]), dbName);
  await sidebar.waitForFunction(() => window.changes.length >= 1, null, { timeout: 5000 });
  await writer.evaluate((dbName) => lib.deleteSession('chat', { dbName }), dbName);
  await sidebar.waitForFunction(() => window.changes.length >= 2, null, { timeout: 5000 });
  // A write to 'chat' that committed before the deletion, its event posted after it was heard.
  await writer.evaluate(
    (dbName) => new BroadcastChannel(`agent-sessions:${dbName}`).postMessage([{ type: 'add', count: 1, sessionId: 'chat', userId: 'ann', dbName }]),
    dbName,
  );
  await writer.evaluate(async (dbName) => {
    await new lib.IndexedDbSession('other', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'q' }]);
    await lib.deleteSession('other', { dbName });
    await new lib.IndexedDbSession('last', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'q' }]);
  }, dbName);
  await sidebar.waitForFunction(() => window.changes.some(([, id]) => id === 'last'), null, { timeout: 5000 });
  const changes = await sidebar.evaluate(() => (window.stopWatching(), window.changes));
  // 'other' was deleted before any read of the sidebar's could see it: its creation and deletion
  // are not told (they cancel out), or are both told.
  const other = changes.filter(([, id]) => id === 'other').map(([type]) => type);
  assert.ok(other.length === 0 || other.join() === 'created,deleted', `other: ${other}`);
  assert.deepEqual(
    changes.filter(([, id]) => id !== 'other'),
    [
      ['updated', 'chat'],
      ['deleted', 'chat'],
      ['created', 'last'],
    ],
  );
  const listed = await sidebar.evaluate((dbName) => lib.listSessions({ dbName, userId: 'ann' }).then((l) => l.map((s) => s.sessionId)), dbName);
  assert.deepEqual(listed, ['last']);
});

test('update() that sets nothing (a title whose expectedTitle does not hold, no field) writes nothing and tells nothing: no empty session appears in any list, no tab redraws for it', async () => {
  const { page, context } = await openHarness(env);
  const id = fresh('ghost');
  const r = await page.evaluate(async (id) => {
    const seen = [];
    const stop = lib.watchSessions({}, (event) => seen.push([event.type, event.sessionId]));
    await stop.ready;
    const session = new lib.IndexedDbSession(id);
    const heard = [];
    session.subscribe((event) => heard.push(event.type));
    // A title made for a chat deleted meanwhile: its condition names the title it had.
    const returned = await session.update({ title: 'Made too late', expectedTitle: 'my first question' });
    await new Promise((ok) => setTimeout(ok, 100));
    const listedBefore = (await lib.listSessions()).some((s) => s.sessionId === id);
    const heardBefore = [...heard];
    // A session named before its first message is made, as before.
    await session.update({ title: 'Named first', expectedTitle: null });
    await new Promise((ok) => setTimeout(ok, 100));
    const listed = (await lib.listSessions()).find((s) => s.sessionId === id);
    // A session that exists alike: a title that lost to a rename (the runner's autoTitle after
    // the user renamed the chat), or no field at all, writes nothing and tells no tab.
    await session.update({ title: 'Made by the model', expectedTitle: null });
    await session.update({});
    await new Promise((ok) => setTimeout(ok, 100));
    const keptTitle = (await session.getInfo()).title;
    stop();
    // A MemorySession alike: nothing written, nothing told.
    const memory = new lib.MemorySession();
    const told = [];
    memory.subscribe((event) => told.push(event.type));
    await memory.update({ title: 'Made too late', expectedTitle: 'my first question' });
    const untouched = (await memory.getInfo()).updatedAt;
    await memory.update({ title: 'Named first', expectedTitle: null });
    await memory.update({ title: 'Made by the model', expectedTitle: null });
    await memory.update({});
    return { returned: returned === undefined, listedBefore, heardBefore, heard, keptTitle, title: listed?.title, seen: seen.filter(([, s]) => s === id).map(([t]) => t), told, untouched, memoryTitle: (await memory.getInfo()).title };
  }, id);
  assert.equal(r.keptTitle, 'Named first');
  assert.deepEqual(r.told, ['update'], 'the MemorySession told only the update that set something');
  assert.equal(r.untouched, null);
  assert.equal(r.memoryTitle, 'Named first');
  assert.equal(r.returned, true, 'update() resolves to undefined');
  assert.equal(r.listedBefore, false, 'no empty session made');
  assert.deepEqual(r.heardBefore, [], 'and no event for it');
  assert.deepEqual(r.heard, ['update']);
  assert.equal(r.title, 'Named first');
  assert.deepEqual(r.seen, ['created']);
  await context.close();
});

test('update() whose title its expectedTitle kept from being set names in its event only the fields it set, and resolves to undefined (both session kinds)', async () => {
  const { page, context } = await openHarness(env);
  const id = fresh('partly');
  const r = await page.evaluate(async (id) => {
    const out = {};
    for (const [name, session] of [['stored', new lib.IndexedDbSession(id)], ['memory', new lib.MemorySession()]]) {
      const heard = [];
      session.subscribe((event) => heard.push(event.fields));
      await session.addItems([{ role: 'user', content: 'my first question' }]);
      await session.update({ title: 'Renamed by the user' });
      // (Their events heard first.)
      while (heard.length < 2) await new Promise((ok) => setTimeout(ok, 10));
      heard.length = 0;
      const returned = await session.update({ title: 'Made by the model', summary: 'A summary', expectedTitle: 'my first question' });
      await session.update({ title: 'Renamed again', topics: ['t'], expectedTitle: 'Renamed by the user' });
      await new Promise((ok) => setTimeout(ok, 100));
      const info = await session.getInfo();
      out[name] = { heard, returned: returned === undefined ? 'undefined' : returned, title: info.title, summary: info.summary };
    }
    return out;
  }, id);
  for (const name of ['stored', 'memory']) {
    assert.deepEqual(r[name], { heard: [['summary'], ['title', 'topics']], returned: 'undefined', title: 'Renamed again', summary: 'A summary' }, name);
  }
  await context.close();
});

test('applyHistoryMutations that replaces nothing (no call of its id, no mutation) is no event; one that replaces a call is, and both resolve to undefined (both session kinds, and on a branch)', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const out = {};
    const branch = new lib.IndexedDbSession(`mutated-branch-${Math.random()}`);
    const sessions = { indexeddb: new lib.IndexedDbSession(`mutated-${Math.random()}`), memory: new lib.MemorySession(), branch };
    const call = { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}' };
    for (const [name, s] of Object.entries(sessions)) {
      await s.addItems([{ role: 'user', content: 'q' }, call, { type: 'function_call_result', callId: 'c1', name: 'f', status: 'completed', output: { type: 'text', text: 'ok' } }]);
      if (name === 'branch') {
        // (The branch shows none of main's items: a call of its own.)
        await s.createBranchFromTurn(1, 'edit');
        await s.addItems([{ role: 'user', content: 'q again' }, call]);
      }
      const seen = [];
      s.subscribe((e) => seen.push(e.change ? `${e.type}:${e.change}` : e.type));
      // (The events of the writes above, told after them, are not counted.)
      await new Promise((ok) => setTimeout(ok, 100));
      seen.length = 0;
      const replacement = { ...call, arguments: '{"a":1}' };
      const results = [
        await s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'other', replacement }] }),
        await s.applyHistoryMutations({ mutations: [] }),
        await s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement }] }),
      ];
      await new Promise((ok) => setTimeout(ok, 100));
      out[name] = { seen, results: results.map(String), args: (await s.getItems()).filter((i) => i.type === 'function_call').map((i) => i.arguments) };
    }
    return out;
  });
  for (const name of ['indexeddb', 'memory', 'branch']) {
    assert.deepEqual(r[name].seen, ['replace:mutations'], name);
    assert.deepEqual(r[name].results, ['undefined', 'undefined', 'undefined'], name);
    assert.deepEqual(r[name].args, ['{"a":1}'], name);
  }
});
