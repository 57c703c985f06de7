// The session protocol through the package's public JS API, in headless Chromium, for both
// IndexedDbSession (against real IndexedDB) and MemorySession.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness, reload } from './harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

let counter = 0;
const fresh = (prefix) => `${prefix}-${++counter}`;

/** Items of every shape the Responses API and the SDK use, and the awkward cases. */
function richItems() {
  return [
    { role: 'user', content: 'Hello' },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'こんにちは 👋🏽 مرحبا שלום' }] },
    {
      type: 'message',
      role: 'assistant',
      id: 'msg_1',
      status: 'completed',
      content: [{ type: 'output_text', text: 'He said "hi" and \'bye\' \\ back', annotations: [] }],
    },
    { type: 'function_call', callId: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
    { type: 'function_call_output', call_id: 'call_1', output: "'; DROP TABLE agent_messages; --" },
    { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'think' }] },
    {
      type: 'some_future_item',
      unknownField: { nested: [[1, [2, [3, null]]], { deep: { deeper: [true, false, 0, -1.5, 1e300] } }] },
      nothing: null,
      empty: {},
      emptyList: [],
      emptyString: '',
    },
    { role: 'system', content: 'x'.repeat(1024 * 1024) },
  ];
}

const KINDS = ['indexeddb', 'memory'];

for (const kind of KINDS) {
  describe(`${kind}: session protocol`, () => {
    let page;
    before(async () => {
      ({ page } = await openHarness(env));
    });

    test('items come back verbatim: unknown fields, nesting, nulls, unicode, quotes, 1 MB', async () => {
      const items = richItems();
      const id = fresh('verbatim');
      const got = await page.evaluate(
        async ({ kind, id, items }) => {
          const s = make(kind, id);
          await s.addItems(items);
          const first = await s.getItems();
          const second = await s.getItems();
          return { first, second };
        },
        { kind, id, items },
      );
      assert.deepStrictEqual(got.first, items);
      assert.deepStrictEqual(got.second, items);
      assert.equal(got.first[7].content.length, 1024 * 1024);
    });

    test('a session read long before its first write is made at that write: its createdAt and updatedAt, and its main branch’s, are the write’s time (an add, or an update)', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const out = {};
          for (const [name, write] of [
            ['add', (s) => s.addItems([{ role: 'user', content: 'hi' }])],
            ['update', (s) => s.update({ title: 'Named first' })],
          ]) {
            const s = make(kind, `${id}-${name}`);
            await s.getItems();
            await new Promise((ok) => setTimeout(ok, 50));
            const before = Date.now();
            await write(s);
            const info = await s.getInfo();
            const [main] = await s.listBranches();
            out[name] = { created: info.createdAt >= before, updated: info.updatedAt >= before, branch: main.createdAt >= before };
          }
          return out;
        },
        { kind, id: fresh('first-write') },
      );
      assert.deepEqual(r, { add: { created: true, updated: true, branch: true }, update: { created: true, updated: true, branch: true } });
    });

    test('getItems limits: newest n oldest first, larger n, n <= 0, Infinity, settings.limit, override', async () => {
      const id = fresh('limits');
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const items = [1, 2, 3, 4, 5].map((n) => ({ role: 'user', content: `m${n}` }));
          const s = make(kind, id);
          await s.addItems(items);
          const texts = (list) => list.map((i) => i.content);
          const limited = make(kind, id, { settings: { limit: 2 } });
          if (kind === 'memory') await limited.addItems(items);
          return {
            all: texts(await s.getItems()),
            undef: texts(await s.getItems(undefined)),
            three: texts(await s.getItems(3)),
            big: texts(await s.getItems(50)),
            zero: texts(await s.getItems(0)),
            negative: texts(await s.getItems(-2)),
            // As the SDK's MemorySession (`slice(-limit)`) reads them.
            infinite: texts(await s.getItems(Infinity)),
            negativeInfinite: texts(await s.getItems(-Infinity)),
            negativeFraction: texts(await s.getItems(-1.5)),
            settingsDefault: texts(await limited.getItems()),
            settingsOverride: texts(await limited.getItems(4)),
            settingsInfinite: texts(await limited.getItems(Infinity)),
            archive: await (async () => {
              const archived = make(kind, `${id}-archive`);
              await archived.addItems(items);
              await archived.replaceHistory([items[4]]);
              return [texts(await archived.getArchivedItems()), texts(await archived.getArchivedItems({ before: Infinity }))];
            })(),
            settingsProp: limited.settings,
            noSettings: s.settings,
          };
        },
        { kind, id },
      );
      assert.deepEqual(r.all, ['m1', 'm2', 'm3', 'm4', 'm5']);
      assert.deepEqual(r.undef, r.all);
      assert.deepEqual(r.three, ['m3', 'm4', 'm5']);
      assert.deepEqual(r.big, r.all);
      assert.deepEqual(r.zero, []);
      assert.deepEqual(r.negative, []);
      assert.deepEqual([r.infinite, r.negativeInfinite, r.negativeFraction], [r.all, [], []]);
      assert.deepEqual(r.settingsDefault, ['m4', 'm5']);
      assert.deepEqual(r.settingsOverride, ['m2', 'm3', 'm4', 'm5']);
      assert.deepEqual(r.settingsInfinite, r.all, 'Infinity wins over settings.limit, as any limit does');
      // (m5, which the new history ends with too, is not replaced: not archived.)
      assert.deepEqual(r.archive, [r.all.slice(0, 4), []], 'before: Infinity skips every archived item');
      assert.deepEqual(r.settingsProp, { limit: 2 });
      assert.deepEqual(r.noSettings, {});
    });

    test('order comes from sequence numbers, not clocks; a batch keeps its order; [] writes nothing', async () => {
      const id = fresh('order');
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const realNow = Date.now;
          let t = 5_000_000;
          Date.now = () => (t -= 1000); // the clock runs backwards
          try {
            const s = make(kind, id);
            await s.addItems([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }]);
            await s.addItems([{ role: 'user', content: 'c' }]);
            await s.addItems([]);
            const before = await s.getItems();
            const listed = kind === 'indexeddb' ? await lib.listSessions() : [];
            return { texts: before.map((i) => i.content), listed };
          } finally {
            Date.now = realNow;
          }
        },
        { kind, id },
      );
      assert.deepEqual(r.texts, ['a', 'b', 'c']);
      if (kind === 'indexeddb') {
        const info = r.listed.find((s) => s.sessionId === id);
        assert.equal(info.itemCount, 3, 'the empty batch added nothing');
      }
    });

    test('popItem returns the newest, undefined when empty; concurrent pops never share an item', async () => {
      const id = fresh('pop');
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          const emptyPop = await s.popItem();
          await s.addItems([1, 2, 3, 4].map((n) => ({ role: 'user', content: `m${n}` })));
          const popped = await s.popItem();
          const left = await s.getItems();
          // Two pops at once on one object, and (IndexedDB) on two objects for the same session.
          const other = kind === 'indexeddb' ? make(kind, id) : s;
          const both = await Promise.all([s.popItem(), other.popItem()]);
          const after = await s.getItems();
          return {
            emptyPop: emptyPop === undefined,
            popped: popped.content,
            left: left.map((i) => i.content),
            both: both.map((i) => i.content),
            after: after.map((i) => i.content),
          };
        },
        { kind, id },
      );
      assert.equal(r.emptyPop, true);
      assert.equal(r.popped, 'm4');
      assert.deepEqual(r.left, ['m1', 'm2', 'm3']);
      assert.deepEqual([...r.both].sort(), ['m2', 'm3']);
      assert.deepEqual(r.after, ['m1']);
    });

    test('clearSession empties only this session, which stays usable', async () => {
      const [a, b] = [fresh('clear-a'), fresh('clear-b')];
      const r = await page.evaluate(
        async ({ kind, a, b }) => {
          const sa = make(kind, a);
          const sb = make(kind, b);
          await sa.addItems([{ role: 'user', content: 'a1' }]);
          await sb.addItems([{ role: 'user', content: 'b1' }]);
          await sa.clearSession();
          const cleared = await sa.getItems();
          await sa.addItems([{ role: 'user', content: 'a2' }]);
          return { cleared, again: await sa.getItems(), other: await sb.getItems() };
        },
        { kind, a, b },
      );
      assert.deepEqual(r.cleared, []);
      assert.deepEqual(r.again, [{ role: 'user', content: 'a2' }]);
      assert.deepEqual(r.other, [{ role: 'user', content: 'b1' }]);
    });

    test('returned items and the array given to addItems are copies', async () => {
      const id = fresh('copies');
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          const input = [{ role: 'user', content: [{ type: 'input_text', text: 'original' }] }];
          const pending = s.addItems(input);
          // Changed before the write has even happened: must not matter.
          input[0].content[0].text = 'mutated input';
          input.push({ role: 'user', content: 'pushed' });
          await pending;
          const got = await s.getItems();
          got[0].content[0].text = 'mutated output';
          got.push({ role: 'user', content: 'x' });
          const popped = await s.popItem();
          await s.addItems([popped]);
          popped.content = 'mutated popped';
          return await s.getItems();
        },
        { kind, id },
      );
      assert.deepEqual(r, [{ role: 'user', content: [{ type: 'input_text', text: 'original' }] }]);
    });

    test('sessions are isolated', async () => {
      const [a, b] = [fresh('iso-a'), fresh('iso-b')];
      const r = await page.evaluate(
        async ({ kind, a, b }) => {
          const sa = make(kind, a);
          const sb = make(kind, b);
          await sa.addItems([{ role: 'user', content: 'a1' }, { role: 'assistant', content: 'a2' }]);
          await sb.addItems([{ role: 'user', content: 'b1' }, { role: 'assistant', content: 'b2' }]);
          await sa.popItem();
          await sb.addItems([{ role: 'user', content: 'b3' }]);
          return {
            a: (await sa.getItems()).map((i) => i.content),
            b: (await sb.getItems()).map((i) => i.content),
          };
        },
        { kind, a, b },
      );
      assert.deepEqual(r.a, ['a1']);
      assert.deepEqual(r.b, ['b1', 'b2', 'b3']);
    });

    test('calls take effect in call order without awaiting each one', async () => {
      const id = fresh('order-unawaited');
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          const m = (c) => ({ role: 'user', content: c });
          const p1 = s.addItems([m('a')]);
          const p2 = s.addItems([m('b'), m('c')]);
          const seen = s.getItems();
          const popped = s.popItem();
          const p3 = s.addItems([m('d')]);
          const limited = s.getItems(2);
          const cleared = s.clearSession();
          const p4 = s.addItems([m('e')]);
          const end = s.getItems();
          await Promise.all([p1, p2, p3, cleared, p4]);
          const c = (list) => list.map((i) => i.content);
          return {
            seen: c(await seen),
            popped: (await popped).content,
            limited: c(await limited),
            end: c(await end),
          };
        },
        { kind, id },
      );
      assert.deepEqual(r.seen, ['a', 'b', 'c']);
      assert.equal(r.popped, 'c');
      assert.deepEqual(r.limited, ['b', 'd']);
      assert.deepEqual(r.end, ['e']);
    });

    test('getSessionId, sessionId and generated ids', async () => {
      const r = await page.evaluate(async ({ kind }) => {
        const named = make(kind, 'named-id');
        const out = { id: await named.getSessionId(), prop: named.sessionId };
        if (kind === 'memory') {
          const a = new lib.MemorySession();
          const b = new lib.MemorySession(undefined, { settings: { limit: 1 } });
          out.generated = [await a.getSessionId(), b.sessionId];
        }
        return out;
      }, { kind });
      assert.equal(r.id, 'named-id');
      assert.equal(r.prop, 'named-id');
      if (kind === 'memory') {
        const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
        assert.match(r.generated[0], uuid);
        assert.match(r.generated[1], uuid);
        assert.notEqual(r.generated[0], r.generated[1]);
      }
    });
  });
}

describe('indexeddb: durability and sharing', () => {
  test('two session objects with one id (two tabs) see the same history', async () => {
    const { context, page } = await openHarness(env);
    const { page: tab2 } = await openHarness(env, context);
    const id = fresh('tabs');
    await page.evaluate(async (id) => {
      await make('indexeddb', id).addItems([{ role: 'user', content: 'from tab 1' }]);
    }, id);
    const seen = await tab2.evaluate(async (id) => {
      const s = make('indexeddb', id);
      await s.addItems([{ role: 'assistant', content: 'from tab 2' }]);
      return s.getItems();
    }, id);
    const back = await page.evaluate((id) => make('indexeddb', id).getItems(), id);
    assert.deepEqual(seen, [
      { role: 'user', content: 'from tab 1' },
      { role: 'assistant', content: 'from tab 2' },
    ]);
    assert.deepEqual(back, seen);
    await context.close();
  });

  test('history survives a page reload', async () => {
    const { context, page } = await openHarness(env);
    const id = fresh('reload');
    const items = richItems();
    await page.evaluate(async ({ id, items }) => {
      const s = new lib.IndexedDbSession(id, { userId: 'u1' });
      await s.addItems(items.slice(0, 3));
      await s.addItems(items.slice(3));
      await s.popItem();
    }, { id, items });
    await reload(page);
    const got = await page.evaluate((id) => new lib.IndexedDbSession(id, { userId: 'u1' }).getItems(), id);
    assert.deepStrictEqual(got, items.slice(0, 7));
    await context.close();
  });

  test('a session belongs to its user; listSessions filters by user, newest first', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const alice1 = new lib.IndexedDbSession('a1', { userId: 'alice' });
      const alice2 = new lib.IndexedDbSession('a2', { userId: 'alice' });
      const bob1 = new lib.IndexedDbSession('b1', { userId: 'bob' });
      const anon = new lib.IndexedDbSession('n1');
      const m = (c) => [{ role: 'user', content: c }];
      await alice1.addItems(m('alice 1'));
      await new Promise((r) => setTimeout(r, 5));
      await bob1.addItems(m('bob 1'));
      await new Promise((r) => setTimeout(r, 5));
      await alice2.addItems([...m('alice 2'), { role: 'assistant', content: 'ok' }]);
      await new Promise((r) => setTimeout(r, 5));
      await anon.addItems(m('anonymous'));
      const intruder = new lib.IndexedDbSession('a1', { userId: 'bob' });
      const anonymousIntruder = new lib.IndexedDbSession('a1');
      const results = {};
      for (const [name, call] of Object.entries({
        get: () => intruder.getItems(),
        getNewest: () => intruder.getItems(1),
        add: () => intruder.addItems(m('bob writes into alice')),
        pop: () => intruder.popItem(),
        clear: () => intruder.clearSession(),
        anonymousGet: () => anonymousIntruder.getItems(),
      })) {
        results[name] = await attempt(call);
      }
      return {
        results,
        aliceItems: await alice1.getItems(),
        alice: await lib.listSessions({ userId: 'alice' }),
        bob: await lib.listSessions({ userId: 'bob' }),
        all: await lib.listSessions(),
        nobody: await lib.listSessions({ userId: 'carol' }),
        anonUserId: anon.userId,
        aliceUserId: alice1.userId,
      };
    });
    for (const [name, res] of Object.entries(r.results)) {
      assert.equal(res.ok, false, name);
      assert.equal(res.code, 'USER_MISMATCH', name);
      assert.equal(res.name, 'SessionError', name);
      assert.equal(res.isError, true, name);
    }
    assert.match(r.results.get.message, /session "a1" belongs to user "alice" and cannot be opened as user "bob"/);
    assert.deepEqual(r.aliceItems, [{ role: 'user', content: 'alice 1' }]);
    assert.deepEqual(r.alice.map((s) => s.sessionId), ['a2', 'a1']);
    assert.deepEqual(r.alice.map((s) => s.itemCount), [2, 1]);
    assert.deepEqual(r.bob.map((s) => s.sessionId), ['b1']);
    assert.deepEqual(r.all.map((s) => s.sessionId), ['n1', 'a2', 'b1', 'a1']);
    assert.deepEqual(r.nobody, []);
    const info = r.alice[0];
    assert.deepEqual(Object.keys(info).sort(), ['bytes', 'createdAt', 'currentBranch', 'itemCount', 'sessionId', 'summary', 'title', 'turnCount', 'updatedAt', 'userId']);
    assert.equal(info.userId, 'alice');
    assert.ok(info.bytes > 0, 'the size its record keeps');
    assert.ok(info.updatedAt >= info.createdAt && info.createdAt > 1.7e12);
    assert.equal(r.all[0].userId, null);
    assert.equal(r.anonUserId, null, 'the userId property is null for a session without a user');
    assert.equal(r.aliceUserId, 'alice');
    await context.close();
  });

  test('an open session never blocks another tab from deleting or upgrading the database', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const s = new lib.IndexedDbSession('kept-open', { dbName: 'deletable' });
      await s.addItems([{ role: 'user', content: 'before' }]);
      const outcome = await new Promise((ok) => {
        const req = indexedDB.deleteDatabase('deletable');
        req.onblocked = () => ok('blocked');
        req.onsuccess = () => ok('deleted');
        req.onerror = () => ok('error');
      });
      const afterDelete = await s.getItems();
      await s.addItems([{ role: 'user', content: 'after' }]);
      return { outcome, afterDelete, again: await s.getItems() };
    });
    assert.equal(r.outcome, 'deleted');
    assert.deepEqual(r.afterDelete, []);
    assert.deepEqual(r.again, [{ role: 'user', content: 'after' }]);
    await context.close();
  });

  test('newest-n reads are the same in browsers without getAllRecords (the two-request path)', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const run = async (id) => {
        const s = new lib.IndexedDbSession(id);
        await s.addItems([1, 2, 3, 4, 5, 6].map((n) => ({ role: 'user', content: `m${n}` })));
        await s.popItem();
        const c = (list) => list.map((i) => i.content);
        return [c(await s.getItems(2)), c(await s.getItems(5)), c(await s.getItems(50)), c(await s.getItems(0))];
      };
      const withIt = await run('with-get-all-records');
      const had = typeof IDBObjectStore.prototype.getAllRecords === 'function';
      delete IDBObjectStore.prototype.getAllRecords;
      const without = await run('without-get-all-records');
      return { had, withIt, without };
    });
    assert.equal(r.had, true, 'this Chromium has getAllRecords, so both paths ran');
    const expected = [['m4', 'm5'], ['m1', 'm2', 'm3', 'm4', 'm5'], ['m1', 'm2', 'm3', 'm4', 'm5'], []];
    assert.deepEqual(r.withIt, expected);
    assert.deepEqual(r.without, expected);
    await context.close();
  });

  test('a newest-n read, a pop and a newest-turns read ask for the rows with the record, and read what the history holds after another object changed it', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const id = `asked-with-the-record-${Math.random()}`;
      const asked = { getAllRecords: 0 };
      const getAllRecords = IDBObjectStore.prototype.getAllRecords;
      IDBObjectStore.prototype.getAllRecords = function (...args) {
        asked.getAllRecords += 1;
        return getAllRecords.apply(this, args);
      };
      const a = new lib.IndexedDbSession(id);
      const b = new lib.IndexedDbSession(id);
      const m = (n) => ({ role: 'user', content: `m${n}` });
      const read = async (s) => (await s.getItems(2)).map((i) => i.content);
      const reads = [];
      await a.addItems([1, 2, 3, 4].map(m));
      reads.push(await read(a));
      await b.addItems([m(5)]);
      reads.push(await read(a));
      await b.popItem();
      await b.popItem();
      reads.push(await read(a));
      // As long as before, another newest item.
      await b.popItem();
      await b.addItems([m(6)]);
      reads.push(await read(a));
      await b.clearSession();
      reads.push(await read(a));
      await b.addItems([m(7)]);
      const byKnownObject = asked.getAllRecords;
      reads.push(await read(new lib.IndexedDbSession(id)));
      IDBObjectStore.prototype.getAllRecords = getAllRecords;
      // Pops ask for the newest rows with the record the same way.
      const popped = [];
      const pop = async () => (await a.popItem())?.content;
      await b.addItems([m(8), m(9)]);
      popped.push(await pop(), await pop());
      await b.addItems([m(10)]);
      popped.push(await pop(), await pop(), await pop());
      // And reads of the newest turns (each of these items opens a turn).
      const turns = [];
      const newestTurns = async () => (await a.getRecentTurns(2)).map((i) => i.content);
      await a.addItems([m(11), m(12)]);
      turns.push(await newestTurns());
      await b.addItems([m(13)]);
      turns.push(await newestTurns());
      await b.popItem();
      await b.addItems([m(14)]);
      turns.push(await newestTurns());
      return { reads, popped, turns, byKnownObject, byNewObject: asked.getAllRecords - byKnownObject };
    });
    assert.deepEqual(r.reads, [['m3', 'm4'], ['m4', 'm5'], ['m2', 'm3'], ['m2', 'm6'], [], ['m7']]);
    assert.deepEqual(r.popped, ['m9', 'm8', 'm10', 'm7', undefined]);
    assert.deepEqual(r.turns, [['m11', 'm12'], ['m12', 'm13'], ['m12', 'm14']]);
    // An object that has seen the session asks for the range its record named then; a new one
    // asks for the newest rows.
    assert.equal(r.byKnownObject, 0);
    assert.equal(r.byNewObject, 1);
    await context.close();
  });

  test('deleteSession removes a session and its items, and nothing else', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const a = new lib.IndexedDbSession('del-a');
      const b = new lib.IndexedDbSession('del-b');
      await a.addItems([{ role: 'user', content: 'a' }]);
      await b.addItems([{ role: 'user', content: 'b' }]);
      const existed = await lib.deleteSession('del-a');
      const again = await lib.deleteSession('del-a');
      return {
        existed,
        again,
        listed: (await lib.listSessions()).map((s) => s.sessionId),
        a: await a.getItems(),
        b: await b.getItems(),
        reusable: await a.addItems([{ role: 'user', content: 'new' }]).then(() => a.getItems()),
      };
    });
    assert.equal(r.existed, true);
    assert.equal(r.again, false);
    assert.deepEqual(r.listed, ['del-b']);
    assert.deepEqual(r.a, []);
    assert.deepEqual(r.b, [{ role: 'user', content: 'b' }]);
    assert.deepEqual(r.reusable, [{ role: 'user', content: 'new' }]);
    await context.close();
  });

  test('storage layout: stores, records, turns and schema version as DevTools shows them', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const s = new lib.IndexedDbSession('layout', { userId: 'u', dbName: 'layout-db' });
      await s.addItems([
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'q1' },
        { role: 'assistant', content: 'a1' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'q2' }] },
        { type: 'function_call', callId: 'c', name: 'f', arguments: '{}' },
      ]);
      await s.popItem();
      await s.addItems([{ role: 'assistant', content: 'a2' }]);
      await s.close();
      const db = await new Promise((ok, fail) => {
        const req = indexedDB.open('layout-db');
        req.onsuccess = () => ok(req.result);
        req.onerror = () => fail(req.error);
      });
      const all = (store) =>
        new Promise((ok) => {
          const req = db.transaction(store).objectStore(store).getAll();
          req.onsuccess = () => ok(req.result);
        });
      const stores = [...db.objectStoreNames];
      const sessions = await all('agent_sessions');
      const messages = await all('agent_messages');
      const meta = db.transaction('agent_messages').objectStore('agent_messages').keyPath;
      const version = db.version;
      db.close();
      return { stores, sessions, messages, meta, version };
    });
    assert.equal(r.version, 12);
    assert.deepEqual(r.stores, ['agent_archive', 'agent_messages', 'agent_meta', 'agent_operations', 'agent_sessions', 'agent_usage']);
    assert.deepEqual(r.meta, ['sessionId', 'seq']);
    assert.equal(r.sessions.length, 1);
    const rec = r.sessions[0];
    assert.equal(rec.id, 'layout');
    assert.equal(rec.userId, 'u');
    assert.equal(rec.itemCount, 5);
    assert.equal(rec.nextSeq, 5);
    assert.equal(rec.nextOpSeq, 0);
    assert.equal(rec.archivedCount, 0);
    assert.deepEqual(
      r.messages.map((m) => [m.sessionId, m.seq, m.turn]),
      [['layout', 0, 0], ['layout', 1, 1], ['layout', 2, 1], ['layout', 3, 2], ['layout', 4, 2]],
    );
    assert.deepEqual(r.messages[4].item, { role: 'assistant', content: 'a2' });
    // Each row's search terms, under its owner: the text of messages, not of tool calls.
    assert.deepEqual(r.messages[1].terms, ['u\u0000q1']);
    assert.deepEqual(r.messages[3].terms, ['u\u0000q2']);
    assert.deepEqual(r.messages[4].terms, ['u\u0000a2']);
    assert.equal(typeof r.messages[0].createdAt, 'number');
    await context.close();
  });
});

test('memory: its store is a module of its own, loaded by its first call; the calls made before it arrives keep their order and their arguments as given', async () => {
  const { page } = await openHarness(env);
  const memoryWasm = () =>
    page.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/agent_sessions_memory_bg.wasm')).length);
  // Its arguments are checked when it is made, before anything is loaded.
  const made = await page.evaluate(() => {
    const refused = [];
    for (const args of [[''], ['ok', { settings: { limit: 1.5 } }], ['ok', 'options']]) {
      try {
        new lib.MemorySession(...args);
        refused.push(null);
      } catch (e) {
        refused.push(`${e.name} ${e.code}`);
      }
    }
    window.m = new lib.MemorySession('early', { settings: { limit: 2 } });
    const anonymous = new lib.MemorySession();
    return {
      refused,
      id: m.sessionId,
      settings: m.settings,
      branch: m.currentBranch,
      user: m.userId,
      db: m.dbName,
      disposable: m[Symbol.dispose] === m.free,
      uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(anonymous.sessionId),
    };
  });
  assert.deepEqual(made, {
    refused: ['SessionError INVALID_SESSION_ID', 'SessionError INVALID_LIMIT', 'SessionError INVALID_OPTIONS'],
    id: 'early',
    settings: { limit: 2 },
    branch: 'main',
    user: undefined,
    db: undefined,
    disposable: true,
    uuid: true,
  });
  assert.equal(await memoryWasm(), 0, 'neither importing the package nor making a MemorySession loads its module');

  // Offline before the module was ever downloaded: the call rejects, the session stays as it was
  // made, and the next call loads the module.
  await page.route('**/memory.js', (route) => route.abort('internetdisconnected'));
  const offline = await page.evaluate(async () => {
    try {
      await m.addItems([{ role: 'user', content: 'lost?' }]);
      return null;
    } catch (e) {
      return { name: e.name, code: e.code, names: /memory\.js/.test(e.message), cause: e.cause instanceof Error };
    }
  });
  assert.deepEqual(offline, { name: 'SessionError', code: 'MODULE_UNAVAILABLE', names: true, cause: true });
  await page.unroute('**/memory.js');

  // Calls made before the module has arrived, none awaited: they run in their order, each with
  // its arguments as they were when it was called, and the object follows the branch it made.
  const r = await page.evaluate(async () => {
    const events = [];
    m.subscribe((e) => events.push(e.type));
    const items = [{ role: 'user', content: 'first' }];
    const calls = [m.addItems(items), m.createBranchFromTurn(1, 'again'), m.addItems([{ role: 'user', content: 'on the branch' }])];
    items[0].content = 'changed after the call';
    items.push({ role: 'user', content: 'pushed after the call' });
    const settled = await Promise.allSettled([...calls, m.getItems()]);
    const branch = m.currentBranch;
    const onBranch = await m.getItems();
    await m.switchBranch('main');
    return {
      settled: settled.map((s) => s.status),
      seenOnBranch: settled[3].value,
      branch,
      onBranch,
      main: await m.getItems(),
      popped: await m.popItem(),
      events,
    };
  });
  assert.deepEqual(r, {
    settled: ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'],
    seenOnBranch: [{ role: 'user', content: 'on the branch' }],
    branch: 'again',
    onBranch: [{ role: 'user', content: 'on the branch' }],
    main: [{ role: 'user', content: 'first' }],
    popped: { role: 'user', content: 'first' },
    events: ['add', 'branch', 'add', 'branch', 'pop'],
  });
  assert.equal(await memoryWasm(), 1, 'the module is loaded once');
});

test('memory: a popped item is the caller’s own (a branch holding it is unchanged), a replayed transaction gives no title, events carry their time, and close() needs no module', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    // Closed before its first call: nothing is loaded, its id is known, and later calls are CLOSED.
    const unused = new lib.MemorySession('never-used');
    const id = await unused.getSessionId();
    await unused.close();
    const closedAgain = await unused.close().then(() => 'resolved', (e) => e.code);
    const afterClose = await unused.addItems([{ role: 'user', content: 'late' }]).then(() => 'resolved', (e) => `${e.name} ${e.code}`);
    const loaded = performance.getEntriesByType('resource').some((e) => e.name.endsWith('/agent_sessions_memory_bg.wasm'));

    // Freed while its module loads: the call waiting for it, and every later one, is CLOSED.
    const early = new lib.MemorySession('freed-early');
    const waiting = early.addItems([{ role: 'user', content: 'lost' }]).then(() => 'resolved', (e) => `${e.name} ${e.code}`);
    early.free();
    const freedEarly = [await waiting, await early.getItems().then(() => 'resolved', (e) => `${e.name} ${e.code}`)];
    // Freed once loaded: a later call rejects (it threw), closing resolves.
    const late = new lib.MemorySession('freed-late');
    await late.addItems([{ role: 'user', content: 'kept' }]);
    late.free();
    let freedLate;
    try {
      freedLate = [await late.getItems().then(() => 'resolved', (e) => `${e.name} ${e.code}`), await late.close().then(() => 'resolved')];
    } catch (e) {
      freedLate = `threw ${e.message}`;
    }

    const s = new lib.MemorySession('popped-copy');
    const times = [];
    s.subscribe((e) => times.push(typeof e.at));
    await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }]);
    await s.createBranchFromTurn(2, 'edit');
    const popped = await s.popItem(); // a1, which main shows too
    popped.content = 'edited after the pop';
    await s.switchBranch('main');
    const main = (await s.getItems()).map((i) => i.content);

    // A retried transaction applies once; a title cleared in between stays cleared.
    const t = new lib.MemorySession('replay-title');
    const save = { operationId: 'op-1', transaction: { type: 'append_items', items: [{ role: 'user', content: 'Hello there' }] } };
    await t.applyHistoryTransaction(save);
    await t.update({ title: null });
    await t.applyHistoryTransaction(save);
    const title = (await t.getInfo()).title;
    // A mismatched suffix is SUFFIX_MISMATCH, usage or not.
    const mismatch = await t
      .applyHistoryTransaction({ operationId: 'op-2', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'user', content: 'not there' }], replacement: [] }, usage: { requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 } })
      .then(() => 'resolved', (e) => e.code);
    return { id, closedAgain, afterClose, loaded, freedEarly, freedLate, popped: popped.content, main, title, mismatch, times };
  });
  assert.deepEqual(r.freedEarly, ['SessionError CLOSED', 'SessionError CLOSED']);
  assert.deepEqual(r.freedLate, ['SessionError CLOSED', 'resolved']);
  assert.equal(r.id, 'never-used');
  assert.equal(r.closedAgain, 'resolved', 'closing again resolves');
  assert.equal(r.afterClose, 'SessionError CLOSED');
  assert.equal(r.loaded, false, 'getSessionId and close load nothing');
  assert.equal(r.popped, 'edited after the pop');
  assert.deepEqual(r.main, ['q1', 'a1', 'q2', 'a2'], 'main keeps its item as it was added');
  assert.equal(r.title, null);
  assert.equal(r.mismatch, 'SUFFIX_MISMATCH');
  assert.ok(r.times.length > 0 && r.times.every((t) => t === 'number'), 'every change event has its time');
});

test('a freed IndexedDbSession rejects its calls with CLOSED (they threw wasm-bindgen’s error), closing again resolves, freeing or disposing again does nothing, and it still says what it was', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `freed-${Math.random()}`;
    const s = new lib.IndexedDbSession('freed', { dbName, userId: 'ann' });
    await s.addItems([{ role: 'user', content: 'kept' }]);
    s.free();
    const outcome = (fn) => {
      try {
        return fn().then(() => 'resolved', (e) => `${e.name} ${e.code}`);
      } catch (e) {
        return `threw ${e.message}`;
      }
    };
    const calls = {
      getItems: await outcome(() => s.getItems()),
      addItems: await outcome(() => s.addItems([{ role: 'user', content: 'lost' }])),
      popItem: await outcome(() => s.popItem()),
      getInfo: await outcome(() => s.getInfo()),
      createBranchFromTurn: await outcome(() => s.createBranchFromTurn(1)),
      close: await outcome(() => s.close()),
    };
    let again = 'nothing';
    try {
      s.free();
      if (typeof Symbol.dispose === 'symbol') s[Symbol.dispose]();
    } catch (e) {
      again = `threw ${e.message}`;
    }
    const stored = await new lib.IndexedDbSession('freed', { dbName, userId: 'ann' }).getItems();
    // An object of a class of the app's keeps its class and its own methods.
    class Chat extends lib.IndexedDbSession {
      label() {
        return `chat ${this.sessionId}`;
      }
    }
    const chat = new Chat('freed-chat', { dbName });
    chat.free();
    const subclass = [chat instanceof Chat, chat.label(), await chat.getItems().then(() => 'resolved', (e) => e.code)];
    return { calls, again, id: s.sessionId, user: s.userId, db: s.dbName === dbName, kind: s instanceof lib.IndexedDbSession, stored, subclass };
  });
  assert.deepEqual(r, {
    calls: {
      getItems: 'SessionError CLOSED',
      addItems: 'SessionError CLOSED',
      popItem: 'SessionError CLOSED',
      getInfo: 'SessionError CLOSED',
      createBranchFromTurn: 'SessionError CLOSED',
      close: 'resolved',
    },
    again: 'nothing',
    id: 'freed',
    user: 'ann',
    db: true,
    kind: true,
    stored: [{ role: 'user', content: 'kept' }],
    subclass: [true, 'chat freed-chat', 'CLOSED'],
  });
});
