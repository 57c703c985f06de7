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
    const errors = [];
    window.addEventListener('error', (e) => errors.push(e.message));
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
    return { wrote, mine: afterStop, other, errors, items: (await s.getItems()).length };
  }, id);
  assert.equal(r.wrote, 'resolved');
  assert.deepEqual(r.mine, ['add'], 'no event after unsubscribing');
  assert.deepEqual(r.other, ['add', 'add'], 'the other listener got both, though one listener threw');
  assert.ok(r.errors.some((m) => m.includes('a broken listener')), 'the throw is reported, not swallowed');
  assert.equal(r.items, 2);
});

test('a listener another one removes while an event is delivered does not get that event, as with DOM events', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id);
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
  }, fresh('removed-during-dispatch'));
  assert.deepEqual(r, ['first add']);
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
    await window.stopWatching.ready; // the sessions that exist now are known
  }, dbName);
  await writer.evaluate(async (dbName) => {
    await new lib.IndexedDbSession('old', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'again' }]);
    await new lib.IndexedDbSession('new', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'hi' }]);
    await new lib.IndexedDbSession('bobs', { dbName, userId: 'bob' }).addItems([{ role: 'user', content: 'not ann' }]);
    await lib.deleteSession('old', { dbName });
    await lib.deleteSession('bobs', { dbName });
    await new lib.IndexedDbSession('new', { dbName, userId: 'ann' }).update({ title: 'Hello' });
    await lib.repairSession('new', { dbName });
  }, dbName);
  await sidebar.waitForFunction(() => window.changes.length >= 5, null, { timeout: 5000 });
  const changes = await sidebar.evaluate(() => window.changes.map((c) => [c.type, c.sessionId, c.change ?? null]));
  assert.deepEqual(changes, [
    ['updated', 'old', 'add'],
    ['created', 'new', 'add'],
    ['deleted', 'old', null],
    ['updated', 'new', 'update'],
    ['updated', 'new', 'replace'],
  ]);
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
