// The fetch-based runner in headless Chromium against a local OpenAI-compatible server (another
// origin than the page), in both wire formats, whole and streamed.
import { test, describe, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness, reload, runInPage } from './harness.mjs';
import { startModelServer } from '../server/model-server.mjs';

let env;
let model;
let page;
let context;
before(async () => {
  env = await start();
  model = await startModelServer();
  ({ context, page } = await openHarness(env));
});
after(async () => {
  await model?.close();
  await env?.close();
});
beforeEach(() => model.reset());

let counter = 0;
const fresh = (p) => `${p}-${++counter}`;

/** Runs `body` (source of an async function) in the page with `lib`, the model URL and args. */
function inPage(body, args = {}) {
  return runInPage(page, body, args, model.url);
}

const userTexts = (req) =>
  (req.body.messages ?? req.body.input)
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('')));

for (const api of ['chat_completions', 'responses']) {
  describe(`runner (${api})`, () => {
    test('the quick start remembers across turns; without a session each run starts afresh', async () => {
      model.script({ text: 'San Francisco' }, { text: 'California' }, { text: 'About 39 million' }, { text: 'a' }, { text: 'b' });
      const id = fresh('golden');
      const r = await inPage(
        async ({ url, api, id }) => {
          const agent = new lib.Agent({ name: 'Assistant', instructions: 'Reply very concisely.', model: 'test-model' });
          const runner = new lib.Runner({ baseUrl: url, api });
          const session = new lib.IndexedDbSession(id);
          const outputs = [];
          for (const q of [
            'What city is the Golden Gate Bridge in?',
            'What state is it in?',
            "What's the population?",
          ]) {
            outputs.push((await runner.run(agent, q, { session })).finalOutput);
          }
          const bare = new lib.Agent({ name: 'Bare', model: 'test-model' });
          await runner.run(bare, 'first');
          await runner.run(bare, 'second');
          return { outputs, history: await session.getItems() };
        },
        { api, id },
      );
      assert.deepEqual(r.outputs, ['San Francisco', 'California', 'About 39 million']);
      const [t1, t2, t3, n1, n2] = model.requests;
      assert.deepEqual(userTexts(t1), ['What city is the Golden Gate Bridge in?']);
      assert.deepEqual(userTexts(t2), ['What city is the Golden Gate Bridge in?', 'What state is it in?']);
      assert.deepEqual(userTexts(t3), ['What city is the Golden Gate Bridge in?', 'What state is it in?', "What's the population?"]);
      const sent = (req) => req.body.messages ?? req.body.input;
      if (api === 'chat_completions') {
        assert.deepEqual(sent(t3).map((m) => m.role), ['system', 'user', 'assistant', 'user', 'assistant', 'user']);
        assert.equal(sent(t3)[2].content, 'San Francisco');
      } else {
        assert.equal(t3.body.instructions, 'Reply very concisely.');
        assert.deepEqual(sent(t3).map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user']);
      }
      assert.equal(sent(n1).length, 1);
      assert.equal(sent(n2).length, 1, 'no session: the second run sees only its own input');
      assert.equal(r.history.length, 6);
      assert.deepEqual(r.history[0], { type: 'message', role: 'user', content: 'What city is the Golden Gate Bridge in?' });
      assert.equal(r.history[1].type, 'message');
      assert.equal(r.history[1].role, 'assistant');
      assert.equal(r.history[1].status, 'completed');
      // As the SDK saves an answer: from the Responses API, its annotations kept in the part's
      // providerData.
      const part = { type: 'output_text', text: 'San Francisco' };
      assert.deepEqual(r.history[1].content, [api === 'responses' ? { ...part, providerData: { annotations: [] } } : part]);
    });

    test('tools run, every item is saved in order as SDK items, a throwing tool reports its error', async () => {
      model.script(
        { calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }, { name: 'explode', arguments: {} }] },
        { text: 'It is sunny in Paris.' },
      );
      const id = fresh('tools');
      const r = await inPage(
        async ({ url, api, id }) => {
          const seen = [];
          const agent = new lib.Agent({
            name: 'Weather',
            model: 'test-model',
            modelSettings: { temperature: 0.25, topP: 0.5, maxTokens: 77, reasoning: { effort: 'low' }, store: false, text: { verbosity: 'low' }, providerData: { seed: 7 } },
            tools: [
              {
                name: 'get_weather',
                description: 'Weather for a city',
                parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
                execute: async (args, context) => {
                  seen.push({ args, context });
                  return { city: args.city, sky: 'sunny' };
                },
              },
              { name: 'explode', execute: () => { throw new Error('kaboom'); } },
            ],
          });
          const runner = new lib.Runner({ baseUrl: url, api });
          const session = new lib.IndexedDbSession(id);
          const result = await runner.run(agent, 'Weather in Paris?', { session, context: { user: 'u1' } });
          return {
            seen,
            finalOutput: result.finalOutput,
            newItems: result.newItems,
            input: result.input,
            resultHistory: result.history,
            history: await session.getItems(),
          };
        },
        { api, id },
      );
      assert.deepEqual(r.seen, [{ args: { city: 'Paris' }, context: { user: 'u1' } }]);
      assert.equal(r.finalOutput, 'It is sunny in Paris.');
      assert.deepEqual(r.input, [{ type: 'message', role: 'user', content: 'Weather in Paris?' }]);
      const types = r.history.map((i) => i.type);
      assert.deepEqual(types, ['message', 'function_call', 'function_call', 'function_call_result', 'function_call_result', 'message']);
      const [, call1, call2, out1, out2] = r.history;
      assert.equal(call1.name, 'get_weather');
      assert.equal(call1.arguments, '{"city":"Paris"}');
      assert.equal(out1.callId, call1.callId);
      assert.equal(out2.callId, call2.callId);
      assert.deepEqual(out1.output, { type: 'text', text: '{"city":"Paris","sky":"sunny"}' });
      // As the SDK 0.20 says it: the error itself is neither sent nor saved.
      assert.equal(out2.output.text, 'An error occurred while running the tool. Please try again.');
      assert.deepEqual(r.newItems, r.history.slice(1));
      assert.deepEqual(r.resultHistory, [...r.input, ...r.newItems], 'the SDK’s history: input, then what the run made');
      // The second request carries the calls and their outputs in the API's own shape.
      const [first, second] = model.requests;
      // The SDK's other settings, as the SDK sends them.
      assert.equal(first.body.store, false);
      assert.equal(first.body.seed, 7);
      if (api === 'chat_completions') {
        assert.equal(first.body.reasoning_effort, 'low');
        assert.equal(first.body.verbosity, 'low');
      } else {
        assert.deepEqual(first.body.reasoning, { effort: 'low' });
        assert.deepEqual(first.body.text, { verbosity: 'low' });
      }
      if (api === 'chat_completions') {
        assert.equal(first.body.temperature, 0.25);
        assert.equal(first.body.top_p, 0.5);
        assert.equal(first.body.max_tokens, 77);
        assert.deepEqual(first.body.tools[0].function.parameters.required, ['city']);
        const roles = second.body.messages.map((m) => m.role);
        assert.deepEqual(roles, ['user', 'assistant', 'tool', 'tool']);
        assert.equal(second.body.messages[1].tool_calls.length, 2);
        assert.equal(second.body.messages[2].tool_call_id, call1.callId);
      } else {
        assert.equal(first.body.max_output_tokens, 77);
        assert.equal(first.body.tools[0].name, 'get_weather');
        // A user message goes in the API's short form, `{ role, content }`, as the SDK sends it.
        const kinds = second.body.input.map((i) => i.type ?? i.role);
        assert.deepEqual(kinds, ['user', 'function_call', 'function_call', 'function_call_output', 'function_call_output']);
        assert.equal(second.body.input[3].call_id, call1.callId);
      }
    });

    test('history limit and input callback shape the model input; only new-turn items are saved', async () => {
      const id = fresh('callback');
      model.script({ text: 'one' }, { text: 'two' }, { text: 'three' }, { text: 'four' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          const runner = new lib.Runner({ baseUrl: url, api });
          const session = new lib.IndexedDbSession(id, { settings: { limit: 2 } });
          await session.addItems([
            { role: 'user', content: 'h1' },
            { role: 'assistant', content: 'h2' },
            { role: 'user', content: 'h3' },
            { role: 'assistant', content: 'h4' },
          ]);
          await runner.run(agent, 'q1', { session }); // session limit: 2 history items
          await runner.run(agent, 'q2', { session, sessionSettings: { limit: 1 } });
          let got;
          await runner.run(agent, 'q3', {
            session,
            sessionSettings: { limit: 3 },
            sessionInputCallback: async (history, newItems) => {
              got = { history: structuredClone(history), newItems: structuredClone(newItems) };
              history[0].content = 'mutated';
              // Reorder the history, repeat one item, add a note, keep the new input.
              return [history[2], history[1], history[0], { role: 'system', content: 'note' }, ...newItems];
            },
          });
          const before = (await session.getItems(null)).length;
          const all = await new lib.IndexedDbSession(id).getItems();
          // Infinity: every item, whatever window the session's own settings take.
          await runner.run(agent, 'q4', { session, sessionSettings: { limit: Infinity } });
          return { got, before, all };
        },
        { api, id },
      );
      const items = (req) => (req.body.messages ?? req.body.input).map((m) => m.content?.[0]?.text ?? m.content);
      const [r1, r2, r3, r4] = model.requests;
      assert.deepEqual(items(r1), ['h3', 'h4', 'q1']);
      assert.deepEqual(items(r2), ['one', 'q2']);
      assert.equal(r.got.history.length, 3);
      assert.deepEqual(r.got.newItems, [{ type: 'message', role: 'user', content: 'q3' }]);
      assert.deepEqual(items(r3), ['two', 'q2', 'mutated', 'note', 'q3']);
      // Saved: the note the callback added and the new input, not the repeated history.
      const texts = r.all.map((i) => (typeof i.content === 'string' ? i.content : i.content[0].text));
      assert.deepEqual(texts, ['h1', 'h2', 'h3', 'h4', 'q1', 'one', 'q2', 'two', 'note', 'q3', 'three']);
      assert.deepEqual(items(r4), [...texts, 'q4']);
    });

    test('history never sends a tool output without its call, nor a call without its output', async () => {
      const id = fresh('pairs');
      await inPage(
        async ({ url, api, id }) => {
          const session = new lib.IndexedDbSession(id);
          await session.addItems([
            { role: 'user', content: 'old' },
            { type: 'function_call', callId: 'cut', name: 'f', arguments: '{}', status: 'completed' },
            { type: 'function_call_result', callId: 'cut', name: 'f', status: 'completed', output: { type: 'text', text: 'r' } },
            { type: 'function_call', callId: 'dangling', name: 'f', arguments: '{}', status: 'completed' },
            { role: 'assistant', content: 'after' },
          ]);
          const runner = new lib.Runner({ baseUrl: url, api });
          // A limit of 3 keeps the output of "cut" but not its call.
          await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'next', { session, sessionSettings: { limit: 3 } });
        },
        { api, id },
      );
      const body = model.requests[0].body;
      const sent = JSON.stringify(body.messages ?? body.input);
      assert.doesNotMatch(sent, /cut/);
      assert.doesNotMatch(sent, /dangling/);
      assert.match(sent, /after/);
    });

    test('a sessionInputCallback that halves a tool exchange of the history sends neither half (the API refuses either), as the SDK drops them; what it made is sent as it is', async () => {
      const id = fresh('callback-halves');
      await inPage(
        async ({ url, api, id }) => {
          const history = [
            { role: 'user', content: 'old' },
            { type: 'function_call', callId: 'lookup', name: 'f', arguments: '{}', status: 'completed' },
            { type: 'function_call_result', callId: 'lookup', name: 'f', status: 'completed', output: { type: 'text', text: 'found' } },
            { type: 'function_call', callId: 'other', name: 'f', arguments: '{}', status: 'completed' },
            { type: 'function_call_result', callId: 'other', name: 'f', status: 'completed', output: { type: 'text', text: 'seen' } },
            { role: 'assistant', content: 'after' },
          ];
          const runner = new lib.Runner({ baseUrl: url, api });
          // Keeps the first call without its output, and the second output without its call:
          // the history's own objects, then copies of them.
          const halves = (h) => [h[0], h[1], h[4], h[5]];
          for (const copied of [false, true]) {
            const session = new lib.IndexedDbSession(`${id}-${copied}`);
            await session.addItems(history);
            const sessionInputCallback = (h, items) => [...halves(h).map((i) => (copied ? structuredClone(i) : i)), ...items];
            await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'next', { session, sessionInputCallback });
          }
        },
        { api, id },
      );
      for (const [n, request] of model.requests.entries()) {
        const sent = JSON.stringify(request.body.messages ?? request.body.input);
        assert.doesNotMatch(sent, /lookup/, `request ${n}`);
        assert.doesNotMatch(sent, /other|seen/, `request ${n}`);
        assert.match(sent, /old/);
        assert.match(sent, /after/);
        assert.match(sent, /next/);
      }
      assert.equal(model.requests.length, 2);
    });

    test('a session that answers getItems(n) with every item (its limit ignored) still has the newest n sent, trimmed as any window', async () => {
      const id = fresh('window-ignored');
      model.script({ text: 'one' }, { text: 'two' });
      await inPage(
        async ({ url, api, id }) => {
          const inner = new lib.IndexedDbSession(id);
          await inner.addItems([
            { role: 'user', content: 'old' },
            { type: 'reasoning', id: 'rs_1', content: [], providerData: { encrypted_content: 'e1' } },
            { type: 'function_call', id: 'fc_1', callId: 'c1', name: 'f', arguments: '{}', status: 'completed' },
            { type: 'function_call_result', callId: 'c1', name: 'f', status: 'completed', output: { type: 'text', text: 'r1' } },
            { type: 'reasoning', id: 'rs_2', content: [], providerData: { encrypted_content: 'e2' } },
            { type: 'message', id: 'msg_2', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'kept' }] },
          ]);
          const session = {
            getSessionId: () => inner.getSessionId(),
            getItems: () => inner.getItems(),
            addItems: (items) => inner.addItems(items),
            popItem: () => inner.popItem(),
            clearSession: () => inner.clearSession(),
          };
          const runner = new lib.Runner({ baseUrl: url, api });
          await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'next', { session, sessionSettings: { limit: 4 } });
          await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'alone', { session, sessionSettings: { limit: 0 } });
        },
        { api, id },
      );
      const sent = model.requests.map(({ body }) => JSON.stringify(body.messages ?? body.input));
      assert.doesNotMatch(sent[0], /old/);
      assert.match(sent[0], /kept/);
      if (api === 'responses') assert.doesNotMatch(sent[0], /fc_1|c1|r1/);
      else assert.match(sent[0], /r1/);
      // A limit of 0: no history at all.
      assert.doesNotMatch(sent[1], /\bold\b|kept|\bnext\b|\bone\b/);
      assert.match(sent[1], /alone/);
    });

    test('a history window that begins inside a model response leaves that response out on the Responses API', async () => {
      // The Responses API refuses a call or an answer sent without the reasoning item that led to
      // it: a window of the newest four items beginning at the call after `rs_1` leaves the call
      // (and its output) out, whether the limit is the run's or the session's own (also through a
      // CompactionSession). Chat Completions, which is sent no reasoning items, gets it whole.
      const ids = [fresh('window-run'), fresh('window-own'), fresh('window-compacting'), fresh('window-answered')];
      model.script({ text: 'one' }, { text: 'two' }, { text: 'three' }, { text: 'four' });
      await inPage(
        async ({ url, api, ids }) => {
          const items = [
            { role: 'user', content: 'old' },
            { type: 'reasoning', id: 'rs_1', content: [], providerData: { encrypted_content: 'e1' } },
            { type: 'function_call', id: 'fc_1', callId: 'c1', name: 'f', arguments: '{}', status: 'completed' },
            { type: 'function_call_result', callId: 'c1', name: 'f', status: 'completed', output: { type: 'text', text: 'r1' } },
            { type: 'reasoning', id: 'rs_2', content: [], providerData: { encrypted_content: 'e2' } },
            { type: 'message', id: 'msg_2', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'kept' }] },
          ];
          const runner = new lib.Runner({ baseUrl: url, api });
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          const byRun = new lib.IndexedDbSession(ids[0]);
          await byRun.addItems(items);
          await runner.run(agent, 'next', { session: byRun, sessionSettings: { limit: 4 } });
          const own = new lib.IndexedDbSession(ids[1], { settings: { limit: 4 } });
          await own.addItems(items);
          await runner.run(agent, 'next', { session: own });
          const inner = new lib.IndexedDbSession(ids[2], { settings: { limit: 4 } });
          await inner.addItems(items);
          const compacting = new lib.CompactionSession(inner, { runner, model: 'm', shouldCompact: () => false });
          await runner.run(agent, 'next', { session: compacting });
          // A call the new input answers (its output sent by hand) is sent with it.
          const answered = new lib.IndexedDbSession(ids[3]);
          await answered.addItems([
            { role: 'user', content: 'old' },
            { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Let me check.' }] },
            { type: 'function_call', id: 'fc_9', callId: 'c9', name: 'f', arguments: '{}', status: 'completed' },
          ]);
          const output = { type: 'function_call_result', callId: 'c9', name: 'f', status: 'completed', output: { type: 'text', text: 'r9' } };
          await runner.run(agent, [output], { session: answered, sessionSettings: { limit: 1 } });
        },
        { api, ids },
      );
      assert.equal(model.requests.length, 4);
      for (const { body } of model.requests.slice(0, 3)) {
        const sent = JSON.stringify(body.messages ?? body.input);
        assert.doesNotMatch(sent, /old/);
        assert.match(sent, /kept/);
        if (api === 'responses') {
          assert.doesNotMatch(sent, /fc_1|c1|r1/);
          assert.match(sent, /rs_2/);
        } else {
          assert.match(sent, /c1/);
          assert.match(sent, /r1/);
        }
      }
      const { body } = model.requests[3];
      const called = api === 'responses' ? body.input.some((i) => i.type === 'function_call' && i.call_id === 'c9') : body.messages.some((m) => m.tool_calls?.some((c) => c.id === 'c9'));
      assert.ok(called, 'the call the output answers is sent with it');
    });

    test('model settings and text go out as JavaScript wrote them', async () => {
      model.script({ text: 'ok "quoted" \\ \u2028 😀' });
      const text = 'say "hi" \\ back\n\ttab \u0001 \u2028 é 😀';
      const r = await inPage(
        async ({ url, api, text }) => {
          const agent = new lib.Agent({ name: 'A', model: 'm', modelSettings: { temperature: 0.7, topP: 1e-7 } });
          const runner = new lib.Runner({ baseUrl: url, api });
          return (await runner.run(agent, text)).finalOutput;
        },
        { api, text },
      );
      assert.equal(r, 'ok "quoted" \\ \u2028 😀');
      const [req] = model.requests;
      assert.equal(req.body.temperature, 0.7);
      assert.equal(req.body.top_p, 1e-7);
      assert.match(req.raw, /"temperature":0\.7[,}]/);
      assert.match(req.raw, /"top_p":1e-7[,}]/);
      assert.deepEqual(userTexts(req), [text]);
    });

    test('maxTurns stops a run that keeps calling tools, with what ran saved', async () => {
      const id = fresh('maxturns');
      model.script(
        { calls: [{ name: 'again', arguments: {} }] },
        { calls: [{ name: 'again', arguments: {} }] },
        { text: 'done' },
      );
      const r = await inPage(
        async ({ url, api, id }) => {
          let runs = 0;
          const agent = new lib.Agent({ name: 'Loop', model: 'm', tools: [{ name: 'again', execute: () => ++runs }] });
          const session = new lib.IndexedDbSession(id);
          const runner = new lib.Runner({ baseUrl: url, api });
          let state;
          const res = await attempt(() => runner.run(agent, 'go', { session, maxTurns: 2 }).catch((e) => {
            state = e.state;
            throw e;
          }));
          const out = { res, runs, history: (await session.getItems()).map((i) => i.type ?? i.role), usage: await session.getSessionUsage() };
          out.resumed = (await runner.run(agent, state, { session, maxTurns: 3 })).finalOutput;
          out.usageAfter = await session.getSessionUsage();
          return out;
        },
        { api, id },
      );
      assert.equal(r.res.ok, false);
      assert.equal(r.res.name, 'MaxTurnsExceededError');
      assert.equal(r.usage.requests, 2, "the run's usage is kept with what it saved");
      assert.match(r.res.message, /after 2 model calls/);
      assert.equal(r.runs, 2);
      assert.deepEqual(r.history, ['message', 'function_call', 'function_call_result', 'function_call', 'function_call_result']);
      assert.equal(r.resumed, 'done');
      assert.equal(model.requests.length, 3);
      assert.equal(r.usageAfter.requests, 3, 'resumed, the run adds the usage of its third call, not again that of the first two');
      assert.equal(r.usageAfter.turns, 1);
    });

    test('a run that fails after its tools ran keeps their calls and outputs: a retry does not run them again', async () => {
      const id = fresh('failed-after-tools');
      model.script({ calls: [{ name: 'send_mail', arguments: { to: 'ada' } }] }, { error: 500, message: 'down' }, { text: 'Sent, as I said.' });
      const r = await inPage(
        async ({ url, api, id }) => {
          let sent = 0;
          const agent = new lib.Agent({ name: 'Mail', model: 'm', tools: [{ name: 'send_mail', execute: () => `sent ${++sent}` }] });
          const session = new lib.IndexedDbSession(id);
          const runner = new lib.Runner({ baseUrl: url, api, retries: 0 });
          const failed = await attempt(() => runner.run(agent, 'mail ada', { session }));
          const history = (await session.getItems()).map((i) => i.type ?? i.role);
          const usage = await session.getSessionUsage();
          // A later turn (the user's "try again") sends what ran, and runs nothing again.
          const again = (await runner.run(agent, 'did it go?', { session })).finalOutput;
          return { failed: [failed.name, failed.status], history, requests: usage.requests, sent, again };
        },
        { api, id },
      );
      assert.deepEqual(r.failed, ['ModelError', 500]);
      assert.deepEqual(r.history, ['message', 'function_call', 'function_call_result']);
      assert.equal(r.requests, 1, 'the call that answered is counted');
      assert.equal(r.sent, 1);
      assert.equal(r.again, 'Sent, as I said.');
      const last = JSON.stringify(model.requests.at(-1).body);
      assert.match(last, /sent 1/, 'the next request holds the tool output');
    });

    test('maxTurns: null is no limit, as in the SDK', async () => {
      const id = fresh('unlimited');
      model.script(...Array.from({ length: 11 }, () => ({ calls: [{ name: 'again', arguments: {} }] })), { text: 'done' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const agent = new lib.Agent({ name: 'Loop', model: 'm', tools: [{ name: 'again', execute: () => 'again' }] });
          const runner = new lib.Runner({ baseUrl: url, api });
          return attempt(async () => (await runner.run(agent, 'go', { session: new lib.IndexedDbSession(id), maxTurns: null })).finalOutput);
        },
        { api, id },
      );
      assert.deepEqual(r, { ok: true, value: 'done' });
      assert.equal(model.requests.length, 12);
    });

    test('a call that fails after others keeps their usage; resuming adds only its own', async () => {
      const id = fresh('failed-usage');
      model.script({ calls: [{ name: 't', arguments: {} }] }, { error: 500 }, { text: 'done' }, { calls: [{ name: 't', arguments: {} }] });
      const r = await inPage(
        async ({ url, api, id }) => {
          const agent = new lib.Agent({ name: 'U', model: 'm', tools: [{ name: 't', execute: () => 'ok' }] });
          const session = new lib.IndexedDbSession(id);
          const runner = new lib.Runner({ baseUrl: url, api, retries: 0 });
          let failed;
          try {
            await runner.run(agent, 'go', { session });
          } catch (e) {
            failed = e;
          }
          const out = { error: failed?.name, usage: await session.getSessionUsage() };
          out.resumed = (await runner.run(agent, failed.state, { session })).finalOutput;
          out.usageAfter = await session.getSessionUsage();
          // A callback of the app that throws after a call (here needsApproval) keeps it too.
          const throwing = new lib.Agent({ name: 'T', model: 'm', tools: [{ name: 't', needsApproval: () => { throw new Error('boom'); }, execute: () => 'ok' }] });
          const other = new lib.IndexedDbSession(`${id}-thrown`);
          out.thrown = await runner.run(throwing, 'go', { session: other }).then(() => null, (e) => e.message);
          out.thrownUsage = (await other.getSessionUsage()).requests;
          return out;
        },
        { api, id },
      );
      assert.equal(r.thrown, 'boom');
      assert.equal(r.thrownUsage, 1);
      assert.equal(r.error, 'ModelError');
      assert.equal(r.usage.requests, 1, 'the first call was answered and paid for');
      assert.ok(r.usage.totalTokens > 0);
      assert.equal(r.resumed, 'done');
      assert.equal(r.usageAfter.requests, 2, 'the resumed run adds its own call only');
      assert.equal(r.usageAfter.turns, 1);
    });

    test('usage is summed; the key goes only in the Authorization header; the page is cross-origin', async () => {
      const id = fresh('usage');
      model.script({ calls: [{ name: 't', arguments: {} }] }, { text: 'done!' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const agent = new lib.Agent({ name: 'U', model: 'm', tools: [{ name: 't', execute: () => 'ok' }] });
          const runner = new lib.Runner({ baseUrl: url, api, apiKey: 'sk-secret-123', headers: { 'x-test-header': 'yes' } });
          const session = new lib.IndexedDbSession(id);
          const result = await runner.run(agent, 'hi', { session });
          return {
            usage: result.usage,
            lastResponseId: result.lastResponseId,
            state: result.state.toString(),
            stored: JSON.stringify(await session.getItems()),
            result: JSON.stringify({ ...result, state: undefined }),
            origin: location.origin,
          };
        },
        { api, id },
      );
      const [a, b] = model.requests;
      // The test server counts 10 tokens per input item; output tokens are the text's length.
      const inputA = (a.body.messages ?? a.body.input).length * 10;
      const inputB = (b.body.messages ?? b.body.input).length * 10;
      assert.deepEqual(r.usage, { requests: 2, inputTokens: inputA + inputB, outputTokens: 5, totalTokens: inputA + inputB + 5 });
      assert.equal(r.lastResponseId, api === 'responses' ? 'resp_2' : 'chatcmpl_2');
      for (const req of model.requests) {
        assert.equal(req.headers.authorization, 'Bearer sk-secret-123');
        assert.equal(req.headers['x-test-header'], 'yes');
        assert.equal(req.headers.origin, r.origin, 'the request came from the page, another origin');
        assert.doesNotMatch(req.raw, /sk-secret/);
      }
      assert.notEqual(new URL(r.origin).port, new URL(model.url).port);
      assert.doesNotMatch(r.state, /sk-secret/);
      assert.doesNotMatch(r.stored, /sk-secret/);
      assert.doesNotMatch(r.result, /sk-secret/);
    });

    test('a session with conversationId or previousResponseId is refused before anything is sent', async () => {
      const r = await inPage(
        async ({ url, api }) => {
          const runner = new lib.Runner({ baseUrl: url, api });
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          const session = new lib.MemorySession();
          return {
            conv: await attempt(() => runner.run(agent, 'x', { session, conversationId: 'conv_1' })),
            prev: await attempt(() => runner.run(agent, 'x', { session, previousResponseId: 'resp_1' })),
            items: await session.getItems(),
          };
        },
        { api },
      );
      for (const res of [r.conv, r.prev]) {
        assert.equal(res.ok, false);
        assert.equal(res.name, 'RunnerError');
        assert.equal(res.code, 'SESSION_CONFLICT');
      }
      assert.equal(model.requests.length, 0);
      assert.deepEqual(r.items, []);
    });

    test('HTTP errors, network failure, malformed JSON and cut streams are ModelErrors; input saved, no half turn', async () => {
      const cases = [
        [{ error: 400, message: 'bad request body' }, 400, /bad request body/],
        [{ error: 401, message: 'Incorrect API key provided' }, 401, /Incorrect API key/],
        [{ error: 404, message: 'model not found' }, 404, /model not found/],
        [{ malformed: true }, 200, /malformed JSON/],
      ];
      for (const [step, status, message] of cases) {
        model.reset();
        model.script(step);
        const id = fresh('err');
        const r = await inPage(
          async ({ url, api, id }) => {
            const session = new lib.IndexedDbSession(id);
            const runner = new lib.Runner({ baseUrl: url, api, retries: 0 });
            const res = await attempt(() => runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'keep me', { session }));
            return { err: res.ok ? null : res, history: await session.getItems() };
          },
          { api, id },
        );
        assert.ok(r.err, `${JSON.stringify(step)} should fail`);
        assert.equal(r.err.name, 'ModelError');
        assert.equal(r.err.isError, true);
        assert.match(r.err.message, message);
        assert.equal(r.err.status, status);
        assert.deepEqual(r.history, [{ type: 'message', role: 'user', content: 'keep me' }], 'input saved, nothing else');
      }
      // Nothing listens on port 9 of this host: the connection is refused.
      const offline = await inPage(
        async ({ api }) => {
          const session = new lib.MemorySession();
          const res = await attempt(() =>
            new lib.Runner({ baseUrl: 'http://127.0.0.1:9/v1', api }).run(new lib.Agent({ name: 'A', model: 'm' }), 'hello?', { session }),
          );
          return { res, history: await session.getItems() };
        },
        { api },
      );
      assert.equal(offline.res.name, 'ModelError');
      assert.match(offline.res.message, /model request failed: network error/);
      assert.deepEqual(offline.history, [{ type: 'message', role: 'user', content: 'hello?' }]);
    });

    test('429 and 5xx are retried, honouring Retry-After; the status reaches the caller when retries run out', async () => {
      model.script({ error: 429, message: 'slow down', retryAfter: 0 }, { error: 503, message: 'busy', retryAfter: 0 }, { text: 'finally' });
      const ok = await inPage(
        async ({ url, api }) => (await new lib.Runner({ baseUrl: url, api }).run(new lib.Agent({ name: 'A', model: 'm' }), 'x')).finalOutput,
        { api },
      );
      assert.equal(ok, 'finally');
      assert.equal(model.requests.length, 3);
      model.reset();
      model.script({ error: 500, message: 'down', retryAfter: 0 }, { error: 500, message: 'still down', retryAfter: 0 }, { error: 500, message: 'gave up', retryAfter: 0 });
      const r = await inPage(
        async ({ url, api }) => {
          try {
            await new lib.Runner({ baseUrl: url, api, retries: 2 }).run(new lib.Agent({ name: 'A', model: 'm' }), 'x');
            return null;
          } catch (e) {
            return { name: e.name, status: e.status, serverMessage: e.serverMessage, message: e.message };
          }
        },
        { api },
      );
      assert.equal(model.requests.length, 3);
      assert.deepEqual(r, { name: 'ModelError', status: 500, serverMessage: 'gave up', message: 'model request failed with HTTP 500: gave up' });
    });

    test('a request the network failed is tried again; OpenAI’s retry-after-ms is read before Retry-After', async () => {
      model.script({ text: 'through' }, { error: 429, message: 'slow down', retryAfterMs: 0, retryAfter: 3600 }, { text: 'soon' });
      const r = await inPage(
        async ({ url, api }) => {
          let failures = 0;
          // The first request fails as a dropped connection does; the others go through.
          const flaky = (input, init) => (failures++ === 0 ? Promise.reject(new TypeError('Failed to fetch')) : fetch(input, init));
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          const through = (await new lib.Runner({ baseUrl: url, api, fetch: flaky }).run(agent, 'x')).finalOutput;
          const none = await new lib.Runner({ baseUrl: url, api, retries: 0, fetch: () => Promise.reject(new TypeError('Failed to fetch')) })
            .run(agent, 'x')
            .catch((e) => [e.name, e.status]);
          // An hour's Retry-After would be capped at a minute: the run is given 20 s.
          const soon = (await new lib.Runner({ baseUrl: url, api }).run(agent, 'y', { signal: AbortSignal.timeout(20_000) })).finalOutput;
          return { through, failures, none, soon };
        },
        { api },
      );
      assert.deepEqual(r, { through: 'through', failures: 2, none: ['ModelError', 0], soon: 'soon' });
      assert.equal(model.requests.length, 3);
    });

    test('a caller’s fetch gets one value per header (its Content-Type and Authorization spelt otherwise are not joined to ours), as the default fetch sends; a tuple outputType (2020-12 prefixItems, as zod writes it) takes a fitting answer; maxTurns: Infinity is no limit', async () => {
      model.script(...Array.from({ length: 11 }, (_, i) => ({ calls: [{ name: 'step', arguments: {}, id: `s${i}` }] })), { text: 'done' }, { text: '{"point":[1,2]}' }, { text: '{"point":[1,"2"]}' });
      const r = await inPage(
        async ({ url, api }) => {
          const sent = [];
          const runner = new lib.Runner({
            baseUrl: url,
            api,
            apiKey: 'sk-1',
            headers: { 'Content-Type': 'application/json', Authorization: 'Bearer proxy-token', 'X-Test-Header': 'a' },
            fetch: (u, init) => {
              sent.push(init.headers);
              return fetch(u, init);
            },
          });
          const agent = new lib.Agent({
            name: 'A',
            model: 'm',
            outputType: {
              type: 'json_schema',
              name: 'pt',
              strict: false,
              schema: {
                type: 'object',
                properties: { point: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false, minItems: 2, maxItems: 2 } },
                required: ['point'],
                additionalProperties: false,
              },
            },
          });
          // Twelve model calls, past the default limit of 10.
          const stepper = new lib.Agent({ name: 'S', model: 'm', tools: [{ name: 'step', execute: () => 'ok' }] });
          const unlimited = await runner.run(stepper, 'go', { maxTurns: Infinity }).then((res) => res.finalOutput, (e) => `${e.name}: ${e.message}`);
          const good = await runner.run(agent, 'where?').then((res) => res.finalOutput, (e) => `${e.name}: ${e.message}`);
          const bad = await runner.run(agent, 'where?').then(() => 'resolved', (e) => `${e.name}: ${e.message}`);
          const headers = new Headers(sent[0]);
          return { unlimited, good, bad, keys: Object.keys(sent[0]), type: headers.get('content-type'), auth: headers.get('authorization'), trace: headers.get('x-test-header') };
        },
        { api },
      );
      assert.equal(r.unlimited, 'done');
      assert.deepEqual(r.good, { point: [1, 2] });
      assert.match(r.bad, /^ModelBehaviorError: .*point\[1\]: expected number/);
      assert.equal(r.type, 'application/json');
      assert.equal(r.auth, 'Bearer sk-1', 'the apiKey wins, as the default fetch sends it');
      assert.equal(r.trace, 'a');
      assert.equal(new Set(r.keys.map((k) => k.toLowerCase())).size, r.keys.length, 'one key per header name');
      assert.equal(model.requests[0].headers.authorization, 'Bearer sk-1');
      assert.equal(model.requests.length, 14);
    });

    test('without a session the sessionInputCallback is not called (nothing to combine), as in the SDK; a history call the new input answers is sent with it', async () => {
      model.script({ text: 'plain' }, { text: 'answered' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const runner = new lib.Runner({ baseUrl: url, api });
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          let called = 0;
          const sessionInputCallback = (history, items) => (called++, [...history.at(-1).content, ...items]);
          const plain = await runner.run(agent, 'hi', { sessionInputCallback }).then((res) => res.finalOutput, (e) => `${e.name}: ${e.message}`);
          // A run paused for approval and left: its call waits in the history; the app sends its output itself.
          const session = new lib.IndexedDbSession(id);
          await session.addItems([{ role: 'user', content: 'q' }, { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}', status: 'completed' }]);
          const output = { type: 'function_call_result', callId: 'c1', name: 'f', status: 'completed', output: { type: 'text', text: 'ok' } };
          const answered = await runner.run(agent, [output], { session }).then((res) => res.finalOutput, (e) => `${e.name}: ${e.message}`);
          return { plain, called, answered };
        },
        { api, id: fresh('callback-no-session') },
      );
      assert.deepEqual(r, { plain: 'plain', called: 0, answered: 'answered' });
      const sent = model.requests[1].body.messages ?? model.requests[1].body.input;
      assert.ok(JSON.stringify(sent).includes('"c1"') && sent.some((m) => m.type === 'function_call' || m.tool_calls), 'the call went with its output');
    });

    test('half an emoji (a lone surrogate, as a text sliced by UTF-16 units holds) in the stored history or in the model’s answer, whole or streamed, is read as U+FFFD (JSON.parse takes it), not a failed run', async () => {
      model.script({ text: 'Hi \ud83d' }, { text: 'Bye \ude00' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const session = new lib.IndexedDbSession(id);
          // Written by other code (the SDK's run, a tool output sliced at 20 units).
          await session.addItems([{ role: 'user', content: 'Tell me 😀'.slice(0, 9) }, { role: 'assistant', content: 'ok' }]);
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          const runner = new lib.Runner({ baseUrl: url, api });
          const whole = await runner.run(agent, 'again', { session }).then((res) => res.finalOutput, (e) => `${e.name}: ${e.message}`);
          const stream = runner.runStreamed(agent, 'and again', { session });
          let text = '';
          for await (const event of stream) if (event.type === 'text_delta') text += event.delta;
          const streamed = await stream.result.then((res) => res.finalOutput, (e) => `${e.name}: ${e.message}`);
          return { whole, streamed, text, stored: (await session.getItems()).length };
        },
        { api, id: fresh('lone-surrogate') },
      );
      assert.equal(r.whole, 'Hi \ufffd');
      assert.equal(r.streamed, 'Bye \ufffd');
      assert.equal(r.text, 'Bye \ufffd');
      assert.equal(r.stored, 6, 'both turns saved');
      const sentFirst = JSON.stringify(model.requests[0].body);
      assert.ok(sentFirst.includes('Tell me \\ufffd') || sentFirst.includes('Tell me \ufffd'), 'the stored half emoji sent as U+FFFD');
    });

    test('streaming: deltas arrive while the answer is still being sent; same history as a whole run', async () => {
      model.state.deltaDelayMs = 30;
      const text = 'The Golden Gate Bridge is in San Francisco, California.';
      model.script({ calls: [{ name: 'lookup', arguments: { q: 'bridge' } }] }, { text }, { calls: [{ name: 'lookup', arguments: { q: 'bridge' } }] }, { text });
      const [streamedId, wholeId] = [fresh('stream'), fresh('whole')];
      const r = await inPage(
        async ({ url, api, streamedId, wholeId }) => {
          const agent = new lib.Agent({ name: 'S', model: 'm', tools: [{ name: 'lookup', execute: () => 'found' }] });
          const runner = new lib.Runner({ baseUrl: url, api });
          const streamed = new lib.IndexedDbSession(streamedId);
          const run = runner.runStreamed(agent, 'Where is the bridge?', { session: streamed });
          const events = [];
          let openAtFirstDelta;
          for await (const event of run) {
            if (event.type === 'text_delta' && openAtFirstDelta === undefined) {
              openAtFirstDelta = (await (await fetch(new URL('status', url + '/'))).json()).openStreams;
            }
            // (This runner's events; the SDK's are tested with the agents.)
            if (event.type.endsWith('_stream_event')) continue;
            events.push(event.type === 'done' ? { type: 'done', finalOutput: event.result.finalOutput } : { type: event.type, delta: event.delta });
          }
          const result = await run.result;
          const whole = new lib.IndexedDbSession(wholeId);
          await runner.run(agent, 'Where is the bridge?', { session: whole });
          return {
            openAtFirstDelta,
            events,
            finalOutput: result.finalOutput,
            streamedHistory: await streamed.getItems(),
            wholeHistory: await whole.getItems(),
          };
        },
        { api, streamedId, wholeId },
      );
      assert.equal(r.openAtFirstDelta, 1, 'the first delta was seen while the stream was still open');
      const deltas = r.events.filter((e) => e.type === 'text_delta').map((e) => e.delta);
      assert.ok(deltas.length > 3);
      assert.equal(deltas.join(''), text);
      const kinds = r.events.map((e) => e.type);
      assert.deepEqual(kinds.slice(0, 6), ['agent_start', 'item_added', 'tool_call', 'tool_start', 'tool_end', 'tool_output']);
      assert.deepEqual(kinds.slice(-2), ['agent_end', 'done']);
      assert.equal(r.events.at(-1).finalOutput, text);
      assert.equal(r.finalOutput, text);
      const strip = (items) => JSON.parse(JSON.stringify(items, (k, v) => (k === 'id' || k === 'callId' ? undefined : v)));
      assert.deepEqual(strip(r.streamedHistory), strip(r.wholeHistory));
      assert.equal(r.streamedHistory.length, 4);
    });

    test('aborting a stream stops it and leaves a consistent history', async () => {
      model.state.deltaDelayMs = 50;
      model.script({ text: 'This answer is long enough to be cut off in the middle by the abort.' });
      const id = fresh('abort');
      const r = await inPage(
        async ({ url, api, id }) => {
          const controller = new AbortController();
          const session = new lib.IndexedDbSession(id);
          const run = new lib.Runner({ baseUrl: url, api }).runStreamed(new lib.Agent({ name: 'A', model: 'm' }), 'tell me', {
            session,
            signal: controller.signal,
          });
          const seen = [];
          let thrown;
          try {
            for await (const e of run) {
              seen.push(e.type);
              if (e.type === 'text_delta') controller.abort();
            }
          } catch (e) {
            thrown = { name: e.name };
          }
          const result = await run.result.then(() => 'resolved', (e) => e.name);
          return { seen, thrown, result, history: await session.getItems() };
        },
        { api, id },
      );
      assert.deepEqual(r.thrown, { name: 'AbortError' });
      assert.equal(r.result, 'AbortError');
      assert.ok(r.seen.length >= 1);
      assert.deepEqual(r.history, [{ type: 'message', role: 'user', content: 'tell me' }]);
    });

    test('a Stop while the run reads the history saves nothing: the question is not kept, and no model is asked', async () => {
      // (A chat page that gives a question stopped before the run saved it back to its input
      // box would otherwise have it twice once sent again.)
      const id = fresh('stop-reading');
      model.script({ text: 'never asked' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const controller = new AbortController();
          const inner = new lib.IndexedDbSession(id);
          await inner.addItems([{ role: 'user', content: 'old' }, { role: 'assistant', content: 'answer' }]);
          // The Stop comes while the history is read.
          const session = {
            getSessionId: () => inner.getSessionId(),
            getItems: async (n) => {
              const items = await inner.getItems(n);
              controller.abort();
              return items;
            },
            addItems: (items) => inner.addItems(items),
            popItem: () => inner.popItem(),
            clearSession: () => inner.clearSession(),
          };
          const run = new lib.Runner({ baseUrl: url, api }).runStreamed(new lib.Agent({ name: 'A', model: 'm' }), 'tell me', { session, signal: controller.signal });
          const result = await run.result.then(() => 'resolved', (e) => e.name);
          return { result, history: await inner.getItems() };
        },
        { api, id },
      );
      assert.equal(r.result, 'AbortError');
      assert.deepEqual(r.history.map((i) => i.content), ['old', 'answer']);
      assert.equal(model.requests.length, 0);
    });

    test('a Stop while the input guardrail runs, which then throws, saves nothing and rejects with the Stop’s AbortError, not the guardrail’s error', async () => {
      const id = fresh('stop-guardrail');
      model.script({ text: 'never asked' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const controller = new AbortController();
          const session = new lib.IndexedDbSession(id);
          await session.addItems([{ role: 'user', content: 'old' }, { role: 'assistant', content: 'answer' }]);
          const agent = new lib.Agent({
            name: 'A',
            model: 'm',
            inputGuardrails: [
              {
                name: 'stopped-then-broke',
                execute: () => {
                  controller.abort();
                  throw new TypeError('guardrail broke after the Stop');
                },
              },
            ],
          });
          const run = new lib.Runner({ baseUrl: url, api }).runStreamed(agent, 'tell me', { session, signal: controller.signal });
          const result = await run.result.then(() => 'resolved', (e) => e.name);
          return { result, history: await session.getItems() };
        },
        { api, id },
      );
      assert.equal(r.result, 'AbortError');
      assert.deepEqual(r.history.map((i) => i.content), ['old', 'answer'], 'the question is not kept');
      assert.equal(model.requests.length, 0);
    });

    test('Stop ends a loop that reads slower than the model writes at once, not after the text already come; a signal without a reason still ends it with an AbortError', async () => {
      model.script(
        // About 2 s of words: the run is still under way at the Stop, 400 ms in.
        { text: 'A long answer whose words come faster than the page draws them. '.repeat(8), delayMs: 25 },
        { text: 'Another answer, stopped by a look-alike signal. '.repeat(10), delayMs: 25 },
      );
      const r = await inPage(
        async ({ url, api }) => {
          const runner = new lib.Runner({ baseUrl: url, api });
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          const read = async (run, stop) => {
            const deltas = [];
            try {
              for await (const e of run) {
                if (e.type !== 'text_delta') continue;
                deltas.push(e.delta);
                if (deltas.length === 1) {
                  // Drawing the first word takes a while; the rest of the answer comes meanwhile.
                  await new Promise((ok) => setTimeout(ok, 400));
                  stop();
                }
              }
              return { deltas: deltas.length, error: null };
            } catch (e) {
              return { deltas: deltas.length, error: e?.name ?? String(e) };
            }
          };
          const controller = new AbortController();
          const first = await read(runner.runStreamed(agent, 'q', { signal: controller.signal }), () => controller.abort());
          // A polyfill's signal: aborted, with no reason.
          const listeners = [];
          const signal = { aborted: false, reason: undefined, addEventListener: (t, f) => listeners.push(f), removeEventListener() {} };
          const second = await read(runner.runStreamed(agent, 'q', { signal }), () => {
            signal.aborted = true;
            for (const f of listeners) f();
          });
          return { first, second };
        },
        { api },
      );
      assert.deepEqual(r.first, { deltas: 1, error: 'AbortError' }, 'no word after the Stop');
      assert.deepEqual(r.second, { deltas: 1, error: 'AbortError' });
    });

    test('a Stop that comes too late (while the answer is saved): the run resolves, and a loop that reads on after it gets every event to done, agent_end included', async () => {
      model.script({ text: 'Saved before the Stop could keep it.' });
      const r = await inPage(
        async ({ url, api }) => {
          const controller = new AbortController();
          const inner = new lib.MemorySession();
          // The user presses Stop while the answer is being written.
          const session = {
            getSessionId: () => inner.getSessionId(),
            getItems: (n) => inner.getItems(n),
            addItems: async (items) => {
              if (items.some((i) => i.role === 'assistant')) controller.abort();
              return inner.addItems(items);
            },
            popItem: () => inner.popItem(),
            clearSession: () => inner.clearSession(),
          };
          const stream = new lib.Runner({ baseUrl: url, api }).runStreamed(new lib.Agent({ name: 'A', model: 'm' }), 'q', { session, signal: controller.signal });
          const types = [];
          let error = null;
          try {
            for await (const e of stream) {
              types.push(e.type);
              // The loop is busy (drawing) until the run has ended.
              if (types.length === 1) await stream.result.catch(() => {});
            }
          } catch (e) {
            error = e.name;
          }
          return { types, error, result: await stream.result.then((x) => x.finalOutput, (e) => e.name), saved: (await inner.getItems()).length };
        },
        { api },
      );
      assert.equal(r.error, null);
      assert.equal(r.result, 'Saved before the Stop could keep it.');
      assert.equal(r.saved, 2);
      assert.deepEqual(r.types.slice(-2), ['agent_end', 'done']);
    });

    test("Stop ends a run whose fetch does not pass the signal on, while the stream is quiet or the answer has not come; the stream is closed", async () => {
      // The next chunk is 5 s away; the server never answers the second request.
      model.script({ text: 'One piece, then a long pause before the rest.', delayMs: 5000 }, { hang: true });
      const r = await inPage(
        async ({ url, api }) => {
          // A wrapper that builds its own init and drops the signal.
          const fetchDroppingSignal = (u, init) => fetch(u, { method: init.method, headers: init.headers, body: init.body });
          const runner = new lib.Runner({ baseUrl: url, api, fetch: fetchDroppingSignal, retries: 0 });
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          // Not a timing assertion: without the fix the run waits for the server, which here is
          // 5 s (the stream) or forever (the request).
          const within = (p) => Promise.race([p.then(() => 'resolved', (e) => e.name), new Promise((ok) => setTimeout(() => ok('still running'), 3000))]);
          const streaming = new AbortController();
          const run = runner.runStreamed(agent, 'q', { signal: streaming.signal });
          (async () => {
            for await (const e of run) if (e.type === 'text_delta') streaming.abort();
          })().catch(() => {});
          const streamed = await within(run.result);
          const status = async () => (await (await fetch(new URL('status', url + '/'))).json()).openStreams;
          let open = await status();
          for (let i = 0; i < 50 && open > 0; i++) {
            await new Promise((ok) => setTimeout(ok, 20));
            open = await status();
          }
          const waiting = new AbortController();
          const whole = within(runner.run(agent, 'q', { signal: waiting.signal }));
          setTimeout(() => waiting.abort(), 100);
          return { streamed, open, whole: await whole };
        },
        { api },
      );
      assert.deepEqual(r, { streamed: 'AbortError', open: 0, whole: 'AbortError' });
    });

    test("a tool gets the run's signal, and can stop when the run is aborted; the run rejects once it settled; it gets its call, as the SDK's toolCall", async () => {
      model.script({ calls: [{ name: 'slow', arguments: {} }] }, { calls: [{ name: 'slow', arguments: {} }] }, { text: 'done' });
      const r = await inPage(
        async ({ url, api }) => {
          const controller = new AbortController();
          const seen = [];
          const calls = [];
          const slow = {
            name: 'slow',
            execute: (args, context, details) => {
              calls.push([typeof details.callId, details.toolCall?.callId === details.callId, details.toolCall?.type, details.toolCall?.name, details.toolCall?.arguments]);
              seen.push(details.signal === undefined ? 'no signal' : details.signal === controller.signal ? 'the run\'s signal' : 'another signal');
              if (!details.signal) return 'quick';
              return new Promise((resolve) => {
                details.signal.addEventListener('abort', () => resolve('stopped'));
                setTimeout(() => controller.abort(), 0);
              });
            },
          };
          const agent = new lib.Agent({ name: 'A', model: 'm', tools: [slow] });
          const runner = new lib.Runner({ baseUrl: url, api });
          const aborted = await runner.run(agent, 'q', { signal: controller.signal }).then(() => 'resolved', (e) => e.name);
          const plain = await runner.run(agent, 'q');
          return { seen, calls, aborted, plain: plain.finalOutput };
        },
        { api },
      );
      assert.deepEqual(r.seen, ["the run's signal", 'no signal']);
      assert.deepEqual(r.calls, [['string', true, 'function_call', 'slow', '{}'], ['string', true, 'function_call', 'slow', '{}']]);
      assert.equal(r.aborted, 'AbortError');
      assert.equal(r.plain, 'done');
      assert.equal(model.requests.length, 3, 'the aborted run asked the model nothing after its tool');
    });

    test('a tool that rejects because the run was stopped (a fetch given the run’s signal) is saved as aborted, as the SDK tells it, not as a failure to try again', async () => {
      model.script({ calls: [{ name: 'fetch_page', arguments: {}, id: 'c1' }, { name: 'own_failure', arguments: {}, id: 'c2' }] }, { text: 'never asked' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const controller = new AbortController();
          const fetchPage = {
            name: 'fetch_page',
            errorFunction: () => 'the errorFunction was asked',
            execute: (args, context, { signal }) =>
              new Promise((_, reject) => {
                signal.addEventListener('abort', () => reject(new DOMException('The operation was aborted.', 'AbortError')));
                setTimeout(() => controller.abort(), 0);
              }),
          };
          // One that fails for a reason of its own as the run is stopped: told as a failure.
          const ownFailure = {
            name: 'own_failure',
            errorFunction: () => 'the errorFunction was asked',
            execute: (args, context, { signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('disk full')))),
          };
          const agent = new lib.Agent({ name: 'A', model: 'm', tools: [fetchPage, ownFailure] });
          const session = new lib.IndexedDbSession(id);
          const stopped = await new lib.Runner({ baseUrl: url, api }).run(agent, 'read it', { session, signal: controller.signal }).then(() => 'resolved', (e) => e.name);
          const saved = (await session.getItems()).filter((i) => i.type === 'function_call_result');
          return { stopped, outputs: saved.map((i) => i.output?.text ?? i.output) };
        },
        { api, id: fresh('tool-aborted') },
      );
      assert.equal(r.stopped, 'AbortError');
      assert.deepEqual(r.outputs, ['aborted', 'the errorFunction was asked']);
    });

    test('a stop_on_first_tool run whose tool was stopped with it rejects with AbortError, where it gave "aborted" as its answer; the call and its output are saved', async () => {
      model.script({ calls: [{ name: 'fetch_page', arguments: {}, id: 'c1' }] });
      const r = await inPage(
        async ({ url, api, id }) => {
          const controller = new AbortController();
          const fetchPage = {
            name: 'fetch_page',
            execute: (args, context, { signal }) =>
              new Promise((_, reject) => {
                signal.addEventListener('abort', () => reject(new DOMException('The operation was aborted.', 'AbortError')));
                setTimeout(() => controller.abort(), 0);
              }),
          };
          const agent = new lib.Agent({ name: 'A', model: 'm', tools: [fetchPage], toolUseBehavior: 'stop_on_first_tool' });
          const session = new lib.IndexedDbSession(id);
          const stopped = await new lib.Runner({ baseUrl: url, api }).run(agent, 'read it', { session, signal: controller.signal }).then((result) => `resolved: ${result.finalOutput}`, (e) => e.name);
          const items = await session.getItems();
          return { stopped, saved: items.map((i) => i.role ?? i.type), output: items.at(-1).output?.text ?? items.at(-1).output };
        },
        { api, id: fresh('stop-first-tool-aborted') },
      );
      assert.equal(r.stopped, 'AbortError');
      assert.deepEqual(r.saved, ['user', 'function_call', 'function_call_result']);
      assert.equal(r.output, 'aborted');
      assert.equal(model.requests.length, 1, 'the model was not asked again');
    });

    test('a Stop ends a streamed run’s loop at once, as the SDK’s stream closes, while a tool that does not heed the signal still runs; `result` rejects once it returned', async () => {
      model.script({ calls: [{ name: 'deaf', arguments: {} }] }, { text: 'never asked' });
      const r = await inPage(
        async ({ url, api }) => {
          const controller = new AbortController();
          let release;
          const returned = new Promise((ok) => (release = ok));
          const deaf = { name: 'deaf', execute: () => returned.then(() => 'late') };
          const agent = new lib.Agent({ name: 'A', model: 'm', tools: [deaf] });
          const runner = new lib.Runner({ baseUrl: url, api });
          const stream = runner.runStreamed(agent, 'q', { signal: controller.signal });
          let settled = false;
          stream.result.then(
            () => (settled = true),
            () => (settled = true),
          );
          const seen = [];
          let thrown;
          try {
            for await (const event of stream) {
              seen.push(event.type);
              if (event.type === 'tool_start') {
                controller.abort();
                // (The tool returns in a while all the same, so that a loop that waited for it
                // ends: it ends before, as the SDK's does.)
                setTimeout(release, 1000);
              }
            }
          } catch (e) {
            thrown = e.name;
          }
          const settledWhenThrown = settled;
          release();
          const outcome = await stream.result.then(() => 'resolved', (e) => e.name);
          return { seen, thrown, settledWhenThrown, outcome, cancelled: stream.cancelled };
        },
        { api },
      );
      assert.equal(r.thrown, 'AbortError');
      assert.equal(r.settledWhenThrown, false, 'the loop ended before the tool returned');
      assert.ok(r.seen.includes('tool_start'));
      assert.ok(!r.seen.includes('tool_end'), 'nothing after the Stop');
      assert.equal(r.outcome, 'AbortError');
      assert.equal(r.cancelled, false, 'a Stop is not the stream’s own cancel');
      assert.equal(model.requests.length, 1, 'the model was not asked again');
    });

    test('a Stop while a tool runs that does not heed it rejects the run once the tool returned, where its output would have ended the run (stop_on_first_tool) or a handoff followed: no answer, no handoff, the call and output saved', async () => {
      model.script({ calls: [{ name: 'deaf', arguments: {}, id: 'c1' }] }, { calls: [{ name: 'deaf', arguments: {}, id: 'c2' }, { name: 'transfer_to_B', arguments: {}, id: 'h1' }] }, { text: 'never asked' });
      const r = await inPage(
        async ({ url, api, id }) => {
          // A tool that does not heed the signal: it returns a while after the Stop, made as it starts.
          const controller = { current: null };
          const deaf = {
            name: 'deaf',
            execute: () => {
              controller.current.abort();
              return new Promise((ok) => setTimeout(() => ok('late'), 50));
            },
          };
          const runOnce = (agent, session) => {
            controller.current = new AbortController();
            const run = new lib.Runner({ baseUrl: url, api }).run(agent, 'q', { session, signal: controller.current.signal });
            return run.then((result) => `resolved: ${result.finalOutput}`, (e) => e.name);
          };
          const first = new lib.IndexedDbSession(`${id}-first`);
          const stopsAtTool = await runOnce(new lib.Agent({ name: 'A', model: 'm', tools: [deaf], toolUseBehavior: 'stop_on_first_tool' }), first);
          let bAsked = 0;
          const b = new lib.Agent({ name: 'B', model: 'm', instructions: () => { bAsked++; return 'B'; } });
          const second = new lib.IndexedDbSession(`${id}-second`);
          const handsOff = await runOnce(new lib.Agent({ name: 'A', model: 'm', tools: [deaf], handoffs: [b] }), second);
          const kinds = async (s) => (await s.getItems()).map((i) => i.role ?? `${i.type} ${i.callId ?? ''}`.trim());
          return { stopsAtTool, handsOff, bAsked, first: await kinds(first), second: await kinds(second) };
        },
        { api, id: fresh('stop-deaf-ends') },
      );
      assert.equal(r.stopsAtTool, 'AbortError', 'the tool’s late output is not the run’s answer');
      assert.deepEqual(r.first, ['user', 'function_call c1', 'function_call_result c1']);
      assert.equal(r.handsOff, 'AbortError');
      assert.equal(r.bAsked, 0, 'the agent handed to is never asked for its instructions');
      assert.ok(!r.second.includes('function_call_result h1'), 'the handoff is not taken');
      assert.ok(!r.second.includes('function_call h1'), 'nor saved without its output');
      assert.ok(r.second.includes('function_call_result c2'), 'the tool’s output is saved');
      assert.equal(model.requests.length, 2, 'the model was not asked after either Stop');
    });

    test('a run stopped while its answer is checked (a slow output guardrail) rejects with AbortError and saves no answer', async () => {
      model.script({ text: 'the answer' });
      const id = fresh('abort-guardrail');
      const r = await inPage(
        async ({ url, api, id }) => {
          const controller = new AbortController();
          const slow = { name: 'slow', execute: async () => (controller.abort(), { tripwireTriggered: false }) };
          const agent = new lib.Agent({ name: 'A', model: 'm', outputGuardrails: [slow] });
          const session = new lib.IndexedDbSession(id);
          const runner = new lib.Runner({ baseUrl: url, api });
          const outcome = await runner.run(agent, 'q', { session, signal: controller.signal }).then(() => 'resolved', (e) => e.name);
          return { outcome, items: (await session.getItems()).map((i) => i.role) };
        },
        { api, id },
      );
      assert.equal(r.outcome, 'AbortError');
      assert.deepEqual(r.items, ['user'], 'the question, no answer');
    });

    test('leaving a streamed run early cancels the run, as the SDK’s stream does: no half answer is saved, `completed` resolves, and the caller’s own signal still works', async () => {
      model.state.deltaDelayMs = 30;
      const text = 'An answer long enough to arrive in many small pieces over the stream.';
      model.script({ text }, { text }, { text });
      const id = fresh('break');
      const r = await inPage(
        async ({ url, api, id }) => {
          const session = new lib.IndexedDbSession(id);
          const runner = new lib.Runner({ baseUrl: url, api });
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          const controller = new AbortController();
          const run = runner.runStreamed(agent, 'go', { session, signal: controller.signal });
          const seen = [];
          for await (const e of run) {
            seen.push(e.type);
            if (e.type === 'text_delta') break;
          }
          const result = await run.result.then(() => 'resolved', (e) => e.name);
          const completed = await run.completed.then(() => 'resolved', (e) => e.name);
          // The loop's exit ended the iterator: nothing the run emitted later was kept for it.
          const after = [];
          for await (const e of run) after.push(e.type);
          const next = (await run[Symbol.asyncIterator]().next()).done;
          const left = { result, completed, cancelled: run.cancelled, error: run.error, aborted: controller.signal.aborted };
          // Cancelling the text stream cancels the run too.
          const texts = runner.runStreamed(agent, 'again', { session }).toTextStream().getReader();
          await texts.read();
          await texts.cancel();
          // A stream read to its end is not cancelled by the loop's end.
          const whole = runner.runStreamed(agent, 'once more', { session });
          for await (const e of whole) void e;
          return { seen, after, next, left, whole: [(await whole.result).finalOutput, whole.cancelled], history: (await session.getItems()).map((i) => i.content?.[0]?.text ?? i.content) };
        },
        { api, id },
      );
      assert.deepEqual(r.seen, ['agent_start', 'text_delta']);
      assert.deepEqual(r.after, []);
      assert.equal(r.next, true);
      assert.deepEqual(r.left, { result: 'AbortError', completed: 'resolved', cancelled: true, error: null, aborted: false });
      assert.deepEqual(r.whole, [text, false]);
      assert.deepEqual(r.history, ['go', 'again', 'once more', text], 'the questions, and only the answer read to its end');
    });

    test('a tool that throws tells the model what its errorFunction says (sync or async), or the SDK’s fixed message; never the error itself', async () => {
      model.script({ calls: [{ name: 'pay', arguments: {}, id: 'call_1' }, { name: 'refund', arguments: {}, id: 'call_2' }, { name: 'broken', arguments: {}, id: 'call_3' }, { name: 'coded', arguments: {}, id: 'call_4' }] }, { text: 'ok' });
      const r = await inPage(
        async ({ url, api }) => {
          const fail = () => {
            throw new Error('GET https://bank.example/api?key=SECRET failed');
          };
          const seen = [];
          const agent = new lib.Agent({
            name: 'A',
            model: 'm',
            tools: [
              { name: 'pay', execute: fail, errorFunction: (context, error) => (seen.push([context, error.message]), 'The payment service is down.') },
              { name: 'refund', execute: async () => fail(), errorFunction: async () => 'Refunds are closed today.' },
              { name: 'broken', execute: fail, errorFunction: () => { throw new Error('also broken'); } },
              // What it gives that is no text is told as a tool's result is: its JSON.
              { name: 'coded', execute: fail, errorFunction: () => ({ error: 'card_declined', retry: false }) },
            ],
          });
          const result = await new lib.Runner({ baseUrl: url, api }).run(agent, 'go', { context: { user: 'u1' } });
          return { seen, outputs: result.newItems.filter((i) => i.type === 'function_call_result').map((i) => i.output.text) };
        },
        { api },
      );
      assert.deepEqual(r.seen, [[{ user: 'u1' }, 'GET https://bank.example/api?key=SECRET failed']]);
      assert.deepEqual(r.outputs, ['The payment service is down.', 'Refunds are closed today.', 'An error occurred while running the tool. Please try again.', '{"error":"card_declined","retry":false}']);
      assert.doesNotMatch(JSON.stringify(model.requests.at(-1).body), /SECRET/);
    });

    test('a tool returning images, files or text parts gives them to the model as such (the SDK 0.20’s structured outputs), stored as the SDK stores them', async () => {
      model.script(
        { calls: [{ name: 'chart', arguments: {}, id: 'call_i' }, { name: 'report', arguments: {}, id: 'call_r' }, { name: 'doc', arguments: {}, id: 'call_d' }, { name: 'blank', arguments: {}, id: 'call_n' }] },
        { text: 'Here they are.' },
      );
      const id = fresh('structured');
      const r = await inPage(
        async ({ url, api, id }) => {
          const ends = [];
          const agent = new lib.Agent({
            name: 'A',
            model: 'm',
            tools: [
              { name: 'chart', execute: () => ({ type: 'image', image: { data: 'iVBORw0KGgo=', mediaType: 'image/png' }, detail: 'low' }) },
              { name: 'report', execute: async () => [{ type: 'text', text: 'Sales rose 4%. ' }, { type: 'image', image: 'https://example.com/q3.png' }, { type: 'text', text: 'See the chart.' }] },
              { name: 'doc', execute: () => ({ type: 'file', file: { url: 'https://example.com/q3.pdf', filename: 'q3.pdf' } }) },
              // Names no image: sent as its JSON text, as the SDK does.
              { name: 'blank', execute: () => ({ type: 'image' }) },
            ],
          });
          const runner = new lib.Runner({ baseUrl: url, api });
          runner.on('agent_tool_end', (_c, _a, _t, output) => ends.push(output));
          const session = new lib.IndexedDbSession(id);
          await runner.run(agent, 'Show me Q3', { session });
          const stored = (await session.getItems()).filter((i) => i.type === 'function_call_result').map((i) => i.output);
          return { stored, ends };
        },
        { api, id },
      );
      assert.deepEqual(r.stored, [
        [{ type: 'input_image', image: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' }],
        [{ type: 'input_text', text: 'Sales rose 4%. ' }, { type: 'input_image', image: 'https://example.com/q3.png' }, { type: 'input_text', text: 'See the chart.' }],
        [{ type: 'input_file', file: { url: 'https://example.com/q3.pdf' }, filename: 'q3.pdf' }],
        { type: 'text', text: '{"type":"image"}' },
      ]);
      assert.equal(r.ends.length, 4);
      assert.equal(r.ends[3], '{"type":"image"}');
      const sent = model.requests.at(-1).body;
      if (api === 'responses') {
        const outputs = sent.input.filter((i) => i.type === 'function_call_output').map((i) => i.output);
        assert.deepEqual(outputs, [
          [{ type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' }],
          [{ type: 'input_text', text: 'Sales rose 4%. ' }, { type: 'input_image', image_url: 'https://example.com/q3.png' }, { type: 'input_text', text: 'See the chart.' }],
          [{ type: 'input_file', file_url: 'https://example.com/q3.pdf', filename: 'q3.pdf' }],
          '{"type":"image"}',
        ]);
      } else {
        // Chat Completions takes text only from a tool: its text parts, else the SDK's placeholder
        // (never the image's data as text).
        const outputs = sent.messages.filter((m) => m.role === 'tool').map((m) => m.content);
        assert.deepEqual(outputs, ['[tool output omitted]', 'Sales rose 4%. See the chart.', '[tool output omitted]', '{"type":"image"}']);
      }
    });

    test('a user message’s text, file and image reach the model in the form its API takes', async () => {
      model.script({ text: 'Read it.' });
      const pdf = 'data:application/pdf;base64,JVBERi0x';
      await inPage(
        async ({ url, api, pdf }) => {
          const content = [{ type: 'input_text', text: 'Summarise' }, { type: 'input_file', file: pdf, filename: 'a.pdf' }, { type: 'input_image', image: 'https://example.com/a.png' }];
          await new lib.Runner({ baseUrl: url, api }).run(new lib.Agent({ name: 'A', model: 'm' }), [{ role: 'user', content }]);
        },
        { api, pdf },
      );
      const sent = model.requests.at(-1).body;
      if (api === 'responses') {
        assert.deepEqual(sent.input[0].content, [
          { type: 'input_text', text: 'Summarise' },
          { type: 'input_file', file_data: pdf, filename: 'a.pdf' },
          { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' },
        ]);
      } else {
        // (It left the file out, and the model answered without it.)
        assert.deepEqual(sent.messages.at(-1).content, [
          { type: 'text', text: 'Summarise' },
          { type: 'file', file: { file_data: pdf, filename: 'a.pdf' } },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
        ]);
      }
    });

    test('a run stopped while its tool runs saves the call and its output (the next turn knows the tool ran), not an answer; resumed from error.state, nothing is saved twice', async () => {
      model.script({ calls: [{ name: 'book', arguments: { table: 4 }, id: 'call_b' }] }, { text: 'Booked.' });
      const id = fresh('stopped-tool');
      const r = await inPage(
        async ({ url, api, id }) => {
          const controller = new AbortController();
          const booked = [];
          const book = async ({ table }) => {
            controller.abort(); // the user presses Stop while the booking is made
            await new Promise((ok) => setTimeout(ok, 50));
            booked.push(table);
            return 'booked';
          };
          const agent = new lib.Agent({ name: 'A', model: 'm', tools: [{ name: 'book', execute: book }] });
          const runner = new lib.Runner({ baseUrl: url, api });
          const session = new lib.IndexedDbSession(id);
          const error = await runner.run(agent, 'Book a table', { session, signal: controller.signal }).then(() => null, (e) => e);
          const kinds = async () => (await session.getItems()).map((i) => `${i.type ?? 'message'}:${i.role ?? ''}`);
          const stored = await kinds();
          const resumed = await runner.run(agent, error.state, { session });
          return { name: error.name, booked, stored, after: await kinds(), final: resumed.finalOutput };
        },
        { api, id },
      );
      assert.equal(r.name, 'AbortError');
      assert.deepEqual(r.booked, [4]);
      assert.deepEqual(r.stored, ['message:user', 'function_call:', 'function_call_result:']);
      assert.deepEqual(r.after, ['message:user', 'function_call:', 'function_call_result:', 'message:assistant']);
      assert.equal(r.final, 'Booked.');
    });

    test('a run stopped while a tool runs, another call of the response waiting for approval, rejects with AbortError (it resolved, paused); its error.state asks for the approval again, the tool not run twice', async () => {
      model.script(
        {
          calls: [
            { name: 'book', arguments: { table: 4 }, id: 'call_bk' },
            { name: 'pay', arguments: { amount: 5 }, id: 'call_py' },
          ],
        },
        { text: 'Booked and paid.' },
      );
      const r = await inPage(
        async ({ url, api }) => {
          const controller = new AbortController();
          const done = [];
          const tools = [
            { name: 'book', execute: async () => (controller.abort(), await new Promise((ok) => setTimeout(ok, 20)), done.push('book'), 'booked') },
            { name: 'pay', needsApproval: true, execute: () => (done.push('pay'), 'paid') },
          ];
          const agent = new lib.Agent({ name: 'A', model: 'm', tools });
          const runner = new lib.Runner({ baseUrl: url, api });
          const session = new lib.IndexedDbSession('stopped-waiting-' + Math.random());
          const outcome = await runner.run(agent, 'Book and pay', { session, signal: controller.signal }).then(
            (result) => ({ resolved: result.interruptions.map((i) => i.name) }),
            (e) => e,
          );
          const resumed = await runner.run(agent, outcome.state, { session });
          const waiting = resumed.interruptions.map((i) => i.name);
          resumed.state.approve(resumed.interruptions[0]);
          const final = await runner.run(agent, resumed.state, { session });
          return { name: outcome.name ?? outcome, waiting, done, final: final.finalOutput };
        },
        { api },
      );
      assert.deepEqual(r, { name: 'AbortError', waiting: ['pay'], done: ['book', 'pay'], final: 'Booked and paid.' });
    });

    test('one signal stopping two runs at once: each error carries its own run’s state (the second a new AbortError whose cause is the reason), and each resumes its own chat', async () => {
      model.script(
        { calls: [{ name: 'look', arguments: {}, id: 'call_la' }] },
        { calls: [{ name: 'look', arguments: {}, id: 'call_lb' }] },
        { text: 'First done.' },
        { text: 'Second done.' },
      );
      const r = await inPage(
        async ({ url, api }) => {
          const controller = new AbortController();
          let started = 0;
          let both;
          const bothStarted = new Promise((ok) => (both = ok));
          // The page's Stop-all: once both runs are in their tools.
          const look = async () => {
            if (++started === 2) both();
            await bothStarted;
            controller.abort();
            return 'looked';
          };
          const agent = new lib.Agent({ name: 'A', model: 'm', tools: [{ name: 'look', execute: look }] });
          const runner = new lib.Runner({ baseUrl: url, api });
          const first = new lib.IndexedDbSession('stop-all-1-' + Math.random());
          const second = new lib.IndexedDbSession('stop-all-2-' + Math.random());
          const errors = await Promise.all([
            runner.run(agent, 'first question', { session: first, signal: controller.signal }).catch((e) => e),
            runner.run(agent, 'second question', { session: second, signal: controller.signal }).catch((e) => e),
          ]);
          const reason = controller.signal.reason;
          const shapes = errors.map((e) => [e.name, e === reason || e.cause === reason]);
          const done = [];
          for (const [k, session] of [first, second].entries()) done.push((await runner.run(agent, errors[k].state, { session })).finalOutput);
          const firsts = async (s) => (await s.getItems()).filter((i) => i.role === 'user').map((i) => i.content);
          return { shapes, distinct: errors[0].state !== errors[1].state, done, users: [await firsts(first), await firsts(second)] };
        },
        { api },
      );
      assert.deepEqual(r.shapes, [
        ['AbortError', true],
        ['AbortError', true],
      ]);
      assert.equal(r.distinct, true);
      assert.deepEqual(r.done, ['First done.', 'Second done.']);
      assert.deepEqual(r.users, [['first question'], ['second question']]);
    });

    test('a run stopped while its last tool call is decided (an async needsApproval) starts no tool', async () => {
      model.script({ calls: [{ name: 'book', arguments: {}, id: 'call_c' }] });
      const r = await inPage(
        async ({ url, api }) => {
          const controller = new AbortController();
          let ran = false;
          const tool = {
            name: 'book',
            needsApproval: async () => (controller.abort(), await new Promise((ok) => setTimeout(ok, 20)), false),
            execute: () => ((ran = true), 'booked'),
          };
          const agent = new lib.Agent({ name: 'A', model: 'm', tools: [tool] });
          const error = await new lib.Runner({ baseUrl: url, api }).run(agent, 'Book', { signal: controller.signal }).then(() => null, (e) => e);
          return { name: error?.name, ran };
        },
        { api },
      );
      assert.deepEqual(r, { name: 'AbortError', ran: false });
    });

    test('an abort while an error body is being read is an AbortError, not a ModelError', async () => {
      model.script({ error: 500, bodyHangs: true });
      const r = await inPage(
        async ({ url, api }) => {
          const controller = new AbortController();
          const runner = new lib.Runner({ baseUrl: url, api, retries: 0 });
          const run = runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'q', { signal: controller.signal });
          setTimeout(() => controller.abort(), 150);
          return attempt(() => run);
        },
        { api },
      );
      assert.equal(r.ok, false);
      assert.equal(r.name, 'AbortError', r.message);
    });

    test('a stream cut in the middle is a ModelError and saves no partial answer', async () => {
      model.script({ truncate: true, text: 'This stream will be cut before it completes.' });
      const id = fresh('cut');
      const r = await inPage(
        async ({ url, api, id }) => {
          const session = new lib.IndexedDbSession(id);
          const run = new lib.Runner({ baseUrl: url, api, retries: 0 }).runStreamed(new lib.Agent({ name: 'A', model: 'm' }), 'q', { session });
          const res = await attempt(() => run.result);
          return { res, history: await session.getItems() };
        },
        { api, id },
      );
      assert.equal(r.res.name, 'ModelError');
      assert.match(r.res.message, /stream ended before the response was complete/);
      assert.deepEqual(r.history, [{ type: 'message', role: 'user', content: 'q' }]);
    });

    test('the SDK’s approval loop over a stream: the stream gives interruptions and state once the run ended', async () => {
      model.script({ calls: [{ name: 'send_email', arguments: { to: 'a@example.com' }, id: 'call_s' }] }, { text: 'Sent.' }, { text: 'A long answer left early.' });
      const r = await inPage(
        async ({ url, api, id }) => {
          const sent = [];
          const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [{ name: 'send_email', needsApproval: async () => true, execute: async ({ to }) => (sent.push(to), 'sent') }] });
          const runner = new lib.Runner({ baseUrl: url, api });
          const session = new lib.IndexedDbSession(id);
          let stream = await runner.run(agent, 'Email a', { session, stream: true });
          const before = stream.interruptions;
          // Each call that waits is said as it waits, as the SDK's stream says it.
          const requested = [];
          const said = (event) => {
            if (event.type === 'tool_approval_requested') requested.push([event.item.name, event.item.callId, event.agent.name]);
            // The SDK's stream event of it, after it.
            if (event.type === 'run_item_stream_event' && event.name === 'tool_approval_requested') requested.push(['sdk', event.item.type, event.item.callId, event.item.agent.name]);
          };
          for await (const event of stream) said(event);
          await stream.completed;
          const asked = [];
          while (stream.interruptions?.length) {
            for (const item of stream.interruptions) {
              asked.push(item.name);
              stream.state.approve(item);
            }
            stream = await runner.run(agent, stream.state, { session, stream: true });
            for await (const event of stream) said(event);
            await stream.completed;
          }
          // A stream left early has no interruptions either: the loop ends there too. (Left once
          // the answer streams: its request has reached the model server, so that it takes no
          // answer scripted for the next test.)
          const left = await runner.run(agent, 'Another', { stream: true });
          for await (const event of left) if (event.type === 'text_delta') break;
          await left.completed;
          return { before, requested, asked, sent, finalOutput: stream.finalOutput, lastAgent: stream.lastAgent?.name, newItems: stream.newItems?.length, leftInterruptions: left.interruptions };
        },
        { api, id: fresh('stream-approvals') },
      );
      assert.equal(r.before, undefined, 'nothing before the run ended');
      assert.deepEqual(r.requested, [['send_email', 'call_s', 'Mailer'], ['sdk', 'tool_approval_item', 'call_s', 'Mailer']], 'said once, by the stream that paused');
      assert.deepEqual(r.asked, ['send_email']);
      assert.deepEqual(r.sent, ['a@example.com']);
      assert.equal(r.finalOutput, 'Sent.');
      assert.equal(r.lastAgent, 'Mailer');
      assert.ok(r.newItems > 0);
      assert.deepEqual(r.leftInterruptions, []);
    });

    test('approvals: approve, approve after a reload with a new session object, reject; each call and output once', async () => {
      const id = fresh('approvals');
      model.script(
        { calls: [{ name: 'send_email', arguments: { to: 'a@example.com' }, id: 'call_a' }] },
        { text: 'Sent to a.' },
        { calls: [{ name: 'send_email', arguments: { to: 'b@example.com' }, id: 'call_b' }] },
        { text: 'Sent to b.' },
        { calls: [{ name: 'send_email', arguments: { to: 'c@example.com' }, id: 'call_c' }] },
        { text: 'Not sent to c.' },
      );
      const setup = `() => {
        window.sent = window.sent ?? [];
        return new lib.Agent({
          name: 'Mailer',
          model: 'm',
          tools: [{
            name: 'send_email',
            needsApproval: async (context, args) => args.to.endsWith('@example.com'),
            execute: async (args) => { window.sent.push(args.to); return 'sent'; },
          }],
        });
      }`;
      // Turn 1: interrupted, approved, resumed.
      const t1 = await inPage(
        async ({ url, api, id, setup }) => {
          const agent = eval(setup)();
          const runner = new lib.Runner({ baseUrl: url, api });
          const session = new lib.IndexedDbSession(id);
          const first = await runner.run(agent, 'Email a', { session });
          const pending = first.interruptions.map((i) => ({ name: i.name, callId: i.callId, arguments: i.arguments, type: i.type }));
          first.state.approve(first.interruptions[0]);
          const done = await runner.run(agent, first.state, { session });
          return { pending, finalOutput: first.finalOutput, resumed: done.finalOutput };
        },
        { api, id, setup },
      );
      assert.deepEqual(t1.pending, [{ name: 'send_email', callId: 'call_a', arguments: '{"to":"a@example.com"}', type: 'tool_approval_item' }]);
      assert.equal(t1.finalOutput, undefined);
      assert.equal(t1.resumed, 'Sent to a.');
      // Turn 2: interrupted; the state is kept as a string across a reload.
      const saved = await inPage(
        async ({ url, api, id, setup }) => {
          const agent = eval(setup)();
          const result = await new lib.Runner({ baseUrl: url, api }).run(agent, 'Email b', { session: new lib.IndexedDbSession(id) });
          return result.state.toString();
        },
        { api, id, setup },
      );
      await reload(page);
      const t2 = await inPage(
        async ({ url, api, id, setup, saved }) => {
          const agent = eval(setup)();
          const state = lib.RunState.fromString(agent, saved);
          const waiting = state.getInterruptions().map((i) => i.callId);
          state.approve(waiting[0]);
          const result = await new lib.Runner({ baseUrl: url, api }).run(agent, state, { session: new lib.IndexedDbSession(id) });
          return { waiting, finalOutput: result.finalOutput, sent: window.sent };
        },
        { api, id, setup, saved },
      );
      assert.deepEqual(t2.waiting, ['call_b']);
      assert.equal(t2.finalOutput, 'Sent to b.');
      assert.deepEqual(t2.sent, ['b@example.com'], 'after the reload only b was sent');
      // Turn 3: rejected.
      const t3 = await inPage(
        async ({ url, api, id, setup }) => {
          const agent = eval(setup)();
          const runner = new lib.Runner({ baseUrl: url, api });
          const session = new lib.IndexedDbSession(id);
          const first = await runner.run(agent, 'Email c', { session });
          first.state.reject(first.interruptions[0], 'The user said no.');
          // Resumed with another agent: refused before anything is sent or saved.
          const stored = (await session.getItems()).length;
          const other = await runner.run(new lib.Agent({ name: 'Other', model: 'm' }), first.state, { session }).then(() => 'resolved', (e) => `${e.name} ${e.code}: ${e.message}`);
          const storedAfter = (await session.getItems()).length;
          const done = await runner.run(agent, first.state, { session });
          return { other, unchanged: stored === storedAfter, finalOutput: done.finalOutput, sent: window.sent, history: await session.getItems() };
        },
        { api, id, setup },
      );
      assert.match(t3.other, /^RunnerError INVALID_RUN_STATE: this state belongs to agent "[^"]+", not "Other"/);
      assert.ok(t3.unchanged, 'nothing saved by the refused resume');
      assert.equal(t3.finalOutput, 'Not sent to c.');
      assert.deepEqual(t3.sent, ['b@example.com'], 'c was never sent');
      const calls = t3.history.filter((i) => i.type === 'function_call').map((i) => i.callId);
      const outputs = t3.history.filter((i) => i.type === 'function_call_result').map((i) => [i.callId, i.output.text]);
      assert.deepEqual(calls, ['call_a', 'call_b', 'call_c']);
      assert.deepEqual(outputs, [['call_a', 'sent'], ['call_b', 'sent'], ['call_c', 'The user said no.']]);
      assert.equal(t3.history.length, 12, 'three turns of user, call, output, answer');
      // The reply to the rejected call told the model why.
      const last = model.requests.at(-1).body;
      assert.match(JSON.stringify(last.messages ?? last.input), /The user said no\./);
    });
  });
}

describe('runner: awkward tool results and repeated messages', () => {
  test('a tool result JSON cannot hold is described to the model; a repeated question is still saved', async () => {
    model.script({ calls: [{ name: 'big', arguments: {} }] }, { text: 'ok' }, { text: 'yes again' });
    const r = await inPage(async ({ url }) => {
      const agent = new lib.Agent({ name: 'A', model: 'm', tools: [{ name: 'big', execute: () => 10n }] });
      const runner = new lib.Runner({ baseUrl: url });
      const session = new lib.MemorySession();
      const first = await runner.run(agent, 'yes', { session });
      // The callback passes the new input through; it equals an earlier message word for word.
      await runner.run(agent, 'yes', { session, sessionInputCallback: (history, newItems) => [...history, ...newItems] });
      return { first: first.finalOutput, items: await session.getItems() };
    });
    assert.equal(r.first, 'ok');
    const output = r.items.find((i) => i.type === 'function_call_result');
    assert.match(output.output.text, /The tool returned a bigint, which is not JSON/);
    const questions = r.items.filter((i) => i.role === 'user').map((i) => i.content);
    assert.deepEqual(questions, ['yes', 'yes'], 'the second "yes" was saved too');
  });
});

describe('runner: the context of a resumed run', () => {
  test('a run resumed from the state a run gave, without a context of its own, gets that run’s context (its tools, instructions and approval checks); one given a context uses it', async () => {
    model.script(
      { calls: [{ name: 'send_email', arguments: { to: 'ada' }, id: 'call_mail' }] },
      { text: 'Sent.' },
      { calls: [{ name: 'send_email', arguments: { to: 'bob' }, id: 'call_mail_2' }] },
      { text: 'Sent again.' },
    );
    const r = await inPage(async ({ url }) => {
      const seen = [];
      const agent = new lib.Agent({
        name: 'Mailer',
        model: 'm',
        instructions: (ctx) => (seen.push(`instructions ${ctx?.context?.userId ?? ctx?.userId}`), 'You send mail.'),
        tools: [
          {
            name: 'send_email',
            parameters: { type: 'object', properties: { to: { type: 'string' } } },
            needsApproval: true,
            execute: ({ to }, ctx) => (seen.push(`sent to ${to} from ${ctx?.userId}`), 'sent'),
          },
        ],
      });
      const runner = new lib.Runner({ baseUrl: url });
      const session = new lib.IndexedDbSession('ctx-' + Math.random());
      const first = await runner.run(agent, 'Email Ada', { session, context: { userId: 'u1' } });
      first.state.approve(first.interruptions[0]);
      // (Options the caller's object inherits stay options: the session among them.)
      const resumed = await runner.run(agent, first.state, Object.create({ session }));
      // A resumption that gives its own context uses it.
      const second = await runner.run(agent, 'Email Bob', { session, context: { userId: 'u1' } });
      second.state.approve(second.interruptions[0]);
      const own = await runner.run(agent, second.state, { session, context: { userId: 'u2' } });
      return { seen, outputs: [resumed.finalOutput, own.finalOutput], saved: (await session.getItems()).length };
    });
    assert.deepEqual(r.outputs, ['Sent.', 'Sent again.']);
    assert.equal(r.saved, 8, 'both turns saved: question, call, output, answer each');
    assert.ok(r.seen.includes('sent to ada from u1'), JSON.stringify(r.seen));
    assert.ok(r.seen.includes('sent to bob from u2'), JSON.stringify(r.seen));
    assert.ok(!r.seen.some((s) => /undefined/.test(s)), JSON.stringify(r.seen));
  });
});

describe('runner: resuming after a failure', () => {
  test('a run resumed from error.state after the chat went on is refused before its model call (nothing sent, no tool run); resumed before, it goes on', async () => {
    model.script({ error: 503, message: 'overloaded' }, { text: 'Second answer.' }, { error: 503, message: 'overloaded' }, { text: 'Retried answer.' });
    const r = await inPage(async ({ url }) => {
      const agent = new lib.Agent({ name: 'A', model: 'm' });
      const runner = new lib.Runner({ baseUrl: url, retries: 0 });
      const session = new lib.IndexedDbSession('resume-after-' + Math.random());
      const failure = await runner.run(agent, 'First question', { session }).catch((e) => e);
      // The user asks something else instead of retrying: the chat goes on.
      await runner.run(agent, 'Second question', { session });
      const requests = await fetch(`${url.replace(/\/v1$/, '')}/status`).then((r) => r.json());
      const refused = await runner.run(agent, failure.state, { session }).catch((e) => e);
      const after = await fetch(`${url.replace(/\/v1$/, '')}/status`).then((r) => r.json());
      // A failure retried at once goes on.
      const again = await runner.run(agent, 'Third question', { session }).catch((e) => e);
      const retried = await runner.run(agent, again.state, { session });
      return {
        refused: `${refused.name} ${refused.code}`,
        message: refused.message,
        sentMeanwhile: after.requests - requests.requests,
        retried: retried.finalOutput,
        history: (await session.getItems()).map((i) => i.content),
      };
    }, { url: model.url });
    assert.equal(r.refused, 'RunnerError INVALID_RUN_STATE');
    assert.match(r.message, /written to since this run stopped/);
    assert.equal(r.sentMeanwhile, 0, 'no model call was made');
    assert.equal(r.retried, 'Retried answer.');
    assert.deepEqual(r.history.map((c) => (typeof c === 'string' ? c : c[0].text)), ['First question', 'Second question', 'Second answer.', 'Third question', 'Retried answer.']);
  });

  test('a ModelError after an approved tool ran carries the state; resuming does not run the tool again', async () => {
    model.script(
      { calls: [{ name: 'charge_card', arguments: { amount: 5 }, id: 'call_pay' }] },
      { error: 503, message: 'overloaded' },
      { text: 'Paid.' },
    );
    const r = await inPage(async ({ url }) => {
      let charges = 0;
      const agent = new lib.Agent({
        name: 'Shop',
        model: 'm',
        tools: [{ name: 'charge_card', needsApproval: true, execute: () => `charged ${++charges}` }],
      });
      const runner = new lib.Runner({ baseUrl: url, retries: 0 });
      const session = new lib.IndexedDbSession('pay-' + Math.random());
      const first = await runner.run(agent, 'Pay 5', { session });
      first.state.approve(first.interruptions[0]);
      let failure;
      try {
        await runner.run(agent, first.state, { session });
      } catch (e) {
        failure = e;
      }
      const afterFailure = (await session.getItems()).map((i) => i.type ?? i.role);
      const done = await runner.run(agent, failure.state, { session });
      return {
        failure: { name: failure.name, status: failure.status, hasState: failure.state?.kind === 'agent-sessions.RunState' },
        afterFailure,
        finalOutput: done.finalOutput,
        charges,
        history: (await session.getItems()).map((i) => i.type === 'message' ? `${i.role}` : i.type),
      };
    });
    assert.deepEqual(r.failure, { name: 'ModelError', status: 503, hasState: true });
    assert.deepEqual(r.afterFailure, ['message', 'function_call', 'function_call_result'], 'the approved call and its output are kept');
    assert.equal(r.finalOutput, 'Paid.');
    assert.equal(r.charges, 1, 'the card was charged once');
    assert.deepEqual(r.history, ['user', 'function_call', 'function_call_result', 'assistant']);
  });
});

test('runner: a run that saved to a session, resumed without one (its state, or its string after a reload), is refused: no model call, no tool run; resumed with it, it goes on', async () => {
  model.script({ calls: [{ name: 'charge_card', arguments: { amount: 5 }, id: 'call_nosession' }] }, { text: 'Paid.' });
  const r = await inPage(async ({ url }) => {
    let charges = 0;
    const agent = new lib.Agent({ name: 'Shop', model: 'm', tools: [{ name: 'charge_card', needsApproval: true, execute: () => `charged ${++charges}` }] });
    const runner = new lib.Runner({ baseUrl: url, retries: 0 });
    const session = new lib.IndexedDbSession('no-session-' + Math.random());
    const first = await runner.run(agent, 'Pay 5', { session });
    first.state.approve(first.interruptions[0]);
    const status = () => fetch(`${url.replace(/\/v1$/, '')}/status`).then((r) => r.json());
    const before = await status();
    const outcome = (e) => `${e.name} ${e.code}`;
    const bare = await runner.run(agent, first.state).then(() => 'resolved', outcome);
    const restored = lib.RunState.fromString(agent, first.state.toString());
    const fromString = await runner.run(agent, restored).then(() => 'resolved', outcome);
    const after = await status();
    const done = await runner.run(agent, first.state, { session });
    // A run without a session resumes without one, as before.
    return { bare, fromString, sent: after.requests - before.requests, charges, final: done.finalOutput, stored: (await session.getItems()).length };
  }, { url: model.url });
  assert.deepEqual(r, { bare: 'RunnerError INVALID_RUN_STATE', fromString: 'RunnerError INVALID_RUN_STATE', sent: 0, charges: 1, final: 'Paid.', stored: 4 });
});

test('runner: the error.state of a resumption that ran its approved tool, then failed, is refused once the chat went on: no model call, no tool run, nothing saved', async () => {
  model.script(
    { calls: [{ name: 'charge_card', arguments: { amount: 5 }, id: 'call_gone_on' }] },
    { error: 503, message: 'overloaded' },
    { text: 'Something else, answered.' },
  );
  const r = await inPage(async ({ url }) => {
    let charges = 0;
    const agent = new lib.Agent({
      name: 'Shop',
      model: 'm',
      tools: [
        { name: 'charge_card', needsApproval: true, execute: () => `charged ${++charges}` },
        { name: 'refund', execute: () => 'refunded' },
      ],
    });
    const runner = new lib.Runner({ baseUrl: url, retries: 0 });
    const session = new lib.IndexedDbSession('gone-on-' + Math.random());
    const first = await runner.run(agent, 'Pay 5', { session });
    first.state.approve(first.interruptions[0]);
    const failure = await runner.run(agent, first.state, { session }).catch((e) => e);
    // The user asks something else instead of retrying.
    await runner.run(agent, 'Other question', { session });
    const status = () => fetch(`${url.replace(/\/v1$/, '')}/status`).then((r) => r.json());
    const before = await status();
    const stored = (await session.getItems()).length;
    const refused = await runner.run(agent, failure.state, { session }).catch((e) => e);
    const after = await status();
    return {
      refused: `${refused.name} ${refused.code}`,
      message: refused.message,
      sentMeanwhile: after.requests - before.requests,
      charges,
      storedAfter: (await session.getItems()).length - stored,
    };
  }, { url: model.url });
  assert.equal(r.refused, 'RunnerError INVALID_RUN_STATE', r.message);
  assert.match(r.message, /written to since this run stopped/);
  assert.deepEqual({ sentMeanwhile: r.sentMeanwhile, charges: r.charges, storedAfter: r.storedAfter }, { sentMeanwhile: 0, charges: 1, storedAfter: 0 });
});

describe('runner: server-side conversation state (Responses API)', () => {
  test('previousResponseId and conversationId send only what the server does not hold yet', async () => {
    model.script(
      { calls: [{ name: 'lookup', arguments: {}, id: 'call_p' }] },
      { text: 'answer one' },
      { calls: [{ name: 'lookup', arguments: {}, id: 'call_c' }] },
      { text: 'answer two' },
    );
    const r = await inPage(async ({ url }) => {
      const agent = new lib.Agent({ name: 'S', model: 'm', tools: [{ name: 'lookup', execute: () => 'looked up' }] });
      const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
      const a = await runner.run(agent, 'first question', { previousResponseId: 'resp_earlier' });
      const b = await runner.run(agent, 'second question', { conversationId: 'conv_1' });
      return { a: a.lastResponseId, b: b.lastResponseId };
    });
    const [p1, p2, c1, c2] = model.requests.map((r) => r.body);
    assert.equal(p1.previous_response_id, 'resp_earlier');
    assert.deepEqual(p1.input, [{ role: 'user', content: 'first question' }]);
    // The follow-up call chains on the response that asked for the tool and sends only its output.
    assert.equal(p2.previous_response_id, 'resp_1');
    assert.deepEqual(p2.input, [{ type: 'function_call_output', call_id: 'call_p', output: 'looked up', status: 'completed' }]);
    assert.equal(r.a, 'resp_2');
    assert.equal(c1.conversation, 'conv_1');
    assert.equal(c1.previous_response_id, undefined);
    assert.deepEqual(c1.input.map((i) => i.content), ['second question']);
    assert.equal(c2.conversation, 'conv_1');
    assert.equal(c2.previous_response_id, undefined);
    assert.deepEqual(c2.input, [{ type: 'function_call_output', call_id: 'call_c', output: 'looked up', status: 'completed' }]);
  });
});

describe('runner: approvals in a conversation the server keeps', () => {
  test('a run paused for approval in a conversation (or a chain of responses) goes on in it when resumed without naming it again, also from its string after a reload', async () => {
    model.script(
      { calls: [{ name: 'send_email', arguments: { to: 'ada' }, id: 'call_m' }] },
      { text: 'Sent.' },
      { calls: [{ name: 'send_email', arguments: { to: 'bob' }, id: 'call_n' }] },
      { text: 'Sent too.' },
    );
    const r = await inPage(async ({ url }) => {
      const sent = [];
      const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [{ name: 'send_email', needsApproval: () => true, execute: ({ to }) => (sent.push(to), 'sent') }] });
      const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
      // The SDK's approval loop: approve, then run the state again.
      const first = await runner.run(agent, 'Email Ada', { conversationId: 'conv_9' });
      first.state.approve(first.interruptions[0]);
      const done = await runner.run(agent, first.state);
      // A chain of responses, resumed from the state's string (a reload in between).
      const second = await runner.run(agent, 'Email Bob', { previousResponseId: 'resp_before' });
      const restored = await lib.RunState.fromString(agent, second.state.toString());
      restored.approve(restored.getInterruptions()[0]);
      const again = await runner.run(agent, restored);
      return { sent, done: done.finalOutput, again: again.finalOutput };
    });
    const [, resumed, , chained] = model.requests.map((q) => q.body);
    assert.deepEqual(r, { sent: ['ada', 'bob'], done: 'Sent.', again: 'Sent too.' });
    assert.equal(resumed.conversation, 'conv_9', 'the tool output goes to the conversation');
    assert.deepEqual(resumed.input, [{ type: 'function_call_output', call_id: 'call_m', output: 'sent', status: 'completed' }]);
    assert.equal(chained.previous_response_id, 'resp_3', 'chained on the response that asked');
    assert.deepEqual(chained.input, [{ type: 'function_call_output', call_id: 'call_n', output: 'sent', status: 'completed' }]);
  });
  test('a run stopped while a call is decided, in a conversation the server keeps, keeps the calls: resumed, it answers them there', async () => {
    model.script(
      { calls: [{ name: 'send_email', arguments: { to: 'ada' }, id: 'call_s' }, { name: 'transfer_to_Helper', arguments: {}, id: 'call_h' }] },
      { text: 'Sent.' },
      { text: 'Checked.' },
      { text: 'Checked again.' },
    );
    const r = await inPage(async ({ url }) => {
      const sent = [];
      const controller = new AbortController();
      const tool = {
        name: 'send_email',
        // The user presses Stop while the app asks whether this call needs a human.
        needsApproval: async () => (controller.signal.aborted ? false : (controller.abort(), true)),
        execute: ({ to }) => (sent.push(to), 'sent'),
      };
      const runner = new lib.Runner({ baseUrl: url, api: 'responses' });
      const helper = new lib.Agent({ name: 'Helper', model: 'm' });
      const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [tool], handoffs: [helper] });
      const stopped = await runner.run(agent, 'Email Ada', { conversationId: 'conv_s', signal: controller.signal }).then(() => null, (e) => e);
      const waiting = stopped.state.getInterruptions().map((i) => i.name);
      const resumed = await runner.run(agent, stopped.state);
      // Stopped while an output guardrail checks the answer: the server holds that answer, and
      // the resumed run gives it instead of asking the model to go on from it.
      const guard = new AbortController();
      const checker = new lib.Agent({
        name: 'Checker',
        model: 'm',
        outputGuardrails: [{ name: 'slow', execute: async () => (guard.signal.aborted || guard.abort(), { tripwireTriggered: false }) }],
      });
      const cut = await runner.run(checker, 'Check', { previousResponseId: 'resp_0', signal: guard.signal }).then(() => null, (e) => e);
      const given = await runner.run(checker, cut.state);
      return { name: stopped.name, waiting, sent, resumed: resumed.finalOutput, by: resumed.lastAgent.name, cut: cut.name, given: given.finalOutput };
    });
    assert.deepEqual(r, { name: 'AbortError', waiting: ['send_email'], sent: ['ada'], resumed: 'Sent.', by: 'Helper', cut: 'AbortError', given: 'Checked.' });
    const bodies = model.requests.map((q) => q.body);
    assert.equal(bodies.length, 3, 'the answer the server holds is not asked for again');
    assert.equal(bodies[1].conversation, 'conv_s');
    assert.deepEqual(bodies[1].input.map((i) => [i.type, i.call_id]), [['function_call_output', 'call_s'], ['function_call_output', 'call_h']]);
    assert.equal(bodies[1].input[0].output, 'sent');
  });
});

describe('runner: a paused state kept as JSON', () => {
  test('JSON.stringify of a paused state (kept in an object with the page’s other data) is its string: restored from it, the run goes on', async () => {
    model.script({ calls: [{ name: 'send_email', arguments: { to: 'ada' }, id: 'call_j' }] }, { text: 'Sent.' });
    const r = await inPage(async ({ url }) => {
      const sent = [];
      const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [{ name: 'send_email', needsApproval: true, execute: ({ to }) => (sent.push(to), 'sent') }] });
      const runner = new lib.Runner({ baseUrl: url });
      const session = new lib.MemorySession();
      const paused = await runner.run(agent, 'Email Ada', { session });
      const saved = JSON.stringify({ user: 'ann', pending: paused.state });
      const kept = JSON.parse(saved);
      const restored = lib.RunState.fromString(agent, JSON.stringify(kept.pending));
      restored.approve(restored.getInterruptions()[0]);
      const done = await runner.run(agent, restored, { session });
      return { same: JSON.stringify(paused.state) === paused.state.toString(), sent, final: done.finalOutput };
    });
    assert.deepEqual(r, { same: true, sent: ['ada'], final: 'Sent.' });
  });

  test('result.input and result.history are the SDK’s: the history the run read and its new input, then what it produced', async () => {
    model.script({ text: 'Paris.' }, { text: 'About 2 million.' });
    const r = await inPage(async ({ url }) => {
      const agent = new lib.Agent({ name: 'A', model: 'm' });
      const runner = new lib.Runner({ baseUrl: url });
      const session = new lib.MemorySession();
      await runner.run(agent, 'Capital of France?', { session });
      const second = await runner.run(agent, 'Its population?', { session });
      const text = (i) => (typeof i.content === 'string' ? i.content : i.content.map((p) => p.text).join(''));
      return { input: second.input.map(text), history: second.history.map(text), stored: (await session.getItems()).map(text) };
    });
    assert.deepEqual(r.input, ['Capital of France?', 'Paris.', 'Its population?']);
    assert.deepEqual(r.history, ['Capital of France?', 'Paris.', 'Its population?', 'About 2 million.']);
    assert.deepEqual(r.history, r.stored, 'the conversation, as the session holds it');
  });
});

describe('runner: arguments and custom sessions', () => {
  test('a session written in plain JS works, and bad arguments are RunnerErrors', async () => {
    model.script({ text: 'hello from the model' });
    const r = await inPage(async ({ url }) => {
      const store = [];
      const custom = {
        async getItems(limit) {
          return limit === undefined ? store.slice() : store.slice(-limit);
        },
        async addItems(items) {
          store.push(...items);
        },
      };
      const agent = new lib.Agent({ name: 'A', model: 'm' });
      const runner = new lib.Runner({ baseUrl: url });
      await runner.run(agent, 'hi', { session: custom });
      const tryNew = (f) => {
        try {
          f();
          return null;
        } catch (e) {
          return { name: e.name, code: e.code, message: e.message };
        }
      };
      return {
        store,
        noName: tryNew(() => new lib.Agent({ model: 'm' })),
        badTool: tryNew(() => new lib.Agent({ name: 'x', tools: [{ name: 't' }] })),
        badApi: tryNew(() => new lib.Runner({ baseUrl: url, api: 'soap' })),
        noUrl: tryNew(() => new lib.Runner({})),
        badInput: await attempt(() => runner.run(agent, 42)),
        sdkOption: await attempt(() => runner.run(agent, 'x', { toolErrorFormatter: () => 'failed' })),
        // What this runner does not implement is refused where it is given, not dropped: a tool
        // the app disabled would be offered and run, a guardrail on its arguments never run.
        sdkAgent: tryNew(() => new lib.Agent({ name: 'x', mcpServers: [{ name: 'files' }] })),
        sdkTool: tryNew(() => new lib.Agent({ name: 'x', tools: [{ name: 't', execute: () => 'ok', isEnabled: false }] })),
        sdkToolGuardrail: tryNew(() => new lib.Agent({ name: 'x', tools: [{ name: 't', execute: () => 'ok', inputGuardrails: [{ name: 'g', run: () => ({}) }] }] })),
        sdkHandoff: tryNew(() => new lib.Agent({ name: 'x', handoffs: [{ agent: new lib.Agent({ name: 'y' }), onHandoff: () => {} }] })),
        sdkRunner: tryNew(() => new lib.Runner({ baseUrl: url, toolErrorFormatter: () => 'failed' })),
        // What asks for nothing it does not do passes.
        sdkNothing: tryNew(() => new lib.Agent({ name: 'x', mcpServers: [], tools: [{ name: 't', execute: () => 'ok', isEnabled: true, outputGuardrails: [] }] })),
        // `null`, and the SDK's default reasoning-id policy (what this runner does), are taken:
        // the run goes on to its request.
        sdkDefaults: await attempt(() => new lib.Runner({ baseUrl: 'http://127.0.0.1:9', api: 'responses', retries: 0 }).run(agent, 'x', { callModelInputFilter: null, reasoningItemIdPolicy: 'preserve' })),
        // With a sessionInputCallback, the new items it returns are checked, not the input it
        // may rewrite.
        madeUnsendable: await (async () => {
          const session = new lib.MemorySession('made-unsendable');
          const sessionInputCallback = (history, items) => [...history, ...items, { role: 'user', content: [{ type: 'text', text: 'made' }] }];
          const out = await attempt(() => new lib.Runner({ baseUrl: url, api: 'responses' }).run(agent, 'hi', { session, sessionInputCallback }));
          return { ...out, saved: (await session.getItems()).length };
        })(),
        rewritten: await (async () => {
          let called = false;
          const sessionInputCallback = (history, items) => {
            called = true;
            return [...history, ...items.map((i) => ({ ...i, content: i.content.map((p) => ({ ...p, type: 'input_text' })) }))];
          };
          // (A server that is not there: the run ends at its request.)
          const nowhere = new lib.Runner({ baseUrl: 'http://127.0.0.1:9', api: 'responses', retries: 0 });
          const out = await attempt(() => nowhere.run(agent, [{ role: 'user', content: [{ type: 'text', text: 'What is 2+2?' }] }], { session: new lib.MemorySession(), sessionInputCallback }));
          return { called, code: out.code ?? null };
        })(),
        // An item the Responses API has no form for (a part of type "text"): left out of the
        // request, the model would answer without it; refused before anything is saved or sent.
        unsendable: await (async () => {
          const session = new lib.MemorySession('unsendable');
          const out = await attempt(() => new lib.Runner({ baseUrl: url, api: 'responses' }).run(agent, [{ role: 'user', content: [{ type: 'text', text: 'What is 2+2?' }] }], { session }));
          return { ...out, saved: (await session.getItems()).length };
        })(),
        misspeltSetting: await attempt(() => runner.run(agent, 'x', { sessionSettings: { limt: 3 } })),
        // A file by URL, which Chat Completions has no form for (its data or an uploaded
        // file's id it takes): refused the same way.
        unsendableChat: await (async () => {
          const session = new lib.MemorySession('unsendable-chat');
          const out = await attempt(() => new lib.Runner({ baseUrl: url, api: 'chat_completions' }).run(agent, [{ role: 'user', content: [{ type: 'input_file', file: 'https://files.test/report.pdf' }] }], { session }));
          return { ...out, saved: (await session.getItems()).length };
        })(),
        badSession: await attempt(() => runner.run(agent, 'x', { session: {} })),
        // A session whose reads throw (a revoked Proxy): the run rejects, it does not throw.
        revokedSession: await (() => {
          const { proxy, revoke } = Proxy.revocable({}, {});
          revoke();
          let run;
          try {
            run = runner.run(agent, 'x', { session: proxy });
          } catch (e) {
            return `threw ${e.name}`;
          }
          return run.then(() => 'resolved', (e) => `rejected ${e.name} ${e.code}`);
        })(),
        noModel: await attempt(() => runner.run(new lib.Agent({ name: 'NoModel' }), 'x')),
        badState: tryNew(() => lib.RunState.fromString(agent, '{"nope":1}')),
        nullState: tryNew(() => lib.RunState.fromString(agent, null)),
        notArraySession: await attempt(() => runner.run(agent, 'x', { session: { getItems: async () => ({ items: [] }), addItems: async () => {} } })),
        chatWithPrevious: await attempt(() => runner.run(agent, 'x', { previousResponseId: 'resp_1' })),
        // A setting that would be dropped without a word is refused.
        unknownSetting: tryNew(() => new lib.Agent({ name: 'x', modelSettings: { maxToken: 5 } })),
        // A key given as undefined (a spread of defaults) is no setting.
        undefinedSetting: tryNew(() => new lib.Agent({ name: 'x', modelSettings: { temperature: 0.5, timeoutMs: undefined } })),
        runnerGuardrails: tryNew(() => new lib.Runner({ baseUrl: url, inputGuardrails: [] })),
        // The Responses API refuses a conversation chained on a response as well.
        bothServerSides: await attempt(() => new lib.Runner({ baseUrl: url, api: 'responses' }).run(agent, 'x', { previousResponseId: 'resp_1', conversationId: 'conv_1' })),
        freedAgent: await attempt(() => {
          const freed = new lib.Agent({ name: 'Freed', model: 'm' });
          freed.free();
          return runner.run(freed, 'x');
        }),
        freedRunner: await attempt(() => {
          const freed = new lib.Runner({ baseUrl: url });
          freed.free();
          return freed.run(agent, 'x');
        }),
      };
    });
    assert.equal(r.store.length, 2);
    assert.deepEqual(r.store[1].content, [{ type: 'output_text', text: 'hello from the model' }]);
    assert.equal(r.noName.code, 'INVALID_AGENT');
    assert.equal(r.freedAgent.code, 'INVALID_AGENT', 'a freed agent is refused with its code');
    assert.equal(r.freedRunner.code, 'INVALID_RUNNER');
    assert.match(r.freedRunner.message, /freed/);
    assert.match(r.badTool.message, /agent.tools\[0\].execute must be a function/);
    assert.equal(r.badApi.code, 'INVALID_RUNNER');
    assert.match(r.noUrl.message, /baseUrl/);
    assert.equal(r.badInput.code, 'INVALID_INPUT');
    assert.equal(r.sdkOption.code, 'INVALID_RUN_OPTIONS');
    assert.match(r.sdkOption.message, /options\.toolErrorFormatter, an option of the SDK's run\(\), is not implemented by this runner: it would be ignored/);
    for (const key of ['sdkAgent', 'sdkTool', 'sdkToolGuardrail', 'sdkHandoff']) assert.equal(r[key]?.code, 'INVALID_AGENT', key);
    assert.match(r.sdkAgent.message, /^agent\.mcpServers, an option of the SDK's Agent, is not implemented by this runner/);
    assert.match(r.sdkTool.message, /^agent\.tools\[0\]\.isEnabled, an option of the SDK's tool\(\), is not implemented/);
    assert.match(r.sdkToolGuardrail.message, /inputGuardrails, an option of the SDK's tool\(\)/);
    assert.match(r.sdkHandoff.message, /^agent\.handoffs\[0\]\.onHandoff, an option of the SDK's handoff\(\)/);
    assert.equal(r.sdkRunner.code, 'INVALID_RUNNER');
    assert.match(r.sdkRunner.message, /^runner\.toolErrorFormatter, an option of the SDK's Runner/);
    assert.equal(r.sdkNothing, null);
    // (It ends at its request: no server is there.)
    assert.equal(r.sdkDefaults.name, 'ModelError', JSON.stringify(r.sdkDefaults));
    assert.equal(r.madeUnsendable.code, 'INVALID_INPUT');
    assert.match(r.madeUnsendable.message, /^the new item 1 sessionInputCallback returned cannot be sent to the Responses API \(a user message part of type "text"\): nothing was saved or sent$/);
    assert.equal(r.madeUnsendable.saved, 0);
    assert.equal(r.rewritten.called, true, 'not refused for the part the callback rewrites');
    assert.notEqual(r.rewritten.code, 'INVALID_INPUT');
    assert.equal(r.unsendable.code, 'INVALID_INPUT');
    assert.match(r.unsendable.message, /^input\[0\] cannot be sent to the Responses API \(a user message part of type "text"\): nothing was saved or sent$/);
    assert.equal(r.unsendable.saved, 0);
    assert.equal(r.misspeltSetting.code, 'INVALID_RUN_OPTIONS');
    assert.match(r.misspeltSetting.message, /options\.sessionSettings\.limt is not an option \(there are limit, turns\)/);
    assert.equal(r.unsendableChat.code, 'INVALID_INPUT');
    assert.match(r.unsendableChat.message, /^input\[0\] cannot be sent to the Chat Completions API \(an input_file by URL, which Chat Completions cannot take/);
    assert.equal(r.unsendableChat.saved, 0);
    assert.match(r.badSession.message, /getItems/);
    assert.match(r.revokedSession, /^rejected /);
    assert.match(r.noModel.message, /has no model/);
    assert.equal(r.badState.code, 'INVALID_RUN_STATE');
    assert.equal(r.nullState.code, 'INVALID_RUN_STATE');
    assert.match(r.nullState.message, /needs the string that state.toString\(\) gave, got null/);
    assert.equal(r.notArraySession.code, 'INVALID_SESSION');
    assert.match(r.notArraySession.message, /getItems\(\) must resolve to an array/);
    assert.equal(r.chatWithPrevious.code, 'INVALID_RUN_OPTIONS');
    assert.match(r.chatWithPrevious.message, /need a runner with api: "responses"/);
    assert.equal(r.unknownSetting.code, 'INVALID_AGENT');
    assert.match(r.unknownSetting.message, /agent\.modelSettings\.maxToken is not a setting this runner takes .*providerData/);
    assert.equal(r.undefinedSetting, null);
    assert.equal(r.runnerGuardrails.code, 'INVALID_RUNNER');
    assert.match(r.runnerGuardrails.message, /runner\.inputGuardrails is not taken by this Runner/);
    assert.equal(r.bothServerSides.code, 'INVALID_RUN_OPTIONS');
    assert.match(r.bothServerSides.message, /conversationId and previousResponseId cannot be used together/);
    assert.equal(model.requests.length, 1, 'only the first run reached the model');
    for (const e of [r.noName, r.badTool, r.badApi, r.noUrl, r.badInput, r.badSession, r.noModel, r.badState, r.nullState, r.notArraySession, r.chatWithPrevious, r.bothServerSides]) {
      assert.equal(e.name, 'RunnerError');
    }
  });
});

describe('runner: saves through history transactions', () => {
  test('a tab that writes in the middle of a run makes the run fail, and its write stays as it was', async () => {
    model.script({ calls: [{ name: 'slow', arguments: {} }] }, { text: 'done' });
    const id = fresh('midrun');
    const r = await inPage(
      async ({ url, id }) => {
        const session = new lib.IndexedDbSession(id);
        const agent = new lib.Agent({
          name: 'A',
          model: 'm',
          tools: [
            {
              name: 'slow',
              // While the tool runs, another tab (another session object) writes a turn.
              execute: async () => {
                await new lib.IndexedDbSession(id).addItems([{ role: 'user', content: 'from the other tab' }]);
                return 'ok';
              },
            },
          ],
        });
        const res = await attempt(() => new lib.Runner({ baseUrl: url }).run(agent, 'start', { session }));
        return { res, history: await new lib.IndexedDbSession(id).getItems() };
      },
      { id },
    );
    assert.equal(r.res.name, 'SessionError');
    assert.equal(r.res.code, 'SUFFIX_MISMATCH');
    assert.deepEqual(r.history, [
      { type: 'message', role: 'user', content: 'start' },
      { role: 'user', content: 'from the other tab' },
    ]);
  });

  test('a save that reached the session but failed on the way back is applied once when the run is resumed', async () => {
    model.script({ calls: [{ name: 'lookup', arguments: {} }] }, { text: 'answer' });
    const id = fresh('resume-save');
    const r = await inPage(
      async ({ url, id }) => {
        const inner = new lib.IndexedDbSession(id);
        // The second save (the tool call, its output and the answer) is written, then its reply
        // is lost, as when a tab is suspended: the run fails with the state where it stopped.
        let calls = 0;
        const session = {
          getItems: (n) => inner.getItems(n),
          addItems: (items) => inner.addItems(items),
          applyHistoryTransaction: async (args) => {
            await inner.applyHistoryTransaction(args);
            if (++calls === 2) throw new Error('the reply was lost');
          },
        };
        const agent = new lib.Agent({ name: 'A', model: 'm', tools: [{ name: 'lookup', execute: () => 'found' }] });
        const runner = new lib.Runner({ baseUrl: url });
        let failed;
        try {
          await runner.run(agent, 'q', { session });
        } catch (e) {
          failed = e;
        }
        // After a reload, from the state's string, with a new session object.
        const state = lib.RunState.fromString(agent, failed.state.toString());
        const resumed = await runner.run(agent, state, { session: new lib.IndexedDbSession(id) });
        return { message: failed.message, finalOutput: resumed.finalOutput, history: await inner.getItems(), calls };
      },
      { id },
    );
    assert.equal(r.message, 'the reply was lost');
    assert.equal(r.finalOutput, 'answer');
    assert.deepEqual(
      r.history.map((i) => i.type ?? i.role),
      ['message', 'function_call', 'function_call_result', 'message'],
      'each item once',
    );
    assert.equal(model.requests.length, 2, 'the model was not asked again');
  });
});

describe('HTTP', () => {
  test('a header HTTP cannot carry is refused when the runner is made, before anything is sent', async () => {
    const r = await inPage(async ({ url }) => {
      const made = (options) => attempt(() => new lib.Runner({ baseUrl: url, ...options }));
      return [
        await made({ headers: { 'bad name': 'x' } }),
        await made({ headers: { 'x-note': 'one\r\nInjected: yes' } }),
        await made({ apiKey: 'sk-with-an-em-dash—here' }),
        await made({ headers: { 'x-note': 'café' }, apiKey: 'sk-plain' }),
      ];
    });
    for (const refused of r.slice(0, 3)) {
      assert.equal(refused.ok, false);
      assert.equal(refused.code, 'INVALID_RUNNER', refused.message);
    }
    assert.match(r[0].message, /runner\.headers\["bad name"\]: the name is not an HTTP header name/);
    assert.match(r[1].message, /line break/);
    assert.match(r[2].message, /runner\.apiKey holds a character past U\+00FF/);
    assert.equal(r[3].ok, true, 'Latin-1 values are fine');
    assert.equal(model.requests.length, 0);
  });

  test('a server that sends nothing for timeoutMs, before its answer or in the middle of its stream, fails the call; the question is kept and the session is free for the next run', async () => {
    model.script({ hang: true }, { text: 'One piece, then a pause longer than the runner waits.', delayMs: 3000 }, { text: 'fine' }, { error: 500, bodyHangs: true }, { error: 503, bodyHangs: true }, { error: 500, bodyHangs: true });
    const hungBefore = model.state.hung;
    const id = fresh('stalled');
    const r = await inPage(
      async ({ url, id }) => {
        const session = new lib.IndexedDbSession(id);
        const agent = new lib.Agent({ name: 'A', model: 'm' });
        const runner = new lib.Runner({ baseUrl: url, timeoutMs: 400, retries: 0 });
        const silent = await attempt(() => runner.run(agent, 'first', { session }));
        const stream = runner.runStreamed(agent, 'second', { session });
        const deltas = [];
        let cut = null;
        try {
          for await (const e of stream) if (e.type === 'text_delta') deltas.push(e.delta);
        } catch (e) {
          cut = { name: e.name, status: e.status, message: e.message };
        }
        const kept = (await session.getItems()).map((i) => i.content);
        const next = await runner.run(agent, 'third', { session });
        // An error answer whose body stalls: given up on too, and one retried after such an
        // answer closes it before it tries again.
        const stalledBody = await attempt(() => runner.run(agent, 'fourth', { session }));
        const retrying = new lib.Runner({ baseUrl: url, timeoutMs: 400, retries: 1 });
        const stalledTwice = await attempt(() => retrying.run(agent, 'fifth', { session }));
        const refused = await attempt(async () => new lib.Runner({ baseUrl: url, timeoutMs: 0 }));
        const unset = await attempt(async () => new lib.Runner({ baseUrl: url, timeoutMs: null }));
        return { silent, deltas: deltas.length, cut, kept, next: next.finalOutput, stalledBody, stalledTwice, refused, unset: unset.ok };
      },
      { id },
    );
    assert.equal(r.silent.name, 'ModelError');
    assert.equal(r.silent.status, 0);
    assert.match(r.silent.message, /the model sent nothing for 400 ms after the request, no answer: the runner's timeoutMs/);
    assert.ok(r.deltas >= 1, 'the stream had begun');
    assert.equal(r.cut.name, 'ModelError');
    assert.match(r.cut.message, /sent nothing for 400 ms in its stream/);
    assert.deepEqual(r.kept, ['first', 'second'], 'each question kept, no half answer');
    assert.equal(r.next, 'fine');
    assert.equal(r.stalledBody.status, 500);
    assert.equal(r.stalledTwice.status, 500);
    assert.equal(model.requests.at(-1).hung, hungBefore, 'the attempt given up on was closed before the retry');
    // The connections given up on are closed, not held until the server lets go (a browser
    // keeps six per host).
    for (let i = 0; i < 50 && model.state.hung > hungBefore; i++) await new Promise((ok) => setTimeout(ok, 20));
    assert.equal(model.state.hung, hungBefore, 'no connection left open');
    assert.equal(r.refused.code, 'INVALID_RUNNER');
    assert.match(r.refused.message, /runner\.timeoutMs must be a whole number of milliseconds/);
    assert.equal(r.unset, true, 'null is the default, as for the other options');
  });

  test('the caller header wins over the default content type, and the request is one POST of JSON', async () => {
    model.script({ text: 'ok' });
    await inPage(async ({ url }) => {
      const runner = new lib.Runner({ baseUrl: url, headers: { 'Content-Type': 'application/json; charset=utf-8' } });
      await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'q');
    });
    assert.equal(model.requests.length, 1);
    assert.equal(model.requests[0].method, 'POST');
    assert.equal(model.requests[0].headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(model.requests[0].body.model, 'm');
  });

  test("the caller's fetch gets (url, init) as its type says, and must resolve to a Response", async () => {
    const r = await inPage(async () => {
      const calls = [];
      const fetch = async (input, init) => {
        calls.push({
          input,
          method: init.method,
          type: new Headers(init.headers).get('content-type'),
          key: new Headers(init.headers).get('authorization'),
          model: JSON.parse(init.body).model,
        });
        return { status: 200, text: async () => '{}' };
      };
      const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1/', apiKey: 'sk-1', fetch, retries: 0 });
      const failed = await attempt(() => runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'q'));
      return { calls, failed };
    });
    assert.deepEqual(r.calls, [
      { input: 'http://model.invalid/v1/chat/completions', method: 'POST', type: 'application/json', key: 'Bearer sk-1', model: 'm' },
    ]);
    assert.equal(r.failed.name, 'ModelError');
    assert.match(r.failed.message, /fetch resolved to .*not a Response/);
  });

  test('an abort with a reason of its own while the body is read rejects with that reason', async () => {
    for (const stream of [false, true]) {
      model.reset();
      // Streamed: the answer's chunks come 400 ms apart; whole: an error body that never ends.
      model.script(stream ? { text: 'a long answer in slow pieces', delayMs: 400 } : { error: 500, bodyHangs: true }, { text: 'fine' });
      const r = await inPage(
        async ({ url, stream }) => {
          const controller = new AbortController();
          const runner = new lib.Runner({ baseUrl: url, retries: 0 });
          const agent = new lib.Agent({ name: 'A', model: 'm' });
          const run = stream ? runner.runStreamed(agent, 'q', { signal: controller.signal }).result : runner.run(agent, 'q', { signal: controller.signal });
          setTimeout(() => controller.abort('stopped by the user'), 150);
          try {
            await run;
            return { resolved: true };
          } catch (e) {
            return { reason: e, afterwards: (await new lib.Runner({ baseUrl: url }).run(agent, 'again')).finalOutput };
          }
        },
        { stream },
      );
      assert.equal(r.reason, 'stopped by the user', `stream: ${stream}`);
      assert.equal(r.afterwards, 'fine', 'the page goes on working');
    }
  });
});

describe('runner: answers that are not whole', () => {
  /** A Runner whose `fetch` answers each request with the next of `bodies` (objects are JSON,
   * strings are an event stream). */
  const scripted = `
    window.scriptedRunner = (bodies, api = 'responses', options = {}) => {
      const requests = [];
      const fetch = async (url, init) => {
        requests.push(JSON.parse(init.body));
        const body = bodies.shift();
        return typeof body === 'string'
          ? new Response(body, { headers: { 'content-type': 'text/event-stream' } })
          : new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
      };
      return { runner: new lib.Runner({ baseUrl: 'http://model.invalid/v1', api, fetch, ...options }), requests };
    };
    // A Chat Completions tool loop answered by the stream \`calls\` (a weather call), then 'Cold.', then
    // a next turn, whole, from what the session stored: the assistant message with the call as
    // each later request sent it, and what the session holds.
    window.chatToolLoop = async (calls, id) => {
      const chunk = (delta, finish = null) => \`data: \${JSON.stringify({ id: 'c9', choices: [{ index: 0, delta, finish_reason: finish }] })}\\n\\n\`;
      const answer = \`\${chunk({ content: 'Cold.' })}\${chunk({}, 'stop')}data: [DONE]\\n\\n\`;
      const whole = { id: 'c10', choices: [{ message: { role: 'assistant', content: 'Still cold.' }, finish_reason: 'stop' }] };
      const weather = { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, execute: async ({ city }) => \`\${city}: -3C\` };
      const agent = new lib.Agent({ name: 'A', model: 'm', tools: [weather] });
      const session = new lib.IndexedDbSession(id);
      const { runner, requests } = scriptedRunner([calls, answer, whole], 'chat_completions');
      const stream = await runner.run(agent, 'Weather in Oslo?', { session, stream: true });
      for await (const _ of stream);
      await stream.completed;
      const again = await runner.run(agent, 'And now?', { session });
      const assistantOf = (request) => request.messages.find((m) => m.tool_calls);
      return { finalOutput: stream.finalOutput, again: again.finalOutput, sent: [assistantOf(requests[1]), assistantOf(requests[2])], items: await session.getItems() };
    };`;

  test('a Responses answer that stopped short (incomplete) is an error, not a final answer, whole as streamed', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const usage = { input_tokens: 30, output_tokens: 200, total_tokens: 230 };
        const cut = { id: 'resp_1', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'The bridge is in San Fr' }] }], usage };
        const streamed = `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', delta: 'The bridge is in San Fr' })}\n\nevent: response.incomplete\ndata: ${JSON.stringify({ type: 'response.incomplete', response: cut })}\n\n`;
        const { runner } = scriptedRunner([cut, streamed]);
        const out = [];
        for (const [n, stream] of [[1, false], [2, true]]) {
          const session = new lib.IndexedDbSession(`${id}-${n}`);
          let error;
          try {
            const agent = new lib.Agent({ name: 'A', model: 'm' });
            await (stream ? runner.runStreamed(agent, 'Where is the bridge?', { session }).result : runner.run(agent, 'Where is the bridge?', { session }));
          } catch (e) {
            error = { name: e.name, code: e.code, message: e.message };
          }
          out.push({ error, saved: (await session.getItems()).map((i) => i.role), usage: await session.getSessionUsage() });
        }
        return out;
      },
      { id: fresh('incomplete'), scripted },
    );
    assert.equal(r.length, 2);
    for (const { error, saved, usage } of r) {
      assert.equal(error?.name, 'ModelError');
      assert.equal(error.code, 'MODEL_ERROR');
      assert.match(error.message, /max_output_tokens/);
      assert.deepEqual(saved, ['user'], 'only the question is kept');
      // The tokens it spent before it stopped are the turn's usage.
      assert.deepEqual([usage.requests, usage.inputTokens, usage.outputTokens, usage.totalTokens], [1, 30, 200, 230]);
    }
  });

  test('a failure a server reports inside a 200 answer is retried by its code while no text was streamed; its code reaches the caller; a body that is no stream says what it is', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const event = (e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
        const message = (text) => ({ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });
        const answer = (text) => ({ id: 'resp_2', status: 'completed', output: [message(text)], usage: { input_tokens: 30, output_tokens: 5, total_tokens: 35 } });
        const stream = (text) => event({ type: 'response.output_text.delta', delta: text }) + event({ type: 'response.completed', response: answer(text) });
        const agent = new lib.Agent({ name: 'A', model: 'm' });
        const failure = (e) => ({ name: e.name, status: e.status, serverCode: e.serverCode, message: e.message });
        const streamed = async (runner, session) => {
          const run = runner.runStreamed(agent, 'Hi', { session });
          const deltas = [];
          try {
            for await (const e of run) if (e.type === 'text_delta') deltas.push(e.delta);
            return { deltas, final: (await run.result).finalOutput };
          } catch (e) {
            return { deltas, error: failure(e) };
          }
        };
        const out = {};
        // A rate limit told by the stream's first event: asked again, and answered.
        let s = scriptedRunner([event({ type: 'error', code: 'rate_limit_exceeded', message: 'Rate limit reached' }), stream('Hello')]);
        out.rateLimited = { ...(await streamed(s.runner)), requests: s.requests.length };
        // A failed response (a server error), whose cost is counted with the answer's.
        const failed = { id: 'resp_1', status: 'failed', error: { code: 'server_error', message: 'The server had an error' }, output: [], usage: { input_tokens: 30, output_tokens: 0, total_tokens: 30 } };
        s = scriptedRunner([event({ type: 'response.failed', response: failed }), answer('Fine')]);
        const session = new lib.IndexedDbSession(id);
        out.serverError = { ...(await streamed(s.runner, session)), requests: s.requests.length, usage: await session.getSessionUsage() };
        // The same retries as an HTTP answer's: with one, two rate limits fail the run, the
        // session counting what both cost.
        const limited = { id: 'resp_3', status: 'failed', error: { code: 'rate_limit_exceeded', message: 'Slow down' }, output: [], usage: { input_tokens: 7, output_tokens: 0, total_tokens: 7 } };
        s = scriptedRunner([event({ type: 'response.failed', response: limited }), event({ type: 'response.failed', response: limited }), answer('never')], 'responses', { retries: 1 });
        const spent = new lib.IndexedDbSession(id + '-spent');
        out.budget = { ...(await streamed(s.runner, spent)), requests: s.requests.length, usage: await spent.getSessionUsage() };
        // After text was shown: not asked again (the page would show it twice).
        s = scriptedRunner([event({ type: 'response.output_text.delta', delta: 'Hal' }) + event({ type: 'error', code: 'server_error', message: 'broke' })]);
        out.afterText = { ...(await streamed(s.runner)), requests: s.requests.length };
        // A code that fails again (no quota left), in a 200 error body: not asked again.
        s = scriptedRunner([{ error: { code: 'insufficient_quota', message: 'You exceeded your current quota' } }, answer('never')]);
        out.quota = { error: await s.runner.run(agent, 'Hi').then(() => null, failure), requests: s.requests.length };
        // The code of an HTTP error's body.
        const http = new lib.Runner({ baseUrl: 'http://model.invalid/v1', retries: 0, fetch: async () => new Response(JSON.stringify({ error: { message: 'No quota', type: 'insufficient_quota', code: 'insufficient_quota' } }), { status: 429 }) });
        out.http = await http.run(agent, 'Hi').then(() => null, failure);
        // A wrong baseUrl's web page, answered 200.
        const page = new lib.Runner({ baseUrl: 'http://model.invalid/v1', retries: 0, fetch: async () => new Response('<!doctype html><title>My App</title>', { headers: { 'content-type': 'text/html' } }) });
        out.pageStreamed = (await streamed(page)).error;
        out.pageWhole = await page.run(agent, 'Hi').then(() => null, failure);
        return out;
      },
      { id: fresh('in-answer'), scripted },
    );
    assert.deepEqual(r.rateLimited, { deltas: ['Hello'], final: 'Hello', requests: 2 });
    assert.equal(r.serverError.final, 'Fine');
    assert.deepEqual(r.serverError.deltas, ['Fine']);
    assert.equal(r.serverError.requests, 2);
    assert.deepEqual([r.serverError.usage.inputTokens, r.serverError.usage.outputTokens, r.serverError.usage.totalTokens], [60, 5, 65]);
    assert.equal(r.budget.requests, 2);
    assert.equal(r.budget.error.serverCode, 'rate_limit_exceeded');
    assert.match(r.budget.error.message, /Slow down/);
    assert.deepEqual([r.budget.usage.requests, r.budget.usage.inputTokens], [2, 14]);
    assert.deepEqual(r.afterText.deltas, ['Hal']);
    assert.equal(r.afterText.requests, 1);
    assert.deepEqual({ ...r.afterText.error, message: undefined }, { name: 'ModelError', status: 200, serverCode: 'server_error', message: undefined });
    assert.equal(r.quota.requests, 1);
    assert.equal(r.quota.error.serverCode, 'insufficient_quota');
    assert.match(r.quota.error.message, /You exceeded your current quota/);
    assert.deepEqual({ ...r.http, message: undefined }, { name: 'ModelError', status: 429, serverCode: 'insufficient_quota', message: undefined });
    assert.match(r.pageStreamed.message, /no event stream \(content-type text\/html\): <!doctype html><title>My App<\/title>/);
    assert.equal(r.pageStreamed.serverCode, undefined);
    assert.match(r.pageWhole.message, /malformed JSON in the response .*: <!doctype html><title>My App<\/title>/);
  });

  test('a Chat Completions answer cut at the token limit is an error too, whole and streamed', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const usage = { prompt_tokens: 12, completion_tokens: 50, total_tokens: 62 };
        const whole = { id: 'c1', choices: [{ index: 0, finish_reason: 'length', message: { role: 'assistant', content: 'The bridge is in San Fr' } }], usage };
        const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c2', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        // (The usage comes in a chunk of its own after the one that says the answer was cut.)
        const streamed = chunk({ content: 'The bridge is in San Fr' }) + chunk({}, 'length') + `data: ${JSON.stringify({ id: 'c2', choices: [], usage })}\n\n` + 'data: [DONE]\n\n';
        const { runner } = scriptedRunner([whole, streamed], 'chat_completions');
        const agent = new lib.Agent({ name: 'A', model: 'm' });
        const errors = [];
        for (const [n, stream] of [[1, false], [2, true]]) {
          const session = new lib.IndexedDbSession(`${id}-${n}`);
          try {
            const result = await (stream ? runner.runStreamed(agent, 'Where is the bridge?', { session }).result : runner.run(agent, 'Where is the bridge?', { session }));
            errors.push({ answered: result.finalOutput });
          } catch (e) {
            const spent = await session.getSessionUsage();
            errors.push({ name: e.name, code: e.code, message: e.message, saved: (await session.getItems()).map((i) => i.role), spent: [spent.requests, spent.inputTokens, spent.outputTokens, spent.totalTokens] });
          }
        }
        return errors;
      },
      { id: fresh('length'), scripted },
    );
    for (const e of r) {
      assert.equal(e.name, 'ModelError', JSON.stringify(e));
      assert.equal(e.code, 'MODEL_ERROR');
      assert.match(e.message, /stopped short \(finish_reason "length"\)/);
      assert.deepEqual(e.saved, ['user'], 'only the question is kept');
      assert.deepEqual(e.spent, [1, 12, 50, 62], 'the tokens it spent are the turn’s usage');
    }
    assert.equal(r.length, 2);
  });

  test('a Responses answer of reasoning only is not an answer: the model is asked again', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const thinking = { id: 'resp_1', status: 'completed', output: [{ type: 'reasoning', id: 'rs_1', summary: [] }] };
        const answer = { id: 'resp_2', status: 'completed', output: [{ type: 'message', id: 'msg_2', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'In San Francisco.', annotations: [] }] }] };
        const { runner, requests } = scriptedRunner([thinking, answer]);
        const session = new lib.IndexedDbSession(id);
        const result = await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'Where is the bridge?', { session });
        return { finalOutput: result.finalOutput, calls: requests.length, saved: (await session.getItems()).map((i) => i.type ?? i.role) };
      },
      { id: fresh('reasoning-only'), scripted },
    );
    assert.equal(r.finalOutput, 'In San Francisco.');
    assert.equal(r.calls, 2);
    assert.deepEqual(r.saved, ['message', 'reasoning', 'message']);
  });

  test('an answer message with no text (no part at all, an image only, empty refusals) is not an answer either: the model is asked again, as the SDK asks it; an empty text part is an empty answer', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const message = (n, content) => ({ id: `resp_${n}`, status: 'completed', output: [{ type: 'message', id: `msg_${n}`, role: 'assistant', status: 'completed', content }] });
        const out = {};
        for (const [kind, content] of Object.entries({ none: [], image: [{ type: 'output_image', image_url: 'data:,' }], refusal: [{ type: 'refusal', refusal: '' }], empty: [{ type: 'output_text', text: '', annotations: [] }] })) {
          const { runner, requests } = scriptedRunner([message(1, content), message(2, [{ type: 'output_text', text: 'Here.', annotations: [] }])]);
          const session = new lib.IndexedDbSession(`${id}-${kind}`);
          const result = await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'Hello?', { session });
          out[kind] = [result.finalOutput, requests.length, (await session.getItems()).length];
        }
        return out;
      },
      { id: fresh('textless'), scripted },
    );
    for (const kind of ['none', 'image', 'refusal']) assert.deepEqual(r[kind], ['Here.', 2, 3], kind);
    assert.deepEqual(r.empty, ['', 1, 2]);
  });

  test('under stop_on_first_tool, a refusal and no call fails with a ModelRefusalError; a call beside a refusal ends the run with the tool’s output', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const refusal = { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'refusal', refusal: 'No.' }] };
        const call = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'look', arguments: '{}', status: 'completed' };
        const look = { name: 'look', parameters: { type: 'object', properties: {} }, execute: async () => 'found it' };
        const agent = new lib.Agent({ name: 'A', model: 'm', tools: [look], toolUseBehavior: 'stop_on_first_tool' });
        const alone = scriptedRunner([{ id: 'resp_1', status: 'completed', output: [refusal] }]);
        const refused = await alone.runner.run(agent, 'q', { session: new lib.IndexedDbSession(`${id}-alone`) }).then((x) => x.finalOutput, (e) => e.name);
        const beside = scriptedRunner([{ id: 'resp_1', status: 'completed', output: [refusal, call] }]);
        const answered = await beside.runner.run(agent, 'q', { session: new lib.IndexedDbSession(`${id}-beside`) }).then((x) => x.finalOutput, (e) => e.name);
        return { refused, answered };
      },
      { id: fresh('stop-first-refusal'), scripted },
    );
    assert.deepEqual(r, { refused: 'ModelRefusalError', answered: 'found it' });
  });

  test('a resumed run keeps the maxTurns it started with, unless the resuming call gives one', async () => {
    const r = await inPage(
      async ({ id }) => {
        // A model that calls the tool again and again; only the first call needs approval.
        const run = async (resumeOptions) => {
          let calls = 0;
          const fetch = async () => {
            const n = calls++;
            const output = [{ type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: 'act', arguments: JSON.stringify({ n }), status: 'completed' }];
            return new Response(JSON.stringify({ id: `resp_${n}`, status: 'completed', output }), { headers: { 'content-type': 'application/json' } });
          };
          const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'responses', fetch });
          const act = { name: 'act', parameters: { type: 'object', properties: { n: { type: 'number' } } }, needsApproval: (_, args) => args.n === 0, execute: async () => 'done' };
          const agent = new lib.Agent({ name: 'A', model: 'm', tools: [act] });
          const session = new lib.IndexedDbSession(`${id}-${JSON.stringify(resumeOptions)}`);
          const paused = await runner.run(agent, 'go', { session, maxTurns: 2 });
          const state = lib.RunState.fromString(agent, paused.state.toString());
          for (const item of state.getInterruptions()) state.approve(item);
          let error;
          try {
            await runner.run(agent, state, { session, ...resumeOptions });
          } catch (e) {
            error = e.name;
          }
          return { calls, error };
        };
        return { kept: await run({}), given: await run({ maxTurns: 3 }) };
      },
      { id: fresh('max-turns-resume') },
    );
    assert.deepEqual(r.kept, { calls: 2, error: 'MaxTurnsExceededError' }, 'the limit the run started with');
    assert.deepEqual(r.given, { calls: 3, error: 'MaxTurnsExceededError' }, "the resuming call's own limit");
  });

  test('a paused state resumed twice (the first resumption failed later): the approved tool runs once; resumed after a resumption answered, it is refused', async () => {
    const r = await inPage(
      async ({ id }) => {
        let runs = 0;
        const email = { name: 'send_email', parameters: { type: 'object', properties: { to: { type: 'string' } } }, needsApproval: true, execute: async () => `sent ${++runs}` };
        const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [email] });
        const reply = (output) => new Response(JSON.stringify({ id: 'r', status: 'completed', output }), { headers: { 'content-type': 'application/json' } });
        const call = [{ type: 'function_call', id: 'fc_1', call_id: 'call_mail', name: 'send_email', arguments: '{"to":"ada"}', status: 'completed' }];
        const done = [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Sent.' }] }];
        const runnerWith = (answers) => new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'responses', fetch: async () => answers.shift()() });
        const session = new lib.IndexedDbSession(id);
        const paused = await runnerWith([() => reply(call)]).run(agent, 'Email Ada', { session });
        const kept = paused.state.toString();
        const approved = () => {
          const state = lib.RunState.fromString(agent, kept);
          for (const item of state.getInterruptions()) state.approve(item);
          return state;
        };
        // The first resumption runs the tool, then the model call after it fails.
        let failed;
        try {
          await runnerWith([() => new Response('{"error":{"message":"overloaded"}}', { status: 400 })]).run(agent, approved(), { session });
        } catch (e) {
          failed = e.name;
        }
        // The app resumes again from the state it kept.
        const result = await runnerWith([() => reply(done)]).run(agent, approved(), { session });
        // And once more, after that run answered: nothing to do, no model call, nothing saved.
        let asked = 0;
        const third = await runnerWith([() => (++asked, reply(done))]).run(agent, approved(), { session }).then(() => 'resolved', (e) => e.code);
        const items = await session.getItems();
        return { failed, third, asked, runs, finalOutput: result.finalOutput, outputs: items.filter((i) => i.type === 'function_call_result').map((i) => i.output.text ?? i.output), kinds: items.map((i) => i.type ?? i.role) };
      },
      { id: fresh('resume-twice') },
    );
    assert.equal(r.third, 'INVALID_RUN_STATE', 'a state whose resumption already answered');
    assert.equal(r.asked, 0);
    assert.equal(r.failed, 'ModelError');
    assert.equal(r.runs, 1, 'the approved tool ran once');
    assert.equal(r.finalOutput, 'Sent.');
    assert.deepEqual(r.outputs, ['sent 1']);
    assert.deepEqual(r.kinds, ['message', 'function_call', 'function_call_result', 'message']);
  });

  test('an answer that is a refusal and no text fails with a ModelRefusalError, as the SDK’s, and is not saved; text beside a refusal is the answer without it', async () => {
    const r = await inPage(
      async ({ id }) => {
        const json = (body) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
        const chat = (message) => json({ id: 'c', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message }] });
        // (With the reasoning that led to it: not told either.)
        const responses = (content) => json({ id: 'r', status: 'completed', output: [{ type: 'reasoning', id: 'rs_1', summary: [] }, { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content }] });
        const answers = {
          chat_completions: {
            refused: () => chat({ role: 'assistant', content: null, refusal: 'I can’t help with that.' }),
            partly: () => chat({ role: 'assistant', content: 'Partly:', refusal: 'no more' }),
          },
          responses: {
            refused: () => responses([{ type: 'refusal', refusal: 'I can’t help with that.' }]),
            partly: () => responses([{ type: 'output_text', text: 'Partly:' }, { type: 'refusal', refusal: 'no more' }]),
          },
        };
        const out = {};
        for (const api of ['chat_completions', 'responses']) {
          const runner = (answer) => new lib.Runner({ baseUrl: 'http://model.invalid/v1', api, retries: 0, fetch: async () => answer() });
          for (const outputType of [undefined, { type: 'json_schema', name: 'x', strict: true, schema: { type: 'object', properties: {}, required: [], additionalProperties: false } }]) {
            const agent = new lib.Agent({ name: 'A', model: 'm', ...(outputType ? { outputType } : {}) });
            const session = new lib.IndexedDbSession(`${id}-${api}-${outputType ? 'json' : 'text'}`);
            const refused = await runner(answers[api].refused)
              .run(agent, 'do the bad thing', { session })
              .then(() => null, (e) => ({ name: e.name, code: e.code, refusal: e.refusal, message: e.message, isError: e instanceof Error, state: e.state?.kind }));
            // (A fetch answering with JSON: the runner gives its text as one delta.)
            const streamed = await (async () => {
              const run = runner(answers[api].refused).runStreamed(agent, 'again', { session });
              const deltas = [];
              try {
                for await (const e of run) {
                  if (e.type === 'text_delta') deltas.push(e.delta);
                  // The refused answer is not told as an item: it is not kept.
                  if (e.type === 'item_added' || e.type === 'run_item_stream_event') deltas.push(e.name ?? e.type);
                }
              } catch (e) {
                return [e.name, deltas];
              }
              return ['the stream ended without the error', deltas];
            })();
            const kept = (await session.getItems()).map((i) => i.role);
            out[`${api}-${outputType ? 'json' : 'text'}`] = { refused, streamed, kept };
          }
          const partly = await runner(answers[api].partly).run(new lib.Agent({ name: 'A', model: 'm' }), 'tell me');
          const partlyStreamed = runner(answers[api].partly).runStreamed(new lib.Agent({ name: 'A', model: 'm' }), 'tell me');
          let text = '';
          for await (const e of partlyStreamed) if (e.type === 'text_delta') text += e.delta;
          out[`${api}-partly`] = [partly.finalOutput, text];
        }
        return out;
      },
      { id: fresh('refusal') },
    );
    for (const api of ['chat_completions', 'responses']) {
      for (const kind of ['text', 'json']) {
        const { refused, streamed, kept } = r[`${api}-${kind}`];
        assert.deepEqual(refused, { name: 'ModelRefusalError', code: 'MODEL_REFUSAL', refusal: 'I can’t help with that.', message: 'Model refused to produce output: I can’t help with that.', isError: true, state: 'agent-sessions.RunState' }, `${api}, ${kind}`);
        assert.deepEqual(streamed, ['ModelRefusalError', []], 'no text of the refusal streamed, nor the refusal (or its reasoning) as an item');
        assert.deepEqual(kept, ['user', 'user'], 'the questions are saved, the refusals not');
      }
      assert.deepEqual(r[`${api}-partly`], ['Partly:', 'Partly:'], `${api}: the refusal is no part of the answer's text, whole or streamed`);
    }
  });

  test('a run refused by the model resumes from the ModelRefusalError’s state: the model is asked again, and the question is stored once', async () => {
    const r = await inPage(
      async ({ id }) => {
        const json = (body) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
        const answers = [
          () => json({ id: 'c1', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: null, refusal: 'No.' } }] }),
          () => json({ id: 'c2', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Fine, here it is.' } }] }),
        ];
        const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', retries: 0, fetch: async () => answers.shift()() });
        const agent = new lib.Agent({ name: 'A', model: 'm' });
        const session = new lib.IndexedDbSession(id);
        const error = await runner.run(agent, 'please', { session }).then(() => null, (e) => e);
        const resumed = await runner.run(agent, error.state, { session });
        return { name: error.name, finalOutput: resumed.finalOutput, stored: (await session.getItems()).map((i) => [i.role, typeof i.content === 'string' ? i.content : i.content.map((p) => p.text ?? p.refusal).join('')]) };
      },
      { id: fresh('refusal-resume') },
    );
    assert.equal(r.name, 'ModelRefusalError');
    assert.equal(r.finalOutput, 'Fine, here it is.');
    assert.deepEqual(r.stored, [['user', 'please'], ['assistant', 'Fine, here it is.']]);
  });

  test('a streamed call answered with JSON (a server that does not stream) is the answer, its text given as a delta; an error body answered with 200 fails with its message', async () => {
    const r = await inPage(async () => {
      const json = (body) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
      const agent = new lib.Agent({ name: 'A', model: 'm' });
      const out = {};
      for (const api of ['responses', 'chat_completions']) {
        const answer =
          api === 'responses'
            ? { id: 'r', status: 'completed', output: [{ type: 'message', id: 'm1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Whole, not streamed.' }] }] }
            : { id: 'c', choices: [{ index: 0, message: { role: 'assistant', content: 'Whole, not streamed.' }, finish_reason: 'stop' }] };
        const run = new lib.Runner({ baseUrl: 'http://model.invalid/v1', api, fetch: async () => json(answer) }).runStreamed(agent, 'hi');
        const deltas = [];
        for await (const e of run) if (e.type === 'text_delta') deltas.push(e.delta);
        const failing = new lib.Runner({ baseUrl: 'http://model.invalid/v1', api, retries: 0, fetch: async () => json({ error: { message: 'quota exhausted at the gateway' } }) });
        const error = await failing.runStreamed(agent, 'hi').result.then(() => null, (e) => ({ name: e.name, status: e.status, message: e.message }));
        const whole = await failing.run(agent, 'hi').then(() => null, (e) => e.message);
        out[api] = { final: (await run.result).finalOutput, deltas, error, whole };
      }
      return out;
    });
    for (const api of ['responses', 'chat_completions']) {
      assert.equal(r[api].final, 'Whole, not streamed.', api);
      assert.deepEqual(r[api].deltas, ['Whole, not streamed.'], api);
      assert.equal(r[api].error.name, 'ModelError', api);
      assert.match(r[api].error.message, /quota exhausted at the gateway/, api);
      assert.match(r[api].whole, /quota exhausted at the gateway/, api);
    }
  });

  test('an interruption of another run is refused by approve() and reject(), though its call id is the same (servers that number calls per response)', async () => {
    model.script(
      { calls: [{ name: 'send_email', arguments: { to: 'ada' }, id: 'call_0' }] },
      { calls: [{ name: 'delete_file', arguments: { path: 'x' }, id: 'call_0' }] },
    );
    const r = await inPage(async ({ url }) => {
      const tool = (name) => ({ name, needsApproval: true, execute: () => 'done' });
      const agent = new lib.Agent({ name: 'A', model: 'm', tools: [tool('send_email'), tool('delete_file')] });
      const runner = new lib.Runner({ baseUrl: url });
      const mail = await runner.run(agent, 'Mail Ada', { session: new lib.IndexedDbSession('mail-' + Math.random()) });
      const files = await runner.run(agent, 'Delete x', { session: new lib.IndexedDbSession('files-' + Math.random()) });
      const attempt = (f) => {
        try {
          f();
          return 'taken';
        } catch (e) {
          return `${e.name} ${e.code}`;
        }
      };
      return {
        ids: [mail.interruptions[0].callId, files.interruptions[0].callId],
        approveOther: attempt(() => files.state.approve(mail.interruptions[0])),
        rejectOther: attempt(() => files.state.reject(mail.interruptions[0])),
        approveOwn: attempt(() => files.state.approve(files.interruptions[0])),
        byId: attempt(() => files.state.reject('call_0')),
      };
    });
    assert.deepEqual(r.ids, ['call_0', 'call_0']);
    assert.equal(r.approveOther, 'RunnerError INVALID_RUN_STATE');
    assert.equal(r.rejectOther, 'RunnerError INVALID_RUN_STATE');
    assert.equal(r.approveOwn, 'taken');
    assert.equal(r.byId, 'taken', 'a call id alone names the call of this run');
  });

  test('a paused state approved (or rejected) after the chat went on (another question answered, or the chat cleared) runs no tool and saves nothing: INVALID_RUN_STATE, over any session', async () => {
    const r = await inPage(
      async ({ id }) => {
        let runs = 0;
        const email = { name: 'send_email', parameters: { type: 'object', properties: { to: { type: 'string' } } }, needsApproval: true, execute: async () => `sent ${++runs}` };
        const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [email] });
        const reply = (output) => new Response(JSON.stringify({ id: 'r', status: 'completed', output }), { headers: { 'content-type': 'application/json' } });
        const call = [{ type: 'function_call', id: 'fc_1', call_id: 'call_mail', name: 'send_email', arguments: '{"to":"ada"}', status: 'completed' }];
        const answer = (text) => [{ type: 'message', id: `msg_${text}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }];
        const runnerWith = (answers) => new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'responses', fetch: async () => answers.shift()() });
        const out = {};
        // A session of the SDK's shape, written in plain JS: no history transactions.
        const plain = () => {
          const store = [];
          return {
            getItems: async (n) => structuredClone(n === undefined ? store : store.slice(-n)),
            addItems: async (items) => void store.push(...structuredClone(items)),
            popItem: async () => store.pop(),
            clearSession: async () => void store.splice(0),
          };
        };
        for (const kind of ['indexeddb', 'memory', 'plain']) {
          const session = kind === 'memory' ? new lib.MemorySession(`${id}-m`) : kind === 'plain' ? plain() : new lib.IndexedDbSession(id);
          const paused = await runnerWith([() => reply(call)]).run(agent, 'Email Ada', { session });
          const kept = paused.state.toString();
          const approved = () => {
            const state = lib.RunState.fromString(agent, kept);
            for (const item of state.getInterruptions()) state.approve(item);
            return state;
          };
          // The user asks something else instead of answering the approval.
          await runnerWith([() => reply(answer('Noon.'))]).run(agent, 'What time is it?', { session });
          const before = await session.getItems();
          let error;
          try {
            await runnerWith([() => reply(answer('Sent.'))]).run(agent, approved(), { session });
          } catch (e) {
            error = { name: e.name, code: e.code, message: e.message };
          }
          const after = await session.getItems();
          // Rejected instead: its output could not follow the call either.
          const declined = lib.RunState.fromString(agent, kept);
          for (const item of declined.getInterruptions()) declined.reject(item);
          const rejected = await runnerWith([() => reply(answer('Not sent.'))]).run(agent, declined, { session }).then(() => 'resolved', (e) => e.code);
          const afterRejected = await session.getItems();
          // Cleared: nothing for the approved call to follow either.
          await session.clearSession();
          let cleared;
          try {
            await runnerWith([() => reply(answer('Sent.'))]).run(agent, approved(), { session });
          } catch (e) {
            cleared = e.code;
          }
          out[kind] = { error, rejected, same: JSON.stringify(before) === JSON.stringify(after) && JSON.stringify(before) === JSON.stringify(afterRejected), cleared, left: (await session.getItems()).length };
        }
        // Resumed while the chat is as the pause left it, the tool runs (a number the model
        // wrote as `1.0` comes back from the session as `1`: the same item).
        const session = new lib.IndexedDbSession(`${id}-2`);
        const raw = '{"id":"r","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_mail","name":"send_email","arguments":"{}","status":"completed","weight":1.0}]}';
        const paused = await runnerWith([() => new Response(raw, { headers: { 'content-type': 'application/json' } })]).run(agent, 'Email Ada', { session });
        const state = paused.state;
        for (const item of state.getInterruptions()) state.approve(item);
        out.ontime = (await runnerWith([() => reply(answer('Sent.'))]).run(agent, state, { session })).finalOutput;
        out.runs = runs;
        return out;
      },
      { id: fresh('moved-on') },
    );
    for (const kind of ['indexeddb', 'memory', 'plain']) {
      assert.equal(r[kind].error.name, 'RunnerError', kind);
      assert.equal(r[kind].rejected, 'INVALID_RUN_STATE', kind);
      assert.equal(r[kind].error.code, 'INVALID_RUN_STATE', kind);
      assert.match(r[kind].error.message, /written to since this run paused for approval/);
      assert.equal(r[kind].same, true, `${kind}: nothing saved`);
      assert.equal(r[kind].cleared, 'INVALID_RUN_STATE', kind);
      assert.equal(r[kind].left, 0, kind);
    }
    assert.equal(r.ontime, 'Sent.');
    assert.equal(r.runs, 1, 'only the approval given in time ran the tool');
  });

  test('a paused state resumed twice over a session with only addItems: the rejected call’s output is saved once too', async () => {
    const r = await inPage(async () => {
      let runs = 0;
      const tool = (name) => ({ name, parameters: { type: 'object', properties: {} }, needsApproval: true, execute: async () => `${name} ran ${++runs}` });
      const agent = new lib.Agent({ name: 'Ops', model: 'm', tools: [tool('deploy'), tool('wipe')] });
      const reply = (output) => new Response(JSON.stringify({ id: 'r', status: 'completed', output }), { headers: { 'content-type': 'application/json' } });
      const calls = ['deploy', 'wipe'].map((name) => ({ type: 'function_call', id: `fc_${name}`, call_id: `call_${name}`, name, arguments: '{}', status: 'completed' }));
      const done = [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Deployed, not wiped.' }] }];
      const runnerWith = (answers) => new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'responses', retries: 0, fetch: async () => answers.shift()() });
      // A session of the protocol alone (no history transactions), as a custom one would be.
      const stored = [];
      const session = {
        getSessionId: async () => 'plain',
        getItems: async (n) => structuredClone(n === undefined ? stored : stored.slice(-n)),
        addItems: async (items) => void stored.push(...structuredClone(items)),
        popItem: async () => stored.pop(),
        clearSession: async () => void stored.splice(0),
      };
      const paused = await runnerWith([() => reply(calls)]).run(agent, 'Deploy, do not wipe', { session });
      const kept = paused.state.toString();
      const decided = () => {
        const state = lib.RunState.fromString(agent, kept);
        for (const item of state.getInterruptions()) {
          if (item.rawItem.name === 'deploy') state.approve(item);
          else state.reject(item);
        }
        return state;
      };
      let failed;
      try {
        await runnerWith([() => new Response('{"error":{"message":"overloaded"}}', { status: 400 })]).run(agent, decided(), { session });
      } catch (e) {
        failed = e.name;
      }
      const result = await runnerWith([() => reply(done)]).run(agent, decided(), { session });
      return { failed, runs, finalOutput: result.finalOutput, outputs: stored.filter((i) => i.type === 'function_call_result').map((i) => i.callId) };
    });
    assert.equal(r.failed, 'ModelError');
    assert.equal(r.runs, 1, 'the approved tool ran once');
    assert.equal(r.finalOutput, 'Deployed, not wiped.');
    assert.deepEqual(r.outputs, ['call_deploy', 'call_wipe'], 'each output once');
  });

  test('a run paused for approval stores what its model calls used at once (it may never be resumed); resuming adds only its own', async () => {
    const r = await inPage(
      async ({ id }) => {
        const email = { name: 'send_email', parameters: { type: 'object', properties: {} }, needsApproval: true, execute: async () => 'sent' };
        const agent = new lib.Agent({ name: 'Mailer', model: 'm', tools: [email] });
        const reply = (output, tokens) =>
          new Response(JSON.stringify({ id: 'r', status: 'completed', output, usage: { input_tokens: tokens, output_tokens: 1, total_tokens: tokens + 1 } }), { headers: { 'content-type': 'application/json' } });
        const call = [{ type: 'function_call', id: 'fc_1', call_id: 'call_mail', name: 'send_email', arguments: '{}', status: 'completed' }];
        const done = [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Sent.' }] }];
        const runnerWith = (answers) => new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'responses', fetch: async () => answers.shift()() });
        const out = {};
        for (const kind of ['indexeddb', 'memory']) {
          const session = kind === 'indexeddb' ? new lib.IndexedDbSession(`${id}-${kind}`) : new lib.MemorySession(`${id}-${kind}`);
          const paused = await runnerWith([() => reply(call, 40)]).run(agent, 'Email Ada', { session });
          const atPause = (await session.getSessionUsage()).inputTokens;
          for (const item of paused.state.getInterruptions()) paused.state.approve(item);
          await runnerWith([() => reply(done, 60)]).run(agent, paused.state, { session });
          out[kind] = { atPause, after: (await session.getSessionUsage()).inputTokens, requests: (await session.getSessionUsage()).requests };
        }
        return out;
      },
      { id: fresh('paused-usage') },
    );
    assert.deepEqual(r, { indexeddb: { atPause: 40, after: 100, requests: 2 }, memory: { atPause: 40, after: 100, requests: 2 } });
  });

  test('run() with stream: true resolves to the stream, as the SDK’s; two streamed Chat Completions calls sharing index 0 (as Ollama sends them) are two calls', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        const call = (callId, city) => ({ tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: 'weather', arguments: JSON.stringify({ city }) } }] });
        const calls = `${chunk(call('a', 'Oslo'))}${chunk(call('b', 'Rome'), 'tool_calls')}data: [DONE]\n\n`;
        const answer = `${chunk({ role: 'assistant', content: 'Cold and warm.' })}${chunk({}, 'stop')}data: [DONE]\n\n`;
        const asked = [];
        const weather = { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, execute: async ({ city }) => (asked.push(city), `${city}: fine`) };
        const agent = new lib.Agent({ name: 'A', model: 'm', tools: [weather] });
        const session = new lib.IndexedDbSession(id);
        const stream = await scriptedRunner([calls, answer], 'chat_completions').runner.run(agent, 'Weather in Oslo and Rome?', { session, stream: true });
        const types = [];
        for await (const event of stream) types.push(event.type);
        await stream.completed;
        const saved = (await session.getItems()).filter((i) => i.type === 'function_call').map((i) => [i.callId, i.arguments]);
        return { iterable: typeof stream[Symbol.asyncIterator], last: types.at(-1), finalOutput: stream.finalOutput, asked, saved };
      },
      { id: fresh('stream-option'), scripted },
    );
    assert.equal(r.iterable, 'function');
    assert.equal(r.last, 'done');
    assert.equal(r.finalOutput, 'Cold and warm.');
    assert.deepEqual(r.asked, ['Oslo', 'Rome']);
    assert.deepEqual(r.saved, [['a', '{"city":"Oslo"}'], ['b', '{"city":"Rome"}']]);
  });

  test('Chat Completions: a call’s thought signature (Gemini) and the reasoning before it (DeepSeek) go back with it in every later request, streamed or whole', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        const signature = { google: { thought_signature: 'sig-1' } };
        // The name sent again in the arguments' delta, and the signature in a delta of its own.
        const calls =
          chunk({ reasoning_content: 'Look the ' }) +
          chunk({ reasoning_content: 'weather up.' }) +
          chunk({ tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'weather', arguments: '' } }] }) +
          chunk({ tool_calls: [{ index: 0, function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] }) +
          chunk({ tool_calls: [{ index: 0, extra_content: signature }] }, 'tool_calls') +
          'data: [DONE]\n\n';
        const { items, ...loop } = await chatToolLoop(calls, id);
        return { ...loop, stored: items.filter((i) => i.type !== 'message') };
      },
      { id: fresh('chat-provider-data'), scripted },
    );
    assert.equal(r.finalOutput, 'Cold.');
    assert.equal(r.again, 'Still cold.');
    const expected = {
      role: 'assistant',
      content: null,
      reasoning_content: 'Look the weather up.',
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' }, extra_content: { google: { thought_signature: 'sig-1' } } }],
    };
    assert.deepEqual(r.sent, [expected, expected]);
    assert.deepEqual(r.stored.map((i) => i.type), ['reasoning', 'function_call', 'function_call_result']);
    assert.deepEqual(r.stored[0].rawContent, [{ type: 'reasoning_text', text: 'Look the weather up.' }]);
  });

  test('Chat Completions through OpenRouter: the reasoning_details of a call (Claude’s signed thinking, Gemini’s encrypted reasoning) go back with it as they came, a stream’s pieces merged', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'gen-1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        const block = (text, extra = {}) => ({ type: 'reasoning.text', text, format: 'anthropic-claude-v1', index: 0, ...extra });
        const calls =
          chunk({ role: 'assistant', content: '', reasoning: 'Check ', reasoning_details: [block('Check ')] }) +
          chunk({ content: '', reasoning: 'Oslo.', reasoning_details: [block('Oslo.', { signature: 'sig-9' })] }) +
          chunk({ content: '', reasoning: null, reasoning_details: [{ type: 'reasoning.encrypted', data: 'ENC', format: 'google-gemini-v1', index: 1 }] }) +
          chunk({ tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] }, 'tool_calls') +
          'data: [DONE]\n\n';
        const { items, ...loop } = await chatToolLoop(calls, id);
        return { ...loop, stored: items[1] };
      },
      { id: fresh('openrouter-details'), scripted },
    );
    assert.equal(r.again, 'Still cold.');
    const details = [
      { type: 'reasoning.text', text: 'Check Oslo.', format: 'anthropic-claude-v1', index: 0, signature: 'sig-9' },
      { type: 'reasoning.encrypted', data: 'ENC', format: 'google-gemini-v1', index: 1 },
    ];
    const expected = {
      role: 'assistant',
      content: null,
      reasoning: 'Check Oslo.',
      reasoning_details: details,
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
    };
    assert.deepEqual(r.sent, [expected, expected], 'in the tool loop, and in the next turn from what the session stored');
    assert.equal(r.stored.type, 'reasoning');
    assert.deepEqual(r.stored.providerData, { details });
  });

  test('resetToolChoice: false keeps the forced toolChoice after a tool ran; the SDK’s in-memory cache retention is sent as the API spells it; an effort of null is not sent', async () => {
    const r = await inPage(
      async ({ scripted }) => {
        eval(scripted);
        const call = { id: 'c1', choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'note', arguments: '{}' } }] }, finish_reason: 'tool_calls' }] };
        const done = { id: 'c2', choices: [{ message: { role: 'assistant', content: 'Noted.' }, finish_reason: 'stop' }] };
        const { runner, requests } = scriptedRunner([call, done], 'chat_completions');
        const agent = new lib.Agent({
          name: 'A',
          model: 'm',
          tools: [{ name: 'note', execute: () => 'ok' }],
          resetToolChoice: false,
          modelSettings: { toolChoice: 'auto', promptCacheRetention: 'in-memory', reasoning: { effort: null } },
        });
        const result = await runner.run(agent, 'Take a note');
        return { final: result.finalOutput, sent: requests.map((b) => [b.tool_choice, b.prompt_cache_retention, 'reasoning_effort' in b]) };
      },
      { scripted },
    );
    assert.equal(r.final, 'Noted.');
    assert.deepEqual(r.sent, [['auto', 'in_memory', false], ['auto', 'in_memory', false]]);
  });

  test('a stream given up on (a chunk that is no JSON) is cancelled at once, not left open until the server ends it', async () => {
    const r = await inPage(async () => {
      let cancelled = false;
      const fetch = async () =>
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('data: {not json\n\n'));
              // The server keeps the connection open.
            },
            cancel() {
              cancelled = true;
            },
          }),
          { headers: { 'content-type': 'text/event-stream' } },
        );
      const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'chat_completions', retries: 0, fetch });
      const stream = runner.runStreamed(new lib.Agent({ name: 'A', model: 'm' }), 'Hi');
      const error = await stream.completed.then(() => 'resolved', (e) => e.name);
      return { error, cancelled };
    });
    assert.deepEqual(r, { error: 'ModelError', cancelled: true });
  });

  test('a streamed run has the SDK’s completed, error, finalOutput, toTextStream() and toStream(); a result its activeAgent and output', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        const body = `${chunk({ role: 'assistant', content: 'Hello' })}${chunk({ content: ' world' })}${chunk({}, 'stop')}data: [DONE]\n\n`;
        const agent = new lib.Agent({ name: 'A', model: 'm' });
        const stream = scriptedRunner([body], 'chat_completions').runner.runStreamed(agent, 'Hi', { session: new lib.IndexedDbSession(id) });
        const before = stream.finalOutput ?? null;
        const reader = stream.toTextStream().getReader();
        const parts = [];
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parts.push(value);
        }
        await stream.completed;
        const result = await stream.result;
        const sdkNames = [result.activeAgent === agent, stream.activeAgent === agent, JSON.stringify(result.output) === JSON.stringify(result.newItems), result.output !== result.newItems, stream.output?.length];
        // `toStream()`: the events, the SDK's among them.
        const events = scriptedRunner([body], 'chat_completions').runner.runStreamed(agent, 'Hi').toStream().getReader();
        const types = [];
        for (;;) {
          const { value, done } = await events.read();
          if (done) break;
          types.push(value.type === 'raw_model_stream_event' ? `raw ${value.data.delta}` : value.type);
        }
        // A run that fails: `completed` rejects with its error, which `error` holds.
        const failing = scriptedRunner([], 'chat_completions').runner.runStreamed(agent, 'Hi');
        const completed = await failing.completed.then(() => 'resolved', (e) => e.name);
        // Cancelling the text stream while a read waits for the model ends it then, and the run
        // too, though its fetch does not heed the signal.
        let release;
        const gate = new Promise((ok) => (release = ok));
        const slow = new lib.Runner({ baseUrl: 'http://model.invalid/v1', api: 'chat_completions', fetch: async () => (await gate, new Response(body, { headers: { 'content-type': 'text/event-stream' } })) });
        const waiting = slow.runStreamed(agent, 'Hi');
        const text = waiting.toTextStream().getReader();
        const read = text.read();
        await new Promise((ok) => setTimeout(ok, 20));
        await text.cancel();
        const pendingRead = (await read).done;
        // The cancel cancelled the run before the model answered (its fetch ignores the signal:
        // the answer, when it comes, is dropped). The timer only keeps a failure from hanging.
        const ended = await Promise.race([waiting.result.then(() => 'resolved', (e) => e.name), new Promise((ok) => setTimeout(() => ok('still waiting'), 3000))]);
        release();
        const cancelledRun = [ended, waiting.cancelled];
        return { sdkNames, types, parts, before, finalOutput: stream.finalOutput, error: stream.error, completed, failed: failing.error?.name, failedOutput: failing.finalOutput ?? null, saved: (await new lib.IndexedDbSession(id).getItems()).length, pendingRead, cancelledRun };
      },
      { id: fresh('sdk-stream'), scripted },
    );
    assert.deepEqual(r.parts, ['Hello', ' world']);
    assert.deepEqual(r.sdkNames, [true, true, true, true, 1], 'activeAgent is lastAgent; output a copy of newItems');
    assert.deepEqual(r.types, ['agent_start', 'text_delta', 'raw Hello', 'text_delta', 'raw  world', 'item_added', 'run_item_stream_event', 'agent_end', 'done']);
    assert.equal(r.before, null, 'no final output before the run ended');
    assert.equal(r.finalOutput, 'Hello world');
    assert.equal(r.error, null);
    assert.equal(r.saved, 2, 'completed once the turn was saved');
    assert.equal(r.completed, 'ModelError');
    assert.equal(r.failed, 'ModelError');
    assert.equal(r.failedOutput, null);
    assert.equal(r.pendingRead, true, "the waiting read ended");
    assert.deepEqual(r.cancelledRun, ['AbortError', true], 'the run ended at the cancel, before the model answered');
  });

  test('a stream that starts with a byte order mark and ends [DONE] without its blank line reads whole', async () => {
    const r = await inPage(
      async ({ id, scripted }) => {
        eval(scripted);
        const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        const body = `\uFEFF${chunk({ role: 'assistant', content: 'Hello' })}${chunk({ content: ' world' })}${chunk({}, 'stop')}data: [DONE]\n`;
        const { runner } = scriptedRunner([body], 'chat_completions');
        const session = new lib.IndexedDbSession(id);
        const stream = runner.runStreamed(new lib.Agent({ name: 'A', model: 'm' }), 'Hi', { session });
        let text = '';
        for await (const event of stream) if (event.type === 'text_delta') text += event.delta;
        const result = await stream.result;
        return { text, finalOutput: result.finalOutput };
      },
      { id: fresh('bom'), scripted },
    );
    assert.equal(r.text, 'Hello world');
    assert.equal(r.finalOutput, 'Hello world');
  });

  test('a stream of CR line ends whose last event the body’s end completes streams that event’s text too', async () => {
    const r = await inPage(
      async ({ scripted }) => {
        eval(scripted);
        const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] })}\r\r`;
        // No [DONE]: the last event holds the end of the answer, and its blank line is a lone
        // CR, which only the body's end tells from the start of a CRLF.
        const body = `${chunk({ role: 'assistant', content: 'Hello' })}${chunk({ content: ' world' }, 'stop')}`;
        const { runner } = scriptedRunner([body], 'chat_completions');
        const stream = runner.runStreamed(new lib.Agent({ name: 'A', model: 'm' }), 'Hi');
        let text = '';
        for await (const event of stream) if (event.type === 'text_delta') text += event.delta;
        return { text, finalOutput: (await stream.result).finalOutput };
      },
      { scripted },
    );
    assert.deepEqual(r, { text: 'Hello world', finalOutput: 'Hello world' });
  });
});
