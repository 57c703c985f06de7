// The runner and the session's metadata, Agno style, against the local test server, in both wire
// formats, whole and streamed: the newest turns as the history sent; a title after the first turn
// and a summary after a turn, both after the answer (the result, or a stream's done event, comes
// first); the summary and the state in the instructions; the model's own update_session_state.
import { test, describe, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness, runInPage } from './harness.mjs';
import { startModelServer } from '../server/model-server.mjs';

let env;
let model;
let page;
before(async () => {
  env = await start();
  model = await startModelServer();
  ({ page } = await openHarness(env));
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

/** The instructions a request carried, in either API. */
const instructionsOf = (req) => req.body.instructions ?? req.body.messages?.find((m) => m.role === 'system')?.content ?? '';
/** The text of the user messages a request carried. */
const userTexts = (req) =>
  (req.body.messages ?? req.body.input)
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('')));

for (const api of ['chat_completions', 'responses']) {
  for (const streamed of [false, true]) {
    describe(`${api}, ${streamed ? 'streamed' : 'whole'}`, () => {
      test('a title after the first turn and a summary after each, both after the answer', async () => {
        model.script(
          { text: 'Lima is the capital of Peru.' },
          { text: '"Capital of Peru."' },
          { text: '{"summary": "The user asked for the capital of Peru: Lima.", "topics": ["Peru", "capitals"]}' },
        );
        const r = await inPage(
          async ({ url, api, id, streamed }) => {
            const session = new lib.IndexedDbSession(id);
            const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 1 }, autoTitle: true });
            // The model calls the runner makes, counted as they start.
            let calls = 0;
            const counted = (...args) => (calls++, fetch(...args));
            const runner = new lib.Runner({ baseUrl: url, api, fetch: counted });
            const requestsNow = () => calls;
            let atAnswer;
            let result;
            if (streamed) {
              const run = runner.runStreamed(agent, 'What is the capital of Peru?', { session });
              for await (const event of run) if (event.type === 'done') atAnswer = await requestsNow();
              result = await run.result;
            } else {
              result = await runner.run(agent, 'What is the capital of Peru?', { session });
              atAnswer = await requestsNow();
            }
            const report = await result.background;
            return { atAnswer, finalOutput: result.finalOutput, report, runUsage: result.usage, stored: await session.getSessionUsage(), info: await session.getInfo(), history: await session.getItems() };
          },
          { api, id: fresh('meta'), streamed },
        );
        assert.equal(r.atAnswer, 1, 'the answer came before the title and summary requests');
        assert.equal(r.finalOutput, 'Lima is the capital of Peru.');
        assert.deepEqual(r.report.errors, []);
        assert.equal(r.report.title, 'Capital of Peru');
        assert.equal(r.report.summary, 'The user asked for the capital of Peru: Lima.');
        assert.equal(r.info.title, 'Capital of Peru');
        assert.equal(r.info.summary, 'The user asked for the capital of Peru: Lima.');
        assert.deepEqual(r.info.topics, ['Peru', 'capitals']);
        assert.equal(r.history.length, 2, 'the turn is saved, and nothing else');
        // What the title and summary cost is reported, and kept apart from the run's.
        const output = '"Capital of Peru."'.length + '{"summary": "The user asked for the capital of Peru: Lima.", "topics": ["Peru", "capitals"]}'.length;
        assert.equal(r.report.usage.requests, 2);
        assert.equal(r.report.usage.outputTokens, output);
        assert.ok(r.report.usage.inputTokens > 0);
        assert.equal(r.report.usage.totalTokens, r.report.usage.inputTokens + output);
        assert.equal(r.runUsage.requests, 1);
        assert.equal(r.stored.requests, 1, "the session's stored usage is the run's");
        const [, titleRequest, summaryRequest] = model.requests;
        assert.match(instructionsOf(titleRequest), /Write a title for this conversation/);
        assert.match(instructionsOf(summaryRequest), /running summary/);
        assert.match(userTexts(summaryRequest)[0], /What is the capital of Peru\?[\s\S]*Lima is the capital of Peru/);
        assert.equal(titleRequest.body.stream, false);
      });
    });
  }

  describe(`${api}: context and state`, () => {
    test('the summary and the state go into the instructions; the model updates the state; tools see it', async () => {
      model.script(
        { calls: [{ name: 'update_session_state', arguments: { updates: { city: 'Oslo', units: 'C' } } }] },
        { calls: [{ name: 'forecast', arguments: {} }] },
        { text: 'Noted: Oslo.' },
        { text: 'Cold in Oslo.' },
      );
      const r = await inPage(
        async ({ url, api, id }) => {
          const session = new lib.IndexedDbSession(id);
          await session.update({ summary: 'Ann is planning a trip.', state: { city: 'Paris', budget: 100 } });
          const seen = [];
          const agent = new lib.Agent({
            name: 'A',
            model: 'm',
            instructions: 'Be brief.',
            addSummaryToContext: true,
            addStateToContext: true,
            agenticState: true,
            tools: [{ name: 'forecast', execute: (_args, _context, details) => (seen.push(details), 'cold') }],
          });
          const runner = new lib.Runner({ baseUrl: url, api });
          await runner.run(agent, 'I moved to Oslo.', { session });
          const state = (await session.getInfo()).state;
          await runner.run(agent, 'And the weather?', { session });
          return { state, seen };
        },
        { api, id: fresh('state') },
      );
      assert.deepEqual(r.state, { city: 'Oslo', budget: 100, units: 'C' }, 'a shallow merge');
      const first = instructionsOf(model.requests[0]);
      assert.match(first, /^Be brief\.\n\n<session_summary>\nA summary of this conversation so far:\nAnn is planning a trip\.\n<\/session_summary>/);
      assert.match(first, /<session_state>\nThe state of this session \(JSON\):\n\{"budget":100,"city":"Paris"\}\n<\/session_state>/);
      const tools = model.requests[0].body.tools.map((t) => t.name ?? t.function.name);
      assert.deepEqual(tools, ['forecast', 'update_session_state']);
      // The next model call of the same run already sees the new state.
      assert.match(instructionsOf(model.requests[1]), /"city":"Oslo"/);
      assert.match(instructionsOf(model.requests.at(-1)), /"city":"Oslo"/);
      assert.deepEqual(r.seen.map((d) => d.sessionState), [{ city: 'Oslo', budget: 100, units: 'C' }]);
      assert.equal(typeof r.seen[0].callId, 'string');
    });

    test('a failure after the turn is reported, and the saved turn is untouched', async () => {
      model.script({ text: 'answer' }, { error: 500, message: 'summary service down' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const session = new lib.IndexedDbSession(id);
          const agent = new lib.Agent({ name: 'A', model: 'm', summaries: true });
          const result = await new lib.Runner({ baseUrl: url, api, retries: 0 }).run(agent, 'q', { session });
          const report = await result.background;
          return { errors: report.errors.map((e) => [e.name, e.status]), summary: report.summary, history: await session.getItems(), info: await session.getInfo() };
        },
        { api, id: fresh('fail') },
      );
      assert.deepEqual(r.errors, [['ModelError', 500]]);
      assert.equal(r.summary, null);
      assert.equal(r.history.length, 2);
      assert.equal(r.info.summary, null);
      assert.equal(r.info.title, 'q', 'the default title');
    });
  });
}

describe('the history a run sends, by turns', () => {
  const turns = (n) =>
    Array.from({ length: n }, (_, i) => [
      { role: 'user', content: `q${i}` },
      { type: 'function_call', callId: `c${i}`, name: 'f', arguments: '{}' },
      { type: 'function_call_result', callId: `c${i}`, output: `r${i}` },
      { role: 'assistant', content: `a${i}` },
    ]).flat();

  test('sessionSettings.turns (winning over limit) sends the newest whole turns, from our sessions and from any session', async () => {
    const r = await inPage(
      async ({ url, id, history }) => {
        const ours = new lib.IndexedDbSession(id);
        await ours.addItems(history);
        // A session without getRecentTurns: the runner selects the turns itself.
        const plain = new lib.MemorySession();
        await plain.addItems(history);
        const minimal = { getItems: (n) => plain.getItems(n), addItems: (items) => plain.addItems(items) };
        const runner = new lib.Runner({ baseUrl: url });
        const agent = new lib.Agent({ name: 'A', model: 'm' });
        await runner.run(agent, 'next', { session: ours, sessionSettings: { turns: 2, limit: 1 } });
        await runner.run(agent, 'next', { session: minimal, sessionSettings: { turns: 1 } });
        // The session's own settings.turns, when the run says nothing.
        const configured = new lib.IndexedDbSession(id + '-set', { settings: { turns: 1 } });
        await configured.addItems(history);
        await runner.run(agent, 'next', { session: configured });
        // A session whose getRecentTurns gives more turns than asked (every one): cut to those
        // asked; one that gives as many keeps what it gave before them (a note of its own).
        const note = { role: 'system', content: 'note' };
        const own = async () => {
          const m = new lib.MemorySession();
          await m.addItems(history);
          return { getItems: (n) => m.getItems(n), addItems: (items) => m.addItems(items), all: () => m.getItems() };
        };
        const generous = await own();
        generous.getRecentTurns = async () => generous.all();
        await runner.run(agent, 'next', { session: generous, sessionSettings: { turns: 2 } });
        const exact = await own();
        exact.getRecentTurns = async (n) => [note, ...(await exact.all()).slice(-4 * n)];
        await runner.run(agent, 'next', { session: exact, sessionSettings: { turns: 1 } });
        return true;
      },
      { id: fresh('turns'), history: turns(4) },
    );
    assert.ok(r);
    assert.deepEqual(userTexts(model.requests[0]), ['q2', 'q3', 'next']);
    assert.equal(model.requests[0].body.messages.filter((m) => m.role === 'tool').length, 2, 'tool outputs stay with their calls');
    assert.deepEqual(userTexts(model.requests[1]), ['q3', 'next']);
    assert.deepEqual(userTexts(model.requests[2]), ['q3', 'next']);
    assert.deepEqual(userTexts(model.requests[3]), ['q2', 'q3', 'next'], 'cut to the turns asked');
    assert.deepEqual(userTexts(model.requests[4]), ['q3', 'next']);
    assert.deepEqual(model.requests[4].body.messages[0], { role: 'system', content: 'note' }, 'what a session gave with the turns asked stays');
  });
});

test('the title, summary and compaction requests carry the agent’s store: false, reasoning and providerData, not the settings that shape its answers', async () => {
  model.script(
    { text: 'Lima.' },
    { text: '"Capital of Peru."' },
    { text: '{"summary": "Peru: Lima.", "topics": ["Peru"]}' },
    { text: 'The user asked about Peru.' },
    { text: 'The user asked about Peru.' },
    { text: 'The user asked about Peru.' },
    { text: 'The user asked about Peru.' },
  );
  const r = await inPage(
    async ({ url, id }) => {
      const modelSettings = { store: false, temperature: 0.3, maxTokens: 50, reasoning: { effort: 'low' }, providerData: { user: 'u-1', tool_choice: 'none' } };
      const agent = new lib.Agent({ name: 'A', model: 'm', modelSettings, summaries: { everyTurns: 1 }, autoTitle: true });
      const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
      const session = new lib.IndexedDbSession(id);
      const result = await runner.run(agent, 'Capital of Peru?', { session });
      await result.background;
      // A compaction made with this agent, and one with an agent of the SDK's shape.
      await new lib.CompactionSession(session, { runner, agent, keepTurns: 0 }).runCompaction({ force: true });
      const other = new lib.IndexedDbSession(`${id}-sdk`);
      await other.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
      await new lib.CompactionSession(other, { runner, agent: { name: 'SDK agent', model: 'm', modelSettings: { store: false, toolChoice: 'auto', retry: { maxRetries: 2 }, providerData: { user: 'u-2' } } }, keepTurns: 0 }).runCompaction({ force: true });
      // Another model than the agent's: its reasoning and provider fields may not fit it.
      const third = new lib.IndexedDbSession(`${id}-other-model`);
      await third.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
      await new lib.CompactionSession(third, { runner, agent, model: 'small', keepTurns: 0 }).runCompaction({ force: true });
      // The agent's own model named as well: its settings.
      const fourth = new lib.IndexedDbSession(`${id}-same-model`);
      await fourth.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
      await new lib.CompactionSession(fourth, { runner, agent, model: 'm', keepTurns: 0 }).runCompaction({ force: true });
      return { agentSettings: agent.modelSettings === modelSettings };
    },
    { id: fresh('side-settings') },
  );
  const pick = ({ body }) => ({ model: body.model, store: body.store, temperature: body.temperature, max: body.max_output_tokens, reasoning: body.reasoning, user: body.user, toolChoice: body.tool_choice });
  const [answer, title, summary, compaction, sdkCompaction, otherModel, sameModel] = model.requests.map(pick);
  assert.deepEqual(answer, { model: 'm', store: false, temperature: 0.3, max: 50, reasoning: { effort: 'low' }, user: 'u-1', toolChoice: 'none' });
  // (providerData's fields that shape an answer, tool_choice here, stay out too.)
  for (const side of [title, summary, compaction, sameModel]) assert.deepEqual(side, { model: 'm', store: false, temperature: undefined, max: undefined, reasoning: { effort: 'low' }, user: 'u-1', toolChoice: undefined });
  assert.deepEqual(sdkCompaction, { model: 'm', store: false, temperature: undefined, max: undefined, reasoning: undefined, user: 'u-2', toolChoice: undefined });
  assert.deepEqual(otherModel, { model: 'small', store: false, temperature: undefined, max: undefined, reasoning: undefined, user: undefined, toolChoice: undefined });
  assert.equal(model.requests.length, 7);
  assert.equal(r.agentSettings, true, 'agent.modelSettings is what was given');
});

test("autoTitle never replaces a title the user chose: renamed while it was made, or before starting the chat again", async () => {
  model.script({ text: 'A1' }, { text: 'Model Title', waitMs: 500 }, { text: 'A2' }, { text: 'Second Title' });
  const r = await inPage(
    async ({ url, id }) => {
      const s = new lib.IndexedDbSession(id);
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true });
      const first = await runner.run(agent, 'hello there', { session: s });
      // The title is being made: the user renames the chat meanwhile.
      await new Promise((ok) => setTimeout(ok, 150));
      await s.update({ title: 'My own name' });
      const raced = await first.background;
      const afterRace = (await s.getInfo()).title;
      // Emptied and started again: turn 1 once more, the user's name stays.
      await s.popItem();
      await s.popItem();
      const again = await (await runner.run(agent, 'hello again', { session: s })).background;
      // update's expectedTitle on its own.
      const other = new lib.MemorySession('m');
      await other.update({ title: 'kept' });
      await other.update({ title: 'ignored', expectedTitle: 'stale', summary: 'set anyway' });
      const memory = await other.getInfo();
      return { raced: raced.title, afterRace, again: again.title, final: (await s.getInfo()).title, memory: [memory.title, memory.summary] };
    },
    { id: fresh('renamed') },
  );
  assert.equal(r.raced, null, 'the background report says no title was set');
  assert.equal(r.afterRace, 'My own name');
  assert.equal(r.again, null);
  assert.equal(r.final, 'My own name');
  assert.deepEqual(r.memory, ['kept', 'set anyway']);
});

test('a compaction’s agent whose modelSettings cannot be read is refused when the CompactionSession is made, naming them', async () => {
  const r = await inPage(async ({ url }) => {
    const runner = new lib.Runner({ baseUrl: url });
    const agent = { name: 'SDK agent', model: 'm', get modelSettings() { throw new Error('boom'); } };
    try {
      new lib.CompactionSession(new lib.MemorySession('x'), { runner, agent });
      return null;
    } catch (e) {
      return { name: e.name, code: e.code, message: e.message };
    }
  });
  assert.equal(r.name, 'RunnerError');
  assert.equal(r.code, 'INVALID_COMPACTION');
  assert.match(r.message, /options\.agent\.modelSettings.*boom/);
});

test('a title, summary or compaction request the model answers with a refusal only writes nothing: no refusal becomes the chat’s title, summary or history', async () => {
  const r = await inPage(
    async ({ id }) => {
      const json = (body) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
      const message = (m) => json({ id: 'c', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', ...m } }] });
      // The run's answer is text; every request the library makes for the session is refused.
      const asked = [];
      const fetch = async (_url, init) => {
        const side = /Write a title|[Ss]ummar/.test(init.body);
        asked.push(side ? 'side' : 'run');
        return side ? message({ content: null, refusal: 'I can’t help with that.' }) : message({ content: 'Here is your plan.' });
      };
      const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', retries: 0, fetch });
      const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true, summaries: { everyTurns: 1 } });
      const s = new lib.IndexedDbSession(id);
      const report = await (await runner.run(agent, 'Plan my week', { session: s })).background;
      const info = await s.getInfo();
      const before = (await s.getItems()).length;
      const compacted = await new lib.CompactionSession(s, { runner, agent, keepTurns: 0 })
        .runCompaction({ force: true })
        .then(() => 'compacted', (e) => `${e.name}: ${e.message}`);
      return { asked, title: info.title, summary: info.summary ?? null, reportTitle: report.title ?? null, compacted, items: [before, (await s.getItems()).length] };
    },
    { id: fresh('refused-side') },
  );
  assert.deepEqual(r.asked, ['run', 'side', 'side', 'side'], 'a title, a summary and a compaction were asked');
  assert.equal(r.title, 'Plan my week', 'the default title stays');
  assert.equal(r.summary, null);
  assert.equal(r.reportTitle, null);
  assert.match(r.compacted, /^ModelError: .*without text/);
  assert.deepEqual(r.items, [2, 2], 'the history is kept');
});

test('a chat whose first run ended without an answer (a server error) is titled after the first turn that gets one, once', async () => {
  model.script({ error: 400, message: 'bad request' }, { text: 'A2' }, { text: 'Plans For The Week' }, { text: 'A3' });
  const r = await inPage(
    async ({ url, id }) => {
      const s = new lib.IndexedDbSession(id);
      const runner = new lib.Runner({ baseUrl: url, retries: 0 });
      const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true });
      const failed = await runner.run(agent, 'Plan my week', { session: s }).then(() => 'answered', (e) => e.name);
      const before = (await s.getInfo()).title;
      const second = await (await runner.run(agent, 'Plan my week, please', { session: s })).background;
      const third = await (await runner.run(agent, 'Thanks', { session: s })).background;
      return { failed, before, second: second.title, third: third.title, final: (await s.getInfo()).title };
    },
    { id: fresh('first-failed') },
  );
  assert.equal(r.failed, 'ModelError');
  assert.equal(r.before, 'Plan my week', 'the default title, from the first message');
  assert.equal(r.second, 'Plans For The Week');
  assert.equal(r.third, null, 'titled once');
  assert.equal(r.final, 'Plans For The Week');
  const titling = model.requests.filter((q) => /Write a title/.test(JSON.stringify(q.body)));
  assert.equal(titling.length, 1);
  assert.match(JSON.stringify(titling[0].body), /Plan my week[^,].*Plan my week, please/s, 'both turns are titled');
});

test('a chat with no title yet (its first message only an image) whose first run failed is titled at the next turn too', async () => {
  model.script({ error: 400, message: 'bad request' }, { text: 'A cat.' }, { text: 'Cat Photo' });
  const r = await inPage(
    async ({ url, id }) => {
      const s = new lib.IndexedDbSession(id);
      const runner = new lib.Runner({ baseUrl: url, retries: 0 });
      const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true });
      const image = [{ role: 'user', content: [{ type: 'input_image', image: 'data:image/png;base64,iVBORw0KGgo=' }] }];
      const failed = await runner.run(agent, image, { session: s }).then(() => 'answered', (e) => e.name);
      const before = (await s.getInfo()).title;
      const second = await (await runner.run(agent, 'What is it?', { session: s })).background;
      return { failed, before, second: second.title, final: (await s.getInfo()).title };
    },
    { id: fresh('untitled-first-failed') },
  );
  assert.deepEqual(r, { failed: 'ModelError', before: null, second: 'Cat Photo', final: 'Cat Photo' });
});

test('a chat deleted (or cleared) while its title and summary are written gets neither: it does not come back as an empty chat in the list', async () => {
  const id = fresh('gone');
  const run = (then) =>
    inPage(
      async ({ url, id, then }) => {
        const runner = new lib.Runner({ baseUrl: url });
        const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true, summaries: { everyTurns: 1 } });
        const session = new lib.IndexedDbSession(id);
        const result = await runner.run(agent, 'hello there', { session });
        // Deleted (as from another tab) or cleared while the title is being made.
        await new Promise((ok) => setTimeout(ok, 150));
        if (then === 'delete') await lib.deleteSession(id);
        else await session.clearSession();
        const background = await result.background;
        const info = await new lib.IndexedDbSession(id).getInfo();
        const listed = (await lib.listSessions()).some((s) => s.sessionId === id);
        return { report: [background.title, background.summary, background.errors.length], info: [info.title, info.summary], listed };
      },
      { id: `${id}-${then}`, then },
    );
  model.script({ text: 'A1' }, { text: 'Model Title', waitMs: 400 }, { text: 'A summary. Topics: x' });
  const deleted = await run('delete');
  assert.deepEqual(deleted, { report: [null, null, 0], info: [null, null], listed: false });
  // (The summary of a deleted chat was not asked for: nothing of it was left to summarise.)
  model.reset();
  model.script({ text: 'A1' }, { text: 'Model Title', waitMs: 400 }, { text: 'A summary. Topics: x' });
  const cleared = await run('clear');
  assert.deepEqual(cleared.report, [null, null, 0]);
  assert.deepEqual(cleared.info, ['hello there', null], 'its first message’s default title stays; no model title or summary of what it held');
});

test('a chat deleted in another tab between the check and the write of its summary does not come back: the write is conditioned on the chat read', async () => {
  model.script({ text: 'A1' }, { text: 'A summary. Topics: x' });
  const id = fresh('gone-late');
  const r = await inPage(
    async ({ url, id }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 1 } });
      const inner = new lib.IndexedDbSession(id);
      // The session as the runner sees it: its update() (the summary's) is preceded by the
      // chat's deletion, as from another tab, after the work checked the chat was there.
      const session = new Proxy(inner, {
        get(target, key) {
          if (key === 'update') return async (changes) => (await lib.deleteSession(id), target.update(changes));
          const value = Reflect.get(target, key, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const result = await runner.run(agent, 'hello there', { session });
      const background = await result.background;
      const info = await new lib.IndexedDbSession(id).getInfo();
      // The condition, directly (and the fields an update's event names: not the condition): on a chat of that time it writes; on one deleted since, or begun
      // again, nothing; a value that is no time is refused.
      const s = new lib.IndexedDbSession(`${id}-direct`);
      await s.addItems([{ role: 'user', content: 'hi' }]);
      const { createdAt } = await s.getInfo();
      const events = [];
      const stop = s.subscribe((e) => e.type === 'update' && events.push(e.fields));
      await s.update({ summary: 'kept', expectedCreatedAt: createdAt });
      const kept = (await s.getInfo()).summary;
      await s.update({ summary: 'other', expectedCreatedAt: createdAt + 1 });
      const notOther = (await s.getInfo()).summary;
      await lib.deleteSession(`${id}-direct`);
      await s.update({ title: 'back?', expectedCreatedAt: createdAt });
      const afterDelete = (await lib.listSessions()).some((x) => x.sessionId === `${id}-direct`);
      const bad = await s.update({ summary: 'x', expectedCreatedAt: 'now' }).then(() => null, (e) => e.code);
      stop();
      const m = new lib.MemorySession();
      await m.addItems([{ role: 'user', content: 'hi' }]);
      const mem = await m.getInfo();
      await m.update({ summary: 'mem', expectedCreatedAt: mem.createdAt });
      await m.update({ summary: 'not', expectedCreatedAt: mem.createdAt - 1 });
      const fresh = new lib.MemorySession();
      await fresh.update({ title: 'never', expectedCreatedAt: mem.createdAt });
      // The time read before an edit made a branch (on a MemorySession, a branch reports its
      // own), written on the branch: the session's time, in both stores.
      const onBranch = async (s) => {
        await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2' }]);
        const at = (await s.getInfo()).createdAt;
        await new Promise((ok) => setTimeout(ok, 5));
        await s.createBranchFromTurn(2);
        const onFirst = (await s.getInfo()).createdAt;
        await s.update({ summary: 'on the branch', expectedCreatedAt: at });
        // Read on that branch, written on one made from it.
        await s.addItems([{ role: 'user', content: 'q2 again' }]);
        await new Promise((ok) => setTimeout(ok, 5));
        await s.createBranchFromTurn(2);
        const onSecond = (await s.getInfo()).createdAt;
        await s.update({ title: 'from the branch before', expectedCreatedAt: onFirst });
        const info = await s.getInfo();
        // (On a MemorySession, each branch's time its own: what makes the check a check; the one
        // its listing gives.)
        const memory = s instanceof lib.MemorySession;
        const listed = (await s.listBranches()).find((b) => b.current).createdAt;
        return [info.summary, info.title, memory ? new Set([at, onFirst, onSecond]).size : 3, memory ? listed === onSecond : true];
      };
      return {
        branched: [await onBranch(new lib.IndexedDbSession(`${id}-branched`)), await onBranch(new lib.MemorySession())],
        errors: background.errors.length,
        summary: background.summary,
        events,
        listed: (await lib.listSessions()).some((x) => x.sessionId === id),
        info: [info.title, info.summary, info.createdAt],
        direct: [kept, notOther, afterDelete, bad],
        memory: [(await m.getInfo()).summary, (await fresh.getInfo()).title],
      };
    },
    { id },
  );
  assert.equal(r.errors, 0);
  assert.equal(r.summary, null, 'no summary reported for a chat that has none');
  assert.deepEqual(r.events, [['summary']], 'one event, of the update that wrote, naming what it set');
  assert.equal(r.listed, false, 'the deleted chat is not made again by its summary');
  assert.deepEqual(r.info, [null, null, null]);
  assert.deepEqual(r.direct, ['kept', 'kept', false, 'INVALID_OPTIONS']);
  assert.deepEqual(r.memory, ['mem', null]);
  assert.deepEqual(r.branched, [['on the branch', 'from the branch before', 3, true], ['on the branch', 'from the branch before', 3, true]]);
});

test('update with expectedCreatedAt: null (what getInfo() gives a chat not stored yet) names a new chat, and sets nothing on one stored meanwhile, in either store', async () => {
  const r = await inPage(
    async ({ id }) => {
      const run = async (make) => {
        const fresh = make(`${id}-fresh`);
        const { createdAt } = await fresh.getInfo();
        await fresh.update({ title: 'Named before its first message', expectedCreatedAt: createdAt });
        const named = await fresh.getInfo();
        // Read before the chat was stored, and stored before the update.
        const other = make(`${id}-raced`);
        const before = (await other.getInfo()).createdAt;
        await other.addItems([{ role: 'user', content: 'hello there' }]);
        await other.update({ title: 'Stale name', expectedCreatedAt: before });
        const raced = await other.getInfo();
        return [createdAt, named.title, named.createdAt !== null, before, raced.title];
      };
      return [await run((sid) => new lib.IndexedDbSession(sid)), await run((sid) => new lib.MemorySession(sid))];
    },
    { id: fresh('created-null') },
  );
  for (const store of r) assert.deepEqual(store, [null, 'Named before its first message', true, null, 'hello there']);
});

test('summaries every 2 turns on an app’s own session that reads no turns (getInfo and update, no getRecentTurns) cover both turns, taken from its items', async () => {
  model.script({ text: 'A1' }, { text: 'A2' }, { text: 'Summary of both turns. Topics: t' });
  const r = await inPage(
    async ({ url }) => {
      const inner = new lib.MemorySession();
      // An app's own session: the protocol and the metadata, nothing that reads turns.
      const session = {
        getSessionId: () => inner.getSessionId(),
        getItems: (n) => inner.getItems(n),
        addItems: (items) => inner.addItems(items),
        popItem: () => inner.popItem(),
        clearSession: () => inner.clearSession(),
        getInfo: () => inner.getInfo(),
        update: (changes) => inner.update(changes),
      };
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 2 } });
      await (await runner.run(agent, 'first question', { session })).background;
      const background = await (await runner.run(agent, 'second question', { session })).background;
      return { summary: background.summary, errors: background.errors.map((e) => e.message) };
    },
    {},
  );
  assert.deepEqual(r.errors, []);
  assert.match(r.summary, /^Summary of both turns\./);
  const asked = JSON.stringify(model.requests[2].body.messages);
  assert.ok(asked.includes('first question') && asked.includes('second question'), 'the summary was asked of both turns');
});

test('a chat moved to another branch while its summary is written (an earlier message edited) does not get it, in either store', async () => {
  const steps = [{ text: 'A1' }, { text: 'A2' }, { text: 'Summary of both turns on main. Topics: m', waitMs: 400 }];
  model.script(...steps, ...steps);
  const r = await inPage(
    async ({ url, id }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 2 } });
      const out = {};
      for (const [kind, session] of [['indexeddb', new lib.IndexedDbSession(id)], ['memory', new lib.MemorySession()]]) {
        await (await runner.run(agent, 'q1', { session })).background;
        const result = await runner.run(agent, 'q2', { session });
        await new Promise((ok) => setTimeout(ok, 150));
        // The user edits the second question: the branch shows the first turn only.
        await session.createBranchFromTurn(2, 'edit');
        const background = await result.background;
        await session.switchBranch('main');
        out[kind] = [background.summary, (await session.getInfo()).summary];
      }
      return out;
    },
    { id: fresh('moved-summary') },
  );
  assert.deepEqual(r, { indexeddb: [null, null], memory: [null, null] });
});

test('a chat cleared and begun again while its summary is written does not get the summary of what it held before', async () => {
  model.script({ text: 'A1' }, { text: 'Summary of the old chat. Topics: old', waitMs: 400 }, { text: 'A2' });
  const r = await inPage(
    async ({ url, id }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 1 } });
      const session = new lib.IndexedDbSession(id);
      const result = await runner.run(agent, 'my secret plan', { session });
      // Cleared (Clear in a chat page) and a new message sent while the summary is made.
      await new Promise((ok) => setTimeout(ok, 150));
      await session.clearSession();
      await session.update({ summary: null, topics: null });
      await session.addItems([{ role: 'user', content: 'a new start' }]);
      const background = await result.background;
      const info = await session.getInfo();
      return { reported: background.summary, summary: info.summary, topics: info.topics, items: info.itemCount };
    },
    { id: fresh('restarted') },
  );
  assert.equal(r.items, 1);
  assert.equal(r.summary, null, 'not the old chat’s summary');
  assert.equal(r.topics, null);
  assert.equal(r.reported, null);
});

test("update_session_state merges into the state as stored then: a tool's write stays, a Date stays a Date", async () => {
  model.script(
    { calls: [{ name: 'add_to_cart', arguments: {} }] },
    { calls: [{ name: 'update_session_state', arguments: { updates: { mood: 'happy' } } }] },
    { text: 'done' },
  );
  const r = await inPage(
    async ({ url, id }) => {
      const session = new lib.IndexedDbSession(id);
      await session.update({ state: { z: 1, since: new Date(0), cart: [] } });
      const agent = new lib.Agent({
        name: 'A',
        model: 'm',
        agenticState: true,
        tools: [
          {
            name: 'add_to_cart',
            // The tool writes the state itself during the run.
            execute: async () => {
              await session.update({ state: { z: 1, since: new Date(0), cart: ['apple'] } });
              return 'added';
            },
          },
        ],
      });
      await new lib.Runner({ baseUrl: url }).run(agent, 'buy an apple', { session });
      const state = (await session.getInfo()).state;
      return { keys: Object.keys(state), cart: state.cart, mood: state.mood, date: state.since instanceof Date };
    },
    { id: fresh('state-merge') },
  );
  assert.deepEqual(r.cart, ['apple'], "the tool's write is kept");
  assert.equal(r.mood, 'happy');
  assert.equal(r.date, true);
  assert.deepEqual(r.keys, ['z', 'since', 'cart', 'mood'], 'the stored keys keep their order');
});

test("a turn's summary waits for the previous turn's: no turn drops out of the summary", async () => {
  model.script(
    { text: 'A1' },
    { text: '{"summary":"Ann likes tea.","topics":[]}', waitMs: 800 },
    { text: 'A2' },
    { text: '{"summary":"Ann likes tea and lives in Oslo.","topics":[]}' },
  );
  const r = await inPage(
    async ({ url, id }) => {
      const session = new lib.IndexedDbSession(id);
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 1 } });
      const first = await runner.run(agent, 'I like tea.', { session });
      // The user answers while the first turn's summary is still being written.
      await new Promise((ok) => setTimeout(ok, 200));
      const second = await runner.run(agent, 'I live in Oslo.', { session });
      const reports = [await first.background, await second.background];
      return { errors: reports.flatMap((b) => b.errors), summary: (await session.getInfo()).summary };
    },
    { id: fresh('summary-race') },
  );
  assert.deepEqual(r.errors, []);
  const secondSummary = JSON.stringify(model.requests[3].body);
  assert.match(secondSummary, /The summary so far:\\nAnn likes tea\./, "the second summary starts from the first's");
  assert.equal(r.summary, 'Ann likes tea and lives in Oslo.');
});

test("the work after a turn that runs after the next turn was saved still titles and summarises its own turn", async () => {
  model.script(
    { text: 'A1' },
    { text: 'A2' },
    { text: '"Tea"' },
    { text: '{"summary":"Ann likes tea.","topics":[]}' },
    { text: '{"summary":"Ann likes tea and lives in Oslo.","topics":[]}' },
  );
  const r = await inPage(
    async ({ url, id }) => {
      const session = new lib.IndexedDbSession(id);
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 1 }, autoTitle: true });
      // The work after the first turn is held back (as a busy page or another tab's work would)
      // until the second turn is saved.
      let release;
      const held = new Promise((ok) => (release = ok));
      await new Promise((granted) => navigator.locks.request(`agent-sessions-after-turn:${JSON.stringify(['agent-sessions', id])}`, () => (granted(), held)));
      const first = await runner.run(agent, 'I like tea.', { session });
      const second = await runner.run(agent, 'I live in Oslo.', { session });
      release();
      const reports = [await first.background, await second.background];
      const info = await session.getInfo();
      return { errors: reports.flatMap((b) => b.errors), titles: reports.map((b) => b.title), title: info.title, summary: info.summary };
    },
    { id: fresh('late-after-turn') },
  );
  assert.deepEqual(r.errors, []);
  assert.equal(model.requests.length, 5, 'two answers, a title, two summaries');
  assert.match(JSON.stringify(model.requests[2].body), /I like tea/, 'the title is made from the first turn');
  const firstSummary = JSON.stringify(model.requests[3].body);
  assert.match(firstSummary, /I like tea/, "the first turn's summary reads the first turn");
  assert.doesNotMatch(firstSummary, /Oslo/, 'and not the turn after it');
  assert.match(JSON.stringify(model.requests[4].body), /The summary so far:\\nAnn likes tea\./);
  assert.deepEqual(r.titles, ['Tea', null]);
  assert.equal(r.title, 'Tea');
  assert.equal(r.summary, 'Ann likes tea and lives in Oslo.');
});

test("a turn saved while the previous turn's title is made is not taken into that turn's summary", async () => {
  // The title's answer is held until the second turn is saved.
  let release;
  const held = new Promise((ok) => (release = ok));
  model.script(
    { text: 'A1' },
    { text: '"Tea"', waitFor: held },
    { text: 'A2' },
    { text: '{"summary":"Ann likes tea.","topics":[]}' },
    { text: '{"summary":"Ann likes tea and lives in Oslo.","topics":[]}' },
  );
  const id = fresh('title-race');
  await inPage(
    async ({ url, id }) => {
      const session = new lib.IndexedDbSession(id);
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'A', model: 'm', summaries: { everyTurns: 1 }, autoTitle: true });
      window.titleRace = [await runner.run(agent, 'I like tea.', { session })];
      // The user answers while the first turn's title is being made.
      window.titleRace.push(await runner.run(agent, 'I live in Oslo.', { session }));
    },
    { id },
  );
  release();
  const r = await inPage(
    async ({ id }) => {
      const reports = [await window.titleRace[0].background, await window.titleRace[1].background];
      return { errors: reports.flatMap((b) => b.errors), summary: (await new lib.IndexedDbSession(id).getInfo()).summary };
    },
    { id },
  );
  assert.deepEqual(r.errors, []);
  const firstSummary = JSON.stringify(model.requests[3].body);
  assert.match(firstSummary, /I like tea/, "the first turn's summary reads the first turn");
  assert.doesNotMatch(firstSummary, /Oslo/, 'and not the turn saved meanwhile');
  assert.equal(r.summary, 'Ann likes tea and lives in Oslo.');
});

test('a title request the server never answers fails after its timeout, and the next turn’s work is not held up by it', async () => {
  model.script(
    { text: 'A1' },
    { hang: true },
    { text: 'A2' },
    { text: 'Tea In Oslo' },
    { text: '{"summary":"Ann likes tea and lives in Oslo.","topics":[]}' },
  );
  const r = await inPage(
    async ({ url, id }) => {
      // The two-minute timeout, made to fire at once (see tests/pages/timeouts.js).
      const { asked, value } = await withQuickTimeouts(async () => {
        const session = new lib.IndexedDbSession(id);
        const runner = new lib.Runner({ baseUrl: url });
        const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true, summaries: { everyTurns: 2 } });
        const first = await runner.run(agent, 'I like tea.', { session });
        const second = await runner.run(agent, 'I live in Oslo.', { session });
        const [one, two] = [await first.background, await second.background];
        const info = await session.getInfo();
        return {
          firstErrors: one.errors.map((e) => ({ name: e.name, status: e.status, message: e.message })),
          secondErrors: two.errors.length,
          secondSummary: two.summary,
          title: info.title,
          items: (await session.getItems()).length,
        };
      });
      return { asked, ...value };
    },
    { id: fresh('title-timeout') },
  );
  assert.deepEqual(r.asked, [120000, 120000, 120000], 'the title, the title again after the next turn, and the summary request, two minutes each');
  assert.equal(r.firstErrors.length, 1);
  assert.equal(r.firstErrors[0].name, 'ModelError');
  assert.equal(r.firstErrors[0].status, 0);
  assert.match(r.firstErrors[0].message, /no answer within 120 s to the request for a title or summary/);
  assert.equal(r.secondErrors, 0);
  assert.equal(r.secondSummary, 'Ann likes tea and lives in Oslo.');
  assert.equal(r.title, 'Tea In Oslo', 'the title the first turn could not get is asked for after the next one');
  assert.equal(r.items, 4, 'both turns saved');
});

test('a session whose getInfo fails: the work after the turn reports it, and the page sees no unhandled rejection', async () => {
  model.script({ text: 'answer' });
  const r = await inPage(
    async ({ url, id }) => {
      const unhandled = [];
      const listen = (e) => unhandled.push(String(e.reason?.message ?? e.reason));
      window.addEventListener('unhandledrejection', listen);
      // A session of the app's own, whose metadata read fails (its store is gone, say).
      const inner = new lib.MemorySession(id);
      const session = {
        sessionId: id,
        getItems: (n) => inner.getItems(n),
        addItems: (items) => inner.addItems(items),
        popItem: () => inner.popItem(),
        clearSession: () => inner.clearSession(),
        getInfo: () => Promise.reject(new Error('metadata store gone')),
        update: (changes) => inner.update(changes),
      };
      const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true });
      const result = await new lib.Runner({ baseUrl: url }).run(agent, 'q', { session });
      const report = await result.background;
      await new Promise((ok) => setTimeout(ok, 50));
      window.removeEventListener('unhandledrejection', listen);
      return { unhandled, errors: report.errors.map((e) => e.message), output: result.finalOutput };
    },
    { id: fresh('info-fails') },
  );
  assert.equal(r.output, 'answer');
  assert.deepEqual(r.unhandled, []);
  assert.equal(r.errors.length, 1);
  assert.match(r.errors[0], /metadata store gone/);
});

test('a title request that fails is reported and the summary is still made; a session that cannot keep titles and summaries says so', async () => {
  model.script({ text: 'answer' }, { error: 400, message: 'no titles today' }, { text: '{"summary": "The user asked a question.", "topics": ["questions"]}' }, { text: 'answer two' });
  const r = await inPage(
    async ({ url, id }) => {
      const runner = new lib.Runner({ baseUrl: url, retries: 0 });
      const agent = new lib.Agent({ name: 'A', model: 'm', autoTitle: true, summaries: { everyTurns: 1 } });
      const s = new lib.IndexedDbSession(id);
      const report = await (await runner.run(agent, 'q', { session: s })).background;
      const info = await s.getInfo();
      // A session of the protocol alone (as the SDK's MemorySession): no getInfo, no update.
      const inner = new lib.MemorySession(id + '-plain');
      const plain = { getSessionId: () => inner.getSessionId(), getItems: (n) => inner.getItems(n), addItems: (i) => inner.addItems(i), popItem: () => inner.popItem(), clearSession: () => inner.clearSession() };
      const plainReport = await (await runner.run(agent, 'q', { session: plain })).background;
      return {
        errors: report.errors.map((e) => `${e.name}: ${e.message}`),
        summary: [report.summary, info.summary, info.title],
        plain: plainReport.errors.map((e) => [e.name, e.code]),
      };
    },
    { id: fresh('title-fails') },
  );
  assert.equal(r.errors.length, 1);
  assert.match(r.errors[0], /^ModelError: .*no titles today/);
  assert.deepEqual(r.summary, ['The user asked a question.', 'The user asked a question.', 'q'], 'the summary made, the default title kept');
  assert.deepEqual(r.plain, [['RunnerError', 'INVALID_SESSION']]);
});
