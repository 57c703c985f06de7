// Encrypted sessions: appending one turn, reading the newest 20 items, and saving a turn as a
// runner does through history transactions (the question appended, then the question and the
// answer in place of it), through EncryptedSession(IndexedDbSession), against a floor written by
// hand in the same run: the same WebCrypto work (AES-256-GCM under a key derived with HKDF, a
// fresh IV per item, the session id as additional data, the same envelope; an HMAC-SHA256 of
// each transaction) on raw IndexedDB (a counter record and one row per item, one transaction per
// write; for a transaction, its operation id checked and logged, and the suffix read, decrypted
// and compared, then checked again as stored in the writing transaction).
//
//   node bench/encrypted.mjs [--turns=200] [--pkg=dir]
//
// Uses the package as built in pkg/ (node scripts/build.mjs builds it), in headless Chromium on
// an on-disk profile (bench/browser.mjs).
import { benchScript } from './browser.mjs';
import { benchArgs, compareLine } from './report.mjs';


const { turns, pkg } = benchArgs(process.argv.slice(2), { turns: 200 });
await benchScript(pkg, async (browser) => {
  const page = await browser.appPage();
  const r = await page.evaluate(async ({ turns }) => {
    const stamp = Date.now().toString(36);
    const master = crypto.getRandomValues(new Uint8Array(32));
    const turn = (i) => [
      { role: 'user', content: `please remember that my hobby is horse racing, turn ${i}` },
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `Noted: your hobby is horse racing (${i}).` }] },
    ];

    // Ours.
    const ours = new lib.EncryptedSession(new lib.IndexedDbSession('chat', { dbName: `enc-ours-${stamp}` }), { key: master });
    await ours.addItems(turn(-1));
    await ours.getItems(20);
    const saving = new lib.EncryptedSession(new lib.IndexedDbSession('saved', { dbName: `enc-ours-${stamp}` }), { key: master });
    const oursSave = async (i) => {
      const [question, answer] = turn(i);
      await saving.applyHistoryTransaction({ operationId: `t${i}:q`, transaction: { type: 'append_items', items: [question] } });
      await saving.applyHistoryTransaction({
        operationId: `t${i}:a`,
        transaction: { type: 'replace_suffix', expectedSuffix: [question], replacement: [question, answer] },
      });
    };
    await oursSave(-1);

    // The floor, by hand.
    const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
    const open = indexedDB.open(`enc-raw-${stamp}`, 1);
    open.onupgradeneeded = () => {
      open.result.createObjectStore('sessions', { keyPath: 'id' });
      open.result.createObjectStore('rows', { keyPath: ['sessionId', 'seq'] });
      open.result.createObjectStore('ops', { keyPath: ['sessionId', 'operationId'] });
    };
    const db = await request(open);
    const encoder = new TextEncoder();
    const decoder = new TextDecoder();
    const base = await crypto.subtle.importKey('raw', master, 'HKDF', false, ['deriveKey']);
    const key = await crypto.subtle.deriveKey(
      { name: 'HKDF', hash: 'SHA-256', salt: encoder.encode('bench'), info: encoder.encode('chat') },
      base,
      { name: 'AES-GCM', length: 256 },
      false,
      ['encrypt', 'decrypt'],
    );
    const aad = encoder.encode('chat');
    const b64 = (bytes) => btoa(String.fromCharCode(...bytes));
    const unb64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    const seal = async (item, at) => {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: aad }, key, encoder.encode(JSON.stringify({ item, at }))));
      return { __enc: 1, iv: b64(iv), ct: b64(ct) };
    };
    const rawAdd = async (items) => {
      const at = Date.now();
      const sealed = await Promise.all(items.map((i) => seal(i, at)));
      const tx = db.transaction(['sessions', 'rows'], 'readwrite');
      const record = (await request(tx.objectStore('sessions').get('chat'))) ?? { id: 'chat', next: 0 };
      for (const item of sealed) tx.objectStore('rows').put({ sessionId: 'chat', seq: record.next++, item });
      tx.objectStore('sessions').put(record);
      await new Promise((ok, fail) => ((tx.oncomplete = ok), (tx.onerror = () => fail(tx.error))));
    };
    /** The item a stored row holds, decrypted. */
    const unseal = async (row) => JSON.parse(decoder.decode(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: unb64(row.item.iv), additionalData: aad }, key, unb64(row.item.ct)))).item;
    const rawRead = async (n) => {
      const tx = db.transaction(['sessions', 'rows']);
      const record = await request(tx.objectStore('sessions').get('chat'));
      const rows = await request(tx.objectStore('rows').getAll(IDBKeyRange.bound(['chat', Math.max(0, record.next - n)], ['chat', record.next - 1])));
      return Promise.all(rows.map(unseal));
    };
    await rawAdd(turn(-1));
    await rawRead(20);

    // A history transaction by hand: the suffix read and compared decrypted, the items sealed and
    // the transaction's HMAC made before the writing transaction (nothing but IndexedDB requests
    // may be awaited in it), which checks the operation log and the stored suffix again.
    const mac = await crypto.subtle.importKey('raw', crypto.getRandomValues(new Uint8Array(32)), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const canonicalText = (v) => JSON.stringify(v, (_, x) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));
    const rawTransaction = async (operationId, expected, replacement) => {
      const digest = b64(new Uint8Array(await crypto.subtle.sign('HMAC', mac, encoder.encode(canonicalText({ expected, replacement })))));
      let stored = [];
      if (expected.length) {
        const tx = db.transaction(['sessions', 'rows']);
        const record = await request(tx.objectStore('sessions').get('saved'));
        stored = await request(tx.objectStore('rows').getAll(IDBKeyRange.bound(['saved', record.next - expected.length], ['saved', record.next - 1])));
        const opened = await Promise.all(stored.map(unseal));
        if (opened.some((item, i) => canonicalText(item) !== canonicalText(expected[i]))) throw new Error('suffix mismatch');
      }
      const kept = expected.length;
      const at = Date.now();
      const sealed = await Promise.all(replacement.slice(kept).map((i) => seal(i, at)));
      const tx = db.transaction(['sessions', 'rows', 'ops'], 'readwrite');
      const done = new Promise((ok, fail) => ((tx.oncomplete = ok), (tx.onerror = () => fail(tx.error))));
      const [applied, record] = await Promise.all([
        request(tx.objectStore('ops').get(['saved', operationId])),
        request(tx.objectStore('sessions').get('saved')),
      ]);
      if (applied) return done;
      const next = record?.next ?? 0;
      if (kept) {
        const now = await request(tx.objectStore('rows').getAll(IDBKeyRange.bound(['saved', next - kept], ['saved', next - 1])));
        if (now.some((row, i) => row.item.ct !== stored[i].item.ct)) throw new Error('suffix changed');
      }
      let seq = next;
      for (const item of sealed) tx.objectStore('rows').put({ sessionId: 'saved', seq: seq++, item });
      tx.objectStore('ops').put({ sessionId: 'saved', operationId, digest });
      tx.objectStore('sessions').put({ id: 'saved', next: seq });
      return done;
    };
    const rawSave = async (i) => {
      const [question, answer] = turn(i);
      await rawTransaction(`t${i}:q`, [], [question]);
      await rawTransaction(`t${i}:a`, [question], [question, answer]);
    };
    await rawSave(-1);

    const times = { oursAdd: [], rawAdd: [], oursRead: [], rawRead: [], oursSave: [], rawSave: [] };
    const timed = async (list, f) => {
      const t = performance.now();
      await f();
      list.push(performance.now() - t);
    };
    for (let i = 0; i < turns; i++) {
      // Alternating, so both see the same machine.
      await timed(times.oursAdd, () => ours.addItems(turn(i)));
      await timed(times.rawAdd, () => rawAdd(turn(i)));
      await timed(times.oursRead, () => ours.getItems(20));
      await timed(times.rawRead, () => rawRead(20));
      await timed(times.oursSave, () => oursSave(i));
      await timed(times.rawSave, () => rawSave(i));
    }
    const savedTexts = (await saving.getItems()).map((item) => JSON.stringify(item));
    const rawSaved = await (async () => {
      const tx = db.transaction('rows');
      const rows = await request(tx.objectStore('rows').getAll(IDBKeyRange.bound(['saved', 0], ['saved', Infinity])));
      return Promise.all(rows.map(async (row) => JSON.stringify(await unseal(row))));
    })();
    const savedSame = savedTexts.length === 2 * (turns + 1) && JSON.stringify(savedTexts) === JSON.stringify(rawSaved);
    const same = JSON.stringify(await ours.getItems(20)) === JSON.stringify(await rawRead(20));
    db.close();
    return { times, same, savedSame };
  }, { turns });
  if (!r.same) throw new Error('the two read different items');
  if (!r.savedSame) throw new Error('the two saved different histories');
  const line = (label, ours, floor) => console.log(compareLine(label, ours, floor, { width: 28 }));
  console.log(`\nagent-sessions EncryptedSession(IndexedDbSession) against WebCrypto + raw IndexedDB by hand, ${turns} turns, medians\n`);
  line('append one turn:', r.times.oursAdd, r.times.rawAdd);
  line('getItems(20):', r.times.oursRead, r.times.rawRead);
  line('a runner\'s save of a turn:', r.times.oursSave, r.times.rawSave);
});
