// Beyond one device: OpenAIConversationsSession against a local Conversations API server (another
// origin, with switchable faults), and SyncedSession between two browser contexts (two devices,
// each with its own IndexedDB) going offline and online.
import { test, describe, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness } from './harness.mjs';
import { bundleSdk } from './sdk-bundle.mjs';
import { startConversationsServer } from '../server/conversations-server.mjs';

let env;
let server;
before(async () => {
  await bundleSdk();
  env = await start();
  server = await startConversationsServer();
});
after(async () => {
  await server?.close();
  await env?.close();
});
beforeEach(async () => {
  await server.reset();
});

/** In the page, as text: a remote session (the MemorySession `name` inside it) whose reads wait,
 * once `hold()` closed the gate, until `release()`: a round held there has read the local history
 * and the sync state already (`reached()` resolves once a read waits there). */
const gatedRemote = `(name) => {
  const inner = new lib.MemorySession(name);
  let gate = null;
  let open = () => {};
  let waiting = false;
  return {
    inner,
    remote: {
      getSessionId: () => inner.getSessionId(),
      async getItems(...args) {
        if (gate) {
          waiting = true;
          await gate;
        }
        return inner.getItems(...args);
      },
      addItems: (items) => inner.addItems(items),
      popItem: () => inner.popItem(),
      clearSession: () => inner.clearSession(),
    },
    hold() {
      gate = new Promise((ok) => (open = ok));
      waiting = false;
    },
    async reached() {
      while (!waiting) await new Promise((ok) => setTimeout(ok, 5));
    },
    release() {
      gate = null;
      open();
    },
  };
}`;

/** A device: its own browser context (own storage), with a page that has the package. */
async function device(path = '/tests/pages/harness.html') {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  await page.goto(`${env.url}${path}`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  return { context, page };
}

/** `[role or type, text]` per item. */
function transcript(items) {
  return items.map((item) => {
    if (item.type === 'function_call') return ['function_call', item.callId ?? item.call_id];
    if (item.type === 'function_call_result' || item.type === 'function_call_output') return ['output', item.output?.text ?? item.output];
    const text = typeof item.content === 'string' ? item.content : item.content.map((p) => p.text ?? '').join('');
    return [item.role, text];
  });
}

const serverItems = (conversationId) => server.conversations.get(conversationId)?.items ?? [];

/** Opens (on `page`) a SyncedSession over IndexedDB session `id` and a Conversations session,
 * kept as `window.synced`; resolves once its first round is done. */
function openSynced(page, { id, conversationId, options = {} }) {
  return page.evaluate(
    async ({ url, id, conversationId, options }) => {
      window.remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'sk-test', conversationId });
      window.synced = new lib.SyncedSession(new lib.IndexedDbSession(id), window.remote, { retryDelayMs: 100, maxRetryDelayMs: 400, ...options });
      window.statuses = [];
      window.synced.addEventListener('syncstatus', (e) => window.statuses.push(e.detail));
      await window.synced.sync().catch(() => {});
      return window.synced.syncStatus;
    },
    { url: server.url, id, conversationId, options },
  );
}

/** A new conversation on the server, made from `page`: its id. */
function newConversation(page) {
  return page.evaluate(async ({ url }) => new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' }).getSessionId(), { url: server.url });
}

/** Waits until the page's SyncedSession has nothing pending and no error. */
function settled(page) {
  return page.waitForFunction(() => {
    const s = window.synced.syncStatus;
    return s.pending === 0 && s.lastError === null && !s.syncing;
  }, null, { timeout: 15000 });
}

const say = (role, text) =>
  role === 'user' ? { role: 'user', content: text } : { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] };

/** A reasoning model's turn: its reasoning has an id and encrypted content, and an empty summary
 * (two devices' reasoning items then differ only by their ids). */
const turn = (who, text) => [
  say('user', `${who}: ${text}`),
  { id: `rs_${who}`, type: 'reasoning', content: [], providerData: { type: 'reasoning', id: `rs_${who}`, encryptedContent: `enc-${who}` } },
  say('assistant', `${who}: done`),
];

/** Each item as its reasoning id, or its role and text. */
const reasoning = (items) => items.map((i) => (i.type === 'reasoning' ? i.id : transcript([i])[0].join(' ')));

describe('OpenAIConversationsSession', () => {
  test('a pop whose delete was done but answered with an error (a gateway 502) returns the item, and removes one item only; without AbortSignal.timeout, requests still work', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(
      async ({ url }) => {
        // The server deletes the item, and the answer is lost on the way back.
        const fetch = async (input, init) => {
          const response = await window.fetch(input, init);
          if (init?.method === 'DELETE' && String(input).includes('/items/')) return new Response('bad gateway', { status: 502 });
          return response;
        };
        const session = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', fetch });
        await session.addItems([{ role: 'user', content: 'one' }, { role: 'user', content: 'two' }, { role: 'user', content: 'three' }]);
        const popped = await session.popItem().then((item) => item.content[0].text, (e) => `${e.name} ${e.status}`);
        const left = (await session.getItems()).map((i) => i.content[0].text);
        const saved = AbortSignal.timeout;
        AbortSignal.timeout = undefined;
        try {
          const plain = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: await session.getSessionId() });
          return { popped, left, withoutTimeout: (await plain.getItems()).length };
        } finally {
          AbortSignal.timeout = saved;
        }
      },
      { url: server.url },
    );
    assert.equal(r.popped, 'three');
    assert.deepEqual(r.left, ['one', 'two'], 'one item removed');
    assert.equal(r.withoutTimeout, 2);
    await context.close();
  });

  test('the session protocol against the Conversations API: lazy creation, limit, pop, clear, errors', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(
      async ({ url }) => {
        const session = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'sk-secret' });
        const before = session.sessionId;
        const items = [
          { role: 'user', content: 'Weather in Oslo?' },
          { type: 'function_call', callId: 'c1', name: 'weather', arguments: '{"city":"Oslo"}', status: 'completed' },
          { type: 'function_call_result', callId: 'c1', name: 'weather', status: 'completed', output: { type: 'text', text: 'Rainy' } },
          { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'It is rainy.' }] },
          { role: 'user', content: 'Thanks' },
        ];
        await session.addItems(items);
        const id = await session.getSessionId();
        const all = await session.getItems();
        const newest = await session.getItems(2);
        const none = await session.getItems(0);
        const popped = await session.popItem();
        const afterPop = await session.getItems();
        const negative = await session.getItems(-1);
        const everything = await session.getItems(Infinity);
        const badLimit = await attempt(() => session.getItems(1.5));
        const textLimit = await attempt(() => session.getItems('0'));
        const badItems = await attempt(() => session.addItems('nope'));
        await session.clearSession();
        const cleared = session.sessionId;
        await session.addItems([{ role: 'user', content: 'again' }]);
        return {
          before,
          id,
          all,
          newest,
          none,
          popped,
          afterPop: afterPop.length,
          badLimit,
          textLimit,
          negative,
          everything,
          badItems,
          cleared,
          next: await session.getSessionId(),
          own: JSON.stringify(session) + Object.keys(session).join(),
          stored: JSON.stringify({ ...localStorage, ...sessionStorage }),
        };
      },
      { url: server.url },
    );
    assert.equal(r.before, undefined, 'nothing is created before the first call');
    assert.match(r.id, /^conv_/);
    assert.deepEqual(transcript(r.all), [
      ['user', 'Weather in Oslo?'],
      ['function_call', 'c1'],
      ['output', 'Rainy'],
      ['assistant', 'It is rainy.'],
      ['user', 'Thanks'],
    ]);
    // The SDK's shapes, with the server's ids.
    assert.deepEqual(r.all[0], { id: r.all[0].id, type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Oslo?' }] });
    assert.equal(r.all[1].callId, 'c1');
    assert.equal(r.all[2].output, 'Rainy', "a call's output as the API stored it, as the SDK's session returns it");
    assert.deepEqual(transcript(r.newest), [['assistant', 'It is rainy.'], ['user', 'Thanks']], 'the newest two, oldest first');
    assert.deepEqual(r.none, []);
    assert.deepEqual(transcript([r.popped]), [['user', 'Thanks']]);
    assert.equal(r.afterPop, 4);
    assert.equal(r.badLimit.code, 'INVALID_LIMIT');
    assert.equal(r.textLimit.code, 'INVALID_LIMIT', 'a string is no limit, as for the other sessions');
    // As the other sessions read them.
    assert.deepEqual([r.negative, r.everything.length], [[], r.afterPop]);
    assert.equal(r.badItems.code, 'INVALID_ITEM');
    assert.equal(r.cleared, undefined);
    assert.notEqual(r.next, r.id, 'after clearSession the next write starts a new conversation');
    assert.equal(server.conversations.has(r.id), false, 'clearSession deleted the conversation');
    assert.ok(!r.own.includes('sk-secret') && !r.stored.includes('sk-secret'), 'the API key is kept nowhere readable');
    const lists = server.requests.filter((q) => q.method === 'GET' && q.path.endsWith('/items'));
    assert.ok(lists.some((q) => q.query.order === 'desc' && q.query.limit === '2'), 'a limit reads the newest items');
    assert.ok(server.requests.every((q) => q.headers.authorization === 'Bearer sk-secret'));

    // Errors: the HTTP status, or 0 when no answer came.
    await server.setFault({ kind: 'status', status: 500, times: 1 });
    const failed = await page.evaluate(async ({ url }) => attempt(() => new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', retries: 0 }).getSessionId()), { url: server.url });
    assert.equal(failed.name, 'ModelError');
    assert.equal(failed.status, 500);
    await server.setFault({ kind: 'offline' });
    const refused = await page.evaluate(async ({ url }) => attempt(() => new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' }).getSessionId()), { url: server.url });
    await server.setFault(null);
    assert.equal(refused.name, 'ModelError');
    assert.equal(refused.status, 0);
    await context.close();
  });

  test('busy answers are retried as the runner retries them, a write of items only on 429; two pops on two devices remove two items; a read creates no conversation', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      // A fetch that answers the next requests of `method` with `statuses` (Retry-After: 0)
      // instead of passing them on; `sent` counts what reached it per method.
      const faulty = (plan) => {
        const sent = {};
        const fetchFn = async (u, init) => {
          sent[init.method] = (sent[init.method] ?? 0) + 1;
          const status = plan[init.method]?.shift();
          if (status) return new Response(JSON.stringify({ error: { message: `busy ${status}` } }), { status, headers: { 'retry-after': '0' } });
          return fetch(u, init);
        };
        return { fetchFn, sent };
      };
      const out = {};
      // Reads, pops and deletes before any write find nothing and create nothing.
      const fresh = faulty({});
      const empty = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', fetch: fresh.fetchFn });
      out.fresh = { items: await empty.getItems(), popped: (await empty.popItem()) ?? null, deleted: (await empty.deleteItem('msg_1')) ?? null, id: empty.sessionId ?? null, sent: fresh.sent };
      out.noId = await empty.deleteItem('').then(() => null, (e) => [e.code, e.message]);
      // 429 and 503 on reads, 429 on a write of items (the conversation's creation goes
      // through first: 0 passes a request on): retried. 503 on a write of items: not.
      const busy = faulty({ GET: [429, 503], POST: [0, 429, 429] });
      const s = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', fetch: busy.fetchFn });
      await s.addItems([{ role: 'user', content: 'x' }, { role: 'user', content: 'y' }]);
      out.items = (await s.getItems()).map((i) => i.content[0].text);
      out.busy = { ...busy.sent };
      const broken = faulty({ POST: [503] });
      const other = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: s.sessionId, fetch: broken.fetchFn });
      out.write = { error: await attempt(() => other.addItems([{ role: 'user', content: 'z' }])), sent: { ...broken.sent } };
      out.noRetries = await attempt(() => new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', retries: 0, fetch: faulty({ POST: [429] }).fetchFn }).getSessionId());
      out.badRetries = await attempt(async () => new lib.OpenAIConversationsSession({ retries: -1 }));
      // Another device deletes the newest item between this one's read and its delete.
      let first = true;
      const raced = new lib.OpenAIConversationsSession({
        baseUrl: url,
        apiKey: 'k',
        conversationId: s.sessionId,
        fetch: async (u, init) => {
          if (init.method === 'DELETE' && first) {
            first = false;
            await fetch(u, init);
          }
          return fetch(u, init);
        },
      });
      out.popped = (await raced.popItem())?.content[0].text;
      // A 502 on an item's delete is not sent again (done already, it would find the item gone).
      const gateway = faulty({ DELETE: [502] });
      out.deleteOnce = { error: (await attempt(() => new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: s.sessionId, fetch: gateway.fetchFn }).deleteItem('msg_x'))).status, sent: gateway.sent };
      out.left = (await s.getItems()).length;
      // Timeouts a timer cannot hold as they are still work.
      out.longTimeout = (await new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: s.sessionId, timeoutMs: 5e9 }).getItems()).length;
      out.oddTimeout = (await new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: s.sessionId, timeoutMs: 1500.5 }).getItems()).length;
      // Other devices delete the newest item before each of this one's deletes: after five, the
      // pop fails, where `undefined` would say the conversation is empty.
      const crowded = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      await crowded.addItems(['1', '2', '3', '4', '5', '6'].map((content) => ({ role: 'user', content })));
      const outrun = new lib.OpenAIConversationsSession({
        baseUrl: url,
        apiKey: 'k',
        conversationId: await crowded.getSessionId(),
        fetch: async (u, init) => {
          if (init.method === 'DELETE') await fetch(u, init);
          return fetch(u, init);
        },
      });
      const lost = await attempt(() => outrun.popItem());
      out.outrun = { status: lost.status, message: lost.message, left: (await crowded.getItems()).length };
      return out;
    }, { url: server.url });
    assert.deepEqual(r.fresh, { items: [], popped: null, deleted: null, id: null, sent: {} });
    assert.deepEqual(r.noId, ['INVALID_OPTIONS', 'deleteItem() of a conversation not created yet needs the id of an item (a non-empty string), got an empty string']);
    assert.equal(r.outrun.status, 409, 'a conflict, not a conversation gone');
    assert.match(r.outrun.message, /another device deleted the newest item each of 5 times/);
    assert.equal(r.outrun.left, 1, 'the five deleted elsewhere');
    assert.deepEqual(r.items, ['x', 'y']);
    assert.deepEqual(r.busy, { POST: 4, GET: 3 }, 'each busy answer retried once more');
    assert.equal(r.write.error.status, 503);
    assert.deepEqual(r.write.sent, { POST: 1 }, 'a write of items the server may have stored is not sent again');
    assert.equal(r.noRetries.status, 429);
    assert.equal(r.badRetries.code, 'INVALID_OPTIONS');
    assert.equal(r.popped, 'x', 'the item newest after the other device’s delete');
    assert.deepEqual(r.deleteOnce, { error: 502, sent: { DELETE: 1 } });
    assert.equal(r.left, 0, 'two pops, two items removed');
    assert.equal(r.longTimeout, 0);
    assert.equal(r.oddTimeout, 0);
    await context.close();
  });

  test('a write answered 400 conversation_locked (another request answering in the conversation: "retry in a few seconds") is sent again, as a 429 is, not taken for a refusal', async () => {
    const { context, page } = await device();
    // The conversation's creation passes; the first write of items is answered "locked".
    await server.setFault({ kind: 'status', status: 400, code: 'conversation_locked', message: 'Another process is currently operating on this conversation. Please retry in a few seconds.', methods: ['POST'], skip: 1, times: 1 });
    const r = await page.evaluate(async ({ url }) => {
      const s = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      const added = await attempt(() => s.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]));
      return { added, stored: (await s.getItems()).map((i) => i.content?.[0]?.text ?? i.content) };
    }, { url: server.url });
    assert.deepEqual(r.added, { ok: true, value: undefined }, 'it resolved');
    assert.deepEqual(r.stored, ['q', 'a'], 'stored once');
    // Still locked once the retries are used up: the error says so, and when to ask again.
    await server.setFault({ kind: 'status', status: 400, code: 'conversation_locked', retryAfter: 2, methods: ['POST'], skip: 1, times: 1 });
    const locked = await page.evaluate(async ({ url }) => {
      const s = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', retries: 0 });
      try {
        await s.addItems([{ role: 'user', content: 'q' }]);
        return 'resolved';
      } catch (e) {
        return { status: e.status, serverCode: e.serverCode, retryAfter: e.retryAfter };
      }
    }, { url: server.url });
    assert.deepEqual(locked, { status: 400, serverCode: 'conversation_locked', retryAfter: 2000 });
    await context.close();
  });

  test('a write of more than 20 items whose second request fails says how many were stored', async () => {
    const { context, page } = await device();
    // The conversation's creation and the first 20 items pass; the next write fails.
    await server.setFault({ kind: 'status', status: 400, methods: ['POST'], skip: 2, times: 1 });
    const r = await page.evaluate(async ({ url }) => {
      const s = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      const error = await attempt(() => s.addItems(Array.from({ length: 45 }, (_, i) => ({ role: 'user', content: `m${i}` }))));
      return { error, stored: (await s.getItems()).length };
    }, { url: server.url });
    assert.equal(r.error.status, 400);
    assert.match(r.error.message, /the first 20 of the 45 items were stored/);
    assert.equal(r.stored, 20);
    await context.close();
  });

  test("the SDK's run() hooks answer as the SDK's own class: an assistant message replays without the conversation's id", async () => {
    const { context, page } = await device();
    const r = await page.evaluate(() => {
      const s = new lib.OpenAIConversationsSession({ apiKey: 'k' });
      const answer = { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hi' }], providerData: { phase: 'final_answer', other: 1 } };
      const question = { id: 'msg_0', type: 'message', role: 'user', content: 'hello' };
      return {
        answer: s.prepareHistoryItemForModelInput(answer),
        question: s.prepareHistoryItemForModelInput(question),
        compared: s.prepareHistoryItemsForPersistenceComparison([{ type: 'function_call_result', callId: 'c1', name: 'f', status: 'completed', output: { type: 'text', text: 'done' } }]),
        reasoningIds: s.preserveReasoningItemIdsForPersistence(),
      };
    });
    assert.deepEqual(r.answer, { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hi' }], phase: 'final_answer' });
    assert.deepEqual(r.question, { id: 'msg_0', type: 'message', role: 'user', content: 'hello' }, 'other items as they are');
    assert.equal(r.compared.length, 1);
    assert.equal(r.compared[0].type, 'function_call_output');
    assert.equal(r.compared[0].call_id, 'c1');
    assert.equal(r.reasoningIds, true);
    await context.close();
  });

  test('a history the server compacted, given as the SDK’s run() gives it (replaceHistoryWithCompaction), is appended to the same conversation, as the SDK’s class does: the conversation is not deleted', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      const session = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      await session.addItems([{ role: 'user', content: 'Plan a trip' }]);
      const id = session.sessionId;
      await session.replaceHistoryWithCompaction([{ type: 'compaction', encrypted_content: 'turns so far' }, { role: 'user', content: 'And now?' }]);
      return { id, after: session.sessionId, items: await session.getItems() };
    }, { url: server.url });
    assert.equal(r.after, r.id, 'the same conversation');
    assert.ok(server.conversations.has(r.id), 'never deleted');
    assert.deepEqual(r.items.map((i) => i.type === 'compaction' ? 'compaction' : transcript([i])[0][1]), ['Plan a trip', 'compaction', 'And now?']);
    await context.close();
  });

  test('headers as a Headers object reach the server, the browser’s fetch given as is works, the key replaces an Authorization there, a fetch that ignores the signal still times out, and a page that says there is more with nothing to go on from fails the listing (a list cut short there would have a sync take the items past it for deleted)', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      const seen = [];
      const recording = (u, init) => {
        seen.push(init.headers);
        return fetch(u, init);
      };
      const s = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'sk-mine', fetch: recording, headers: new Headers({ 'OpenAI-Organization': 'org_1', Authorization: 'Bearer gateway' }) });
      await s.addItems([{ role: 'user', content: 'hello' }]);
      // A fetch that never answers and never looks at the signal.
      const hanging = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: 'conv_x', timeoutMs: 200, fetch: () => new Promise(() => {}) });
      const timedOut = await attempt(() => hanging.getItems());
      // A server that says there is more, but gives no id to go on from.
      let pages = 0;
      const endless = new lib.OpenAIConversationsSession({
        baseUrl: url,
        apiKey: 'k',
        conversationId: 'conv_x',
        fetch: async () => {
          pages += 1;
          return new Response(JSON.stringify({ data: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'no id' }] }], has_more: true }), { headers: { 'content-type': 'application/json' } });
        },
      });
      const listed = await attempt(() => endless.getItems());
      // The browser's own fetch, given as is (it refuses to run with another `this`).
      const native = await attempt(() => new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', fetch: window.fetch }).getSessionId());
      return { headers: seen[0], timedOut, listed: listed.ok ? listed.value.length : listed, pages, native };
    }, { url: server.url });
    assert.equal(r.headers['openai-organization'], 'org_1');
    assert.equal(r.headers.authorization, 'Bearer sk-mine');
    assert.equal(r.headers['content-type'], 'application/json');
    const sent = server.requests.find((q) => q.method === 'POST');
    assert.equal(sent.headers['openai-organization'], 'org_1');
    assert.equal(sent.headers.authorization, 'Bearer sk-mine');
    assert.equal(r.timedOut.name, 'ModelError');
    assert.equal(r.timedOut.code, 'MODEL_ERROR');
    assert.equal(r.timedOut.status, 0);
    assert.match(r.timedOut.message, /no answer within 200 ms/);
    assert.equal(r.listed.name, 'ModelError');
    assert.match(r.listed.message, /says there are more but gives no cursor/);
    assert.equal(r.pages, 1);
    assert.equal(r.native.ok, true, r.native.message);
    assert.match(r.native.value, /^conv_/);
    await context.close();
  });
  test('replaceHistoryWithCompaction (the SDK’s run() after a compaction item) replaces the local history in one transaction, archived on the device, and the next round takes it to the remote', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      const remote = new lib.MemorySession('compacted-remote');
      const local = new lib.IndexedDbSession('compacted');
      const synced = new lib.SyncedSession(local, remote, { syncOnOpen: false, retryDelayMs: 60_000 });
      await synced.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }]);
      await synced.sync();
      const kinds = [];
      local.subscribe((e) => kinds.push(e.change ? `${e.type}:${e.change}` : e.type));
      await synced.replaceHistoryWithCompaction([{ type: 'compaction', encrypted_content: 'q1 and a1' }, { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }]);
      await synced.sync();
      // (The event comes in a task after the write: waited for, up to a few seconds, then 50 ms
      // more for any other.)
      await new Promise((ok) => {
        const given = Date.now() + 5000;
        const check = () => (kinds.length > 0 || Date.now() > given ? setTimeout(ok, 50) : setTimeout(check, 10));
        check();
      });
      const text = (items) => items.map((i) => i.content ?? i.type);
      const out = { kinds, local: text(await local.getItems()), archived: text(await local.getArchivedItems()), remote: text(await remote.getItems()), pending: synced.syncStatus.pending };
      synced.close();
      return out;
    });
    assert.deepEqual(r.local, ['compaction', 'q2', 'a2']);
    assert.deepEqual(r.archived, ['q1', 'a1'], 'the replaced items are kept on the device');
    assert.deepEqual(r.kinds, ['replace:compaction'], 'one write, not a clear and an add');
    assert.deepEqual(r.remote, ['compaction', 'q2', 'a2']);
    assert.equal(r.pending, 0);
    await context.close();
  });

  test('a round that pulls another device’s items tells them as a replace with change sync (an EncryptedSession over it checks its key again after it)', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      const remote = new lib.MemorySession('sync-told-remote');
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('sync-told'), remote, { syncOnOpen: false });
      await synced.addItems([{ role: 'user', content: 'q1' }]);
      await synced.sync();
      const heard = [];
      // (Events come in a task after the write: waited for, up to a few seconds.)
      const until = (n) =>
        new Promise((ok) => {
          const given = Date.now() + 5000;
          const check = () => (heard.length >= n || Date.now() > given ? ok() : setTimeout(check, 10));
          check();
        });
      synced.subscribe((event) => heard.push(`${event.type}:${event.change}`));
      await remote.addItems([{ role: 'assistant', content: 'from another device' }]);
      await synced.sync();
      await until(1);
      // A new device: its first pull, into an empty history.
      const fresh = new lib.SyncedSession(new lib.IndexedDbSession('sync-told-new'), remote, { syncOnOpen: false });
      fresh.subscribe((event) => heard.push(`new ${event.type}:${event.change}`));
      await fresh.sync();
      await until(2);
      await new Promise((ok) => setTimeout(ok, 50));
      synced.close();
      fresh.close();
      return heard;
    });
    assert.deepEqual(r, ['replace:sync', 'new replace:sync']);
    await context.close();
  });

  test('an EncryptedSession over a SyncedSession: another device’s changeKey, pulled, has the next write here checked and refused under the old key', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      const remote = new lib.MemorySession('enc-sync-remote');
      const oldKey = crypto.getRandomValues(new Uint8Array(32));
      const newKey = crypto.getRandomValues(new Uint8Array(32));
      const on = (name, key) => {
        const synced = new lib.SyncedSession(new lib.IndexedDbSession('enc-sync', { dbName: name }), remote, { syncOnOpen: false });
        return { synced, enc: new lib.EncryptedSession(synced, { key: key.slice() }) };
      };
      const a = on('device-a', oldKey);
      const b = on('device-b', oldKey);
      await a.enc.addItems([{ role: 'user', content: 'q1' }]);
      await a.synced.sync();
      await b.synced.sync();
      // Device B reads (a run of the SDK before its model call)...
      const read = (await b.enc.getItems()).map((i) => i.content);
      // ...device A changes the key, and B's next round pulls it...
      await a.enc.changeKey(newKey.slice());
      await a.synced.sync();
      // (The pull's event comes in a task after it: waited for, up to a few seconds. The
      // EncryptedSession, listening since its read, hears it first.)
      const pulled = new Promise((ok) => {
        const stop = b.synced.subscribe((e) => e.type === 'replace' && (stop(), ok()));
        setTimeout(ok, 5000);
      });
      await b.synced.sync();
      await pulled;
      // ...and B saves its turn.
      const saved = await b.enc.addItems([{ role: 'assistant', content: 'a1' }]).then(() => 'saved', (e) => e.code);
      const underNew = new lib.EncryptedSession(new lib.IndexedDbSession('enc-sync', { dbName: 'device-b' }), { key: newKey.slice() });
      const after = (await underNew.getItems()).map((i) => i.content);
      a.synced.close();
      b.synced.close();
      return { read, saved, after, skipped: underNew.lastSkipped };
    });
    assert.deepEqual(r, { read: ['q1'], saved: 'INVALID_KEY', after: ['q1'], skipped: 0 });
    await context.close();
  });

  test('close() stops the listeners given to subscribe; a closed SyncedSession refuses new ones with CLOSED', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('sync-listeners'), new lib.MemorySession('sync-listeners-remote'), { syncOnOpen: false });
      const heard = [];
      synced.subscribe((event) => heard.push(event.type));
      await synced.addItems([{ role: 'user', content: 'q1' }]);
      await new Promise((ok) => setTimeout(ok, 50));
      const before = heard.length;
      synced.close();
      await new lib.IndexedDbSession('sync-listeners').addItems([{ role: 'user', content: 'q2' }]);
      await new Promise((ok) => setTimeout(ok, 50));
      let closed;
      try {
        synced.subscribe(() => {});
      } catch (e) {
        closed = e.code;
      }
      const round = await synced.sync().then(() => null, (e) => [e.code, e.message]);
      return { before, after: heard.length, closed, round };
    });
    assert.equal(r.before, 1);
    assert.equal(r.after, 1, 'nothing heard after close()');
    assert.equal(r.closed, 'CLOSED');
    assert.deepEqual(r.round, ['CLOSED', 'sync() of session "sync-listeners": the SyncedSession was closed; create a new one to sync again']);
    await context.close();
  });

  test('a SyncedSession whose local session was closed stops: its round fails with CLOSED once, and no interval or retry goes on', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      const local = new lib.IndexedDbSession('sync-local-closed');
      // Each round reads the local session: counted.
      let reads = 0;
      for (const name of ['getItems', 'getInfo']) {
        const method = local[name].bind(local);
        local[name] = (...args) => (reads++, method(...args));
      }
      const synced = new lib.SyncedSession(local, new lib.MemorySession('sync-local-closed-remote'), { syncOnOpen: false, intervalMs: 30, retryDelayMs: 20, maxRetryDelayMs: 40 });
      await synced.addItems([{ role: 'user', content: 'q1' }]);
      await synced.sync();
      await local.close();
      const failed = await synced.sync().then(() => 'resolved', (e) => e.code);
      const readsThen = reads;
      await new Promise((ok) => setTimeout(ok, 300));
      const again = await synced.sync().then(() => 'resolved', (e) => e.message);
      return { failed, readsAfter: reads - readsThen, again, status: synced.syncStatus };
    });
    assert.equal(r.failed, 'CLOSED');
    assert.equal(r.readsAfter, 0, 'no round ran after it');
    assert.equal(r.status.syncing, false, 'the status says no round runs');
    assert.equal(r.status.lastError?.code, 'CLOSED');
    assert.match(r.again, /^sync\(\) of session "sync-local-closed": the SyncedSession was closed/);
    await context.close();
  });

  test('sync() called several times during a round makes one more round, not one each, and every call resolves after it', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      const inner = new lib.MemorySession('remote-rounds');
      let open = () => {};
      let gate = null;
      let reads = 0;
      const remote = {
        getSessionId: () => inner.getSessionId(),
        async getItems(...args) {
          reads += 1;
          if (gate) await gate;
          return inner.getItems(...args);
        },
        addItems: (items) => inner.addItems(items),
        popItem: () => inner.popItem(),
        clearSession: () => inner.clearSession(),
      };
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('rounds'), remote, { syncOnOpen: false, retryDelayMs: 60_000 });
      await synced.addItems([{ role: 'user', content: 'q1' }]);
      await synced.sync();
      let rounds = 0;
      synced.addEventListener('syncstatus', (e) => {
        if (e.detail.syncing) rounds += 1;
      });
      gate = new Promise((ok) => (open = ok));
      const first = synced.sync();
      while (reads === 1) await new Promise((ok) => setTimeout(ok, 5));
      const later = [synced.sync(), synced.sync(), synced.sync(), synced.sync()];
      gate = null;
      open();
      await Promise.all([first, ...later]);
      // (A round a timer would start comes within a few milliseconds.)
      await new Promise((ok) => setTimeout(ok, 100));
      synced.close();
      return { rounds, remote: (await inner.getItems()).length };
    });
    assert.equal(r.rounds, 2, 'the round under way, and one after it');
    assert.equal(r.remote, 1);
    await context.close();
  });

  test('on an insecure origin (crypto without randomUUID, as plain http has it) a round pulls another device’s items into a chat that holds some', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      delete Crypto.prototype.randomUUID;
      const remote = new lib.MemorySession('insecure-remote');
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('insecure'), remote, { syncOnOpen: false });
      await synced.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
      await synced.sync();
      // Another device's turn.
      await remote.addItems([{ role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }]);
      const round = await attempt(() => synced.sync());
      const items = (await synced.getItems()).map((i) => i.content);
      synced.close();
      return { round: round.ok || round.message, items };
    });
    assert.equal(r.round, true);
    assert.deepEqual(r.items, ['q1', 'a1', 'q2', 'a2']);
    await context.close();
  });

  test('delays longer than a timer takes (2^31 - 1 ms) wait that long at most, rather than firing at once, a round after each', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      const inner = new lib.MemorySession('long-delays-remote');
      let reads = 0;
      const remote = {
        getSessionId: () => inner.getSessionId(),
        // (Failing from the second read on: the failed round's retry waits too.)
        getItems: (...args) => ((reads += 1), reads > 1 ? Promise.reject(new Error('the remote is down')) : inner.getItems(...args)),
        addItems: (items) => inner.addItems(items),
        popItem: () => inner.popItem(),
        clearSession: () => inner.clearSession(),
      };
      const month = 30 * 86_400_000;
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('long-delays'), remote, { intervalMs: month, retryDelayMs: month, maxRetryDelayMs: month });
      await synced.sync();
      // A round that fails: its retry waits a month too.
      const failed = await synced.sync().then(() => false, () => true);
      const after = reads;
      await new Promise((ok) => setTimeout(ok, 300));
      synced.close();
      return { after, reads, failed };
    });
    assert.equal(r.failed, true, 'the second round failed');
    assert.equal(r.reads, r.after, 'no round after the two asked for: neither the interval nor the retry fired');
    await context.close();
  });

  test('a server that leaves has_more out of its pages is read to the end: a page with items is followed by the next, also when pages are shorter than asked', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      const items = Array.from({ length: 150 }, (_, i) => ({ role: 'user', content: `m${i}` }));
      const writer = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      await writer.addItems(items);
      // The same server's pages without `has_more`.
      const without = async (u, init) => {
        const answer = await fetch(u, init);
        const json = await answer.json();
        if (json && typeof json === 'object') delete json.has_more;
        return new Response(JSON.stringify(json), { status: answer.status, headers: { 'content-type': 'application/json' } });
      };
      const reader = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: await writer.getSessionId(), fetch: without });
      // And a server whose pages are shorter than asked (at most 30 items).
      const capped = (u, init) => without(u.replace(/limit=\d+/, (l) => `limit=${Math.min(30, Number(l.slice(6)))}`), init);
      const short = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: await writer.getSessionId(), fetch: capped });
      const text = (list) => list.map((i) => (typeof i.content === 'string' ? i.content : i.content[0].text));
      return { all: text(await reader.getItems()), newest: text(await reader.getItems(120)), short: text(await short.getItems()) };
    }, { url: server.url });
    assert.equal(r.all.length, 150);
    assert.deepEqual(r.short, r.all, 'pages shorter than asked are read to the end too');
    assert.equal(r.all.at(-1), 'm149');
    assert.equal(r.newest.length, 120);
    assert.deepEqual([r.newest[0], r.newest.at(-1)], ['m30', 'm149']);
    await context.close();
  });

  test('an answer that is no list of items (an empty body, a proxy’s own JSON) fails the read, a conversation’s creation is not sent twice, and a newest item without an id is not popped: a synced history keeps its items', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      const out = {};
      // Reads answered, with a 200, by something that is not the API (a service worker's fallback).
      let odd = null;
      const proxied = (u, init) => (init.method === 'GET' && odd !== null ? Promise.resolve(new Response(odd, { headers: { 'content-type': 'application/json' } })) : fetch(u, init));
      const remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', fetch: proxied });
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('not-a-list'), remote, { syncOnOpen: false, retryDelayMs: 60_000 });
      await synced.addItems([{ role: 'user', content: 'kept' }, { role: 'user', content: 'here' }]);
      await synced.sync();
      out.remote = (await remote.getItems()).length;
      out.reads = [];
      for (const body of ['', '{}', '{"data":null}', '{"object":"list","data":[],"has_more":"no"}']) {
        odd = body;
        out.reads.push(await attempt(() => remote.getItems()));
        await synced.sync().catch(() => {});
        out.status = synced.syncStatus.lastError;
      }
      odd = null;
      out.local = (await synced.getItems()).map((i) => i.content);
      out.remoteAfter = (await remote.getItems()).length;
      await synced.close();
      // A 503 to the creation of a conversation: the server may have made one; not sent again.
      let posts = 0;
      const creating = new lib.OpenAIConversationsSession({
        baseUrl: url,
        apiKey: 'k',
        fetch: (u, init) => {
          posts += init.method === 'POST' ? 1 : 0;
          return init.method === 'POST' ? Promise.resolve(new Response('{"error":{"message":"busy"}}', { status: 503 })) : fetch(u, init);
        },
      });
      out.create = { error: await attempt(() => creating.getSessionId()), posts };
      // A server whose items carry no id: the newest cannot be deleted, so it is not popped.
      let deletes = 0;
      const idless = new lib.OpenAIConversationsSession({
        baseUrl: url,
        apiKey: 'k',
        conversationId: 'conv_idless',
        fetch: async (u, init) => {
          deletes += init.method === 'DELETE' ? 1 : 0;
          return new Response(JSON.stringify({ object: 'list', data: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'no id' }] }], has_more: false }), { headers: { 'content-type': 'application/json' } });
        },
      });
      out.pop = { error: await attempt(() => idless.popItem()), deletes };
      return out;
    }, { url: server.url });
    assert.equal(r.remote, 2);
    for (const read of r.reads) {
      assert.equal(read.name, 'ModelError');
      assert.equal(read.code, 'MODEL_ERROR');
      assert.match(read.message, /no list of items/);
    }
    assert.equal(r.status.code, 'MODEL_ERROR', 'the round fails');
    assert.deepEqual(r.local, ['kept', 'here'], 'nothing here taken for deleted');
    assert.equal(r.remoteAfter, 2);
    assert.equal(r.create.error.status, 503);
    assert.equal(r.create.posts, 1, 'a conversation’s creation is not sent again');
    assert.equal(r.pop.error.name, 'ModelError');
    assert.match(r.pop.error.message, /the newest item has no id/);
    assert.equal(r.pop.deletes, 0);
    await context.close();
  });
});

describe('SyncedSession', () => {
  test('two devices write offline, come online, and converge to the same history: nothing lost or doubled', async () => {
    const a = await device();
    const b = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'trip', conversationId });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'Plan a trip'), say('assistant', 'Where to?')]);
    await settled(a.page);
    const first = await openSynced(b.page, { id: 'trip', conversationId });
    assert.equal(first.pending, 0);
    assert.deepEqual(transcript(await b.page.evaluate(() => window.synced.getItems())), [['user', 'Plan a trip'], ['assistant', 'Where to?']], 'B pulled what A wrote');

    await a.context.setOffline(true);
    await b.context.setOffline(true);
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'A: Lisbon')]);
    await b.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'B: Porto'), say('assistant', 'B: noted')]);
    // (The outbox is counted once the write has resolved: the status tells it a moment later.)
    await a.page.waitForFunction(() => window.synced.syncStatus.pending === 1, null, { timeout: 5000 }).catch(() => {});
    const offline = await a.page.evaluate(() => window.synced.syncStatus);
    assert.equal(offline.online, false);
    assert.equal(offline.pending, 1, 'the write waits in the outbox');
    assert.equal(serverItems(conversationId).length, 2, 'nothing reached the server while offline');
    // Reads work offline.
    assert.equal((await a.page.evaluate(() => window.synced.getItems())).length, 3);

    await a.context.setOffline(false);
    await settled(a.page);
    await b.context.setOffline(false);
    await settled(b.page);
    await a.page.evaluate(() => window.synced.sync());

    const expected = [
      ['user', 'Plan a trip'],
      ['assistant', 'Where to?'],
      ['user', 'A: Lisbon'],
      ['user', 'B: Porto'],
      ['assistant', 'B: noted'],
    ];
    assert.deepEqual(transcript(serverItems(conversationId)), expected, "the remote's order: A's push came first");
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), expected);
    assert.deepEqual(transcript(await b.page.evaluate(() => window.synced.getItems())), expected, "B's history rewritten once to the remote's order");
    // Items written on a device come back as they were written there.
    assert.deepEqual((await b.page.evaluate(() => window.synced.getItems()))[3], say('user', 'B: Porto'));
    const statuses = await a.page.evaluate(() => window.statuses);
    assert.ok(statuses.some((s) => s.online === false) && statuses.at(-1).online === true, 'status changes were observable');
    await a.context.close();
    await b.context.close();
  });

  test('a summary a compaction wrote on one device reaches another through the Conversations API still a summary: a window of turns there keeps it', async () => {
    const a = await device();
    const b = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'compacted-a', conversationId });
    await a.page.evaluate(async () => {
      await window.synced.addItems([{ role: 'user', content: 'I like chess' }, { role: 'assistant', content: 'Noted.' }, { role: 'user', content: 'And Go?' }, { role: 'assistant', content: 'Also.' }]);
      // What CompactionSession's summary strategy writes.
      const summary = { type: 'message', role: 'system', content: 'Summary of the earlier conversation:\nThe user likes chess.', 'agent-sessions.summary': true };
      const items = await window.synced.getItems();
      await window.synced.replaceHistory([summary, ...items.slice(2)], { archive: true });
    });
    await settled(a.page);
    await openSynced(b.page, { id: 'compacted-b', conversationId });
    await settled(b.page);
    const r = await b.page.evaluate(async () => ({
      window: (await new lib.IndexedDbSession('compacted-b', { settings: { turns: 1 } }).getItems()).map((i) => i.role),
      marked: (await window.synced.getItems())[0]['agent-sessions.summary'],
    }));
    assert.deepEqual(r.window, ['system', 'user', 'assistant'], 'the summary, then the newest turn');
    assert.equal(r.marked, true);
    await a.context.close();
    await b.context.close();
  });

  test('two devices whose offline turns hold reasoning items: each device’s reasoning stays in its own turn, none doubled', async () => {
    const a = await device();
    const b = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'thinking', conversationId });
    await openSynced(b.page, { id: 'thinking', conversationId });
    await a.context.setOffline(true);
    await b.context.setOffline(true);
    await a.page.evaluate((items) => window.synced.addItems(items), turn('a', 'Lisbon'));
    await b.page.evaluate((items) => window.synced.addItems(items), turn('b', 'Porto'));
    await a.context.setOffline(false);
    await settled(a.page);
    await b.context.setOffline(false);
    await settled(b.page);
    await a.page.evaluate(() => window.synced.sync());
    const expected = [...turn('a', 'Lisbon'), ...turn('b', 'Porto')];
    for (const device of [a, b]) {
      const items = await device.page.evaluate(() => window.synced.getItems());
      assert.deepEqual(reasoning(items), reasoning(expected));
    }
    assert.deepEqual(await b.page.evaluate(() => window.synced.getItems().then((items) => items[4])), turn('b', 'Porto')[1], 'B’s own reasoning item, as written there');
    await a.context.close();
    await b.context.close();
  });

  test('a device whose push round overlaps another device’s push keeps each reasoning item in its own turn (paired by the id the remote keeps, not by content both share)', async () => {
    const a = await device();
    const b = await device();
    const conversationId = await newConversation(a.page);
    // A's remote holds its round after each push, until the test lets it go on: B pushes then.
    await a.page.evaluate(async ({ url, conversationId }) => {
      class Held extends lib.OpenAIConversationsSession {
        async addItems(items) {
          await super.addItems(items);
          await window.gate;
        }
      }
      window.gate = Promise.resolve();
      window.synced = new lib.SyncedSession(new lib.IndexedDbSession('overlap'), new Held({ baseUrl: url, apiKey: 'k', conversationId }), { retryDelayMs: 100, maxRetryDelayMs: 400 });
      await window.synced.sync();
    }, { url: server.url, conversationId });
    await openSynced(b.page, { id: 'overlap', conversationId });
    await b.context.setOffline(true);
    await b.page.evaluate((items) => window.synced.addItems(items), turn('b', 'Porto'));
    await a.page.evaluate((items) => {
      window.gate = new Promise((go) => (window.go = go));
      return window.synced.addItems(items);
    }, turn('a', 'Lisbon'));
    // A's items are on the server; its round waits before reading the remote again.
    for (let i = 0; serverItems(conversationId).length < 3 && i < 200; i++) await new Promise((ok) => setTimeout(ok, 25));
    assert.equal(serverItems(conversationId).length, 3);
    await b.context.setOffline(false);
    await b.page.evaluate(() => window.synced.sync());
    assert.equal(serverItems(conversationId).length, 6, 'B pushed while A’s round waited');
    await a.page.evaluate(() => {
      window.go();
      return window.synced.sync();
    });
    await b.page.evaluate(() => window.synced.sync());
    const expected = [...turn('a', 'Lisbon'), ...turn('b', 'Porto')];
    for (const device of [a, b]) {
      assert.deepEqual(reasoning(await device.page.evaluate(() => window.synced.getItems())), reasoning(expected));
    }
    // And so it stays: a later round changes nothing.
    await a.page.evaluate(() => window.synced.sync());
    assert.deepEqual(reasoning(await a.page.evaluate(() => window.synced.getItems())), reasoning(expected));
    // A history an earlier version left with A's reasoning item in B's turn too is mended by the
    // next round: the remote's item under that id is written back.
    await a.page.evaluate(async () => {
      const local = new lib.IndexedDbSession('overlap');
      const [, reasoningOfA, , , reasoningOfB, last] = await local.getItems();
      await local.applyHistoryTransaction({ operationId: 'as-left-before', transaction: { type: 'replace_suffix', expectedSuffix: [reasoningOfB, last], replacement: [reasoningOfA, last] } });
    });
    assert.deepEqual(reasoning(await a.page.evaluate(() => new lib.IndexedDbSession('overlap').getItems())).slice(3, 5), ['user b: Porto', 'rs_a']);
    await a.page.evaluate(() => window.synced.sync());
    const mended = await a.page.evaluate(() => window.synced.getItems());
    assert.deepEqual(reasoning(mended), reasoning(expected));
    assert.match(JSON.stringify(mended[4]), /enc-b/, 'B’s reasoning, encrypted content and all');
    assert.doesNotMatch(JSON.stringify(mended[4]), /enc-a/);
    await a.context.close();
    await b.context.close();
  });

  test('a remote that gives reasoning items ids of its own: this device’s item stays as written, no round rewrites it', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async (items) => {
      const store = new lib.MemorySession();
      const renaming = {
        getSessionId: () => store.getSessionId(),
        getItems: (limit) => store.getItems(limit),
        addItems: (given) => store.addItems(given.map((i) => (i.type === 'reasoning' ? { ...i, id: `srv_${i.id}` } : i))),
        popItem: () => store.popItem(),
        clearSession: () => store.clearSession(),
      };
      const local = new lib.IndexedDbSession('renaming-remote');
      const synced = new lib.SyncedSession(local, renaming);
      await synced.addItems(items);
      await synced.sync();
      const rewrites = (await local.getInfo()).rewrites;
      await synced.sync();
      return { ids: (await synced.getItems()).map((i) => i.id ?? null), remote: (await store.getItems()).map((i) => i.id ?? null), rewrites, after: (await local.getInfo()).rewrites };
    }, turn('a', 'Lisbon'));
    assert.deepEqual(r.ids, [null, 'rs_a', null], 'as written here');
    assert.deepEqual(r.remote, [null, 'srv_rs_a', null]);
    assert.equal(r.rewrites, 0, 'the history was not rewritten');
    assert.equal(r.after, 0);
    await context.close();
  });

  test('a push whose response was dropped is not sent again after a reload', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'dropped', conversationId, options: { retryDelayMs: 60_000 } });
    await server.setFault({ kind: 'drop', times: 1, methods: ['POST'] });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'only once')]);
    // The round after the write fails (no answer came), and its retry is a minute away.
    await a.page.waitForFunction(() => window.synced.syncStatus.lastError !== null && !window.synced.syncStatus.syncing);
    assert.equal(serverItems(conversationId).length, 1, 'but the write took effect');

    await a.page.reload();
    await a.page.waitForFunction(() => window.ready === true);
    await openSynced(a.page, { id: 'dropped', conversationId });
    await settled(a.page);
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'only once']], 'no duplicate on the server');
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), [['user', 'only once']]);
    await a.context.close();
  });

  test('a push whose response was dropped, of a turn with a reasoning item the remote does not keep, is not sent again', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'dropped-reasoning', conversationId, options: { retryDelayMs: 60_000 } });
    await server.setFault({ kind: 'drop', times: 1, methods: ['POST'] });
    const turn = [say('user', 'only once'), { type: 'reasoning', content: [{ type: 'input_text', text: 'Hmm' }] }, say('assistant', 'once')];
    await a.page.evaluate(async (items) => window.synced.addItems(items), turn);
    await a.page.waitForFunction(() => window.synced.syncStatus.lastError !== null && !window.synced.syncStatus.syncing);
    assert.equal(serverItems(conversationId).length, 2, 'the write took effect, without the reasoning');

    await a.page.reload();
    await a.page.waitForFunction(() => window.ready === true);
    await openSynced(a.page, { id: 'dropped-reasoning', conversationId });
    await settled(a.page);
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'only once'], ['assistant', 'once']], 'no duplicate on the server');
    assert.deepEqual(await a.page.evaluate(() => window.synced.getItems()), turn);
    assert.equal(await a.page.evaluate(() => window.synced.syncStatus.localOnly), 1);
    await a.context.close();
  });

  test('a tab closed in the middle of a push: reopened, everything is pushed exactly once', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'closed', conversationId });
    await server.setFault({ kind: 'slow', ms: 600 });
    await a.page.evaluate(async (items) => {
      await window.synced.addItems(items);
    }, [say('user', 'one'), say('assistant', 'two'), say('user', 'three')]);
    // The round is on its way (the server holds the requests); the tab goes.
    await new Promise((ok) => setTimeout(ok, 150));
    await a.page.close();
    await server.setFault(null);
    const page = await a.context.newPage();
    await page.goto(`${env.url}/tests/pages/harness.html`);
    await page.waitForFunction(() => window.ready === true);
    await openSynced(page, { id: 'closed', conversationId });
    await settled(page);
    await page.evaluate(() => window.synced.sync());
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'one'], ['assistant', 'two'], ['user', 'three']], 'each item once');
    assert.equal((await page.evaluate(() => window.synced.getItems())).length, 3);
    await a.context.close();
  });

  test('a server 500 is retried with backoff; the status reports the error, then the recovery', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'errors', conversationId });
    await server.setFault({ kind: 'status', status: 500, times: 3 });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'hello')]);
    await a.page.waitForFunction(() => window.statuses.some((s) => s.lastError?.status === 500), null, { timeout: 10000 });
    await settled(a.page);
    const statuses = await a.page.evaluate(() => window.statuses);
    const errors = statuses.filter((s) => s.lastError?.status === 500);
    assert.ok(errors.length >= 1);
    assert.equal(errors[0].pending, 1, 'the item waited in the outbox');
    assert.equal(statuses.at(-1).lastError, null);
    assert.ok(statuses.at(-1).lastSyncedAt > 0);
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'hello']]);
    await a.context.close();
  });

  test('a remote that refuses the round (its conversation deleted elsewhere: 404) is not asked again on a timer; nothing is deleted here', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'gone', conversationId });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'hello')]);
    await settled(a.page);
    // Another device deletes the conversation itself.
    await a.page.evaluate(async ({ url, conversationId }) => new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId }).clearSession(), { url: server.url, conversationId });
    const asked = () => server.requests.filter((q) => q.path.includes(conversationId)).length;
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'still there?')]);
    await a.page.waitForFunction(() => window.synced.syncStatus.lastError?.status === 404 && !window.synced.syncStatus.syncing);
    const after = asked();
    // Backoff would have asked three times by now (100, 200 and 400 ms).
    await new Promise((ok) => setTimeout(ok, 1500));
    assert.equal(asked(), after, 'no round on a timer');
    const status = await a.page.evaluate(() => window.synced.syncStatus);
    assert.deepEqual([status.lastError.status, status.pending], [404, 1]);
    // Asked again, it tries again; the local history is kept whole.
    const again = await a.page.evaluate(() => window.synced.sync().then(() => 'synced', (e) => e.status));
    assert.equal(again, 404);
    assert.ok(asked() > after);
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), [['user', 'hello'], ['user', 'still there?']]);
    await a.context.close();
  });

  test('popItem and clearSession reach the remote; a pop of an item not pushed yet never does', async () => {
    const a = await device();
    const b = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'pops', conversationId });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'q1'), say('assistant', 'a1'), say('user', 'q2')]);
    await settled(a.page);
    await openSynced(b.page, { id: 'pops', conversationId });
    await a.context.setOffline(true);
    const popped = await a.page.evaluate(async (item) => {
      const synced = await window.synced.popItem();
      await window.synced.addItems([item]);
      const unpushed = await window.synced.popItem();
      return [synced, unpushed];
    }, say('user', 'typo'));
    assert.deepEqual(transcript(popped), [['user', 'q2'], ['user', 'typo']]);
    await a.page.waitForFunction(() => window.synced.syncStatus.pending === 1, null, { timeout: 5000 });
    await a.context.setOffline(false);
    await settled(a.page);
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'q1'], ['assistant', 'a1']], 'the pushed item was deleted; the other never left');
    await b.page.evaluate(() => window.synced.sync());
    assert.deepEqual(transcript(await b.page.evaluate(() => window.synced.getItems())), [['user', 'q1'], ['assistant', 'a1']], 'and the other device lost it too');

    await a.page.evaluate(() => window.synced.clearSession());
    await settled(a.page);
    assert.deepEqual(serverItems(conversationId), [], "clearSession deleted the conversation's items");
    assert.ok(server.conversations.has(conversationId), 'and kept the conversation the devices share');
    await b.page.evaluate(() => window.synced.sync());
    assert.deepEqual(await b.page.evaluate(() => window.synced.getItems()), [], 'the other device is cleared too');
    await a.context.close();
    await b.context.close();
  });

  test("this package's runner on one device, @openai/agents' run() on the other: one conversation", async () => {
    const a = await device('/tests/pages/interop.html');
    const b = await device('/tests/pages/interop.html');
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'two-runners', conversationId });
    const ours = await a.page.evaluate(async () => {
      const { fetch } = scriptedFetch([{ text: 'San Francisco.' }, { text: 'California.' }, { text: 'About 808,000.' }]);
      const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch });
      const agent = new lib.Agent({ name: 'Guide', model: 'm' });
      const outputs = [];
      for (const q of ['Which city is the Golden Gate Bridge in?', 'Which state?', 'Population?']) {
        outputs.push((await runner.run(agent, q, { session: window.synced })).finalOutput);
      }
      return outputs;
    });
    assert.deepEqual(ours, ['San Francisco.', 'California.', 'About 808,000.']);
    await settled(a.page);
    await openSynced(b.page, { id: 'two-runners', conversationId });
    const sdk = await b.page.evaluate(async () => {
      const { Agent, run, ScriptedModel, assistantMessage } = window.sdk;
      const model = new ScriptedModel([[assistantMessage('It opened in 1937.')]]);
      const result = await run(new Agent({ name: 'Guide', model }), 'When did it open?', { session: window.synced });
      return { output: result.finalOutput, saw: model.calls[0].request.input };
    });
    assert.equal(sdk.output, 'It opened in 1937.');
    assert.deepEqual(transcript(sdk.saw), [
      ['user', 'Which city is the Golden Gate Bridge in?'],
      ['assistant', 'San Francisco.'],
      ['user', 'Which state?'],
      ['assistant', 'California.'],
      ['user', 'Population?'],
      ['assistant', 'About 808,000.'],
      ['user', 'When did it open?'],
    ], "the SDK on device B continued device A's conversation");
    await settled(b.page);
    await a.page.evaluate(() => window.synced.sync());
    const back = await a.page.evaluate(() => window.synced.getItems());
    assert.deepEqual(transcript(back).slice(-2), [['user', 'When did it open?'], ['assistant', 'It opened in 1937.']]);
    assert.equal(serverItems(conversationId).length, 8);
    await a.context.close();
    await b.context.close();
  });

  test('a push of more than 20 items whose second write fails sends no item twice', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'chunks', conversationId });
    await server.setFault({ kind: 'status', status: 500, methods: ['POST'], skip: 1, times: 1 });
    await a.page.evaluate(async () => window.synced.addItems(Array.from({ length: 25 }, (_, i) => ({ role: 'user', content: `m${i}` }))));
    await settled(a.page);
    const texts = transcript(serverItems(conversationId)).map(([, t]) => t);
    assert.deepEqual(texts, Array.from({ length: 25 }, (_, i) => `m${i}`), 'each item once, in order');
    assert.equal(server.requests.filter((q) => q.method === 'POST' && q.path.endsWith('/items')).length, 3, 'the 20 that landed were not sent again');
    await a.context.close();
  });

  test('an unconfirmed push popped before the next round is deleted there, not pulled back', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'unconfirmed', conversationId, options: { retryDelayMs: 60_000 } });
    await server.setFault({ kind: 'drop', methods: ['POST'], times: 1 });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'keep'), say('user', 'oops')]);
    await a.page.waitForFunction(() => window.synced.syncStatus.lastError !== null && !window.synced.syncStatus.syncing);
    assert.equal(serverItems(conversationId).length, 2, 'the write landed, unconfirmed');
    await a.page.evaluate(() => window.synced.popItem());
    await a.page.evaluate(() => window.synced.sync());
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'keep']]);
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), [['user', 'keep']]);
    await a.context.close();
  });

  test('a round after a turn reads only what came after the synced items: one page of the remote, the outbox of the local history', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    // 250 items already synced: three pages of the API.
    await a.page.evaluate(async () => {
      const local = new lib.IndexedDbSession('long');
      const turns = [];
      for (let i = 0; i < 125; i++) turns.push({ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` });
      await local.addItems(turns);
    });
    await openSynced(a.page, { id: 'long', conversationId, options: { syncOnOpen: false } });
    await settled(a.page);
    assert.equal(serverItems(conversationId).length, 250);
    const listed = () => server.requests.filter((q) => q.method === 'GET' && q.path.endsWith('/items'));
    const reads = await a.page.evaluate(() => {
      // Every read of the local history, by its limit (undefined: the whole history).
      const local = new lib.IndexedDbSession('long');
      window.localReads = [];
      const getItems = lib.IndexedDbSession.prototype.getItems;
      lib.IndexedDbSession.prototype.getItems = function (limit) {
        if (this.sessionId === 'long') window.localReads.push(limit ?? 'all');
        return getItems.call(this, limit);
      };
      return local.sessionId;
    });
    assert.equal(reads, 'long');

    const before = listed().length;
    await a.page.evaluate(async (items) => {
      await window.synced.addItems(items);
      await window.synced.sync();
    }, [say('user', 'one more'), say('assistant', 'sure')]);
    await settled(a.page);
    const lists = listed().slice(before);
    assert.ok(lists.length <= 4, `the rounds listed ${lists.length} times`);
    assert.ok(lists.every((q) => q.query.order === 'desc' && Number(q.query.limit) <= 100), 'only the newest items, never every page');
    assert.deepEqual(await a.page.evaluate(() => window.localReads.filter((l) => l === 'all' || l > 3)), [], 'the local history was never read whole');
    assert.deepEqual(transcript(serverItems(conversationId)).slice(-3), [['assistant', 'a124'], ['user', 'one more'], ['assistant', 'sure']]);
    assert.equal(serverItems(conversationId).length, 252);

    // A change made without the SyncedSession, in the middle of the history: the round finds it
    // (the local rewrite count moved) and the remote follows.
    await a.page.evaluate(async () => {
      const other = new lib.IndexedDbSession('long');
      await other.replaceHistory((await other.getItems()).filter((item) => item.content !== 'q3' && item.content !== 'a3'), { archive: false });
    });
    await a.page.evaluate(() => window.synced.sync());
    await settled(a.page);
    const remote = transcript(serverItems(conversationId));
    assert.equal(remote.length, 250);
    assert.ok(!remote.some(([, text]) => text === 'q3' || text === 'a3'), 'the removed turn left the remote');
    assert.deepEqual(remote.slice(2, 8).map(([, t]) => t), ['q1', 'a1', 'q2', 'a2', 'q4', 'a4']);
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), remote);

    // Another device pops the newest item: the next round here does not find the synced end in
    // the remote's newest items, compares the whole histories and loses it too.
    const b = await device();
    await openSynced(b.page, { id: 'long', conversationId });
    await settled(b.page);
    await b.page.evaluate(() => window.synced.popItem());
    await settled(b.page);
    await a.page.evaluate(() => window.synced.sync());
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())).at(-1), ['user', 'one more']);
    assert.equal(await a.page.evaluate(() => window.synced.syncStatus.pending), 0);
    await a.context.close();
    await b.context.close();
  });

  test('a history restored from a backup on another device, with no sync state there: nothing is sent twice, and the new device syncs on', async () => {
    const a = await device();
    const b = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'restored', conversationId });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'q1'), say('assistant', 'a1'), say('user', 'q2')]);
    await settled(a.page);
    const backup = await a.page.evaluate(() => new Response(lib.exportSessions({ sessionIds: ['restored'] })).text());
    // B restores the backup, and has one more item of its own before it first syncs.
    await b.page.evaluate(async (text) => {
      await lib.importSessions(text);
      await new lib.IndexedDbSession('restored').addItems([{ role: 'assistant', content: 'a2 from B' }]);
    }, backup);
    await openSynced(b.page, { id: 'restored', conversationId });
    await settled(b.page);
    const expected = [['user', 'q1'], ['assistant', 'a1'], ['user', 'q2'], ['assistant', 'a2 from B']];
    assert.deepEqual(transcript(serverItems(conversationId)), expected, 'the restored items are not pushed again');
    await a.page.evaluate(() => window.synced.sync());
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), expected);
    assert.deepEqual(transcript(await b.page.evaluate(() => window.synced.getItems())), expected);
    await a.context.close();
    await b.context.close();
  });

  test('a session deleted on this device (deleteSession, retention) and synced again is pulled back: the remote and the other devices keep it', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'kept-remote', conversationId });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'q1'), say('assistant', 'a1')]);
    await settled(a.page);
    const before = [['user', 'q1'], ['assistant', 'a1']];
    assert.deepEqual(transcript(serverItems(conversationId)), before);
    // Deleted here, to free space; the app wraps it again on its next load. Its sync state goes
    // with it.
    const stateKeys = () =>
      a.page.evaluate(
        () =>
          new Promise((ok, no) => {
            const q = indexedDB.open('agent-sessions-sync');
            q.onerror = () => no(q.error);
            q.onsuccess = () => {
              const d = q.result;
              const keys = d.transaction('sessions').objectStore('sessions').getAllKeys();
              keys.onsuccess = () => {
                d.close();
                ok(keys.result.filter((k) => k.startsWith(JSON.stringify(['agent-sessions', 'kept-remote']))).length);
              };
            };
          }),
      );
    assert.ok((await stateKeys()) > 0, 'a synced session has its state');
    await a.page.evaluate(async () => {
      window.synced.close();
      await lib.deleteSession('kept-remote');
    });
    assert.equal(await stateKeys(), 0, 'forgotten with the session');
    await openSynced(a.page, { id: 'kept-remote', conversationId });
    await settled(a.page);
    assert.deepEqual(transcript(serverItems(conversationId)), before, 'nothing deleted on the remote');
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), before, 'pulled back here');
    // Deleted, then written again before its first round: both histories kept, nothing doubled.
    await a.page.evaluate(async () => {
      window.synced.close();
      await lib.deleteSession('kept-remote');
      await new lib.IndexedDbSession('kept-remote').addItems([{ role: 'user', content: 'q2' }]);
    });
    await openSynced(a.page, { id: 'kept-remote', conversationId });
    await settled(a.page);
    const there = transcript(serverItems(conversationId));
    assert.deepEqual(there.slice(0, 2), before, 'the remote lost nothing');
    assert.deepEqual(there.filter(([, text]) => text === 'q2').length, 1);
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), there, 'both sides the same');
    // A round stopped in the middle of its push (the remote refused it for now), then the session
    // deleted here and synced again: still nothing deleted there.
    const now = transcript(serverItems(conversationId));
    await server.setFault({ kind: 'status', status: 500, methods: ['POST'] });
    await a.page.evaluate(async () => {
      await window.synced.addItems([{ role: 'user', content: 'q3' }]);
      await window.synced.sync().catch(() => {});
      window.synced.close();
      await lib.deleteSession('kept-remote');
    });
    await server.setFault(null);
    await openSynced(a.page, { id: 'kept-remote', conversationId });
    await settled(a.page);
    assert.deepEqual(transcript(serverItems(conversationId)), now, 'the remote lost nothing');
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), now);
    await a.context.close();
  });

  test('a synced session deleted here and restored from an older backup (its creation time as it was) deletes nothing on the remote: the items after the backup are pulled back', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'restored-old', conversationId });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'q1'), say('assistant', 'a1')]);
    await settled(a.page);
    const backup = await a.page.evaluate(() => new Response(lib.exportSessions({ sessionIds: ['restored-old'] })).text());
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'q2'), say('assistant', 'a2')]);
    await settled(a.page);
    const all = [['user', 'q1'], ['assistant', 'a1'], ['user', 'q2'], ['assistant', 'a2']];
    assert.deepEqual(transcript(serverItems(conversationId)), all);
    await a.page.evaluate(async (text) => {
      window.synced.close();
      await lib.deleteSession('restored-old');
      await lib.importSessions(text);
    }, backup);
    await openSynced(a.page, { id: 'restored-old', conversationId });
    await settled(a.page);
    assert.deepEqual(transcript(serverItems(conversationId)), all, 'nothing deleted on the remote');
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), all, 'the newer items pulled back here');
    await a.context.close();
  });

  test('a backup restored with replace over a synced session sets its sync state aside before it writes: a restore cut short never leaves the restored history beside the old state, a refused one keeps it', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'forget-first', conversationId });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'q1'), say('assistant', 'a1')]);
    await settled(a.page);
    const backup = await a.page.evaluate(() => new Response(lib.exportSessions({ sessionIds: ['forget-first'] })).text());
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'q2'), say('assistant', 'a2')]);
    await settled(a.page);
    const r = await a.page.evaluate(async (text) => {
      window.synced.close();
      const contents = async () => (await new lib.IndexedDbSession('forget-first').getItems()).map((i) => (typeof i.content === 'string' ? i.content : i.content[0].text));
      // The sync state's database held: the restore waits where it forgets the state. Were the
      // tab closed now, what it had written would stay.
      const release = await holdStores('agent-sessions-sync', ['sessions']);
      const restore = lib.importSessions(text, { onConflict: 'replace' });
      await settle();
      const whileForgetting = await contents();
      await release();
      const report = await restore;
      return { whileForgetting, replaced: report.replaced, after: await contents() };
    }, backup);
    assert.deepEqual(r.whileForgetting, ['q1', 'a1', 'q2', 'a2'], 'nothing restored before the old state is forgotten');
    assert.deepEqual(r.replaced, ['forget-first']);
    assert.deepEqual(r.after, ['q1', 'a1']);
    await openSynced(a.page, { id: 'forget-first', conversationId });
    await settled(a.page);
    const all = [['user', 'q1'], ['assistant', 'a1'], ['user', 'q2'], ['assistant', 'a2']];
    assert.deepEqual(transcript(serverItems(conversationId)), all, 'nothing deleted on the remote');
    // A restore refused (a damaged backup: a row missing) puts the state back: the answer popped
    // here before it, not synced yet, is deleted on the remote, not pulled back as new.
    const refused = await a.page.evaluate(async (text) => {
      window.synced.close();
      await new lib.IndexedDbSession('forget-first').popItem();
      const lines = text.trim().split('\n');
      const damaged = lines.filter((l, i) => i !== lines.findIndex((x) => x.startsWith('{"item"'))).join('\n');
      const report = await lib.importSessions(damaged, { onConflict: 'replace' });
      return report.failed.map((e) => e.code);
    }, backup);
    assert.deepEqual(refused, ['IMPORT_INVALID']);
    await openSynced(a.page, { id: 'forget-first', conversationId });
    await settled(a.page);
    const popped = all.slice(0, 3);
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), popped, 'the pop stays');
    assert.deepEqual(transcript(serverItems(conversationId)), popped, 'and reaches the remote');
    await a.context.close();
  });

  test('a backup restored over a synced session while a round of it is under way deletes nothing on the remote: the import waits for the round, and the items after the backup are pulled back; so does one restored with replace over an earlier copy of it (renamed, another owner holding its id)', async () => {
    const a = await device();
    const r = await a.page.evaluate(async (gatedRemote) => {
      const text = (items) => items.map((i) => (typeof i.content === 'string' ? i.content : i.content[0].text));
      // Restores, with 'replace', `backup` over the session `id` a SyncedSession holds, while a
      // round of it waits at the remote.
      const restoreDuringRound = async (name, id, userId, backup) => {
        const { inner, remote, hold, reached, release } = eval(gatedRemote)(`remote-${name}`);
        const synced = new lib.SyncedSession(new lib.IndexedDbSession(id, { userId }), remote, { syncOnOpen: false, retryDelayMs: 60_000 });
        await synced.addItems([{ role: 'user', content: 'q2' }, { role: 'user', content: 'a2' }]);
        await synced.sync();
        const before = text(await inner.getItems());
        hold();
        const round = synced.sync();
        await reached();
        let imported = false;
        const restore = lib.importSessions(backup, { onConflict: 'replace' }).then((report) => ((imported = true), report));
        await new Promise((ok) => setTimeout(ok, 100));
        const importedDuringRound = imported;
        release();
        await round;
        const report = await restore;
        await synced.sync();
        await synced.sync();
        const result = { before, importedDuringRound, replaced: report.replaced, remote: text(await inner.getItems()), local: text(await synced.getItems()) };
        synced.close();
        return result;
      };
      // The session itself, backed up before its newest turn.
      await new lib.IndexedDbSession('restored-mid-round').addItems([{ role: 'user', content: 'q1' }, { role: 'user', content: 'a1' }]);
      const own = await new Response(lib.exportSessions({ sessionIds: ['restored-mid-round'] })).text();
      // A copy: here, bob holds the id, so ann's session came in as `copied-chat-2`.
      await new lib.IndexedDbSession('copied-chat', { dbName: 'copies-from', userId: 'ann' }).addItems([{ role: 'user', content: 'q1' }, { role: 'user', content: 'a1' }]);
      const copied = await new Response(lib.exportSessions({ dbName: 'copies-from' })).text();
      await new lib.IndexedDbSession('copied-chat', { userId: 'bob' }).addItems([{ role: 'user', content: "bob's" }]);
      const first = await lib.importSessions(copied, { onConflict: 'replace' });
      return {
        renamed: first.renamed,
        own: await restoreDuringRound('restored', 'restored-mid-round', undefined, own),
        copy: await restoreDuringRound('copy', 'copied-chat-2', 'ann', copied),
      };
    }, gatedRemote);
    assert.deepEqual(r.renamed, [{ from: 'copied-chat', sessionId: 'copied-chat-2' }]);
    for (const [name, replaced] of [['own', 'restored-mid-round'], ['copy', 'copied-chat-2']]) {
      assert.deepEqual(r[name].before, ['q1', 'a1', 'q2', 'a2'], name);
      assert.deepEqual(r[name].replaced, [replaced], name);
      assert.equal(r[name].importedDuringRound, false, `${name}: the import waited for the round`);
      assert.deepEqual(r[name].remote, ['q1', 'a1', 'q2', 'a2'], `${name}: nothing deleted on the remote`);
      assert.deepEqual(r[name].local, ['q1', 'a1', 'q2', 'a2'], `${name}: the items after the backup pulled back here`);
    }
    await a.context.close();
  });

  test('a synced session deleted here while a round of it is under way, or while its SyncedSession stays open (another tab’s), deletes nothing on the remote and is not pulled back: the delete waits for the round; written again, it is compared afresh', async () => {
    const a = await device();
    const r = await a.page.evaluate(async (gatedRemote) => {
      const { inner, remote, hold, reached, release } = eval(gatedRemote)('remote-of-deleted');
      const text = (items) => items.map((i) => (typeof i.content === 'string' ? i.content : i.content[0].text));
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('deleted-mid-round'), remote, { syncOnOpen: false, retryDelayMs: 60_000 });
      await synced.addItems([{ role: 'user', content: 'q1' }, { role: 'user', content: 'a1' }]);
      await synced.sync();
      hold();
      const round = synced.sync();
      await reached();
      let deleted = false;
      const removal = lib.deleteSession('deleted-mid-round').then((gone) => ((deleted = true), gone));
      await new Promise((ok) => setTimeout(ok, 100));
      const deletedDuringRound = deleted;
      release();
      await round;
      const gone = await removal;
      // The SyncedSession stays open, as in a tab that did not delete the chat: its rounds bring
      // nothing back, and delete nothing remotely.
      await synced.sync();
      await synced.sync();
      const listed = (await lib.listSessions()).some((s) => s.sessionId === 'deleted-mid-round');
      const remoteAfter = text(await inner.getItems());
      // Written again (a chat made anew under that id): compared afresh, the remote's items are
      // pulled back, as by a SyncedSession made for it again.
      await synced.addItems([{ role: 'user', content: 'q2' }]);
      await synced.sync();
      await synced.sync();
      const result = { deletedDuringRound, gone, listed, remoteAfter, remote: text(await inner.getItems()), local: text(await synced.getItems()) };
      synced.close();
      return result;
    }, gatedRemote);
    assert.equal(r.deletedDuringRound, false, 'the delete waited for the round');
    assert.equal(r.gone, true);
    assert.equal(r.listed, false, 'the deleted chat did not come back');
    assert.deepEqual(r.remoteAfter, ['q1', 'a1'], 'nothing deleted on the remote');
    assert.deepEqual(r.remote, ['q1', 'a1', 'q2']);
    assert.deepEqual(r.local, ['q1', 'a1', 'q2']);
    await a.context.close();
  });

  test('a synced chat deleted before its open SyncedSession ran a round (another tab’s, offline or without syncOnOpen) is not pulled back; one made for it after the deletion pulls it', async () => {
    const a = await device();
    const r = await a.page.evaluate(async ({ url }) => {
      const remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      const open = () => new lib.SyncedSession(new lib.IndexedDbSession('deleted-before-round'), remote, { syncOnOpen: false, retryDelayMs: 60_000 });
      const first = open();
      await first.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
      await first.sync();
      first.close();
      // Another tab's, open on the chat, has not run a round yet when the chat is deleted.
      const later = open();
      const shown = (await later.getItems()).length;
      await lib.deleteSession('deleted-before-round');
      await later.sync();
      later.close();
      const listed = (await lib.listSessions()).some((s) => s.sessionId === 'deleted-before-round');
      // Made for it after the deletion (a chat opened from the remote): pulled, as on a new device.
      const fresh = open();
      await fresh.sync();
      const local = await fresh.getItems();
      // The chat it pulled, deleted before its next round: not pulled back either.
      await lib.deleteSession('deleted-before-round');
      await fresh.sync();
      fresh.close();
      const pulledBack = (await lib.listSessions()).some((s) => s.sessionId === 'deleted-before-round');
      return { shown, listed, remote: (await remote.getItems()).length, local: local.length, pulledBack };
    }, { url: server.url });
    assert.equal(r.shown, 2);
    assert.equal(r.listed, false, 'the deleted chat did not come back');
    assert.equal(r.remote, 2, 'nothing deleted or added on the remote');
    assert.equal(r.local, 2, 'a SyncedSession made after the deletion pulls the remote');
    assert.equal(r.pulledBack, false, 'and the chat it pulled, deleted, is not pulled back');
    await a.context.close();
  });

  test('the same local session synced with another remote (a new conversation, or another remote session) loses nothing: its history goes there too', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'moved', conversationId });
    const chat = [say('user', 'q1'), say('assistant', 'a1'), say('user', 'q2')];
    await a.page.evaluate(async (items) => window.synced.addItems(items), chat);
    await settled(a.page);
    await a.page.evaluate(() => window.synced.close());
    // A conversation made anew (its id not kept, or the old one cleared): nothing of the history
    // is on it, which is not a deletion of every item.
    await openSynced(a.page, { id: 'moved' });
    await settled(a.page);
    const second = await a.page.evaluate(() => window.remote.sessionId);
    assert.notEqual(second, conversationId);
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), transcript(chat), 'the local history is kept');
    assert.deepEqual(transcript(serverItems(second)), transcript(chat), 'and pushed to the new conversation');
    await a.page.evaluate(() => window.synced.close());
    // Back to the first conversation, which holds the same items: nothing is sent twice.
    await openSynced(a.page, { id: 'moved', conversationId });
    await a.page.evaluate(() => window.synced.addItems([{ role: 'assistant', content: 'a2' }]));
    await settled(a.page);
    const four = [...transcript(chat), ['assistant', 'a2']];
    assert.deepEqual(transcript(serverItems(conversationId)), four);
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), four);
    assert.deepEqual(transcript(serverItems(second)), transcript(chat), 'the other conversation is left alone');
    // A remote that tells its id only through getSessionId().
    const r = await a.page.evaluate(async () => {
      const remote = (id, items) => ({
        getSessionId: async () => id,
        getItems: async (n) => structuredClone(n === undefined ? items : items.slice(-n)),
        addItems: async (added) => void items.push(...structuredClone(added)),
        popItem: async () => items.pop(),
        clearSession: async () => void items.splice(0),
      });
      const local = new lib.IndexedDbSession('moved-plain');
      const [one, two] = [[], []];
      const first = new lib.SyncedSession(local, remote('r1', one), { syncOnOpen: false });
      await first.addItems([{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }]);
      await first.sync();
      first.close();
      const second = new lib.SyncedSession(local, remote('r2', two), { syncOnOpen: false });
      await second.sync();
      second.close();
      return { one: one.length, two: two.map((i) => i.content), local: (await local.getItems()).map((i) => i.content) };
    });
    assert.deepEqual(r, { one: 2, two: ['hello', 'hi'], local: ['hello', 'hi'] });
    await a.context.close();
  });

  test('reasoning, hosted tool calls, image outputs, computer outputs, MCP approvals and a compaction item marked with its turns come back from the remote as the same items: pushed once, and the rounds settle', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      const remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      const local = new lib.IndexedDbSession('kinds');
      const synced = new lib.SyncedSession(local, remote, { syncOnOpen: false, retryDelayMs: 60000 });
      const items = [
        { role: 'user', content: 'Chart the weather in Oslo' },
        { id: 'rs_1', type: 'reasoning', content: [{ type: 'input_text', text: 'Thinking', providerData: { type: 'summary_text' } }], providerData: { type: 'reasoning', id: 'rs_1', encryptedContent: 'gAAAA' } },
        { type: 'hosted_tool_call', id: 'ws_1', name: 'web_search_call', status: 'completed', providerData: { id: 'ws_1', type: 'web_search_call', action: { type: 'search', query: 'oslo weather' } } },
        { type: 'function_call', callId: 'call_1', name: 'chart', arguments: '{}', status: 'completed' },
        { type: 'function_call_result', callId: 'call_1', name: 'chart', status: 'completed', output: { type: 'image', image: 'https://example.com/chart.png' } },
        { type: 'function_call_result', callId: 'call_2', name: 'nothing', status: 'completed', output: null },
        { type: 'compaction', encryptedContent: 'gAAAD' },
        // (Marked by a 'responses' compaction over a summary: the API keeps no copy of the mark.)
        { type: 'compaction', encrypted_content: 'gAAAE', 'agent-sessions.summary': 5 },
        // Two kinds that come back as `unknown` (the API's item kept whole, as the SDK gives them).
        { type: 'computer_call_result', callId: 'call_cu', output: { type: 'computer_screenshot', data: 'https://example.com/shot.png' } },
        { type: 'hosted_tool_call', name: 'mcp_approval_response', providerData: { type: 'mcp_approval_response', approve: true, approval_request_id: 'mcpr_1' } },
        { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Here it is.' }] },
      ];
      await synced.addItems(items);
      const rounds = [];
      for (let i = 0; i < 3; i++) {
        const error = await synced.sync().then(() => null, (e) => e.message);
        rounds.push({ error, remote: (await remote.getItems()).length, local: (await local.getItems()).length, pending: synced.syncStatus.pending, localOnly: synced.syncStatus.localOnly });
      }
      synced.close();
      return { rounds, order: (await local.getItems()).map((i) => i.type ?? i.role), expected: items.map((i) => i.type ?? i.role) };
    }, { url: server.url });
    for (const round of r.rounds) assert.deepEqual(round, { error: null, remote: 11, local: 11, pending: 0, localOnly: 0 });
    assert.deepEqual(r.order, r.expected, 'the local history keeps its order');
    await context.close();
  });

  test('a tool output whose image by data URL the remote lists without it (none left, or its text only) is known by its call id: pushed once, never pulled back beside itself', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      // As the Conversations API may list them: the image parts by data URL left out.
      const inner = new lib.MemorySession('dropping-remote');
      const dataUrl = (p) => /^data:/.test(p?.image ?? p?.image_url ?? '');
      // (An output of one image is sent as a list of it.)
      const listed = (item) => (Array.isArray(item.output) ? { ...item, output: item.output.filter((p) => !dataUrl(p)) } : dataUrl(item.output) ? { ...item, output: [] } : item);
      const remote = {
        getSessionId: () => inner.getSessionId(),
        getItems: async (...args) => (await inner.getItems(...args)).map(listed),
        addItems: (items) => inner.addItems(items),
        popItem: () => inner.popItem(),
        clearSession: () => inner.clearSession(),
      };
      const local = new lib.IndexedDbSession('data-url-outputs');
      const synced = new lib.SyncedSession(local, remote, { syncOnOpen: false, retryDelayMs: 60000 });
      const image = { type: 'image', image: 'data:image/png;base64,iVBORw0KGgo=' };
      const items = [
        { role: 'user', content: 'Chart it' },
        { type: 'function_call', callId: 'call_a', name: 'shot', arguments: '{}' },
        { type: 'function_call_result', callId: 'call_a', name: 'shot', output: [image] },
        { type: 'function_call', callId: 'call_b', name: 'chart', arguments: '{}' },
        { type: 'function_call_result', callId: 'call_b', name: 'chart', output: [{ type: 'text', text: 'Chart:' }, image] },
        { type: 'function_call', callId: 'call_c', name: 'shot', arguments: '{}' },
        { type: 'function_call_result', callId: 'call_c', name: 'shot', output: image },
        { role: 'assistant', content: 'Here.' },
      ];
      await synced.addItems(items);
      const rounds = [];
      for (let i = 0; i < 3; i++) {
        const error = await synced.sync().then(() => null, (e) => e.message);
        rounds.push({ error, remote: (await inner.getItems()).length, local: (await local.getItems()).length, localOnly: synced.syncStatus.localOnly });
      }
      synced.close();
      return { rounds, outputs: (await local.getItems()).filter((i) => i.type === 'function_call_result').map((i) => (Array.isArray(i.output) ? i.output.length : i.output.type)) };
    });
    for (const round of r.rounds) assert.deepEqual(round, { error: null, remote: 8, local: 8, localOnly: 0 });
    assert.deepEqual(r.outputs, [1, 2, 'image'], 'the outputs as they were written, images kept');
    await context.close();
  });

  test('items the remote cannot hold stay on this device in place, are never sent again, and the others sync around them', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    const think = (text) => ({ type: 'reasoning', content: [{ type: 'input_text', text }] });
    const written = [
      say('user', 'Think about it'),
      think('Thinking'), // no id, no encrypted content: the conversion leaves it out
      say('assistant', 'Thought.'),
      { role: 'user', content: [{ type: 'input_text', text: 'See this' }, { type: 'input_image', image: 'photo.png' }] }, // the API refuses the URL
      say('assistant', 'I cannot open it.'),
      { role: 'user', content: [{ type: 'audio', audio: 'AAAA' }] }, // no Conversations form
      say('assistant', 'No audio here.'),
    ];
    await a.page.evaluate(async (items) => {
      await new lib.IndexedDbSession('local-only').addItems(items);
    }, written);
    const posts = () => server.requests.filter((q) => q.method === 'POST' && q.path.endsWith('/items')).length;
    // The first round pushes the batch, then, refused, its items one by one.
    await openSynced(a.page, { id: 'local-only', conversationId, options: { syncOnOpen: false } });
    assert.ok(posts() > 1, `${posts()} writes`);
    const rounds = [];
    for (let i = 0; i < 3; i++) {
      const before = posts();
      const r = await a.page.evaluate(async () => {
        const error = await window.synced.sync().then(() => null, (e) => `${e.code}: ${e.message}`);
        const { pending, localOnly } = window.synced.syncStatus;
        return { error, pending, localOnly, local: await window.synced.getItems() };
      });
      rounds.push({ ...r, posts: posts() - before });
    }
    const remoteTexts = [['user', 'Think about it'], ['assistant', 'Thought.'], ['assistant', 'I cannot open it.'], ['assistant', 'No audio here.']];
    for (const [i, r] of rounds.entries()) {
      assert.equal(r.error, null, `round ${i + 1}`);
      assert.deepEqual([r.pending, r.localOnly], [0, 3], `round ${i + 1}`);
      assert.deepEqual(r.local, written, `round ${i + 1}: the local history is as written, in its order`);
      assert.deepEqual(transcript(serverItems(conversationId)), remoteTexts);
    }
    assert.deepEqual(rounds.map((r) => r.posts), [0, 0, 0], 'nothing sent again');

    // Another device gets what the remote holds.
    const b = await device();
    await openSynced(b.page, { id: 'local-only', conversationId });
    await settled(b.page);
    assert.deepEqual(transcript(await b.page.evaluate(() => window.synced.getItems())), remoteTexts);

    // A new turn on the first device, with its reasoning: the round goes on from the synced end,
    // reading the remote's newest page only, and the turn's reasoning stays here too.
    const listed = () => server.requests.filter((q) => q.method === 'GET' && q.path.endsWith('/items'));
    const before = listed().length;
    const turn = [say('user', 'Once more'), think('Again'), say('assistant', 'Done.')];
    const after = await a.page.evaluate(async (turn) => {
      // Every read of the local history, by its limit.
      const reads = [];
      const getItems = lib.IndexedDbSession.prototype.getItems;
      lib.IndexedDbSession.prototype.getItems = function (limit) {
        reads.push(limit);
        return getItems.call(this, limit);
      };
      await window.synced.addItems(turn);
      const error = await window.synced.sync().then(() => null, (e) => `${e.code}: ${e.message}`);
      lib.IndexedDbSession.prototype.getItems = getItems;
      return { error, reads, local: await window.synced.getItems(), status: window.synced.syncStatus };
    }, turn);
    assert.equal(after.error, null);
    assert.ok(after.reads.length > 0 && after.reads.every((limit) => limit <= 4), `the local history was read from the synced end only: ${after.reads}`);
    assert.deepEqual(after.local, [...written, ...turn]);
    assert.deepEqual([after.status.pending, after.status.localOnly], [0, 4]);
    assert.deepEqual(transcript(serverItems(conversationId)), [...remoteTexts, ['user', 'Once more'], ['assistant', 'Done.']]);
    assert.ok(listed().slice(before).every((q) => q.query.order === 'desc' && Number(q.query.limit) <= 100), 'only the newest items were listed');

    // The other device pops the newest item: a deletion wins here too, and the items kept here
    // only stay where they were.
    await b.page.evaluate(() => window.synced.sync());
    await b.page.evaluate(() => window.synced.popItem());
    await settled(b.page);
    const popped = await a.page.evaluate(async () => {
      await window.synced.sync();
      return { local: await window.synced.getItems(), status: window.synced.syncStatus };
    });
    assert.deepEqual(popped.local, [...written, ...turn.slice(0, 2)]);
    assert.deepEqual([popped.status.pending, popped.status.localOnly], [0, 4]);
    // A round that leaves the history ending with an item kept here only; the next round still
    // goes on from the newest item the remote holds.
    const ending = [say('user', 'Last question'), think('Hmm')];
    await a.page.evaluate((items) => window.synced.addItems(items).then(() => window.synced.sync()), ending);
    const last = await a.page.evaluate(async () => {
      await window.synced.addItems([{ role: 'assistant', content: 'Last answer' }]);
      const reads = [];
      const getItems = lib.IndexedDbSession.prototype.getItems;
      lib.IndexedDbSession.prototype.getItems = function (limit) {
        reads.push(limit);
        return getItems.call(this, limit);
      };
      await window.synced.sync();
      lib.IndexedDbSession.prototype.getItems = getItems;
      return { reads, local: await window.synced.getItems(), status: window.synced.syncStatus };
    });
    assert.deepEqual(last.local, [...written, ...turn.slice(0, 2), ...ending, { role: 'assistant', content: 'Last answer' }]);
    assert.deepEqual([last.status.pending, last.status.localOnly], [0, 5]);
    assert.ok(last.reads.length > 0 && last.reads.every((limit) => limit <= 4), `read from the synced end only: ${last.reads}`);
    assert.deepEqual(transcript(serverItems(conversationId)).slice(-3), [['user', 'Once more'], ['user', 'Last question'], ['assistant', 'Last answer']]);

    // That history restored on a third device, with no sync state there: the items kept here
    // only, each between two the remote holds, are taken for such items, and nothing is sent.
    const c = await device();
    await c.page.evaluate((items) => new lib.IndexedDbSession('local-only').addItems(items), last.local);
    const sent = posts();
    const remoteBefore = serverItems(conversationId).length;
    const restored = await openSynced(c.page, { id: 'local-only', conversationId });
    assert.deepEqual([restored.lastError, restored.pending, restored.localOnly], [null, 0, 5]);
    assert.equal(posts(), sent, 'nothing pushed');
    assert.equal(serverItems(conversationId).length, remoteBefore);
    assert.deepEqual(await c.page.evaluate(() => window.synced.getItems()), last.local);
    await c.context.close();

    // Cleared on another device: the items kept here only go with the rest.
    await b.page.evaluate(() => window.synced.sync());
    await b.page.evaluate(() => window.synced.clearSession());
    await settled(b.page);
    assert.deepEqual(serverItems(conversationId), []);
    const cleared = await a.page.evaluate(async () => {
      await window.synced.sync();
      return { local: await window.synced.getItems(), status: window.synced.syncStatus };
    });
    assert.deepEqual(cleared.local, []);
    assert.deepEqual([cleared.status.pending, cleared.status.localOnly], [0, 0]);
    await a.context.close();
    await b.context.close();
  });

  test('a first item the remote cannot hold, set aside before anything synced, stays when the next items sync; a clear on another device then takes it', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    const audio = { role: 'user', content: [{ type: 'audio', audio: 'AAAA' }] }; // no Conversations form
    await a.page.evaluate((item) => new lib.IndexedDbSession('first-kept').addItems([item]), audio);
    const first = await openSynced(a.page, { id: 'first-kept', conversationId });
    assert.deepEqual([first.lastError, first.pending, first.localOnly], [null, 0, 1]);
    const answer = say('assistant', 'I cannot hear it.');
    const r = await a.page.evaluate(async (answer) => {
      await window.synced.addItems([answer]);
      await window.synced.sync();
      await window.synced.sync();
      return { local: await window.synced.getItems(), status: window.synced.syncStatus };
    }, answer);
    assert.deepEqual(r.local, [audio, answer], 'the first item is still here, in its place');
    assert.deepEqual([r.status.lastError, r.status.pending, r.status.localOnly], [null, 0, 1]);
    assert.deepEqual(transcript(serverItems(conversationId)), [['assistant', 'I cannot hear it.']]);
    // Cleared on another device: it goes with the item beside it.
    const b = await device();
    await openSynced(b.page, { id: 'first-kept', conversationId });
    await b.page.evaluate(() => window.synced.clearSession());
    await settled(b.page);
    const cleared = await a.page.evaluate(async () => {
      await window.synced.sync();
      return window.synced.getItems();
    });
    assert.deepEqual(cleared, []);
    await a.context.close();
    await b.context.close();
  });

  test('a round whose every write the remote refuses fails and sets nothing aside: the items go once it takes them', async () => {
    const { context, page } = await device();
    const conversationId = await newConversation(page);
    await openSynced(page, { id: 'refused-all', conversationId, options: { syncOnOpen: false, retryDelayMs: 60_000 } });
    // A proxy in front of the remote refuses every write for a while, whatever it holds.
    await server.setFault({ kind: 'status', status: 400, methods: ['POST'], times: 3 });
    const first = await page.evaluate(async (items) => {
      await window.synced.addItems(items);
      const error = await window.synced.sync().then(() => null, (e) => e.status);
      return { error, status: window.synced.syncStatus };
    }, [say('user', 'Hello'), say('assistant', 'Hi')]);
    assert.equal(first.error, 400);
    assert.deepEqual([first.status.pending, first.status.localOnly], [2, 0]);
    assert.deepEqual(serverItems(conversationId), []);
    const second = await page.evaluate(async () => {
      const error = await window.synced.sync().then(() => null, (e) => e.status);
      return { error, status: window.synced.syncStatus };
    });
    assert.equal(second.error, null);
    assert.deepEqual([second.status.pending, second.status.localOnly], [0, 0]);
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'Hello'], ['assistant', 'Hi']]);
    await context.close();
  });

  test('a round whose every write is refused fails also where an item of the turn sends nothing (reasoning without an id): nothing is set aside', async () => {
    const { context, page } = await device();
    const conversationId = await newConversation(page);
    await openSynced(page, { id: 'refused-with-reasoning', conversationId, options: { syncOnOpen: false, retryDelayMs: 60_000 } });
    // The turn's write, then each of its two messages alone, is refused; its reasoning item, which
    // the remote cannot hold, makes no request at all.
    await server.setFault({ kind: 'status', status: 400, methods: ['POST'], times: 3 });
    const first = await page.evaluate(async (items) => {
      await window.synced.addItems(items);
      const error = await window.synced.sync().then(() => null, (e) => e.status);
      return { error, localOnly: window.synced.syncStatus.localOnly };
    }, [say('user', 'Hello'), { type: 'reasoning', content: [] }, say('assistant', 'Hi')]);
    assert.deepEqual(first, { error: 400, localOnly: 0 }, 'refused: the messages are not set aside');
    assert.deepEqual(serverItems(conversationId), []);
    const second = await page.evaluate(() => window.synced.sync().then(() => null, (e) => e.status));
    assert.equal(second, null);
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'Hello'], ['assistant', 'Hi']]);
    await context.close();
  });

  test('a round whose every write the remote refuses still takes the other devices’ items: the refused ones stay the outbox, after them, and go once the remote takes them', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id: 'refused-pulls', conversationId, options: { syncOnOpen: false, retryDelayMs: 60_000 } });
    const b = await device();
    await openSynced(b.page, { id: 'refused-pulls', conversationId, options: { syncOnOpen: false, retryDelayMs: 60_000 } });
    await b.page.evaluate(async (items) => {
      await window.synced.addItems(items);
      await window.synced.sync();
    }, [say('user', 'Q from B'), say('assistant', 'A for B')]);
    const fromB = [['user', 'Q from B'], ['assistant', 'A for B']];
    assert.deepEqual(transcript(serverItems(conversationId)), fromB);

    // The remote refuses A's write (its one item, sent alone).
    await server.setFault({ kind: 'status', status: 400, methods: ['POST'], times: 1 });
    const first = await a.page.evaluate(async (item) => {
      await window.synced.addItems([item]);
      const error = await window.synced.sync().then(() => null, (e) => e.status);
      return { error, local: await window.synced.getItems(), status: window.synced.syncStatus };
    }, say('user', 'Hello from A'));
    assert.equal(first.error, 400, 'the refusal is told');
    assert.deepEqual(transcript(first.local), [...fromB, ['user', 'Hello from A']], 'B’s turn pulled, the refused item after it');
    assert.deepEqual([first.status.pending, first.status.localOnly, first.status.lastError?.status], [1, 0, 400]);
    assert.deepEqual(transcript(serverItems(conversationId)), fromB);

    const second = await a.page.evaluate(async () => {
      const error = await window.synced.sync().then(() => null, (e) => e.status);
      return { error, local: await window.synced.getItems(), status: window.synced.syncStatus };
    });
    assert.equal(second.error, null);
    assert.deepEqual(transcript(second.local), [...fromB, ['user', 'Hello from A']]);
    assert.deepEqual([second.status.pending, second.status.localOnly], [0, 0]);
    assert.deepEqual(transcript(serverItems(conversationId)), [...fromB, ['user', 'Hello from A']], 'sent once');
    const onB = await b.page.evaluate(async () => {
      await window.synced.sync();
      return window.synced.getItems();
    });
    assert.deepEqual(transcript(onB), [...fromB, ['user', 'Hello from A']]);
    await a.context.close();
    await b.context.close();
  });

  test('a round whose every write is refused keeps the outbox in its order where an item the remote has no form for stands between the refused ones; it is set aside once they are pushed', async () => {
    const a = await device();
    const conversationId = await newConversation(a.page);
    await a.page.evaluate((item) => new lib.IndexedDbSession('refused-order').addItems([item]), say('user', 'S1'));
    await openSynced(a.page, { id: 'refused-order', conversationId, options: { syncOnOpen: false, retryDelayMs: 60_000 } });
    const b = await device();
    await openSynced(b.page, { id: 'refused-order', conversationId, options: { syncOnOpen: false, retryDelayMs: 60_000 } });
    await b.page.evaluate(async (item) => {
      await window.synced.addItems([item]);
      await window.synced.sync();
    }, say('user', 'X from B'));
    const audio = { role: 'user', content: [{ type: 'audio', audio: 'AAAA' }] }; // no Conversations form
    const outbox = [say('user', 'A'), audio, say('assistant', 'B')];
    // The two messages, each sent alone, are refused.
    await server.setFault({ kind: 'status', status: 400, methods: ['POST'], times: 2 });
    const first = await a.page.evaluate(async (items) => {
      await window.synced.addItems(items);
      const error = await window.synced.sync().then(() => null, (e) => e.status);
      return { error, local: await window.synced.getItems() };
    }, outbox);
    assert.equal(first.error, 400);
    const order = [['user', 'S1'], ['user', 'X from B'], ['user', 'A'], ['user', ''], ['assistant', 'B']];
    assert.deepEqual(transcript(first.local), order, 'in the order written, after the pulled item');
    assert.deepEqual(first.local.slice(2), outbox);
    const second = await a.page.evaluate(async () => {
      await window.synced.sync();
      return { local: await window.synced.getItems(), status: window.synced.syncStatus };
    });
    assert.deepEqual(transcript(second.local), order);
    assert.deepEqual(second.local.slice(2), outbox);
    assert.deepEqual([second.status.lastError, second.status.pending, second.status.localOnly], [null, 0, 1]);
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'S1'], ['user', 'X from B'], ['user', 'A'], ['assistant', 'B']]);
    await a.context.close();
    await b.context.close();
  });

  test('a round whose every write is refused, over a remote that keeps a reasoning item it took alone: that item is not kept twice here, and the rest goes once the remote takes it', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async () => {
      const inner = new lib.MemorySession('keeps-reasoning-remote');
      let refusing = true;
      // Refuses every write holding a message, as a proxy in front of it might for a while.
      const remote = {
        getSessionId: () => inner.getSessionId(),
        getItems: (...args) => inner.getItems(...args),
        addItems: async (items) => {
          if (refusing && items.some((i) => i.type !== 'reasoning')) throw Object.assign(new Error('refused'), { status: 400 });
          return inner.addItems(items);
        },
        popItem: () => inner.popItem(),
        clearSession: () => inner.clearSession(),
      };
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('keeps-reasoning'), remote, { syncOnOpen: false, retryDelayMs: 60_000 });
      const items = [{ type: 'reasoning', content: [] }, { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hi' }] }];
      await synced.addItems(items);
      const error = await synced.sync().then(() => null, (e) => e.status);
      const first = { error, local: await synced.getItems(), remote: await inner.getItems() };
      refusing = false;
      await synced.sync();
      const second = { local: await synced.getItems(), remote: await inner.getItems(), pending: synced.syncStatus.pending };
      synced.close();
      return { items, first, second };
    });
    assert.equal(r.first.error, 400);
    assert.deepEqual(r.first.local, r.items, 'nothing twice');
    assert.deepEqual(r.first.remote, r.items.slice(0, 1), 'the reasoning item, taken alone');
    assert.deepEqual(r.second.local, r.items);
    assert.deepEqual(r.second.remote, r.items);
    assert.equal(r.second.pending, 0);
    await context.close();
  });

  /** Two devices of session `id`: B pops the first answer offline while A syncs ten turns, then
   * B's round deletes it on the remote (from before the remote's newest page) and pulls A's
   * turns. A's SyncedSession has made rounds from the newest page since its first. */
  async function deletedBehindAPage(id) {
    const a = await device();
    const conversationId = await newConversation(a.page);
    const first = [say('user', 'Q1'), say('assistant', 'A1')];
    await a.page.evaluate(({ id, items }) => new lib.IndexedDbSession(id).addItems(items), { id, items: first });
    await openSynced(a.page, { id, conversationId, options: { syncOnOpen: false } });
    const b = await device();
    await openSynced(b.page, { id, conversationId, options: { syncOnOpen: false } });
    // B, offline, pops the answer (its SyncedSession does not hear of it until its next round).
    await b.page.evaluate((id) => new lib.IndexedDbSession(id).popItem(), id);
    const turns = Array.from({ length: 10 }, (_, i) => [say('user', `q${i}`), say('assistant', `a${i}`)]).flat();
    await a.page.evaluate(async (items) => {
      for (let i = 0; i < items.length; i += 2) {
        await window.synced.addItems(items.slice(i, i + 2));
        await window.synced.sync();
      }
    }, turns);
    const onB = await b.page.evaluate(async () => {
      await window.synced.sync();
      return window.synced.getItems();
    });
    const expected = transcript([first[0], ...turns]);
    assert.deepEqual(transcript(onB), expected);
    assert.deepEqual(transcript(serverItems(conversationId)), expected);
    const syncA = async (online = false) =>
      transcript(
        await a.page.evaluate(async (online) => {
          if (online) window.dispatchEvent(new Event('online'));
          await window.synced.sync();
          return window.synced.getItems();
        }, online),
      );
    // A's next round reads the remote's newest page only: the deletion is before it.
    assert.equal((await syncA()).length, 22, 'not seen from the newest page');
    return { a, b, expected, syncA };
  }

  test('a deletion that a device behind by a page makes on the remote reaches a device syncing from its newest page ten minutes after its last whole comparison', async () => {
    const { a, b, expected, syncA } = await deletedBehindAPage('behind-clock');
    await a.page.evaluate(() => {
      const now = Date.now;
      Date.now = () => now() + 11 * 60_000;
    });
    assert.deepEqual(await syncA(), expected);
    await a.context.close();
    await b.context.close();
  });

  test('a deletion that a device behind by a page makes on the remote reaches a device syncing from its newest page once it is back online', async () => {
    const { a, b, expected, syncA } = await deletedBehindAPage('behind-online');
    assert.deepEqual(await syncA(true), expected);
    await a.context.close();
    await b.context.close();
  });

  /** A session of `id` on a new device whose next write to the remote is slow, closed 200 ms
   * into a round that pushes `items` (after `before(page)`): the round's outcome, and when the
   * session was last synced before and after it. */
  async function closedDuringPush(id, items, before = async () => {}) {
    const { context, page } = await device();
    const conversationId = await newConversation(page);
    await openSynced(page, { id, conversationId, options: { syncOnOpen: false, retryDelayMs: 60_000 } });
    await before(page);
    await server.setFault({ kind: 'slow', ms: 600, methods: ['POST'], times: 1 });
    const r = await page.evaluate(async (items) => {
      await window.synced.addItems(items);
      const before = window.synced.syncStatus.lastSyncedAt;
      const round = window.synced.sync().then(() => null, (e) => `${e.name} ${e.code}`);
      await new Promise((ok) => setTimeout(ok, 200));
      window.synced.close();
      return { round: await round, before, after: window.synced.syncStatus.lastSyncedAt };
    }, items);
    return { ...r, context, page, conversationId };
  }

  test('close() during a round: it stops before its next remote write', async () => {
    // The first of three writes is slow: the page closes the session while it is on its way.
    const r = await closedDuringPush('closed-midway', Array.from({ length: 45 }, (_, i) => say('user', `m${i}`)));
    assert.equal(r.round, 'SessionError CLOSED');
    await new Promise((ok) => setTimeout(ok, 300));
    assert.equal(serverItems(r.conversationId).length, 20, 'the write under way took effect, no other');
    await r.context.close();
  });

  test('close() during a round’s last remote write, with nothing left to write here: the round completes and resolves', async () => {
    const r = await closedDuringPush('closed-done', [say('user', 'one'), say('assistant', 'two')]);
    assert.equal(r.round, null);
    const again = await openSynced(r.page, { id: 'closed-done', conversationId: r.conversationId, options: { syncOnOpen: false } });
    assert.deepEqual([again.lastError, again.pending], [null, 0]);
    assert.equal(serverItems(r.conversationId).length, 2, 'nothing pushed twice');
    await r.context.close();
  });

  test('close() during a round’s last remote write, with the remote’s items still to write here: sync() rejects with CLOSED, and a new SyncedSession finishes the round', async () => {
    // Another device's item, on the remote only.
    const r = await closedDuringPush('closed-last', [say('user', 'one'), say('assistant', 'two')], (page) =>
      page.evaluate((item) => window.remote.addItems([item]), say('assistant', 'from elsewhere')),
    );
    assert.equal(r.round, 'SessionError CLOSED');
    assert.equal(r.after, r.before, 'the round is not reported as done');
    assert.equal(serverItems(r.conversationId).length, 3);
    const again = await openSynced(r.page, { id: 'closed-last', conversationId: r.conversationId });
    assert.deepEqual([again.lastError, again.pending], [null, 0]);
    assert.equal(serverItems(r.conversationId).length, 3, 'nothing pushed twice');
    assert.deepEqual(transcript(await r.page.evaluate(() => window.synced.getItems())), [['assistant', 'from elsewhere'], ['user', 'one'], ['assistant', 'two']]);
    await r.context.close();
  });

  test('a round that pushes more than a page of items (120 written offline) settles in one round', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      const remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('many'), remote, { syncOnOpen: false, retryDelayMs: 60000 });
      await synced.addItems([{ role: 'user', content: 'start' }]);
      await synced.sync();
      await synced.addItems(Array.from({ length: 120 }, (_, i) => ({ role: 'user', content: `m${i}` })));
      const error = await synced.sync().then(() => null, (e) => `${e.code}: ${e.message}`);
      const out = { error, pending: synced.syncStatus.pending, remote: (await remote.getItems()).length };
      synced.close();
      return out;
    }, { url: server.url });
    assert.deepEqual(r, { error: null, pending: 0, remote: 121 });
    await context.close();
  });

  test('a message written while a round pulls a conversation into an empty history is kept, and no item of the conversation is deleted', async () => {
    const { context, page } = await device();
    try {
      const conversationId = await page.evaluate(async ({ url }) => {
        const remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
        await remote.addItems([{ role: 'user', content: 'r1' }, { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'r2' }] }]);
        return remote.getSessionId();
      }, { url: server.url });
      const before = serverItems(conversationId).map((i) => i.id);
      const r = await page.evaluate(
        async ({ url, conversationId }) => {
          const remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId });
          const id = `pulled-into-empty-${Math.random()}`;
          const inner = new lib.IndexedDbSession(id);
          // The user's first message lands (from another object: a run, another tab) just as
          // the round writes the pulled items here, after it checked the history was empty.
          let typed = false;
          const local = new Proxy(inner, {
            get(target, key) {
              const value = target[key];
              if (typeof value !== 'function') return value;
              if (key !== 'applyHistoryTransaction' && key !== 'replaceHistory') return value.bind(target);
              return async (...args) => {
                if (!typed) {
                  typed = true;
                  await new lib.IndexedDbSession(id).addItems([{ role: 'user', content: 'typed meanwhile' }]);
                }
                return value.apply(target, args);
              };
            },
          });
          const synced = new lib.SyncedSession(local, new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId }), { retryDelayMs: 100, maxRetryDelayMs: 400, syncOnOpen: false });
          for (let round = 0; round < 10; round++) {
            await synced.sync().catch(() => {});
            const s = synced.syncStatus;
            if (typed && s.pending === 0 && s.lastError === null && !s.syncing) break;
            await new Promise((ok) => setTimeout(ok, 150));
          }
          const text = (i) => (typeof i.content === 'string' ? i.content : i.content.map((p) => p.text).join(''));
          const out = { typed, local: (await inner.getItems()).map(text), remote: (await remote.getItems()).map(text) };
          await synced.close();
          // Without a write in between, the pulled items are the history's first: they title it,
          // as an add of them would.
          const fresh = new lib.IndexedDbSession(`${id}-quiet`);
          const quiet = new lib.SyncedSession(fresh, new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId }), { syncOnOpen: false });
          await quiet.sync();
          out.quiet = { items: (await fresh.getItems()).length, title: (await fresh.getInfo()).title };
          await quiet.close();
          return out;
        },
        { url: server.url, conversationId },
      );
      assert.equal(r.typed, true);
      assert.deepEqual(serverItems(conversationId).slice(0, 2).map((i) => i.id), before, 'the conversation’s items are not deleted (and pushed again)');
      assert.deepEqual(r.remote, ['r1', 'r2', 'typed meanwhile'], 'the message pushed after them');
      assert.deepEqual(r.local, r.remote);
      assert.deepEqual(r.quiet, { items: 3, title: 'r1' });
    } finally {
      await context.close();
    }
  });

  test('a round with nothing to write here goes on while a run holds the session', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      const remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      const local = new lib.IndexedDbSession('held');
      const synced = new lib.SyncedSession(local, remote, { syncOnOpen: false, retryDelayMs: 60000 });
      await synced.addItems([{ role: 'user', content: 'q1' }]);
      await synced.sync();
      const out = {};
      await navigator.locks.request(lib.sessionLockName(local.dbName, local.sessionId), async () => {
        // The run saves its question, then a round pushes it: nothing comes back to write here.
        await local.addItems([{ role: 'user', content: 'q2' }]);
        out.round = await synced.sync().then(() => 'synced', (e) => e.code);
        out.pending = synced.syncStatus.pending;
      });
      out.remote = (await remote.getItems()).map((i) => i.content[0].text);
      synced.close();
      return out;
    }, { url: server.url });
    assert.deepEqual(r, { round: 'synced', pending: 0, remote: ['q1', 'q2'] });
    await context.close();
  });

  test('rounds kept waiting by a run back off, and the one after the run writes what came', async () => {
    const { context, page } = await device();
    const r = await page.evaluate(async ({ url }) => {
      const remote = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k' });
      const local = new lib.IndexedDbSession('busy-backoff');
      const synced = new lib.SyncedSession(local, remote, { syncOnOpen: false, retryDelayMs: 50, maxRetryDelayMs: 10000 });
      await synced.addItems([{ role: 'user', content: 'q1' }]);
      await synced.sync();
      // Another device answers: the next round has something to write here.
      const other = new lib.OpenAIConversationsSession({ baseUrl: url, apiKey: 'k', conversationId: await remote.getSessionId() });
      await other.addItems([{ role: 'assistant', content: 'from elsewhere' }]);
      // The delays of the rounds the session schedules (the page's other timers are shorter).
      const delays = [];
      const setTimer = window.setTimeout;
      const sleep = (ms) => new Promise((ok) => setTimer(ok, ms));
      window.setTimeout = (f, ms, ...args) => {
        if (ms >= 50) delays.push(ms);
        return setTimer(f, ms, ...args);
      };
      // A run holds the session meanwhile.
      let release;
      await new Promise((granted) => navigator.locks.request(lib.sessionLockName(local.dbName, local.sessionId), () => (granted(), new Promise((ok) => (release = ok)))));
      const first = await synced.sync().then(() => 'synced', (e) => e.code);
      while (delays.length < 4) await sleep(20);
      release();
      while ((await local.getItems()).length < 2) await sleep(20);
      window.setTimeout = setTimer;
      synced.close();
      return { first, delays: delays.slice(0, 4), items: (await local.getItems()).map((i) => (typeof i.content === 'string' ? i.content : i.content[0].text)) };
    }, { url: server.url });
    assert.equal(r.first, 'SESSION_BUSY');
    assert.deepEqual(r.delays, [50, 100, 200, 400], 'each busy round waits twice as long as the one before');
    assert.deepEqual(r.items, ['q1', 'from elsewhere']);
    await context.close();
  });

  test('a sync state a newer version of the library wrote (a later format) is left as it is: the round fails with DB_VERSION (reload), nothing synced or changed, and no timer asks again', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const id = JSON.stringify(['agent-sessions', 'newer-state']);
      const remote = new lib.MemorySession('newer-remote');
      const first = new lib.SyncedSession(new lib.IndexedDbSession('newer-state'), remote, { syncOnOpen: false });
      await first.addItems([{ role: 'user', content: 'q1' }]);
      await first.sync();
      first.close();
      // A newer deploy in another tab wrote its own format of the state, with what it records.
      const newer = { id, format: 99, somethingNew: ['tombstones of its own'] };
      const store = async (fn) => {
        const d = await new Promise((ok, no) => {
          const q = indexedDB.open('agent-sessions-sync', 1);
          q.onsuccess = () => ok(q.result);
          q.onerror = () => no(q.error);
        });
        const tx = d.transaction('sessions', 'readwrite');
        const got = await fn(tx.objectStore('sessions'));
        await new Promise((ok, no) => ((tx.oncomplete = ok), (tx.onerror = () => no(tx.error))));
        d.close();
        return got;
      };
      await store((s) => s.put(newer));
      await remote.addItems([{ role: 'user', content: 'from elsewhere' }]);
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('newer-state'), remote, { syncOnOpen: false, retryDelayMs: 10 });
      const error = await synced.sync().then(() => null, (e) => e.code);
      // Each round tells that it began (syncing: true).
      let rounds = 0;
      synced.addEventListener('syncstatus', (e) => e.detail.syncing && rounds++);
      const timer = await new Promise((done) => setTimeout(() => done([synced.syncStatus.lastError?.code, rounds]), 200));
      synced.close();
      const kept = await store((s) => new Promise((ok) => (s.get(id).onsuccess = (e) => ok(e.target.result))));
      return { error, timer, kept, local: (await new lib.IndexedDbSession('newer-state').getItems()).map((i) => i.content), remote: (await remote.getItems()).map((i) => i.content) };
    });
    assert.equal(r.error, 'DB_VERSION');
    assert.deepEqual(r.timer, ['DB_VERSION', 0], 'no round after it');
    assert.deepEqual(r.kept, { id: JSON.stringify(['agent-sessions', 'newer-state']), format: 99, somethingNew: ['tombstones of its own'] }, 'the newer state is left as it was');
    assert.deepEqual(r.local, ['q1'], 'nothing pulled');
    assert.deepEqual(r.remote, ['q1', 'from elsewhere']);
    await a.context.close();
  });

  test('a damaged sync state is replaced by the next round: nothing is sent twice, deleted or lost, and later rounds are incremental again', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const db = () =>
        new Promise((ok, no) => {
          const q = indexedDB.open('agent-sessions-sync', 1);
          q.onsuccess = () => ok(q.result);
          q.onerror = () => no(q.error);
        });
      const change = async (fn) => {
        const d = await db();
        const tx = d.transaction('sessions', 'readwrite');
        await fn(tx.objectStore('sessions'));
        await new Promise((ok, no) => ((tx.oncomplete = ok), (tx.onerror = () => no(tx.error))));
        d.close();
      };
      const keys = async () => {
        const d = await db();
        const q = d.transaction('sessions').objectStore('sessions').getAllKeys();
        const all = await new Promise((ok) => (q.onsuccess = () => ok(q.result)));
        d.close();
        return all.filter((k) => k.startsWith(JSON.stringify(['agent-sessions', 'damaged'])));
      };
      const id = JSON.stringify(['agent-sessions', 'damaged']);
      const remote = new lib.MemorySession('damaged-remote');
      const items = [];
      for (let i = 0; i < 700; i++) items.push({ id: `msg_${i}`, role: i % 2 ? 'assistant' : 'user', content: `m${i}` });
      const first = new lib.SyncedSession(new lib.IndexedDbSession('damaged'), remote, { syncOnOpen: false });
      await first.addItems(items);
      await first.sync();
      first.close();
      const out = { before: await keys() };
      const damages = {
        'a record of entries missing': (s) => s.delete(`${id}#0`),
        'a head that counts wrong': async (s) => {
          const head = await new Promise((ok) => (s.get(id).onsuccess = (e) => ok(e.target.result)));
          s.put({ ...head, count: 'many' });
        },
        'a head of no known format': (s) => s.put({ id, hello: true }),
      };
      for (const [name, damage] of Object.entries(damages)) {
        await change(damage);
        const s = new lib.SyncedSession(new lib.IndexedDbSession('damaged'), remote, { syncOnOpen: false });
        const status = await s.sync().catch((e) => ({ error: e.message }));
        await s.addItems([{ role: 'user', content: `after ${name}` }]);
        await s.sync();
        out[name] = {
          status: status.error ?? status.lastError,
          remote: (await remote.getItems()).length,
          local: (await s.getItems()).length,
          last: (await remote.getItems(1))[0].content,
          keys: await keys(),
          pending: s.syncStatus.pending,
          head: await new Promise(async (ok) => {
            const d = await db();
            d.transaction('sessions').objectStore('sessions').get(id).onsuccess = (e) => (d.close(), ok({ format: e.target.result.format, count: e.target.result.count, marked: !!e.target.result.mark }));
          }),
        };
        s.close();
      }
      return out;
    });
    assert.deepEqual(r.before.length, 3, 'a head and two records of entries');
    let n = 0;
    for (const name of ['a record of entries missing', 'a head that counts wrong', 'a head of no known format']) {
      n += 1;
      assert.deepEqual(r[name], { status: null, remote: 700 + n, local: 700 + n, last: `after ${name}`, keys: r.before, pending: 0, head: { format: 2, count: 700 + n, marked: true } }, name);
    }
    await a.context.close();
  });

  test('a sync state written by the previous version (whole texts as fingerprints, one record) is read as it was: nothing is pushed, pulled or deleted again', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const say = (role, text) => ({ role, content: text });
      // The previous version's fingerprint of a message, and its keys.
      const oldFp = (item) => JSON.stringify(['m', item.role, item.content]);
      const putState = (record) =>
        new Promise((ok, no) => {
          const q = indexedDB.open('agent-sessions-sync', 1);
          q.onupgradeneeded = () => q.result.createObjectStore('sessions', { keyPath: 'id' });
          q.onsuccess = () => {
            const tx = q.result.transaction('sessions', 'readwrite');
            tx.objectStore('sessions').put(record);
            tx.oncomplete = () => (q.result.close(), ok());
            tx.onerror = () => no(tx.error);
          };
          q.onerror = () => no(q.error);
        });
      const out = {};
      for (const ids of [false, true]) {
        const name = ids ? 'legacy-ids' : 'legacy-no-ids';
        const items = [say('user', 'ok'), say('assistant', 'fine'), say('user', 'ok')];
        const remote = new lib.MemorySession(`${name}-remote`);
        await remote.addItems(ids ? items.map((item, i) => ({ ...item, id: `item_${i}` })) : items);
        const local = new lib.IndexedDbSession(name);
        await local.addItems(items);
        const seen = new Map();
        const synced = items.map((item, i) => {
          const fp = oldFp(item);
          const n = seen.get(fp) ?? 0;
          seen.set(fp, n + 1);
          return { key: ids ? `id:item_${i}` : `fp:${fp}#${n}`, fp };
        });
        await putState({ id: JSON.stringify(['agent-sessions', name]), synced, inFlight: null, tombstones: [] });
        const s = new lib.SyncedSession(local, remote, { syncOnOpen: false });
        await s.sync();
        const after = { remote: (await remote.getItems()).length, local: (await s.getItems()).length, pending: s.syncStatus.pending };
        await s.addItems([say('assistant', 'and more')]);
        await s.sync();
        await s.sync();
        out[name] = { after, then: { remote: (await remote.getItems()).map((i) => i.content), local: (await s.getItems()).map((i) => i.content), pending: s.syncStatus.pending } };
        s.close();
      }
      return out;
    });
    for (const name of ['legacy-no-ids', 'legacy-ids']) {
      assert.deepEqual(r[name].after, { remote: 3, local: 3, pending: 0 }, name);
      assert.deepEqual(r[name].then, { remote: ['ok', 'fine', 'ok', 'and more'], local: ['ok', 'fine', 'ok', 'and more'], pending: 0 }, name);
    }
    await a.context.close();
  });

  test('a long history is kept in the sync state a record per 500 items: a turn rewrites the last, and a shorter history drops the rest', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const records = () =>
        new Promise((ok, no) => {
          const q = indexedDB.open('agent-sessions-sync', 1);
          q.onsuccess = () => {
            const all = q.result.transaction('sessions').objectStore('sessions').getAll();
            all.onsuccess = () => (q.result.close(), ok(all.result.filter((x) => x.id.startsWith(JSON.stringify(['agent-sessions', 'chunked'])))));
            all.onerror = () => no(all.error);
          };
        });
      const remote = new lib.MemorySession('chunked-remote');
      const local = new lib.IndexedDbSession('chunked');
      const batch = [];
      for (let i = 0; i < 1100; i++) batch.push({ id: `msg_${i}`, role: i % 2 ? 'assistant' : 'user', content: `m${i}` });
      await local.addItems(batch);
      const s = new lib.SyncedSession(local, remote, { syncOnOpen: false });
      await s.sync();
      const first = (await records()).map((x) => [x.id.slice(-2), x.entries?.length ?? x.count]);
      await s.addItems([{ id: 'msg_x', role: 'user', content: 'one more' }]);
      await s.sync();
      const second = (await records()).map((x) => [x.id.slice(-2), x.entries?.length ?? x.count]);
      // Another device's rewrite of the remote: the whole comparison, and a history of 600.
      await remote.replaceHistory((await remote.getItems()).slice(0, 600));
      await s.sync();
      const third = (await records()).map((x) => [x.id.slice(-2), x.entries?.length ?? x.count]);
      const same = JSON.stringify((await s.getItems()).map((i) => i.content)) === JSON.stringify((await remote.getItems()).map((i) => i.content));
      s.close();
      return { first, second, third, same, pending: s.syncStatus.pending };
    });
    const sorted = (list) => [...list].sort((x, y) => (x[0] < y[0] ? -1 : 1));
    assert.deepEqual(sorted(r.first), sorted([['"]', 1100], ['#0', 500], ['#1', 500], ['#2', 100]]));
    assert.deepEqual(sorted(r.second), sorted([['"]', 1101], ['#0', 500], ['#1', 500], ['#2', 101]]));
    assert.deepEqual(sorted(r.third), sorted([['"]', 600], ['#0', 500], ['#1', 100]]));
    assert.ok(r.same, 'both histories are the same');
    assert.equal(r.pending, 0);
    await a.context.close();
  });

  /** Two devices on a new conversation: A has written "from A" and B the items `fromB` after it,
   * all synced; A has not pulled B's items yet. */
  async function pullPending(id, fromB) {
    const a = await device();
    const b = await device();
    const conversationId = await newConversation(a.page);
    await openSynced(a.page, { id, conversationId });
    await a.page.evaluate(async (items) => window.synced.addItems(items), [say('user', 'from A')]);
    await settled(a.page);
    await openSynced(b.page, { id, conversationId });
    await b.page.evaluate(async (items) => window.synced.addItems(items), fromB);
    await settled(b.page);
    return { a, b, conversationId };
  }

  test('a round stopped between pulling into the local history and recording it: the next round does not push the pulled items back', async () => {
    const { a, b, conversationId } = await pullPending('stopped', [say('user', 'from B'), say('assistant', 'to B')]);
    // On A, the round's local write takes effect, and then the page stops before anything else.
    await a.page.evaluate(() => {
      const apply = lib.IndexedDbSession.prototype.applyHistoryTransaction;
      lib.IndexedDbSession.prototype.applyHistoryTransaction = async function (args) {
        const result = await apply.call(this, args);
        if (String(args?.operationId).startsWith('sync:')) {
          window.pulledLocally = true;
          return new Promise(() => {});
        }
        return result;
      };
      window.synced.sync();
    });
    await a.page.waitForFunction(() => window.pulledLocally === true);
    await a.page.reload();
    await a.page.waitForFunction(() => window.ready === true);
    assert.deepEqual(transcript(await a.page.evaluate(() => new lib.IndexedDbSession('stopped').getItems())), [['user', 'from A'], ['user', 'from B'], ['assistant', 'to B']], 'the pull was written locally');
    await openSynced(a.page, { id: 'stopped', conversationId });
    await settled(a.page);
    await a.page.evaluate(() => window.synced.sync());
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'from A'], ['user', 'from B'], ['assistant', 'to B']], 'nothing sent twice');
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), [['user', 'from A'], ['user', 'from B'], ['assistant', 'to B']]);
    await a.context.close();
    await b.context.close();
  });

  test('a round whose local write was refused (another tab wrote first) does not take a message written here meanwhile for the one it was pulling, however alike: both are kept', async () => {
    const { a, b, conversationId } = await pullPending('alike', [say('user', 'ok')]);
    const r = await a.page.evaluate(async () => {
      const apply = lib.IndexedDbSession.prototype.applyHistoryTransaction;
      let raced = false;
      lib.IndexedDbSession.prototype.applyHistoryTransaction = async function (args) {
        // Another tab's plain write of the same words, just before the round's own.
        if (!raced && String(args?.operationId).startsWith('sync:')) {
          raced = true;
          await new lib.IndexedDbSession('alike').addItems([{ role: 'user', content: 'ok' }]);
        }
        return apply.call(this, args);
      };
      const first = await window.synced.sync().then(() => 'resolved', (e) => `${e.name} ${e.code}`);
      await window.synced.sync();
      await window.synced.sync();
      return { first, local: await window.synced.getItems() };
    });
    assert.equal(r.first, 'SyncError SESSION_BUSY');
    const there = transcript(serverItems(conversationId));
    assert.deepEqual(there.filter(([, text]) => text === 'ok').length, 2, 'the message written here reached the remote too');
    assert.deepEqual(transcript(r.local), there);
    await a.context.close();
    await b.context.close();
  });

  test('a round stopped before its pull reached the local history: the next round pulls the items, and deletes none of them', async () => {
    const { a, b, conversationId } = await pullPending('before-pull', [say('user', 'from B')]);
    await a.page.evaluate(() => {
      lib.IndexedDbSession.prototype.applyHistoryTransaction = function (args) {
        window.aboutToPull = true;
        return new Promise(() => {});
      };
      window.synced.sync();
    });
    await a.page.waitForFunction(() => window.aboutToPull === true);
    await a.page.reload();
    await a.page.waitForFunction(() => window.ready === true);
    await openSynced(a.page, { id: 'before-pull', conversationId });
    await settled(a.page);
    assert.deepEqual(transcript(serverItems(conversationId)), [['user', 'from A'], ['user', 'from B']], "B's item stays on the remote");
    assert.deepEqual(transcript(await a.page.evaluate(() => window.synced.getItems())), [['user', 'from A'], ['user', 'from B']], 'and is pulled here');
    await a.context.close();
    await b.context.close();
  });

  test('the sync state database stays open between rounds, yet never blocks its deletion, and opens again', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const first = new lib.SyncedSession(new lib.IndexedDbSession('kept-open'), new lib.MemorySession('kept-open-remote'), { syncOnOpen: false });
      await first.addItems([{ role: 'user', content: 'hello' }]);
      await first.sync();
      first.close();
      const deleted = await new Promise((ok) => {
        const q = indexedDB.deleteDatabase('agent-sessions-sync');
        q.onsuccess = () => ok('deleted');
        q.onblocked = () => ok('blocked');
        q.onerror = () => ok('failed');
      });
      const remote = new lib.MemorySession('reopened-remote');
      const second = new lib.SyncedSession(new lib.IndexedDbSession('reopened'), remote, { syncOnOpen: false });
      await second.addItems([{ role: 'user', content: 'again' }]);
      const status = await second.sync();
      second.close();
      return { deleted, remote: (await remote.getItems()).map((i) => i.content), pending: status.pending };
    });
    assert.deepEqual(r, { deleted: 'deleted', remote: ['again'], pending: 0 });
    await a.context.close();
  });

  test('a sync state database that other code opened first, without a version (so without its store), is given its store: syncing works, and goes on after a reload', async () => {
    const a = await device();
    const run = () =>
      a.page.evaluate(async () => {
        const remote = new lib.IndexedDbSession('empty-db-remote');
        const synced = new lib.SyncedSession(new lib.IndexedDbSession('empty-db'), remote, { syncOnOpen: false });
        const status = await synced.sync().then(() => synced.syncStatus, (e) => ({ error: `${e.name} ${e.code}` }));
        synced.close();
        return { status: status.error ?? status.lastError ?? 'synced', pushed: (await remote.getItems()).length };
      });
    await a.page.evaluate(async () => {
      // As DevTools or a page's own code would: a database of no store, at version 1.
      await new Promise((ok, no) => {
        const q = indexedDB.open('agent-sessions-sync');
        q.onsuccess = () => (q.result.close(), ok());
        q.onerror = () => no(q.error);
      });
      await new lib.IndexedDbSession('empty-db').addItems([{ role: 'user', content: 'hello' }]);
    });
    assert.deepEqual(await run(), { status: 'synced', pushed: 1 });
    await a.page.reload();
    await a.page.waitForFunction(() => window.ready === true);
    assert.deepEqual(await run(), { status: 'synced', pushed: 1 }, 'the store is there at the version it was given');
    await a.context.close();
  });

  test("a local session that reads a window by default (settings.limit) still syncs its whole history", async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const remote = new lib.MemorySession('windowed-remote');
      const local = new lib.IndexedDbSession('windowed', { settings: { limit: 2 } });
      const synced = new lib.SyncedSession(local, remote, { syncOnOpen: false });
      await synced.addItems(['q1', 'a1', 'q2', 'a2', 'q3'].map((text, i) => ({ role: i % 2 ? 'assistant' : 'user', content: text })));
      await synced.sync();
      const pushed = (await remote.getItems()).map((i) => i.content);
      await synced.popItem();
      await synced.sync();
      const again = new lib.SyncedSession(new lib.IndexedDbSession('windowed', { settings: { limit: 2 } }), remote, { syncOnOpen: false });
      await again.sync();
      const out = { pushed, afterPop: (await remote.getItems()).map((i) => i.content), read: (await synced.getItems()).map((i) => i.content), pending: again.syncStatus.pending };
      synced.close();
      again.close();
      return out;
    });
    assert.deepEqual(r.pushed, ['q1', 'a1', 'q2', 'a2', 'q3'], 'every item reached the remote');
    assert.deepEqual(r.afterPop, ['q1', 'a1', 'q2', 'a2'], 'and a whole comparison deleted none but the popped one');
    assert.deepEqual(r.read, ['q2', 'a2'], "reads keep the session's window");
    assert.equal(r.pending, 0);
    await a.context.close();
  });

  test('a remote session that reads a window by default is compared whole: nothing outside its window is taken for deleted', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const remote = new lib.IndexedDbSession('windowed-remote-store', { settings: { limit: 2 } });
      const first = new lib.SyncedSession(new lib.IndexedDbSession('local-of-windowed'), remote, { syncOnOpen: false });
      await first.addItems(['q1', 'a1', 'q2', 'a2', 'q3'].map((text, i) => ({ role: i % 2 ? 'assistant' : 'user', content: text })));
      await first.sync();
      first.close();
      // A new SyncedSession compares the whole histories.
      const again = new lib.SyncedSession(new lib.IndexedDbSession('local-of-windowed'), remote, { syncOnOpen: false });
      await again.sync();
      const out = {
        local: (await again.getItems()).map((i) => i.content),
        remote: (await remote.getItems(100)).map((i) => i.content),
        pending: again.syncStatus.pending,
      };
      again.close();
      return out;
    });
    assert.deepEqual(r, { local: ['q1', 'a1', 'q2', 'a2', 'q3'], remote: ['q1', 'a1', 'q2', 'a2', 'q3'], pending: 0 });
    await a.context.close();
  });

  test('a write of another object between a round’s check and its local write makes the round wait (SESSION_BUSY, no error shown), and the next round keeps both', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const remote = new lib.MemorySession('busy-remote');
      const local = new lib.IndexedDbSession('busy-local');
      const other = new lib.IndexedDbSession('busy-local');
      const write = local.applyHistoryTransaction;
      const synced = new lib.SyncedSession(local, remote, { syncOnOpen: false });
      await synced.addItems([{ role: 'user', content: 'synced first' }]);
      await synced.sync();
      // Another device's item, which this round pulls in after the synced one.
      await remote.addItems([{ role: 'user', content: 'from the other device' }]);
      let raced = false;
      local.applyHistoryTransaction = async function (args) {
        // Another tab's plain write, just before the round's own.
        if (!raced && String(args?.operationId).startsWith('sync:')) {
          raced = true;
          await other.addItems([{ role: 'user', content: 'typed here meanwhile' }]);
        }
        return write.call(this, args);
      };
      const first = await synced.sync().then(() => 'resolved', (e) => `${e.name} ${e.code}`);
      const status = { lastError: synced.syncStatus.lastError };
      await synced.sync();
      const out = {
        first,
        status,
        local: (await synced.getItems()).map((i) => i.content).sort(),
        remote: (await remote.getItems()).map((i) => i.content).sort(),
      };
      synced.close();
      return out;
    });
    assert.equal(r.first, 'SyncError SESSION_BUSY');
    assert.deepEqual(r.status, { lastError: null });
    assert.deepEqual(r.local, ['from the other device', 'synced first', 'typed here meanwhile']);
    assert.deepEqual(r.remote, ['from the other device', 'synced first', 'typed here meanwhile']);
    await a.context.close();
  });

  test('a local session that is not an IndexedDbSession (an EncryptedSession over one) is INVALID_SESSION; options that are not an object, or a syncOnOpen that is not a boolean, are INVALID_OPTIONS and start nothing', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const key = crypto.getRandomValues(new Uint8Array(32));
      const wrapped = new lib.EncryptedSession(new lib.IndexedDbSession('wrapped-local'), { key });
      const made = (local, options) => {
        try {
          new lib.SyncedSession(local, remote, options);
          return 'made';
        } catch (e) {
          return `${e.name} ${e.code}`;
        }
      };
      let reads = 0;
      const remote = new lib.MemorySession('r');
      const counted = remote.getItems.bind(remote);
      remote.getItems = (...args) => ((reads += 1), counted(...args));
      const out = [made(wrapped, { syncOnOpen: false }), made(new lib.IndexedDbSession('opts'), 60_000), made(new lib.IndexedDbSession('opts'), { syncOnOpen: 'no' })];
      await new Promise((ok) => setTimeout(ok, 300));
      return { out, reads };
    });
    assert.deepEqual(r.out, ['SessionError INVALID_SESSION', 'SessionError INVALID_OPTIONS', 'SessionError INVALID_OPTIONS']);
    assert.equal(r.reads, 0, 'no round started');
    await a.context.close();
  });

  test('a remote without deleteItem, written by another device between the round’s read and its pop: that item stays (the pop no longer takes it), and the one popped here, no longer the newest there, is ignored from then on', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const items = [];
      let race = null;
      const remote = {
        getSessionId: async () => 'no-delete',
        getItems: async (n) => structuredClone(n === undefined ? items : items.slice(-n)),
        addItems: async (added) => void items.push(...structuredClone(added)),
        popItem: async () => {
          // Another device's push lands just before this pop reaches the remote.
          if (race) items.push(race), (race = null);
          return items.pop();
        },
        clearSession: async () => void items.splice(0),
      };
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('no-delete'), remote, { syncOnOpen: false });
      await synced.addItems([{ id: 'm1', role: 'user', content: 'q1' }, { id: 'm2', role: 'user', content: 'q2' }]);
      await synced.sync();
      await synced.popItem();
      race = { id: 'm3', role: 'user', content: 'from the other device' };
      const first = await synced.sync().then(() => 'resolved', (e) => `${e.name} ${e.code}`);
      await synced.sync();
      const out = { first, remote: items.map((i) => i.content), local: (await synced.getItems()).map((i) => i.content), lastError: synced.syncStatus.lastError };
      synced.close();
      return out;
    });
    assert.equal(r.first, 'SyncError SESSION_BUSY');
    assert.deepEqual(r.remote, ['q1', 'q2', 'from the other device'], 'the other device’s item is kept where it was');
    assert.deepEqual(r.local, ['q1', 'from the other device']);
    assert.equal(r.lastError, null);
    await a.context.close();
  });

  test('a remote without ids: identical items stay two items, and a pop removes one', async () => {
    const a = await device();
    const r = await a.page.evaluate(async () => {
      const remote = new lib.MemorySession('remote-without-ids');
      const synced = new lib.SyncedSession(new lib.IndexedDbSession('no-ids'), remote, { syncOnOpen: false });
      await synced.addItems([{ role: 'user', content: 'ok' }]);
      await synced.sync();
      await synced.addItems([{ role: 'user', content: 'ok' }]);
      await synced.sync();
      await synced.sync();
      const twice = [(await remote.getItems()).length, (await synced.getItems()).length];
      await synced.popItem();
      await synced.sync();
      const once = [(await remote.getItems()).length, (await synced.getItems()).length];
      synced.close();
      return { twice, once, status: synced.syncStatus };
    });
    assert.deepEqual(r.twice, [2, 2]);
    assert.deepEqual(r.once, [1, 1]);
    assert.equal(r.status.lastError, null);
    await a.context.close();
  });
});

