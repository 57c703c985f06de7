// Encryption at rest: EncryptedSession over our sessions, the SDK's MemorySession and its run(),
// no plaintext anywhere in IndexedDB, wrong keys, tampering, moved items, TTL with an injected
// clock, keys from passphrases and kept on the device, retention, the SDK's history transactions
// and rewrites through it (writes in between, retries), and the bad inputs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start } from './harness.mjs';
import { bundleSdk } from './sdk-bundle.mjs';

let env;
let context;
before(async () => {
  await bundleSdk();
  env = await start();
  context = await env.browser.newContext();
});
after(async () => {
  await env?.close();
});

async function openPage() {
  const page = await context.newPage();
  await page.goto(`${env.url}/tests/pages/interop.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  await page.evaluate(() => {
    window.key = () => crypto.getRandomValues(new Uint8Array(32));
    window.request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
    /** Every record of every store of a database, as one JSON text. */
    window.rawText = async (dbName) => {
      const db = await request(indexedDB.open(dbName));
      const out = {};
      for (const name of db.objectStoreNames) out[name] = await request(db.transaction(name).objectStore(name).getAll());
      db.close();
      return JSON.stringify(out);
    };
    /** `text` (JSON, or NDJSON) with the base64 of every IV and ciphertext left out: random
     * bytes, in which a short word turns up by chance now and then (a three-letter one about once
     * in 260,000 characters: "SDK" did, and failed a run), never as a leak (base64 does not carry
     * a plaintext's letters). */
    window.clearText = (text) => text.replace(/"(ct|iv)":"[A-Za-z0-9+/=]*"/g, '"$1":""');
    /** `session`, whose `getItems` calls `afterRead()` once it has read (and awaits it) before
     * it resolves: what a wrapper reads can be made to go stale before it writes. */
    window.afterReads = (session, afterRead) =>
      new Proxy(session, {
        get(target, name) {
          const value = Reflect.get(target, name);
          if (name === 'getItems') {
            return async (...args) => {
              const read = await value.apply(target, args);
              await afterRead();
              return read;
            };
          }
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    /** How a call came out: 'resolved', or the error's name and code. */
    window.code = (p) => p.then(() => 'resolved', (e) => `${e.name} ${e.code}`);
    /** An IndexedDbSession (`base`) and `session` over it, whose next read once `arm()`ed is
     * followed by another object's append to the same session: a write in between. */
    window.racing = (sessionId, dbName) => {
      const base = new lib.IndexedDbSession(sessionId, { dbName });
      const other = new lib.IndexedDbSession(sessionId, { dbName });
      let armed = false;
      const session = afterReads(base, async () => {
        if (armed) {
          armed = false;
          await other.addItems([{ __enc: 1, iv: 'AAAAAAAAAAAAAAAA', ct: 'AAAA' }]);
        }
      });
      return { base, session, arm: () => (armed = true) };
    };
  });
  return page;
}

test('nothing of the text is stored in clear: not the items, the record, the title or the search index', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = 'enc-raw';
    const secret = 'My PIN is 4921 and my dog is Rufus';
    const s = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName, userId: 'ann' }), { key: key() });
    await s.addItems([{ role: 'user', content: secret }, { role: 'assistant', content: 'Noted: Rufus, 4921.' }]);
    const back = await s.getItems();
    const raw = await rawText(dbName);
    const listed = await lib.listSessions({ dbName, userId: 'ann' });
    const hits = await lib.searchSessions({ dbName, userId: 'ann', query: 'rufus' });
    const exported = await new Response(lib.exportSessions({ dbName })).text();
    const clear = clearText(raw) + clearText(exported);
    return { back, leaks: ['4921', 'Rufus', 'rufus', 'PIN'].filter((w) => clear.includes(w)), title: listed[0].title, hits: hits.length, stored: JSON.parse(raw).agent_messages[0].item };
  });
  assert.deepEqual(r.back, [{ role: 'user', content: 'My PIN is 4921 and my dog is Rufus' }, { role: 'assistant', content: 'Noted: Rufus, 4921.' }]);
  assert.deepEqual(r.leaks, []);
  assert.equal(r.title, null);
  assert.equal(r.hits, 0);
  assert.deepEqual(Object.keys(r.stored).sort(), ['__enc', 'ct', 'iv']);
  assert.equal(r.stored.__enc, 1);
  assert.equal(atobLength(r.stored.iv), 12, 'a 96-bit IV');
});

test('subscribe hears the wrapped session’s changes, from another object too, never an item; close() stops the listeners; over a session without events there is none', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = 'enc-events';
    const shared = key();
    const s = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: shared });
    const heard = [];
    const subscribe = s.subscribe;
    const stop = subscribe((event) => heard.push(event));
    await s.addItems([{ role: 'user', content: 'secret words' }]);
    // Another object on the same session (another tab's, as far as events go).
    const other = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: shared });
    await other.addItems([{ role: 'assistant', content: 'more secret words' }]);
    await new Promise((ok) => setTimeout(ok, 100));
    const before = heard.length;
    stop();
    await other.popItem();
    await new Promise((ok) => setTimeout(ok, 100));
    const afterStop = heard.length;
    s.subscribe((event) => heard.push(event));
    await s.close();
    await other.popItem();
    await new Promise((ok) => setTimeout(ok, 100));
    let closed;
    try {
      s.subscribe(() => {});
    } catch (e) {
      closed = e.code;
    }
    const plain = new lib.EncryptedSession({ getItems: async () => [], addItems: async () => {}, popItem: async () => undefined, clearSession: async () => {} }, { key: key() });
    return { types: heard.map((e) => [e.type, e.count ?? null]), text: JSON.stringify(heard), before, afterStop, total: heard.length, closed, plain: typeof plain.subscribe };
  });
  assert.deepEqual(r.types, [['add', 1], ['add', 1]]);
  assert.equal(r.before, 2);
  assert.equal(r.afterStop, 2, 'nothing after stop()');
  assert.equal(r.total, 2, 'nothing after close()');
  assert.doesNotMatch(r.text, /secret/);
  assert.equal(r.closed, 'CLOSED');
  assert.equal(r.plain, 'undefined');
});

test('listeners hear a pop through it as a pop and its rewrite as mutations, over both session kinds; an item that is a Proxy or holds a function is refused at once', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const call = (args) => ({ type: 'function_call', callId: 'c1', name: 'f', arguments: args });
    const heardOf = {};
    for (const [name, inner] of [
      ['indexeddb', new lib.IndexedDbSession('kinds', { dbName: 'enc-event-kinds' })],
      ['memory', new lib.MemorySession('kinds')],
    ]) {
      const s = new lib.EncryptedSession(inner, { key: key() });
      const heard = [];
      s.subscribe((e) => heard.push(e.change ? `${e.type}:${e.change}` : e.type));
      await s.addItems([{ role: 'user', content: 'q' }, call('{}'), { role: 'assistant', content: 'a' }]);
      const popped = await s.popItem();
      await s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: call('{"x":1}') }] });
      // (Events of an IndexedDbSession come in a task after the write.)
      await new Promise((ok) => setTimeout(ok, 100));
      heardOf[name] = { heard, popped: popped.content };
    }
    // What the caller's object holds when the write's turn comes is not what is written: an
    // item that cannot be copied now is refused now.
    const inner = new lib.IndexedDbSession('proxied', { dbName: 'enc-event-kinds' });
    const s = new lib.EncryptedSession(inner, { key: key() });
    const list = new Proxy([{ role: 'user', content: 'hi' }], {});
    const proxied = code(s.addItems(list));
    list.length = 0;
    const withFunction = code(s.addItems([{ role: 'user', content: 'x', meta: { f() {} } }]));
    const replaced = code(s.replaceHistory([new Proxy({ role: 'user', content: 'y' }, {})]));
    // Options are named as the wrapped session names them.
    const options = code(s.replaceHistory([{ role: 'user', content: 'y' }], { expectedItems: [{ role: 'user', content: 'q', f() {} }] }));
    const transaction = code(s.applyHistoryTransaction({ operationId: 'p', transaction: { type: 'append_items', items: [new Proxy({ role: 'user', content: 'z' }, {})] } }));
    const wrapped = code(inner.addItems([new Proxy({ role: 'user', content: 'w' }, {})]));
    return { heardOf, proxied: await proxied, withFunction: await withFunction, replaced: await replaced, options: await options, transaction: await transaction, wrapped: await wrapped, stored: (await inner.getItems()).length };
  });
  for (const name of ['indexeddb', 'memory']) {
    assert.deepEqual(r.heardOf[name].heard, ['add', 'pop', 'replace:mutations'], name);
    assert.equal(r.heardOf[name].popped, 'a', name);
  }
  assert.equal(r.wrapped, 'SessionError INVALID_ITEM', 'the wrapped session refuses a Proxy');
  assert.equal(r.proxied, 'SessionError INVALID_ITEM');
  assert.equal(r.withFunction, 'SessionError INVALID_ITEM');
  assert.equal(r.replaced, 'SessionError INVALID_ITEM');
  assert.equal(r.options, 'SessionError INVALID_OPTIONS');
  assert.equal(r.transaction, 'SessionError INVALID_TRANSACTION');
  assert.equal(r.stored, 0, 'nothing written');
});

function atobLength(b64) {
  return Buffer.from(b64, 'base64').length;
}

test('a wrong key reads nothing and says how many it skipped; a flipped byte costs only its item; a moved item does not decrypt', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = 'enc-tamper';
    const k = key();
    const inner = new lib.IndexedDbSession('a', { dbName });
    const s = new lib.EncryptedSession(inner, { key: k });
    await s.addItems([{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' }, { role: 'user', content: 'three' }]);
    const reported = [];
    const wrong = new lib.EncryptedSession(new lib.IndexedDbSession('a', { dbName }), { key: key(), onUndecryptable: (n) => reported.push(n) });
    const wrongItems = await wrong.getItems();
    // One byte of the second item's ciphertext flipped, by hand.
    const db = await request(indexedDB.open(dbName));
    const tx = db.transaction('agent_messages', 'readwrite');
    const row = await request(tx.objectStore('agent_messages').get(['a', 1]));
    const ct = Uint8Array.from(atob(row.item.ct), (c) => c.charCodeAt(0));
    ct[3] ^= 0x01;
    row.item.ct = btoa(String.fromCharCode(...ct));
    tx.objectStore('agent_messages').put(row);
    await new Promise((ok) => (tx.oncomplete = ok));
    db.close();
    const tampered = new lib.EncryptedSession(new lib.IndexedDbSession('a', { dbName }), { key: k });
    const afterFlip = await tampered.getItems();
    // The first item's envelope copied into session b: same master key, another session id.
    const [envelope] = await new lib.IndexedDbSession('a', { dbName }).getItems(3);
    await new lib.IndexedDbSession('b', { dbName }).addItems([envelope]);
    const moved = new lib.EncryptedSession(new lib.IndexedDbSession('b', { dbName }), { key: k });
    const movedItems = await moved.getItems();
    return { wrongItems, wrongSkipped: wrong.lastSkipped, reported, afterFlip, flipSkipped: tampered.lastSkipped, movedItems, movedSkipped: moved.lastSkipped };
  });
  assert.deepEqual(r.wrongItems, []);
  assert.equal(r.wrongSkipped, 3);
  assert.deepEqual(r.reported, [3]);
  assert.deepEqual(r.afterFlip.map((i) => i.content), ['one', 'three']);
  assert.equal(r.flipSkipped, 1);
  assert.deepEqual(r.movedItems, []);
  assert.equal(r.movedSkipped, 1);
});

test('TTL with an injected clock: expired items are left out of reads, purgeExpired deletes them', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    let clock = 1_000_000;
    const inner = new lib.IndexedDbSession('ttl', { dbName: 'enc-ttl' });
    const s = new lib.EncryptedSession(inner, { key: key(), ttl: 60, now: () => clock });
    await s.addItems([{ role: 'user', content: 'old' }]);
    clock += 30_000;
    await s.addItems([{ role: 'user', content: 'newer' }]);
    const both = (await s.getItems()).map((i) => i.content);
    clock += 45_000; // the first is 75 s old, the second 45 s
    const one = (await s.getItems()).map((i) => i.content);
    const storedBefore = (await inner.getItems()).length;
    const purged = await s.purgeExpired();
    const storedAfter = (await inner.getItems()).length;
    clock += 60_000;
    const none = await s.getItems();
    return { both, one, storedBefore, purged, storedAfter, none };
  });
  assert.deepEqual(r.both, ['old', 'newer']);
  assert.deepEqual(r.one, ['newer']);
  assert.equal(r.storedBefore, 2);
  assert.equal(r.purged, 1);
  assert.equal(r.storedAfter, 1);
  assert.deepEqual(r.none, []);
});

test('purgeExpired deletes the expired items outside the window the inner session reads by default', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    let clock = 1_000_000;
    const inner = new lib.IndexedDbSession('ttl-window', { dbName: 'enc-ttl', settings: { limit: 1 } });
    const s = new lib.EncryptedSession(inner, { key: key(), ttl: 60, now: () => clock });
    await s.addItems([{ role: 'user', content: 'old 1' }, { role: 'assistant', content: 'old 2' }]);
    clock += 90_000;
    await s.addItems([{ role: 'user', content: 'new' }]);
    const purged = await s.purgeExpired();
    return { purged, stored: (await inner.getItems(10)).length, read: (await s.getItems()).map((i) => i.content) };
  });
  assert.deepEqual(r, { purged: 2, stored: 1, read: ['new'] });
});

test('it wraps MemorySession, IndexedDbSession and the SDK’s MemorySession, and pops and clears through them', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const out = {};
    const k = key();
    for (const [name, inner] of [
      ['memory', new lib.MemorySession('m')],
      ['indexeddb', new lib.IndexedDbSession('i', { dbName: 'enc-wrap' })],
      ['sdk', new sdk.MemorySession({ sessionId: 's' })],
    ]) {
      const s = new lib.EncryptedSession(inner, { key: k });
      await s.addItems([{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }]);
      const popped = await s.popItem();
      const left = await s.getItems();
      const innerLeft = await inner.getItems();
      await s.clearSession();
      out[name] = { id: await s.getSessionId(), popped, left, innerEncrypted: innerLeft.every((i) => i.__enc === 1), cleared: (await s.getItems()).length };
    }
    return out;
  });
  for (const [name, o] of Object.entries(r)) {
    assert.deepEqual(o.popped, { role: 'assistant', content: 'hi' }, name);
    assert.deepEqual(o.left, [{ role: 'user', content: 'hello' }], name);
    assert.equal(o.innerEncrypted, true, name);
    assert.equal(o.cleared, 0, name);
  }
  assert.deepEqual([r.memory.id, r.indexeddb.id, r.sdk.id], ['m', 'i', 's']);
});

test('the SDK’s run() and our runner over EncryptedSession(IndexedDbSession): three turns, a reload, still one history', async () => {
  let page = await openPage();
  const passphraseSalt = 'a salt of 16 bytes or more';
  await page.evaluate(async (salt) => {
    const k = await lib.deriveKeyFromPassphrase('correct horse battery staple', { salt });
    const session = () => new lib.EncryptedSession(new lib.IndexedDbSession('run', { dbName: 'enc-run', userId: 'ann' }), { key: k });
    const { Agent, run, ScriptedModel, assistantMessage } = sdk;
    await run(new Agent({ name: 'SDK', model: new ScriptedModel([[assistantMessage('One from the SDK.')]]) }), 'first', { session: session() });
    const { fetch } = scriptedFetch([{ text: 'Two from ours.' }]);
    // The answer with its usage, which our runner saves with the turn.
    const withUsage = async (url, init) => {
      const body = await (await fetch(url, init)).json();
      body.usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
      return new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
    };
    const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', fetch: withUsage });
    await runner.run(new lib.Agent({ name: 'Ours', model: 'm' }), 'second', { session: session() });
    await run(new Agent({ name: 'SDK', model: new ScriptedModel([[assistantMessage('Three from the SDK.')]]) }), 'third', { session: session() });
  }, passphraseSalt);
  await page.close();
  page = await openPage();
  const r = await page.evaluate(async (salt) => {
    const k = await lib.deriveKeyFromPassphrase('correct horse battery staple', { salt });
    const s = new lib.EncryptedSession(new lib.IndexedDbSession('run', { dbName: 'enc-run', userId: 'ann' }), { key: k });
    const items = await s.getItems();
    const wrong = new lib.EncryptedSession(new lib.IndexedDbSession('run', { dbName: 'enc-run', userId: 'ann' }), {
      key: await lib.deriveKeyFromPassphrase('wrong horse', { salt }),
    });
    return {
      texts: items.map((i) => [i.role, typeof i.content === 'string' ? i.content : i.content.map((p) => p.text).join('')]),
      wrong: (await wrong.getItems()).length,
      skipped: wrong.lastSkipped,
      raw: clearText(await rawText('enc-run')).includes('SDK'),
      usage: await new lib.IndexedDbSession('run', { dbName: 'enc-run', userId: 'ann' }).getSessionUsage(),
    };
  }, passphraseSalt);
  assert.deepEqual(r.usage, { requests: 1, inputTokens: 7, outputTokens: 3, totalTokens: 10, turns: 1 }, 'our run’s usage, saved with its turn');
  assert.deepEqual(r.texts, [
    ['user', 'first'],
    ['assistant', 'One from the SDK.'],
    ['user', 'second'],
    ['assistant', 'Two from ours.'],
    ['user', 'third'],
    ['assistant', 'Three from the SDK.'],
  ]);
  assert.equal(r.wrong, 0);
  assert.equal(r.skipped, 6);
  assert.equal(r.raw, false);
});

test('a device key survives a reload, cannot be extracted, and is forgotten on demand', async () => {
  let page = await openPage();
  await page.evaluate(async () => {
    const k = await lib.createDeviceKey({ dbName: 'enc-device', userId: 'ann' });
    await new lib.EncryptedSession(new lib.IndexedDbSession('d', { dbName: 'enc-device', userId: 'ann' }), { key: k }).addItems([{ role: 'user', content: 'kept here' }]);
  });
  await page.close();
  page = await openPage();
  const r = await page.evaluate(async () => {
    const k = await lib.loadDeviceKey({ dbName: 'enc-device', userId: 'ann' });
    const items = await new lib.EncryptedSession(new lib.IndexedDbSession('d', { dbName: 'enc-device', userId: 'ann' }), { key: k }).getItems();
    let exported;
    try {
      await crypto.subtle.exportKey('raw', k);
      exported = 'exported';
    } catch (e) {
      exported = e.name;
    }
    const other = await lib.loadDeviceKey({ dbName: 'enc-device', userId: 'bob' });
    // A passphrase's key kept as the device key opens what the passphrase wrote.
    const passphrase = await lib.deriveKeyFromPassphrase('correct horse', { salt: 'a salt of sixteen bytes' });
    await new lib.EncryptedSession(new lib.IndexedDbSession('p', { dbName: 'enc-device', userId: 'cy' }), { key: passphrase }).addItems([{ role: 'user', content: 'by passphrase' }]);
    await lib.storeDeviceKey(passphrase, { dbName: 'enc-device', userId: 'cy' });
    const remembered = await lib.loadDeviceKey({ dbName: 'enc-device', userId: 'cy' });
    const viaDevice = await new lib.EncryptedSession(new lib.IndexedDbSession('p', { dbName: 'enc-device', userId: 'cy' }), { key: remembered }).getItems();
    let refused;
    try {
      await lib.storeDeviceKey(await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, true, ['encrypt']), { userId: 'cy' });
    } catch (e) {
      refused = e.code;
    }
    await lib.forgetDeviceKey({ dbName: 'enc-device', userId: 'ann' });
    return { items, extractable: k.extractable, exported, other, viaDevice, refused, forgotten: await lib.loadDeviceKey({ dbName: 'enc-device', userId: 'ann' }) };
  });
  assert.deepEqual(r.items, [{ role: 'user', content: 'kept here' }]);
  assert.deepEqual(r.viaDevice, [{ role: 'user', content: 'by passphrase' }], "storeDeviceKey: the passphrase's key remembered on the device");
  assert.equal(r.refused, 'INVALID_KEY');
  assert.equal(r.extractable, false);
  // The browser refuses to hand out its bytes (Chromium exports no HKDF key at all; a
  // non-extractable key of any kind is refused).
  assert.ok(['InvalidAccessError', 'NotSupportedError'].includes(r.exported), r.exported);
  assert.equal(r.other, null);
  assert.equal(r.forgotten, null);
});

test('applyRetention deletes whole sessions, oldest first, by age and by count per user', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = 'enc-retention';
    for (const [id, userId] of [['a1', 'ann'], ['a2', 'ann'], ['a3', 'ann'], ['b1', 'bob']]) {
      await new lib.IndexedDbSession(id, { dbName, userId }).addItems([{ role: 'user', content: id }]);
      await new Promise((ok) => setTimeout(ok, 5));
    }
    const byCount = await lib.applyRetention({ dbName, maxSessionsPerUser: 2 });
    const left = (await lib.listSessions({ dbName })).map((s) => s.sessionId);
    const byAge = await lib.applyRetention({ dbName, userId: 'ann', maxAgeDays: 1, now: Date.now() + 2 * 86_400_000 });
    let refused;
    try {
      await lib.applyRetention({ dbName, maxAgeDays: -1 });
    } catch (e) {
      refused = e.code;
    }
    return { byCount: byCount.map((d) => [d.sessionId, d.userId]), left, byAge: byAge.map((d) => d.sessionId), after: (await lib.listSessions({ dbName })).map((s) => s.sessionId), refused };
  });
  assert.deepEqual(r.byCount, [['a1', 'ann']]);
  assert.deepEqual(r.left, ['b1', 'a3', 'a2']);
  assert.deepEqual(r.byAge, ['a2', 'a3'], 'oldest first');
  assert.deepEqual(r.after, ['b1']);
  assert.equal(r.refused, 'INVALID_OPTIONS');
});

test('applyRetention leaves a damaged record (a time that is no number) to repairSession: the others are kept and deleted as without it', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `retention-damaged-${Math.random()}`;
    for (const id of ['a1', 'a2', 'a3']) {
      await new lib.IndexedDbSession(id, { dbName, userId: 'ann' }).addItems([{ role: 'user', content: id }]);
      await new Promise((ok) => setTimeout(ok, 5));
    }
    // A record another program damaged: its time is text.
    const db = await request(indexedDB.open(dbName));
    const tx = db.transaction('agent_sessions', 'readwrite');
    const record = await request(tx.objectStore('agent_sessions').get('a1'));
    tx.objectStore('agent_sessions').put({ ...record, id: 'broken', updatedAt: 'yesterday' });
    await new Promise((ok) => (tx.oncomplete = ok));
    db.close();
    const deleted = await lib.applyRetention({ dbName, maxSessionsPerUser: 2 });
    return { deleted: deleted.map((d) => d.sessionId), left: (await lib.listSessions({ dbName })).map((s) => s.sessionId).sort() };
  });
  assert.deepEqual(r.deleted, ['a1']);
  assert.deepEqual(r.left, ['a2', 'a3', 'broken']);
});

test('applyRetention that fails part way says which sessions it deleted before', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `retention-fails-${Math.random()}`;
    for (const id of ['old1', 'old2', 'old3']) {
      await new lib.IndexedDbSession(id, { dbName, userId: 'ann' }).addItems([{ role: 'user', content: id }]);
      await new Promise((ok) => setTimeout(ok, 5));
    }
    // The second deletion fails in the browser (a disk error, say).
    const remove = IDBObjectStore.prototype.delete;
    IDBObjectStore.prototype.delete = function (key, ...rest) {
      if (this.name === 'agent_sessions' && key === 'old2') throw new DOMException('disk failure', 'UnknownError');
      return remove.call(this, key, ...rest);
    };
    let error;
    try {
      await lib.applyRetention({ dbName, maxAgeDays: 1, now: Date.now() + 2 * 86_400_000 });
    } catch (e) {
      error = e;
    } finally {
      IDBObjectStore.prototype.delete = remove;
    }
    return {
      code: error?.code,
      deleted: error?.deleted?.map((d) => d.sessionId),
      left: (await lib.listSessions({ dbName })).map((s) => s.sessionId).sort(),
    };
  });
  assert.ok(r.code, 'a coded error');
  assert.deepEqual(r.deleted, ['old1']);
  assert.deepEqual(r.left, ['old2', 'old3']);
});

test('applyRetention keeps a session written after it was listed; deleteSession with expectedUpdatedAt', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = 'retention-race';
    for (const id of ['old1', 'old2']) {
      await new lib.IndexedDbSession(id, { dbName, userId: 'ann' }).addItems([{ role: 'user', content: id }]);
    }
    // Retention's listing, then another tab's write to old2, then retention's deletions.
    const release = await holdStores(dbName, ['agent_sessions']);
    const retention = lib.applyRetention({ dbName, maxAgeDays: 1, now: Date.now() + 2 * 86_400_000 });
    await settle();
    const written = new lib.IndexedDbSession('old2', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'back again' }]);
    await release();
    const deleted = (await retention).map((d) => d.sessionId);
    await written;
    const left = await new lib.IndexedDbSession('old2', { dbName, userId: 'ann' }).getItems();
    // deleteSession itself: a stale updatedAt keeps the session, the current one deletes it.
    const [info] = await lib.listSessions({ dbName });
    const stale = await lib.deleteSession('old2', { dbName, expectedUpdatedAt: info.updatedAt - 1 });
    const afterStale = (await lib.listSessions({ dbName })).length;
    const current = await lib.deleteSession('old2', { dbName, expectedUpdatedAt: info.updatedAt });
    const bad = await outcome(() => lib.deleteSession('old2', { dbName, expectedUpdatedAt: 'yesterday' }));
    return { deleted, left: left.map((i) => i.content), stale, afterStale, current, bad, after: (await lib.listSessions({ dbName })).length };
  });
  assert.deepEqual(r.deleted, ['old1'], 'old2 was written after the listing: kept');
  assert.deepEqual(r.left, ['old2', 'back again']);
  assert.equal(r.stale, false);
  assert.equal(r.afterStale, 1);
  assert.equal(r.current, true);
  assert.equal(r.bad, 'SessionError INVALID_OPTIONS');
  assert.equal(r.after, 0);
});

test('deleteSession with userId deletes only that user’s session: another user’s (or one without a user) is USER_MISMATCH, nothing deleted', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = 'delete-by-user';
    await new lib.IndexedDbSession('alice-chat', { dbName, userId: 'alice' }).addItems([{ role: 'user', content: 'mine' }]);
    await new lib.IndexedDbSession('nobodys', { dbName }).addItems([{ role: 'user', content: 'no user' }]);
    const byBob = await outcome(() => lib.deleteSession('alice-chat', { dbName, userId: 'bob' }));
    const asNobody = await outcome(() => lib.deleteSession('alice-chat', { dbName, userId: null }));
    const nobodysByAlice = await outcome(() => lib.deleteSession('nobodys', { dbName, userId: 'alice' }));
    const left = (await lib.listSessions({ dbName })).map((s) => s.sessionId).sort();
    const byAlice = await lib.deleteSession('alice-chat', { dbName, userId: 'alice' });
    const nobodys = await lib.deleteSession('nobodys', { dbName, userId: null });
    const missing = await lib.deleteSession('never', { dbName, userId: 'alice' });
    const badUser = await outcome(() => lib.deleteSession('x', { dbName, userId: 5 }));
    return { byBob, asNobody, nobodysByAlice, left, byAlice, nobodys, missing, badUser, after: (await lib.listSessions({ dbName })).length };
  });
  assert.equal(r.byBob, 'SessionError USER_MISMATCH');
  assert.equal(r.asNobody, 'SessionError USER_MISMATCH');
  assert.equal(r.nobodysByAlice, 'SessionError USER_MISMATCH');
  assert.deepEqual(r.left, ['alice-chat', 'nobodys'], 'nothing deleted');
  assert.equal(r.byAlice, true);
  assert.equal(r.nobodys, true);
  assert.equal(r.missing, false);
  assert.equal(r.badUser, 'SessionError INVALID_USER_ID');
  assert.equal(r.after, 0);
});

test('deleteSession of a session a run is answering in (its lock held, in any tab) is SESSION_BUSY, nothing deleted; applyRetention keeps it', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = 'delete-while-running';
    for (const id of ['answering', 'idle']) {
      await new lib.IndexedDbSession(id, { dbName, userId: 'ann' }).addItems([{ role: 'user', content: id }]);
    }
    let release;
    const held = new Promise((ok) => {
      navigator.locks.request(lib.sessionLockName(dbName, 'answering'), () => (ok(), new Promise((done) => (release = done))));
    });
    await held;
    const busy = await outcome(() => lib.deleteSession('answering', { dbName }));
    const retained = (await lib.applyRetention({ dbName, maxAgeDays: 0, now: Date.now() + 86_400_000 })).map((d) => d.sessionId);
    const left = (await lib.listSessions({ dbName })).map((s) => s.sessionId);
    release();
    // (The lock goes once its holder's promise settled: waited for.)
    await navigator.locks.request(lib.sessionLockName(dbName, 'answering'), () => {});
    const after = await lib.deleteSession('answering', { dbName });
    return { busy, retained, left, after };
  });
  assert.equal(r.busy, 'SessionError SESSION_BUSY');
  assert.deepEqual(r.retained, ['idle'], 'the session in use is kept');
  assert.deepEqual(r.left, ['answering']);
  assert.equal(r.after, true, 'deleted once the run ended');
});

test('bad input: keys of the wrong size or type, a bad ttl, a non-session; a failing call writes nothing', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const inner = new lib.MemorySession('x');
    const aesKey = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt']);
    const out = {
      short: await outcome(() => new lib.EncryptedSession(inner, { key: new Uint8Array(16) })),
      none: await outcome(() => new lib.EncryptedSession(inner, {})),
      number: await outcome(() => new lib.EncryptedSession(inner, { key: 42 })),
      // Refused by the constructor, not by every call after it.
      wrongKind: await outcome(() => new lib.EncryptedSession(inner, { key: aesKey })),
      notBase64: await outcome(() => new lib.EncryptedSession(inner, { key: '!!!' })),
      shortBase64: await outcome(() => new lib.EncryptedSession(inner, { key: btoa('short') })),
      base64: await outcome(() => new lib.EncryptedSession(inner, { key: btoa(String.fromCharCode(...new Uint8Array(32))) }).getItems()),
      ttlZero: await outcome(() => new lib.EncryptedSession(inner, { key: key(), ttl: 0 })),
      ttlText: await outcome(() => new lib.EncryptedSession(inner, { key: key(), ttl: '60' })),
      notSession: await outcome(() => new lib.EncryptedSession({ getItems() {} }, { key: key() })),
      shortSalt: await outcome(() => lib.deriveKeyFromPassphrase('pw', { salt: 'short' })),
      emptyPassphrase: await outcome(() => lib.deriveKeyFromPassphrase('', { salt: 'a salt of 16 bytes or more' })),
      noSalt: await outcome(() => lib.deriveKeyFromPassphrase('pw', null)),
    };
    // A bad item among good ones: nothing written.
    const s = new lib.EncryptedSession(inner, { key: key() });
    out.badItem = await outcome(() => s.addItems([{ role: 'user', content: 'fine' }, 'not an item']));
    out.written = (await inner.getItems()).length;
    return out;
  });
  for (const k of ['short', 'none', 'number', 'wrongKind', 'notBase64', 'shortBase64', 'shortSalt', 'emptyPassphrase', 'noSalt']) assert.equal(r[k], 'SessionError INVALID_KEY', k);
  assert.equal(r.base64, 'resolved');
  assert.equal(r.ttlZero, 'SessionError INVALID_OPTIONS');
  assert.equal(r.ttlText, 'SessionError INVALID_OPTIONS');
  assert.equal(r.notSession, 'SessionError INVALID_SESSION');
  assert.equal(r.badItem, 'SessionError INVALID_ITEM');
  assert.equal(r.written, 0);
});

test('device key options no session takes are refused (a misspelt userId was the shared key), a passphrase is no key, and a clock that gives no number refuses the write', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const attempt = (f) => Promise.resolve().then(f).then(() => 'done', (e) => `${e.name} ${e.code} ${e.message}`);
    const inner = new lib.IndexedDbSession('enc-clock');
    const dated = new lib.EncryptedSession(inner, { key: key(), ttl: 60, now: () => new Date() });
    return {
      misspelt: await attempt(() => lib.deviceKey({ userID: 'ann' })),
      forget: await attempt(() => lib.forgetDeviceKey({ userID: 'ann' })),
      numberUser: await attempt(() => lib.deviceKey({ userId: 42 })),
      blankDb: await attempt(() => lib.createDeviceKey({ dbName: '' })),
      passphrase: await attempt(() => new lib.EncryptedSession(inner, { key: 'correcthorsebatterystaple0123456789abcdefgh' })),
      rawKey: await attempt(() => new lib.EncryptedSession(inner, { key: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))) })),
      // (Without its padding, as some tools write it.)
      unpadded: await attempt(() => new lib.EncryptedSession(inner, { key: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))).replace(/=+$/, '') })),
      clock: await attempt(() => dated.addItems([{ role: 'user', content: 'x' }])),
      stored: (await inner.getItems()).length,
    };
  });
  assert.match(r.misspelt, /^SessionError INVALID_OPTIONS deviceKey: options\.userID is not an option \(dbName, userId\)/);
  assert.match(r.forget, /^SessionError INVALID_OPTIONS forgetDeviceKey: options\.userID/);
  assert.match(r.numberUser, /^SessionError INVALID_USER_ID deviceKey: options\.userId must be a non-empty string or null/);
  assert.match(r.blankDb, /^SessionError INVALID_OPTIONS createDeviceKey: options\.dbName must be a non-empty string/);
  assert.match(r.passphrase, /^SessionError INVALID_KEY options\.key is a string that is not the base64 of 32 bytes as an encoder writes it; a passphrase goes through deriveKeyFromPassphrase/);
  assert.equal(r.rawKey, 'done');
  assert.equal(r.unpadded, 'done');
  assert.match(r.clock, /^SessionError INVALID_OPTIONS options\.now must return milliseconds since the epoch, a finite number; it returned object/);
  assert.equal(r.stored, 0);
});

test('a summary over an EncryptedSession hands on the turns it keeps as they are stored (not encrypted again) and archives only what it replaced', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const inner = new lib.IndexedDbSession('enc-summary');
    const session = new lib.EncryptedSession(inner, { key: key() });
    const history = [];
    for (let i = 0; i < 6; i++) history.push({ role: 'user', content: `question ${i}` }, { role: 'assistant', content: `answer ${i}` });
    await session.addItems(history);
    const storedBefore = await inner.getItems();
    const fetch = async () => new Response(JSON.stringify({ id: 's', choices: [{ message: { role: 'assistant', content: 'six questions' } }] }), { headers: { 'content-type': 'application/json' } });
    const compaction = new lib.CompactionSession(session, { runner: new lib.Runner({ baseUrl: 'https://api.example/v1', fetch }), model: 'm', keepTurns: 2 });
    const done = await compaction.runCompaction({ force: true });
    const storedAfter = await inner.getItems();
    return {
      done: done?.itemsAfter,
      history: (await session.getItems()).map((i) => i.content),
      archived: (await compaction.getArchivedItems()).map((i) => i.content),
      keptAsStored: JSON.stringify(storedAfter.slice(1)) === JSON.stringify(storedBefore.slice(-4)),
    };
  });
  assert.equal(r.done, 5);
  assert.deepEqual(r.history.slice(1), ['question 4', 'answer 4', 'question 5', 'answer 5']);
  assert.equal(r.keptAsStored, true, 'the kept items are the same ciphertext');
  assert.deepEqual(r.archived, ['question 0', 'answer 0', 'question 1', 'answer 1', 'question 2', 'answer 2', 'question 3', 'answer 3']);
});

test('a whole turn written through an EncryptedSession while its summary is made goes after the summary, as it is stored', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const inner = new lib.IndexedDbSession('enc-summary-race');
    const k = key();
    const session = new lib.EncryptedSession(inner, { key: k });
    const history = [];
    for (let i = 0; i < 6; i++) history.push({ role: 'user', content: `question ${i}` }, { role: 'assistant', content: `answer ${i}` });
    await session.addItems(history);
    let started;
    const asked = new Promise((ok) => (started = ok));
    let release;
    const released = new Promise((ok) => (release = ok));
    const fetch = async () => {
      started();
      await released;
      return new Response(JSON.stringify({ id: 's', choices: [{ message: { role: 'assistant', content: 'six questions' } }] }), { headers: { 'content-type': 'application/json' } });
    };
    const compaction = new lib.CompactionSession(session, { runner: new lib.Runner({ baseUrl: 'https://api.example/v1', fetch }), model: 'm', keepTurns: 1 });
    const done = compaction.runCompaction({ force: true });
    await asked;
    await new lib.EncryptedSession(new lib.IndexedDbSession('enc-summary-race'), { key: k }).addItems([{ role: 'user', content: 'meanwhile' }, { role: 'assistant', content: 'its answer' }]);
    const written = (await inner.getItems()).slice(-2);
    release();
    const result = await done;
    return {
      result: result && [result.itemsBefore, result.itemsAfter],
      history: (await session.getItems()).map((i) => i.content),
      sameCiphertext: JSON.stringify((await inner.getItems()).slice(-2)) === JSON.stringify(written),
      archived: (await compaction.getArchivedItems()).length,
    };
  });
  assert.deepEqual(r.result, [14, 5]);
  assert.deepEqual(r.history.slice(1), ['question 5', 'answer 5', 'meanwhile', 'its answer']);
  assert.equal(r.sameCiphertext, true, 'the turn written meanwhile is stored as it was');
  assert.equal(r.archived, 10);
});

test('an item JSON would give back as something else (a Map, a Set, NaN, a function, undefined in an array) is refused with INVALID_ITEM, nothing written; replaceHistory refuses options that are no object', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const session = new lib.EncryptedSession(new lib.IndexedDbSession('enc-json'), { key: key() });
    await session.addItems([{ role: 'user', content: 'kept' }]);
    const attempt = (f) => f().then(() => 'written', (e) => `${e.name} ${e.code} ${e.message}`);
    const out = {};
    const meta = { map: new Map([[1, 2]]), set: new Set(['a']), nan: NaN, infinite: Infinity, fn: () => 1, hole: [1, undefined] };
    for (const [name, value] of Object.entries(meta)) out[name] = await attempt(() => session.addItems([{ role: 'user', content: 'x', meta: { [name]: value } }]));
    // What JSON keeps as it is documented to: a Date as its text, a field set to undefined left out.
    out.date = await attempt(() => session.addItems([{ role: 'user', content: 'dated', meta: { at: new Date(0) }, gone: undefined }]));
    out.options = await attempt(() => session.replaceHistory([{ role: 'user', content: 'replaced' }], 'x'));
    out.archive = await attempt(() => session.replaceHistory([{ role: 'user', content: 'replaced' }], { archive: 'no' }));
    out.items = (await session.getItems()).map((i) => [i.content, i.meta?.at, 'gone' in i]);
    return out;
  });
  assert.match(r.fn, /^SessionError INVALID_ITEM addItems: an item holds what cannot be stored/);
  for (const name of ['map', 'set', 'nan', 'infinite', 'hole']) assert.match(r[name], /^SessionError INVALID_ITEM items\[0\] cannot be written as JSON to be encrypted/, name);
  assert.match(r.map, /Map/);
  assert.equal(r.date, 'written');
  assert.match(r.options, /^SessionError INVALID_OPTIONS replaceHistory: options must be an object/);
  assert.match(r.archive, /^SessionError INVALID_OPTIONS replaceHistory: options\.archive must be a boolean/);
  assert.deepEqual(r.items, [['kept', undefined, false], ['dated', '1970-01-01T00:00:00.000Z', false]]);
});

test('compaction over an EncryptedSession: a write made while it runs is never replaced, and the archive reads back decrypted', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const session = new lib.EncryptedSession(new lib.IndexedDbSession('enc-compaction'), { key: key() });
    const history = [];
    for (let i = 0; i < 6; i++) history.push({ role: 'user', content: `question ${i}` }, { role: 'assistant', content: `answer ${i}` });
    await session.addItems(history);
    // The compaction endpoint answers when the page lets it.
    let started;
    const asked = new Promise((ok) => (started = ok));
    let release = () => {};
    const fetch = async (url, init) => {
      started();
      await new Promise((ok) => (release = ok));
      const input = JSON.parse(init.body).input;
      const output = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'kept' }] }, { type: 'compaction', id: 'cmp_1', encrypted_content: `ENC(${input.length})` }];
      return new Response(JSON.stringify({ id: 'cr_1', object: 'response.compaction', output, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }), { headers: { 'content-type': 'application/json' } });
    };
    const compaction = new lib.CompactionSession(session, { runner: new lib.Runner({ baseUrl: 'https://api.example/v1', apiKey: 'k', fetch, api: 'responses' }), model: 'm', strategy: 'responses' });
    const first = compaction.runCompaction({ force: true }).then((done) => (done ? 'compacted' : 'refused'), (e) => `${e.name} ${e.code}`);
    await asked;
    // A question, its answer still to come (a whole turn would go after the compacted history).
    await session.addItems([{ role: 'user', content: 'written meanwhile' }]);
    release();
    const raced = await first;
    await session.addItems([{ role: 'assistant', content: 'and its answer' }]);
    const afterRace = (await session.getItems()).map((i) => i.content);
    const second = compaction.runCompaction({ force: true }).then(() => 'compacted', (e) => `${e.name} ${e.code}`);
    await new Promise((ok) => setTimeout(ok, 50));
    release();
    return { raced, afterRace, second: await second, history: await session.getItems(), archived: (await compaction.getArchivedItems()).map((i) => i.content) };
  });
  assert.equal(r.raced, 'refused', 'the compaction read before the write is refused');
  assert.equal(r.afterRace.length, 14);
  assert.equal(r.afterRace.at(-2), 'written meanwhile');
  assert.equal(r.second, 'compacted');
  assert.deepEqual(r.history.at(-1), { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC(14)' });
  assert.deepEqual(r.archived, [...r.afterRace], 'every replaced item, decrypted, in order');
});

test('compaction over an EncryptedSession of a session without replaceHistory (the SDK’s MemorySession) compacts, by clearing and adding', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const inner = new sdk.MemorySession({ sessionId: 'sdk-compaction' });
    const session = new lib.EncryptedSession(inner, { key: key() });
    await session.addItems([{ role: 'user', content: 'question' }, { role: 'assistant', content: 'answer' }]);
    const fetch = async () => {
      const output = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'kept' }] }, { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC' }];
      return new Response(JSON.stringify({ id: 'cr_1', object: 'response.compaction', output, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }), { headers: { 'content-type': 'application/json' } });
    };
    const compaction = new lib.CompactionSession(session, { runner: new lib.Runner({ baseUrl: 'https://api.example/v1', apiKey: 'k', fetch, api: 'responses' }), model: 'm', strategy: 'responses' });
    const outcome = await compaction.runCompaction({ force: true }).then(() => 'compacted', (e) => `${e.name} ${e.code}: ${e.message}`);
    return { outcome, replaceHistory: typeof session.replaceHistory, history: await session.getItems(), stored: (await inner.getItems()).every((i) => i.__enc === 1) };
  });
  assert.equal(r.outcome, 'compacted');
  assert.equal(r.replaceHistory, 'undefined');
  assert.deepEqual(r.history.at(-1), { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC' });
  assert.equal(r.stored, true, 'what compaction wrote is encrypted too');
});

test('a /responses/compact compaction over an EncryptedSession with a TTL: the questions the server gives back keep the time they were said (they were dated from the compaction, and outlived their TTL)', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    let clock = 0;
    const inner = new lib.IndexedDbSession('enc-compact-ttl', { dbName: 'enc-fixes' });
    const session = new lib.EncryptedSession(inner, { key: key(), ttl: 100, now: () => clock });
    await session.addItems([{ role: 'user', content: 'q0' }, { role: 'assistant', content: 'a0' }]);
    clock = 50_000;
    await session.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
    // The server gives the questions back in the API's shape, with ids of its own.
    const fetch = async (url, init) => {
      const users = JSON.parse(init.body).input.filter((i) => i.role === 'user');
      const output = [
        ...users.map((m, i) => ({ type: 'message', id: `msg_${i}`, role: 'user', content: [{ type: 'input_text', text: m.content }] })),
        { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC' },
      ];
      return new Response(JSON.stringify({ id: 'cr_1', object: 'response.compaction', output, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }), { headers: { 'content-type': 'application/json' } });
    };
    const compaction = new lib.CompactionSession(session, { runner: new lib.Runner({ baseUrl: 'https://api.example/v1', apiKey: 'k', fetch, api: 'responses' }), model: 'm', strategy: 'responses' });
    clock = 90_000;
    await compaction.runCompaction({ force: true });
    const compacted = await session.getItems();
    const archived = (await compaction.getArchivedItems()).map((i) => i.content);
    clock = 120_000; // q0 (0 s) has expired; q1 (50 s) has not
    const later = (await session.getItems()).map((i) => i.content ?? i.type);
    return { compacted, later, archived };
  });
  assert.deepEqual(r.compacted.slice(0, 2), [{ role: 'user', content: 'q0' }, { role: 'user', content: 'q1' }], 'the questions as they were added');
  assert.deepEqual(r.later.filter((c) => c !== 'compaction'), ['q1']);
  assert.deepEqual(r.archived, ['a0', 'a1'], 'the questions stay in the history, not archived');
});

test('EncryptedSession: a kept item repeated in the history keeps its own time; key bytes wiped after use change nothing; a class instance is refused; a pop after another tab’s append pops that', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const out = {};
    window.clock = 0;
    const k = key();
    const inner = new lib.IndexedDbSession('enc-repeats', { dbName: 'enc-fixes' });
    const session = new lib.EncryptedSession(inner, { key: k, ttl: 100, now: () => window.clock });
    // "continue" at 0 s (expired by 110 s) and again at 90 s; compaction keeps the newest.
    await session.addItems([{ role: 'user', content: 'continue' }, { role: 'assistant', content: 'one' }]);
    window.clock = 90_000;
    await session.addItems([{ role: 'user', content: 'continue' }, { role: 'assistant', content: 'two' }]);
    window.clock = 110_000;
    const shown = await session.getItems();
    await session.replaceHistory([{ role: 'assistant', content: 'summary' }, ...shown.slice(-2)], { expectedItems: shown });
    window.clock = 150_000;
    out.afterCompaction = (await session.getItems()).map((i) => i.content);
    // Two live repeats: the newest is kept, with the newest time.
    window.clock = 0;
    const live = new lib.EncryptedSession(new lib.IndexedDbSession('enc-live', { dbName: 'enc-fixes' }), { key: k, ttl: 100, now: () => window.clock });
    await live.addItems([{ role: 'user', content: 'ok' }]);
    window.clock = 50_000;
    await live.addItems([{ role: 'user', content: 'ok' }]);
    window.clock = 60_000;
    await live.replaceHistory([{ role: 'assistant', content: 's' }, { role: 'user', content: 'ok' }]);
    window.clock = 120_000;
    out.live = (await live.getItems()).map((i) => i.content);
    // The caller wipes its key bytes after handing them over: the session still uses them.
    const bytes = key();
    const copy = bytes.slice();
    const wiped = new lib.EncryptedSession(new lib.IndexedDbSession('enc-wiped', { dbName: 'enc-fixes' }), { key: bytes });
    bytes.fill(0);
    await wiped.addItems([{ role: 'user', content: 'sealed' }]);
    out.wiped = (await new lib.EncryptedSession(new lib.IndexedDbSession('enc-wiped', { dbName: 'enc-fixes' }), { key: copy }).getItems()).map((i) => i.content);
    // An item that is not a plain object comes back as JSON makes it: refused.
    out.date = await code(session.addItems([new Date(0)]));
    out.map = await code(session.addItems([new Map([['role', 'user']])]));
    out.nullProto = await code(session.addItems([Object.assign(Object.create(null), { role: 'user', content: 'bare' })]));
    // Bytes, as an SDK image output may hold them, would come back as an object of numbers.
    const image = { type: 'image', image: { data: new Uint8Array([137, 80, 78, 71]), mediaType: 'image/png' } };
    out.bytes = await code(session.addItems([{ type: 'function_call_result', callId: 'c', name: 'chart', status: 'completed', output: [image] }]));
    out.buffer = await code(session.addItems([{ role: 'user', content: 'ok' }, { role: 'user', content: [{ type: 'input_file', data: new ArrayBuffer(4) }] }]));
    out.afterBytes = (await session.getItems()).filter((i) => i.type === 'function_call_result' || i.content === 'ok').length;
    // A count of iterations below the minimum, or one WebCrypto refuses (a TypeError without a code).
    out.iterations = await Promise.all(
      [99_999, 2 ** 32, 1.5, Infinity].map((iterations) => code(lib.deriveKeyFromPassphrase('pw', { salt: 'sixteen bytes of salt', iterations }))),
    );
    // Another tab appends between the pop's read and its removal: the pop removes the new item.
    const otherTab = new lib.EncryptedSession(new lib.IndexedDbSession('enc-pop-race', { dbName: 'enc-fixes' }), { key: k });
    let armed = false;
    const raced = afterReads(new lib.IndexedDbSession('enc-pop-race', { dbName: 'enc-fixes' }), async () => {
      if (armed) {
        armed = false;
        await otherTab.addItems([{ role: 'user', content: 'c' }]);
      }
    });
    const popping = new lib.EncryptedSession(raced, { key: k });
    await popping.addItems([{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }]);
    armed = true;
    out.pop = await popping.popItem().then((item) => item?.content ?? null, (e) => `${e.name} ${e.code}`);
    out.afterPop = (await otherTab.getItems()).map((i) => i.content);
    return out;
  });
  assert.deepEqual(r.afterCompaction, ['summary', 'continue', 'two'], 'the kept "continue" keeps its 90 s time');
  assert.deepEqual(r.live, ['s', 'ok'], 'the newest "ok" kept its 50 s time; "s", no summary, is new');
  assert.deepEqual(r.wiped, ['sealed']);
  assert.equal(r.date, 'SessionError INVALID_ITEM');
  assert.equal(r.map, 'SessionError INVALID_ITEM');
  assert.equal(r.nullProto, 'resolved', 'an object without a prototype is plain');
  assert.equal(r.bytes, 'SessionError INVALID_ITEM');
  assert.equal(r.buffer, 'SessionError INVALID_ITEM');
  assert.equal(r.afterBytes, 0, 'nothing of the refused calls was written');
  assert.deepEqual(r.iterations, Array(4).fill('SessionError INVALID_OPTIONS'));
  assert.equal(r.pop, 'c', 'the item newest when it was removed');
  assert.deepEqual(r.afterPop, ['a', 'b']);
});

test('without WebCrypto (an insecure context) encryption rejects with STORAGE_UNAVAILABLE', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    // A page served over plain http from another host has no crypto.subtle; this one (localhost)
    // has, so the test takes it away.
    Object.defineProperty(Crypto.prototype, 'subtle', { get: () => undefined, configurable: true });
    const session = new lib.EncryptedSession(new lib.IndexedDbSession('enc-insecure', { dbName: 'enc-fixes' }), { key: key() });
    return [await code(session.addItems([{ role: 'user', content: 'x' }])), await code(session.getItems()), await code(lib.deriveKeyFromPassphrase('pass', { salt: 'a salt of sixteen bytes' })), await code(lib.createDeviceKey({ dbName: 'enc-insecure' }))];
  });
  assert.deepEqual(r, Array(4).fill('SessionError STORAGE_UNAVAILABLE'));
});

test('over a SyncedSession: the default window of turns is its local session’s, and purgeExpired is one transaction', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const local = new lib.IndexedDbSession('enc-synced-window', { dbName: 'enc-fixes', settings: { turns: 2 } });
    const remote = new lib.MemorySession('enc-synced-remote');
    const synced = new lib.SyncedSession(local, remote, { syncOnOpen: false });
    const session = new lib.EncryptedSession(synced, { key: key() });
    for (let i = 0; i < 4; i++) await session.addItems([{ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` }]);
    const items = (await session.getItems()).map((i) => i.content);
    // purgeExpired through it: one transaction of the local session.
    window.clock = 0;
    const timed = new lib.EncryptedSession(synced, { key: key(), ttl: 100, now: () => window.clock });
    await synced.clearSession();
    await timed.addItems([{ role: 'user', content: 'old' }, { role: 'assistant', content: 'old answer' }]);
    window.clock = 200_000;
    await timed.addItems([{ role: 'user', content: 'new' }]);
    // What purgeExpired asks of the SyncedSession: one replacement of the history (one
    // transaction of the local session, conditioned on what it read), no clear.
    const asked = [];
    for (const name of ['replaceHistory', 'applyHistoryTransaction', 'clearSession', 'addItems']) {
      const method = synced[name].bind(synced);
      synced[name] = (...args) => (asked.push(name), method(...args));
    }
    const purged = await timed.purgeExpired();
    const left = (await local.getItems()).length;
    await synced.close();
    return { items, purged, left, asked };
  });
  assert.deepEqual(r.items, ['q2', 'a2', 'q3', 'a3']);
  assert.deepEqual(r.asked, ['replaceHistory']);
  assert.equal(r.purged, 2);
  assert.equal(r.left, 1);
});

test('deviceKey: callers asking at once get one key, and what either encrypts reads back', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const options = { dbName: 'enc-device-once', userId: 'ann' };
    const [a, b] = await Promise.all([lib.deviceKey(options), lib.deviceKey(options)]);
    const inner = new lib.IndexedDbSession('once', options);
    await new lib.EncryptedSession(inner, { key: a }).addItems([{ role: 'user', content: 'with the first' }]);
    await new lib.EncryptedSession(inner, { key: b }).addItems([{ role: 'user', content: 'with the second' }]);
    const stored = await lib.loadDeviceKey(options);
    const reader = new lib.EncryptedSession(inner, { key: stored });
    const again = await lib.deviceKey(options);
    return { same: a === b, items: (await reader.getItems()).map((i) => i.content), skipped: reader.lastSkipped, readAgain: (await new lib.EncryptedSession(inner, { key: again }).getItems()).length };
  });
  assert.deepEqual(r.items, ['with the first', 'with the second']);
  assert.equal(r.skipped, 0);
  assert.equal(r.readAgain, 2, 'a later call finds the same key');
});

test('deviceKey over a record of the device key that holds no key (another version’s, written by hand) fails with INVALID_KEY, where it asked again without end; forgetDeviceKey then lets it make one', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const options = { dbName: 'enc-keyless', userId: 'ann' };
    // (The store of device keys made first.)
    await lib.createDeviceKey({ dbName: 'enc-keyless', userId: 'bob' });
    const db = await request(indexedDB.open('agent-sessions-keys'));
    const tx = db.transaction('keys', 'readwrite');
    tx.objectStore('keys').put({ id: JSON.stringify(['enc-keyless', 'ann']), createdAt: Date.now(), format: 'other' });
    await new Promise((resolve, reject) => Object.assign(tx, { oncomplete: resolve, onabort: () => reject(tx.error) }));
    db.close();
    const settled = await Promise.race([
      lib.deviceKey(options).then(() => 'a key', (e) => e.code),
      new Promise((done) => setTimeout(() => done('still asking'), 3000)),
    ]);
    await lib.forgetDeviceKey(options);
    const made = await lib.deviceKey(options);
    return { settled, made: made instanceof CryptoKey };
  });
  assert.deepEqual(r, { settled: 'INVALID_KEY', made: true });
});

test('device keys: dbName null is the default database, as the sessions take it; a key an earlier version kept under null is found, and forgotten with the default', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const write = (k, userId) => new lib.EncryptedSession(new lib.IndexedDbSession(`nul-${userId}`, { userId }), { key: k }).addItems([{ role: 'user', content: 'kept' }]);
    const read = async (k, userId) => (k ? (await new lib.EncryptedSession(new lib.IndexedDbSession(`nul-${userId}`, { userId }), { key: k }).getItems()).map((i) => i.content) : null);
    const made = await lib.deviceKey({ dbName: null, userId: 'nul-ann' });
    await write(made, 'nul-ann');
    const found = await read(await lib.loadDeviceKey({ userId: 'nul-ann' }), 'nul-ann');
    const again = await read(await lib.deviceKey({ userId: 'nul-ann' }), 'nul-ann');
    await lib.forgetDeviceKey({ userId: 'nul-ann' });
    const forgotten = await lib.loadDeviceKey({ dbName: null, userId: 'nul-ann' });
    // As an earlier version stored one: under the id of a null dbName.
    const older = await lib.createDeviceKey({ dbName: 'enc-null-source', userId: 'x' });
    const raw = async (run) => {
      const db = await request(indexedDB.open('agent-sessions-keys'));
      const tx = db.transaction('keys', 'readwrite');
      const result = request(run(tx.objectStore('keys')));
      await new Promise((resolve, reject) => Object.assign(tx, { oncomplete: resolve, onabort: () => reject(tx.error) }));
      db.close();
      return result;
    };
    const putEarlier = (userId) => raw((s) => s.put({ id: JSON.stringify([null, userId]), key: older, createdAt: Date.now() }));
    await putEarlier('nul-bob');
    await write(older, 'nul-bob');
    const olderFound = await read(await lib.loadDeviceKey({ userId: 'nul-bob' }), 'nul-bob');
    const olderAgain = await read(await lib.deviceKey({ dbName: null, userId: 'nul-bob' }), 'nul-bob');
    await lib.forgetDeviceKey({ userId: 'nul-bob' });
    // Replaced: the earlier one goes too.
    await putEarlier('nul-carol');
    await lib.createDeviceKey({ userId: 'nul-carol' });
    await putEarlier('nul-dan');
    await lib.storeDeviceKey(older, { userId: 'nul-dan' });
    const left = (await raw((s) => s.getAllKeys())).filter((id) => id.startsWith('[null,'));
    return { found, again, forgotten, olderFound, olderAgain, olderForgotten: await lib.loadDeviceKey({ dbName: null, userId: 'nul-bob' }), left };
  });
  assert.deepEqual(r.found, ['kept'], 'the key made for dbName: null is the default database\'s');
  assert.deepEqual(r.again, ['kept'], 'and no second key is made for it');
  assert.equal(r.forgotten, null, 'forgotten without dbName, gone with dbName: null');
  assert.deepEqual(r.olderFound, ['kept'], 'a key kept under null by an earlier version is found');
  assert.deepEqual(r.olderAgain, ['kept']);
  assert.equal(r.olderForgotten, null, 'and forgotten');
  assert.deepEqual(r.left, [], 'and replaced by createDeviceKey and storeDeviceKey');
});

test('a default window of turns over an encrypted IndexedDbSession counts turns of the decrypted items', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const session = new lib.EncryptedSession(new lib.IndexedDbSession('enc-turns', { settings: { turns: 1 } }), { key: key() });
    await session.addItems([{ role: 'system', content: 'be brief' }]);
    for (let i = 0; i < 3; i++) await session.addItems([{ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` }]);
    const summarised = new lib.EncryptedSession(new lib.IndexedDbSession('enc-turns-summary', { settings: { turns: 1 } }), { key: key() });
    await summarised.addItems([{ role: 'system', content: 'so far', 'agent-sessions.summary': true }, { role: 'user', content: 'q0' }, { role: 'user', content: 'q1' }]);
    return {
      window: (await session.getItems()).map((i) => i.content),
      limited: (await session.getItems(3)).map((i) => i.content),
      summary: (await summarised.getItems()).map((i) => i.content),
    };
  });
  assert.deepEqual(r.window, ['q2', 'a2'], 'the newest turn, as the plain session reads it');
  assert.deepEqual(r.limited, ['a1', 'q2', 'a2'], 'an explicit limit wins');
  assert.deepEqual(r.summary, ['so far', 'q1'], 'a compaction summary at the head stays');
});

test('popItem decrypts before it removes: a wrong key removes nothing; the right key pops the newest item; one stored in clear is named so', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const right = key();
    const inner = new lib.IndexedDbSession('enc-pop');
    await new lib.EncryptedSession(inner, { key: right }).addItems([{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' }]);
    let wrong;
    try {
      await new lib.EncryptedSession(inner, { key: key() }).popItem();
      wrong = 'popped';
    } catch (e) {
      wrong = `${e.name} ${e.code}`;
    }
    const kept = (await inner.getItems()).length;
    const session = new lib.EncryptedSession(inner, { key: right });
    const popped = await session.popItem();
    const result = { wrong, kept, popped, left: (await session.getItems()).map((i) => i.content), emptyAfter: [await session.popItem(), await session.popItem()] };
    // The newest item written in clear, around the EncryptedSession: the message does not blame the key.
    await inner.addItems([{ role: 'user', content: 'in clear' }]);
    result.clear = await session.popItem().then(() => 'popped', (e) => `${e.code} ${e.message}`);
    return result;
  });
  assert.equal(r.wrong, 'SessionError INVALID_KEY');
  assert.match(r.clear, /^INVALID_KEY popItem: the newest item of session "enc-pop" is not encrypted \(written without an EncryptedSession; pop it through the wrapped session\); nothing was removed$/);
  assert.equal(r.kept, 2, 'nothing removed by the wrong key');
  assert.deepEqual(r.popped, { role: 'assistant', content: 'two' });
  assert.deepEqual(r.left, ['one']);
  assert.deepEqual(r.emptyAfter, [{ role: 'user', content: 'one' }, undefined]);
});

test('a pop that finds the session written to every time it removes says so in its own name', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const store = new lib.MemorySession('enc-busy');
    // A wrapped session on which every conditioned removal loses a race.
    const inner = {
      [Symbol.for('agent-sessions.transactionUsage')]: true,
      getSessionId: () => store.getSessionId(),
      getItems: (n) => store.getItems(n),
      addItems: (items) => store.addItems(items),
      popItem: () => store.popItem(),
      clearSession: () => store.clearSession(),
      applyHistoryTransaction: (args) =>
        args.transaction.type === 'replace_suffix' ? Promise.reject(Object.assign(new Error('suffix moved'), { name: 'SessionError', code: 'SUFFIX_MISMATCH' })) : store.applyHistoryTransaction(args),
    };
    const session = new lib.EncryptedSession(inner, { key: key() });
    await session.addItems([{ role: 'user', content: 'one' }]);
    const error = await session.popItem().then(() => null, (e) => ({ name: e.name, code: e.code, message: e.message }));
    return { error, left: (await store.getItems()).length };
  });
  assert.deepEqual([r.error.name, r.error.code], ['SessionError', 'SUFFIX_MISMATCH']);
  assert.match(r.error.message, /^popItem: session "enc-busy" was written to each time/);
  assert.doesNotMatch(r.error.message, /encrypted:/, 'no operation id the caller never gave');
  assert.equal(r.left, 1);
});

test('a pop that removes expired items with the item it pops tries again when another tab writes in between', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const store = new lib.MemorySession('enc-expired-race');
    let removals = 0;
    // A wrapped session on which the first conditioned removal loses a race.
    const inner = {
      [Symbol.for('agent-sessions.transactionUsage')]: true,
      getSessionId: () => store.getSessionId(),
      getItems: (n) => store.getItems(n),
      addItems: (items) => store.addItems(items),
      popItem: () => store.popItem(),
      clearSession: () => store.clearSession(),
      applyHistoryTransaction: (args) =>
        args.transaction.type === 'replace_suffix' && ++removals === 1
          ? Promise.reject(Object.assign(new Error('suffix moved'), { name: 'SessionError', code: 'SUFFIX_MISMATCH' }))
          : store.applyHistoryTransaction(args),
    };
    let clock = 10_000_000;
    const session = new lib.EncryptedSession(inner, { key: key(), ttl: 60, now: () => clock });
    await session.addItems([{ role: 'user', content: 'shown' }]);
    // Six items added with a clock an hour behind: expired from the start, never shown.
    clock -= 3_600_000;
    await session.addItems(Array.from({ length: 6 }, (_, i) => ({ role: 'assistant', content: `expired ${i}` })));
    clock += 3_600_000;
    const popped = await session.popItem().then((item) => item.content, (e) => `${e.code}: ${e.message}`);
    return { popped, left: (await store.getItems()).length, removals };
  });
  assert.equal(r.popped, 'shown');
  assert.equal(r.left, 0);
  assert.equal(r.removals, 2, 'the item and the six expired after it go in one write, once asked again');
});

test('a TTL pop that reads further back after another tab wrote between its reads pops that newer item, never removing it unseen', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-pop-race-${Math.random()}`;
    const k = key();
    let clock = 10_000_000;
    const writer = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: k.slice(), ttl: 60, now: () => clock });
    await writer.addItems([{ role: 'user', content: 'shown' }]);
    clock -= 3_600_000;
    await writer.addItems([{ role: 'assistant', content: 'expired' }]);
    clock += 3_600_000;
    // The pop's first read (the newest item, expired) is followed by another tab's append.
    let reads = 0;
    const inner = afterReads(new lib.IndexedDbSession('chat', { dbName }), async () => {
      if (++reads === 1) await writer.addItems([{ role: 'user', content: 'written in between' }]);
    });
    const session = new lib.EncryptedSession(inner, { key: k.slice(), ttl: 60, now: () => clock });
    const popped = (await session.popItem())?.content;
    return { popped, left: (await writer.getItems()).map((i) => i.content) };
  });
  assert.equal(r.popped, 'written in between');
  assert.deepEqual(r.left, ['shown'], 'the item shown before stays');
});

test('a pop with a TTL is one write, heard as one pop, whatever expired after the item it pops; a history whose items all expired is left to purgeExpired', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-pop-expired-${Math.random()}`;
    const inner = new lib.IndexedDbSession('chat', { dbName });
    let clock = 10_000_000;
    const session = new lib.EncryptedSession(inner, { key: key(), ttl: 60, now: () => clock });
    await session.addItems([{ role: 'user', content: 'shown' }]);
    clock -= 3_600_000;
    await session.addItems(Array.from({ length: 20 }, (_, i) => ({ role: 'assistant', content: `expired ${i}` })));
    clock += 3_600_000;
    // (The adds' events, sent after they resolved, are let go by first.)
    await new Promise((ok) => setTimeout(ok, 50));
    const heard = [];
    const stop = session.subscribe((e) => heard.push(e.type));
    const popped = (await session.popItem())?.content;
    await new Promise((ok) => setTimeout(ok, 50));
    const afterPop = { heard: [...heard], left: (await inner.getItems()).length };
    // Every item expired: nothing to pop, nothing removed.
    await session.addItems([{ role: 'user', content: 'later' }]);
    clock += 3_600_000;
    await new Promise((ok) => setTimeout(ok, 50));
    heard.length = 0;
    const none = await session.popItem();
    await new Promise((ok) => setTimeout(ok, 50));
    stop();
    return { popped, afterPop, none: none === undefined, heard, stored: (await inner.getItems()).length, purged: await session.purgeExpired() };
  });
  assert.equal(r.popped, 'shown');
  assert.deepEqual(r.afterPop, { heard: ['pop'], left: 0 }, 'one pop, the expired items with it');
  assert.ok(r.none);
  assert.deepEqual(r.heard, [], 'nothing written');
  assert.equal(r.stored, 1, 'the expired item stays for purgeExpired');
  assert.equal(r.purged, 1);
});

test('a write under a key that opens none of the newest items is refused, nothing written; plaintext items and an empty session take any key', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const right = key();
    const inner = new lib.IndexedDbSession('enc-wrong-write');
    await new lib.EncryptedSession(inner, { key: right }).addItems([{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' }]);
    const wrong = new lib.EncryptedSession(inner, { key: key() });
    const refused = {
      addItems: await code(wrong.addItems([{ role: 'user', content: 'typed with the wrong passphrase' }])),
      append: await code(wrong.applyHistoryTransaction({ operationId: 'w1', transaction: { type: 'append_items', items: [{ role: 'user', content: 'x' }] } })),
      emptySuffix: await code(wrong.applyHistoryTransaction({ operationId: 'w2', transaction: { type: 'replace_suffix', expectedSuffix: [], replacement: [{ role: 'user', content: 'x' }] } })),
    };
    let message;
    await wrong.addItems([{ role: 'user', content: 'again' }]).catch((e) => (message = e.message));
    const storedAfterRefusals = (await inner.getItems()).length;
    // The right key reads both items back, and writes; a read that opened an item spares the
    // write its check (one read of the wrapped session for the two calls).
    let reads = 0;
    const counted = afterReads(inner, () => reads++);
    const session = new lib.EncryptedSession(counted, { key: right });
    const shown = (await session.getItems()).map((i) => i.content);
    await session.addItems([{ role: 'user', content: 'three' }]);
    const readsForReadThenWrite = reads;
    // A session of plaintext items (to be encrypted in place later) and an empty one take a key.
    const plain = new lib.IndexedDbSession('enc-wrong-write-plain');
    await plain.addItems([{ role: 'user', content: 'clear' }]);
    await new lib.EncryptedSession(plain, { key: key() }).addItems([{ role: 'user', content: 'sealed' }]);
    await new lib.EncryptedSession(new lib.IndexedDbSession('enc-wrong-write-empty'), { key: key() }).addItems([{ role: 'user', content: 'first' }]);
    // A history no key opens any more is emptied, and then takes the new key.
    await wrong.clearSession();
    await wrong.addItems([{ role: 'user', content: 'fresh start' }]);
    return {
      refused, message, storedAfterRefusals, shown, readsForReadThenWrite,
      after: (await new lib.EncryptedSession(inner, { key: right }).getItems()).length,
      plainCount: (await plain.getItems()).length,
      fresh: (await wrong.getItems()).map((i) => i.content),
    };
  });
  assert.deepEqual(r.refused, { addItems: 'SessionError INVALID_KEY', append: 'SessionError INVALID_KEY', emptySuffix: 'SessionError INVALID_KEY' });
  assert.match(r.message, /^addItems: none of the newest 2 encrypted items of session "enc-wrong-write" decrypts with this key/);
  assert.equal(r.storedAfterRefusals, 2, 'nothing written by the wrong key');
  assert.deepEqual(r.shown, ['one', 'two']);
  assert.equal(r.readsForReadThenWrite, 1);
  assert.equal(r.plainCount, 2);
  assert.equal(r.after, 0, 'cleared by the holder of the wrong key');
  assert.deepEqual(r.fresh, ['fresh start']);
});

test('an item JSON cannot write is refused by name, nothing written; replaceHistory keeps when kept items were added (their TTL)', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    window.clock = 0;
    const inner = new lib.IndexedDbSession('enc-json-ttl');
    const session = new lib.EncryptedSession(inner, { key: key(), ttl: 100, now: () => window.clock });
    let refused;
    try {
      await session.addItems([{ role: 'user', content: 'fine' }, { role: 'user', content: 'big', n: 1n }]);
    } catch (e) {
      refused = { name: e.name, code: e.code, names: e.message.includes('items[1]') };
    }
    const written = (await inner.getItems()).length;
    await session.addItems([{ role: 'user', content: 'old' }]);
    window.clock = 50_000;
    await session.replaceHistory([{ content: 'old', role: 'user' }, { role: 'assistant', content: 'new' }]);
    window.clock = 120_000;
    return { refused, written, shown: (await session.getItems()).map((i) => i.content) };
  });
  assert.deepEqual(r.refused, { name: 'SessionError', code: 'INVALID_ITEM', names: true });
  assert.equal(r.written, 0);
  assert.deepEqual(r.shown, ['new'], 'the kept item expires as if never replaced');
});

test('where IndexedDB is missing, the device-key functions reject with STORAGE_UNAVAILABLE', async () => {
  const page = await context.newPage();
  await page.goto(`${env.url}/tests/pages/interop.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  const r = await page.evaluate(async () => {
    Object.defineProperty(window, 'indexedDB', { value: undefined, configurable: true });
    return [await outcome(() => lib.loadDeviceKey({ dbName: 'nowhere' })), await outcome(() => lib.deviceKey({ dbName: 'nowhere' }))];
  });
  assert.deepEqual(r, ['SessionError STORAGE_UNAVAILABLE', 'SessionError STORAGE_UNAVAILABLE']);
});

test('where even reading indexedDB throws a SecurityError (Firefox with cookies blocked), the key functions, deleteSession and a sync round reject with STORAGE_UNAVAILABLE, not the bare DOMException', async () => {
  const page = await context.newPage();
  await page.goto(`${env.url}/tests/pages/interop.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  const r = await page.evaluate(async () => {
    Object.defineProperty(window, 'indexedDB', {
      configurable: true,
      get() {
        throw new DOMException('The operation is insecure.', 'SecurityError');
      },
    });
    const synced = new lib.SyncedSession(new lib.IndexedDbSession('refused'), new lib.MemorySession('refused-remote'), { syncOnOpen: false });
    const out = [
      await outcome(() => lib.deviceKey({ dbName: 'refused' })),
      await outcome(() => lib.deleteSession('refused')),
      await outcome(() => synced.sync()),
    ];
    synced.close();
    return out;
  });
  assert.deepEqual(r, ['SessionError STORAGE_UNAVAILABLE', 'SessionError STORAGE_UNAVAILABLE', 'SessionError STORAGE_UNAVAILABLE']);
});

test('where the browser refuses to open the device keys’ database (as some privacy modes do), the key functions reject with STORAGE_UNAVAILABLE, as sessions do', async () => {
  const page = await context.newPage();
  await page.goto(`${env.url}/tests/pages/interop.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  const r = await page.evaluate(async () => {
    const open = indexedDB.open.bind(indexedDB);
    const out = [];
    for (const name of ['UnknownError', 'InvalidStateError']) {
      indexedDB.open = (dbName, ...rest) => {
        if (dbName !== 'agent-sessions-keys') return open(dbName, ...rest);
        const request = {};
        setTimeout(() => {
          request.error = new DOMException('refused', name);
          request.onerror?.();
        });
        return request;
      };
      out.push(await outcome(() => lib.deviceKey({ dbName: 'refused' })));
    }
    indexedDB.open = open;
    return out;
  });
  assert.deepEqual(r, ['SessionError STORAGE_UNAVAILABLE', 'SessionError STORAGE_UNAVAILABLE']);
});

test('a device keys’ database that other code opened without its store and keeps open: the key functions reject with DB_BLOCKED after 3 s instead of hanging, and work once it closes', async () => {
  // Storage of its own: the keys' database must not exist yet.
  const own = await env.browser.newContext();
  try {
    const page = await own.newPage();
    await page.goto(`${env.url}/tests/pages/interop.html`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
    const r = await page.evaluate(async () => {
      // Opened without a version, as DevTools or other code may: version 1, no store, and no
      // `versionchange` listener, so the upgrade that adds the store waits for it.
      const other = await new Promise((ok, fail) => {
        const q = indexedDB.open('agent-sessions-keys');
        q.onsuccess = () => ok(q.result);
        q.onerror = () => fail(q.error);
      });
      const within = (call) => Promise.race([outcome(call), new Promise((ok) => setTimeout(() => ok('still waiting after 8 s'), 8000))]);
      const first = await within(() => lib.deviceKey({ dbName: 'blocked' }));
      // While the upgrade given up on still waits: at once.
      const second = await within(() => lib.loadDeviceKey({ dbName: 'blocked' }));
      other.close();
      // Once the upgrade has run (in the background, when the other connection closed).
      let after = null;
      for (let i = 0; i < 50; i++) {
        await new Promise((ok) => setTimeout(ok, 100));
        try {
          after = (await lib.deviceKey({ dbName: 'blocked' })).constructor.name;
          break;
        } catch (e) {
          after = `${e.name} ${e.code}`;
          if (e.code !== 'DB_BLOCKED') break;
        }
      }
      return { first, second, after };
    });
    assert.deepEqual(r, { first: 'SessionError DB_BLOCKED', second: 'SessionError DB_BLOCKED', after: 'CryptoKey' });
  } finally {
    await own.close();
  }
});

test('applyHistoryTransaction over an EncryptedSession: encrypted, checked against the decrypted items, a retry applied once', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const k = key();
    const u1 = { role: 'user', content: 'what is the tide table' };
    const a1 = { role: 'assistant', content: 'a first answer' };
    const a1b = { role: 'assistant', content: 'the answer that replaced it' };
    const call = { type: 'function_call', callId: 'c1', name: 'tides', arguments: '{}' };
    const u2 = { role: 'user', content: 'and tomorrow' };
    const out = {};
    for (const [name, inner] of [
      ['indexeddb', new lib.IndexedDbSession('tx', { dbName: 'enc-tx' })],
      ['memory', new lib.MemorySession('tx')],
    ]) {
      const s = new lib.EncryptedSession(inner, { key: k });
      await s.addItems([u1, a1]);
      const replace = { operationId: 'op1', transaction: { type: 'replace_suffix', expectedSuffix: [a1], replacement: [a1b, call] } };
      await s.applyHistoryTransaction(replace);
      const afterReplace = await s.getItems();
      // The same operation again, once the history has moved on: nothing changes.
      const retry = await code(s.applyHistoryTransaction(structuredClone(replace)));
      const afterRetry = (await s.getItems()).length;
      const conflict = await code(s.applyHistoryTransaction({ ...replace, transaction: { ...replace.transaction, replacement: [a1] } }));
      const stale = await code(s.applyHistoryTransaction({ operationId: 'op2', transaction: { type: 'replace_suffix', expectedSuffix: [a1], replacement: [] } }));
      await s.applyHistoryTransaction({ operationId: 'op3', transaction: { type: 'append_items', items: [u2] } });
      // Another key cannot decrypt the newest item, so it never matches a suffix.
      const wrongKey = await code(
        new lib.EncryptedSession(inner, { key: key() }).applyHistoryTransaction({ operationId: 'op4', transaction: { type: 'replace_suffix', expectedSuffix: [u2], replacement: [] } }),
      );
      const badItem = await code(s.applyHistoryTransaction({ operationId: 'op5', transaction: { type: 'append_items', items: [5] } }));
      const cyclic = { role: 'user' };
      cyclic.self = cyclic;
      const badSuffix = await code(s.applyHistoryTransaction({ operationId: 'op8', transaction: { type: 'replace_suffix', expectedSuffix: [cyclic], replacement: [] } }));
      const badId = await code(s.applyHistoryTransaction({ operationId: ' ', transaction: { type: 'append_items', items: [u2] } }));
      const badFields = await code(s.applyHistoryTransaction({ operationId: 'op6', transaction: { type: 'append_items', items: [u2], extra: 1 } }));
      // A suffix of nothing: appends, as the SDK's MemorySession does.
      await s.applyHistoryTransaction({ operationId: 'op7', transaction: { type: 'replace_suffix', expectedSuffix: [], replacement: [a1] } });
      out[name] = {
        afterReplace,
        retry,
        afterRetry,
        conflict,
        stale,
        wrongKey,
        badItem,
        badSuffix,
        badId,
        badFields,
        items: await s.getItems(),
        stored: (await inner.getItems()).every((i) => i.__enc === 1 && Object.keys(i).length === 3),
      };
    }
    out.clear = clearText(await rawText('enc-tx'));

    // A write from elsewhere between the wrapper's read and its transaction is never replaced.
    const { base, session: racingSession, arm } = racing('race', 'enc-tx');
    const s = new lib.EncryptedSession(racingSession, { key: k });
    await s.addItems([u1, a1]);
    arm();
    out.race = await code(s.applyHistoryTransaction({ operationId: 'r1', transaction: { type: 'replace_suffix', expectedSuffix: [a1], replacement: [a1b] } }));
    out.raceStored = (await base.getItems()).length;

    // Over a session that does not take encrypted items in a transaction, the method is absent.
    out.sdk = typeof new lib.EncryptedSession(new sdk.MemorySession({ sessionId: 's' }), { key: k }).applyHistoryTransaction;
    return out;
  });
  for (const name of ['indexeddb', 'memory']) {
    const o = r[name];
    assert.deepEqual(o.afterReplace, [
      { role: 'user', content: 'what is the tide table' },
      { role: 'assistant', content: 'the answer that replaced it' },
      { type: 'function_call', callId: 'c1', name: 'tides', arguments: '{}' },
    ], name);
    assert.equal(o.retry, 'resolved', name);
    assert.equal(o.afterRetry, 3, name);
    assert.equal(o.conflict, 'SessionError TRANSACTION_CONFLICT', name);
    assert.equal(o.stale, 'SessionError SUFFIX_MISMATCH', name);
    assert.equal(o.wrongKey, 'SessionError SUFFIX_MISMATCH', name);
    assert.equal(o.badItem, 'SessionError INVALID_TRANSACTION', name);
    assert.equal(o.badSuffix, 'SessionError INVALID_TRANSACTION', name);
    assert.equal(o.badId, 'SessionError INVALID_TRANSACTION', name);
    assert.equal(o.badFields, 'SessionError INVALID_TRANSACTION', name);
    assert.deepEqual(
      o.items.map((i) => i.content ?? i.name),
      ['what is the tide table', 'the answer that replaced it', 'tides', 'and tomorrow', 'a first answer'],
      name,
    );
    assert.equal(o.stored, true, name);
  }
  for (const word of ['tide', 'replaced', 'tomorrow', 'first answer']) assert.equal(r.clear.includes(word), false, word);
  assert.equal(r.race, 'SessionError SUFFIX_MISMATCH');
  assert.equal(r.raceStored, 3);
  assert.equal(r.sdk, 'undefined');
});

test('applyHistoryMutations over an EncryptedSession: the call replaced encrypted, the rest kept as stored, a write in between refused', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const k = key();
    let clock = 1_000;
    const now = () => clock;
    const call = (args) => ({ type: 'function_call', callId: 'c1', name: 'weather', arguments: args });
    const out = {};
    for (const [name, inner] of [
      ['indexeddb', new lib.IndexedDbSession('mut', { dbName: 'enc-mut' })],
      ['memory', new lib.MemorySession('mut')],
    ]) {
      clock = 1_000;
      const s = new lib.EncryptedSession(inner, { key: k, now });
      await s.addItems([{ role: 'user', content: 'weather in Oslo' }, call('{"city":"Osol"}')]);
      clock = 2_000;
      await s.addItems([{ type: 'function_call_output', callId: 'c1', output: 'not found' }, call('{"again":true}')]);
      const before = await inner.getItems();
      clock = 9_000;
      await s.applyHistoryMutations({
        mutations: [
          { type: 'something_else', value: 1 },
          { type: 'replace_function_call', callId: 'c1', replacement: call('{"city":"Oslo"}') },
        ],
      });
      const after = await inner.getItems();
      out[name] = {
        items: await s.getItems(),
        // The user message and the output are the very envelopes stored before.
        keptAsStored: JSON.stringify(after[0]) === JSON.stringify(before[0]) && JSON.stringify(after[2]) === JSON.stringify(before[2]),
        replacedEncrypted: after[1].__enc === 1 && JSON.stringify(after[1]) !== JSON.stringify(before[1]),
        nothingToDo: await s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'none', replacement: call('{}') }] }).then(() => 'resolved'),
        badReplacement: await s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: { role: 'user', content: 'x' } }] }).then(() => 'resolved', (e) => e.code),
        badMutations: await s.applyHistoryMutations({ mutations: 'c1' }).then(() => 'resolved', (e) => e.code),
        bytesInReplacement: await s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: { ...call('{}'), providerData: { raw: new Uint8Array(2) } } }] }).then(() => 'resolved', (e) => e.code),
        unchanged: (await s.getItems()).length,
      };
    }
    // The replacement keeps when its call was added: with a TTL that has the old call expire, it
    // expires too.
    const ttl = new lib.EncryptedSession(new lib.MemorySession('ttl'), { key: k, ttl: 5, now });
    clock = 0;
    await ttl.addItems([call('{}')]);
    clock = 4_000;
    await ttl.addItems([{ role: 'user', content: 'later' }]);
    await ttl.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: call('{"x":1}') }] });
    clock = 6_000;
    out.ttl = (await ttl.getItems()).map((i) => i.content ?? i.arguments);
    // An expired call is never matched: the call reads show is the one replaced.
    await ttl.addItems([call('{"live":true}')]);
    await ttl.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: call('{"live":2}') }] });
    out.ttlLive = (await ttl.getItems()).map((i) => i.content ?? i.arguments);

    // A write from elsewhere between the read and the rewrite is never lost.
    const { base, session: racingSession, arm } = racing('mut-race', 'enc-mut');
    const raced = new lib.EncryptedSession(racingSession, { key: k });
    await raced.addItems([call('{}')]);
    arm();
    out.race = await raced.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: call('{"x":1}') }] }).then(() => 'resolved', (e) => e.code);
    out.raceStored = (await base.getItems()).length;
    out.sdk = typeof new lib.EncryptedSession(new sdk.MemorySession({ sessionId: 's' }), { key: k }).applyHistoryMutations;
    out.clear = clearText(await rawText('enc-mut'));
    return out;
  });
  for (const name of ['indexeddb', 'memory']) {
    const o = r[name];
    assert.deepEqual(o.items, [
      { role: 'user', content: 'weather in Oslo' },
      { type: 'function_call', callId: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' },
      { type: 'function_call_output', callId: 'c1', output: 'not found' },
    ], name);
    assert.equal(o.keptAsStored, true, name);
    assert.equal(o.replacedEncrypted, true, name);
    assert.equal(o.nothingToDo, 'resolved', name);
    assert.equal(o.badReplacement, 'INVALID_TRANSACTION', name);
    assert.equal(o.badMutations, 'INVALID_TRANSACTION', name);
    assert.equal(o.bytesInReplacement, 'INVALID_TRANSACTION', `${name}: a replacement holding bytes is refused as the transaction's`);
    assert.equal(o.unchanged, 3, name);
  }
  assert.deepEqual(r.ttl, ['later']);
  assert.deepEqual(r.ttlLive, ['later', '{"live":2}']);
  assert.equal(r.race, 'SUFFIX_MISMATCH');
  assert.equal(r.raceStored, 2);
  assert.equal(r.sdk, 'undefined');
  for (const word of ['Oslo', 'weather', 'not found']) assert.equal(r.clear.includes(word), false, word);
});

test('EncryptedSession transactions: a save that keeps what it saved writes it back as stored; over SyncedSession; before the memory module loads; bad items', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const k = key();
    const q = { role: 'user', content: 'a question' };
    const a = { role: 'assistant', content: 'an answer' };
    const out = {};

    // A runner saves the question, then the question and the answer in place of it: the
    // question's envelope stays as it was stored (not encrypted again, not a rewrite).
    const inner = new lib.IndexedDbSession('save', { dbName: 'enc-save' });
    const s = new lib.EncryptedSession(inner, { key: k });
    await s.applyHistoryTransaction({ operationId: 'turn-1:q', transaction: { type: 'append_items', items: [q] } });
    const [question] = await inner.getItems();
    await s.applyHistoryTransaction({ operationId: 'turn-1:a', transaction: { type: 'replace_suffix', expectedSuffix: [q], replacement: [q, a] } });
    const stored = await inner.getItems();
    const db = await request(indexedDB.open('enc-save'));
    const record = await request(db.transaction('agent_sessions').objectStore('agent_sessions').get('save'));
    db.close();
    out.save = { same: JSON.stringify(stored[0]) === JSON.stringify(question), count: stored.length, rewrites: record.rewrites ?? 0, items: await s.getItems() };
    out.badSuffix = await code(s.applyHistoryTransaction({ operationId: 'bad', transaction: { type: 'replace_suffix', expectedSuffix: [5], replacement: [] } }));
    out.badReplacement = await code(s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: { type: 'function_call', callId: 'c1', n: 1n } }] }));

    // Over a SyncedSession: transactions go to its local session, and rewrites to its
    // replaceHistory.
    const synced = new lib.SyncedSession(new lib.IndexedDbSession('synced', { dbName: 'enc-save' }), new lib.MemorySession('remote'), { syncOnOpen: false });
    const overSynced = new lib.EncryptedSession(synced, { key: k });
    out.synced = { transaction: typeof overSynced.applyHistoryTransaction, mutations: typeof overSynced.applyHistoryMutations };
    await overSynced.applyHistoryTransaction({ operationId: 's1', transaction: { type: 'append_items', items: [q] } });
    out.synced.items = await overSynced.getItems();
    synced.close();

    // The digest a wrapper gives reaches a MemorySession whose module is not loaded yet (its
    // arguments are copied): the same operation with the same digest is a no-op after, and
    // without it (another transaction, for the log) a conflict.
    const digest = Symbol.for('agent-sessions.transactionDigest');
    const fresh = new lib.MemorySession('fresh');
    const op = () => ({ operationId: 'm1', transaction: { type: 'append_items', items: [q] }, [digest]: 'given' });
    const first = await code(fresh.applyHistoryTransaction(op()));
    const again = await code(fresh.applyHistoryTransaction(op()));
    const withoutDigest = await code(fresh.applyHistoryTransaction({ operationId: 'm1', transaction: { type: 'append_items', items: [q] } }));
    out.fresh = { first, again, withoutDigest, count: (await fresh.getItems()).length };
    return out;
  });
  assert.deepEqual(r.save, {
    same: true,
    count: 2,
    rewrites: 0,
    items: [{ role: 'user', content: 'a question' }, { role: 'assistant', content: 'an answer' }],
  });
  assert.equal(r.badSuffix, 'SessionError INVALID_TRANSACTION');
  assert.equal(r.badReplacement, 'SessionError INVALID_TRANSACTION');
  assert.deepEqual(r.synced, { transaction: 'function', mutations: 'function', items: [{ role: 'user', content: 'a question' }] });
  assert.deepEqual(r.fresh, { first: 'resolved', again: 'resolved', withoutDigest: 'SessionError TRANSACTION_CONFLICT', count: 1 });
});

test('EncryptedSession transactions compare with what the object saved last, and read the history when another write came in between', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const k = key();
    const q = { role: 'user', content: 'a question' };
    const a = { role: 'assistant', content: 'an answer' };
    let reads = 0;
    const inner = new lib.IndexedDbSession('known', { dbName: 'enc-known' });
    const s = new lib.EncryptedSession(afterReads(inner, () => (reads += 1)), { key: k });
    const out = {};

    // A turn saved as a runner saves it: the answer's save reads nothing back.
    await s.applyHistoryTransaction({ operationId: 't1:q', transaction: { type: 'append_items', items: [q] } });
    reads = 0;
    await s.applyHistoryTransaction({ operationId: 't1:a', transaction: { type: 'replace_suffix', expectedSuffix: [q], replacement: [q, a] } });
    out.readsForSave = reads;

    // Another object writes the same answer again, encrypted afresh: what this object saved
    // last is no longer what is stored, so the suffix is read and compared, and it matches.
    const other = new lib.EncryptedSession(new lib.IndexedDbSession('known', { dbName: 'enc-known' }), { key: k });
    await other.popItem();
    await other.addItems([a]);
    reads = 0;
    out.afterOther = await code(s.applyHistoryTransaction({ operationId: 't2:x', transaction: { type: 'replace_suffix', expectedSuffix: [a], replacement: [a, q] } }));
    out.readsAfterOther = reads;

    // Another object's write that changes what the history ends with: refused, nothing written.
    await other.addItems([{ role: 'user', content: 'from elsewhere' }]);
    out.changed = await code(s.applyHistoryTransaction({ operationId: 't3:x', transaction: { type: 'replace_suffix', expectedSuffix: [q], replacement: [] } }));
    out.items = (await s.getItems()).map((i) => i.content);

    // The same operation retried after it was applied: a no-op, on either path.
    out.retry = await code(s.applyHistoryTransaction({ operationId: 't2:x', transaction: { type: 'replace_suffix', expectedSuffix: [a], replacement: [a, q] } }));
    out.itemsAfterRetry = (await s.getItems()).length;
    return out;
  });
  assert.equal(r.readsForSave, 0);
  assert.equal(r.afterOther, 'resolved');
  assert.equal(r.readsAfterOther, 1);
  assert.equal(r.changed, 'SessionError SUFFIX_MISMATCH');
  assert.deepEqual(r.items, ['a question', 'an answer', 'a question', 'from elsewhere']);
  assert.equal(r.retry, 'resolved');
  assert.equal(r.itemsAfterRetry, 4);
});

test('items are copied when addItems or replaceHistory is called, as the wrapped session copies them: a caller reusing its array changes nothing stored', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-copies-${Math.random()}`;
    const s = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: key() });
    const batch = [{ role: 'user', content: 'first question' }];
    // The second call waits for the first: its array is changed before its turn comes.
    const first = s.addItems(batch);
    batch[0] = { role: 'user', content: 'second question' };
    const second = s.addItems(batch);
    batch.length = 0;
    await Promise.all([first, second]);
    const added = (await s.getItems()).map((i) => i.content);
    const replacement = [{ role: 'user', content: 'the summary' }];
    const replacing = s.replaceHistory(replacement);
    replacement[0].content = 'changed after the call';
    await replacing;
    const replaced = (await s.getItems()).map((i) => i.content);
    // A history transaction's items too, and its expected suffix.
    const items = [{ role: 'user', content: 'third question' }];
    const pending = s.addItems([{ role: 'assistant', content: 'before it' }]);
    const appended = s.applyHistoryTransaction({ operationId: 'op-1', transaction: { type: 'append_items', items } });
    items[0].content = 'changed after the call';
    await Promise.all([pending, appended]);
    const suffix = [{ role: 'user', content: 'third question' }];
    const answer = [{ role: 'user', content: 'third question' }, { role: 'assistant', content: 'third answer' }];
    const replacing2 = s.applyHistoryTransaction({ operationId: 'op-2', transaction: { type: 'replace_suffix', expectedSuffix: suffix, replacement: answer } });
    suffix[0].content = 'changed';
    answer[1].content = 'changed after the call';
    await replacing2;
    return { added, replaced, transacted: (await s.getItems()).map((i) => i.content) };
  });
  assert.deepEqual(r.added, ['first question', 'second question']);
  assert.deepEqual(r.replaced, ['the summary']);
  assert.deepEqual(r.transacted, ['the summary', 'before it', 'third question', 'third answer']);
});

test('a history encrypted in place, or given a new key, through replaceHistory leaves no copy in the archive in clear or under the old key; one under the same key is archived', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-in-place-${Math.random()}`;
    const plain = new lib.IndexedDbSession('chat', { dbName });
    await plain.addItems([{ role: 'user', content: 'a secret plan' }, { role: 'assistant', content: 'noted' }]);
    const oldKey = key();
    const sealed = new lib.EncryptedSession(plain, { key: oldKey });
    await sealed.replaceHistory(await plain.getItems());
    const archivedInClear = (await plain.getArchivedItems()).length;
    const afterSealing = clearText(JSON.stringify(JSON.parse(await rawText(dbName)).agent_archive)).includes('secret plan');
    // A new key: read with the old one, replaced through the new one.
    const renewed = new lib.EncryptedSession(plain, { key: key() });
    await renewed.replaceHistory(await sealed.getItems());
    const underOldKey = (await sealed.getArchivedItems()).length;
    // The same key: a replacement (a compaction's, say) archives what it replaced.
    await renewed.replaceHistory([{ role: 'user', content: 'summary' }]);
    return { archivedInClear, afterSealing, underOldKey, archived: (await renewed.getArchivedItems()).map((i) => i.content), items: (await renewed.getItems()).map((i) => i.content) };
  });
  assert.equal(r.archivedInClear, 0, 'the plaintext items were not archived');
  assert.equal(r.afterSealing, false, 'no plaintext in the archive store');
  assert.equal(r.underOldKey, 0, 'nothing left under the old key');
  assert.deepEqual(r.archived, ['a secret plan', 'noted']);
  assert.deepEqual(r.items, ['summary']);
});

test('changeKey gives the history a new key, each item keeping when it was added; a wrong old key (a mistyped passphrase) is refused with nothing changed, where a read and replaceHistory would have emptied the history', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-change-key-${Math.random()}`;
    const inner = new lib.IndexedDbSession('chat', { dbName, settings: { limit: 2 } });
    let clock = 1_000_000;
    const now = () => clock;
    const oldKey = key();
    const session = new lib.EncryptedSession(inner, { key: oldKey, ttl: 60, now });
    await session.addItems([{ role: 'user', content: 'q1' }]);
    clock += 30_000;
    await session.addItems([{ role: 'assistant', content: 'a1' }]);
    // An item in clear (a tab without the key wrote it) is sealed too.
    await inner.addItems([{ role: 'user', content: 'in clear' }]);
    const contents = async (s) => (await s.getItems(100)).map((i) => i.content);
    // A mistyped old passphrase opens nothing: refused, nothing changed.
    const wrongOld = new lib.EncryptedSession(inner, { key: key(), ttl: 60, now });
    const newKey = key();
    const mistyped = await code(wrongOld.changeKey(newKey));
    const afterMistyped = await contents(session);
    const badKey = await code(session.changeKey('not a key'));
    // While a run holds the session (its lock, in any tab), refused: the run would save its
    // turn under the old key after the change.
    const lockName = lib.sessionLockName(dbName, 'chat');
    let release;
    await new Promise((taken) => navigator.locks.request(lockName, () => (taken(), new Promise((ok) => (release = ok)))));
    const busy = await code(session.changeKey(newKey));
    const afterBusy = await contents(session);
    release();
    await navigator.locks.request(lockName, () => {});
    await session.changeKey(newKey);
    const underNew = new lib.EncryptedSession(inner, { key: newKey, ttl: 60, now });
    const underOld = new lib.EncryptedSession(inner, { key: oldKey, ttl: 60, now });
    const read = { changed: await contents(session), fresh: await contents(underNew), old: await contents(underOld), oldSkipped: underOld.lastSkipped };
    // This object writes under the new key.
    await session.addItems([{ role: 'assistant', content: 'a2' }]);
    const afterWrite = await contents(underNew);
    const plainLeft = clearText(JSON.stringify(JSON.parse(await rawText(dbName)).agent_messages)).includes('in clear');
    // The first item expires when it would have: 60 s after it was added, not after the change.
    clock += 31_000;
    return { mistyped, afterMistyped, badKey, busy, afterBusy, read, afterWrite, plainLeft, expired: await contents(underNew) };
  });
  assert.equal(r.mistyped, 'SessionError INVALID_KEY');
  assert.deepEqual(r.afterMistyped, ['q1', 'a1'], 'the history is as it was (the item in clear is not read through the key)');
  assert.equal(r.badKey, 'SessionError INVALID_KEY');
  assert.equal(r.busy, 'SessionError SESSION_BUSY');
  assert.deepEqual(r.afterBusy, ['q1', 'a1']);
  assert.deepEqual(r.read, { changed: ['q1', 'a1', 'in clear'], fresh: ['q1', 'a1', 'in clear'], old: [], oldSkipped: 3 });
  assert.deepEqual(r.afterWrite, ['q1', 'a1', 'in clear', 'a2']);
  assert.equal(r.plainLeft, false, 'no item is left in clear');
  assert.deepEqual(r.expired, ['a1', 'in clear', 'a2']);
});

test('an object that read before another tab’s changeKey refuses its next write under the old key once the change is heard (a run of the SDK that read, then saved after the change, wrote its turn under the old key, and every later one)', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-change-heard-${Math.random()}`;
    const oldKey = key();
    const newKey = key();
    // Two objects over the chat, each over its own wrapped session (as two tabs).
    // (Copies: a key given as bytes is wiped when the object leaves it.)
    const here = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: oldKey.slice() });
    const there = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: oldKey.slice() });
    await here.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
    // This object reads (the SDK's run before it asks its model)...
    const before = (await here.getItems()).map((i) => i.content);
    // ...the other changes the key meanwhile...
    const heard = new Promise((ok) => {
      const stop = here.subscribe((e) => e.type === 'replace' && (stop(), ok()));
    });
    await there.changeKey(newKey.slice());
    await heard;
    // ...and this one saves its turn.
    const saved = await here.addItems([{ role: 'user', content: 'q2' }]).then(() => 'saved', (e) => e.code);
    const underNew = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: newKey.slice() });
    const read = (await underNew.getItems()).map((i) => i.content);
    // A write in the wrapped session since (a clear, here) does not refuse a key that fits: the
    // object under the new key writes on after it.
    const cleared = new Promise((ok) => {
      const stop = underNew.subscribe((e) => e.type === 'clear' && (stop(), ok()));
    });
    await there.clearSession();
    await cleared;
    await underNew.addItems([{ role: 'user', content: 'q3' }]);
    // A change heard while an object's first read is under way (its items read, not yet
    // decrypted): that read does not make the key taken as fitting.
    const other = `${dbName}-during`;
    const real = new lib.IndexedDbSession('chat', { dbName: other });
    // A session passing its calls on to `inner`, but those given in `own`.
    const over = (inner, own) => ({
      getSessionId: () => inner.getSessionId(),
      getItems: (n) => inner.getItems(n),
      addItems: (items) => inner.addItems(items),
      popItem: () => inner.popItem(),
      clearSession: () => inner.clearSession(),
      ...own,
    });
    let during = null;
    const slow = over(real, {
      getItems: async (n) => {
        const items = await real.getItems(n);
        if (during) await during();
        return items;
      },
      subscribe: (listener) => real.subscribe(listener),
    });
    const writer = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName: other }), { key: oldKey.slice() });
    await writer.addItems([{ role: 'user', content: 'q1' }]);
    const reader = new lib.EncryptedSession(slow, { key: oldKey.slice() });
    during = async () => {
      during = null;
      const changed = new Promise((ok) => {
        const stop = real.subscribe((e) => e.type === 'replace' && (stop(), ok()));
      });
      await writer.changeKey(newKey.slice());
      await changed;
    };
    const readDuring = (await reader.getItems()).map((i) => i.content);
    const savedAfter = await reader.addItems([{ role: 'assistant', content: 'a1' }]).then(() => 'saved', (e) => e.code);
    // Over a session that tells a sync round's pull of another device's change (a
    // SyncedSession's `replace` with change 'sync'): heard as a rewrite too.
    const pulledDb = `${dbName}-pulled`;
    const local = new lib.IndexedDbSession('chat', { dbName: pulledDb });
    const told = new Set();
    const syncing = over(local, { subscribe: (listener) => (told.add(listener), () => told.delete(listener)) });
    const device = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName: pulledDb }), { key: oldKey.slice() });
    await device.addItems([{ role: 'user', content: 'q1' }]);
    const onSync = new lib.EncryptedSession(syncing, { key: oldKey.slice() });
    await onSync.getItems();
    await device.changeKey(newKey.slice());
    for (const listener of told) listener({ type: 'replace', change: 'sync', sessionId: 'chat' });
    const savedAfterSync = await onSync.addItems([{ role: 'assistant', content: 'a1' }]).then(() => 'saved', (e) => e.code);
    // Listened to once, from the first read until close(), whatever the reads found: a session
    // whose subscribe gives no removal is not asked again at each read (its listeners piled up).
    const counted = async (removal) => {
      const calls = { subscribe: 0, removed: 0 };
      const inner = new lib.IndexedDbSession('chat', { dbName: `${dbName}-counted-${removal}` });
      const listeners = new Set();
      const counting = over(inner, {
        subscribe: (listener) => {
          calls.subscribe++;
          listeners.add(listener);
          return removal ? () => (calls.removed++, listeners.delete(listener)) : undefined;
        },
      });
      const writer = new lib.EncryptedSession(inner, { key: newKey.slice() });
      await writer.addItems([{ role: 'user', content: 'q' }]);
      const wrong = new lib.EncryptedSession(counting, { key: oldKey.slice() });
      await wrong.getItems();
      for (const listener of [...listeners]) listener({ type: 'replace', change: 'history', sessionId: 'chat' });
      await wrong.getItems();
      await wrong.addItems([{ role: 'user', content: 'no' }]).catch(() => {});
      await wrong.getItems();
      await wrong.close();
      return calls;
    };
    const once = { given: await counted(true), none: await counted(false) };
    return { before, saved, read, skipped: underNew.lastSkipped, after: (await there.getItems()).map((i) => i.content), readDuring, savedAfter, savedAfterSync, once };
  });
  assert.deepEqual(r.before, ['q1', 'a1']);
  assert.equal(r.saved, 'INVALID_KEY', 'refused: nothing written under the old key');
  assert.deepEqual(r.read, ['q1', 'a1']);
  assert.equal(r.skipped, 0, 'no item under the old key');
  assert.deepEqual(r.after, ['q3']);
  assert.deepEqual(r.readDuring, ['q1'], 'read before the change');
  assert.equal(r.savedAfter, 'INVALID_KEY', 'the change heard during the read: the write checks the key');
  assert.equal(r.savedAfterSync, 'INVALID_KEY', 'a sync round’s pull is a rewrite');
  assert.deepEqual(r.once, { given: { subscribe: 1, removed: 1 }, none: { subscribe: 1, removed: 0 } });
});

test('changeKey keeps as it is an item in clear that JSON cannot write (bytes, written before the chat was encrypted), where it failed every change; the others take the new key', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const inner = new lib.IndexedDbSession('chat', { dbName: `enc-change-key-bytes-${Math.random()}` });
    await inner.addItems([{ type: 'function_call_result', callId: 'x', name: 'shot', output: { type: 'image', data: new Uint8Array([1, 2]) } }, { role: 'user', content: 'in clear' }]);
    const session = new lib.EncryptedSession(inner, { key: key() });
    await session.addItems([{ role: 'user', content: 'q1' }]);
    const newKey = key();
    const changed = await code(session.changeKey(newKey));
    const fresh = new lib.EncryptedSession(inner, { key: newKey });
    const items = (await fresh.getItems()).map((i) => i.content);
    const stored = await inner.getItems();
    return { changed, items, skipped: fresh.lastSkipped, kept: [stored[0].__enc, ...stored[0].output.data], sealed: stored.slice(1).map((s) => s.__enc) };
  });
  assert.equal(r.changed, 'resolved');
  assert.deepEqual(r.items, ['in clear', 'q1'], 'the item in clear JSON can write is sealed');
  assert.equal(r.skipped, 1, 'the bytes are still not read through the key');
  assert.deepEqual(r.kept, [undefined, 1, 2], 'and stored as they were, in clear');
  assert.deepEqual(r.sealed, [1, 1]);
});

test('a key that opens only the archive (the history since given a new key) writes nothing: the history stays readable with its key', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-archive-key-${Math.random()}`;
    const inner = new lib.IndexedDbSession('chat', { dbName });
    const oldKey = key();
    const old = new lib.EncryptedSession(inner, { key: oldKey });
    await old.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
    // A compaction under the old key archives what it replaced, under that key.
    await old.replaceHistory([{ role: 'user', content: 'summary' }]);
    // The history given a new key; its archive stays as it was written.
    const newKey = key();
    await new lib.EncryptedSession(inner, { key: newKey }).replaceHistory(await old.getItems());
    // An object with the old key (an old passphrase) reads the archive, then writes.
    const stale = new lib.EncryptedSession(inner, { key: oldKey });
    const archived = (await stale.getArchivedItems()).map((i) => i.content);
    const write = await stale.addItems([{ role: 'user', content: 'under the old key' }]).then(() => 'written', (e) => e.code);
    return { archived, write, items: (await new lib.EncryptedSession(inner, { key: newKey }).getItems()).map((i) => i.content) };
  });
  assert.deepEqual(r.archived, ['q1', 'a1']);
  assert.equal(r.write, 'INVALID_KEY');
  assert.deepEqual(r.items, ['summary']);
});

test('an object open while another gives the history a new key refuses to write after its next read: its turn is not left under the old key', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-rekeyed-${Math.random()}`;
    const inner = new lib.IndexedDbSession('chat', { dbName });
    const oldKey = key();
    const newKey = key();
    // Open in one tab: it has written, so its key was seen to fit.
    const old = new lib.EncryptedSession(inner, { key: oldKey });
    await old.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
    // Another tab gives the history a new key.
    const renewed = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: newKey });
    await renewed.replaceHistory(await old.getItems());
    // The first tab reads (as a run does before it saves), then writes its turn.
    const read = await old.getItems();
    const skipped = old.lastSkipped;
    const write = await code(old.addItems([{ role: 'user', content: 'q2' }]));
    const items = (await new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: newKey }).getItems()).map((i) => i.content);
    return { read, skipped, write, items };
  });
  assert.deepEqual(r.read, []);
  assert.equal(r.skipped, 2);
  assert.equal(r.write, 'SessionError INVALID_KEY');
  assert.deepEqual(r.items, ['q1', 'a1'], 'the history stays whole under its new key');
});

test('replaceHistory with expectedItems under a wrong key (whose read was empty) changes nothing; items the read left out are archived, not deleted', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-replace-hidden-${Math.random()}`;
    const inner = new lib.IndexedDbSession('chat', { dbName });
    const right = key();
    await new lib.EncryptedSession(inner, { key: right }).addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
    // A mistyped passphrase: the read is empty, and an edit made from it expects that.
    const wrong = new lib.EncryptedSession(inner, { key: key() });
    const read = await wrong.getItems();
    const replaced = await code(wrong.replaceHistory([...read, { role: 'user', content: 'new' }], { expectedItems: read }));
    const kept = (await new lib.EncryptedSession(inner, { key: right }).getItems()).map((i) => i.content);
    // A tab that writes in clear (it does not know of the encryption yet) adds an item this
    // key cannot open; a replacement expecting what the key reads archives it.
    await new lib.IndexedDbSession('chat', { dbName }).addItems([{ role: 'user', content: 'written in clear' }]);
    const session = new lib.EncryptedSession(inner, { key: right });
    const shown = await session.getItems();
    await session.replaceHistory([{ role: 'user', content: 'summary' }], { expectedItems: shown });
    const archived = (await inner.getArchivedItems()).filter((i) => i.__enc !== 1);
    return { read, replaced, kept, items: (await session.getItems()).map((i) => i.content), archived };
  });
  assert.deepEqual(r.read, []);
  assert.equal(r.replaced, 'SessionError INVALID_KEY');
  assert.deepEqual(r.kept, ['q', 'a'], 'the history is whole');
  assert.deepEqual(r.items, ['summary']);
  assert.deepEqual(r.archived, [{ role: 'user', content: 'written in clear' }], 'the item the read left out is kept in the archive');
});

test('replaceHistory with archive: false (as a CompactionSession made with it replaces) is refused where the items expected leave out items the key does not open: they would be deleted unseen', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-replace-hidden-drop-${Math.random()}`;
    const inner = new lib.IndexedDbSession('chat', { dbName });
    // Written before the chat took a key.
    await inner.addItems([{ role: 'user', content: 'plain q' }, { role: 'assistant', content: 'plain a' }]);
    const session = new lib.EncryptedSession(inner, { key: key() });
    await session.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
    const shown = await session.getItems();
    const refused = await session.replaceHistory(shown.slice(-1), { archive: false, expectedItems: shown }).then(
      () => 'resolved',
      (e) => `${e.code}: ${e.message}`,
    );
    const stored = (await inner.getItems()).map((i) => i.content ?? 'sealed');
    // Expecting the whole history (none left out), archive: false replaces as asked.
    await inner.clearSession();
    await session.addItems([{ role: 'user', content: 'only' }]);
    const all = await session.getItems();
    await session.replaceHistory([{ role: 'user', content: 'new' }], { archive: false, expectedItems: all });
    return { refused, stored, after: (await session.getItems()).map((i) => i.content), archived: (await inner.getArchivedItems()).length };
  });
  assert.match(r.refused, /^INVALID_OPTIONS: replaceHistory: options\.expectedItems leave out 2 items .* archive: false would delete unseen; nothing changed/);
  assert.deepEqual(r.stored, ['plain q', 'plain a', 'sealed', 'sealed'], 'nothing changed');
  assert.deepEqual(r.after, ['new']);
  assert.equal(r.archived, 0);
});

test('changeKey on a session never written (or deleted) writes nothing: no empty chat appears in the user’s list; the new key is used after it', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-changekey-empty-${Math.random()}`;
    const inner = new lib.IndexedDbSession('never-written', { dbName, userId: 'ann' });
    const session = new lib.EncryptedSession(inner, { key: key() });
    const next = key();
    await session.changeKey(next.slice());
    const listed = (await lib.listSessions({ dbName, userId: 'ann' })).map((s) => s.sessionId);
    await session.addItems([{ role: 'user', content: 'hello' }]);
    const read = (await new lib.EncryptedSession(inner, { key: next }).getItems()).map((i) => i.content);
    return { listed, read };
  });
  assert.deepEqual(r.listed, [], 'no record made');
  assert.deepEqual(r.read, ['hello'], 'written under the new key');
});

test('storeRunUsage passes through to the wrapped session (what our runner stores a failed run’s usage with), in call order; absent over a session without it', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-usage-${Math.random()}`;
    const inner = new lib.IndexedDbSession('chat', { dbName });
    const session = new lib.EncryptedSession(inner, { key: key() });
    session.addItems([{ role: 'user', content: 'q' }]);
    // Not awaited: it waits for the add before it (an empty history has no turn to add it to).
    await session.storeRunUsage({ requests: 1, inputTokens: 10, outputTokens: 2, totalTokens: 12 });
    const bad = await code(session.storeRunUsage({ input_tokens: 3 }));
    const compacted = new lib.CompactionSession(session, { runner: new lib.Runner({ baseUrl: 'http://model.invalid/v1' }), agent: new lib.Agent({ name: 'S', model: 'm' }) });
    await compacted.storeRunUsage({ requests: 1 });
    const usage = await inner.getSessionUsage();
    return {
      usage: [usage.requests, usage.inputTokens, usage.totalTokens],
      bad,
      overSdk: typeof new lib.EncryptedSession(new sdk.MemorySession(), { key: key() }).storeRunUsage,
    };
  });
  assert.deepEqual(r.usage, [2, 10, 12]);
  assert.equal(r.bad, 'SessionError INVALID_USAGE');
  assert.equal(r.overSdk, 'undefined');
});

test('close() called twice: the second resolves, as the first, once every earlier call is done', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-close-twice-${Math.random()}`;
    const session = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: key() });
    let written = false;
    session.addItems([{ role: 'user', content: 'q' }]).then(() => (written = true));
    const first = session.close();
    await session.close();
    const afterSecond = written;
    await first;
    return { afterSecond };
  });
  assert.equal(r.afterSecond, true);
});

test('device-key options that are not an object (a user id given alone) are refused, never taken for the key of the sessions without a user', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-key-options-${Math.random()}`;
    const outcome = (call) => call().then(() => 'resolved', (e) => `${e.name} ${e.code}`);
    return {
      alone: await outcome(() => lib.deviceKey('ann')),
      load: await outcome(() => lib.loadDeviceKey('ann')),
      forget: await outcome(() => lib.forgetDeviceKey(['ann'])),
      fine: await outcome(() => lib.deviceKey({ dbName, userId: 'ann' })),
      none: await outcome(() => lib.deviceKey()),
    };
  });
  assert.deepEqual(r, {
    alone: 'SessionError INVALID_OPTIONS',
    load: 'SessionError INVALID_OPTIONS',
    forget: 'SessionError INVALID_OPTIONS',
    fine: 'resolved',
    none: 'resolved',
  });
});

test('replaceHistory over an EncryptedSession refuses expectedItems JSON cannot write with INVALID_OPTIONS, nothing changed', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const s = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName: `enc-expected-${Math.random()}` }), { key: key() });
    await s.addItems([{ role: 'user', content: 'q' }]);
    const cyclic = { role: 'user', content: 'q' };
    cyclic.self = cyclic;
    const refused = await s.replaceHistory([{ role: 'user', content: 'new' }], { expectedItems: [cyclic] }).then(() => 'replaced', (e) => `${e.name} ${e.code}`);
    return { refused, items: (await s.getItems()).map((i) => i.content) };
  });
  assert.equal(r.refused, 'SessionError INVALID_OPTIONS');
  assert.deepEqual(r.items, ['q']);
});

test('applyHistoryMutations over an EncryptedSession copies its mutations at the call', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-mutation-copy-${Math.random()}`;
    const s = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName }), { key: key() });
    const call = (args) => ({ type: 'function_call', callId: 'c1', name: 'weather', arguments: args, status: 'completed' });
    await s.addItems([{ role: 'user', content: 'weather?' }, call('{"city":"Lisbn"}')]);
    const mutation = { type: 'replace_function_call', callId: 'c1', replacement: call('{"city":"Lisbon"}') };
    const pending = s.applyHistoryMutations({ mutations: [mutation] });
    mutation.replacement.arguments = '{"city":"changed after the call"}';
    await pending;
    return (await s.getItems())[1].arguments;
  });
  assert.equal(r, '{"city":"Lisbon"}');
});

test('a history encrypted in place, or given a new key, with expectedItems: replaced when nobody wrote since the read, refused with nothing changed after another tab’s write', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-in-place-expected-${Math.random()}`;
    const plain = new lib.IndexedDbSession('chat', { dbName });
    const tab = new lib.IndexedDbSession('chat', { dbName });
    await plain.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }]);
    const k = key();
    const sealing = new lib.EncryptedSession(plain, { key: k });
    // Read in clear; another tab, not knowing of the lock yet, writes in clear before the seal.
    let read = await plain.getItems();
    await tab.addItems([{ role: 'user', content: 'written meanwhile' }]);
    const raced = await code(sealing.replaceHistory(read, { archive: false, expectedItems: read }));
    const afterRace = (await plain.getItems()).map((i) => i.content ?? 'sealed');
    // Read again: sealed.
    read = await plain.getItems();
    const sealed = await code(sealing.replaceHistory(read, { archive: false, expectedItems: read }));
    const stored = await plain.getItems();
    // A new key: the history read with the old one, checked as stored (what the new key cannot open).
    const renewing = new lib.EncryptedSession(plain, { key: key() });
    const items = await sealing.getItems();
    await sealing.addItems([{ role: 'assistant', content: 'added meanwhile' }]);
    const rekeyRaced = await code(renewing.replaceHistory(items, { archive: false, expectedItems: stored }));
    const now = await plain.getItems();
    const rekeyed = await code(renewing.replaceHistory(await sealing.getItems(), { archive: false, expectedItems: now }));
    return {
      raced,
      afterRace,
      sealed,
      allSealed: stored.every((i) => i.__enc === 1),
      rekeyRaced,
      rekeyed,
      renewed: (await renewing.getItems()).map((i) => i.content),
      oldKeyReads: (await sealing.getItems()).length,
    };
  });
  assert.equal(r.raced, 'SessionError SUFFIX_MISMATCH', 'the write in between is never replaced');
  assert.deepEqual(r.afterRace, ['q1', 'a1', 'written meanwhile'], 'nothing changed');
  assert.equal(r.sealed, 'resolved');
  assert.equal(r.allSealed, true);
  assert.equal(r.rekeyRaced, 'SessionError SUFFIX_MISMATCH');
  assert.equal(r.rekeyed, 'resolved');
  assert.deepEqual(r.renewed, ['q1', 'a1', 'written meanwhile', 'added meanwhile']);
  assert.equal(r.oldKeyReads, 0);
});

test('storeDeviceKey refuses an HKDF key that cannot derive keys and keeps the stored one', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const options = { dbName: `enc-store-usage-${Math.random()}`, userId: 'ann' };
    const kept = await lib.deviceKey(options);
    const inner = new lib.IndexedDbSession('chat', options);
    await new lib.EncryptedSession(inner, { key: kept }).addItems([{ role: 'user', content: 'mine' }]);
    const bitsOnly = await crypto.subtle.importKey('raw', key(), 'HKDF', false, ['deriveBits']);
    const refused = await code(lib.storeDeviceKey(bitsOnly, options));
    const loaded = await lib.loadDeviceKey(options);
    return { refused, items: (await new lib.EncryptedSession(inner, { key: loaded }).getItems()).map((i) => i.content) };
  });
  assert.equal(r.refused, 'SessionError INVALID_KEY');
  assert.deepEqual(r.items, ['mine'], 'the device key that was there still opens the session');
});

test('close() lets earlier calls finish, then forgets the key: later calls reject with CLOSED, over any session', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const inner = new sdk.MemorySession({ sessionId: 's' });
    const s = new lib.EncryptedSession(inner, { key: key() });
    const added = s.addItems([{ role: 'user', content: 'before close' }]);
    const closed = s.close();
    const after = await code(s.getItems());
    const write = await code(s.addItems([{ role: 'user', content: 'after close' }]));
    const message = await s.getItems().catch((e) => e.message);
    return {
      message,
      added: await code(added),
      closed: await code(closed),
      again: await code(s.close()),
      after,
      write,
      stored: (await inner.getItems()).length,
    };
  });
  assert.match(r.message, /^the EncryptedSession of session "s" was closed/, 'the message names the session');
  delete r.message;
  assert.deepEqual(r, { added: 'resolved', closed: 'resolved', again: 'resolved', after: 'SessionError CLOSED', write: 'SessionError CLOSED', stored: 1 });
});

test('EncryptedSession: the wrapped session’s settings show through; a wrapped session without an id is INVALID_SESSION; a failed add of purgeExpired puts the history back', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const windowed = new lib.EncryptedSession(new lib.MemorySession('w', { settings: { turns: 3 } }), { key: key() });
    let now = 0;
    const inner = new sdk.MemorySession({ sessionId: 'p' });
    let failAdd = false;
    const failing = new Proxy(inner, {
      get(target, name) {
        if (name === 'addItems') {
          return async (items) => {
            if (failAdd) {
              failAdd = false;
              await target.addItems(items.slice(0, 1)); // part of it stored, then the failure
              throw new Error('offline');
            }
            return target.addItems(items);
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const s = new lib.EncryptedSession(failing, { key: key(), ttl: 10, now: () => now });
    await s.addItems([{ role: 'user', content: 'old' }]);
    now = 20_000;
    await s.addItems([{ role: 'user', content: 'new 1' }, { role: 'assistant', content: 'new 2' }]);
    now = 25_000;
    failAdd = true;
    const purge = await s.purgeExpired().then(String, (e) => e.message);
    const kept = (await inner.getItems()).length;
    const noId = { getItems: async () => [], addItems: async () => {}, popItem: async () => undefined, clearSession: async () => {} };
    return { settings: windowed.settings, purge, kept, noId: await code(new lib.EncryptedSession(noId, { key: key() }).getSessionId()) };
  });
  assert.deepEqual(r.settings, { turns: 3 });
  assert.equal(r.purge, 'offline');
  assert.equal(r.kept, 3, 'every item is back, the expired one too, as before the purge');
  assert.equal(r.noId, 'SessionError INVALID_SESSION');
});

test('a summary replaceHistoryWithCompaction brings takes the time of the oldest item it replaces (nothing outlives its TTL), an answer after it is new; it archives, is heard as a compaction and refuses a wrong key; getItems(null) over the SDK’s MemorySession reads everything', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    window.clock = 0;
    const inner = new lib.IndexedDbSession('enc-ttl-summary', { dbName: `enc-ttl-summary-${Math.random()}` });
    const session = new lib.EncryptedSession(inner, { key: key(), ttl: 100, now: () => window.clock });
    await session.addItems([{ role: 'user', content: 'day one' }]);
    window.clock = 50_000;
    await session.addItems([{ role: 'user', content: 'day two' }]);
    window.clock = 60_000;
    const events = [];
    inner.subscribe((e) => events.push(`${e.type}:${e.change}`));
    // A compaction as the SDK's run() stores it: the first turn summarised (a server's
    // compaction item), the second kept, and the answer the model gave after the compaction.
    await session.replaceHistoryWithCompaction([{ type: 'compaction', encrypted_content: 'day one' }, { role: 'user', content: 'day two' }, { role: 'assistant', content: 'fresh answer' }]);
    const text = (items) => items.map((i) => i.content ?? i.type);
    const before = text(await session.getItems());
    const archivedBefore = text(await session.getArchivedItems());
    window.clock = 120_000;
    const after = text(await session.getItems());
    const archived = text(await session.getArchivedItems());
    // Under a key that opens none of the history (a mistyped passphrase's, which reads it empty),
    // the SDK's replacement writes nothing.
    const wrong = await code(new lib.EncryptedSession(inner, { key: key(), now: () => window.clock }).replaceHistoryWithCompaction([{ role: 'user', content: 'x' }]));
    await new Promise((ok) => setTimeout(ok, 50));
    // Over a session without replaceHistory there is none of either.
    const overSdk = new lib.EncryptedSession(new sdk.MemorySession({ sessionId: 's' }), { key: key() });
    await overSdk.addItems([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }]);
    return {
      before, after, archived, archivedBefore, wrong, events, stored: text(await session.getItems()),
      sdkMethods: [typeof overSdk.replaceHistory, typeof overSdk.replaceHistoryWithCompaction],
      sdkAll: (await overSdk.getItems(null)).map((i) => i.content),
    };
  });
  assert.deepEqual(r.before, ['compaction', 'day two', 'fresh answer']);
  assert.equal(r.archivedBefore[0], 'day one', 'the replaced turn is archived');
  assert.deepEqual(r.after, ['day two', 'fresh answer'], 'the summary expires with the first day it was made from; the answer after it is new');
  assert.ok(!r.archived.includes('day one'), 'the archive’s copy expired with it (added at 0)');
  assert.equal(r.wrong, 'SessionError INVALID_KEY');
  assert.deepEqual(r.stored, ['day two', 'fresh answer'], 'nothing written under the wrong key');
  assert.deepEqual(r.events.filter((e) => e.startsWith('replace')), ['replace:compaction'], 'heard as a compaction, as over the session itself');
  assert.deepEqual(r.sdkMethods, ['undefined', 'undefined']);
  assert.deepEqual(r.sdkAll, ['a', 'b'], 'null is no limit, as our sessions read it (the SDK reads null as 0)');
});

test('the key check looks past the newest items when they are all in clear; onUndecryptable says what was read, and a promise it returns that rejects is reported', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const dbName = `enc-check-past-${Math.random()}`;
    const inner = new lib.IndexedDbSession('chat', { dbName });
    const right = key();
    await new lib.EncryptedSession(inner, { key: right }).addItems([{ role: 'user', content: 'sealed' }]);
    // Written in clear by something without the key: more than the check reads at once.
    await inner.addItems(Array.from({ length: 9 }, (_, i) => ({ role: 'user', content: `clear ${i}` })));
    const wrong = await code(new lib.EncryptedSession(inner, { key: key() }).addItems([{ role: 'user', content: 'x' }]));
    const ok = await code(new lib.EncryptedSession(inner, { key: right }).addItems([{ role: 'user', content: 'y' }]));
    // A history given a new key keeps its archive under the old one.
    const other = new lib.IndexedDbSession('archived', { dbName });
    const old = new lib.EncryptedSession(other, { key: right });
    await old.addItems([{ role: 'user', content: 'q' }]);
    await old.replaceHistory([{ role: 'user', content: 'summary' }]);
    const calls = [];
    const reported = [];
    window.addEventListener('error', (e) => {
      reported.push(e.error?.message);
      e.preventDefault();
    });
    const newKey = key();
    await new lib.EncryptedSession(other, { key: newKey }).replaceHistory(await old.getItems(), { archive: false });
    const watched = new lib.EncryptedSession(other, {
      key: newKey,
      onUndecryptable: async (count, read) => {
        calls.push([count, read.source]);
        throw new Error('the warning failed');
      },
    });
    await watched.getItems();
    await watched.getArchivedItems();
    await new lib.EncryptedSession(other, { key: right, onUndecryptable: (count, read) => calls.push([count, read.source]) }).getItems();
    await new Promise((done) => setTimeout(done, 50));
    return { wrong, ok, calls, reported };
  });
  assert.equal(r.wrong, 'SessionError INVALID_KEY', 'the encrypted item behind nine in clear decides');
  assert.equal(r.ok, 'resolved');
  assert.deepEqual(r.calls, [[1, 'archive'], [1, 'history']]);
  assert.deepEqual(r.reported, ['the warning failed']);
});

test('deriveKeyFromPassphrase refuses an option it does not take (a misspelt iterations gave another key) and takes the salt as an ArrayBuffer or any view of its bytes', async () => {
  const page = await openPage();
  const r = await page.evaluate(async () => {
    const bytes = new Uint8Array(Array.from({ length: 16 }, (_, i) => i + 1));
    const misspelt = await code(lib.deriveKeyFromPassphrase('correct horse', { salt: bytes, iteration: 1_000_000 }));
    let message;
    await lib.deriveKeyFromPassphrase('correct horse', { salt: bytes, iteration: 1 }).catch((e) => (message = e.message));
    const inner = new lib.MemorySession('p');
    const k1 = await lib.deriveKeyFromPassphrase('correct horse', { salt: bytes, iterations: 100_000 });
    await new lib.EncryptedSession(inner, { key: k1 }).addItems([{ role: 'user', content: 'hello' }]);
    const read = async (salt) =>
      (await new lib.EncryptedSession(inner, { key: await lib.deriveKeyFromPassphrase('correct horse', { salt, iterations: 100_000 }) }).getItems()).map((i) => i.content);
    const padded = new Uint8Array(20);
    padded.set(bytes, 2);
    return {
      misspelt, message,
      buffer: await read(bytes.buffer.slice(0)),
      view: await read(new DataView(padded.buffer, 2, 16)),
      short: await code(lib.deriveKeyFromPassphrase('correct horse', { salt: new ArrayBuffer(8) })),
      number: await code(lib.deriveKeyFromPassphrase('correct horse', { salt: 42 })),
      undefinedOption: await code(lib.deriveKeyFromPassphrase('correct horse', { salt: bytes, iterations: 100_000, extra: undefined })),
    };
  });
  assert.equal(r.misspelt, 'SessionError INVALID_OPTIONS');
  assert.match(r.message, /options\.iteration is not an option \(salt, iterations\)/);
  assert.deepEqual(r.buffer, ['hello']);
  assert.deepEqual(r.view, ['hello']);
  assert.equal(r.short, 'SessionError INVALID_KEY');
  assert.equal(r.number, 'SessionError INVALID_KEY');
  assert.equal(r.undefinedOption, 'resolved');
});
