// Hostile input never breaks the instance: a seeded fuzz of more than a thousand calls with
// values built to throw (Proxies with throwing traps, revoked Proxies, throwing getters and
// toJSON, Symbol.toPrimitive, cyclic objects, BigInt, Symbol, class instances, typed arrays in
// items, huge and exotic strings), then the same page still works; ids are exact (a lone
// surrogate is refused, never merged); a damaged session record is refused, never written past,
// and repairSession rebuilds it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness } from './harness.mjs';

let env;
let page;
before(async () => {
  env = await start();
  ({ page } = await openHarness(env));
});
after(async () => {
  await env?.close();
});

const SEED = 20261130;
const CALLS = 1200;

test(`a seeded fuzz of ${CALLS} hostile calls: methods only reject, with coded errors; then everything still works`, async () => {
  const r = await page.evaluate(
    async ({ seed, calls }) => {
      // mulberry32: a small seeded generator, so a failure can be replayed.
      let state = seed >>> 0;
      const random = () => {
        state = (state + 0x6d2b79f5) >>> 0;
        let t = state;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
      const pick = (list) => list[Math.floor(random() * list.length)];
      const boom = (where) => () => {
        throw new Error(`hostile ${where}`);
      };
      const traps = {
        get: boom('get'),
        getPrototypeOf: boom('getPrototypeOf'),
        ownKeys: boom('ownKeys'),
        has: boom('has'),
        getOwnPropertyDescriptor: boom('getOwnPropertyDescriptor'),
        set: boom('set'),
        apply: boom('apply'),
      };
      const revoked = (target) => {
        const r = Proxy.revocable(target, {});
        r.revoke();
        return r.proxy;
      };
      const deepProxy = () =>
        new Proxy({}, { get: (_, key) => (key === 'then' ? undefined : deepProxy()), getPrototypeOf: () => Object.prototype });
      const cyclic = () => {
        const o = { role: 'user', content: 'loop' };
        o.self = o;
        return o;
      };
      class Foo {}
      const values = [
        () => new Proxy({}, traps),
        () => new Proxy([], traps),
        () => new Proxy(function () {}, traps),
        () => revoked({}),
        () => revoked([]),
        () => revoked(function () {}),
        () => deepProxy(),
        () => ({ get role() { throw new Error('hostile getter'); }, content: 'x' }),
        () => [{ role: 'user', content: 'ok' }, { get content() { throw new Error('hostile getter'); } }],
        () => Object.defineProperty([], 0, { get: boom('index getter'), enumerable: true }),
        () => new Proxy([{ role: 'user', content: 'a' }], { get: (t, k) => (k === 'length' ? boom('length')() : t[k]) }),
        () => cyclic(),
        () => [cyclic()],
        () => 10n,
        () => [10n],
        () => ({ role: 'user', content: 10n }),
        () => Symbol('s'),
        () => [{ role: 'user', content: Symbol('s') }],
        () => new Foo(),
        () => [new Foo()],
        () => [{ role: 'user', content: 'bytes', data: new Uint8Array([1, 2, 3]), view: new Float64Array(2) }],
        () => 'x'.repeat(1 << 20),
        () => '\ud800',
        () => 'chat-\udbff',
        () => 'e\u0301\u200d\ufeff😀',
        () => ({ toJSON: boom('toJSON'), role: 'user', content: 'j' }),
        () => [{ toJSON: boom('toJSON'), role: 'user', content: 'j' }],
        () => ({ [Symbol.toPrimitive]: boom('toPrimitive') }),
        () => ({ valueOf: boom('valueOf'), toString: boom('toString') }),
        () => [1, , 3],
        () => Object.create(null),
        () => new Date(),
        () => () => 1,
        () => null,
        () => undefined,
        () => NaN,
        () => -0,
        () => 1.5,
        () => Infinity,
        () => 3,
        () => 'chat',
        () => [],
        () => ({}),
        () => ({ limit: new Proxy({}, traps) }),
        () => ({ settings: new Proxy({}, traps) }),
        () => ({ settings: { get limit() { throw new Error('hostile getter'); } } }),
        () => ({ userId: revoked({}), dbName: '\ud800' }),
        () => ({ dbName: new Proxy({}, traps) }),
        () => new Proxy({ dbName: 'fuzz' }, { get: boom('options get') }),
      ];
      const hostile = () => pick(values)();

      // A model that answers at once; the second step of a tool run ends it.
      const fakeFetch = async (_url, init) => {
        const body = JSON.parse(init.body);
        const last = body.messages.at(-1);
        const message =
          body.tools && last.role !== 'tool'
            ? { role: 'assistant', content: null, tool_calls: [{ id: `c${Math.floor(random() * 1e9)}`, type: 'function', function: { name: 'h', arguments: '{}' } }] }
            : { role: 'assistant', content: 'ok' };
        return new Response(JSON.stringify({ id: 'x', choices: [{ message }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }), {
          status: 200,
          headers: { 'content-type': 'application/json' },
        });
      };
      const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch: fakeFetch });
      const toolAgent = () =>
        new lib.Agent({ name: 'T', model: 'm', tools: [{ name: 'h', execute: () => hostile(), needsApproval: false }] });
      const hostileSession = () => ({
        getSessionId: () => hostile(),
        getItems: () => hostile(),
        addItems: () => hostile(),
        popItem: () => hostile(),
        clearSession: () => hostile(),
      });

      const sessionCodes = new Set(['INVALID_ITEM', 'INVALID_LIMIT', 'INVALID_SESSION_ID', 'INVALID_USER_ID', 'INVALID_OPTIONS', 'USER_MISMATCH', 'STORAGE_FULL', 'CLOSED', 'DB_VERSION', 'STORAGE_UNAVAILABLE', 'STORAGE_ERROR', 'CORRUPT_SESSION', 'TRANSACTION_CONFLICT', 'SUFFIX_MISMATCH', 'INVALID_TRANSACTION']);
      const runnerCodes = new Set(['INVALID_AGENT', 'INVALID_RUNNER', 'INVALID_RUN_OPTIONS', 'INVALID_INPUT', 'INVALID_RUN_STATE', 'INVALID_SESSION', 'INVALID_LIMIT', 'SESSION_CONFLICT', 'INVALID_COMPACTION']);
      const coded = (e) =>
        e instanceof Error &&
        ((e.name === 'SessionError' && sessionCodes.has(e.code)) ||
          (e.name === 'RunnerError' && runnerCodes.has(e.code)) ||
          e.name === 'ModelError' ||
          e.name === 'MaxTurnsExceededError');

      const made = [];
      const keep = (o) => (made.push(o), o);
      const session = keep(new lib.IndexedDbSession('fuzz-target', { dbName: 'fuzz' }));
      const memory = keep(new lib.MemorySession('fuzz-memory'));
      const agent = keep(new lib.Agent({ name: 'A', model: 'm' }));

      const methods = [
        ['IndexedDbSession.addItems', () => session.addItems(hostile())],
        ['IndexedDbSession.getItems', () => session.getItems(hostile())],
        ['MemorySession.addItems', () => memory.addItems(hostile())],
        ['MemorySession.getItems', () => memory.getItems(hostile())],
        ['listSessions', () => lib.listSessions(hostile())],
        ['deleteSession', () => lib.deleteSession(hostile(), hostile())],
        ['repairSession', () => lib.repairSession(hostile(), hostile())],
        ['runner.run input', () => runner.run(agent, hostile())],
        ['runner.run options', () => runner.run(agent, 'hi', hostile())],
        ['runner.run agent', () => runner.run(hostile(), 'hi')],
        ['runner.run session', () => runner.run(agent, 'hi', { session: hostileSession() })],
        ['runner.run callback', () => runner.run(agent, 'hi', { session: memory, sessionInputCallback: () => hostile() })],
        ['runner.run tool result', () => runner.run(toolAgent(), 'hi')],
        ['runner.runStreamed', () => runner.runStreamed(pick([agent, hostile()]), hostile(), hostile()).result],
        ['CompactionSession.runCompaction', () => new lib.CompactionSession(hostileSession(), { runner, model: 'm' }).runCompaction(hostile())],
        ['session.applyHistoryTransaction', () => pick([session, memory]).applyHistoryTransaction(hostile())],
        ['session.replaceHistory', () => pick([session, memory]).replaceHistory(hostile(), hostile())],
        ['session.getArchivedItems', () => pick([session, memory]).getArchivedItems(hostile())],
      ];
      const constructors = [
        ['new IndexedDbSession', () => keep(new lib.IndexedDbSession(hostile(), hostile()))],
        ['new MemorySession', () => keep(new lib.MemorySession(hostile(), hostile()))],
        ['new Agent', () => keep(new lib.Agent(hostile()))],
        ['new Agent tools', () => keep(new lib.Agent({ name: 'x', tools: [hostile()] }))],
        ['new Runner', () => keep(new lib.Runner(hostile()))],
        ['RunState.fromString', () => lib.RunState.fromString(hostile(), hostile())],
        ['new CompactionSession', () => new lib.CompactionSession(hostile(), hostile())],
        ['new CompactionSession with a runner', () => new lib.CompactionSession(pick([hostile(), memory]), { runner, model: hostile() })],
      ];

      const violations = [];
      const note = (what, problem) => violations.length < 20 && violations.push(`${what}: ${problem}`);
      const describe = (e) => `${e?.name}: ${e?.code ?? ''} ${String(e?.message).slice(0, 160)}`;
      const timeout = (ms) => new Promise((ok) => setTimeout(() => ok('timeout'), ms));
      let rejected = 0;
      let thrown = 0;
      for (let i = 0; i < calls; i++) {
        if (random() < 0.75) {
          const [what, call] = pick(methods);
          let promise;
          try {
            promise = call();
          } catch (e) {
            note(what, `threw synchronously: ${describe(e)}`);
            continue;
          }
          if (!(promise instanceof Promise)) {
            note(what, 'did not return a promise');
            continue;
          }
          const outcome = await Promise.race([promise.then(() => 'ok', (e) => ({ e })), timeout(5000)]);
          if (outcome === 'timeout') note(what, 'never settled');
          else if (outcome !== 'ok') {
            rejected++;
            if (!coded(outcome.e)) note(what, `rejected with ${describe(outcome.e)}`);
          }
        } else {
          const [what, call] = pick(constructors);
          try {
            call();
          } catch (e) {
            thrown++;
            if (!coded(e)) note(what, `threw ${describe(e)}`);
          }
        }
      }

      // The same page still works: a session writes and reads, a run runs, and every object the
      // fuzz made can be freed.
      const after = new lib.IndexedDbSession('after-fuzz', { dbName: 'fuzz' });
      await after.addItems([{ role: 'user', content: 'still here' }]);
      const items = await after.getItems();
      const run = await runner.run(agent, 'and still running', { session: after });
      const history = await after.getItems();
      let freed = 0;
      const freeErrors = [];
      for (const o of [...made, after, runner]) {
        try {
          o.free();
          freed++;
        } catch (e) {
          freeErrors.push(describe(e));
        }
      }
      return { violations, rejected, thrown, items, finalOutput: run.finalOutput, historyLength: history.length, freed, freeErrors: freeErrors.slice(0, 5), made: made.length + 2 };
    },
    { seed: SEED, calls: CALLS },
  );
  assert.deepEqual(r.violations, []);
  assert.ok(r.rejected + r.thrown > CALLS / 3, `most calls were refused (${r.rejected} rejected, ${r.thrown} thrown)`);
  assert.deepEqual(r.items, [{ role: 'user', content: 'still here' }]);
  assert.equal(r.finalOutput, 'ok');
  assert.equal(r.historyLength, 3);
  assert.deepEqual(r.freeErrors, []);
  assert.equal(r.freed, r.made);
});

test('a length that claims billions is refused at once or never walked: the instance keeps working', async () => {
  const r = await page.evaluate(async () => {
    const dbName = `lengths-${Math.random()}`;
    const s = new lib.IndexedDbSession('s', { dbName, userId: 'ann' });
    const out = {};
    out.holes = await s.addItems(new Array(2 ** 32 - 1)).then(() => 'written', (e) => [e.code, e.message]);
    out.sessionIds = await lib.searchSessions({ dbName, userId: 'ann', query: 'x', sessionIds: new Array(2 ** 32 - 1) }).then(() => 'ran', (e) => e.code);
    try {
      lib.exportSessions({ dbName, sessionIds: new Array(2 ** 32 - 1) });
      out.exportIds = 'ran';
    } catch (e) {
      out.exportIds = [e.code, e.message];
    }
    const sealed = new lib.EncryptedSession(new lib.IndexedDbSession('e', { dbName, userId: 'ann' }), { key: crypto.getRandomValues(new Uint8Array(32)) });
    out.sealedHoles = await sealed.addItems(new Array(2 ** 32 - 1)).then(() => 'written', (e) => [e.code, e.message]);
    out.sealedOthers = [
      await sealed.replaceHistory(new Array(2 ** 32 - 1)).then(() => 'written', (e) => e.code),
      await sealed.replaceHistory([], { expectedItems: new Array(2 ** 32 - 1) }).then(() => 'written', (e) => e.code),
      await sealed.applyHistoryTransaction({ operationId: 'op', transaction: { type: 'append_items', items: new Array(2 ** 32 - 1) } }).then(() => 'written', (e) => e.code),
    ];
    // An item whose content is an object with a `length` is plain data: stored as it is, and no
    // text is looked for in it.
    const odd = { role: 'user', content: { length: 2 ** 32 - 1, note: 'not an array' } };
    out.odd = await s.addItems([odd, { role: 'assistant', content: 'still fine' }]).then(() => 'written', (e) => e.code);
    out.items = await s.getItems();
    out.found = (await lib.searchSessions({ dbName, userId: 'ann', query: 'fine' })).map((h) => h.seq);
    // A backup whose record lists "branches" as such an object is refused for that session.
    const text = await new Response(lib.exportSessions({ dbName })).text();
    const lines = text.trim().split('\n').map((l) => JSON.parse(l));
    lines[1].session.branches = { length: 2 ** 32 - 1 };
    const report = await lib.importSessions(lines.map((l) => JSON.stringify(l)).join('\n'), { dbName: `${dbName}-to` });
    out.imported = report.imported;
    out.failed = report.failed.map((e) => e.code);
    out.after = (await new lib.IndexedDbSession('t', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'later' }]).then(() => 'written', (e) => e.code));
    return out;
  });
  assert.deepEqual(r.holes, ['INVALID_ITEM', 'items has 4294967295 elements, more than the 1,048,576 one call takes']);
  assert.equal(r.sessionIds, 'INVALID_OPTIONS');
  assert.deepEqual(r.exportIds, ['INVALID_OPTIONS', 'exportSessions: options.sessionIds must be an array of session ids (strings), got 4294967295 of them, more than the 1,048,576 one call takes']);
  assert.deepEqual(r.sealedHoles, r.holes, 'refused before anything is encrypted, as the session refuses it');
  assert.deepEqual(r.sealedOthers, ['INVALID_ITEM', 'INVALID_OPTIONS', 'INVALID_TRANSACTION']);
  assert.equal(r.odd, 'written');
  assert.deepEqual(r.items, [
    { role: 'user', content: { length: 2 ** 32 - 1, note: 'not an array' } },
    { role: 'assistant', content: 'still fine' },
  ]);
  assert.deepEqual(r.found, [1]);
  assert.deepEqual(r.imported, []);
  assert.deepEqual(r.failed, ['IMPORT_INVALID']);
  assert.equal(r.after, 'written');
});

test('ids are exact: a string with a lone surrogate is refused, so two such ids never share anything', async () => {
  const r = await page.evaluate(async () => {
    const tryNew = (make) => {
      try {
        make();
        return { ok: true };
      } catch (e) {
        return { ok: false, name: e.name, code: e.code, message: e.message };
      }
    };
    // What a lossy conversion would have merged them into.
    const merged = new lib.IndexedDbSession('s\ufffd', { userId: 'u\ufffd', dbName: 'exact' });
    await merged.addItems([{ role: 'user', content: 'mine' }]);
    const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch: async () => new Response('{}') });
    return {
      sessions: [tryNew(() => new lib.IndexedDbSession('s\ud800', { dbName: 'exact' })), tryNew(() => new lib.IndexedDbSession('s\udbff', { dbName: 'exact' }))],
      memory: tryNew(() => new lib.MemorySession('m\udc00')),
      user: tryNew(() => new lib.IndexedDbSession('s\ufffd', { userId: 'u\ud800', dbName: 'exact' })),
      db: tryNew(() => new lib.IndexedDbSession('s', { dbName: 'exact\ud800' })),
      list: await attempt(() => lib.listSessions({ dbName: 'exact', userId: 'u\udbff' })),
      del: await attempt(() => lib.deleteSession('s\ud800', { dbName: 'exact' })),
      repair: await attempt(() => lib.repairSession('s\udbff', { dbName: 'exact' })),
      input: await attempt(() => runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'hi \ud800')),
      untouched: await merged.getItems(),
      listed: (await lib.listSessions({ dbName: 'exact' })).map((s) => [s.sessionId, s.userId, s.itemCount]),
      // Well-formed strings, surrogate pairs included, are ids like any other, and distinct.
      pairs: await (async () => {
        const a = new lib.IndexedDbSession('chat-😀', { dbName: 'exact' });
        const b = new lib.IndexedDbSession('chat-😁', { dbName: 'exact' });
        await a.addItems([{ role: 'user', content: 'a' }]);
        return [(await a.getItems()).length, (await b.getItems()).length];
      })(),
    };
  });
  for (const res of [...r.sessions, r.memory, r.del, r.repair]) {
    assert.equal(res.code, 'INVALID_SESSION_ID', res.message);
    assert.match(res.message, /sessionId must be well-formed UTF-16: it holds a lone surrogate/);
  }
  assert.equal(r.user.code, 'INVALID_USER_ID');
  assert.equal(r.list.code, 'INVALID_USER_ID');
  assert.equal(r.db.code, 'INVALID_OPTIONS');
  assert.match(r.db.message, /options.dbName must be well-formed UTF-16/);
  assert.equal(r.input.name, 'RunnerError');
  assert.equal(r.input.code, 'INVALID_INPUT');
  assert.deepEqual(r.untouched, [{ role: 'user', content: 'mine' }]);
  assert.deepEqual(r.listed, [['s\ufffd', 'u\ufffd', 1]]);
  assert.deepEqual(r.pairs, [1, 0]);
});

/** Each way a stored session can be damaged (by another library, by hand, by an old bug), and
 * what the error says. Each session starts as [u1, a1, u2]. A damaged record refuses every call;
 * a damaged row is reported by every read that reaches it (a write that does not read it, such
 * as an append after it, stays readable once repaired). */
const DAMAGES = [
  ['nextSeq of 2**64', { record: { nextSeq: 2 ** 64 } }, /nextSeq is 18446744073709552000, not a safe non-negative integer/],
  ['a negative itemCount', { record: { itemCount: -1 } }, /itemCount is -1, not a safe non-negative integer/],
  ['firstSeq past nextSeq', { record: { firstSeq: 9 } }, /firstSeq 9 is past nextSeq 3/],
  ['itemCount that does not match', { record: { itemCount: 7 } }, /itemCount 7 does not match sequence numbers 0..3/],
  ['nextSeq as a string', { record: { nextSeq: '3' } }, /nextSeq is a string, not a safe non-negative integer/],
  ['createdAt that is no time', { record: { createdAt: 'yesterday' } }, /createdAt is a string, not a time/],
  ['userId that is a number', { record: { userId: 42 } }, /userId is the number 42, not a string or null/],
  ['a fractional rewrites count', { record: { rewrites: 1.5 } }, /rewrites is 1.5, not a safe non-negative integer/],
  ['a row without its item', { dropItemOf: 1 }, /the row of item 1 holds no item|items 0..3 are not all stored/],
  ['a gap in the sequence numbers', { deleteRow: 1 }, /items 0..3 are not all stored/],
];

for (const [name, damage, message] of DAMAGES) {
  test(`a damaged session (${name}) is refused on every call, written to by none, and repaired`, async () => {
    const r = await page.evaluate(
      async ({ id, damage }) => {
        const dbName = 'damage';
        const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
        const raw = async (fn) => {
          const db = await request(indexedDB.open(dbName));
          try {
            return await fn(db);
          } finally {
            db.close();
          }
        };
        const range = IDBKeyRange.bound([id, -Infinity], [id, Infinity]);
        const snapshot = () =>
          raw(async (db) => {
            const tx = db.transaction(['agent_sessions', 'agent_messages']);
            const record = await request(tx.objectStore('agent_sessions').get(id));
            const rows = await request(tx.objectStore('agent_messages').getAll(range));
            return JSON.stringify({ record, rows });
          });
        const s = new lib.IndexedDbSession(id, { dbName });
        await s.addItems([{ role: 'user', content: 'u1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'u2' }]);
        await raw(async (db) => {
          const tx = db.transaction(['agent_sessions', 'agent_messages'], 'readwrite');
          const sessions = tx.objectStore('agent_sessions');
          const messages = tx.objectStore('agent_messages');
          if (damage.record) sessions.put({ ...(await request(sessions.get(id))), ...damage.record });
          if (damage.dropItemOf !== undefined) {
            const row = await request(messages.get([id, damage.dropItemOf]));
            delete row.item;
            messages.put(row);
          }
          if (damage.deleteRow !== undefined) messages.delete([id, damage.deleteRow]);
          await new Promise((ok) => (tx.oncomplete = ok));
        });
        const before = await snapshot();
        // A fresh object, as after a reload, and the object that wrote: both refuse every call.
        const calls = {};
        for (const [label, session] of [['fresh', new lib.IndexedDbSession(id, { dbName })], ['same', s]]) {
          calls[`${label} getItems()`] = await attempt(() => session.getItems());
          calls[`${label} getItems(3)`] = await attempt(() => session.getItems(3));
          if (!damage.record) continue;
          calls[`${label} getItems(1)`] = await attempt(() => session.getItems(1));
          calls[`${label} addItems`] = await attempt(() => session.addItems([{ role: 'user', content: 'lost?' }]));
          calls[`${label} popItem`] = await attempt(() => session.popItem());
          calls[`${label} clearSession`] = await attempt(() => session.clearSession());
        }
        const after = await snapshot();
        const other = new lib.IndexedDbSession(`${id}-neighbour`, { dbName });
        await other.addItems([{ role: 'user', content: 'fine' }]);
        const neighbour = await other.getItems();
        const report = await lib.repairSession(id, { dbName, userId: 'tester' });
        const repaired = damage.record?.userId !== undefined ? new lib.IndexedDbSession(id, { dbName, userId: 'tester' }) : new lib.IndexedDbSession(id, { dbName });
        const items = (await repaired.getItems()).map((i) => i.content);
        await repaired.addItems([{ role: 'assistant', content: 'a2' }]);
        const newest = await repaired.getItems(2);
        const popped = await repaired.popItem();
        const infoBefore = await repaired.getInfo();
        const again = await lib.repairSession(id, { dbName });
        const infoAfter = await repaired.getInfo();
        const untouched = infoBefore.updatedAt === infoAfter.updatedAt && infoBefore.rewrites === infoAfter.rewrites;
        return { calls, unchanged: before === after, neighbour, report, items, newest: newest.map((i) => i.content), popped: popped.content, again, untouched };
      },
      { id: `dmg-${name.replace(/\W+/g, '-')}`, damage },
    );
    for (const [call, res] of Object.entries(r.calls)) {
      assert.equal(res.ok, false, `${call} succeeded`);
      assert.equal(res.name, 'SessionError', call);
      assert.equal(res.code, 'CORRUPT_SESSION', `${call}: ${res.message}`);
      assert.match(res.message, message, call);
      assert.match(res.message, /repairSession\(\) rebuilds it/, call);
    }
    assert.ok(r.unchanged, 'nothing was written to the damaged session');
    assert.deepEqual(r.neighbour, [{ role: 'user', content: 'fine' }], 'other sessions keep working');
    const lost = damage.dropItemOf !== undefined || damage.deleteRow !== undefined;
    assert.deepEqual(r.items, lost ? ['u1', 'u2'] : ['u1', 'a1', 'u2']);
    // An owner the damaged record no longer names readably is the one repairSession gives.
    const owner = damage.record?.userId !== undefined ? 'tester' : null;
    assert.deepEqual(r.report, { existed: true, userId: owner, itemCount: lost ? 2 : 3, removedRows: damage.dropItemOf !== undefined ? 1 : 0, renumberedRows: lost ? 1 : 0 });
    assert.deepEqual(r.newest, ['u2', 'a2']);
    assert.equal(r.popped, 'a2');
    assert.deepEqual(r.again, { existed: true, userId: owner, itemCount: lost ? 2 : 3, removedRows: 0, renumberedRows: 0 }, 'a sound session is left as it is');
    assert.equal(r.untouched, true, 'nothing written to it: its updatedAt and rewrites stay');
  });
}
