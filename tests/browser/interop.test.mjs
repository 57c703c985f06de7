// One conversation, two runners: histories this package's runner writes are read and continued by
// @openai/agents' run(), and the other way round, tool calls included. The SDK is bundled for the
// browser; its model is its own ScriptedModel, ours a fetch that answers inside the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { bundleSdk } from './sdk-bundle.mjs';

let env;
let page;
before(async () => {
  await bundleSdk();
  env = await start();
  const context = await env.browser.newContext();
  page = await context.newPage();
  await page.goto(`${env.url}/tests/pages/interop.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
});
after(async () => {
  await env?.close();
});

/** `[role or type, text]` per item, whatever shape the item has. */
function transcript(items) {
  return items.map((item) => {
    if (item.type === 'function_call') return ['function_call', `${item.callId ?? item.call_id} ${item.name}`];
    if (item.type === 'function_call_result') return ['function_call_result', `${item.callId} ${item.output?.text ?? item.output}`];
    const text = typeof item.content === 'string' ? item.content : item.content.map((p) => p.text ?? '').join('');
    return [item.role, text];
  });
}

test("this package's runner writes, @openai/agents reads the history and continues it", async () => {
  const r = await page.evaluate(async () => {
    const session = new lib.IndexedDbSession('ours-then-sdk');
    const { fetch } = scriptedFetch([
      { calls: [{ id: 'call_ours', name: 'get_weather', arguments: { city: 'Paris' } }] },
      { text: 'It is sunny in Paris.' },
    ]);
    const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch });
    const tools = [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, execute: ({ city }) => `Sunny in ${city}` }];
    await runner.run(new lib.Agent({ name: 'Ours', model: 'm', tools }), 'Weather in Paris?', { session });

    const { Agent, run, ScriptedModel, assistantMessage } = sdk;
    const model = new ScriptedModel([[assistantMessage('You asked about Paris.')]]);
    const result = await run(new Agent({ name: 'SDK', model }), 'What did I ask?', { session });
    return {
      sdkSaw: model.calls[0].request.input,
      finalOutput: result.finalOutput,
      stored: await session.getItems(),
    };
  });
  const ourTurn = [
    ['user', 'Weather in Paris?'],
    ['function_call', 'call_ours get_weather'],
    ['function_call_result', 'call_ours Sunny in Paris'],
    ['assistant', 'It is sunny in Paris.'],
  ];
  assert.deepEqual(transcript(r.sdkSaw), [...ourTurn, ['user', 'What did I ask?']]);
  assert.equal(r.finalOutput, 'You asked about Paris.');
  assert.deepEqual(transcript(r.stored), [...ourTurn, ['user', 'What did I ask?'], ['assistant', 'You asked about Paris.']]);
});

test("@openai/agents writes, this package's runner reads the history and continues it", async () => {
  const r = await page.evaluate(async () => {
    const session = new lib.IndexedDbSession('sdk-then-ours');
    const { Agent, run, tool, z, ScriptedModel, functionCall, assistantMessage } = sdk;
    const getWeather = tool({
      name: 'get_weather',
      description: 'The weather in a city.',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => `Rainy in ${city}`,
    });
    const model = new ScriptedModel([
      [functionCall('get_weather', { city: 'Oslo' }, { callId: 'call_sdk' })],
      [assistantMessage('It is rainy in Oslo.')],
    ]);
    await run(new Agent({ name: 'SDK', model, tools: [getWeather] }), 'Weather in Oslo?', { session });

    const { fetch, requests } = scriptedFetch([{ text: 'You asked about Oslo.' }]);
    const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch });
    const result = await runner.run(new lib.Agent({ name: 'Ours', model: 'm' }), 'What did I ask?', { session });
    return { sent: requests[0].messages, finalOutput: result.finalOutput, stored: await session.getItems() };
  });
  // The SDK's items, in the Chat Completions shape our runner sends.
  assert.deepEqual(r.sent, [
    { role: 'user', content: 'Weather in Oslo?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_sdk', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_sdk', content: 'Rainy in Oslo' },
    { role: 'assistant', content: 'It is rainy in Oslo.' },
    { role: 'user', content: 'What did I ask?' },
  ]);
  assert.equal(r.finalOutput, 'You asked about Oslo.');
  assert.deepEqual(transcript(r.stored).slice(-2), [
    ['user', 'What did I ask?'],
    ['assistant', 'You asked about Oslo.'],
  ]);
});

/** Items without the fields only one side writes (ids, provider data, keys set to
 * `undefined`), for comparing shapes. */
function shape(items) {
  return items.map(({ id, providerData, ...rest }) => Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)));
}

test('a handoff is saved as the SDK saves it; each runner continues the other one\'s handoff', async () => {
  const r = await page.evaluate(async () => {
    const { Agent, run, ScriptedModel, functionCall, assistantMessage, MemorySession } = sdk;
    // The SDK's own record of a handoff, for reference.
    const sdkBilling = new Agent({ name: 'Billing', model: new ScriptedModel([[assistantMessage('Billing here.')], [assistantMessage('Still billing.')]]) });
    const sdkTriage = new Agent({
      name: 'Triage',
      handoffs: [sdkBilling],
      model: new ScriptedModel([[functionCall('transfer_to_Billing', {}, { callId: 'call_h' })]]),
    });
    const reference = new MemorySession();
    const sdkResult = await run(sdkTriage, 'I need a refund', { session: reference });

    // Ours hands off; the SDK's Billing continues the same history.
    const session = new lib.IndexedDbSession('ours-handoff');
    const { fetch, requests } = scriptedFetch([{ calls: [{ id: 'call_h', name: 'transfer_to_Billing', arguments: {} }] }, { text: 'Billing here.' }]);
    const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch });
    const billing = new lib.Agent({ name: 'Billing', model: 'm' });
    const triage = new lib.Agent({ name: 'Triage', model: 'm', handoffs: [billing] });
    const ours = await runner.run(triage, 'I need a refund', { session });
    const oursStored = await session.getItems();
    await run(sdkBilling, 'And the invoice?', { session });
    const sdkSaw = sdkBilling.model.calls?.[1]?.request.input;

    // The SDK hands off; ours continues.
    const other = new lib.IndexedDbSession('sdk-handoff');
    const sdkTriage2 = new Agent({
      name: 'Triage',
      handoffs: [new Agent({ name: 'Billing', model: new ScriptedModel([[assistantMessage('Billing here.')]]) })],
      model: new ScriptedModel([[functionCall('transfer_to_Billing', {}, { callId: 'call_s' })]]),
    });
    await run(sdkTriage2, 'I need a refund', { session: other });
    const second = scriptedFetch([{ text: 'Invoice sent.' }]);
    const runner2 = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch: second.fetch });
    const continued = await runner2.run(billing, 'And the invoice?', { session: other });
    return {
      sdkLastAgent: sdkResult.lastAgent.name,
      oursLastAgent: ours.lastAgent.name,
      reference: await reference.getItems(),
      oursStored,
      sdkSaw,
      oursFirstRequest: requests[0],
      sentBySdkHistory: second.requests[0].messages,
      continued: continued.finalOutput,
    };
  });
  assert.equal(r.oursLastAgent, r.sdkLastAgent);
  assert.deepEqual(shape(r.oursStored), shape(r.reference), 'the same items as the SDK stores for the same handoff');
  assert.deepEqual(r.oursFirstRequest.tools.map((t) => t.function.name), ['transfer_to_Billing']);
  assert.deepEqual(transcript(r.sdkSaw ?? []).slice(0, 4), transcript(r.oursStored), "the SDK's next run reads our handoff as its own");
  assert.deepEqual(r.sentBySdkHistory, [
    { role: 'user', content: 'I need a refund' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_s', type: 'function', function: { name: 'transfer_to_Billing', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_s', content: '{"assistant":"Billing"}' },
    { role: 'assistant', content: 'Billing here.' },
    { role: 'user', content: 'And the invoice?' },
  ]);
  assert.equal(r.continued, 'Invoice sent.');
});

test('a handoff tool is named as the SDK names it, for agent names beyond ASCII (an emoji is two UTF-16 units, so two `_`)', async () => {
  const r = await page.evaluate(async () => {
    const names = ['🧳 Packer', 'Café-Team', 'Billing'];
    const { fetch, requests } = scriptedFetch([{ text: 'Hello.' }]);
    const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch });
    const targets = names.map((name) => new lib.Agent({ name, model: 'm' }));
    await runner.run(new lib.Agent({ name: 'Triage', model: 'm', handoffs: targets }), 'hi');
    return {
      ours: requests[0].tools.map((t) => t.function.name),
      sdk: names.map((name) => sdk.handoff(new sdk.Agent({ name })).toolName),
    };
  });
  assert.deepEqual(r.sdk, ['transfer_to____Packer', 'transfer_to_Caf__Team', 'transfer_to_Billing'], 'the SDK’s names, for reference');
  assert.deepEqual(r.ours, r.sdk);
});

test('guardrail tripwires leave the session as the SDK leaves its MemorySession', async () => {
  const r = await page.evaluate(async () => {
    const { Agent, run, tool, z, ScriptedModel, functionCall, assistantMessage, MemorySession } = sdk;
    const blockInput = { name: 'block_input', runInParallel: false, execute: async () => ({ tripwireTriggered: true, outputInfo: 'no' }) };
    const blockSecret = { name: 'block_secret', execute: async ({ agentOutput }) => ({ tripwireTriggered: /secret/.test(agentOutput), outputInfo: 'secret' }) };
    const earlier = [{ role: 'user', content: 'earlier' }, { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }];

    const sdkRun = async (guard, kind) => {
      const session = new MemorySession();
      await session.addItems(earlier);
      const weather = tool({ name: 'weather', description: 'w', parameters: z.object({ city: z.string() }), execute: async ({ city }) => `Sunny in ${city}` });
      const model = new ScriptedModel([[functionCall('weather', { city: 'Rome' }, { callId: 'call_w' })], [assistantMessage('The secret is 42.')]]);
      const agent = new Agent({ name: 'A', model, tools: [weather], [kind]: [guard] });
      let error;
      try {
        await run(agent, 'Weather in Rome?', { session });
      } catch (e) {
        error = e.constructor.name;
      }
      return { error, items: await session.getItems() };
    };
    const ourRun = async (guard, kind, plain) => {
      const inner = new lib.IndexedDbSession(`guard-${kind}-${plain}`);
      await inner.addItems(earlier);
      // A session with only the four protocol methods: no history transactions.
      const session = plain
        ? { getSessionId: () => inner.getSessionId(), getItems: (n) => inner.getItems(n), addItems: (i) => inner.addItems(i), popItem: () => inner.popItem(), clearSession: () => inner.clearSession() }
        : inner;
      const { fetch } = scriptedFetch([{ calls: [{ id: 'call_w', name: 'weather', arguments: { city: 'Rome' } }] }, { text: 'The secret is 42.' }]);
      const agent = new lib.Agent({ name: 'A', model: 'm', tools: [{ name: 'weather', execute: ({ city }) => `Sunny in ${city}` }], [kind]: [guard] });
      let error;
      try {
        await new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch }).run(agent, 'Weather in Rome?', { session });
      } catch (e) {
        error = e.name;
      }
      return { error, items: await inner.getItems() };
    };
    const plainSdk = async () => {
      // The SDK over a session without history transactions.
      const inner = new MemorySession();
      await inner.addItems(earlier);
      const session = { getSessionId: () => inner.getSessionId(), getItems: (n) => inner.getItems(n), addItems: (i) => inner.addItems(i), popItem: () => inner.popItem(), clearSession: () => inner.clearSession() };
      const weather = tool({ name: 'weather', description: 'w', parameters: z.object({ city: z.string() }), execute: async ({ city }) => `Sunny in ${city}` });
      const model = new ScriptedModel([[functionCall('weather', { city: 'Rome' }, { callId: 'call_w' })], [assistantMessage('The secret is 42.')]]);
      try {
        await run(new Agent({ name: 'A', model, tools: [weather], outputGuardrails: [blockSecret] }), 'Weather in Rome?', { session });
      } catch {}
      return inner.getItems();
    };
    return {
      sdkInput: await sdkRun(blockInput, 'inputGuardrails'),
      ourInput: await ourRun(blockInput, 'inputGuardrails', false),
      sdkOutput: await sdkRun(blockSecret, 'outputGuardrails'),
      ourOutput: await ourRun(blockSecret, 'outputGuardrails', false),
      sdkPlain: await plainSdk(),
      ourPlain: (await ourRun(blockSecret, 'outputGuardrails', true)).items,
    };
  });
  assert.equal(r.sdkInput.error, 'InputGuardrailTripwireTriggered');
  assert.equal(r.ourInput.error, r.sdkInput.error);
  assert.deepEqual(transcript(r.ourInput.items), transcript(r.sdkInput.items));
  assert.equal(r.sdkOutput.error, 'OutputGuardrailTripwireTriggered');
  assert.equal(r.ourOutput.error, r.sdkOutput.error);
  assert.deepEqual(transcript(r.ourOutput.items), transcript(r.sdkOutput.items), 'with history transactions: the tool call and output, not the blocked answer');
  assert.equal(r.ourOutput.items.length, 5);
  assert.deepEqual(transcript(r.ourPlain), transcript(r.sdkPlain), 'without: the question only');
  assert.equal(r.ourPlain.length, 3);
});
