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
