// The package in a dedicated module worker (`new Worker(url, { type: 'module' })`): the entry's
// top-level await instantiates the wasm there, and the worker and the page share one IndexedDB
// database, each seeing what the other wrote.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

const ITEMS = [
  { role: 'user', content: 'Written by the worker' },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok 👋🏽', annotations: [] }] },
  { type: 'function_call', callId: 'call_1', name: 'lookup', arguments: '{"q":"x"}', status: 'completed' },
  { type: 'future_item', nested: { list: [1, null, [true]], empty: {} }, nothing: null },
];

describe('IndexedDbSession in a dedicated worker', () => {
  let context;
  let page;
  before(async () => {
    context = await env.browser.newContext();
    page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${env.url}/tests/pages/worker.html`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(await page.evaluate(() => window.workerErrors), [], 'the module worker loads the package');
  });
  after(async () => {
    await context?.close();
  });

  test('the package runs inside the worker, not in the page', async () => {
    const r = await page.evaluate(async (items) => ({
      scope: await inWorker('scope'),
      memory: await inWorker('memory', items),
    }), ITEMS);
    assert.deepEqual(r.scope, { isWorker: true, hasWindow: false });
    assert.deepStrictEqual(r.memory.items, ITEMS);
    assert.match(r.memory.id, /^[0-9a-f-]{36}$/);
  });

  test('the page reads what the worker wrote, verbatim', async () => {
    const r = await page.evaluate(async (items) => {
      await inWorker('add', 'from-worker', items, { userId: 'alice' });
      const session = new lib.IndexedDbSession('from-worker', { userId: 'alice' });
      return {
        items: await session.getItems(),
        newest: await session.getItems(2),
        listed: (await lib.listSessions({ userId: 'alice' })).find((s) => s.sessionId === 'from-worker'),
        wrongUser: await new lib.IndexedDbSession('from-worker', { userId: 'bob' })
          .getItems()
          .then(() => 'resolved', (e) => e.code),
      };
    }, ITEMS);
    assert.deepStrictEqual(r.items, ITEMS);
    assert.deepStrictEqual(r.newest, ITEMS.slice(2));
    assert.equal(r.listed.itemCount, ITEMS.length);
    assert.equal(r.listed.userId, 'alice');
    assert.equal(r.wrongUser, 'USER_MISMATCH', 'the owner set in the worker holds in the page');
  });

  test('the worker branches a chat through the second module, and the page reads the branch', async () => {
    const r = await page.evaluate(async () => {
      const chat = [
        { role: 'user', content: 'q1' },
        { role: 'assistant', content: 'a1' },
        { role: 'user', content: 'q2' },
        { role: 'assistant', content: 'a2' },
      ];
      await new lib.IndexedDbSession('branched-in-worker').addItems(chat);
      const inside = await inWorker('branch', 'branched-in-worker', 2);
      const onBranch = new lib.IndexedDbSession('branched-in-worker', { branch: inside.branchId });
      return { inside, page: (await onBranch.getItems()).map((i) => i.content), main: (await new lib.IndexedDbSession('branched-in-worker').getItems()).length };
    });
    assert.deepEqual(r.inside.branchId, 'turn-2');
    assert.equal(r.inside.current, 'turn-2');
    assert.deepEqual(r.inside.items.map((i) => i.content), ['q1', 'a1']);
    assert.deepEqual(r.page, ['q1', 'a1']);
    assert.equal(r.main, 4);
  });

  test('the worker reads, pops and clears what the page wrote', async () => {
    const r = await page.evaluate(async (items) => {
      const session = new lib.IndexedDbSession('from-page');
      await session.addItems(items);
      const seen = await inWorker('get', 'from-page');
      const popped = await inWorker('pop', 'from-page');
      const afterPop = await session.getItems();
      const listedInWorker = (await inWorker('list')).find((s) => s.sessionId === 'from-page');
      await inWorker('clear', 'from-page');
      const afterClear = await session.getItems();
      await session.addItems([{ role: 'user', content: 'again' }]);
      const existed = await inWorker('remove', 'from-page');
      return {
        seen,
        popped,
        afterPop,
        listedInWorker,
        afterClear,
        existed,
        afterDelete: await session.getItems(),
      };
    }, ITEMS);
    assert.deepStrictEqual(r.seen, ITEMS);
    assert.deepStrictEqual(r.popped, ITEMS.at(-1));
    assert.deepStrictEqual(r.afterPop, ITEMS.slice(0, -1));
    assert.equal(r.listedInWorker.itemCount, ITEMS.length - 1);
    assert.deepEqual(r.afterClear, []);
    assert.equal(r.existed, true);
    assert.deepEqual(r.afterDelete, [], 'deleted by the worker, gone for the page');
  });

  test('page and worker writing to one session at once: nothing lost, each writer keeps its order', async () => {
    const r = await page.evaluate(async () => {
      const batches = (who) =>
        Array.from({ length: 10 }, (_, i) => [
          { role: 'user', content: `${who}-${i}-a` },
          { role: 'assistant', content: `${who}-${i}-b` },
        ]);
      const session = new lib.IndexedDbSession('both');
      await Promise.all([
        inWorker('addEach', 'both', batches('worker')),
        ...batches('page').map((b) => session.addItems(b)),
      ]);
      const fromPage = await session.getItems();
      const fromWorker = await inWorker('get', 'both');
      const listed = (await lib.listSessions()).find((s) => s.sessionId === 'both');
      return { fromPage, fromWorker, listed };
    });
    const texts = r.fromPage.map((i) => i.content);
    assert.equal(texts.length, 40);
    assert.equal(r.listed.itemCount, 40);
    assert.deepStrictEqual(r.fromWorker, r.fromPage, 'both contexts read the same history');
    for (const who of ['worker', 'page']) {
      const mine = texts.filter((t) => t.startsWith(`${who}-`));
      const expected = Array.from({ length: 10 }, (_, i) => [`${who}-${i}-a`, `${who}-${i}-b`]).flat();
      assert.deepEqual(mine, expected, `${who}'s items in the order written`);
    }
    // Each batch is one transaction: its two items are adjacent.
    for (let i = 0; i < texts.length; i += 2) {
      assert.equal(texts[i].replace(/-a$/, ''), texts[i + 1].replace(/-b$/, ''));
    }
  });
});
