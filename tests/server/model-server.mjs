// A local OpenAI-compatible model server for tests: speaks Chat Completions and Responses,
// whole or streamed (SSE, with the deltas spaced out in time), sends CORS headers, records every
// request, and answers from a script the test sets (or, with no script, from a small built-in
// echo model).
import { createServer } from 'node:http';

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/**
 * Script steps:
 *   { text: 'answer' }                          a final answer
 *   { calls: [{ name, arguments, id? }] }       function calls (arguments: object or string)
 *   { error: 429, message, retryAfter?, retryAfterMs? } an HTTP error with an OpenAI-style body
 *   { error: 500, bodyHangs: true }             an HTTP error whose body starts and never ends
 *   { malformed: true }                         200 with a body that is not JSON
 *   { truncate: true, text }                    a stream (or body) cut in the middle
 *   { network: true }                           the connection is destroyed
 *   { hang: true }                              never answers (for abort tests)
 * Options per step: { delayMs } between stream chunks (default: server.deltaDelayMs);
 * { waitMs } before a whole (not streamed) answer; { waitFor: promise } until the test resolves it.
 *
 * `POST …/responses/compact` (OpenAI's compaction endpoint) answers with the user messages of
 * its input and one compaction item (none with { withoutCompaction: true }), or with the next
 * script step when it is an error.
 */
export async function startModelServer({ host = '127.0.0.1' } = {}) {
  const state = {
    requests: [],
    script: [],
    openStreams: 0,
    hung: 0,
    deltaDelayMs: 40,
    usagePerItem: 10,
  };
  let callCounter = 0;

  const server = createServer(async (req, res) => {
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', 'authorization, content-type, x-test-header');
    res.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
    res.setHeader('access-control-expose-headers', 'retry-after, retry-after-ms');
    if (req.method === 'OPTIONS') {
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'GET' && req.url.endsWith('/status')) {
      // Lets a page ask, mid-stream, whether a streamed answer is still being sent.
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ openStreams: state.openStreams, requests: state.requests.length }));
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body = null;
    try {
      body = JSON.parse(raw);
    } catch {}
    const path = new URL(req.url, 'http://x').pathname;
    // (With how many connections given no answer were still open when it came.)
    state.requests.push({ method: req.method, path, headers: req.headers, body, raw, hung: state.hung });
    if (path.endsWith('/responses/compact')) {
      await compact(body, res);
      return;
    }
    const api = path.endsWith('/chat/completions') ? 'chat' : path.endsWith('/responses') ? 'responses' : null;
    if (!api) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${path}` } }));
      return;
    }
    const step = state.script.length ? state.script.shift() : { text: echo(api, body) };
    await answer(api, body, step, res);
  });

  function inputCount(api, body) {
    return api === 'chat' ? (body?.messages?.length ?? 0) : (body?.input?.length ?? 0);
  }

  // The built-in model: says how many items it got and what the last user message was.
  function echo(api, body) {
    const items = api === 'chat' ? body?.messages ?? [] : body?.input ?? [];
    const users = items.filter((m) => m.role === 'user');
    const last = users.at(-1);
    const text = typeof last?.content === 'string' ? last.content : last?.content?.map((p) => p.text).join('') ?? '';
    return `echo(${items.length}): ${text}`;
  }

  function usage(api, body, text) {
    const input = inputCount(api, body) * state.usagePerItem;
    const output = text.length;
    return api === 'chat'
      ? { prompt_tokens: input, completion_tokens: output, total_tokens: input + output }
      : { input_tokens: input, output_tokens: output, total_tokens: input + output };
  }

  function calls(step) {
    return (step.calls ?? []).map((c) => ({
      id: c.id ?? `call_${++callCounter}`,
      name: c.name,
      arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
    }));
  }

  async function compact(body, res) {
    const step = state.script.length ? state.script.shift() : {};
    if (step.error || step.hang || step.network) {
      await answer('responses', body, step, res);
      return;
    }
    if (step.waitMs) await sleep(step.waitMs);
    const users = (body?.input ?? []).filter((i) => i.role === 'user');
    const output = [
      ...users.map((m, i) => ({ type: 'message', id: `cm_${i}`, role: 'user', content: typeof m.content === 'string' ? [{ type: 'input_text', text: m.content }] : m.content })),
      ...(step.withoutCompaction ? [] : [{ type: 'compaction', id: `cmp_${state.requests.length}`, encrypted_content: `ENC(${(body?.input ?? []).length})` }]),
    ];
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ id: 'cr_1', object: 'response.compaction', output, usage: { input_tokens: 100, output_tokens: 10, total_tokens: 110 } }),
    );
  }

  async function answer(api, body, step, res) {
    if (step.network) {
      res.socket.destroy();
      return;
    }
    if (step.hang) {
      // (Counted while its connection is open: a client that gives up on it should close it.)
      state.hung++;
      res.on('close', () => state.hung--);
      return; // the test aborts the request
    }
    if (step.error) {
      const headers = { 'content-type': 'application/json' };
      if (step.retryAfter !== undefined) headers['retry-after'] = String(step.retryAfter);
      if (step.retryAfterMs !== undefined) headers['retry-after-ms'] = String(step.retryAfterMs);
      if (step.bodyHangs) {
        state.hung++;
        res.on('close', () => state.hung--);
        res.writeHead(step.error, headers);
        res.write('{"error": {"message": "still wri');
        return; // the test aborts while the body is being read
      }
      res.writeHead(step.error, headers).end(JSON.stringify({ error: { message: step.message ?? `error ${step.error}`, type: 'test' } }));
      return;
    }
    if (step.malformed) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id": "oops", "choices": [');
      return;
    }
    const text = step.text ?? '';
    const toolCalls = calls(step);
    const id = `${api === 'chat' ? 'chatcmpl' : 'resp'}_${state.requests.length}`;
    const u = usage(api, body, text);
    const delay = step.delayMs ?? state.deltaDelayMs;
    if (!body?.stream) {
      if (step.waitMs) await sleep(step.waitMs);
      if (step.waitFor) await step.waitFor;
      if (step.truncate) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"cut","output":[{"type":"mess');
        return;
      }
      const json =
        api === 'chat'
          ? {
              id,
              object: 'chat.completion',
              choices: [
                {
                  index: 0,
                  finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
                  message: {
                    role: 'assistant',
                    content: toolCalls.length && !text ? null : text,
                    ...(toolCalls.length
                      ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }
                      : {}),
                  },
                },
              ],
              usage: u,
            }
          : { id, object: 'response', status: 'completed', output: responsesOutput(text, toolCalls, id), usage: u };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    state.openStreams++;
    res.on('close', () => state.openStreams--);
    const send = (obj, event) => res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof obj === 'string' ? obj : JSON.stringify(obj)}\n\n`);
    const pieces = text.match(/.{1,4}/gsu) ?? [];
    if (api === 'chat') {
      for (const [i, p] of pieces.entries()) {
        send({ id, object: 'chat.completion.chunk', choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content: p } : { content: p } }] });
        await sleep(delay);
        if (step.truncate && i >= pieces.length / 2) {
          res.end();
          return;
        }
      }
      toolCalls.forEach((c, index) => {
        const half = Math.ceil(c.arguments.length / 2);
        send({ id, choices: [{ index: 0, delta: { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments.slice(0, half) } }] } }] });
        send({ id, choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: c.arguments.slice(half) } }] } }] });
      });
      send({ id, choices: [{ index: 0, delta: {}, finish_reason: toolCalls.length ? 'tool_calls' : 'stop' }] });
      send({ id, choices: [], usage: u });
      send('[DONE]');
      res.end();
      return;
    }
    send({ type: 'response.created', response: { id, status: 'in_progress', output: [] } }, 'response.created');
    for (const [i, p] of pieces.entries()) {
      send({ type: 'response.output_text.delta', item_id: `msg_${id}`, output_index: 0, content_index: 0, delta: p }, 'response.output_text.delta');
      await sleep(delay);
      if (step.truncate && i >= pieces.length / 2) {
        res.end();
        return;
      }
    }
    const output = responsesOutput(text, toolCalls, id);
    output.forEach((item, output_index) => send({ type: 'response.output_item.done', output_index, item }, 'response.output_item.done'));
    send({ type: 'response.completed', response: { id, status: 'completed', output, usage: u } }, 'response.completed');
    res.end();
  }

  function responsesOutput(text, toolCalls, id) {
    const out = [];
    if (text) {
      out.push({ type: 'message', id: `msg_${id}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] });
    }
    for (const c of toolCalls) {
      out.push({ type: 'function_call', id: `fc_${c.id}`, call_id: c.id, name: c.name, arguments: c.arguments, status: 'completed' });
    }
    return out;
  }

  await new Promise((ok) => server.listen(0, host, ok));
  const { port } = server.address();
  return {
    url: `http://${host}:${port}/v1`,
    state,
    /** Queues scripted answers. */
    script(...steps) {
      state.script.push(...steps);
    },
    /** Forgets requests and script. */
    reset() {
      state.requests.length = 0;
      state.script.length = 0;
      state.deltaDelayMs = 40;
    },
    get requests() {
      return state.requests;
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((ok) => server.close(ok));
    },
  };
}
