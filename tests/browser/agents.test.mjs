// The package as the `session` of @openai/agents 0.20 in headless Chromium: multi-turn runs, a
// reload in the middle of a conversation, the tool approval flow with a run state restored from
// its string, OpenAIResponsesCompactionSession over our session, and sessionInputCallback.
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
