// The package as the `session` of @openai/agents 0.20 in headless Chromium: multi-turn runs, a
// reload in the middle of a conversation, the tool approval flow with a run state restored from
// its string, OpenAIResponsesCompactionSession over our session, and sessionInputCallback. And
// the optional capabilities as the runner uses them: a turn blocked by an output guardrail is
// persisted with applyHistoryTransaction (compared with the SDK's own MemorySession), and model
// output that starts a compacted history is stored with replaceHistoryWithCompaction.
// The SDK is bundled for the browser with esbuild; the model is the SDK's ScriptedModel, so
// nothing goes to the network and every model input can be inspected.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, reload } from './harness.mjs';
import { bundleSdk } from './sdk-bundle.mjs';

let env;
before(async () => {
  await bundleSdk();
  env = await start();
});
after(async () => {
  await env?.close();
});

/** A new browser context (empty storage) with the SDK page loaded. */
async function openSdkPage() {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${env.url}/tests/pages/agents.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  assert.deepEqual(errors, [], 'the page loads the SDK and the package without errors');
  return { context, page };
}

/** `[role or type, text]` for each item: enough to read a conversation in an assertion. */
function transcript(items) {
  return items.map((item) => {
    const text =
      typeof item.content === 'string'
        ? item.content
        : Array.isArray(item.content)
          ? item.content.map((part) => part.text ?? '').join('')
          : item.type === 'function_call'
            ? `${item.callId} ${item.arguments}`
            : item.type === 'function_call_result'
              ? `${item.callId} ${item.output?.text ?? item.output}`
              : '';
    return [item.role ?? item.type, text];
  });
}

const count = (items, type, callId) =>
  items.filter((item) => item.type === type && item.callId === callId).length;

describe('@openai/agents run() with IndexedDbSession', () => {
  let context;
  let page;
  before(async () => {
    ({ context, page } = await openSdkPage());
  });
  after(async () => {
    await context?.close();
  });

  test('three turns: the model sees every earlier turn; after a reload a new session object continues', async () => {
    const id = 'three-turns';
    const first = await page.evaluate(async (id) => {
      const { Agent, run, ScriptedModel, assistantMessage } = sdk;
      const model = new ScriptedModel([
        [assistantMessage('San Francisco.')],
        [assistantMessage('California.')],
        [assistantMessage('About 808,000.')],
      ]);
      const agent = new Agent({ name: 'Tour guide', instructions: 'Reply very concisely.', model });
      const session = new lib.IndexedDbSession(id);
      const writes = recordWrites(session);
      const outputs = [];
      for (const question of [
        'What city is the Golden Gate Bridge in?',
        'What state is it in?',
        'What is the population?',
      ]) {
        outputs.push((await run(agent, question, { session })).finalOutput);
      }
      model.assertComplete();
      return {
        outputs,
        inputs: model.calls.map((call) => call.request.input),
        stored: await session.getItems(),
        writes: writes.flat(),
      };
    }, id);

    assert.deepEqual(first.outputs, ['San Francisco.', 'California.', 'About 808,000.']);
    const q1 = ['user', 'What city is the Golden Gate Bridge in?'];
    const a1 = ['assistant', 'San Francisco.'];
    const q2 = ['user', 'What state is it in?'];
    const a2 = ['assistant', 'California.'];
    const q3 = ['user', 'What is the population?'];
    const a3 = ['assistant', 'About 808,000.'];
    assert.deepEqual(transcript(first.inputs[0]), [q1]);
    assert.deepEqual(transcript(first.inputs[1]), [q1, a1, q2], 'turn 2 sees turn 1');
    assert.deepEqual(transcript(first.inputs[2]), [q1, a1, q2, a2, q3], 'turn 3 sees turns 1 and 2');
    assert.deepEqual(transcript(first.stored), [q1, a1, q2, a2, q3, a3]);
    // What the model got back as history is exactly what the SDK stored.
    assert.deepStrictEqual(first.inputs[2], first.stored.slice(0, 5));
    assert.deepStrictEqual(first.stored, first.writes, 'getItems() returns the items as written');

    await reload(page);
    const fourth = await page.evaluate(async (id) => {
      const { Agent, run, ScriptedModel, assistantMessage } = sdk;
      const model = new ScriptedModel([[assistantMessage('It opened in 1937.')]]);
      const agent = new Agent({ name: 'Tour guide', instructions: 'Reply very concisely.', model });
      const session = new lib.IndexedDbSession(id); // a new object after the reload, same id
      const result = await run(agent, 'When did the bridge open?', { session });
      model.assertComplete();
      return {
        output: result.finalOutput,
        input: model.calls[0].request.input,
        stored: await session.getItems(),
      };
    }, id);
    assert.equal(fourth.output, 'It opened in 1937.');
    const q4 = ['user', 'When did the bridge open?'];
    assert.deepEqual(transcript(fourth.input), [q1, a1, q2, a2, q3, a3, q4], 'turn 4 sees turns 1-3');
    assert.deepStrictEqual(fourth.input.slice(0, 6), first.stored);
    assert.deepEqual(transcript(fourth.stored), [q1, a1, q2, a2, q3, a3, q4, ['assistant', 'It opened in 1937.']]);
  });

  test('tool approval: approve, approve after a reload from RunState.fromString, reject', async () => {
    const id = 'approvals';
    // Page 1: turn 1 (approved in place), then turn 2 up to its interruption.
    const one = await page.evaluate(
      async (id) => {
        const { agent, model, ran } = weatherAgent();
        const { run, functionCall, assistantMessage } = sdk;
        model.enqueue(
          [functionCall('get_weather', { city: 'Paris' }, { callId: 'call_paris' })],
          [assistantMessage('It is sunny in Paris.')],
          [functionCall('get_weather', { city: 'Tokyo' }, { callId: 'call_tokyo' })],
        );
        const session = new lib.IndexedDbSession(id);
        const writes = recordWrites(session);

        let result = await run(agent, 'What is the weather in Paris?', { session });
        const firstInterruptions = result.interruptions.map((i) => [i.name, i.arguments]);
        const ranBeforeApproval = [...ran];
        result.state.approve(result.interruptions[0]);
        result = await run(agent, result.state, { session });
        const turn1 = result.finalOutput;

        result = await run(agent, 'And in Tokyo?', { session });
        const secondInterruptions = result.interruptions.map((i) => [i.name, i.arguments]);
        model.assertComplete();
        return {
          firstInterruptions,
          ranBeforeApproval,
          turn1,
          secondInterruptions,
          state: result.state.toString(),
          ran: [...ran],
          storedAtInterruption: await session.getItems(),
          writes: writes.flat(),
        };
      },
      id,
    );
    assert.deepEqual(one.firstInterruptions, [['get_weather', '{"city":"Paris"}']]);
    assert.deepEqual(one.ranBeforeApproval, [], 'nothing runs before the approval');
    assert.equal(one.turn1, 'It is sunny in Paris.');
    assert.deepEqual(one.secondInterruptions, [['get_weather', '{"city":"Tokyo"}']]);
    assert.deepEqual(one.ran, ['Paris']);
    assert.equal(typeof one.state, 'string');
    // At the interruption the question and the pending call are stored, not yet an output.
    assert.deepEqual(transcript(one.storedAtInterruption).slice(4), [
      ['user', 'And in Tokyo?'],
      ['function_call', 'call_tokyo {"city":"Tokyo"}'],
    ]);
    assert.deepStrictEqual(one.storedAtInterruption, one.writes);

    // Page 2, after a reload: a new session object and the run state restored from its string.
    await reload(page);
    const two = await page.evaluate(
      async ({ id, state }) => {
        const { agent, model, ran } = weatherAgent();
        const { run, RunState, functionCall, assistantMessage } = sdk;
        model.enqueue(
          [assistantMessage('It is sunny in Tokyo.')],
          [functionCall('get_weather', { city: 'Berlin' }, { callId: 'call_berlin' })],
          [assistantMessage('I was not allowed to check Berlin.')],
        );
        const session = new lib.IndexedDbSession(id);
        const writes = recordWrites(session);

        const restored = await RunState.fromString(agent, state);
        const pending = restored.getInterruptions();
        const restoredInterruptions = pending.map((i) => [i.name, i.arguments]);
        restored.approve(pending[0]);
        let result = await run(agent, restored, { session });
        const turn2 = result.finalOutput;
        const ranAfterTurn2 = [...ran];

        result = await run(agent, 'And in Berlin?', { session });
        const thirdInterruptions = result.interruptions.map((i) => [i.name, i.arguments]);
        result.state.reject(result.interruptions[0]);
        result = await run(agent, result.state, { session });
        const turn3 = result.finalOutput;
        model.assertComplete();
        return {
          restoredInterruptions,
          turn2,
          ranAfterTurn2,
          thirdInterruptions,
          turn3,
          ran: [...ran],
          inputs: model.calls.map((call) => call.request.input),
          stored: await session.getItems(),
          writes: writes.flat(),
        };
      },
      { id, state: one.state },
    );
    assert.deepEqual(two.restoredInterruptions, [['get_weather', '{"city":"Tokyo"}']]);
    assert.equal(two.turn2, 'It is sunny in Tokyo.');
    assert.deepEqual(two.ranAfterTurn2, ['Tokyo']);
    assert.deepEqual(two.thirdInterruptions, [['get_weather', '{"city":"Berlin"}']]);
    assert.equal(two.turn3, 'I was not allowed to check Berlin.');
    assert.deepEqual(two.ran, ['Tokyo'], 'the rejected call never ran');

    // Each approved call ran exactly once over both page loads.
    assert.deepEqual([...one.ran, ...two.ran], ['Paris', 'Tokyo']);

    // The resumed turn's model call saw the first turn (from IndexedDB) and the Tokyo result.
    assert.deepEqual(transcript(two.inputs[0]), [
      ['user', 'What is the weather in Paris?'],
      ['function_call', 'call_paris {"city":"Paris"}'],
      ['function_call_result', 'call_paris Sunny in Paris'],
      ['assistant', 'It is sunny in Paris.'],
      ['user', 'And in Tokyo?'],
      ['function_call', 'call_tokyo {"city":"Tokyo"}'],
      ['function_call_result', 'call_tokyo Sunny in Tokyo'],
    ]);

    // The stored history: each call and its output exactly once, in order.
    const stored = two.stored;
    for (const callId of ['call_paris', 'call_tokyo', 'call_berlin']) {
      assert.equal(count(stored, 'function_call', callId), 1, `${callId} stored once`);
      assert.equal(count(stored, 'function_call_result', callId), 1, `${callId} output stored once`);
    }
    const berlin = stored.find((i) => i.type === 'function_call_result' && i.callId === 'call_berlin');
    assert.doesNotMatch(berlin.output.text, /Sunny/, 'the rejected call has the rejection as its output');
    assert.deepEqual(transcript(stored), [
      ['user', 'What is the weather in Paris?'],
      ['function_call', 'call_paris {"city":"Paris"}'],
      ['function_call_result', 'call_paris Sunny in Paris'],
      ['assistant', 'It is sunny in Paris.'],
      ['user', 'And in Tokyo?'],
      ['function_call', 'call_tokyo {"city":"Tokyo"}'],
      ['function_call_result', 'call_tokyo Sunny in Tokyo'],
      ['assistant', 'It is sunny in Tokyo.'],
      ['user', 'And in Berlin?'],
      ['function_call', 'call_berlin {"city":"Berlin"}'],
      ['function_call_result', `call_berlin ${berlin.output.text}`],
      ['assistant', 'I was not allowed to check Berlin.'],
    ]);
    // Nothing was popped or cleared: the history is exactly every write, in order, verbatim.
    assert.deepStrictEqual(stored, [...one.writes, ...two.writes]);
  });

  test('OpenAIResponsesCompactionSession over IndexedDbSession: compaction replaces the history', async () => {
    const id = 'compaction';
    const r = await page.evaluate(async (id) => {
      const { Agent, run, ScriptedModel, assistantMessage, OpenAIResponsesCompactionSession } = sdk;
      const inner = new lib.IndexedDbSession(id);
      // Every call the compaction session makes on ours.
      const calls = [];
      for (const name of ['getItems', 'addItems', 'popItem', 'clearSession']) {
        const method = inner[name].bind(inner);
        inner[name] = (...args) => {
          calls.push([name, ...args.map((a) => (Array.isArray(a) ? `${a.length} items` : a))]);
          return method(...args);
        };
      }
      const compacted = [
        {
          type: 'message',
          role: 'user',
          id: 'msg_summary',
          content: [{ type: 'input_text', text: 'Asked about three cities.' }],
        },
        { type: 'compaction', id: 'cmp_1', encrypted_content: 'opaque-compacted-state' },
      ];
      const requests = [];
      const client = {
        responses: {
          async compact(request) {
            requests.push(structuredClone(request));
            return {
              id: 'resp_compact',
              output: structuredClone(compacted),
              usage: { input_tokens: 40, output_tokens: 6, total_tokens: 46 },
            };
          },
        },
      };
      const session = new OpenAIResponsesCompactionSession({
        client,
        underlyingSession: inner,
        model: 'gpt-4.1',
        compactionMode: 'input',
        shouldTriggerCompaction: ({ compactionCandidateItems }) => compactionCandidateItems.length >= 3,
      });
      const model = new ScriptedModel([
        [assistantMessage('Paris is in France.')],
        [assistantMessage('Tokyo is in Japan.')],
        [assistantMessage('Lima is in Peru.')],
        [assistantMessage('Quito is in Ecuador.')],
      ]);
      const agent = new Agent({ name: 'Geography tutor', instructions: 'Answer briefly.', model });
      const storedAfter = [];
      const callsPerTurn = [];
      for (const q of ['Where is Paris?', 'Where is Tokyo?', 'Where is Lima?']) {
        calls.length = 0;
        await run(agent, q, { session });
        callsPerTurn.push([...calls]);
        storedAfter.push(await inner.getItems());
      }
      calls.length = 0;
      await run(agent, 'Where is Quito?', { session });
      callsPerTurn.push([...calls]);
      model.assertComplete();
      // A new object for the same session (as after a reload) reads the compacted history.
      const fresh = await new lib.IndexedDbSession(id).getItems();
      return {
        compacted,
        requests,
        storedAfter,
        callsPerTurn,
        turn4Input: model.calls[3].request.input,
        fresh,
        listed: (await lib.listSessions()).find((s) => s.sessionId === id),
      };
    }, id);

    // No compaction after turns 1 and 2; after turn 3 exactly one request, with the stored history.
    assert.equal(r.storedAfter[0].length, 2);
    assert.equal(r.storedAfter[1].length, 4);
    assert.equal(r.requests.length, 1);
    assert.equal(r.requests[0].model, 'gpt-4.1');
    assert.deepEqual(
      r.requests[0].input.map((i) => [i.role, typeof i.content === 'string' ? i.content : i.content[0].text]),
      [
        ['user', 'Where is Paris?'],
        ['assistant', 'Paris is in France.'],
        ['user', 'Where is Tokyo?'],
        ['assistant', 'Tokyo is in Japan.'],
        ['user', 'Where is Lima?'],
        ['assistant', 'Lima is in Peru.'],
      ],
    );
    // The history was replaced: cleared, then the compaction output written, verbatim.
    const names = (calls) => calls.map(([name]) => name);
    for (const turn of [0, 1, 3]) {
      assert.ok(!names(r.callsPerTurn[turn]).includes('clearSession'), `no replacement in turn ${turn + 1}`);
    }
    assert.deepEqual(r.callsPerTurn[2].slice(-3), [['getItems'], ['clearSession'], ['addItems', '2 items']]);
    assert.ok(!r.callsPerTurn.flat().some(([name]) => name === 'popItem'));
    assert.deepStrictEqual(r.storedAfter[2], r.compacted);
    // Turn 4: the model sees the compaction item (the SDK's replay boundary) and the new question.
    assert.deepStrictEqual(r.turn4Input, [
      r.compacted[1],
      { type: 'message', role: 'user', content: 'Where is Quito?' },
    ]);
    assert.deepEqual(transcript(r.fresh), [
      ['user', 'Asked about three cities.'],
      ['compaction', ''],
      ['user', 'Where is Quito?'],
      ['assistant', 'Quito is in Ecuador.'],
    ]);
    assert.deepStrictEqual(r.fresh.slice(0, 2), r.compacted);
    assert.equal(r.listed.itemCount, 4, 'the session record counts the replaced history');
  });

  test('sessionInputCallback and the SDK item shapes round-trip unchanged', async () => {
    const id = 'item-shapes';
    const history = [
      { role: 'user', content: 'Plain string content' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Array content: こんにちは 👋🏽' }] },
      {
        type: 'reasoning',
        id: 'rs_1',
        content: [{ type: 'input_text', text: 'The weather tool answers this.' }],
        providerData: { encrypted_content: 'opaque==' },
      },
      {
        type: 'function_call',
        id: 'fc_1',
        callId: 'call_1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        status: 'completed',
      },
      {
        type: 'function_call_result',
        callId: 'call_1',
        name: 'get_weather',
        status: 'completed',
        output: { type: 'text', text: 'Sunny, 24°C' },
      },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_1',
        status: 'completed',
        content: [{ type: 'output_text', text: 'It is "sunny" in Paris.', providerData: { annotations: [] } }],
      },
    ];
    const r = await page.evaluate(
      async ({ id, history }) => {
        const { Agent, run, ScriptedModel, assistantMessage } = sdk;
        const session = new lib.IndexedDbSession(id);
        await session.addItems(history);
        const reasoning = {
          type: 'reasoning',
          id: 'rs_2',
          content: [{ type: 'input_text', text: 'Recall the earlier answer.' }],
          providerData: { encrypted_content: 'more-opaque==' },
        };
        const model = new ScriptedModel([
          [reasoning, assistantMessage('Still sunny.', { id: 'msg_2' })],
          [assistantMessage('Yes.')],
        ]);
        const agent = new Agent({ name: 'Weather desk', instructions: 'Answer briefly.', model });
        const seen = [];
        // Keeps the stored history but leaves reasoning out of what the model gets.
        const sessionInputCallback = (historyItems, newItems) => {
          seen.push({ history: structuredClone(historyItems), newItems: structuredClone(newItems) });
          return [...historyItems.filter((i) => i.type !== 'reasoning'), ...newItems];
        };
        const newInput = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And now?' }] }];
        const writes = recordWrites(session);
        await run(agent, newInput, { session, sessionInputCallback });
        const afterFirst = await session.getItems();
        await run(agent, 'Sure?', { session, sessionInputCallback });
        model.assertComplete();
        return {
          seen,
          inputs: model.calls.map((call) => call.request.input),
          afterFirst,
          stored: await session.getItems(),
          writes: writes.flat(),
          newInput,
        };
      },
      { id, history },
    );
    // The callback gets the stored history exactly as added: every shape, every field.
    assert.deepStrictEqual(r.seen[0].history, history);
    assert.deepStrictEqual(r.seen[0].newItems, r.newInput);
    // Its result is what the model gets.
    assert.deepStrictEqual(r.inputs[0], [...history.filter((i) => i.type !== 'reasoning'), ...r.newInput]);
    // What the SDK wrote after the turn (the new input, the reasoning and the answer) comes back
    // as written, after the untouched earlier history.
    assert.deepStrictEqual(r.afterFirst.slice(0, history.length), history);
    assert.deepStrictEqual(r.afterFirst.slice(history.length), r.writes.slice(0, r.afterFirst.length - history.length));
    assert.deepEqual(
      r.afterFirst.slice(history.length).map((i) => i.type ?? i.role),
      ['message', 'reasoning', 'message'],
    );
    // The second turn's callback sees all of it, unchanged, including the model's reasoning item.
    assert.deepStrictEqual(r.seen[1].history, r.afterFirst);
    assert.equal(r.seen[1].history.find((i) => i.id === 'rs_2')?.providerData?.encrypted_content, 'more-opaque==');
    assert.deepStrictEqual(r.stored, [...history, ...r.writes]);
  });
});

describe('@openai/agents run() and the optional history capabilities of IndexedDbSession', () => {
  let context;
  let page;
  before(async () => {
    ({ context, page } = await openSdkPage());
  });
  after(async () => {
    await context?.close();
  });

  test('output guardrail tripwire: the blocked turn is persisted with applyHistoryTransaction, as the SDK MemorySession persists it, by IndexedDbSession, MemorySession and EncryptedSession alike', async () => {
    const id = 'guardrail-blocked';
    const r = await page.evaluate(async (id) => {
      const { Agent, run, tool, z, ScriptedModel, assistantMessage, functionCall } = sdk;
      const { MemorySession, OutputGuardrailTripwireTriggered } = sdk;
      // One conversation, the same for every session: a first turn the guardrail lets through,
      // then a turn in which a real tool runs before the final answer, which the guardrail blocks.
      const conversation = async (session) => {
        const ran = [];
        const getWeather = tool({
          name: 'get_weather',
          description: 'The weather in a city.',
          parameters: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            ran.push(city);
            return `Sunny in ${city}`;
          },
        });
        const checked = [];
        const noSecrets = {
          name: 'no_secrets',
          execute: async ({ agentOutput }) => {
            checked.push(agentOutput);
            return { tripwireTriggered: /password/i.test(agentOutput), outputInfo: { reason: 'leaks a password' } };
          },
        };
        const model = new ScriptedModel([
          [assistantMessage('Hello! Ask me about the weather.')],
          [functionCall('get_weather', { city: 'Paris' }, { callId: 'call_paris' })],
          [assistantMessage('It is sunny in Paris. The admin password is hunter2.')],
        ]);
        const agent = new Agent({
          name: 'Weather desk',
          instructions: 'Use the tool for weather questions.',
          model,
          tools: [getWeather],
          outputGuardrails: [noSecrets],
        });
        // Counts the SDK's calls of the method and calls through to the session's own.
        const transactions = [];
        const apply = session.applyHistoryTransaction;
        session.applyHistoryTransaction = (...args) => {
          transactions.push(structuredClone(args[0]));
          return apply.apply(session, args);
        };
        const first = (await run(agent, 'Hi!', { session })).finalOutput;
        const afterFirst = await session.getItems();
        let rejected = null;
        try {
          await run(agent, 'What is the weather in Paris?', { session });
        } catch (error) {
          rejected = {
            tripwire: error instanceof OutputGuardrailTripwireTriggered,
            message: error.message,
            // The runner attaches a failure to persist the blocked turn here (it does not
            // replace the tripwire error).
            cause: error.cause === undefined ? null : String(error.cause?.message ?? error.cause),
          };
        }
        model.assertComplete();
        return { first, afterFirst, rejected, ran, checked, transactions, stored: await session.getItems() };
      };
      return {
        reference: await conversation(new MemorySession({ sessionId: id })),
        ours: await conversation(new lib.IndexedDbSession(id)),
        // Each of this package's other sessions, as the SDK's session: the same history.
        memory: await conversation(new lib.MemorySession(id)),
        encrypted: await conversation(new lib.EncryptedSession(new lib.IndexedDbSession(`${id}-encrypted`), { key: crypto.getRandomValues(new Uint8Array(32)) })),
      };
    }, id);

    for (const [name, run] of Object.entries(r)) {
      assert.equal(run.first, 'Hello! Ask me about the weather.', `${name}: the first turn passes`);
      assert.deepEqual(run.rejected, {
        tripwire: true,
        message: 'Output guardrail triggered: {"reason":"leaks a password"}',
        cause: null,
      }, `${name}: the run rejects with the tripwire error, and the blocked turn was persisted without error`);
      assert.deepEqual(run.ran, ['Paris'], `${name}: the tool ran before the final answer`);
      assert.deepEqual(run.checked, ['Hello! Ask me about the weather.', 'It is sunny in Paris. The admin password is hunter2.']);
      // The SDK persisted the blocked turn with one transaction: an append of the turn's input
      // and the tool call with its result (the replay-safe items), without the blocked answer.
      assert.equal(run.transactions.length, 1, `${name}: applyHistoryTransaction called once`);
      assert.match(run.transactions[0].operationId, /^[0-9a-f-]{36}:\d+:blocked_append:\d+:\d+$/);
      assert.equal(run.transactions[0].transaction.type, 'append_items');
    }
    // The operationId starts with a random UUID of the run's state; nothing else differs.
    const withoutRunId = ({ operationId, transaction }) => ({
      operationId: operationId.replace(/^[0-9a-f-]{36}:/, '<run>:'),
      transaction,
    });
    assert.deepStrictEqual(withoutRunId(r.ours.transactions[0]), withoutRunId(r.reference.transactions[0]));
    assert.deepEqual(transcript(r.ours.transactions[0].transaction.items), [
      ['user', 'What is the weather in Paris?'],
      ['function_call', 'call_paris {"city":"Paris"}'],
      ['function_call_result', 'call_paris Sunny in Paris'],
    ]);

    // The two histories are equal item by item. (The SDK strips the ids of function calls
    // before persisting and adds no random ids to these items, so nothing needs normalising.)
    for (const name of ['ours', 'memory', 'encrypted']) {
      assert.deepStrictEqual(r[name].afterFirst, r.reference.afterFirst, name);
      assert.deepStrictEqual(r[name].stored, r.reference.stored, name);
    }
    assert.deepEqual(transcript(r.ours.stored), [
      ['user', 'Hi!'],
      ['assistant', 'Hello! Ask me about the weather.'],
      ['user', 'What is the weather in Paris?'],
      ['function_call', 'call_paris {"city":"Paris"}'],
      ['function_call_result', 'call_paris Sunny in Paris'],
    ]);
    assert.ok(!JSON.stringify(r.ours.stored).includes('hunter2'), 'the blocked answer is not stored');
    assert.deepStrictEqual(r.ours.stored, [...r.ours.afterFirst, ...r.ours.transactions[0].transaction.items]);

    // After a reload a new object for the session reads the same history, and the operation is
    // remembered: the runner's retry of it (same operationId, same transaction) changes nothing.
    await reload(page);
    const after = await page.evaluate(async ({ id, tx }) => {
      const session = new lib.IndexedDbSession(id);
      const stored = await session.getItems();
      await session.applyHistoryTransaction(tx);
      return { stored, afterRetry: await session.getItems() };
    }, { id, tx: r.ours.transactions[0] });
    assert.deepStrictEqual(after.stored, r.reference.stored);
    assert.deepStrictEqual(after.afterRetry, r.reference.stored);
  });

  test('model output with a compaction item: the runner replaces the history with replaceHistoryWithCompaction, and the archive keeps the replaced items', async () => {
    const id = 'runner-compaction';
    const compaction = { type: 'compaction', id: 'cmp_1', encrypted_content: 'opaque-compacted-state' };
    const r = await page.evaluate(async ({ id, compaction }) => {
      const { Agent, run, ScriptedModel, assistantMessage } = sdk;
      const session = new lib.IndexedDbSession(id);
      // Every call the SDK makes on the session, each calling through to the session's own.
      const calls = [];
      for (const name of ['getItems', 'addItems', 'popItem', 'clearSession', 'replaceHistoryWithCompaction', 'applyHistoryTransaction']) {
        const method = session[name];
        session[name] = (...args) => {
          calls.push([name, ...args.map((a) => (Array.isArray(a) ? structuredClone(a) : a))]);
          return method.apply(session, args);
        };
      }
      const model = new ScriptedModel([
        [assistantMessage('Paris is in France.')],
        [assistantMessage('Tokyo is in Japan.')],
        // The model's output starts with a compaction item (as server-side compaction returns).
        [compaction, assistantMessage('Lima is in Peru.')],
        [assistantMessage('Quito is in Ecuador.')],
      ]);
      const agent = new Agent({ name: 'Geography tutor', instructions: 'Answer briefly.', model });
      const turns = [];
      for (const q of ['Where is Paris?', 'Where is Tokyo?', 'Where is Lima?', 'Where is Quito?']) {
        calls.length = 0;
        const output = (await run(agent, q, { session })).finalOutput;
        turns.push({
          output,
          calls: [...calls],
          stored: await session.getItems(),
          archived: await session.getArchivedItems(),
        });
      }
      model.assertComplete();
      return { turns, inputs: model.calls.map((call) => call.request.input) };
    }, { id, compaction });

    const names = (calls) => calls.map(([name]) => name);
    assert.deepEqual(r.turns.map((t) => t.output), ['Paris is in France.', 'Tokyo is in Japan.', 'Lima is in Peru.', 'Quito is in Ecuador.']);
    const [one, two, three, four] = r.turns;
    assert.deepEqual(names(one.calls), ['getItems', 'addItems']);
    assert.deepEqual(names(two.calls), ['getItems', 'addItems']);
    assert.deepEqual(two.archived, [], 'nothing archived before the compaction');
    // Turn 3: one call of replaceHistoryWithCompaction, not clearSession + addItems.
    assert.deepEqual(names(three.calls), ['getItems', 'getItems', 'replaceHistoryWithCompaction']);
    const [, replacement] = three.calls.at(-1);
    assert.deepStrictEqual(replacement, [compaction, four.stored[1]]);
    assert.deepEqual(transcript(replacement), [['compaction', ''], ['assistant', 'Lima is in Peru.']]);
    // The history is the compacted one, and the archive holds what it replaced, in order. The
    // turn's own question is in neither: the runner keeps only the items from the compaction
    // item on (trimToLatestCompaction), as the compaction item stands for what came before.
    assert.deepStrictEqual(three.stored, replacement);
    assert.deepStrictEqual(three.archived, two.stored);
    assert.deepEqual(transcript(three.archived), [
      ['user', 'Where is Paris?'],
      ['assistant', 'Paris is in France.'],
      ['user', 'Where is Tokyo?'],
      ['assistant', 'Tokyo is in Japan.'],
    ]);
    // Turn 4 appends after the compacted history; the model sees it from the compaction item on.
    assert.deepEqual(names(four.calls), ['getItems', 'addItems']);
    assert.deepStrictEqual(r.inputs[3], [...three.stored, { type: 'message', role: 'user', content: 'Where is Quito?' }]);
    assert.deepEqual(transcript(four.stored), [
      ['compaction', ''],
      ['assistant', 'Lima is in Peru.'],
      ['user', 'Where is Quito?'],
      ['assistant', 'Quito is in Ecuador.'],
    ]);
    assert.deepStrictEqual(four.archived, three.archived);
    assert.ok(!r.turns.flatMap((t) => names(t.calls)).some((n) => n === 'clearSession' || n === 'popItem'));

    // After a reload a new object for the session reads the compacted history and the archive.
    await reload(page);
    const after = await page.evaluate(async (id) => {
      const session = new lib.IndexedDbSession(id);
      return { stored: await session.getItems(), archived: await session.getArchivedItems() };
    }, id);
    assert.deepStrictEqual(after.stored, four.stored);
    assert.deepStrictEqual(after.archived, three.archived);
  });

  test('a CompactionSession over IndexedDbSession: the SDK calls runCompaction after the turn, and the replaced items are archived', async () => {
    const r = await page.evaluate(async () => {
      const { Agent, run, ScriptedModel, assistantMessage } = sdk;
      const { Runner, CompactionSession } = await import('/pkg/runner.js');
      // The compaction's model: any OpenAI-compatible server; here a fetch that answers the
      // summary request in the Chat Completions format.
      const asked = [];
      const fetch = async (_url, init) => {
        asked.push(JSON.parse(init.body));
        const message = { role: 'assistant', content: 'Ann asked about the weather in 10 cities.' };
        return new Response(JSON.stringify({ id: 's', choices: [{ message }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
      };
      const inner = new lib.IndexedDbSession('sdk-compaction');
      const earlier = [];
      // Ten answers: with the SDK turn's, 11 candidates, past the default threshold of 10.
      for (let i = 0; i < 10; i++) {
        earlier.push({ role: 'user', content: `weather in city ${i}?` }, { role: 'assistant', content: `sunny in city ${i}` });
      }
      await inner.addItems(earlier);
      const session = new CompactionSession(inner, { runner: new Runner({ baseUrl: 'http://model.invalid/v1', fetch }), model: 'summariser', keepTurns: 1 });
      const calls = [];
      const runCompaction = session.runCompaction.bind(session);
      session.runCompaction = (...args) => (calls.push(args[0] ?? null), runCompaction(...args));
      const agent = new Agent({ name: 'Weather', model: new ScriptedModel([[assistantMessage('Rainy in city 6.')]]) });
      const result = await run(agent, 'and city 6?', { session });
      return {
        finalOutput: result.finalOutput,
        calls: calls.length,
        asked: asked.length,
        history: await inner.getItems(),
        archived: await inner.getArchivedItems(),
      };
    });
    assert.equal(r.finalOutput, 'Rainy in city 6.');
    assert.equal(r.calls, 1, 'the SDK called runCompaction once, after the turn');
    assert.equal(r.asked, 1);
    assert.equal(r.history[0].role, 'system');
    assert.match(r.history[0].content, /Ann asked about the weather in 10 cities/);
    assert.deepEqual(
      r.history.slice(1).map((i) => i.content),
      ['and city 6?', [{ type: 'output_text', text: 'Rainy in city 6.' }]],
    );
    assert.equal(r.archived.length, 20, 'the 20 earlier items, in order (the SDK turn, kept, is not)');
    assert.equal(r.archived[0].content, 'weather in city 0?');
    assert.equal(r.archived[19].content, 'sunny in city 9');
  });

  test('half an emoji (a lone surrogate, as a text sliced by UTF-16 units holds) in a history: the SDK’s blocked-turn transaction and a CompactionSession’s compaction work on it, as on the SDK’s MemorySession', async () => {
    const r = await page.evaluate(async () => {
      const { Agent, run, tool, z, ScriptedModel, assistantMessage, functionCall, MemorySession } = sdk;
      const { Runner, CompactionSession } = await import('/pkg/runner.js');
      const half = 'Sunny 👋🏽'.slice(0, 7);
      // A tool whose output holds it, then an answer an output guardrail blocks.
      const blocked = async (session) => {
        const weather = tool({ name: 'get_weather', description: 'The weather.', parameters: z.object({ city: z.string() }), execute: async () => half });
        const agent = new Agent({
          name: 'Weather',
          model: new ScriptedModel([[functionCall('get_weather', { city: 'Paris' }, { callId: 'call_paris' })], [assistantMessage('The password is hunter2.')]]),
          tools: [weather],
          outputGuardrails: [{ name: 'no_secrets', execute: async ({ agentOutput }) => ({ tripwireTriggered: /password/.test(agentOutput), outputInfo: {} }) }],
        });
        const cause = await run(agent, 'Weather in Paris?', { session }).then(
          () => 'not blocked',
          (e) => (e.cause === undefined ? null : String(e.cause?.message ?? e.cause)),
        );
        // (JSON.stringify writes a lone surrogate as its escape: the texts compare exactly.)
        return { cause, stored: JSON.stringify(await session.getItems()) };
      };
      const reference = await blocked(new MemorySession({ sessionId: 'half-ref' }));
      const ours = await blocked(new lib.IndexedDbSession('half-blocked'));
      const memory = await blocked(new lib.MemorySession('half-blocked'));
      // A CompactionSession the SDK asks to compact after a turn, over a history holding it.
      const fetch = async () => new Response(JSON.stringify({ id: 's', choices: [{ message: { role: 'assistant', content: 'Ann asked about the weather.' } }] }));
      const inner = new lib.IndexedDbSession('half-compaction');
      const earlier = [];
      for (let i = 0; i < 10; i++) earlier.push({ role: 'user', content: `weather in city ${i}?` }, { role: 'assistant', content: i === 3 ? half : `sunny in city ${i}` });
      await inner.addItems(earlier);
      const session = new CompactionSession(inner, { runner: new Runner({ baseUrl: 'http://model.invalid/v1', fetch }), model: 'summariser', keepTurns: 1 });
      const agent = new Agent({ name: 'Weather', model: new ScriptedModel([[assistantMessage('Rainy.')]]) });
      const compacted = await run(agent, 'and city 6?', { session }).then(
        (result) => result.finalOutput,
        (e) => `${e.name}: ${e.message}`,
      );
      const archived = await inner.getArchivedItems();
      return { reference, ours, memory, compacted, kept: (await inner.getItems()).length, archived: archived.length, halfArchived: archived[7]?.content === half };
    });
    assert.equal(r.reference.cause, null);
    for (const name of ['ours', 'memory']) {
      assert.equal(r[name].cause, null, `${name}: the blocked turn was persisted without error`);
      assert.equal(r[name].stored, r.reference.stored, `${name}: the same history as the SDK's MemorySession, exactly`);
    }
    assert.match(r.reference.stored, /\\ud83d/);
    assert.equal(r.compacted, 'Rainy.', 'the run answers: its compaction did not fail');
    assert.equal(r.kept, 3, 'the summary and the kept turn');
    assert.equal(r.archived, 20);
    assert.equal(r.halfArchived, true, 'the item holding it archived as it was');
  });

  test('settings.turns: the SDK run() sends only the newest whole turns, because it calls getItems()', async () => {
    const r = await page.evaluate(async () => {
      const { Agent, run, ScriptedModel, assistantMessage } = sdk;
      const model = new ScriptedModel([[assistantMessage('one')], [assistantMessage('two')], [assistantMessage('three')]]);
      const agent = new Agent({ name: 'Short memory', model });
      const session = new lib.IndexedDbSession('sdk-turns', { settings: { turns: 1 } });
      for (const q of ['first', 'second', 'third']) await run(agent, q, { session });
      return {
        inputs: model.calls.map((call) => call.request.input.map((i) => (typeof i.content === 'string' ? i.content : i.content?.[0]?.text))),
        stored: (await new lib.IndexedDbSession('sdk-turns').getItems()).length,
      };
    });
    assert.deepEqual(r.inputs, [['first'], ['first', 'one', 'second'], ['second', 'two', 'third']]);
    assert.equal(r.stored, 6, 'everything is kept; only what is sent is bounded');
  });
});
