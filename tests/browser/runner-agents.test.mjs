// What the runner does beyond one agent answering: handoffs, structured output, guardrails,
// dynamic instructions, tools run at once, toolUseBehavior and lifecycle events. In headless
// Chromium against the local model server (another origin), in both wire formats, whole and
// streamed.
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
beforeEach(() => {
  model.reset();
  model.state.deltaDelayMs = 2;
});

let counter = 0;
const fresh = (p) => `${p}-${++counter}`;

function inPage(body, args = {}) {
  return runInPage(page, body, args, model.url);
}

const sent = (req) => req.body.messages ?? req.body.input;
const toolNames = (req) => (req.body.tools ?? []).map((t) => t.name ?? t.function.name);
const systemText = (req) => req.body.instructions ?? req.body.messages.find((m) => m.role === 'system')?.content;

/** `[role or type, text]` per stored item. */
function transcript(items) {
  return items.map((item) => {
    if (item.type === 'function_call') return ['function_call', `${item.callId} ${item.name}`];
    if (item.type === 'function_call_result') return ['function_call_result', `${item.callId} ${item.output?.text}`];
    const text = typeof item.content === 'string' ? item.content : item.content.map((p) => p.text ?? '').join('');
    return [item.role, text];
  });
}

for (const api of ['chat_completions', 'responses']) {
  for (const streamed of [false, true]) {
    const how = `${api}, ${streamed ? 'streamed' : 'whole'}`;
    describe(`runner agents (${how})`, () => {
      test('a handoff mid-run: the specialist answers with its own instructions and tools, the history holds the transfer', async () => {
        model.script(
          { calls: [{ id: 'call_look', name: 'lookup', arguments: { order: 7 } }, { id: 'call_h', name: 'transfer_to_Billing_desk', arguments: {} }] },
          { text: 'Refund issued for order 7.' },
        );
        const id = fresh('handoff');
        const r = await inPage(
          async ({ url, api, id, streamed }) => {
            const billing = new lib.Agent({
              name: 'Billing desk',
              handoffDescription: 'Refunds and invoices.',
              instructions: 'You handle billing.',
              model: 'billing-model',
              tools: [{ name: 'refund', execute: () => 'ok' }],
            });
            const triage = new lib.Agent({
              name: 'Triage',
              instructions: 'Route the user.',
              model: 'triage-model',
              tools: [{ name: 'lookup', execute: ({ order }) => `order ${order}: paid` }],
              handoffs: [billing],
            });
            const runner = new lib.Runner({ baseUrl: url, api });
            const events = [];
            runner.on('agent_start', (ctx, agent) => events.push(['agent_start', agent.name, ctx?.user]));
            runner.on('tool_start', (ctx, agent, tool, { toolCall }) => events.push(['tool_start', agent.name, tool.name, toolCall.callId]));
            runner.on('tool_end', (ctx, agent, tool, output) => events.push(['tool_end', agent.name, tool.name, output]));
            runner.on('handoff', (ctx, from, to) => events.push(['handoff', from.name, to.name]));
            runner.on('agent_end', (ctx, agent, output) => events.push(['agent_end', agent.name, output]));
            const session = new lib.IndexedDbSession(id);
            const options = { session, context: { user: 'ann' } };
            let result;
            const streamEvents = [];
            // A loop written for the SDK's stream.
            const sdkEvents = [];
            let sdkText = '';
            if (streamed) {
              const run = runner.runStreamed(triage, 'I want a refund for order 7', options);
              for await (const e of run) {
                if (['agent_start', 'agent_end', 'handoff', 'tool_start', 'tool_end'].includes(e.type)) {
                  streamEvents.push([e.type, e.agent?.name ?? `${e.from.name}>${e.to.name}`]);
                }
                if (e.type === 'raw_model_stream_event' && e.data.type === 'output_text_delta') sdkText += e.data.delta;
                if (e.type === 'run_item_stream_event') {
                  const { item } = e;
                  const who = item.agent?.name ?? `${item.sourceAgent.name}>${item.targetAgent.name}`;
                  const what = item.type === 'message_output_item' ? item.content : item.type === 'tool_call_output_item' ? item.output : (item.rawItem.callId ?? item.rawItem.type);
                  sdkEvents.push([e.name, item.type, who, what]);
                }
                if (e.type === 'agent_updated_stream_event') sdkEvents.push(['agent_updated', e.agent === billing]);
              }
              result = await run.result;
            } else {
              result = await runner.run(triage, 'I want a refund for order 7', options);
            }
            return {
              finalOutput: result.finalOutput,
              lastAgentIsBilling: result.lastAgent === billing,
              lastAgentName: result.lastAgent.name,
              handoffNames: triage.handoffs.map((a) => a.name),
              newItems: result.newItems,
              stored: await session.getItems(),
              events,
              streamEvents,
              sdkEvents,
              sdkText,
            };
          },
          { api, id, streamed },
        );
        assert.equal(r.finalOutput, 'Refund issued for order 7.');
        assert.equal(r.lastAgentIsBilling, true, 'result.lastAgent is the Agent that answered');
        assert.equal(r.lastAgentName, 'Billing desk');
        assert.deepEqual(r.handoffNames, ['Billing desk']);
        const [first, second] = model.requests;
        assert.equal(first.body.model, 'triage-model');
        assert.deepEqual(toolNames(first), ['lookup', 'transfer_to_Billing_desk']);
        const handoffTool = (first.body.tools ?? []).find((t) => (t.name ?? t.function.name) === 'transfer_to_Billing_desk');
        const spec = handoffTool.function ?? handoffTool;
        assert.equal(spec.description, 'Handoff to the Billing desk agent to handle the request. Refunds and invoices.');
        assert.deepEqual(spec.parameters, { type: 'object', properties: {}, required: [], additionalProperties: false });
        assert.equal(systemText(first), 'Route the user.');
        assert.equal(second.body.model, 'billing-model', 'after the handoff the specialist answers');
        assert.deepEqual(toolNames(second), ['refund']);
        assert.equal(systemText(second), 'You handle billing.');
        const expected = [
          ['user', 'I want a refund for order 7'],
          ['function_call', 'call_look lookup'],
          ['function_call', 'call_h transfer_to_Billing_desk'],
          ['function_call_result', 'call_look order 7: paid'],
          ['function_call_result', 'call_h {"assistant":"Billing desk"}'],
          ['assistant', 'Refund issued for order 7.'],
        ];
        assert.deepEqual(transcript(r.stored), expected, 'the SDK order: calls, their outputs, the handoff output, the answer');
        assert.deepEqual(transcript(r.newItems), expected.slice(1));
        assert.deepEqual(r.events, [
          ['agent_start', 'Triage', 'ann'],
          ['tool_start', 'Triage', 'lookup', 'call_look'],
          ['tool_end', 'Triage', 'lookup', 'order 7: paid'],
          ['handoff', 'Triage', 'Billing desk'],
          ['agent_start', 'Billing desk', 'ann'],
          ['agent_end', 'Billing desk', 'Refund issued for order 7.'],
        ]);
        if (streamed) {
          assert.deepEqual(r.streamEvents, [
            ['agent_start', 'Triage'],
            ['tool_start', 'Triage'],
            ['tool_end', 'Triage'],
            ['handoff', 'Triage>Billing desk'],
            ['agent_start', 'Billing desk'],
            ['agent_end', 'Billing desk'],
          ]);
          assert.deepEqual(r.sdkEvents, [
            ['tool_called', 'tool_call_item', 'Triage', 'call_look'],
            ['handoff_requested', 'handoff_call_item', 'Triage', 'call_h'],
            ['tool_output', 'tool_call_output_item', 'Triage', 'order 7: paid'],
            ['handoff_occurred', 'handoff_output_item', 'Triage>Billing desk', 'call_h'],
            ['agent_updated', true],
            ['message_output_created', 'message_output_item', 'Billing desk', 'Refund issued for order 7.'],
          ], 'the SDK’s stream events, in its order');
          assert.equal(r.sdkText, 'Refund issued for order 7.');
        }
      });

      test('structured output: the answer is parsed and checked against the schema; a malformed one is a ModelBehaviorError', async () => {
        model.script({ text: '{"city":"Oslo","temperature":3}' }, { text: 'It is 3 degrees in Oslo' }, { text: '{"city":"Oslo","temperature":"cold"}' });
        const id = fresh('structured');
        const r = await inPage(
          async ({ url, api, id, streamed }) => {
            const agent = new lib.Agent({
              name: 'Weather',
              model: 'm',
              outputType: {
                type: 'json_schema',
                name: 'weather',
                strict: true,
                schema: {
                  type: 'object',
                  properties: { city: { type: 'string' }, temperature: { type: 'integer' } },
                  required: ['city', 'temperature'],
                  additionalProperties: false,
                },
              },
            });
            const runner = new lib.Runner({ baseUrl: url, api });
            const session = new lib.IndexedDbSession(id);
            // The answers told as items: a malformed one is not (it is not kept).
            const told = [];
            const go = async (q) => {
              if (!streamed) return runner.run(agent, q, { session });
              const run = runner.runStreamed(agent, q, { session });
              for await (const e of run) if (e.name === 'message_output_created') told.push(e.item.rawItem.content.map((p) => p.text).join(''));
              return run.result;
            };
            const good = await go('Weather in Oslo?');
            const errors = [];
            for (const q of ['And now?', 'And later?']) {
              try {
                await go(q);
                errors.push(null);
              } catch (e) {
                errors.push({ name: e.name, code: e.code, rawOutput: e.rawOutput, message: e.message, isError: e instanceof Error, state: 'state' in e });
              }
            }
            return { finalOutput: good.finalOutput, errors, stored: await session.getItems(), told };
          },
          { api, id, streamed },
        );
        assert.deepEqual(r.finalOutput, { city: 'Oslo', temperature: 3 });
        if (streamed) assert.deepEqual(r.told, ['{"city":"Oslo","temperature":3}'], 'only the answer that fits is told');
        const format = api === 'chat_completions' ? model.requests[0].body.response_format : model.requests[0].body.text;
        const schemaSent = api === 'chat_completions' ? format.json_schema : format.format;
        assert.equal(schemaSent.name, 'weather');
        assert.equal(schemaSent.strict, true);
        assert.deepEqual(schemaSent.schema.required, ['city', 'temperature']);
        const [notJson, wrongType] = r.errors;
        assert.equal(notJson.name, 'ModelBehaviorError');
        assert.equal(notJson.code, 'MODEL_BEHAVIOR');
        assert.equal(notJson.isError, true);
        assert.equal(notJson.rawOutput, 'It is 3 degrees in Oslo');
        assert.match(notJson.message, /not JSON/);
        assert.equal(wrongType.name, 'ModelBehaviorError');
        assert.match(wrongType.message, /\$\.temperature: expected integer, got string/);
        assert.equal(wrongType.rawOutput, '{"city":"Oslo","temperature":"cold"}');
        assert.deepEqual(
          transcript(r.stored),
          [
            ['user', 'Weather in Oslo?'],
            ['assistant', '{"city":"Oslo","temperature":3}'],
            ['user', 'And now?'],
            ['user', 'And later?'],
          ],
          'a rejected answer is not saved; the question is',
        );
      });

      test('a handoff is a use of the tools: an agent forced to call one is not forced again when the run comes back to it', async () => {
        model.script(
          { calls: [{ id: 'call_h1', name: 'transfer_to_Billing', arguments: {} }] },
          { calls: [{ id: 'call_h2', name: 'transfer_to_Triage', arguments: {} }] },
          { text: 'done' },
        );
        const r = await inPage(
          async ({ url, api, streamed }) => {
            const triage = new lib.Agent({ name: 'Triage', model: 'm', modelSettings: { toolChoice: 'required' } });
            const billing = new lib.Agent({ name: 'Billing', model: 'm', modelSettings: { toolChoice: 'required' } });
            triage.handoffs = [billing];
            billing.handoffs = [triage];
            const runner = new lib.Runner({ baseUrl: url, api });
            if (!streamed) return (await runner.run(triage, 'Help')).finalOutput;
            const run = runner.runStreamed(triage, 'Help');
            for await (const _ of run);
            return (await run.result).finalOutput;
          },
          { api, streamed },
        );
        assert.equal(r, 'done');
        assert.deepEqual(model.requests.map((q) => q.body.tool_choice), ['required', 'required', undefined], 'Triage, Billing, then Triage again, free to answer');
      });

      test('an answer that does not fit the output type after tools ran: the answer is not saved, the tool calls and outputs are (a retry would run them again), also in a session of the protocol alone', async () => {
        for (const plain of [false, true]) {
          model.script({ calls: [{ id: 'call_t', name: 'create_ticket', arguments: {} }] }, { text: 'Created T-1' });
          const id = fresh('structured-after-tools');
          const r = await inPage(
            async ({ url, api, id, streamed, plain }) => {
              let tickets = 0;
              const agent = new lib.Agent({
                name: 'Support',
                model: 'm',
                tools: [{ name: 'create_ticket', execute: () => `T-${++tickets}` }],
                outputType: { type: 'json_schema', name: 'ticket', schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false } },
              });
              const runner = new lib.Runner({ baseUrl: url, api });
              const stored = new lib.IndexedDbSession(id);
              // A session of the protocol alone (as an app's own): no history transactions.
              const session = !plain
                ? stored
                : {
                    getSessionId: () => stored.getSessionId(),
                    getItems: (n) => stored.getItems(n),
                    addItems: (items) => stored.addItems(items),
                    popItem: () => stored.popItem(),
                    clearSession: () => stored.clearSession(),
                  };
              let error;
              try {
                if (!streamed) await runner.run(agent, 'Open a ticket', { session });
                else {
                  const run = runner.runStreamed(agent, 'Open a ticket', { session });
                  for await (const _ of run);
                  await run.result;
                }
              } catch (e) {
                error = e.name;
              }
              return { error, tickets, stored: (await stored.getItems()).map((i) => i.type === 'message' || !i.type ? i.role : i.type) };
            },
            { api, id, streamed, plain },
          );
          assert.equal(r.error, 'ModelBehaviorError');
          assert.equal(r.tickets, 1);
          assert.deepEqual(r.stored, ['user', 'function_call', 'function_call_result'], `the call and its output, not the answer (plain: ${plain})`);
        }
      });

      test('input and output guardrails: a tripwire stops the run with the SDK error; what the session keeps; a run they let go on has their results', async () => {
        model.script(
          { calls: [{ id: 'call_w', name: 'weather', arguments: { city: 'Rome' } }] },
          { text: 'The secret code is 1234.' },
          { text: 'Nothing to hide.' },
        );
        const id = fresh('guardrails');
        const r = await inPage(
          async ({ url, api, id, streamed }) => {
            const seen = [];
            const noHomework = {
              name: 'no_homework',
              execute: async ({ input, context, agent }) => {
                seen.push({ kind: 'input', last: input.at(-1).content, context, agent: agent.name });
                const text = input.at(-1).content;
                // (A field of its own: the error's result, as a passing one's, holds what it returned.)
                return { tripwireTriggered: /homework/.test(text), outputInfo: { reason: 'homework' }, checkedBy: 'rules' };
              },
            };
            const noSecrets = {
              name: 'no_secrets',
              execute: ({ output, agentOutput, agent }) => {
                seen.push({ kind: 'output', output, same: output === agentOutput, agent: agent.name });
                return { tripwireTriggered: /secret/.test(output), outputInfo: 'leaks a secret' };
              },
            };
            const agent = new lib.Agent({
              name: 'Tutor',
              model: 'm',
              tools: [{ name: 'weather', execute: ({ city }) => `Sunny in ${city}` }],
              inputGuardrails: [noHomework],
              outputGuardrails: [noSecrets],
            });
            const runner = new lib.Runner({ baseUrl: url, api });
            const session = new lib.IndexedDbSession(id);
            await session.addItems([{ role: 'user', content: 'earlier' }]);
            const go = async (q) => {
              try {
                if (!streamed) return await runner.run(agent, q, { session, context: { who: 'kid' } });
                const run = runner.runStreamed(agent, q, { session, context: { who: 'kid' } });
                for await (const _ of run);
                const result = await run.result;
                // (The stream gives them too, once it ended.)
                if (run.outputGuardrailResults !== result.outputGuardrailResults) throw new Error('the stream’s results differ');
                return result;
              } catch (e) {
                return { error: { name: e.name, code: e.code, message: e.message, result: e.result, isError: e instanceof Error } };
              }
            };
            const input = await go('Do my homework');
            const afterInput = await session.getItems();
            const output = await go('What is the weather in Rome?');
            const stored = await session.getItems();
            const usage = await session.getSessionUsage();
            const passed = await go('Anything else?');
            const results = passed.error ?? {
              input: passed.inputGuardrailResults,
              output: passed.outputGuardrailResults.map(({ agent: a, ...rest }) => ({ ...rest, agent: a === agent ? 'Tutor' : String(a) })),
            };
            return { input: input.error, afterInput, output: output.error, stored, seen: seen.slice(0, 3), usage, results };
          },
          { api, id, streamed },
        );
        assert.equal(r.input.name, 'InputGuardrailTripwireTriggered');
        assert.equal(r.input.code, 'INPUT_GUARDRAIL_TRIPWIRE');
        assert.equal(r.input.isError, true);
        assert.equal(r.input.message, 'Input guardrail triggered: {"reason":"homework"}');
        assert.deepEqual(r.input.result, { guardrail: { type: 'input', name: 'no_homework' }, output: { tripwireTriggered: true, outputInfo: { reason: 'homework' }, checkedBy: 'rules' } });
        assert.deepEqual(transcript(r.afterInput), [['user', 'earlier']], 'a tripped input guardrail saves nothing, as the SDK');
        assert.equal(model.requests.length, 3, 'the tripped run never called the model (two calls for the blocked answer, one for the last run)');
        assert.equal(r.output.name, 'OutputGuardrailTripwireTriggered');
        assert.equal(r.output.code, 'OUTPUT_GUARDRAIL_TRIPWIRE');
        assert.equal(r.output.message, 'Output guardrail triggered: "leaks a secret"');
        assert.equal(r.output.result.guardrail.name, 'no_secrets');
        assert.equal(r.output.result.agentOutput, 'The secret code is 1234.');
        assert.equal(r.usage.requests, 2, 'the blocked run used the model twice, and its usage is kept');
        // IndexedDbSession takes history transactions: the tool call and its output are kept,
        // the blocked answer is not (the SDK's blocked_append).
        assert.deepEqual(transcript(r.stored), [
          ['user', 'earlier'],
          ['user', 'What is the weather in Rome?'],
          ['function_call', 'call_w weather'],
          ['function_call_result', 'call_w Sunny in Rome'],
        ]);
        assert.deepEqual(r.results, {
          input: [{ guardrail: { type: 'input', name: 'no_homework' }, output: { tripwireTriggered: false, outputInfo: { reason: 'homework' }, checkedBy: 'rules' } }],
          output: [{ guardrail: { type: 'output', name: 'no_secrets' }, output: { tripwireTriggered: false, outputInfo: 'leaks a secret' }, agent: 'Tutor', agentOutput: 'Nothing to hide.' }],
        }, 'the results of the guardrails that let the run go on, as the SDK gives them');
        assert.deepEqual(r.seen, [
          { kind: 'input', last: 'Do my homework', context: { who: 'kid' }, agent: 'Tutor' },
          { kind: 'input', last: 'What is the weather in Rome?', context: { who: 'kid' }, agent: 'Tutor' },
          { kind: 'output', output: 'The secret code is 1234.', same: true, agent: 'Tutor' },
        ]);
      });

      test('two tool calls run at once; outputs are saved and sent in call order; stop_on_first_tool ends the run', async () => {
        model.script(
          { calls: [{ id: 'call_slow', name: 'slow', arguments: {} }, { id: 'call_fast', name: 'fast', arguments: {} }] },
          { text: 'Both done.' },
          { calls: [{ id: 'call_s2', name: 'fast', arguments: {} }] },
        );
        const id = fresh('parallel');
        const r = await inPage(
          async ({ url, api, id, streamed }) => {
            const log = [];
            const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
            const tools = [
              { name: 'slow', execute: async () => { log.push('slow start'); await sleep(150); log.push('slow end'); return 'slow result'; } },
              { name: 'fast', execute: async () => { log.push('fast start'); await sleep(10); log.push('fast end'); return { fast: true }; } },
            ];
            const runner = new lib.Runner({ baseUrl: url, api });
            const session = new lib.IndexedDbSession(id);
            const go = async (agent, q) => {
              if (!streamed) return runner.run(agent, q, { session });
              const run = runner.runStreamed(agent, q, { session });
              for await (const _ of run);
              return run.result;
            };
            const both = await go(new lib.Agent({ name: 'Both', model: 'm', tools, modelSettings: { parallelToolCalls: true, toolChoice: 'required' } }), 'Run both');
            const stopper = new lib.Agent({ name: 'Stopper', model: 'm', tools, toolUseBehavior: 'stop_on_first_tool' });
            const stopped = await go(stopper, 'Just fast');
            return { log, both: both.finalOutput, stopped: stopped.finalOutput, stopperItems: stopped.newItems, stored: await session.getItems() };
          },
          { api, id, streamed },
        );
        assert.deepEqual(r.log.slice(0, 4), ['slow start', 'fast start', 'fast end', 'slow end'], 'both started before either ended');
        assert.equal(r.both, 'Both done.');
        const [first, second, third] = model.requests;
        assert.equal(first.body.parallel_tool_calls, true);
        assert.equal(first.body.tool_choice, 'required');
        assert.equal(second.body.tool_choice, undefined, 'once the agent used a tool, toolChoice is not forced again');
        const outputs = sent(second).filter((m) => m.role === 'tool' || m.type === 'function_call_output');
        assert.deepEqual(outputs.map((m) => m.tool_call_id ?? m.call_id), ['call_slow', 'call_fast'], 'sent in call order');
        assert.deepEqual(transcript(r.stored).slice(0, 6), [
          ['user', 'Run both'],
          ['function_call', 'call_slow slow'],
          ['function_call', 'call_fast fast'],
          ['function_call_result', 'call_slow slow result'],
          ['function_call_result', 'call_fast {"fast":true}'],
          ['assistant', 'Both done.'],
        ]);
        assert.equal(r.stopped, '{"fast":true}', "stop_on_first_tool: the tool's output is the final answer");
        assert.equal(model.requests.length, 3, 'and the model is not called again');
        assert.equal(third.body.tool_choice, undefined);
        assert.deepEqual(transcript(r.stored).slice(6), [
          ['user', 'Just fast'],
          ['function_call', 'call_s2 fast'],
          ['function_call_result', 'call_s2 {"fast":true}'],
        ]);
      });
    });
  }
}

describe('runner agents: instructions, approvals across a handoff, bad input', () => {
  test('dynamic instructions are called before every model call with the context and the agent', async () => {
    model.script({ calls: [{ id: 'c1', name: 'tick', arguments: {} }] }, { text: 'done' });
    const r = await inPage(async ({ url }) => {
      const calls = [];
      let n = 0;
      const agent = new lib.Agent({
        name: 'Concierge',
        model: 'm',
        tools: [{ name: 'tick', execute: () => 'tock' }],
        instructions: async (context, agent) => {
          calls.push([context.user, agent.name]);
          return `Help ${context.user} (call ${++n}) as ${agent.name}.`;
        },
      });
      const runner = new lib.Runner({ baseUrl: url });
      await runner.run(agent, 'hi', { context: { user: 'Ann' } });
      const bad = new lib.Agent({ name: 'Bad', model: 'm', instructions: () => 42 });
      const error = await attempt(() => runner.run(bad, 'hi'));
      return { calls, error };
    });
    assert.deepEqual(r.calls, [['Ann', 'Concierge'], ['Ann', 'Concierge']]);
    assert.equal(systemText(model.requests[0]), 'Help Ann (call 1) as Concierge.');
    assert.equal(systemText(model.requests[1]), 'Help Ann (call 2) as Concierge.');
    assert.equal(r.error.code, 'INVALID_AGENT');
    assert.match(r.error.message, /instructions\(\) must return a string, got the number 42/);
  });

  test('instructions that fail before the call after the tools ran (a fetch of them failed) leave the tool calls and outputs saved: a retry does not run them again unknown to the model', async () => {
    model.script({ calls: [{ id: 'c1', name: 'book', arguments: {} }] }, { text: 'never asked' });
    const id = fresh('instructions-fail-after-tools');
    const r = await inPage(
      async ({ url, id }) => {
        let n = 0;
        const booked = [];
        const agent = new lib.Agent({
          name: 'A',
          model: 'm',
          tools: [{ name: 'book', execute: () => (booked.push('table'), 'booked') }],
          instructions: async () => {
            if (++n > 1) throw new Error('instructions unavailable');
            return 'Book tables.';
          },
        });
        const session = new lib.IndexedDbSession(id);
        const error = await new lib.Runner({ baseUrl: url }).run(agent, 'a table for two', { session }).then(() => null, (e) => ({ message: e.message, state: 'state' in e }));
        return { error, booked, saved: (await session.getItems()).map((i) => i.role ?? i.type) };
      },
      { id },
    );
    assert.equal(r.error.message, 'instructions unavailable');
    assert.deepEqual(r.booked, ['table']);
    assert.deepEqual(r.saved, ['user', 'function_call', 'function_call_result']);
    assert.equal(model.requests.length, 1, 'the model was asked once');
  });

  test('a run paused for approval after a handoff resumes with the specialist, also from a string state', async () => {
    model.script(
      { calls: [{ id: 'h', name: 'to_billing', arguments: {} }] },
      { calls: [{ id: 'r1', name: 'refund', arguments: { amount: 5 } }] },
      { text: 'Refunded 5.' },
    );
    const id = fresh('approval-handoff');
    const r = await inPage(
      async ({ url, id }) => {
        const refunds = [];
        const billing = new lib.Agent({
          name: 'Billing',
          model: 'billing-model',
          tools: [{ name: 'refund', needsApproval: true, execute: ({ amount }) => (refunds.push(amount), `refunded ${amount}`) }],
        });
        const triage = new lib.Agent({ name: 'Triage', model: 'triage-model', handoffs: [{ agent: billing, toolName: 'to_billing', toolDescription: 'Billing questions.' }] });
        const runner = new lib.Runner({ baseUrl: url });
        const session = new lib.IndexedDbSession(id);
        const first = await runner.run(triage, 'Refund me 5', { session });
        const paused = { lastAgent: first.lastAgent.name, interruptions: first.interruptions.map((i) => i.name), refunds: [...refunds] };
        // Each names the agent whose tool it is, as the SDK's approval prompts read it
        // (`interruption.agent.name`), also from a state read back from its string.
        paused.agents = [first.interruptions[0].agent === billing, first.state.getInterruptions()[0].agent === billing];
        const state = lib.RunState.fromString(triage, first.state.toString());
        paused.agents.push(state.getInterruptions()[0].agent === billing, state.getInterruptions()[0].agent.name);
        // An item whose getter reads the state (a logger serialising it) while it is decided.
        const item = state.getInterruptions()[0];
        let logged = '';
        state.approve({
          callId: item.callId,
          get name() {
            logged = state.toString();
            return item.name;
          },
        });
        paused.logged = logged.length > 0;
        const second = await runner.run(triage, state, { session });
        return { paused, finalOutput: second.finalOutput, lastAgent: second.lastAgent.name, refunds, stored: await session.getItems() };
      },
      { id },
    );
    assert.deepEqual(r.paused, { lastAgent: 'Billing', interruptions: ['refund'], refunds: [], agents: [true, true, true, 'Billing'], logged: true });
    assert.equal(r.finalOutput, 'Refunded 5.');
    assert.equal(r.lastAgent, 'Billing');
    assert.deepEqual(r.refunds, [5]);
    assert.equal(model.requests[2].body.model, 'billing-model', 'the resumed run goes on with the specialist');
    assert.equal(model.requests[0].body.tools[0].function.description, 'Billing questions.');
    assert.deepEqual(transcript(r.stored), [
      ['user', 'Refund me 5'],
      ['function_call', 'h to_billing'],
      ['function_call_result', 'h {"assistant":"Billing"}'],
      ['function_call', 'r1 refund'],
      ['function_call_result', 'r1 refunded 5'],
      ['assistant', 'Refunded 5.'],
    ]);
  });

  test('a state paused in one of two agents of the same name is refused when resumed (it would go on with the other), nothing run or saved', async () => {
    model.script(
      { calls: [{ id: 'h', name: 'transfer_to_Desk', arguments: {} }] },
      { calls: [{ id: 'r1', name: 'refund', arguments: { amount: 5 } }] },
      { text: 'never asked' },
    );
    const id = fresh('same-names');
    const r = await inPage(
      async ({ url, id }) => {
        const refunds = [];
        const specialist = new lib.Agent({ name: 'Desk', model: 'm', tools: [{ name: 'refund', needsApproval: true, execute: ({ amount }) => (refunds.push(amount), 'refunded') }] });
        const front = new lib.Agent({ name: 'Desk', model: 'm', handoffs: [specialist] });
        const runner = new lib.Runner({ baseUrl: url });
        const session = new lib.IndexedDbSession(id);
        const first = await runner.run(front, 'Refund me 5', { session });
        first.state.approve(first.interruptions[0]);
        const stored = (await session.getItems()).length;
        const resumed = await attempt(() => runner.run(front, first.state, { session }));
        return { interruptions: first.interruptions.length, resumed, refunds, added: (await session.getItems()).length - stored };
      },
      { id },
    );
    assert.equal(r.interruptions, 1);
    assert.equal(r.resumed.code, 'INVALID_RUN_STATE');
    assert.match(r.resumed.message, /this state is with agent "Desk", and two agents of that name \(give each its own\) can be reached from agent "Desk"/);
    assert.deepEqual(r.refunds, []);
    assert.equal(r.added, 0);
    assert.equal(model.requests.length, 2);
  });

  test('the SDK’s stream events of a run paused for an approval beside a handoff, and of its resumption: the handoff is said where it happens', async () => {
    model.script(
      { calls: [{ id: 'c1', name: 'refund', arguments: { order: 7 } }, { id: 'h', name: 'transfer_to_B', arguments: {} }] },
      { text: 'Done by B.' },
    );
    const r = await inPage(async ({ url }) => {
      const b = new lib.Agent({ name: 'B', model: 'b' });
      const a = new lib.Agent({ name: 'A', model: 'a', handoffs: [b], tools: [{ name: 'refund', needsApproval: true, execute: ({ order }) => ({ refunded: order }) }] });
      const runner = new lib.Runner({ baseUrl: url });
      const said = (e) => {
        if (e.type !== 'run_item_stream_event') return e.type === 'agent_updated_stream_event' ? [['agent_updated', e.agent === b]] : [];
        const { item } = e;
        const who = item.agent ? item.agent.name : `${item.sourceAgent.name}>${item.targetAgent.name}`;
        return [[e.name, item.type, who, item.rawItem.callId ?? item.rawItem.type, item.output ?? item.content ?? item.toolName ?? item.name ?? null]];
      };
      const first = [];
      let stream = runner.runStreamed(a, 'refund 7');
      for await (const e of stream) first.push(...said(e));
      await stream.completed;
      for (const item of stream.interruptions) stream.state.approve(item);
      const resumed = [];
      stream = runner.runStreamed(a, stream.state);
      for await (const e of stream) resumed.push(...said(e));
      return { first, resumed, finalOutput: stream.finalOutput };
    });
    assert.deepEqual(r.first, [
      ['tool_called', 'tool_call_item', 'A', 'c1', 'refund'],
      ['handoff_requested', 'handoff_call_item', 'A', 'h', 'transfer_to_B'],
      ['tool_approval_requested', 'tool_approval_item', 'A', 'c1', 'refund'],
    ]);
    assert.deepEqual(r.resumed, [
      ['tool_output', 'tool_call_output_item', 'A', 'c1', '{"refunded":7}'],
      ['handoff_occurred', 'handoff_output_item', 'A>B', 'h', null],
      ['agent_updated', true],
      ['message_output_created', 'message_output_item', 'B', 'message', 'Done by B.'],
    ]);
    assert.equal(r.finalOutput, 'Done by B.');
  });

  test('two handoffs in one response: the first is taken, the other dropped; agents can hand off to each other', async () => {
    model.script(
      { calls: [{ id: 'h1', name: 'transfer_to_B', arguments: {} }, { id: 'h2', name: 'transfer_to_B', arguments: {} }] },
      { calls: [{ id: 'h3', name: 'transfer_to_A', arguments: {} }] },
      { text: 'back at A' },
    );
    const r = await inPage(async ({ url }) => {
      const a = new lib.Agent({ name: 'A', model: 'a' });
      const b = new lib.Agent({ name: 'B', model: 'b', handoffs: [a] });
      a.handoffs = [b];
      const run = new lib.Runner({ baseUrl: url }).runStreamed(a, 'go');
      const told = [];
      const sdk = [];
      for await (const e of run) {
        if (e.type === 'item_added' || e.type === 'tool_call') told.push([e.type, e.item.callId ?? e.item.type]);
        if (e.type === 'run_item_stream_event') sdk.push([e.name, e.item.agent?.name ?? `${e.item.sourceAgent.name}>${e.item.targetAgent.name}`, e.item.rawItem.callId ?? e.item.rawItem.type]);
        if (e.type === 'agent_updated_stream_event') sdk.push(['agent_updated', e.agent.name]);
      }
      const result = await run.result;
      return { told, sdk, finalOutput: result.finalOutput, lastAgent: result.lastAgent === a, items: result.newItems.map((i) => [i.type, i.callId]) };
    });
    assert.deepEqual(
      r.told,
      [['item_added', 'h1'], ['tool_call', 'h1'], ['item_added', 'h3'], ['tool_call', 'h3'], ['item_added', 'message']],
      'no event tells of the dropped handoff',
    );
    assert.deepEqual(r.sdk, [
      ['handoff_requested', 'A', 'h1'],
      ['handoff_occurred', 'A>B', 'h1'],
      ['agent_updated', 'B'],
      ['handoff_requested', 'B', 'h3'],
      ['handoff_occurred', 'B>A', 'h3'],
      ['agent_updated', 'A'],
      ['message_output_created', 'A', 'message'],
    ]);
    assert.equal(r.finalOutput, 'back at A');
    assert.equal(r.lastAgent, true);
    assert.deepEqual(r.items, [
      ['function_call', 'h1'],
      ['function_call_result', 'h1'],
      ['function_call', 'h3'],
      ['function_call_result', 'h3'],
      ['message', undefined],
    ]);
    assert.deepEqual(model.requests.map((q) => q.body.model), ['a', 'b', 'a']);
  });

  test('a server numbering its calls per response: dropping a second handoff keeps the earlier response’s call of the same id', async () => {
    // call_0 and call_1 in every response, as some local servers number them.
    model.script(
      { calls: [{ id: 'call_0', name: 'lookup', arguments: { what: 'order' } }, { id: 'call_1', name: 'lookup', arguments: { what: 'customer' } }] },
      { calls: [{ id: 'call_0', name: 'transfer_to_B', arguments: {} }, { id: 'call_1', name: 'transfer_to_B', arguments: {} }] },
      { text: 'B here' },
    );
    const id = fresh('per-response-ids');
    const r = await inPage(
      async ({ url, id }) => {
        const b = new lib.Agent({ name: 'B', model: 'b' });
        const a = new lib.Agent({ name: 'A', model: 'a', handoffs: [b], tools: [{ name: 'lookup', execute: ({ what }) => `${what} found` }] });
        const session = new lib.IndexedDbSession(id);
        const result = await new lib.Runner({ baseUrl: url }).run(a, 'go', { session });
        const items = await session.getItems();
        return {
          finalOutput: result.finalOutput,
          stored: items.map((i) => [i.role ?? i.type, i.type === 'function_call_result' ? (i.output?.text ?? i.output) : (i.name ?? null)]),
        };
      },
      { id },
    );
    assert.equal(r.finalOutput, 'B here');
    assert.deepEqual(r.stored, [
      ['user', null],
      ['function_call', 'lookup'],
      ['function_call', 'lookup'],
      ['function_call_result', 'order found'],
      ['function_call_result', 'customer found'],
      ['function_call', 'transfer_to_B'],
      ['function_call_result', '{"assistant":"B"}'],
      ['assistant', null],
    ]);
    // B is sent each tool output after the call it answers.
    const toB = model.requests[2].body.messages;
    for (const [at, m] of toB.entries()) {
      if (m.role !== 'tool') continue;
      const asked = toB.slice(0, at).findLast((p) => p.role === 'assistant');
      assert.ok(asked?.tool_calls?.some((c) => c.id === m.tool_call_id), `tool message ${at} (${m.tool_call_id}) answers a call`);
    }
  });

  test('an input filter changes what the next agent is sent; the session keeps the whole turn', async () => {
    model.script({ calls: [{ id: 'h', name: 'transfer_to_Fresh', arguments: {} }] }, { text: 'clean start' });
    const id = fresh('filter');
    const r = await inPage(
      async ({ url, id }) => {
        const fresh = new lib.Agent({ name: 'Fresh', model: 'm' });
        const seen = [];
        const first = new lib.Agent({
          name: 'First',
          model: 'm',
          handoffs: [
            {
              agent: fresh,
              inputFilter: (data) => {
                seen.push({ history: data.inputHistory.length, pre: data.preHandoffItems.length, newItems: data.newItems.map((i) => i.type), user: data.runContext?.context?.user });
                return { inputHistory: data.inputHistory.slice(-1), preHandoffItems: [], newItems: [] };
              },
            },
          ],
        });
        const session = new lib.IndexedDbSession(id);
        await session.addItems([{ role: 'user', content: 'old' }, { role: 'assistant', content: 'old answer' }]);
        await new lib.Runner({ baseUrl: url }).run(first, 'new question', { session, context: { user: 'ann' } });
        return { seen, stored: (await session.getItems()).length };
      },
      { id },
    );
    assert.deepEqual(r.seen, [{ history: 3, pre: 0, newItems: ['function_call', 'function_call_result'], user: 'ann' }], 'the run’s context as the SDK gives it, in runContext');
    assert.deepEqual(sent(model.requests[1]).map((m) => m.content), ['new question'], 'the filtered input only');
    assert.equal(r.stored, 6, 'the session holds the whole turn');
  });

  test('bad handoffs, tool names, output types and guardrails are INVALID_AGENT; a guardrail that throws keeps the question only', async () => {
    model.script({ text: 'never sent' });
    const id = fresh('bad');
    const r = await inPage(
      async ({ url, id }) => {
        const make = (options) => {
          try {
            new lib.Agent({ name: 'X', model: 'm', ...options });
            return null;
          } catch (e) {
            return { name: e.name, code: e.code, message: e.message };
          }
        };
        const b = new lib.Agent({ name: 'B', model: 'm' });
        const errors = {
          notAnAgent: make({ handoffs: [{ name: 'B' }] }),
          proxy: make({ handoffs: [new Proxy(b, {})] }),
          twice: make({ handoffs: [b, b] }),
          clash: make({ tools: [{ name: 'transfer_to_B', execute() {} }], handoffs: [b] }),
          noSchema: make({ outputType: { type: 'json_schema', name: 'x' } }),
          badSchema: make({ outputType: { type: 'json_schema', name: 'x', schema: { type: 'thing' } } }),
          notAType: make({ outputType: 42 }),
          guardrail: make({ inputGuardrails: [{ name: 'g' }] }),
          toolUse: make({ toolUseBehavior: 'sometimes' }),
          pastTool: make({ pastSessions: true, tools: [{ name: 'read_past_session', execute() {} }] }),
          // The API refuses such names in every request, after the question was saved.
          spacedName: make({ tools: [{ name: 'get weather', execute() {} }] }),
          dottedName: make({ tools: [{ name: 'mail.send', execute() {} }] }),
          longName: make({ tools: [{ name: 'x'.repeat(65), execute() {} }] }),
          handoffName: make({ handoffs: [{ agent: b, toolName: 'transfer to b' }] }),
          outputName: make({ outputType: { type: 'json_schema', name: 'Refund request', schema: { type: 'object', properties: {}, additionalProperties: false } } }),
          // A zod schema written out tells the model of no arguments.
          // (Shaped as zod 4's `z.object({ city: z.string() })`: its own `_zod`, `def` and `type`,
          // which JSON writes as `{"def":…,"type":"object"}`; this page has no zod.)
          zod: make({ tools: [{ name: 'get_weather', parameters: Object.defineProperty({ def: { type: 'object', shape: {} }, type: 'object' }, '_zod', { value: { def: {} } }), execute() {} }] }),
        };
        const fine = make({ tools: [{ name: 'get-weather_2', execute() {} }, { name: 'x'.repeat(64), execute() {} }] });
        // An object of the SDK's handoff() (shaped as its class: an isEnabled function always,
        // onInvokeHandoff) is taken as before, its tool name and description with it.
        const sdkMade = { agent: b, toolName: 'go_to_b', toolDescription: 'B takes it', inputFilter: undefined, isEnabled: async () => true, onInvokeHandoff: async () => b };
        const sdkHandoff = make({ handoffs: [sdkMade] });
        const ok = new lib.Agent({ name: 'Ok', model: 'm', handoffs: [b] });
        let setError = null;
        try {
          ok.handoffs = [b, 'no'];
        } catch (e) {
          setError = e.code;
        }
        const kept = ok.handoffs.map((a) => a.name);
        const pushed = await attempt(async () => ok.handoffs.push(b));
        const freed = new lib.Agent({ name: 'F', model: 'm' });
        freed.free();
        const setFreed = await attempt(async () => {
          freed.handoffs = [];
        });
        const throwing = new lib.Agent({
          name: 'T',
          model: 'm',
          inputGuardrails: [{ name: 'boom', execute: () => { throw new TypeError('guardrail broke'); } }],
        });
        const session = new lib.IndexedDbSession(id);
        let thrown = null;
        try {
          await new lib.Runner({ baseUrl: url }).run(throwing, 'question', { session });
        } catch (e) {
          thrown = { name: e.name, message: e.message, resumable: 'state' in e };
        }
        return { errors, fine, sdkHandoff, setError, kept, pushed, setFreed, thrown, stored: await session.getItems() };
      },
      { id },
    );
    for (const [key, e] of Object.entries(r.errors)) {
      assert.ok(e, `${key} is refused`);
      assert.equal(e.code, 'INVALID_AGENT', key);
      assert.equal(e.name, 'RunnerError', key);
    }
    assert.match(r.errors.notAnAgent.message, /handoffs\[0\] must be an Agent/);
    assert.match(r.errors.twice.message, /already has a tool or handoff named "transfer_to_B"/);
    assert.match(r.errors.noSchema.message, /outputType\.schema must be a JSON schema object/);
    assert.match(r.errors.badSchema.message, /unknown type/);
    assert.equal(r.setError, 'INVALID_AGENT');
    assert.deepEqual(r.kept, ['B'], 'a refused list leaves the handoffs as they were');
    assert.match(r.errors.pastTool.message, /a tool named "read_past_session", the name of a tool pastSessions gives/);
    assert.match(r.errors.spacedName.message, /tools\[0\]\.name must be 1 to 64 ASCII letters, digits, _ or -, as the API takes it, got "get weather"/);
    assert.match(r.errors.outputName.message, /outputType\.name must be 1 to 64 ASCII letters, digits, _ or -, as the API takes it, got "Refund request"/);
    assert.match(r.errors.zod.message, /parameters is a zod schema: give its JSON schema, z\.toJSONSchema\(schema\)/);
    assert.equal(r.fine, null, 'names the API takes are taken');
    assert.equal(r.sdkHandoff, null, 'an object of the SDK’s handoff() is taken');
    assert.equal(r.pushed.ok, false, 'a push on the frozen list throws instead of changing nothing');
    assert.equal(r.pushed.name, 'TypeError');
    assert.equal(r.setFreed.code, 'INVALID_AGENT', JSON.stringify(r.setFreed));
    assert.match(r.setFreed.message, /freed/);
    assert.deepEqual(r.thrown, { name: 'TypeError', message: 'guardrail broke', resumable: false }, 'a resumed run would skip the check: not resumable');
    assert.deepEqual(transcript(r.stored), [['user', 'question']]);
    assert.equal(model.requests.length, 0);
  });

  test('an agent without a model that a handoff can reach refuses the run before anything is sent or saved', async () => {
    model.script({ calls: [{ name: 'transfer_to_Middle', arguments: {}, id: 'call_h' }] }, { text: 'never asked' });
    const id = fresh('nomodel');
    const r = await inPage(
      async ({ url, id }) => {
        const ran = [];
        const specialist = new lib.Agent({ name: 'Specialist' });
        const middle = new lib.Agent({ name: 'Middle', model: 'm', handoffs: [specialist] });
        const triage = new lib.Agent({ name: 'Triage', model: 'm', handoffs: [middle], tools: [{ name: 'note', execute: () => ran.push('note') }] });
        const session = new lib.IndexedDbSession(id);
        const error = await new lib.Runner({ baseUrl: url }).run(triage, 'question', { session }).then(() => null, (e) => e);
        return { code: error?.code, message: error?.message, resumable: error != null && 'state' in error && error.state != null, ran, stored: await session.getItems() };
      },
      { id },
    );
    assert.equal(r.code, 'INVALID_AGENT', r.message);
    assert.match(r.message, /agent "Specialist" has no model/);
    assert.equal(r.resumable, false);
    assert.deepEqual(r.ran, []);
    assert.deepEqual(r.stored, [], 'the question is not saved: the user sends it again once the app is mended');
    assert.equal(model.requests.length, 0);
  });

  test('a toolChoice naming a handoff forces it; one naming no tool or handoff of an agent a run may reach refuses the run before anything is sent or saved', async () => {
    model.script({ calls: [{ name: 'transfer_to_Billing', arguments: {}, id: 'call_h' }] }, { text: 'Billing here.' });
    const id = fresh('choice');
    const r = await inPage(
      async ({ url, id }) => {
        const runner = new lib.Runner({ baseUrl: url });
        const billing = new lib.Agent({ name: 'Billing', model: 'm' });
        const triage = new lib.Agent({ name: 'Triage', model: 'm', handoffs: [billing], modelSettings: { toolChoice: 'transfer_to_Billing' } });
        const forced = await runner.run(triage, 'refund');
        // Reached through a handoff: a toolChoice of a tool it does not have (its tools renamed).
        const wrong = new lib.Agent({ name: 'Wrong', model: 'm', modelSettings: { toolChoice: 'lookup' } });
        const front = new lib.Agent({ name: 'Front', model: 'm', handoffs: [wrong] });
        const session = new lib.IndexedDbSession(id);
        const error = await runner.run(front, 'question', { session }).then(() => null, (e) => e);
        return { forced: [forced.finalOutput, forced.lastAgent.name], code: error?.code, message: error?.message, stored: await session.getItems() };
      },
      { id },
    );
    assert.deepEqual(r.forced, ['Billing here.', 'Billing']);
    const [first, second] = model.requests;
    const choice = first.body.tool_choice;
    assert.equal(choice.function?.name ?? choice.name, 'transfer_to_Billing', 'the handoff is forced');
    assert.equal(second.body.tool_choice, undefined, 'not forced on the agent handed off to');
    assert.equal(r.code, 'INVALID_AGENT', r.message);
    assert.equal(r.message, `agent "Wrong": modelSettings.toolChoice must be 'auto', 'required', 'none' or the name of one of its tools or handoffs, got "lookup"`);
    assert.deepEqual(r.stored, [], 'nothing saved');
    assert.equal(model.requests.length, 2, 'nothing sent for the refused run');
  });

  test('runner.on refuses unknown events; a listener that throws does not stop the run', async () => {
    model.script({ text: 'fine' });
    const r = await inPage(async ({ url }) => {
      const runner = new lib.Runner({ baseUrl: url });
      const unknown = await attempt(async () => runner.on('agent_started', () => {}));
      const inherited = await attempt(async () => runner.on('constructor', () => {}));
      const reported = [];
      window.addEventListener('error', (e) => {
        reported.push(e.error?.message);
        e.preventDefault();
      });
      const ends = [];
      runner.on('agent_start', () => {
        throw new Error('listener broke');
      });
      const listener = (ctx, agent, output) => ends.push(output);
      runner.on('agent_end', listener);
      const result = await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'hi');
      runner.off('agent_end', listener);
      await runner.run(new lib.Agent({ name: 'A', model: 'm' }), 'again');
      return { unknown, inherited, reported, ends, finalOutput: result.finalOutput };
    });
    assert.equal(r.unknown.code, 'INVALID_RUNNER');
    assert.equal(r.inherited.code, 'INVALID_RUNNER', 'only the event names themselves');
    assert.equal(r.finalOutput, 'fine');
    assert.deepEqual(r.ends, ['fine'], 'off() stops the listener');
    assert.deepEqual(r.reported, ['listener broke', 'listener broke'], "a listener's error is reported to the page");
  });

  test('no tool starts before every call of the response is decided: a failing approval check runs none', async () => {
    model.script({ calls: [{ id: 'a', name: 'pay', arguments: {} }, { id: 'b', name: 'check', arguments: {} }] });
    const r = await inPage(async ({ url }) => {
      const ran = [];
      const agent = new lib.Agent({
        name: 'A',
        model: 'm',
        tools: [
          { name: 'pay', execute: () => ran.push('pay') },
          { name: 'check', needsApproval: async () => { throw new Error('approval service down'); }, execute: () => ran.push('check') },
        ],
      });
      let error;
      try {
        await new lib.Runner({ baseUrl: url }).run(agent, 'pay');
      } catch (e) {
        error = { message: e.message, pending: e.state.getInterruptions().length };
      }
      await new Promise((ok) => setTimeout(ok, 50));
      return { ran, error };
    });
    assert.equal(r.error.message, 'approval service down');
    assert.deepEqual(r.ran, [], 'pay did not run, so resuming cannot run it twice');
  });

  test('stop_on_first_tool and stopAtToolNames wait for the approval of another call of the same response, then stop with the first output in call order', async () => {
    const cases = [
      // The listed tool's call first: its output, though the other call waited.
      { calls: ['answer', 'send'], behavior: { stopAtToolNames: ['answer'] }, output: 'the answer' },
      // The call that waited for approval first: its output, though it came last.
      { calls: ['send', 'lookup'], behavior: 'stop_on_first_tool', output: 'sent' },
    ];
    for (const { calls, behavior, output } of cases) {
      model.reset();
      model.script({ calls: calls.map((name) => ({ id: `call_${name}`, name, arguments: {} })) }, { text: 'never asked' });
      const r = await inPage(
        async ({ url, behavior }) => {
          const agent = new lib.Agent({
            name: 'A',
            model: 'm',
            toolUseBehavior: behavior,
            tools: [
              { name: 'answer', execute: () => 'the answer' },
              { name: 'lookup', execute: () => 'looked up' },
              { name: 'send', needsApproval: true, execute: () => 'sent' },
            ],
          });
          const runner = new lib.Runner({ baseUrl: url });
          const first = await runner.run(agent, 'go');
          first.state.approve(first.interruptions[0]);
          const second = await runner.run(agent, first.state);
          return { paused: first.interruptions.map((i) => i.name), finalOutput: second.finalOutput };
        },
        { behavior },
      );
      assert.deepEqual(r.paused, ['send']);
      assert.equal(r.finalOutput, output, JSON.stringify(behavior));
      assert.equal(model.requests.length, 1, 'the model is not called again');
    }
  });

  test('tools started together that fail while another is awaited are the run’s to handle, not the page’s (no unhandled rejection)', async () => {
    model.script({ calls: [{ id: 's', name: 'slow', arguments: {} }, { id: 'b', name: 'bad', arguments: {} }] }, { text: 'handled' });
    const r = await inPage(async ({ url }) => {
      const unhandled = [];
      const listen = (e) => unhandled.push(String(e.reason?.message ?? e.reason));
      window.addEventListener('unhandledrejection', listen);
      const agent = new lib.Agent({
        name: 'A',
        model: 'm',
        tools: [
          { name: 'slow', execute: () => new Promise((ok) => setTimeout(() => ok('slow done'), 300)) },
          { name: 'bad', execute: async () => { throw new Error('bad tool'); } },
        ],
      });
      const result = await new lib.Runner({ baseUrl: url }).run(agent, 'go');
      await new Promise((ok) => setTimeout(ok, 50));
      window.removeEventListener('unhandledrejection', listen);
      return { unhandled, finalOutput: result.finalOutput, outputs: result.newItems.filter((i) => i.type === 'function_call_result').map((i) => [i.callId, typeof i.output === 'string' ? i.output : i.output?.text]) };
    });
    assert.deepEqual(r.unhandled, []);
    assert.equal(r.finalOutput, 'handled');
    assert.equal(r.outputs[0][0], 's');
    assert.equal(r.outputs[1][1], 'An error occurred while running the tool. Please try again.', 'the failing tool’s output: the SDK’s message for a tool that threw');
  });

  test('approve and reject take the SDK’s options: { message } is the rejection’s text, a standing decision is refused; a tool named as agenticState’s is refused', async () => {
    model.script({ calls: [{ id: 'x', name: 'send', arguments: {} }] }, { text: 'understood' });
    const r = await inPage(async ({ url }) => {
      const agent = new lib.Agent({ name: 'A', model: 'm', tools: [{ name: 'send', needsApproval: true, execute: () => 'sent' }] });
      const runner = new lib.Runner({ baseUrl: url });
      const first = await runner.run(agent, 'go');
      const [call] = first.interruptions;
      let standing;
      try {
        first.state.approve(call, { alwaysApprove: true });
      } catch (e) {
        standing = `${e.name} ${e.code}`;
      }
      first.state.reject(call, { message: 'Not now, thanks.' });
      const second = await runner.run(agent, first.state);
      const clash = new lib.Agent({ name: 'C', model: 'm', agenticState: true, tools: [{ name: 'update_session_state', execute: () => 'mine' }] });
      const session = new lib.MemorySession('clash');
      const refused = await runner.run(clash, 'hi', { session }).then(() => 'resolved', (e) => `${e.name} ${e.code} ${/update_session_state/.test(e.message)}`);
      return { standing, output: second.newItems.find((i) => i.type === 'function_call_result')?.output, finalOutput: second.finalOutput, refused, saved: (await session.getItems()).length };
    });
    assert.equal(r.standing, 'RunnerError INVALID_RUN_STATE');
    assert.equal(typeof r.output === 'string' ? r.output : r.output?.text, 'Not now, thanks.');
    assert.equal(r.finalOutput, 'understood');
    assert.equal(r.refused, 'RunnerError INVALID_AGENT true');
    assert.equal(r.saved, 0, 'refused before the question was saved');
  });

  test('the same approved state resumed twice over a session without history transactions saves the tool’s output once', async () => {
    model.script({ calls: [{ id: 'x', name: 'send', arguments: {} }] }, { error: 400, message: 'bad request' }, { text: 'done' });
    const r = await inPage(async ({ url }) => {
      let sent = 0;
      const agent = new lib.Agent({ name: 'A', model: 'm', tools: [{ name: 'send', needsApproval: true, execute: () => (sent++, 'sent') }] });
      const memory = new lib.MemorySession('plain-resume');
      // A session of the protocol alone (as an app's own): no history transactions.
      const session = {
        getSessionId: () => memory.getSessionId(),
        getItems: (n) => memory.getItems(n),
        addItems: (items) => memory.addItems(items),
        popItem: () => memory.popItem(),
        clearSession: () => memory.clearSession(),
      };
      const runner = new lib.Runner({ baseUrl: url, retries: 0 });
      const first = await runner.run(agent, 'go', { session });
      first.state.approve(first.interruptions[0]);
      const kept = first.state.toString();
      const failed = await runner.run(agent, lib.RunState.fromString(agent, kept), { session }).then(() => 'resolved', (e) => e.name);
      const again = await runner.run(agent, lib.RunState.fromString(agent, kept), { session });
      const items = await memory.getItems();
      return { failed, sent, finalOutput: again.finalOutput, outputs: items.filter((i) => i.type === 'function_call_result').length };
    });
    assert.equal(r.failed, 'ModelError');
    assert.equal(r.sent, 1, 'the tool ran once');
    assert.equal(r.finalOutput, 'done');
    assert.equal(r.outputs, 1, 'its output saved once');
  });

  test('the same state resumed again: a rejection saved by a run that was stopped is saved alike, and approving a call an earlier resumption rejected is refused', async () => {
    model.script(
      { calls: [{ id: 'r1', name: 'refund', arguments: {} }] },
      { hang: true },
      { text: 'no refund, then' },
      { calls: [{ id: 'r2', name: 'refund', arguments: {} }] },
      { hang: true },
    );
    const id = fresh('re-resume');
    const r = await inPage(
      async ({ url, id }) => {
        const ran = [];
        const agent = new lib.Agent({ name: 'A', model: 'm', tools: [{ name: 'refund', needsApproval: true, execute: () => (ran.push('refund'), 'refunded') }] });
        const runner = new lib.Runner({ baseUrl: url, retries: 0 });
        const outcome = (p) => p.then((res) => res.finalOutput, (e) => (typeof e.code === 'string' ? `${e.name} ${e.code}` : e.name));
        // Resumes `kept` with the refund `decision`, stopped while the model answers (it never does).
        const stoppedResume = async (kept, session, decision) => {
          const state = lib.RunState.fromString(agent, kept);
          state[decision](state.getInterruptions()[0]);
          const controller = new AbortController();
          setTimeout(() => controller.abort(), 200);
          return outcome(runner.run(agent, state, { session, signal: controller.signal }));
        };
        const resume = (kept, session, decision) => {
          const state = lib.RunState.fromString(agent, kept);
          state[decision](state.getInterruptions()[0]);
          return outcome(runner.run(agent, state, { session }));
        };
        const outputs = async (session) => (await session.getItems()).filter((i) => i.type === 'function_call_result').map((i) => i.output?.text ?? i.output);
        // Rejected, stopped, then rejected again: the run ends, the rejection saved once.
        const a = new lib.IndexedDbSession(id);
        const keptA = (await runner.run(agent, 'refund me', { session: a })).state.toString();
        const rejected = [await stoppedResume(keptA, a, 'reject'), await resume(keptA, a, 'reject'), await outputs(a)];
        // Rejected, stopped, then approved: refused, the refund not run, nothing more saved.
        const b = new lib.IndexedDbSession(id + '-b');
        const keptB = (await runner.run(agent, 'refund me', { session: b })).state.toString();
        const approvedLate = [await stoppedResume(keptB, b, 'reject'), await resume(keptB, b, 'approve'), await outputs(b), (await b.getItems()).length];
        return { rejected, approvedLate, ran };
      },
      { id },
    );
    assert.deepEqual(r.rejected, ['AbortError', 'no refund, then', ['Tool execution was not approved.']]);
    assert.deepEqual(r.approvedLate, ['AbortError', 'RunnerError INVALID_RUN_STATE', ['Tool execution was not approved.'], 3]);
    assert.deepEqual(r.ran, [], 'the rejected refund never ran');
  });

  test('two calls of one response with the same id are decided and answered each by itself', async () => {
    model.script({ calls: [{ id: 'same', name: 'pay', arguments: {} }, { id: 'same', name: 'refund', arguments: {} }] }, { text: 'ok' });
    const r = await inPage(async ({ url }) => {
      const ran = [];
      const agent = new lib.Agent({
        name: 'A',
        model: 'm',
        tools: [
          { name: 'pay', needsApproval: true, execute: () => (ran.push('pay'), 'paid') },
          { name: 'refund', needsApproval: true, execute: () => (ran.push('refund'), 'refunded') },
        ],
      });
      const runner = new lib.Runner({ baseUrl: url });
      const first = await runner.run(agent, 'go');
      const [pay, refund] = first.interruptions;
      first.state.reject(refund, 'no refunds');
      first.state.approve(pay);
      const second = await runner.run(agent, first.state);
      const text = (o) => (typeof o === 'string' ? o : o?.text);
      return {
        ids: first.interruptions.map((i) => i.callId),
        ran,
        outputs: second.newItems.filter((i) => i.type === 'function_call_result').map((i) => [i.name, text(i.output)]),
      };
    });
    assert.notEqual(r.ids[0], r.ids[1], 'each call has an id of its own');
    assert.equal(r.ids[0], 'same', 'the first keeps the server’s');
    assert.deepEqual(r.ran, ['pay']);
    assert.deepEqual(r.outputs, [['pay', 'paid'], ['refund', 'no refunds']]);
  });

  test('an input filter that throws leaves the handoff to be taken again when the run is resumed', async () => {
    model.script({ calls: [{ id: 'h', name: 'transfer_to_B', arguments: {} }] }, { text: 'B here' });
    const id = fresh('filter-throws');
    const r = await inPage(
      async ({ url, id }) => {
        let calls = 0;
        const b = new lib.Agent({ name: 'B', model: 'b' });
        const a = new lib.Agent({
          name: 'A',
          model: 'a',
          handoffs: [{ agent: b, inputFilter: (data) => { if (++calls === 1) throw new Error('filter failed'); return { ...data, inputHistory: [] }; } }],
        });
        const runner = new lib.Runner({ baseUrl: url });
        const session = new lib.IndexedDbSession(id);
        let state;
        let message;
        try {
          await runner.run(a, 'question', { session });
        } catch (e) {
          message = e.message;
          state = e.state;
        }
        const resumed = await runner.run(a, state, { session });
        return { message, calls, finalOutput: resumed.finalOutput, lastAgent: resumed.lastAgent.name, types: (await session.getItems()).map((i) => i.type ?? i.role) };
      },
      { id },
    );
    assert.equal(r.message, 'filter failed');
    assert.equal(r.calls, 2);
    assert.equal(r.finalOutput, 'B here');
    assert.equal(r.lastAgent, 'B');
    assert.deepEqual(sent(model.requests[1]).map((m) => m.role), ['assistant', 'tool'], 'the filtered input: the user question left out');
    assert.deepEqual(r.types, ['message', 'function_call', 'function_call_result', 'message'], 'the handoff output saved once');
  });

  test('an approved call answered beside a handoff whose filter fails is saved before the filter runs: the pending state resumed again does not run it twice', async () => {
    model.script({ calls: [{ id: 'm', name: 'send_email', arguments: { to: 'ada' } }, { id: 'h', name: 'transfer_to_B', arguments: {} }] }, { text: 'B here' });
    const id = fresh('approved-then-filter');
    const r = await inPage(
      async ({ url, id }) => {
        let calls = 0;
        const sent = [];
        const b = new lib.Agent({ name: 'B', model: 'b' });
        const a = new lib.Agent({
          name: 'A',
          model: 'a',
          tools: [{ name: 'send_email', needsApproval: () => true, execute: ({ to }) => (sent.push(to), 'sent') }],
          handoffs: [{ agent: b, inputFilter: (data) => { if (++calls === 1) throw new Error('filter failed'); return data; } }],
        });
        const runner = new lib.Runner({ baseUrl: url });
        const session = new lib.IndexedDbSession(id);
        const paused = await runner.run(a, 'mail Ada, then pass me to B', { session });
        const kept = paused.state.toString();
        paused.state.approve(paused.interruptions[0]);
        const failed = await runner.run(a, paused.state, { session }).then(() => 'resolved', (e) => e.message);
        // The pending state, kept before, approved and resumed again (a reload, a retry).
        const again = lib.RunState.fromString(a, kept);
        again.approve(again.getInterruptions()[0]);
        const resumed = await runner.run(a, again, { session });
        return { failed, sent, finalOutput: resumed.finalOutput, outputs: (await session.getItems()).filter((i) => i.type === 'function_call_result').map((i) => i.callId) };
      },
      { id },
    );
    assert.equal(r.failed, 'filter failed');
    assert.deepEqual(r.sent, ['ada'], 'the email was sent once');
    assert.equal(r.finalOutput, 'B here');
    assert.deepEqual(r.outputs, ['m', 'h'], 'each output saved once');
  });

  test('pastSessions holds for an agent reached by a handoff, and the run still names the agents the app made', async () => {
    model.script({ calls: [{ id: 'h', name: 'transfer_to_Memory', arguments: {} }] }, { text: 'I remember' });
    const id = fresh('past-handoff');
    const r = await inPage(
      async ({ url, id }) => {
        const memory = new lib.Agent({ name: 'Memory', model: 'm', pastSessions: true });
        const front = new lib.Agent({ name: 'Front', model: 'm', handoffs: [memory] });
        const handoffs = [];
        const runner = new lib.Runner({ baseUrl: url }).on('handoff', (ctx, from, to) => handoffs.push([from === front, to === memory]));
        const result = await runner.run(front, 'what did we say last week?', { session: new lib.IndexedDbSession(id) });
        return { lastAgent: result.lastAgent === memory, handoffs };
      },
      { id },
    );
    assert.deepEqual(toolNames(model.requests[0]), ['transfer_to_Memory']);
    assert.deepEqual(toolNames(model.requests[1]), ['search_past_sessions', 'read_past_session']);
    assert.equal(r.lastAgent, true);
    assert.deepEqual(r.handoffs, [[true, true]]);
  });

  test('where the server keeps the conversation, a second handoff in one response is answered, not dropped', async () => {
    model.script({ calls: [{ id: 'h1', name: 'transfer_to_B', arguments: {} }, { id: 'h2', name: 'transfer_to_B', arguments: {} }] }, { text: 'B' });
    await inPage(async ({ url }) => {
      const b = new lib.Agent({ name: 'B', model: 'b' });
      const a = new lib.Agent({ name: 'A', model: 'a', handoffs: [b] });
      await new lib.Runner({ baseUrl: url, api: 'responses' }).run(a, 'go', { conversationId: 'conv_1' });
    });
    const outputs = model.requests[1].body.input.filter((i) => i.type === 'function_call_output');
    assert.deepEqual(
      outputs.map((o) => [o.call_id, o.output]),
      [
        ['h1', '{"assistant":"B"}'],
        ['h2', 'Multiple handoffs detected, ignoring this one.'],
      ],
    );
  });
});

