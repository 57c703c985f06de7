// CompactionSession against the local OpenAI-compatible test server: the summary strategy (any
// chat model, both wire formats) and the Responses API's /responses/compact; compaction after a
// turn without delaying the answer; the archive keeping every original item; and a failure at
// any point (a model error, a page closed mid-compaction, another write in between) leaving
// either the old history or the new one.
import { test, describe, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness, runInPage } from './harness.mjs';
import { startModelServer } from '../server/model-server.mjs';

let env;
let model;
let page;
let context;
before(async () => {
  env = await start();
  model = await startModelServer();
  ({ context, page } = await openHarness(env));
  // A session of the SDK's shape (the four calls) over `store`, with `overrides` in place of some.
  await page.evaluate(() => {
    window.sdkShaped = (store, overrides) => ({
      getSessionId: () => store.getSessionId(),
      getItems: (n) => store.getItems(n),
      addItems: (items) => store.addItems(items),
      popItem: () => store.popItem(),
      clearSession: () => store.clearSession(),
      ...overrides,
    });
    // A forced compaction of a MemorySession holding `history`, seen through an SDK-shaped
    // session whose methods `overrides(store)` replaces: what it gave, and the history after it.
    window.compactThrough = async (url, history, overrides) => {
      const store = new lib.MemorySession();
      await store.addItems(history);
      const session = new lib.CompactionSession(window.sdkShaped(store, overrides(store)), { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
      const res = await attempt(() => session.runCompaction({ force: true }));
      return { res, history: await store.getItems() };
    };
  });
});
after(async () => {
  await model?.close();
  await env?.close();
});
beforeEach(() => model.reset());

let counter = 0;
const fresh = (p) => `${p}-${++counter}`;

function inPage(body, args = {}) {
  return runInPage(page, body, args, model.url);
}

/** Five earlier turns, each a question, a tool call, its result and an answer: 15 candidates. */
const HISTORY = Array.from({ length: 5 }, (_, i) => [
  { role: 'user', content: `question ${i}` },
  { type: 'function_call', callId: `c${i}`, name: 'lookup', arguments: `{"n":${i}}`, status: 'completed' },
  { type: 'function_call_result', callId: `c${i}`, name: 'lookup', status: 'completed', output: { type: 'text', text: `fact ${i}` } },
  { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `answer ${i}` }] },
]).flat();

const text = (item) =>
  typeof item.content === 'string' ? item.content : Array.isArray(item.content) ? item.content.map((p) => p.text ?? '').join('') : item.type;

for (const api of ['chat_completions', 'responses']) {
  describe(`summary compaction (${api})`, () => {
    test('after a turn, in the background: summary + the last turns, the answer delivered first, every item it replaced archived', async () => {
      model.script({ text: 'The weather is fine.' }, { text: 'The user asked five questions; the facts were 0 to 4.' }, { text: 'Yes.' });
      const r = await inPage(
        async ({ url, api, id, history }) => {
          const inner = new lib.IndexedDbSession(id);
          await inner.addItems(history);
          // The model calls the runner makes, counted as they start.
          let calls = 0;
          const counted = (...args) => (calls++, fetch(...args));
          const runner = new lib.Runner({ baseUrl: url, api, fetch: counted });
          const agent = new lib.Agent({ name: 'A', model: 'chat-model' });
          const session = new lib.CompactionSession(inner, { runner, agent, keepTurns: 2 });
          const result = await runner.run(agent, 'And the weather?', { session });
          // Right after the answer: the summary request has not started.
          const atAnswer = calls;
          const report = await result.background;
          const stored = await inner.getItems();
          const archived = await inner.getArchivedItems();
          // The next turn sends the summary to the model.
          await runner.run(agent, 'One more?', { session });
          return { finalOutput: result.finalOutput, atAnswer, report, history: stored, archived };
        },
        { api, id: fresh('summary'), history: HISTORY },
      );
      assert.equal(r.finalOutput, 'The weather is fine.');
      assert.equal(r.atAnswer, 1, 'the answer came before any compaction request');
      assert.deepEqual(r.report.errors, []);
      assert.equal(r.report.compaction.itemsBefore, 22);
      assert.equal(r.report.compaction.itemsAfter, 7);
      assert.equal(r.report.compaction.usage.requests, 1);
      // The summary, then the newest two turns whole: question 4 with its tool exchange, and the
      // turn just run.
      assert.equal(r.history[0].role, 'system');
      assert.match(text(r.history[0]), /^Summary of the earlier conversation:\nThe user asked five questions/);
      assert.deepEqual(r.history.slice(1).map(text), ['question 4', 'function_call', 'function_call_result', 'answer 4', 'And the weather?', 'The weather is fine.']);
      // Every item it replaced, in order, in the archive; the turns it kept are not (they are
      // still in the history).
      assert.deepEqual(r.archived, HISTORY.slice(0, 16));
      // What the model was asked to summarise: the older turns, as a transcript, and nothing else.
      const summaryRequest = model.requests[1].body;
      const asked = JSON.stringify(summaryRequest);
      assert.match(asked, /question 0/);
      assert.match(asked, /fact 3/);
      assert.doesNotMatch(asked, /question 4/);
      assert.equal(summaryRequest.model, 'chat-model');
      assert.equal(summaryRequest.tools, undefined);
      // The next turn sends the summary as a plain system message: the mark that tells a later
      // compaction it is one goes nowhere near the API (which refuses a field it does not know).
      const next = JSON.stringify(model.requests[2].body);
      assert.match(next, /Summary of the earlier conversation/);
      assert.doesNotMatch(next, /agent-sessions/);
    });
  });
}

describe('compaction', () => {
test('a compaction this package makes is told to subscribers as one (change: compaction), over our sessions and an EncryptedSession, not as any replacement of the history', async () => {
  model.script({ text: 'Summary one.' }, { text: 'Summary two.' }, { text: 'Summary three.' });
  const r = await inPage(
    async ({ url, id, history }) => {
      const key = crypto.getRandomValues(new Uint8Array(32));
      const out = {};
      const kinds = {
        indexeddb: () => new lib.IndexedDbSession(`${id}-idb`),
        memory: () => new lib.MemorySession(`${id}-mem`),
        encrypted: () => new lib.EncryptedSession(new lib.IndexedDbSession(`${id}-enc`), { key }),
      };
      for (const [kind, make] of Object.entries(kinds)) {
        const inner = make();
        await inner.addItems(history);
        const heard = [];
        // (The add's own event may come after this starts listening.)
        const stop = inner.subscribe((e) => e.type !== 'add' && heard.push(`${e.type}:${e.change ?? ''}`));
        await new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm', keepTurns: 1 }).runCompaction({ force: true });
        for (let i = 0; i < 50 && !heard.length; i++) await new Promise((ok) => setTimeout(ok, 10));
        await new Promise((ok) => setTimeout(ok, 20));
        stop();
        out[kind] = heard;
      }
      return out;
    },
    { id: fresh('told'), history: HISTORY },
  );
  assert.deepEqual(r, { indexeddb: ['replace:compaction'], memory: ['replace:compaction'], encrypted: ['replace:compaction'] });
});

test('a summary keeps its turns as they were stored (bytes, a field set to undefined), and archives only what it replaced, compaction after compaction', async () => {
  model.script({ text: 'Summary one.' }, { text: 'Summary two.' });
  const r = await inPage(
    async ({ url, id, history }) => {
      const inner = new lib.IndexedDbSession(id);
      await inner.addItems(history);
      const drawn = { type: 'function_call_result', callId: 'img', name: 'draw', status: 'completed', output: { type: 'image', image: { data: new Uint8Array([137, 80, 78, 71]), mediaType: 'image/png' } }, providerData: undefined };
      await inner.addItems([{ role: 'user', content: 'draw it' }, { type: 'function_call', callId: 'img', name: 'draw', arguments: '{}', status: 'completed' }, drawn, { role: 'assistant', content: 'Drawn.' }]);
      const runner = new lib.Runner({ baseUrl: url });
      const session = new lib.CompactionSession(inner, { runner, model: 'm', keepTurns: 1 });
      const label = (i) => (typeof i.content === 'string' ? i.content : Array.isArray(i.content) ? i.content.map((p) => p.text).join('') : `${i.type}:${i.callId}`);
      const first = await session.runCompaction({ force: true });
      const kept = (await inner.getItems()).find((i) => i.type === 'function_call_result');
      await inner.addItems([{ role: 'user', content: 'and now?' }, { role: 'assistant', content: 'Now.' }]);
      const second = await session.runCompaction({ force: true });
      return {
        first: first?.itemsAfter,
        second: second?.itemsAfter,
        bytes: kept.output.image.data instanceof Uint8Array ? [...kept.output.image.data] : kept.output.image.data,
        undefinedKept: 'providerData' in kept,
        history: (await inner.getItems()).map(label),
        archived: (await inner.getArchivedItems()).map(label),
      };
    },
    { id: fresh('kept'), history: HISTORY },
  );
  assert.deepEqual([r.first, r.second], [5, 3]);
  assert.deepEqual(r.bytes, [137, 80, 78, 71], 'the image bytes of a kept turn are bytes still');
  assert.equal(r.undefinedKept, true);
  assert.deepEqual(r.history, ['Summary of the earlier conversation:\nSummary two.', 'and now?', 'Now.']);
  const labels = HISTORY.map((i) => (typeof i.content === 'string' ? i.content : Array.isArray(i.content) ? i.content.map((p) => p.text).join('') : `${i.type}:${i.callId}`));
  assert.deepEqual(r.archived, [...labels, 'Summary of the earlier conversation:\nSummary one.', 'draw it', 'function_call:img', 'function_call_result:img', 'Drawn.'], 'each item archived once, in order');
});

test('a CompactionSession and a SyncedSession tell the branch their session is on', async () => {
  const r = await inPage(
    async ({ url, id, history }) => {
      const inner = new lib.IndexedDbSession(id);
      await inner.addItems(history);
      const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
      const before = session.currentBranch;
      await session.createBranchFromTurn(1, 'edit');
      const memory = new lib.CompactionSession(new lib.MemorySession(), { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
      // A SyncedSession tells its local session's, through a CompactionSession too.
      const remote = new lib.MemorySession();
      const synced = new lib.SyncedSession(inner, remote, { syncOnOpen: false });
      const overSynced = new lib.CompactionSession(synced, { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
      const out = { before, after: session.currentBranch, inner: inner.currentBranch, memory: memory.currentBranch, synced: synced.currentBranch, overSynced: overSynced.currentBranch };
      synced.close();
      return out;
    },
    { id: fresh('branch-of'), history: HISTORY },
  );
  assert.deepEqual(r, { before: 'main', after: 'edit', inner: 'edit', memory: 'main', synced: 'edit', overSynced: 'edit' });
});

test('nothing to compact (an empty history, earlier compactions only): null, even with force, and no request', async () => {
  const r = await inPage(
    async ({ url, id }) => {
      const out = {};
      for (const strategy of ['responses', 'summary']) {
        const inner = new lib.IndexedDbSession(`${id}-${strategy}`);
        const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
        const session = new lib.CompactionSession(inner, { runner, model: 'm', strategy });
        out[strategy] = { result: await session.runCompaction({ force: true }), listed: (await lib.listSessions()).some((s) => s.sessionId === `${id}-${strategy}`) };
        // A history of an earlier compaction alone.
        await inner.addItems([{ type: 'compaction', id: 'cmp_1', encrypted_content: 'E' }]);
        out[`${strategy} after a compaction`] = await session.runCompaction({ force: true });
        out[`${strategy} items`] = (await inner.getItems()).length;
      }
      return out;
    },
    { id: fresh('empty') },
  );
  assert.deepEqual(r, {
    responses: { result: null, listed: false },
    summary: { result: null, listed: false },
    'responses after a compaction': null,
    'summary after a compaction': null,
    'responses items': 1,
    'summary items': 1,
  });
  assert.equal(model.requests.length, 0, 'no request was made');
});

  test('the Responses API strategy stores what /responses/compact returns (the user messages it gives back as they were stored), and archives the rest, each item once (both session kinds)', async () => {
    for (const kind of ['IndexedDbSession', 'MemorySession']) {
      const r = await inPage(
        async ({ url, id, history, kind }) => {
          const inner = new lib[kind](id);
          await inner.addItems(history);
          const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
          const session = new lib.CompactionSession(inner, { runner, model: 'gpt-x', strategy: 'responses' });
          const result = await session.runCompaction();
          const out = { result, history: await inner.getItems(), archived: await inner.getArchivedItems() };
          // A turn more, compacted again: only that turn's answer and the compaction item it
          // replaces are archived more.
          await inner.addItems([{ role: 'user', content: 'question 5' }, { role: 'assistant', content: 'answer 5' }]);
          await session.runCompaction({ force: true });
          // The size the record keeps is the one measured from the rows afresh.
          let sizes = null;
          if (kind === 'IndexedDbSession') {
            const kept = (await lib.listSessions()).find((s) => s.sessionId === id).bytes;
            await new Promise((done, fail) => {
              const open = indexedDB.open('agent-sessions');
              open.onsuccess = () => {
                const tx = open.result.transaction('agent_sessions', 'readwrite');
                const store = tx.objectStore('agent_sessions');
                const get = store.get(id);
                get.onsuccess = () => {
                  delete get.result.bytes;
                  store.put(get.result);
                };
                tx.oncomplete = () => (open.result.close(), done());
                tx.onerror = () => fail(tx.error);
              };
            });
            sizes = { kept, measured: (await lib.storageEstimate()).sessions.find((s) => s.sessionId === id).bytes };
          }
          return { ...out, sizes, again: await inner.getArchivedItems(), after: await inner.getItems() };
        },
        { id: fresh('responses'), history: HISTORY, kind },
      );
      const request = model.requests.at(-2);
      assert.match(request.path, /\/responses\/compact$/);
      assert.equal(request.body.model, 'gpt-x');
      assert.equal(request.body.input.length, 20);
      assert.equal(r.result.itemsAfter, 6);
      // (With the fields of the SDK's RequestUsage, which its compaction result holds.)
      assert.deepEqual(r.result.usage, { requests: 1, inputTokens: 100, outputTokens: 10, totalTokens: 110, inputTokensDetails: {}, outputTokensDetails: {} });
      assert.deepEqual(r.history.at(-1), { type: 'compaction', id: r.history.at(-1).id, encrypted_content: 'ENC(20)' });
      assert.match(r.history.at(-1).id, /^cmp_\d+$/);
      // What was added is what comes back: the server's copy of a question is the stored one.
      const questions = HISTORY.filter((i) => i.role === 'user');
      assert.deepEqual(r.history.slice(0, -1), questions);
      assert.deepEqual(r.archived, HISTORY.filter((i) => i.role !== 'user'), 'the questions stay in the history, not archived');
      assert.deepEqual(r.again, [...r.archived, r.history.at(-1), { role: 'assistant', content: 'answer 5' }], `${kind}: compacted again, nothing is archived twice`);
      assert.deepEqual(r.after.slice(0, -1), [...questions, { role: 'user', content: 'question 5' }]);
      if (r.sizes) assert.equal(r.sizes.kept, r.sizes.measured, 'the kept size is what the rows take');
    }
  });

  test('a summary of a history compacted on the server before keeps its compaction item (encrypted, it cannot be summarised) before the summary, and sends it to the Responses API', async () => {
    model.script({ text: 'the summary' }, { text: 'ok' });
    const compacted = { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC' };
    const r = await inPage(
      async ({ url, id, history, compacted }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems([{ role: 'user', content: 'the first question' }, compacted, ...history]);
        const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
        const session = new lib.CompactionSession(inner, { runner, model: 'gpt-x', keepTurns: 2 });
        await session.runCompaction({ force: true });
        const stored = await inner.getItems();
        await runner.run(new lib.Agent({ name: 'a', model: 'gpt-x' }), 'and now?', { session });
        return stored;
      },
      { id: fresh('summary-over-server'), history: HISTORY, compacted },
    );
    assert.deepEqual(r[0], compacted, 'the compaction item first, as it was');
    assert.match(text(r[1]), /^Summary of the earlier conversation:\nthe summary/);
    assert.deepEqual(r.slice(2).map(text), ['question 3', 'function_call', 'function_call_result', 'answer 3', 'question 4', 'function_call', 'function_call_result', 'answer 4']);
    const sent = model.requests.at(-1).body.input;
    assert.deepEqual(sent[0], { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC' });
  });

  test('the trigger: the SDK rule by default (10 candidates among what a summary replaces, not the turns it keeps), shouldCompact (or the SDK’s shouldTriggerCompaction) when given, force whenever there is something to summarise', async () => {
    model.script({ text: 'sum 1' }, { text: 'sum 2' }, { text: 'sum 3' });
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.MemorySession(id);
        // Four turns of tool calls: 12 candidates, 6 of them in the two turns a summary keeps.
        await inner.addItems(history.slice(0, 16));
        const runner = new lib.Runner({ baseUrl: url });
        const session = new lib.CompactionSession(inner, { runner, model: 'm' });
        const kept = await session.runCompaction();
        await session.addItems(history.slice(16)); // 9 before the newest two turns
        const below = await session.runCompaction();
        await session.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]); // 12
        const at = await session.runCompaction();
        // Right after it, the turns it kept do not set it off again, forced or not.
        const after = [await session.runCompaction(), await session.runCompaction({ force: true })];
        const seen = [];
        const custom = new lib.CompactionSession(new lib.MemorySession(), {
          runner,
          model: 'm',
          shouldCompact: async (context) => (seen.push(context.candidateItems.length, context.compactionCandidateItems.length, context.sessionItems.length), false),
        });
        await custom.addItems(history);
        const declined = await custom.runCompaction();
        const forced = await custom.runCompaction({ force: true });
        // The SDK's name for the hook; one that empties the history it is given changes nothing.
        const sdkNamed = new lib.CompactionSession(new lib.IndexedDbSession(`${id}-sdk-named`), {
          runner,
          model: 'm',
          shouldTriggerCompaction: ({ sessionItems }) => ((sessionItems.length = 0), true),
        });
        await sdkNamed.addItems(history.slice(0, 12));
        const asked = await sdkNamed.runCompaction();
        return { kept, below, at: at?.itemsAfter, after, seen, declined, forced: forced?.itemsAfter, asked: asked?.itemsAfter };
      },
      { id: fresh('trigger'), history: HISTORY },
    );
    assert.equal(r.kept, null, '12 candidates in all, but only 6 a summary would replace');
    assert.equal(r.below, null);
    assert.equal(r.at, 7, 'the summary and the newest two turns (4 + 2 items)');
    assert.deepEqual(r.after, [null, null]);
    assert.deepEqual(r.seen, [9, 9, 20], 'the candidates before the two kept turns, under both names');
    assert.equal(r.declined, null);
    assert.equal(r.forced, 9);
    assert.equal(r.asked, 9, 'the SDK’s option name');
  });

  test('a history whose newest item is a question (a run under way, its answer not saved yet) is not compacted, even forced', async () => {
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems([...history, { role: 'user', content: 'a question being answered' }]);
        const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
        const session = new lib.CompactionSession(inner, { runner, model: 'gpt-x', strategy: 'responses' });
        const done = [await session.runCompaction(), await session.runCompaction({ force: true })];
        return { done, count: (await inner.getItems()).length };
      },
      { id: fresh('awaiting'), history: HISTORY },
    );
    assert.deepEqual(r.done, [null, null]);
    assert.equal(r.count, HISTORY.length + 1);
    assert.equal(model.requests.length, 0, 'no compaction request');
  });

  test('a run paused for approval in the newest turn is not compacted away (its approval then runs the tool); a call whose approval was never given, in an earlier turn, is not sent to /responses/compact', async () => {
    const r = await inPage(
      async ({ url, id, history }) => {
        let runs = 0;
        const email = { name: 'send_email', parameters: { type: 'object', properties: {} }, needsApproval: true, execute: async () => `sent ${++runs}` };
        const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [email] });
        const reply = (output) => new Response(JSON.stringify({ id: 'r', status: 'completed', output }), { headers: { 'content-type': 'application/json' } });
        const call = [{ type: 'function_call', id: 'fc_1', call_id: 'call_mail', name: 'send_email', arguments: '{}', status: 'completed' }];
        const answer = [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Sent.' }] }];
        const scripted = (answers) => new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'responses', fetch: async () => answers.shift()() });
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        // (No compaction after each run, in the background: the runs go on meanwhile, and one
        // that lands compacts what the last call here is to.)
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url, api: 'responses' }), model: 'gpt-x', strategy: 'responses', shouldCompact: () => false });
        const paused = await scripted([() => reply(call)]).run(agent, 'Email Ada', { session });
        const whilePaused = [await session.runCompaction({ force: true })];
        const state = paused.state;
        for (const item of state.getInterruptions()) state.approve(item);
        const resumed = await scripted([() => reply(answer)]).run(agent, state, { session });
        // Paused again, then left: the user asks something else, answered.
        const again = await scripted([() => reply([{ ...call[0], id: 'fc_2', call_id: 'call_bob' }])]).run(agent, 'Email Bob', { session });
        await inner.addItems([{ role: 'user', content: 'never mind' }, { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'OK.' }] }]);
        const compacted = await session.runCompaction({ force: true });
        return { whilePaused, finalOutput: resumed.finalOutput, runs, interrupted: again.interruptions.length, compacted: compacted !== null, history: await inner.getItems() };
      },
      { id: fresh('paused'), history: HISTORY },
    );
    assert.deepEqual(r.whilePaused, [null], 'nothing compacted while the approval waits, even with force');
    assert.equal(r.finalOutput, 'Sent.');
    assert.equal(r.runs, 1);
    assert.equal(r.interrupted, 1);
    assert.equal(r.compacted, true);
    const request = model.requests.at(-1);
    assert.match(request.path, /\/responses\/compact$/);
    const calls = request.body.input.filter((i) => i.type === 'function_call').map((i) => i.call_id);
    const outputs = request.body.input.filter((i) => i.type === 'function_call_output').map((i) => i.call_id);
    assert.deepEqual(calls, outputs, 'every call sent with its output');
    assert.ok(calls.includes('call_mail'), 'the approved call');
    assert.ok(!request.raw.includes('call_bob'), 'not the one left unanswered');
    assert.equal(r.history.at(-1).type, 'compaction');
  });

  test('a compaction asked while a run resumed after its approval waits for the model waits for that run: its answer is saved, then compacted', async () => {
    // The history then ends with the approved call's output, as a finished one would: compacted
    // at that moment, the run's save of its answer would be refused.
    const r = await inPage(
      async ({ url, id, history }) => {
        const email = { name: 'send_email', parameters: { type: 'object', properties: {} }, needsApproval: true, execute: async () => 'sent' };
        const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [email] });
        const reply = (output) => new Response(JSON.stringify({ id: 'r', status: 'completed', output }), { headers: { 'content-type': 'application/json' } });
        const call = [{ type: 'function_call', id: 'fc_1', call_id: 'call_mail', name: 'send_email', arguments: '{}', status: 'completed' }];
        const answer = [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Sent.' }] }];
        let asked;
        let answerNow;
        const waiting = new Promise((ok) => (asked = ok));
        const answered = new Promise((ok) => (answerNow = ok));
        const answers = [
          () => reply(call),
          async () => {
            asked();
            await answered;
            return reply(answer);
          },
        ];
        const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'responses', fetch: async () => answers.shift()() });
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        // The compaction's requests, counted as they start.
        let compactions = 0;
        const counted = (...args) => (compactions++, fetch(...args));
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url, api: 'responses', fetch: counted }), model: 'gpt-x', strategy: 'responses', shouldCompact: () => false });
        const paused = await runner.run(agent, 'Email Ada', { session });
        const state = paused.state;
        for (const item of state.getInterruptions()) state.approve(item);
        const resumed = runner.run(agent, state, { session }).then((done) => done.finalOutput, (e) => `${e.name} ${e.code}`);
        await waiting;
        let settled = false;
        const compaction = session.runCompaction({ force: true }).then(
          (done) => ((settled = true), done !== null),
          (e) => ((settled = true), `${e.name} ${e.code}`),
        );
        await new Promise((ok) => setTimeout(ok, 100));
        const early = settled || compactions > 0;
        answerNow();
        return { finalOutput: await resumed, early, compacted: await compaction, history: await inner.getItems() };
      },
      { id: fresh('resumed'), history: HISTORY },
    );
    assert.equal(r.finalOutput, 'Sent.');
    assert.equal(r.early, false, 'the compaction waited for the run: no request before its answer');
    assert.equal(r.compacted, true);
    assert.equal(r.history.at(-1).type, 'compaction');
    assert.match(model.requests.at(-1).raw, /Sent\./, 'the answer was compacted with the rest');
  });

  test('a compaction asked where the app holds the session’s lock around a run of the SDK (whose run() awaits it) does not wait for that lock', async () => {
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url, api: 'responses' }), model: 'gpt-x', strategy: 'responses' });
        const name = lib.sessionLockName(session.dbName, session.sessionId);
        const done = navigator.locks.request(name, () => session.runCompaction({ force: true }));
        const late = new Promise((ok) => setTimeout(() => ok('still waiting after 5 s'), 5000));
        const outcome = await Promise.race([done.then((c) => c !== null), late]);
        return { outcome, last: (await inner.getItems()).at(-1).type };
      },
      { id: fresh('sdk-lock'), history: HISTORY },
    );
    assert.equal(r.outcome, true);
    assert.equal(r.last, 'compaction');
  });

  test('a session whose replaceHistoryWithCompaction appends is given a summary by a clear and an add, as the SDK does, also one that keeps a server compaction item from before; the SDK’s Conversations session is refused', async () => {
    model.script({ text: 'a summary' }, { text: 'a second summary' });
    const r = await inPage(
      async ({ url, history }) => {
        const out = {};
        for (const [name, before] of [
          ['plain', []],
          // Two earlier server compactions: the newest stands for both.
          ['server', [{ role: 'user', content: 'long ago' }, { type: 'compaction', id: 'cmp_0', encrypted_content: 'OLD' }, { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC' }]],
        ]) {
          const store = new lib.MemorySession();
          await store.addItems([...before, ...history]);
          const inner = sdkShaped(store, { replaceHistoryWithCompaction: (items) => store.addItems(items) });
          const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
          const done = await session.runCompaction({ force: true });
          out[name] = { done, history: await store.getItems() };
        }
        // The SDK's Conversations session, told by the symbol the SDK marks it with: a
        // compaction would clear it, deleting the conversation on the server, for every device
        // that names it. Another session with the same methods is not one.
        const store = new lib.MemorySession();
        await store.addItems(history);
        const appending = sdkShaped(store, { replaceHistoryWithCompaction: (items) => store.addItems(items) });
        const sdkConversation = { ...appending, [Symbol('OPENAI_SESSION_API')]: 'conversations' };
        const made = (inner) => {
          try {
            new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
            return 'made';
          } catch (e) {
            return `${e.name} ${e.code}`;
          }
        };
        out.conversation = made(sdkConversation);
        out.appending = made(appending);
        return out;
      },
      { history: HISTORY },
    );
    assert.equal(r.plain.done.itemsAfter, 9);
    assert.equal(r.plain.history.length, 9, 'the summary and the two kept turns, not appended to the old history');
    assert.equal(r.plain.history[0].role, 'system');
    assert.equal(r.server.history.length, 10, 'the newest compaction item, the summary and the two kept turns, not appended');
    assert.deepEqual(r.server.history[0], { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC' });
    assert.equal(r.server.history[1].role, 'system');
    assert.equal(r.conversation, 'RunnerError INVALID_SESSION');
    assert.equal(r.appending, 'made');
  });

  test('over a session without replaceHistory, a write that fails after the clear puts the old history back', async () => {
    model.script({ text: 'a summary' });
    const r = await inPage(
      // Its write of the compacted history fails.
      ({ url, history }) =>
        compactThrough(url, history, (store) => ({
          addItems: (items) => (items.some((i) => i['agent-sessions.summary']) ? Promise.reject(new Error('quota')) : store.addItems(items)),
        })),
      { history: HISTORY },
    );
    assert.equal(r.res.message, 'quota');
    assert.deepEqual(r.history, HISTORY);
  });

  test('over a session without replaceHistory, a clear that fails part of the way (a remote deleting item by item) has what it deleted put back, once', async () => {
    model.script({ text: 'a summary' });
    const r = await inPage(
      // Its clear deletes the newest three items, then fails.
      ({ url, history }) =>
        compactThrough(url, history, (store) => ({
          clearSession: async () => {
            for (let i = 0; i < 3; i++) await store.popItem();
            throw new Error('network down');
          },
        })),
      { history: HISTORY },
    );
    assert.equal(r.res.message, 'network down');
    assert.deepEqual(r.history, HISTORY);
  });

  test('over a session without replaceHistory, a clear that fails having deleted nothing while another device added a turn puts nothing back twice; a write that fails, then a read, still puts the history back', async () => {
    model.script({ text: 'a summary' }, { text: 'another summary' });
    const r = await inPage(
      async ({ url, history }) => {
        const added = [{ role: 'user', content: 'from another device' }];
        const store = new lib.MemorySession();
        await store.addItems(history);
        const failing = sdkShaped(store, {
          clearSession: async () => {
            await store.addItems(added);
            throw new Error('network down');
          },
        });
        const first = await attempt(() => new lib.CompactionSession(failing, { runner: new lib.Runner({ baseUrl: url }), model: 'm' }).runCompaction({ force: true }));
        const afterClear = await store.getItems();
        // Its write fails, and so does the read after it: the old history is added back all the same.
        const other = new lib.MemorySession();
        await other.addItems(history);
        let broken = false;
        const flaky = sdkShaped(other, {
          addItems: (items) => (items.some((i) => i['agent-sessions.summary']) ? ((broken = true), Promise.reject(new Error('quota'))) : other.addItems(items)),
          getItems: (n) => (broken ? Promise.reject(new Error('offline')) : other.getItems(n)),
        });
        const second = await attempt(() => new lib.CompactionSession(flaky, { runner: new lib.Runner({ baseUrl: url }), model: 'm' }).runCompaction({ force: true }));
        broken = false;
        return { first: first.message, afterClear, second: second.message, afterWrite: await other.getItems() };
      },
      { history: HISTORY },
    );
    assert.equal(r.first, 'network down');
    assert.deepEqual(r.afterClear, [...HISTORY, { role: 'user', content: 'from another device' }]);
    assert.equal(r.second, 'quota');
    assert.deepEqual(r.afterWrite, HISTORY);
  });

  test('a session that reads a window by default (settings.limit) is compacted whole', async () => {
    model.script({ text: 'five questions, five facts' });
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id, { settings: { limit: 4 } });
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm', keepTurns: 1 });
        const done = await session.runCompaction({ force: true });
        const all = await inner.getItems(100);
        return { done, texts: all.map((i) => i.role ?? i.type), archived: (await inner.getArchivedItems()).length };
      },
      { id: fresh('windowed'), history: HISTORY },
    );
    assert.equal(r.done.itemsBefore, 20, 'every item was read, not the window of 4');
    assert.equal(r.done.itemsAfter, 5);
    assert.deepEqual(r.texts, ['system', 'user', 'function_call', 'function_call_result', 'assistant']);
    assert.equal(r.archived, 16, 'the 16 items replaced, not the 4 kept');
  });

  test('a model error during compaction leaves the old history', async () => {
    model.script({ error: 500, message: 'overloaded' }, { error: 500, message: 'overloaded' }, { error: 500, message: 'overloaded' });
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url, retries: 0 }), model: 'm' });
        const res = await attempt(() => session.runCompaction({ force: true }));
        return { res, history: await inner.getItems(), archived: await inner.getArchivedItems() };
      },
      { id: fresh('error'), history: HISTORY },
    );
    assert.equal(r.res.name, 'ModelError');
    assert.equal(r.res.status, 500);
    assert.deepEqual(r.history, HISTORY);
    assert.deepEqual(r.archived, []);
  });

  test('a /responses/compact answer without a compaction item is refused, leaving the old history', async () => {
    model.script({ withoutCompaction: true });
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url, api: 'responses', retries: 0 }), model: 'gpt-x', strategy: 'responses' });
        const res = await attempt(() => session.runCompaction({ force: true }));
        return { res, history: await inner.getItems(), archived: await inner.getArchivedItems() };
      },
      { id: fresh('no-compaction-item'), history: HISTORY },
    );
    assert.equal(r.res.name, 'ModelError');
    assert.match(r.res.message, /no "output" array holding a compaction item/);
    assert.equal(model.requests.length, 1);
    assert.deepEqual(r.history, HISTORY, 'the history is as it was');
    assert.deepEqual(r.archived, []);
  });

  test('a compaction request the server never answers fails after its timeout, leaving the old history', async () => {
    model.script({ hang: true });
    const r = await inPage(
      async ({ url, id, history }) => {
        // The ten-minute timeout, made to fire at once (see tests/pages/timeouts.js).
        const { asked, value } = await withQuickTimeouts(async () => {
          const inner = new lib.IndexedDbSession(id);
          await inner.addItems(history);
          const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url, retries: 0 }), model: 'm' });
          const res = await attempt(() => session.runCompaction({ force: true }));
          return { res, history: await inner.getItems(), archived: await inner.getArchivedItems() };
        });
        return { asked, ...value };
      },
      { id: fresh('timeout'), history: HISTORY },
    );
    assert.deepEqual(r.asked, [600000]);
    assert.equal(r.res.name, 'ModelError');
    assert.equal(r.res.status, 0);
    assert.match(r.res.message, /no answer within 600 s to the compaction request/);
    assert.deepEqual(r.history, HISTORY);
    assert.deepEqual(r.archived, []);
  });

  test('a whole turn written in the middle of a compaction goes after the compacted history, with no second request; a pop or a question waiting for its answer wins: the compaction is refused (null), nothing is lost', async () => {
    model.script({ text: 'summary one', waitMs: 400 }, { text: 'summary two', waitMs: 400 });
    const r = await inPage(
      async ({ url, id, history }) => {
        const out = {};
        for (const [name, meanwhile] of [
          ['turn', (s) => s.addItems([{ role: 'user', content: 'meanwhile' }, { role: 'assistant', content: 'its answer' }])],
          ['pop', (s) => s.popItem()],
        ]) {
          const inner = new lib.IndexedDbSession(`${id}-${name}`);
          await inner.addItems(history);
          const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm', keepTurns: 1 });
          const compaction = session.runCompaction({ force: true });
          await new Promise((ok) => setTimeout(ok, 100));
          // Another tab (another object) writes while the model is summarising.
          await meanwhile(new lib.IndexedDbSession(`${id}-${name}`));
          const done = await compaction;
          out[name] = { done: done && [done.itemsBefore, done.itemsAfter], history: (await inner.getItems()).map((i) => (typeof i.content === 'string' ? i.content : i.type)), archived: (await inner.getArchivedItems()).length };
        }
        return out;
      },
      { id: fresh('race-turn'), history: HISTORY },
    );
    assert.deepEqual(r.turn.done, [22, 7]);
    assert.deepEqual(r.turn.history, ['Summary of the earlier conversation:\nsummary one', 'question 4', 'function_call', 'function_call_result', 'message', 'meanwhile', 'its answer']);
    assert.equal(r.turn.archived, 16, 'what it replaced; neither the kept turn nor the new one');
    assert.equal(r.pop.done, null);
    assert.equal(r.pop.history.length, HISTORY.length - 1, 'the pop stands');
    assert.equal(r.pop.archived, 0);
    assert.equal(model.requests.length, 2, 'one request each');
  });

  test('a session closed while its compaction waits for the model: the compaction resolves null (the SDK’s run() awaits it after saving its answer), nothing changed', async () => {
    model.script({ text: 'a summary', waitMs: 300 });
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm', keepTurns: 1 });
        const compaction = session.runCompaction({ force: true }).then((done) => done, (e) => `${e.name} ${e.code}`);
        await new Promise((ok) => setTimeout(ok, 100));
        await inner.close();
        return { done: await compaction, items: (await new lib.IndexedDbSession(id).getItems()).length };
      },
      { id: fresh('closed'), history: HISTORY },
    );
    assert.equal(r.done, null);
    assert.equal(r.items, HISTORY.length, 'the history as it was');
  });

  test('a compaction asked just before a close() of its CompactionSession resolves null; one asked after is refused (CLOSED)', async () => {
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm', keepTurns: 1 });
        const outcome = (p) => p.then((done) => done, (e) => `${e.name} ${e.code}`);
        const compaction = outcome(session.runCompaction({ force: true }));
        await session.close();
        return { done: await compaction, after: await outcome(session.runCompaction({ force: true })), items: (await new lib.IndexedDbSession(id).getItems()).length };
      },
      { id: fresh('closing'), history: HISTORY },
    );
    assert.equal(r.done, null);
    assert.equal(r.after, 'SessionError CLOSED');
    assert.equal(r.items, HISTORY.length, 'the history as it was');
    assert.equal(model.requests.length, 0);
  });

  test('two compactions asked at once run one after the other: the second finds nothing to replace, and makes no request', async () => {
    model.script({ text: 'the only summary', waitMs: 300 }, { text: 'a second summary' });
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm', keepTurns: 1 });
        const results = await Promise.all([session.runCompaction({ force: true }), session.runCompaction({ force: true })]);
        return { results: results.map((d) => d && d.itemsAfter), history: (await inner.getItems()).length };
      },
      { id: fresh('twice'), history: HISTORY },
    );
    assert.deepEqual(r.results, [5, null]);
    assert.equal(r.history, 5);
    assert.equal(model.requests.length, 1, 'one summary paid for');
  });

  test('a write in the middle of a compaction wins: the compaction is refused (null), nothing is lost', async () => {
    model.script({ text: 'a summary', waitMs: 400 });
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
        const compaction = attempt(() => session.runCompaction({ force: true }));
        await new Promise((ok) => setTimeout(ok, 100));
        // Another tab (another object) writes while the model is summarising.
        await new lib.IndexedDbSession(id).addItems([{ role: 'user', content: 'meanwhile' }]);
        return { res: await compaction, history: await inner.getItems(), archived: await inner.getArchivedItems() };
      },
      { id: fresh('race'), history: HISTORY },
    );
    assert.deepEqual(r.res, { ok: true, value: null }, 'nothing done, no error: the SDK’s run() awaits it after saving its answer');
    assert.deepEqual(r.history, [...HISTORY, { role: 'user', content: 'meanwhile' }]);
    assert.deepEqual(r.archived, []);
  });

  test('runCompaction takes the calls made before it into account: an addItems not awaited yet is read, not taken for a write in between', async () => {
    model.script({ text: 'a summary', waitMs: 400 });
    const r = await inPage(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        // A session whose writes take a while (a slow disk, a sync): the add lands while the
        // model summarises, unless the compaction waits for it.
        const slow = Object.create(inner, {
          addItems: { value: async (items) => (await new Promise((ok) => setTimeout(ok, 200)), inner.addItems(items)) },
        });
        for (const name of ['getSessionId', 'getItems', 'popItem', 'clearSession', 'replaceHistory', 'getArchivedItems']) {
          Object.defineProperty(slow, name, { value: (...args) => inner[name](...args) });
        }
        const session = new lib.CompactionSession(slow, { runner: new lib.Runner({ baseUrl: url }), model: 'm', keepTurns: 1 });
        const adding = session.addItems([{ role: 'user', content: 'question 5' }, { role: 'assistant', content: 'answer 5' }]);
        const res = await session.runCompaction({ force: true });
        await adding;
        return { compacted: res !== null, history: await inner.getItems() };
      },
      { id: fresh('ordered'), history: HISTORY },
    );
    assert.equal(r.compacted, true, 'not refused');
    assert.deepEqual(r.history.slice(-2).map(text), ['question 5', 'answer 5'], 'the newest turn kept, after the summary');
    assert.equal(r.history.length, 3);
  });

  test('over a SyncedSession: its replaceHistory on the device, refused (null) after a write in between; archived with what earlier compactions archived, the usage following the turns', async () => {
    model.script({ text: 'a summary', waitMs: 400 }, { text: 'the summary' });
    const r = await inPage(
      async ({ url, id, history }) => {
        const local = new lib.IndexedDbSession(id);
        const remoteSession = new lib.MemorySession(`${id}-remote`);
        const synced = new lib.SyncedSession(local, remoteSession, { syncOnOpen: false });
        // An earlier compaction of the local session archived what it replaced.
        await local.addItems([{ role: 'user', content: 'long ago' }]);
        await local.replaceHistory([{ role: 'system', content: 'earlier summary' }]);
        // Five turns, each with what its run cost.
        for (let i = 0; i < 5; i++) {
          await synced.addItems(history.slice(i * 4, i * 4 + 4));
          await local.storeRunUsage({ requests: 1, inputTokens: i + 1, outputTokens: 0, totalTokens: i + 1 });
        }
        const session = new lib.CompactionSession(synced, { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
        const compaction = session.runCompaction({ force: true });
        await new Promise((ok) => setTimeout(ok, 100));
        // Another tab writes (or a sync round pulls another device's turn) while the model
        // summarises: a question, whose answer is still to come.
        await new lib.IndexedDbSession(id).addItems([{ role: 'user', content: 'meanwhile' }]);
        const raced = await compaction;
        await new lib.IndexedDbSession(id).addItems([{ role: 'assistant', content: 'its answer' }]);
        const afterRace = (await local.getItems()).length;
        const done = await session.runCompaction({ force: true });
        const items = await local.getItems();
        const archived = (await local.getArchivedItems()).map((i) => i.content);
        // (Read through the SyncedSession: the local session's.)
        const usage = { first: (await synced.getTurnUsage(1))?.inputTokens, total: (await synced.getSessionUsage()).inputTokens };
        // Read through the SyncedSession and the CompactionSession too; the next round takes the
        // new history to the remote.
        const through = [(await synced.getArchivedItems()).length, (await session.getArchivedItems()).length];
        await synced.sync();
        const remote = (await remoteSession.getItems()).length;
        await synced.close();
        return { raced, afterRace, done: done && done.itemsAfter, items: items.map((i) => (typeof i.content === 'string' ? i.content : i.type)), archived, usage, through, remote };
      },
      { id: fresh('synced'), history: HISTORY },
    );
    assert.equal(r.raced, null);
    assert.equal(r.afterRace, 1 + HISTORY.length + 2, 'the turn written meanwhile is kept');
    assert.equal(r.done, 7, 'the summary and the two newest turns');
    assert.match(r.items[0], /^Summary of the earlier conversation:\nthe summary/);
    assert.deepEqual(r.items.slice(-2), ['meanwhile', 'its answer']);
    assert.equal(r.archived[0], 'long ago', 'what an earlier compaction archived is still there');
    assert.deepEqual(r.archived.slice(1, 3), ['earlier summary', 'question 0'], 'then what this one replaced');
    assert.deepEqual(r.usage, { first: 5, total: 15 }, 'the usage follows the turns, numbered again from 1; none lost');
    assert.deepEqual(r.through, [r.archived.length, r.archived.length]);
    assert.equal(r.remote, r.items.length, 'the remote holds the compacted history after the next round');
  });

  test('the Responses API strategy keeps a user message’s image and file whole: the next request sends each with its source', async () => {
    model.script({}, { text: 'seen' });
    const image = 'data:image/png;base64,iVBORw0KGgo=';
    await inPage(
      async ({ url, id, history, image }) => {
        const inner = new lib.IndexedDbSession(id);
        const asked = [
          { role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image }, { type: 'input_file', file: { id: 'file-1' }, filename: 'a.pdf' }] },
          { role: 'assistant', content: 'a cat' },
        ];
        await inner.addItems([...asked, ...history]);
        const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
        const session = new lib.CompactionSession(inner, { runner, model: 'gpt-x', strategy: 'responses' });
        await session.runCompaction({ force: true });
        await runner.run(new lib.Agent({ name: 'a', model: 'gpt-x' }), 'and this?', { session });
      },
      { id: fresh('media'), history: HISTORY, image },
    );
    const sent = model.requests.at(-1).body.input[0];
    assert.equal(sent.role, 'user');
    assert.deepEqual(sent.content.slice(1), [
      { type: 'input_image', detail: 'auto', image_url: image },
      { type: 'input_file', file_id: 'file-1', filename: 'a.pdf' },
    ]);
  });

  test('closing the page in the middle of a compaction leaves the old history', async () => {
    const other = await context.newPage();
    await other.goto(`${env.url}/tests/pages/harness.html`);
    await other.waitForFunction(() => window.ready === true);
    const id = fresh('closed');
    model.script({ hang: true });
    await other.evaluate(
      async ({ url, id, history }) => {
        const inner = new lib.IndexedDbSession(id);
        await inner.addItems(history);
        const session = new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url }), model: 'm' });
        session.runCompaction({ force: true });
        await new Promise((ok) => setTimeout(ok, 200));
      },
      { url: model.url, id, history: HISTORY },
    );
    await other.close();
    const r = await inPage(
      async ({ id }) => {
        const s = new lib.IndexedDbSession(id);
        return { history: await s.getItems(), archived: await s.getArchivedItems() };
      },
      { id },
    );
    assert.deepEqual(r.history, HISTORY);
    assert.deepEqual(r.archived, []);
  });

  test('options are checked, with coded errors', async () => {
    const r = await inPage(async ({ url }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const inner = new lib.MemorySession();
      const tryNew = (make) => {
        try {
          make();
          return { ok: true };
        } catch (e) {
          return { name: e.name, code: e.code, message: e.message };
        }
      };
      return {
        noRunner: tryNew(() => new lib.CompactionSession(inner, { model: 'm' })),
        fakeRunner: tryNew(() => new lib.CompactionSession(inner, { runner: { baseUrl: url }, model: 'm' })),
        noModel: tryNew(() => new lib.CompactionSession(inner, { runner })),
        strategy: tryNew(() => new lib.CompactionSession(inner, { runner, model: 'm', strategy: 'magic' })),
        // The compaction item is read by the Responses API only: a runner on Chat Completions
        // would send the model the history without it, and without what it stands for.
        responsesOnChat: tryNew(() => new lib.CompactionSession(inner, { runner, model: 'm', strategy: 'responses' })),
        responsesOnResponses: tryNew(() => new lib.CompactionSession(inner, { runner: new lib.Runner({ baseUrl: url, api: 'responses' }), model: 'm', strategy: 'responses' })),
        keepTurns: tryNew(() => new lib.CompactionSession(inner, { runner, model: 'm', keepTurns: -1 })),
        // A misspelt option is refused, not ignored (the history would be compacted otherwise
        // than asked); one given as undefined is none.
        misspelt: tryNew(() => new lib.CompactionSession(inner, { runner, model: 'm', keepTurn: 1 })),
        undefinedOption: tryNew(() => new lib.CompactionSession(inner, { runner, model: 'm', shouldCompact: undefined, strategy: undefined })),
        notASession: tryNew(() => new lib.CompactionSession({}, { runner, model: 'm' })),
        // Its calls pass through, and a compaction clears it where it cannot replace its
        // history: a session without them is refused at once, not at the first call.
        halfASession: tryNew(() => new lib.CompactionSession({ getItems: async () => [], addItems: async () => {} }, { runner, model: 'm' })),
        agentModel: tryNew(() => new lib.CompactionSession(inner, { runner, agent: new lib.Agent({ name: 'x', model: 'm' }) })),
        // A conversation the server keeps can be appended to, not rewritten: its clear deletes
        // the conversation every device names (and the SDK's compaction session refuses it).
        conversation: tryNew(() => new lib.CompactionSession(new lib.OpenAIConversationsSession({ baseUrl: url, conversationId: 'conv_1' }), { runner: new lib.Runner({ baseUrl: url, api: 'responses' }), model: 'm', strategy: 'responses' })),
        conversationSummary: tryNew(() => new lib.CompactionSession(new lib.OpenAIConversationsSession({ baseUrl: url }), { runner, model: 'm' })),
      };
    }, {});
    for (const key of ['conversation', 'conversationSummary']) {
      assert.equal(r[key].name, 'RunnerError', key);
      assert.equal(r[key].code, 'INVALID_SESSION', `${key}: ${r[key].message}`);
      assert.match(r[key].message, /server keeps.*SyncedSession/);
    }
    for (const key of ['noRunner', 'fakeRunner', 'noModel', 'strategy', 'responsesOnChat', 'keepTurns', 'misspelt']) {
      assert.equal(r[key].name, 'RunnerError', key);
      assert.equal(r[key].code, 'INVALID_COMPACTION', `${key}: ${r[key].message}`);
    }
    assert.equal(r.notASession.code, 'INVALID_SESSION');
    assert.equal(r.halfASession.code, 'INVALID_SESSION');
    assert.match(r.halfASession.message, /getSessionId\(\)/);
    assert.deepEqual(r.agentModel, { ok: true });
    assert.match(r.responsesOnChat.message, /needs a runner on the Responses API/);
    assert.deepEqual(r.responsesOnResponses, { ok: true });
    assert.match(r.misspelt.message, /options\.keepTurn is not an option of CompactionSession/);
    assert.deepEqual(r.undefinedOption, { ok: true });
  });
});

test("a run over a CompactionSession keeps the wrapped session's titles, state and turn window", async () => {
  model.script({ text: 'A1' }, { text: 'Weather Chat' }, { text: 'A2' }, { text: 'Model Title' });
  const r = await inPage(
    async ({ url, id }) => {
      // The wrapped session reads 3 items by default: fewer than the turns the run asks for.
      const inner = new lib.IndexedDbSession(id, { settings: { limit: 3 } });
      await inner.addItems([
        { role: 'user', content: 'q0' },
        { role: 'assistant', content: 'a0' },
        { role: 'user', content: 'weather?' },
        { type: 'function_call', callId: 'c1', name: 'w', arguments: '{}' },
        { type: 'function_call_result', callId: 'c1', name: 'w', output: 'sunny' },
        { role: 'assistant', content: 'It is sunny' },
      ]);
      await inner.update({ state: { city: 'Lisbon' } });
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true, addStateToContext: true });
      const session = new lib.CompactionSession(inner, { runner, agent, shouldCompact: () => false });
      const result = await runner.run(agent, 'q2', { session, sessionSettings: { turns: 5 } });
      const background = await result.background;
      // A new chat: its first turn gets the model's title.
      const fresh = new lib.IndexedDbSession(`${id}-new`);
      const first = new lib.CompactionSession(fresh, { runner, agent, shouldCompact: () => false });
      const titled = await (await runner.run(agent, 'hello there', { session: first })).background;
      return {
        errors: [...background.errors, ...titled.errors],
        // Its third turn, its title still the default: titled from the turns so far.
        titleOfThird: (await inner.getInfo()).title,
        title: (await fresh.getInfo()).title,
        passed: typeof session.getRecentTurns,
      };
    },
    { id: fresh('wrapped-metadata') },
  );
  const sent = model.requests[0].body.messages;
  assert.deepEqual(r.errors, []);
  assert.equal(r.passed, 'function');
  assert.equal(r.titleOfThird, 'Weather Chat');
  assert.equal(r.title, 'Model Title', "the new chat's title was written to the wrapped session");
  assert.ok(JSON.stringify(sent[0]).includes('Lisbon'), 'the stored state is in the prompt');
  const texts = sent.filter((m) => m.role === 'user').map((m) => m.content);
  assert.deepEqual(texts, ['q0', 'weather?', 'q2'], 'whole turns, the first one included');
});

test('a run a tool starts on the same session (lock: false) while a compaction waits for the run of that tool is not held up by it', async () => {
  // The compaction waits for the outer run, which waits for its tool, which waits for the inner
  // run: that one must not wait for the compaction. (The outer run's save is then refused: the
  // inner run wrote its turn into the chat in the middle of the outer one's.)
  model.script({ calls: [{ name: 'ask_colleague', arguments: {} }] }, { text: 'the colleague says yes' }, { text: 'Yes.' });
  const r = await inPage(
    async ({ url, id }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const inner = new lib.IndexedDbSession(id);
      const session = new lib.CompactionSession(inner, { runner, model: 'm', keepTurns: 1, shouldCompact: () => true });
      await inner.addItems([
        { role: 'user', content: 'an old question' },
        { role: 'assistant', content: 'an old answer' },
      ]);
      const colleague = new lib.Agent({ name: 'Colleague', model: 'm' });
      let compaction;
      const ask = {
        name: 'ask_colleague',
        parameters: { type: 'object', properties: {} },
        execute: async () => {
          compaction = session.runCompaction({ force: true });
          await new Promise((ok) => setTimeout(ok, 100));
          innerAnswer = (await runner.run(colleague, 'asked by a tool', { session, lock: false })).finalOutput;
          return innerAnswer;
        },
      };
      let innerAnswer = null;
      const agent = new lib.Agent({ name: 'A', model: 'm', tools: [ask] });
      const outer = runner.run(agent, 'ask your colleague', { session }).then((done) => done.finalOutput, (e) => e.code);
      const stuck = new Promise((ok) => setTimeout(() => ok('still waiting after 10 s'), 10000));
      const outcome = await Promise.race([outer, stuck]);
      return { innerAnswer, outcome, compaction: await Promise.race([compaction.then(() => 'settled', () => 'settled'), stuck]) };
    },
    { id: fresh('nested') },
  );
  assert.deepEqual(r, { innerAnswer: 'the colleague says yes', outcome: 'SUFFIX_MISMATCH', compaction: 'settled' });
});

test('summaries every few turns keep their pace over a history compacted every turn: the turns a compaction replaced still count', async () => {
  // (The history's turn count starts again at each compaction: counted alone, a summary every
  // three turns was never due again.)
  // Also where a server's compaction item from before heads the history, kept before the summary.
  for (const serverItem of [null, { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAA' }]) {
    const r = await inPage(
      async ({ url, id, serverItem }) => {
        // (A server's compaction item is for the Responses API.)
        const runner = new lib.Runner({ baseUrl: url, api: serverItem ? 'responses' : 'chat_completions' });
        const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 3 } });
        const inner = new lib.IndexedDbSession(id);
        if (serverItem) await inner.addItems([serverItem]);
        const session = new lib.CompactionSession(inner, { runner, model: 'm', keepTurns: 1, shouldCompact: () => true });
        const made = [];
        for (let turn = 1; turn <= 6; turn++) {
          const background = await (await runner.run(agent, `question ${turn}`, { session })).background;
          made.push([background.summary !== null, background.compaction !== null, background.errors.map((e) => e.message)]);
        }
        const items = await inner.getItems();
        return { made, turnCount: (await session.getInfo()).turnCount, marks: items.map((i) => i['agent-sessions.summary'] ?? i.type) };
      },
      { id: fresh('summary-pace'), serverItem },
    );
    assert.deepEqual(
      r.made.map(([summary]) => summary),
      [false, false, true, false, false, true],
    );
    assert.deepEqual(r.made.map(([, compacted]) => compacted), [false, true, true, true, true, true]);
    assert.deepEqual(r.made.flatMap(([, , errors]) => errors), []);
    assert.equal(r.turnCount, 1, 'the history holds the newest turn, after the summary of the others');
    assert.deepEqual(r.marks, [...(serverItem ? ['compaction'] : []), 5, 'message', 'message'], 'the summary stands for the five turns before');
  }
});

test('a summary compacted on the server (strategy responses) hands its turns to the compaction item: summaries every few turns keep their pace, and no request carries the mark', async () => {
  const before = model.requests.length;
  const r = await inPage(
    async ({ url, id }) => {
      const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
      const inner = new lib.IndexedDbSession(id);
      // A summary of five turns, and the sixth turn after it.
      await inner.addItems([
        { type: 'message', role: 'system', content: 'Summary of the earlier conversation:\nthe user is Ann', 'agent-sessions.summary': 5 },
        { role: 'user', content: 'question 6' },
        { role: 'assistant', content: 'answer 6' },
      ]);
      let compact = true;
      const session = new lib.CompactionSession(inner, { runner, model: 'gpt-x', strategy: 'responses', shouldCompact: () => compact });
      await session.runCompaction();
      const compacted = await inner.getItems();
      compact = false;
      // The seventh turn: a summary every seven turns is due.
      const agent = new lib.Agent({ name: 'A', model: 'gpt-x', summaries: { everyTurns: 7 } });
      const background = await (await runner.run(agent, 'question 7', { session })).background;
      return { compacted, summary: background.summary !== null, errors: background.errors.map((e) => e.message) };
    },
    { id: fresh('responses-over-summary') },
  );
  assert.deepEqual(r.compacted.map((i) => i.content ?? i.type), ['question 6', 'compaction']);
  assert.equal(r.compacted[1]['agent-sessions.summary'], 5, 'the compaction item stands for the five turns the summary did');
  assert.deepEqual(r.errors, []);
  assert.equal(r.summary, true, 'the seventh turn is counted as the seventh');
  const asked = model.requests
    .slice(before)
    .filter((q) => /\/responses$/.test(q.path))
    .map((q) => q.body.input.find((i) => i.type === 'compaction'))
    .filter(Boolean);
  assert.equal(asked.length, 1, 'the turn was asked of the Responses API, with the compaction item');
  for (const item of asked) assert.deepEqual(Object.keys(item).sort(), ['encrypted_content', 'id', 'type'], 'the mark is not sent');
});

test('a title the user cleared is not made again once a compaction brought the turn count back to the first turns', async () => {
  const r = await inPage(
    async ({ url, id }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true });
      // (Every turn replaced: the next is the history's first again.)
      const session = new lib.CompactionSession(new lib.IndexedDbSession(id), { runner, model: 'm', keepTurns: 0, shouldCompact: () => true });
      const titled = [];
      for (let turn = 1; turn <= 3; turn++) {
        const background = await (await runner.run(agent, `question ${turn}`, { session })).background;
        titled.push(background.title !== null);
        if (turn === 1) await session.update({ title: null });
      }
      return { titled, title: (await session.getInfo()).title };
    },
    { id: fresh('title-after-compaction') },
  );
  assert.deepEqual(r.titled, [true, false, false]);
  assert.equal(r.title, null, 'the title the user cleared stays cleared');
});

test('a CompactionSession stores what was added at the call: a caller changing its items afterwards changes nothing stored', async () => {
  const r = await inPage(
    async ({ url, id }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const inner = new lib.IndexedDbSession(id);
      const session = new lib.CompactionSession(inner, { runner, model: 'm', shouldCompact: () => false });
      const items = [{ role: 'user', content: 'first' }];
      const added = session.addItems(items);
      // Changed after the call, before the call before it let this one through.
      items[0].content = 'changed';
      items.push({ role: 'user', content: 'pushed' });
      await added;
      const afterAdd = await inner.getItems();
      const replacement = [{ role: 'user', content: 'replaced' }];
      const replaced = session.replaceHistory(replacement);
      replacement[0].content = 'changed';
      await replaced;
      return { afterAdd, afterReplace: await inner.getItems() };
    },
    { id: fresh('copied-at-call') },
  );
  assert.deepEqual(r.afterAdd, [{ role: 'user', content: 'first' }]);
  assert.deepEqual(r.afterReplace, [{ role: 'user', content: 'replaced' }]);
});
