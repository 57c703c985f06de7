// One chat turn through the runner: `runner.run(agent, text, { session })` on an
// IndexedDbSession, against the same turn written by hand in the same run, with the same
// durability: read the newest 20 items from raw IndexedDB, save the question (so a failed model
// call keeps it, as the runner and the SDK's do), build the Chat Completions request, call the
// same `fetch`, parse the answer, save it with the call's token usage. The model is a `fetch`
// inside the page that answers at once, so what is timed is everything but the model.
//
//   node bench/runner.mjs [--turns=200] [--pkg=dir]
//
// Uses the package as built in pkg/ (node scripts/build.mjs builds it), in headless Chromium on
// an on-disk profile (bench/browser.mjs).
import { benchScript } from './browser.mjs';
import { benchArgs, compareLine } from './report.mjs';

const { turns, pkg } = benchArgs(process.argv.slice(2), { turns: 200 });
await benchScript(pkg, async (browser) => {
  const page = await browser.appPage();
  const r = await page.evaluate(async ({ turns }) => {
    const runnerLib = await import('/pkg/runner.js');
    const stamp = Date.now().toString(36);
    const LIMIT = 20;
    const INSTRUCTIONS = 'Reply in one short sentence.';
    // The model: answers every request at once with the same shape a server sends.
    let served = 0;
    const fetch = async (_url, init) => {
      const body = JSON.parse(init.body);
      served++;
      const text = `Noted, message ${body.messages.length}.`;
      return new Response(
        JSON.stringify({
          id: `chatcmpl_${served}`,
          object: 'chat.completion',
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
        { headers: { 'content-type': 'application/json' } },
      );
    };
    const question = (i) => `please remember that my hobby number ${i} is horse racing`;

    // Ours.
    const runner = new runnerLib.Runner({ baseUrl: 'http://model.invalid/v1', fetch });
    const agent = new runnerLib.Agent({ name: 'Assistant', instructions: INSTRUCTIONS, model: 'm' });
    const session = new lib.IndexedDbSession('chat', { dbName: `run-ours-${stamp}`, settings: { limit: LIMIT } });
    const oursTurn = (text) => runner.run(agent, text, { session });

    // The floor, by hand: a counter record and one row per item, as the benchmark's raw
    // IndexedDB implementation keeps them.
    const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
    const open = indexedDB.open(`run-raw-${stamp}`, 1);
    open.onupgradeneeded = () => {
      open.result.createObjectStore('sessions', { keyPath: 'id' });
      open.result.createObjectStore('rows', { keyPath: ['sessionId', 'seq'] });
      open.result.createObjectStore('usage', { keyPath: ['sessionId', 'turn'] });
    };
    const db = await request(open);
    const chatMessage = (item) =>
      item.type === 'message' && item.role === 'assistant'
        ? { role: 'assistant', content: item.content.map((p) => p.text).join('') }
        : { role: item.role, content: item.content };
    const save = async (items, usage) => {
      const tx = db.transaction(['sessions', 'rows', 'usage'], 'readwrite');
      const record = (await request(tx.objectStore('sessions').get('chat'))) ?? { id: 'chat', next: 0, turns: 0 };
      for (const item of items) {
        if (item.role === 'user') record.turns++;
        tx.objectStore('rows').put({ sessionId: 'chat', seq: record.next++, turn: record.turns, item });
      }
      if (usage) tx.objectStore('usage').put({ sessionId: 'chat', turn: record.turns, ...usage });
      tx.objectStore('sessions').put(record);
      await new Promise((ok, fail) => ((tx.oncomplete = ok), (tx.onerror = () => fail(tx.error))));
    };
    const rawTurn = async (text) => {
      const read = db.transaction(['sessions', 'rows']);
      const record = (await request(read.objectStore('sessions').get('chat'))) ?? { id: 'chat', next: 0 };
      const history = record.next
        ? (await request(read.objectStore('rows').getAll(IDBKeyRange.bound(['chat', Math.max(0, record.next - LIMIT)], ['chat', record.next - 1])))).map((row) => row.item)
        : [];
      const user = { role: 'user', content: text };
      await save([user]);
      const body = { model: 'm', messages: [{ role: 'system', content: INSTRUCTIONS }, ...[...history, user].map(chatMessage)] };
      const response = await fetch('http://model.invalid/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = await response.json();
      const answer = json.choices[0].message.content;
      const reply = { id: json.id, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: answer, annotations: [] }] };
      await save([reply], { inputTokens: json.usage.prompt_tokens, outputTokens: json.usage.completion_tokens });
      return answer;
    };

    await oursTurn(question(-1));
    await rawTurn(question(-1));
    const times = { ours: [], raw: [] };
    const answers = { ours: [], raw: [] };
    for (let i = 0; i < turns; i++) {
      // Alternating, so both see the same machine.
      let t = performance.now();
      answers.ours.push((await oursTurn(question(i))).finalOutput);
      times.ours.push(performance.now() - t);
      t = performance.now();
      answers.raw.push(await rawTurn(question(i)));
      times.raw.push(performance.now() - t);
    }
    const stored = (await session.getItems(2)).map((item) => item.content);
    db.close();
    return { times, same: JSON.stringify(answers.ours) === JSON.stringify(answers.raw), stored };
  }, { turns });
  // Both sent the same history (the answer names the request's message count) and got the
  // same answers.
  if (!r.same) throw new Error('the runner and the floor sent different requests');
  console.log(`\nagent-sessions Runner on IndexedDbSession against the same turn by hand, ${turns} turns, medians\n`);
  console.log(compareLine('one chat turn:', r.times.ours, r.times.raw, { width: 18 }));
});
