// One run at a time per session, across tabs: two tabs running the same IndexedDB session take
// turns (their turns never interleave); `lock: 'fail'` refuses at once with SESSION_BUSY while
// another run holds the session; other sessions are not held up.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness } from './harness.mjs';
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
beforeEach(() => model.reset());

let counter = 0;
const fresh = (p) => `${p}-${++counter}`;

/** Starts a run in `page` (not awaited): `window.runs[key]` settles with its outcome. */
function startRun(page, key, args) {
  return page.evaluate(
    ({ key, args }) => {
      window.runs ??= {};
      const runner = new lib.Runner({ baseUrl: args.url });
      const agent = new lib.Agent({ name: 'a', model: 'm' });
      const session = new lib.IndexedDbSession(args.id);
      window.runs[key] = runner
        .run(agent, args.question, { session, ...(args.lock === undefined ? {} : { lock: args.lock }) })
        .then((r) => ({ ok: true, output: r.finalOutput }), (e) => ({ ok: false, name: e.name, code: e.code, message: e.message }));
    },
    { key, args },
  );
}
const outcome = (page, key) => page.evaluate((key) => window.runs[key], key);

/** Resolves once the model server has received `n` requests (checked every 10 ms, 5 s at most). */
async function requestsReached(n) {
  for (let i = 0; i < 500 && model.requests.length < n; i++) await new Promise((ok) => setTimeout(ok, 10));
  assert.ok(model.requests.length >= n, `the model server got ${model.requests.length} of ${n} requests`);
}

test('two tabs run one session in turn: the second run waits, and the turns do not interleave', async () => {
  const { page: a, context } = await openHarness(env);
  const { page: b } = await openHarness(env, context);
  const id = fresh('turns');
  // The first answer is slow: the second tab's run starts while the first is waiting for it.
  model.script({ text: 'first answer', waitMs: 600 }, { text: 'second answer' });
  await startRun(a, 'first', { url: model.url, id, question: 'first question' });
  await requestsReached(1);
  await startRun(b, 'second', { url: model.url, id, question: 'second question' });
  assert.deepEqual(await outcome(a, 'first'), { ok: true, output: 'first answer' });
  assert.deepEqual(await outcome(b, 'second'), { ok: true, output: 'second answer' });
  const items = await a.evaluate((id) => new lib.IndexedDbSession(id).getItems(), id);
  const texts = items.map((i) => (typeof i.content === 'string' ? i.content : i.content[0].text));
  assert.deepEqual(texts, ['first question', 'first answer', 'second question', 'second answer']);
  // The second run's request was sent after the first run ended, with the first turn in it.
  const second = model.requests[1].body.messages.map((m) => m.content);
  assert.deepEqual(second.slice(-3), ['first question', 'first answer', 'second question']);
});

test("lock: 'fail' rejects with SESSION_BUSY while another tab runs the session; another session is not held", async () => {
  const { page: a, context } = await openHarness(env);
  const { page: b } = await openHarness(env, context);
  const id = fresh('busy');
  model.script({ text: 'slow answer', waitMs: 600 }, { text: 'other session answer' });
  await startRun(a, 'slow', { url: model.url, id, question: 'q' });
  await requestsReached(1);
  await startRun(b, 'refused', { url: model.url, id, question: 'not now', lock: 'fail' });
  const refused = await outcome(b, 'refused');
  assert.equal(refused.ok, false);
  assert.equal(refused.name, 'RunnerError');
  assert.equal(refused.code, 'SESSION_BUSY');
  assert.match(refused.message, new RegExp(`session "${id}" is running`));
  await startRun(b, 'elsewhere', { url: model.url, id: fresh('other'), question: 'hi', lock: 'fail' });
  assert.deepEqual(await outcome(b, 'elsewhere'), { ok: true, output: 'other session answer' });
  assert.deepEqual(await outcome(a, 'slow'), { ok: true, output: 'slow answer' });
  const items = await a.evaluate((id) => new lib.IndexedDbSession(id).getItems(), id);
  assert.equal(items.length, 2, 'the refused run wrote nothing');
});

test("lock options: false takes no lock; anything else than 'wait', 'fail' or a boolean is INVALID_RUN_OPTIONS", async () => {
  const { page } = await openHarness(env);
  model.script({ text: 'fine' });
  const r = await page.evaluate(async ({ url, id }) => {
    const runner = new lib.Runner({ baseUrl: url });
    const agent = new lib.Agent({ name: 'a', model: 'm' });
    const session = new lib.IndexedDbSession(id);
    const held = await navigator.locks.request(lib.sessionLockName('agent-sessions', id), async () =>
      (await runner.run(agent, 'unlocked', { session, lock: false })).finalOutput,
    );
    let bad;
    try {
      await runner.run(agent, 'x', { session, lock: 'sometimes' });
    } catch (e) {
      bad = `${e.name} ${e.code}`;
    }
    return { held, bad };
  }, { url: model.url, id: fresh('options') });
  assert.equal(r.held, 'fine', 'a run with lock: false runs while the lock is held elsewhere');
  assert.equal(r.bad, 'RunnerError INVALID_RUN_OPTIONS');
});

test('a signal that is not the browser’s own AbortSignal (a polyfill’s) is heeded: a run goes on while it is not aborted, and stops when it is', async () => {
  const { page } = await openHarness(env);
  model.script({ text: 'fine' }, { text: 'fine in memory' });
  const r = await page.evaluate(async ({ url, id }) => {
    const runner = new lib.Runner({ baseUrl: url });
    const agent = new lib.Agent({ name: 'a', model: 'm' });
    // What an AbortSignal polyfill gives: an object of its own class, with aborted and listeners.
    class PolyfilledSignal extends EventTarget {
      aborted = false;
      reason = undefined;
    }
    const outcome = (session, signal = new PolyfilledSignal()) =>
      runner.run(agent, 'hello', { session, signal }).then((r) => r.finalOutput, (e) => `${e.name} ${e.code ?? ''} ${e.message}`);
    const aborted = new PolyfilledSignal();
    aborted.aborted = true;
    aborted.reason = new DOMException('stopped by the user', 'AbortError');
    return {
      stored: await outcome(new lib.IndexedDbSession(id)),
      memory: await outcome(new lib.MemorySession(id)),
      aborted: await outcome(new lib.IndexedDbSession(`${id}-aborted`), aborted),
    };
  }, { url: model.url, id: fresh('polyfilled-signal') });
  assert.equal(r.stored, 'fine');
  assert.equal(r.memory, 'fine in memory');
  assert.match(r.aborted, /^AbortError/);
  assert.equal(model.requests.length, 2, 'the aborted run asked the model nothing');
});

test('a CompactionSession over an IndexedDbSession takes its lock; lock names of two databases never meet', async () => {
  const { page } = await openHarness(env);
  model.script({ text: 'ran' });
  const r = await page.evaluate(async (url) => {
    const runner = new lib.Runner({ baseUrl: url });
    const agent = new lib.Agent({ name: 'a', model: 'm' });
    const tryRun = (session) =>
      runner.run(agent, 'q', { session, lock: 'fail' }).then((res) => res.finalOutput, (e) => `${e.name} ${e.code}`);
    const inner = new lib.IndexedDbSession('chat-1', { dbName: 'cmp', userId: 'ann' });
    const compacting = new lib.CompactionSession(inner, { runner, agent });
    const wrapped = { sessionId: compacting.sessionId, dbName: compacting.dbName, userId: compacting.userId };
    // Other runs (any tab) hold chat-1 of 'cmp' and c of 'x:b' while these start.
    let release;
    const held = new Promise((ok) => (release = ok));
    for (const [dbName, id] of [['cmp', 'chat-1'], ['x:b', 'c']]) {
      await new Promise((taken) => navigator.locks.request(lib.sessionLockName(dbName, id), () => (taken(), held)));
    }
    const busy = await tryRun(compacting);
    // Session "b:c" of database "x" and session "c" of database "x:b": two sessions.
    const other = await tryRun(new lib.IndexedDbSession('b:c', { dbName: 'x' }));
    release();
    return { wrapped, busy, other, names: [lib.sessionLockName('x', 'b:c'), lib.sessionLockName('x:b', 'c')] };
  }, model.url);
  assert.deepEqual(r.wrapped, { sessionId: 'chat-1', dbName: 'cmp', userId: 'ann' });
  assert.equal(r.busy, 'RunnerError SESSION_BUSY');
  assert.notEqual(r.names[0], r.names[1]);
  assert.equal(r.other, 'ran');
});

test("lock: 'fail' right after a run ended in the same tab runs: the ended run’s lock is released before its caller hears of it", async () => {
  const { page } = await openHarness(env);
  model.script({ text: 'one' }, { text: 'two' }, { text: 'three' }, { text: 'four' });
  const r = await page.evaluate(async ({ url, id }) => {
    const runner = new lib.Runner({ baseUrl: url });
    const agent = new lib.Agent({ name: 'a', model: 'm' });
    const session = new lib.IndexedDbSession(id);
    // Each next run starts as soon as the await of the one before resumes.
    const outputs = [];
    try {
      outputs.push((await runner.run(agent, 'q1', { session })).finalOutput);
      outputs.push((await runner.run(agent, 'q2', { session, lock: 'fail' })).finalOutput);
      // After a streamed run, as soon as its result is there.
      outputs.push((await runner.runStreamed(agent, 'q3', { session, lock: 'fail' }).result).finalOutput);
      outputs.push((await runner.run(agent, 'q4', { session, lock: 'fail' })).finalOutput);
    } catch (e) {
      outputs.push(`${e.name} ${e.code}`);
    }
    return outputs;
  }, { url: model.url, id: fresh('back-to-back') });
  assert.deepEqual(r, ['one', 'two', 'three', 'four']);
});
