// The SDK's optional Session capabilities, durable: history transactions (idempotent by
// operationId, replace_suffix only on the expected suffix), history rewrites, and the atomic
// replacement that compaction uses, with the archive of what it replaced. Both session kinds,
// and across reloads and tabs for IndexedDbSession.
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
const u = (text) => ({ role: 'user', content: text });
const a = (text) => ({ role: 'assistant', content: text });
const call = (id, args = '{}') => ({ type: 'function_call', callId: id, name: 'lookup', arguments: args, status: 'completed' });
const contents = (items) => items.map((i) => i.content ?? `${i.type} ${i.callId} ${i.arguments}`);

for (const kind of ['indexeddb', 'memory']) {
  describe(`${kind}: history transactions and rewrites`, () => {
    let page;
    before(async () => {
      ({ page } = await openHarness(env));
    });

    test('an operation applied on one branch is applied in the session: the same call on another branch is a no-op', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
          const args = { operationId: 'run-7', transaction: { type: 'append_items', items: [{ role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }] } };
          await s.applyHistoryTransaction(args);
          await s.createBranchFromTurn(2);
          await s.applyHistoryTransaction(args);
          return (await s.getItems()).map((i) => i.content);
        },
        { kind, id: fresh('op-across-branches') },
      );
      assert.deepEqual(r, ['q1', 'a1'], 'the branch made before turn 2 is left as it was');
    });

    test('usage cannot be stored on a branch, or a session, that shows no items', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const usage = { requests: 1, inputTokens: 5, outputTokens: 5 };
          const s = make(kind, id);
          await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
          await s.createBranchFromTurn(1);
          const onEmptyBranch = await attempt(() => s.storeRunUsage(usage));
          await s.switchBranch('main');
          await s.clearSession();
          const afterClear = await attempt(() => s.storeRunUsage(usage));
          const unknown = await attempt(() => s.getSessionUsage({ branch: 'nope' }));
          return { onEmptyBranch: onEmptyBranch.code, afterClear: afterClear.code, total: (await s.getSessionUsage()).totalTokens, unknown: unknown.code };
        },
        { kind, id: fresh('usage-nothing-shown') },
      );
      assert.deepEqual(r, { onEmptyBranch: 'INVALID_TURN', afterClear: 'INVALID_TURN', total: 0, unknown: 'BRANCH_NOT_FOUND' });
    });

    test('items holding half an emoji (a lone surrogate) are compared exactly: replace_suffix and expectedItems match them, and not the other half', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          const half = 'Hi 👋'.slice(0, 4);
          const other = 'Hi 👋'.slice(0, 3) + '\ud83c';
          await s.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: half }]);
          const wrong = await attempt(() => s.applyHistoryTransaction({ operationId: 'w', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: other }], replacement: [] } }));
          const right = await attempt(() => s.applyHistoryTransaction({ operationId: 'r', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: half }], replacement: [{ role: 'assistant', content: half + '!' }] } }));
          const again = await attempt(() => s.applyHistoryTransaction({ operationId: 'r', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: half }], replacement: [{ role: 'assistant', content: half + '!' }] } }));
          // The same operation id with the other half: another transaction.
          const conflict = await attempt(() => s.applyHistoryTransaction({ operationId: 'r', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: half }], replacement: [{ role: 'assistant', content: other + '!' }] } }));
          const stored = await s.getItems();
          const replaced = s.replaceHistory ? await attempt(() => s.replaceHistory([{ role: 'user', content: 'new' }], { expectedItems: stored, archive: false })) : { ok: true };
          return { wrong: wrong.code, right: right.ok, again: again.ok, conflict: conflict.code, last: stored[1].content === half + '!', replaced: replaced.ok, now: (await s.getItems()).map((i) => i.content) };
        },
        { kind, id: fresh('half-emoji') },
      );
      assert.deepEqual(r, { wrong: 'SUFFIX_MISMATCH', right: true, again: true, conflict: 'TRANSACTION_CONFLICT', last: true, replaced: true, now: ['new'] });
    });

    test('a transaction with usage applied again is a no-op, even one that left a single turn out', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
          const args = { operationId: 'op-u', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: 'a1' }], replacement: [] }, usage: { requests: 1, inputTokens: 5, outputTokens: 5 } };
          await s.applyHistoryTransaction(args);
          const again = await attempt(() => s.applyHistoryTransaction(args));
          return { again: again.ok ? 'ok' : again.code, items: (await s.getItems()).map((i) => i.content), usage: (await s.getSessionUsage()).totalTokens };
        },
        { kind, id: fresh('replay-usage') },
      );
      assert.deepEqual(r, { again: 'ok', items: ['q1'], usage: 10 });
    });

    /** Runs `body` (the source of an async function of `s`, a session seeded with `seed`). */
    const inSession = (body, seed = [u('q1'), a('a1')]) =>
      page.evaluate(
        async ({ kind, id, body, seed }) => {
          const s = make(kind, id);
          await s.addItems(seed);
          return eval(`(${body})`)(s);
        },
        { kind, id: fresh(kind), body, seed },
      );

    test('a replace_suffix that takes a turn away takes its usage, as a pop does (an EncryptedSession pops so): the turn that takes its number next has only its own', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2' }]);
          await s.storeRunUsage({ requests: 1, inputTokens: 10, outputTokens: 0, totalTokens: 10 });
          // The question of turn 2 taken away; the answer of turn 1 kept, with its usage.
          await s.applyHistoryTransaction({ operationId: 'undo', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'user', content: 'q2' }], replacement: [] } });
          const afterUndo = await s.getTurnUsage(2);
          await s.addItems([{ role: 'user', content: 'q2 again' }]);
          await s.storeRunUsage({ requests: 1, inputTokens: 5, outputTokens: 0, totalTokens: 5 });
          // A save that keeps its question keeps the turn's usage.
          await s.storeRunUsage({ requests: 1, inputTokens: 1, outputTokens: 0, totalTokens: 1 });
          await s.applyHistoryTransaction({ operationId: 'save', transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'user', content: 'q2 again' }], replacement: [{ role: 'user', content: 'q2 again' }, { role: 'assistant', content: 'a2' }] } });
          return { afterUndo, turn2: (await s.getTurnUsage(2))?.totalTokens, total: (await s.getSessionUsage()).totalTokens };
        },
        { kind, id: fresh('suffix-usage') },
      );
      assert.equal(r.afterUndo, null, 'the turn taken away has no usage left');
      assert.equal(r.turn2, 6, 'the new turn 2 has only its own');
      assert.equal(r.total, 6);
    });

    test('append_items applies once per operationId; the same id with another transaction is refused', async () => {
      const r = await inSession(`async (s) => {
        const tx = { type: 'append_items', items: [{ role: 'user', content: 'q2' }] };
        await s.applyHistoryTransaction({ operationId: 'run:1', transaction: tx });
        // A retry: a copy with its keys in another order is the same transaction.
        await s.applyHistoryTransaction({ operationId: 'run:1', transaction: { items: [{ content: 'q2', role: 'user' }], type: 'append_items' } });
        const conflict = await attempt(() => s.applyHistoryTransaction({ operationId: 'run:1', transaction: { type: 'append_items', items: [{ role: 'user', content: 'other' }] } }));
        const empty = await attempt(() => s.applyHistoryTransaction({ operationId: 'run:2', transaction: { type: 'append_items', items: [] } }));
        return { conflict, empty, items: await s.getItems() };
      }`);
      assert.equal(r.conflict.code, 'TRANSACTION_CONFLICT');
      assert.match(r.conflict.message, /already applied with a different transaction \(operationId "run:1"\)/);
      assert.equal(r.empty.ok, true);
      assert.deepEqual(contents(r.items), ['q1', 'a1', 'q2']);
    });

    test('replace_suffix replaces exactly the expected suffix, and refuses any other', async () => {
      const r = await inSession(`async (s) => {
        const replaced = await attempt(() => s.applyHistoryTransaction({ operationId: 'r1', transaction: {
          type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: 'a1' }],
          replacement: [{ role: 'assistant', content: 'a1 (edited)' }, { role: 'user', content: 'q2' }] } }));
        const afterReplace = await s.getItems();
        const stale = await attempt(() => s.applyHistoryTransaction({ operationId: 'r2', transaction: {
          type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: 'a1' }], replacement: [] } }));
        const tooLong = await attempt(() => s.applyHistoryTransaction({ operationId: 'r3', transaction: {
          type: 'replace_suffix', expectedSuffix: [1, 2, 3, 4].map((n) => ({ role: 'user', content: String(n) })), replacement: [] } }));
        // A field that differs (an extra key, -0 for 0) is another item.
        const extra = await attempt(() => s.applyHistoryTransaction({ operationId: 'r4', transaction: {
          type: 'replace_suffix', expectedSuffix: [{ role: 'user', content: 'q2', id: undefined }], replacement: [] } }));
        const truncated = await attempt(() => s.applyHistoryTransaction({ operationId: 'r5', transaction: {
          type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: 'a1 (edited)' }, { role: 'user', content: 'q2' }], replacement: [] } }));
        const afterTruncate = await s.getItems();
        await s.addItems([{ role: 'user', content: 'q3' }, { role: 'assistant', content: 'a3' }]);
        return { replaced, afterReplace, stale, tooLong, extra, truncated, afterTruncate, final: await s.getItems(), newest: await s.getItems(2), popped: await s.popItem() };
      }`);
      assert.equal(r.replaced.ok, true, r.replaced.message);
      assert.deepEqual(contents(r.afterReplace), ['q1', 'a1 (edited)', 'q2']);
      for (const res of [r.stale, r.tooLong, r.extra]) {
        assert.equal(res.code, 'SUFFIX_MISMATCH', res.message);
        assert.match(res.message, /Session history suffix no longer matches the transaction precondition/);
      }
      assert.equal(r.truncated.ok, true);
      assert.deepEqual(contents(r.afterTruncate), ['q1']);
      assert.deepEqual(contents(r.final), ['q1', 'q3', 'a3']);
      assert.deepEqual(contents(r.newest), ['q3', 'a3']);
      assert.equal(r.popped.content, 'a3');
    });

    test('applyHistoryMutations replace_function_call rewrites exactly one item and drops its duplicates', async () => {
      const seed = [u('q'), call('c1'), { type: 'function_call_result', callId: 'c1', output: 'r' }, call('c2'), call('c1', '{"dup":1}'), a('done')];
      const r = await inSession(`async (s) => {
        const rewrites = [(await s.getInfo()).rewrites];
        await s.applyHistoryMutations({ mutations: [
          { type: 'replace_function_call', callId: 'c1', replacement: { type: 'function_call', callId: 'c1', name: 'lookup', arguments: '{"fixed":1}' } },
          { type: 'some_future_mutation', anything: true },
          { type: 'replace_function_call', callId: 'nobody', replacement: { type: 'function_call', callId: 'nobody', name: 'x', arguments: '{}' } },
        ] });
        rewrites.push((await s.getInfo()).rewrites);
        const items = await s.getItems();
        // Two that match, in one call: one rewrite, as one write.
        await s.applyHistoryMutations({ mutations: ['c1', 'c2'].map((callId) => ({ type: 'replace_function_call', callId, replacement: { type: 'function_call', callId, name: 'again', arguments: '{}' } })) });
        rewrites.push((await s.getInfo()).rewrites);
        await s.addItems([{ role: 'user', content: 'next' }]);
        return { items, newest: await s.getItems(2), rewrites };
      }`, seed);
      assert.deepEqual(r.rewrites, [0, 1, 2]);
      assert.deepEqual(r.items, [
        u('q'),
        { type: 'function_call', callId: 'c1', name: 'lookup', arguments: '{"fixed":1}' },
        { type: 'function_call_result', callId: 'c1', output: 'r' },
        call('c2'),
        a('done'),
      ]);
      assert.deepEqual(contents(r.newest), ['done', 'next']);
    });

    test('replaceHistoryWithCompaction replaces the history and archives every replaced item, in order (not one the new history still holds)', async () => {
      const r = await inSession(`async (s) => {
        await s.addItems([{ role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }]);
        await s.replaceHistoryWithCompaction([{ type: 'compaction', encrypted_content: 'ENC' }, { role: 'user', content: 'q2' }]);
        const history = await s.getItems();
        await s.addItems([{ role: 'assistant', content: 'a2 again' }]);
        await s.replaceHistory([{ role: 'system', content: 'summary' }]);
        await s.replaceHistory([{ role: 'system', content: 'not archived' }], { archive: false });
        const all = await s.getArchivedItems();
        const newest = await s.getArchivedItems({ limit: 2 });
        const page2 = await s.getArchivedItems({ limit: 2, before: 2 });
        const past = await s.getArchivedItems({ limit: 2, before: 99 });
        // Past 2^32: every item skipped (not a count cut to 32 bits).
        const farPast = [2 ** 32, 2 ** 32 + 1, 2 ** 53 - 1].map((before) => s.getArchivedItems({ before }));
        const bad = await attempt(() => s.getArchivedItems({ limit: 1.5 }));
        const badArchive = await attempt(() => s.replaceHistory([], { archive: 'yes' }));
        await s.clearSession();
        return { history, all, newest, page2, past, farPast: await Promise.all(farPast), bad, badArchive, afterClear: await s.getArchivedItems(), now: await s.getItems() };
      }`);
      assert.deepEqual(r.farPast, [[], [], []]);
      assert.deepEqual(r.history, [{ type: 'compaction', encrypted_content: 'ENC' }, u('q2')]);
      // q2, given back with the compaction item, is still in the history: archived once, when
      // the summary replaced it.
      assert.deepEqual(contents(r.all), ['q1', 'a1', 'a2', 'compaction undefined undefined', 'q2', 'a2 again']);
      assert.deepEqual(contents(r.newest), ['q2', 'a2 again']);
      assert.deepEqual(contents(r.page2), ['a2', 'compaction undefined undefined']);
      assert.deepEqual(r.past, []);
      assert.equal(r.bad.code, 'INVALID_LIMIT');
      assert.equal(r.badArchive.code, 'INVALID_OPTIONS');
      assert.deepEqual(r.afterClear, [], 'clearSession forgets the archive too');
      assert.deepEqual(r.now, []);
    });

    test('clearSession forgets applied operation ids; the log keeps the newest 1,000', async () => {
      const r = await inSession(`async (s) => {
        const tx = (content) => ({ type: 'append_items', items: [{ role: 'user', content }] });
        await s.applyHistoryTransaction({ operationId: 'op', transaction: tx('x') });
        await s.clearSession();
        const reused = await attempt(() => s.applyHistoryTransaction({ operationId: 'op', transaction: tx('y') }));
        for (let i = 0; i < 1000; i++) await s.applyHistoryTransaction({ operationId: 'n' + i, transaction: tx('n' + i) });
        // 'op' was the oldest of 1,001: forgotten. Applying it again makes 1,002, so 'n0' goes
        // too, and 'n1' is the oldest still remembered.
        const forgotten = await attempt(() => s.applyHistoryTransaction({ operationId: 'op', transaction: tx('z') }));
        const remembered = await attempt(() => s.applyHistoryTransaction({ operationId: 'n1', transaction: tx('changed') }));
        return { reused, forgotten, remembered, count: (await s.getItems()).length };
      }`);
      assert.equal(r.reused.ok, true);
      assert.equal(r.forgotten.ok, true);
      assert.equal(r.remembered.code, 'TRANSACTION_CONFLICT');
      assert.equal(r.count, 1002);
    });

    const MALFORMED = [
      ['no argument', `undefined`],
      ['an array', `[]`],
      ['no operationId', `{ transaction: { type: 'append_items', items: [] } }`],
      ['a blank operationId', `{ operationId: '  ', transaction: { type: 'append_items', items: [] } }`],
      ['a numeric operationId', `{ operationId: 7, transaction: { type: 'append_items', items: [] } }`],
      ['a lone surrogate in operationId', `{ operationId: 'op\\ud800', transaction: { type: 'append_items', items: [] } }`],
      ['no transaction', `{ operationId: 'm' }`],
      ['an unknown type', `{ operationId: 'm', transaction: { type: 'prepend_items', items: [] } }`],
      ['an extra field', `{ operationId: 'm', transaction: { type: 'append_items', items: [], note: 1 } }`],
      ['items missing', `{ operationId: 'm', transaction: { type: 'append_items' } }`],
      ['items not an array', `{ operationId: 'm', transaction: { type: 'append_items', items: { role: 'user' } } }`],
      ['an item that is a string', `{ operationId: 'm', transaction: { type: 'append_items', items: ['hi'] } }`],
      ['an item holding a Date', `{ operationId: 'm', transaction: { type: 'append_items', items: [{ role: 'user', content: new Date() }] } }`],
      ['an item holding a Map', `{ operationId: 'm', transaction: { type: 'append_items', items: [{ role: 'user', content: new Map() }] } }`],
      ['an item holding a bigint', `{ operationId: 'm', transaction: { type: 'append_items', items: [{ role: 'user', content: 1n }] } }`],
      ['a cyclic item', `(() => { const i = { role: 'user' }; i.self = i; return { operationId: 'm', transaction: { type: 'append_items', items: [i] } }; })()`],
      ['a sparse array in an item', `{ operationId: 'm', transaction: { type: 'append_items', items: [{ role: 'user', content: [1, , 3] }] } }`],
      ['expectedSuffix missing', `{ operationId: 'm', transaction: { type: 'replace_suffix', replacement: [] } }`],
      ['replacement not an array', `{ operationId: 'm', transaction: { type: 'replace_suffix', expectedSuffix: [], replacement: 'x' } }`],
      ['a throwing getter', `{ operationId: 'm', get transaction() { throw new Error('no') } }`],
      ['mutations not an array', `'mutations'`],
    ];
    test('every malformed transaction or mutation is INVALID_TRANSACTION, and nothing is written', async () => {
      const r = await page.evaluate(
        async ({ kind, id, cases }) => {
          const s = make(kind, id);
          await s.addItems([{ role: 'user', content: 'seed' }]);
          const out = {};
          for (const [name, source] of cases) {
            const args = eval(`(${source})`);
            out[name] = name.startsWith('mutations')
              ? await attempt(() => s.applyHistoryMutations({ mutations: args }))
              : await attempt(() => s.applyHistoryTransaction(args));
          }
          out['a mutation without callId'] = await attempt(() => s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', replacement: {} }] }));
          out['a replacement that is no function call'] = await attempt(() => s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c', replacement: { role: 'user' } }] }));
          // Each of those operation ids stays free.
          await s.applyHistoryTransaction({ operationId: 'm', transaction: { type: 'append_items', items: [{ role: 'user', content: 'fine' }] } });
          return { out, items: await s.getItems() };
        },
        { kind, id: fresh('malformed'), cases: MALFORMED },
      );
      for (const [name, res] of Object.entries(r.out)) {
        assert.equal(res.ok, false, `${name} was accepted`);
        assert.equal(res.name, 'SessionError', name);
        assert.equal(res.code, 'INVALID_TRANSACTION', `${name}: ${res.code} ${res.message}`);
      }
      // The message names the fields the type takes and those given.
      assert.match(r.out['an extra field'].message, /append_items transaction has exactly the fields items, type, got items, note, type$/);
      assert.deepEqual(contents(r.items), ['seed', 'fine']);
    });
  });
}

describe('indexeddb: the operation log is durable, and another tab is seen', () => {
  test('the same operationId applied again after a reload writes nothing', async () => {
    const { page } = await openHarness(env);
    const id = fresh('reload');
    const apply = () =>
      page.evaluate(async (id) => {
        const s = new lib.IndexedDbSession(id);
        const res = await attempt(() => s.applyHistoryTransaction({ operationId: 'turn-1', transaction: { type: 'append_items', items: [{ role: 'user', content: 'once' }] } }));
        return { res, items: await s.getItems() };
      }, id);
    const first = await apply();
    await reload(page);
    const second = await apply();
    assert.equal(second.res.ok, true);
    assert.deepEqual(first.items, [u('once')]);
    assert.deepEqual(second.items, [u('once')]);
  });

  test('replace_suffix after another tab appended is SUFFIX_MISMATCH, and nothing changes', async () => {
    const { context, page } = await openHarness(env);
    const other = await context.newPage();
    await other.goto(`${env.url}/tests/pages/harness.html`);
    await other.waitForFunction(() => window.ready === true);
    const id = fresh('tabs');
    await page.evaluate(async (id) => new lib.IndexedDbSession(id).addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]), id);
    await other.evaluate(async (id) => new lib.IndexedDbSession(id).addItems([{ role: 'user', content: 'from the other tab' }]), id);
    const r = await page.evaluate(async (id) => {
      const s = new lib.IndexedDbSession(id);
      const res = await attempt(() => s.applyHistoryTransaction({ operationId: 'mine', transaction: {
        type: 'replace_suffix', expectedSuffix: [{ role: 'assistant', content: 'a' }], replacement: [{ role: 'assistant', content: 'a, corrected' }] } }));
      // The failed operation was not recorded: its id can still be used.
      const retry = await attempt(() => s.applyHistoryTransaction({ operationId: 'mine', transaction: {
        type: 'replace_suffix', expectedSuffix: [{ role: 'user', content: 'from the other tab' }], replacement: [{ role: 'user', content: 'from the other tab' }, { role: 'assistant', content: 'answer' }] } }));
      return { res, retry, items: await s.getItems() };
    }, id);
    assert.equal(r.res.code, 'SUFFIX_MISMATCH');
    assert.equal(r.retry.ok, true, r.retry.message);
    assert.deepEqual(contents(r.items), ['q', 'a', 'from the other tab', 'answer']);
    await context.close();
  });
});
