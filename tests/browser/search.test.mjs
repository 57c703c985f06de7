// Full-text search: searchSessions over one user's sessions through an index kept in the same
// transaction as every write; ranking, query syntax, scripts, consistency after every kind of
// write and a reload, the build for rows written before the index existed, user scoping, and
// the bad inputs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness, reload } from './harness.mjs';
import { startModelServer } from '../server/model-server.mjs';

let env;
let model;
before(async () => {
  env = await start();
  model = await startModelServer();
});
after(async () => {
  await env?.close();
  await model?.close();
});

/** Defines `find(query, options)` in the page: the hits as `[sessionId, seq]`. */
async function helpers(page, dbName) {
  await page.evaluate((dbName) => {
    window.db = { dbName };
    window.find = async (query, options = {}) =>
      (await lib.searchSessions({ dbName, userId: 'ann', query, ...options })).map((h) => `${h.sessionId}:${h.seq}`);
  }, dbName);
}

test('search is a second module, loaded by the first search; offline before that, MODULE_UNAVAILABLE (its JS or its wasm), and a later call loads it', async () => {
  const { page } = await openHarness(env);
  const wasm = () => page.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name.split('/').pop()).filter((n) => n.endsWith('.wasm')));
  assert.ok(!(await wasm()).includes('agent_sessions_extras_bg.wasm'), 'importing the package loads no second module');
  await page.evaluate(async () => {
    await new lib.IndexedDbSession('lazy', { dbName: 'lazy-module', userId: 'ann' }).addItems([{ role: 'user', content: 'offline pelicans' }]);
  });
  const search = () =>
    page.evaluate(async () => {
      try {
        return (await lib.searchSessions({ dbName: 'lazy-module', userId: 'ann', query: 'pelicans' })).map((h) => h.sessionId);
      } catch (e) {
        return { name: e.name, code: e.code, message: e.message, cause: e.cause instanceof Error };
      }
    });
  // A backup needs it too: its stream fails before its first line, not after a header.
  const exported = () =>
    page.evaluate(async () => {
      const reader = lib.exportSessions({ dbName: 'lazy-module' }).getReader();
      try {
        const { value } = await reader.read();
        return { first: new TextDecoder().decode(value) };
      } catch (e) {
        return { code: e.code };
      }
    });
  // The network refuses the module's JS, then (a precache that kept the JS alone) its wasm.
  for (const blocked of ['**/extras.js', '**/agent_sessions_extras_bg.wasm']) {
    await page.route(blocked, (route) => route.abort('internetdisconnected'));
    const offline = await search();
    assert.equal(offline.name, 'SessionError', blocked);
    assert.equal(offline.code, 'MODULE_UNAVAILABLE', blocked);
    assert.match(offline.message, /extras\.js/);
    assert.equal(offline.cause, true, 'the failed load is the cause');
    assert.deepEqual(await exported(), { code: 'MODULE_UNAVAILABLE' }, blocked);
    await page.unroute(blocked);
  }
  assert.deepEqual(await search(), ['lazy'], 'the next search loads the module');
  assert.match((await exported()).first, /^\{"format":"agent-sessions-backup"/);
  // Tried by the search and the backup while it was refused, then once more: kept from then on.
  assert.equal((await wasm()).filter((n) => n === 'agent_sessions_extras_bg.wasm').length, 3);
});

test('ranking, phrases, prefixes, diacritics and CJK', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'search-syntax');
  const r = await page.evaluate(async () => {
    const s = new lib.IndexedDbSession('s', { ...db, userId: 'ann' });
    await s.addItems([
      { role: 'user', content: 'The hippo sleeps in the river.' }, // 0
      { role: 'assistant', content: 'A hippopotamus is a large animal; hippo is short for it.' }, // 1
      { role: 'user', content: 'hippo hippo hippo' }, // 2
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Un café crème à Paris, près du canal.' }] }, // 3
      { role: 'user', content: '東京の天気はどうですか' }, // 4
      { role: 'assistant', content: '京都は晴れです' }, // 5
      { role: 'user', content: 'big grey elephant' }, // 6
      { role: 'user', content: 'grey big elephant' }, // 7
      { type: 'function_call', callId: 'c1', name: 'lookup', arguments: '{"animal":"hippo"}' }, // 8: not indexed by default
      { role: 'user', content: '3월에 만나요, 5月の予定' }, // 9
      { role: 'assistant', content: 'GPT-4o answers' }, // 10
      { role: 'user', content: '6月5日の会議, 5월 3일' }, // 11: the same characters, in another order
      { role: 'assistant', content: 'GPT costs 4 dollars' }, // 12
    ]);
    const snippets = await lib.searchSessions({ ...db, userId: 'ann', query: 'cafe' });
    return {
      hippo: await find('hippo'),
      prefix: await find('hippo*'),
      cafe: await find('cafe'),
      cafeAccent: await find('CAFÉ'),
      creme: await find('creme paris'),
      tokyo: await find('東京'),
      tokyoWeather: await find('東京の天気'),
      kyo: await find('京'),
      phrase: await find('"big grey"'),
      both: await find('big grey'),
      none: await find('hippo elephant'),
      limited: await find('hippo*', { limit: 1 }),
      snippet: snippets[0],
      empty: await find('   '),
      // A number joined to one character of a script without spaces; a prefix inside a word.
      month: [await find('3월'), await find('5月'), await find('4月')],
      typing: [await find('gpt-4*'), await find('gpt-4')],
    };
  });
  assert.deepEqual(r.month, [['s:9'], ['s:9'], []], 'in the order typed: not 5월 3일, nor 6月5日');
  assert.deepEqual(r.typing, [['s:10'], []], 'nor GPT costs 4 dollars');
  // Whole words; the item saying it three times first, then the shorter one.
  assert.deepEqual(r.hippo, ['s:2', 's:0', 's:1']);
  assert.deepEqual(r.prefix.sort(), ['s:0', 's:1', 's:2']);
  assert.deepEqual(r.cafe, ['s:3']);
  assert.deepEqual(r.cafeAccent, ['s:3']);
  assert.deepEqual(r.creme, ['s:3']);
  assert.deepEqual(r.tokyo, ['s:4']);
  assert.deepEqual(r.tokyoWeather, ['s:4']);
  assert.deepEqual(r.kyo.sort(), ['s:4', 's:5'], 'one CJK character finds the bigrams it starts');
  assert.deepEqual(r.phrase, ['s:6'], 'a phrase in order');
  assert.deepEqual(r.both.sort(), ['s:6', 's:7'], 'words in any order');
  assert.deepEqual(r.none, []);
  assert.deepEqual(r.limited, ['s:2']);
  assert.deepEqual(r.empty, []);
  assert.equal(r.snippet.sessionId, 's');
  assert.equal(r.snippet.seq, 3);
  assert.equal(r.snippet.turn, 2);
  assert.equal(r.snippet.role, 'assistant');
  assert.equal(r.snippet.snippet, 'Un café crème à Paris, près du canal.');
  assert.equal(typeof r.snippet.score, 'number');
  assert.ok(r.snippet.createdAt > 0);
});

test('a long query (a pasted paragraph) finds the items holding every word of it, and only those, though it looks up only its longest words', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'search-long');
  const r = await page.evaluate(async () => {
    const paragraph = 'the quick brown fox jumps over the lazy dog while a cat and an owl watch it go by in the old barn at noon on a hot day in june';
    const s = new lib.IndexedDbSession('s', { ...db, userId: 'ann' });
    await s.addItems([
      { role: 'user', content: paragraph }, // 0
      { role: 'user', content: paragraph.replace(' at ', ' near ') }, // 1: one short word missing
      { role: 'user', content: `${paragraph} and more` }, // 2
    ]);
    return { all: (await find(paragraph)).sort(), quoted: (await find(`"${paragraph}"`)).sort(), shortWord: await find(`${paragraph} xq`) };
  });
  assert.deepEqual(r.all, ['s:0', 's:2'], 'not the item without "at"');
  assert.deepEqual(r.quoted, ['s:0', 's:2'], 'one long phrase too');
  assert.deepEqual(r.shortWord, [], 'a short word no item holds still rules them out');
});

test('equal scores put the newest first; tool text only with index.tools', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'search-ties');
  const r = await page.evaluate(async () => {
    const old = new lib.IndexedDbSession('old', { ...db, userId: 'ann' });
    await old.addItems([{ role: 'user', content: 'zebra crossing' }]);
    await new Promise((done) => setTimeout(done, 5));
    const recent = new lib.IndexedDbSession('recent', { ...db, userId: 'ann' });
    await recent.addItems([{ role: 'user', content: 'zebra crossing' }]);
    const tools = new lib.IndexedDbSession('tools', { ...db, userId: 'ann', index: { tools: true } });
    await tools.addItems([
      { type: 'function_call', callId: 'c1', name: 'weather', arguments: '{"city":"Reykjavik"}' },
      { type: 'function_call_result', callId: 'c1', name: 'weather', output: { type: 'text', text: 'Sleet in Reykjavik' } },
    ]);
    const plain = new lib.IndexedDbSession('plain', { ...db, userId: 'ann' });
    await plain.addItems([{ type: 'function_call', callId: 'c2', name: 'weather', arguments: '{"city":"Reykjavik"}' }]);
    let refused;
    try {
      new lib.IndexedDbSession('x', { ...db, index: { tools: 'yes' } });
    } catch (e) {
      refused = e.code;
    }
    return { ties: await find('zebra'), tools: await find('reykjavik'), sleet: await find('sleet'), refused };
  });
  assert.deepEqual(r.ties, ['recent:0', 'old:0']);
  assert.deepEqual(r.tools.sort(), ['tools:0', 'tools:1']);
  assert.deepEqual(r.sleet, ['tools:1']);
  assert.equal(r.refused, 'INVALID_OPTIONS');
});

test('with index.tools, the text of hosted, shell, apply-patch and computer calls and their outputs is found; without it, none', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'search-tool-kinds');
  const r = await page.evaluate(async () => {
    const items = [
      { type: 'hosted_tool_call', id: 'h1', name: 'mcp_lookup', arguments: '{"q":"tides"}', status: 'completed', output: 'Spring tides in Zanzibar' },
      { type: 'shell_call', callId: 's1', status: 'completed', action: { commands: ['ls ledger', 'grep quokka notes.txt'] } },
      { type: 'shell_call_output', callId: 's1', output: [{ stdout: 'walrus.txt', stderr: 'permission denied: narwhal', outcome: { type: 'exit', exitCode: 1 } }] },
      { type: 'apply_patch_call', callId: 'p1', status: 'completed', operation: { type: 'update_file', path: 'src/pelican.rs', diff: '-old\n+flamingo' } },
      { type: 'apply_patch_call_output', callId: 'p1', status: 'completed', output: 'applied to marmoset' },
      { type: 'computer_call', callId: 'k1', status: 'completed', action: { type: 'type', text: 'capybara' } },
      { type: 'computer_call', callId: 'k2', status: 'completed', actions: [{ type: 'type', text: 'axolotl' }, { type: 'click', x: 1, y: 2 }] },
    ];
    await new lib.IndexedDbSession('tools', { ...db, userId: 'ann', index: { tools: true } }).addItems(items);
    await new lib.IndexedDbSession('plain', { ...db, userId: 'ann' }).addItems(items);
    const out = {};
    for (const word of ['zanzibar', 'tides', 'quokka', 'walrus', 'narwhal', 'pelican', 'flamingo', 'marmoset', 'capybara', 'axolotl']) out[word] = await find(word);
    // What is stored is what was added.
    out.stored = await new lib.IndexedDbSession('tools', { ...db, userId: 'ann' }).getItems();
    return { out, items };
  });
  assert.deepEqual(r.out.stored, r.items);
  delete r.out.stored;
  assert.deepEqual(r.out, {
    zanzibar: ['tools:0'],
    tides: ['tools:0'],
    quokka: ['tools:1'],
    walrus: ['tools:2'],
    narwhal: ['tools:2'],
    pelican: ['tools:3'],
    flamingo: ['tools:3'],
    marmoset: ['tools:4'],
    capybara: ['tools:5'],
    axolotl: ['tools:6'],
  });
});

test('repairSession keeps the tool text of the rows it moves in the index (a session written with index.tools)', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'repair-tools');
  const r = await page.evaluate(async () => {
    const s = new lib.IndexedDbSession('tools', { ...db, userId: 'ann', index: { tools: true } });
    await s.addItems([
      { role: 'user', content: 'weather please' },
      { role: 'assistant', content: 'checking' },
      { type: 'function_call', callId: 'c1', name: 'weather', arguments: '{"city":"Reykjavik"}' },
      { type: 'function_call_result', callId: 'c1', name: 'weather', output: { type: 'text', text: 'Sleet in Reykjavik' } },
    ]);
    // A row removed behind the library's back (DevTools, another tool): a gap the repair closes
    // by moving the rows after it.
    await new Promise((ok, fail) => {
      const open = indexedDB.open(db.dbName);
      open.onsuccess = () => {
        const tx = open.result.transaction('agent_messages', 'readwrite');
        tx.objectStore('agent_messages').delete(['tools', 1]);
        tx.oncomplete = () => {
          open.result.close();
          ok();
        };
        tx.onerror = () => fail(tx.error);
      };
    });
    const report = await lib.repairSession('tools', db);
    return { moved: report.renumberedRows, found: await find('reykjavik') };
  });
  assert.equal(r.moved, 2);
  assert.deepEqual(r.found.sort(), ['tools:1', 'tools:2'], 'the moved call and output are still found by their tool text');
});

test('a compaction or a run saving again, by an object without index.tools, keeps the tool text of the rows it writes again in the index', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'rewrite-tools');
  const r = await page.evaluate(async () => {
    const tools = new lib.IndexedDbSession('tools', { ...db, userId: 'ann', index: { tools: true } });
    const call = { type: 'function_call', callId: 'c1', name: 'weather', arguments: '{"city":"Reykjavik"}' };
    await tools.addItems([{ role: 'user', content: 'old question' }, { role: 'assistant', content: 'old answer' }, { role: 'user', content: 'weather please' }, call]);
    const before = await find('reykjavik');
    const plain = new lib.IndexedDbSession('tools', { ...db, userId: 'ann' });
    // A save that begins with the call (a run saving again), then a compaction keeping it.
    await plain.applyHistoryTransaction({ operationId: 'again', transaction: { type: 'replace_suffix', expectedSuffix: [call], replacement: [call, { role: 'assistant', content: 'sleet' }] } });
    const saved = await find('reykjavik');
    const kept = (await plain.getItems()).slice(2);
    await plain.replaceHistoryWithCompaction([{ role: 'system', content: 'earlier: a question', 'agent-sessions.summary': true }, ...kept]);
    return { before, saved, compacted: await find('reykjavik') };
  });
  assert.equal(r.before.length, 1);
  assert.equal(r.saved.length, 1, 'saved again: still found by its tool text');
  assert.equal(r.compacted.length, 1, 'kept by a compaction: still found by its tool text');
});

test('repairSession of a session whose record was lost indexes its rows under the owner it is given', async () => {
  const { page } = await openHarness(env);
  await helpers(page, `repair-owner-${Math.random()}`);
  const r = await page.evaluate(async () => {
    await new lib.IndexedDbSession('lost', { ...db, userId: 'ann' }).addItems([
      { role: 'user', content: 'where is the lighthouse' },
      { role: 'assistant', content: 'on the cliff' },
    ]);
    // The record gone, and the rows indexed again while it was (as a database from before the
    // index is): with no record to say whose they are, they are indexed under no owner.
    await asBeforeTheIndex(db.dbName);
    await new Promise((ok, fail) => {
      const open = indexedDB.open(db.dbName);
      open.onsuccess = () => {
        const tx = open.result.transaction('agent_sessions', 'readwrite');
        tx.objectStore('agent_sessions').delete('lost');
        tx.oncomplete = () => {
          open.result.close();
          ok();
        };
        tx.onerror = () => fail(tx.error);
      };
    });
    await lib.buildSearchIndex(db);
    const before = await find('lighthouse');
    const report = await lib.repairSession('lost', { ...db, userId: 'ann' });
    return { before, moved: report.renumberedRows, after: await find('lighthouse'), cliff: await find('cliff') };
  });
  assert.deepEqual(r.before, [], 'not ann’s while no record says so');
  assert.equal(r.moved, 0, 'the rows stay where they are');
  assert.deepEqual(r.after, ['lost:0']);
  assert.deepEqual(r.cliff, ['lost:1']);
});

test('the index follows pops, clears, rewrites, branches, deletes and a reload', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'search-consistency');
  const r = await page.evaluate(async () => {
    const s = new lib.IndexedDbSession('s', { ...db, userId: 'ann' });
    await s.addItems([{ role: 'user', content: 'alpha one' }, { role: 'assistant', content: 'bravo two' }]);
    const out = { added: [await find('alpha'), await find('bravo')] };
    await s.popItem();
    out.popped = [await find('alpha'), await find('bravo')];
    await s.addItems([{ role: 'assistant', content: 'charlie three' }]);
    await s.replaceHistory([{ role: 'user', content: 'delta four' }], { archive: false });
    out.replaced = [await find('alpha'), await find('charlie'), await find('delta')];
    await s.applyHistoryTransaction({ operationId: 'op1', transaction: { type: 'append_items', items: [{ role: 'assistant', content: 'echo five' }] } });
    out.transaction = await find('echo');
    await s.addItems([{ role: 'user', content: 'foxtrot six' }, { role: 'assistant', content: 'golf seven' }]);
    const branch = await s.createBranchFromTurn(2, 'other');
    await s.addItems([{ role: 'user', content: 'hotel eight' }]);
    out.branch = (await lib.searchSessions({ ...db, userId: 'ann', query: 'hotel' })).map((h) => [h.sessionId, h.branch]);
    out.shared = await find('delta');
    await s.switchBranch('main');
    await s.deleteBranch(branch);
    out.branchDeleted = await find('hotel');
    out.kept = await find('foxtrot');
    await s.clearSession();
    out.cleared = [await find('delta'), await find('foxtrot')];
    await s.addItems([{ role: 'user', content: 'india nine' }]);
    const t = new lib.IndexedDbSession('t', { ...db, userId: 'ann' });
    await t.addItems([{ role: 'user', content: 'india juliet' }]);
    await lib.deleteSession('t', db);
    out.deleted = await find('india');
    return out;
  });
  assert.deepEqual(r.added, [['s:0'], ['s:1']]);
  assert.deepEqual(r.popped, [['s:0'], []]);
  assert.deepEqual(r.replaced, [[], [], ['s:2']]);
  assert.deepEqual(r.transaction, ['s:3']);
  assert.deepEqual(r.branch, [['s', 'other']]);
  assert.deepEqual(r.shared, ['s:2']);
  assert.deepEqual(r.branchDeleted, []);
  assert.deepEqual(r.kept, ['s:4']);
  assert.deepEqual(r.cleared, [[], []]);
  assert.deepEqual(r.deleted, ['s:6']);
  // After a reload, the same answers from the same database.
  await reload(page);
  await helpers(page, 'search-consistency');
  assert.deepEqual(await page.evaluate(() => find('india')), ['s:6']);
});

test('an imported backup is searchable under its new owner, and only there', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'search-export' };
    await new lib.IndexedDbSession('c', { ...from, userId: 'ann' }).addItems([{ role: 'user', content: 'the quokka smiles' }]);
    const text = await new Response(lib.exportSessions(from)).text();
    const to = { dbName: 'search-import' };
    await lib.importSessions(text, { ...to, userId: 'bob' });
    const ids = async (userId) => (await lib.searchSessions({ ...to, userId, query: 'quokka' })).map((h) => h.sessionId);
    return { bob: await ids('bob'), ann: await ids('ann'), terms: text.includes('"terms"') };
  });
  assert.deepEqual(r.bob, ['c']);
  assert.deepEqual(r.ann, []);
  assert.equal(r.terms, false, 'the backup carries no index terms');
});

test('one user never finds another user’s items', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'search-users');
  const r = await page.evaluate(async () => {
    // Seeded: every user writes from the same words, so every query has hits for each.
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const words = ['apple', 'river', 'stone', 'cloud', 'lamp', 'tiger', 'piano', 'maple', 'ocean', 'salt'];
    const users = ['ann', 'bob', null];
    const owner = {};
    for (let n = 0; n < 30; n++) {
      const userId = users[n % 3];
      const id = `chat-${n}`;
      owner[id] = userId;
      const s = new lib.IndexedDbSession(id, { ...db, ...(userId ? { userId } : {}) });
      const items = [];
      for (let i = 0; i < 10; i++) {
        const text = Array.from({ length: 6 }, () => words[Math.floor(random() * words.length)]).join(' ');
        items.push({ role: i % 2 ? 'assistant' : 'user', content: text });
      }
      await s.addItems(items);
    }
    const leaks = [];
    let hits = 0;
    for (const userId of users) {
      for (const query of [...words, 'apple river', 'ston*', '"tiger piano"', 'm*']) {
        for (const h of await lib.searchSessions({ ...db, userId, query, limit: 1000 })) {
          hits += 1;
          if (owner[h.sessionId] !== userId) leaks.push([userId, query, h.sessionId]);
        }
      }
    }
    // Only the sessions asked for, and still only the user's.
    const only = await lib.searchSessions({ ...db, userId: 'ann', query: 'apple', sessionIds: ['chat-0', 'chat-1'] });
    return { leaks, hits, only: [...new Set(only.map((h) => h.sessionId))] };
  });
  assert.deepEqual(r.leaks, []);
  assert.ok(r.hits > 300, `${r.hits} hits`);
  assert.deepEqual(r.only, ['chat-0']);
});

test('a search while the index build cannot write (storage full) answers from the index as it stands, and finds the rest once there is room', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = 'search-full';
    const s = new lib.IndexedDbSession('t', { dbName, userId: 'ann' });
    await s.addItems([{ role: 'user', content: 'walrus indexed' }, { role: 'user', content: 'walrus before the index' }]);
    // As a database from before the index leaves it: the second row has no terms yet.
    await rewriteRows(dbName, (row, i) => i === 1 && delete row.terms, (meta) => ({ ...meta, done: false, after: null, indexed: 0, all: false }));
    // The disk is full: IndexedDB refuses the build's writes, as it does when the quota is used
    // up. (Made in the page: Chromium's quota override refuses large writes only.)
    const put = IDBObjectStore.prototype.put;
    IDBObjectStore.prototype.put = function (value, ...rest) {
      if (Array.isArray(value?.terms)) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      return put.call(this, value, ...rest);
    };
    const search = async () => {
      try {
        return (await lib.searchSessions({ dbName, userId: 'ann', query: 'walrus' })).map((h) => h.seq).sort();
      } catch (e) {
        return `${e.name} ${e.code}: ${e.message}`;
      }
    };
    const full = await search();
    const build = await lib.buildSearchIndex({ dbName }).then(() => 'built', (e) => e.code);
    IDBObjectStore.prototype.put = put;
    return { full, build, room: await search() };
  });
  assert.deepEqual(r.full, [0], 'what the index holds is found, no STORAGE_FULL');
  assert.equal(r.build, 'STORAGE_FULL', 'buildSearchIndex says the index is not whole');
  assert.deepEqual(r.room, [0, 1]);
});

test('rows written before the index existed are indexed in chunks, and an interrupted build resumes', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = 'search-build';
    const s = new lib.IndexedDbSession('big', { dbName, userId: 'ann' });
    const items = [];
    for (let i = 0; i < 2000; i++) items.push({ role: i % 2 ? 'assistant' : 'user', content: `message number${i} walrus${i % 10}` });
    await s.addItems(items);
    await s.close();
    // The build that starts when the database is opened looks at every row once: let it end
    // before the meta record is changed by hand below.
    await lib.buildSearchIndex({ dbName });
    // As a build cut short leaves it: the rows after the 800th have no terms yet, and the meta
    // record says where to go on.
    const rows = await rewriteRows(
      dbName,
      (row, i) => i >= 800 && delete row.terms,
      (meta) => ({ ...meta, done: false, after: ['big', 799], indexed: 800 }),
    );
    return { stripped: rows - 800 };
  });
  assert.equal(r.stripped, 1200);
  // A new page: the library opens the database and goes on from the 800th row.
  await reload(page);
  const built = await page.evaluate(async () => {
    const progress = [];
    const hits = await lib.searchSessions({ dbName: 'search-build', userId: 'ann', query: 'number1999', onProgress: (p) => progress.push(p) });
    const again = await lib.buildSearchIndex({ dbName: 'search-build' });
    return {
      hits: hits.map((h) => h.seq),
      progress,
      again,
      early: (await lib.searchSessions({ dbName: 'search-build', userId: 'ann', query: 'number5' })).map((h) => h.seq),
      many: (await lib.searchSessions({ dbName: 'search-build', userId: 'ann', query: 'walrus3', limit: 1000 })).length,
    };
  });
  assert.deepEqual(built.hits, [1999]);
  assert.deepEqual(built.early, [5]);
  assert.equal(built.many, 200);
  // Either this search ran the build (progress from 800 on) or the build that starts at open
  // had finished it first; either way nothing is built twice.
  for (const p of built.progress) assert.ok(p.done >= 800 && p.done <= p.total, JSON.stringify(p));
  assert.ok(built.progress.every((p, i) => i === 0 || p.done >= built.progress[i - 1].done), 'progress only grows');
  assert.equal(built.again.done, 0, 'a finished build does nothing');
});

test('a build of fewer rows than a chunk is heard, with its count', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-small-${Math.random()}`;
    const s = new lib.IndexedDbSession('small', { dbName, userId: 'ann' });
    await s.addItems(Array.from({ length: 30 }, (_, i) => ({ role: 'user', content: `note ${i} about otters` })));
    await asBeforeTheIndex(dbName);
    const progress = [];
    const built = await lib.buildSearchIndex({ dbName, onProgress: (p) => progress.push(p) });
    const hits = await lib.searchSessions({ dbName, userId: 'ann', query: 'otters', limit: 50 });
    return { progress, built, hits: hits.length };
  });
  assert.deepEqual(r.progress, [{ done: 30, total: 30 }]);
  assert.deepEqual(r.built, { done: 30, total: 30 });
  assert.equal(r.hits, 30);
});

test('an onProgress that throws, or an async one that rejects, is reported and the build goes on', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-progress-throws-${Math.random()}`;
    const s = new lib.IndexedDbSession('small', { dbName, userId: 'ann' });
    await s.addItems([{ role: 'user', content: 'otters hold hands' }]);
    await asBeforeTheIndex(dbName);
    const errors = [];
    const unhandled = [];
    window.addEventListener('error', (e) => errors.push(e.message));
    window.addEventListener('unhandledrejection', (e) => unhandled.push(String(e.reason)));
    const built = await lib.buildSearchIndex({
      dbName,
      onProgress: () => {
        throw new Error('a broken progress bar');
      },
    });
    await asBeforeTheIndex(dbName);
    const found = await lib.searchSessions({
      dbName,
      userId: 'ann',
      query: 'otters',
      onProgress: async () => {
        throw new Error('a broken async progress bar');
      },
    });
    await new Promise((ok) => setTimeout(ok, 50));
    return { built, found: found.length, errors, unhandled };
  });
  assert.deepEqual(r.built, { done: 1, total: 1 });
  assert.equal(r.found, 1);
  assert.ok(r.errors.some((m) => m.includes('a broken progress bar')), 'the throw is reported');
  assert.ok(r.errors.some((m) => m.includes('a broken async progress bar')), 'the rejection is reported');
  assert.deepEqual(r.unhandled, []);
});

test('two builds at once (two tabs, or both modules of a page) each end their progress at the whole', async () => {
  const { page } = await openHarness(env);
  const dbName = `search-overlap-${Math.random()}`;
  await page.evaluate(async (dbName) => {
    const s = new lib.IndexedDbSession('big', { dbName, userId: 'ann' });
    await s.addItems(Array.from({ length: 3000 }, (_, i) => ({ role: 'user', content: `entry ${i} about herons` })));
    await lib.buildSearchIndex({ dbName });
    await asBeforeTheIndex(dbName);
  }, dbName);
  await reload(page);
  const r = await page.evaluate(async (dbName) => {
    const heard = [[], []];
    const builds = await Promise.all(heard.map((list) => lib.buildSearchIndex({ dbName, onProgress: (p) => list.push(p) })));
    const found = async (query) => (await lib.searchSessions({ dbName, userId: 'ann', query })).map((h) => h.seq);
    return { heard, builds, hits: [await found('0'), await found('1500'), await found('2999')] };
  }, dbName);
  assert.deepEqual(r.hits, [[0], [1500], [2999]], 'every row indexed');
  assert.ok(r.heard.some((list) => list.length > 0), 'a build was heard');
  for (const list of r.heard) {
    if (list.length) assert.deepEqual(list.at(-1), { done: 3000, total: 3000 }, JSON.stringify(list));
  }
});

test('opening a database whose rows have no terms starts their build in the second module, with no search; opening a new one loads nothing more', async () => {
  const { page } = await openHarness(env);
  const dbName = `search-open-${Math.random()}`;
  await page.evaluate(async (dbName) => {
    const s = new lib.IndexedDbSession('old', { dbName, userId: 'ann' });
    await s.addItems(Array.from({ length: 150 }, (_, i) => ({ role: 'user', content: `entry ${i} about cranes` })));
    await asBeforeTheIndex(dbName);
  }, dbName);
  await reload(page);
  const extrasLoaded = () =>
    page.evaluate(() => performance.getEntriesByType('resource').some((e) => e.name.endsWith('/agent_sessions_extras_bg.wasm')));
  // The build's record, read by hand.
  await page.evaluate(() => {
    const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
    window.buildRecord = async (dbName) => {
      const db = await request(indexedDB.open(dbName));
      try {
        return await request(db.transaction('agent_meta').objectStore('agent_meta').get('searchIndex'));
      } finally {
        db.close();
      }
    };
  });
  // A new database is written with its terms: opening it starts no build.
  const fresh = await page.evaluate(async () => {
    const dbName = `search-fresh-${Math.random()}`;
    await new lib.IndexedDbSession('new', { dbName }).addItems([{ role: 'user', content: 'nothing to build' }]);
    await new Promise((ok) => setTimeout(ok, 200));
    return (await buildRecord(dbName))?.done;
  });
  assert.equal(fresh, true);
  assert.equal(await extrasLoaded(), false, 'opening a new database loads no second module');
  // The old one: a read opens it, and its rows are indexed in the background, nothing searched.
  const built = await page.evaluate(async (dbName) => {
    const items = await new lib.IndexedDbSession('old', { dbName, userId: 'ann' }).getItems(1);
    for (let i = 0; i < 200; i++) {
      const record = await buildRecord(dbName);
      if (record?.done) return { items: items.length, record };
      await new Promise((ok) => setTimeout(ok, 50));
    }
    return { items: items.length, record: await buildRecord(dbName) };
  }, dbName);
  assert.equal(built.items, 1);
  assert.equal(built.record?.done, true, JSON.stringify(built.record));
  assert.equal(built.record.indexed, 150);
  assert.equal(await extrasLoaded(), true, 'the build ran in the second module');
  const hits = await page.evaluate(async (dbName) => (await lib.searchSessions({ dbName, userId: 'ann', query: 'cranes', limit: 200 })).length, dbName);
  assert.equal(hits, 150);
});

test('terms made by an older tokeniser are made again: İstanbul, ȘTIRI, ΑΘΗΝΑ and ΟΔΟΣ are found as typed', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-retokenise-${Math.random()}`;
    const texts = ['İstanbul trip', 'ȘTIRI de azi', 'TRƯỜNG học', 'Αθήνα ταξίδι', 'ΟΔΟΣ', 'STRAẞE'];
    const s = new lib.IndexedDbSession('t', { dbName, userId: 'ann' });
    await s.addItems(texts.map((content) => ({ role: 'user', content })));
    const find = async () => {
      const out = [];
      for (const query of ['istanbul', 'stiri', 'truong', 'ΑΘΗΝΑ', 'οδος', 'straße']) {
        out.push((await lib.searchSessions({ dbName, userId: 'ann', query })).map((h) => h.seq));
      }
      return out;
    };
    const now = await find();
    // As the previous tokeniser left the database: its build record (no terms version) and
    // rows whose terms are not this tokeniser's (emptied here, so only a new build finds them).
    await rewriteRows(dbName, (row) => (row.terms = []), () => ({ name: 'searchIndex', done: true, after: null, indexed: 0 }));
    const progress = [];
    const built = await lib.buildSearchIndex({ dbName, onProgress: (p) => progress.push(p) });
    const after = await find();
    const again = await lib.buildSearchIndex({ dbName });
    // A newer version of the library, in another tab, has started building its own terms: this
    // one leaves its build alone (neither starts it over nor writes its own terms in its place).
    const newer = { name: 'searchIndex', done: false, after: null, indexed: 0, terms: 99, all: true };
    await rewriteRows(dbName, () => false, () => newer);
    const beside = await lib.buildSearchIndex({ dbName });
    let record;
    await rewriteRows(dbName, () => false, (r) => ((record = r), r));
    return { now, built, after, again, beside, record };
  });
  assert.deepEqual(r.beside, { done: 0, total: 0 }, 'a newer build is left to its version');
  assert.deepEqual(r.record, { name: 'searchIndex', done: false, after: null, indexed: 0, terms: 99, all: true });
  const all = [[0], [1], [2], [3], [4], [5]];
  assert.deepEqual(r.now, all, 'new rows are written with the new terms');
  assert.deepEqual(r.built, { done: 6, total: 6 }, 'every row indexed again');
  assert.deepEqual(r.after, all);
  assert.equal(r.again.done, 0, 'and only once');
});

test('Thai, Lao, Khmer and Burmese are found by a word inside a longer run; an index of the tokeniser before rewrites only their rows, and a tool call keeps its terms', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-unspaced-${Math.random()}`;
    // Written without spaces between words: "the weather today is hot", "I eat rice" (Lao),
    // "Phnom Penh city" (Khmer), "Myanmar language" (Burmese); and two rows of English.
    const texts = ['อากาศวันนี้ร้อนมาก', 'ຂ້ອຍກິນເຂົ້າ', 'ក្រុងភ្នំពេញ', 'မြန်မာဘာသာစကား', 'hot weather today', 'rice and tea'];
    const s = new lib.IndexedDbSession('t', { dbName, userId: 'ann' });
    await s.addItems(texts.map((content) => ({ role: 'user', content })));
    // A session whose object indexes tool calls: its row holds the terms of the arguments too.
    const tools = new lib.IndexedDbSession('tool', { dbName, userId: 'ann', index: { tools: true } });
    await tools.addItems([{ type: 'function_call', callId: 'c1', name: 'lookup', arguments: '{"city":"Reykjavik"}' }]);
    const find = async () => {
      const out = [];
      for (const query of ['วันนี้', 'กินเข้า', 'ກິນເຂົ້າ', 'ភ្នំពេញ', 'ဘာသာ', 'ร', 'weather', 'reykjavik']) {
        out.push((await lib.searchSessions({ dbName, userId: 'ann', query })).map((h) => h.seq));
      }
      return out;
    };
    const now = await find();
    const snippet = (await lib.searchSessions({ dbName, userId: 'ann', query: 'วันนี้' }))[0]?.snippet;
    // As the tokeniser before left the database: each of these runs one term, the build record
    // of version 2. The English rows keep their terms.
    await rewriteRows(
      dbName,
      (row) => row.sessionId === 't' && row.seq < 4 && (row.terms = [`ann\u0000${texts[row.seq]}`]),
      () => ({ name: 'searchIndex', done: true, after: null, indexed: 0, terms: 2, all: false }),
    );
    // (A search would run the build first, as an open of the database does.)
    const put = IDBObjectStore.prototype.put;
    const written = [];
    IDBObjectStore.prototype.put = function (value, ...rest) {
      if (this.name === 'agent_messages') written.push(`${value.sessionId} ${value.seq}`);
      return put.call(this, value, ...rest);
    };
    let built;
    try {
      built = await lib.buildSearchIndex({ dbName });
    } finally {
      IDBObjectStore.prototype.put = put;
    }
    return { now, snippet, built, written, after: await find(), again: await lib.buildSearchIndex({ dbName }) };
  });
  const found = [[0], [], [1], [2], [3], [0], [4], [0]];
  assert.deepEqual(r.now, found, 'a word is found inside a run, and only where it is');
  assert.equal(r.snippet, 'อากาศวันนี้ร้อนมาก');
  assert.deepEqual(r.built, { done: 7, total: 7 }, 'every row looked at again');
  assert.deepEqual(r.written, ['t 0', 't 1', 't 2', 't 3'], 'only the rows whose terms changed written again; the tool call keeps its terms');
  assert.deepEqual(r.after, found);
  assert.equal(r.again.done, 0, 'and only once');
});

test('a row indexed with its tool text keeps it through a new tokeniser’s build, even where every one of its words changes', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-tool-rebuild-${Math.random()}`;
    const tools = new lib.IndexedDbSession('tool', { dbName, userId: 'ann', index: { tools: true } });
    await tools.addItems([{ type: 'function_call_result', callId: 'c1', name: 'lookup', output: 'Kṛṣṇa' }]);
    // As the tokeniser before left it: the word with its dots, the build record of terms 5.
    await rewriteRows(
      dbName,
      (row) => (row.terms = ['ann\u0000kṛṣṇa']),
      () => ({ name: 'searchIndex', done: true, after: null, indexed: 0, terms: 5, all: false }),
    );
    const built = await lib.buildSearchIndex({ dbName });
    return { built, found: (await lib.searchSessions({ dbName, userId: 'ann', query: 'krsna' })).map((h) => h.seq) };
  });
  assert.deepEqual(r.built, { done: 1, total: 1 });
  assert.deepEqual(r.found, [0], 'found by the new term');
});

test('rows a branch write copies while the index is being built get their terms, wherever the build is', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-copies-${Math.random()}`;
    const s = new lib.IndexedDbSession('S', { dbName, userId: 'u' });
    await s.addItems([{ role: 'user', content: 'start' }]);
    await s.createBranchFromTurn(1, 'b'); // b shows nothing of main
    await s.addItems(Array.from({ length: 300 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `zq${i} text` })));
    await s.createBranchFromTurn(126, 'a'); // a shows b's first 250 items
    await s.addItems([{ role: 'user', content: 'on a' }]);
    await s.switchBranch('b');
    // As a build of every row (for a newer tokeniser) leaves a database between two chunks:
    // b's first 100 rows done, the next 100 without terms (written before the index), the rest
    // with an older tokeniser's (none, here). Branch a's keys sort before b's.
    const request = (q) => new Promise((ok, fail) => ((q.onsuccess = () => ok(q.result)), (q.onerror = () => fail(q.error))));
    const db = await request(indexedDB.open(dbName));
    const range = IDBKeyRange.bound([['S', 'b'], -Infinity], [['S', 'b'], Infinity]);
    const rows = await request(db.transaction('agent_messages').objectStore('agent_messages').getAll(range));
    // This build's tokeniser, as the record written when the database was made says.
    const { terms } = await request(db.transaction('agent_meta').objectStore('agent_meta').get('searchIndex'));
    const tx = db.transaction(['agent_messages', 'agent_meta'], 'readwrite');
    rows.slice(100).forEach((row, i) => {
      if (i < 100) delete row.terms;
      else row.terms = [];
      tx.objectStore('agent_messages').put(row);
    });
    tx.objectStore('agent_meta').put({ name: 'searchIndex', done: false, after: [rows[99].sessionId, rows[99].seq], indexed: 100, terms, all: true });
    await new Promise((ok) => (tx.oncomplete = ok));
    db.close();
    // Clearing b gives a its own copies of the 250 rows it shows, under a's keys.
    await s.clearSession();
    await lib.buildSearchIndex({ dbName });
    const hit = async (query) => (await lib.searchSessions({ dbName, userId: 'u', query })).map((h) => `${h.branch ?? 'main'} ${h.seq}`);
    return { zq50: await hit('zq50'), zq150: await hit('zq150'), zq249: await hit('zq249'), zq260: await hit('zq260') };
  });
  assert.deepEqual(r.zq50, ['a 50']);
  assert.deepEqual(r.zq150, ['a 150'], 'a copy made of a row the build had not reached');
  assert.deepEqual(r.zq249, ['a 249'], 'a copy made of a row an older tokeniser indexed');
  assert.deepEqual(r.zq260, [], 'cleared with b');
});

test('a word on more items than the index lists still finds the newest ones first', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-common-${Math.random()}`;
    const a = new lib.IndexedDbSession('a', { dbName, userId: 'ann' });
    // More than the 20,000 keys one term's list holds, all of equal score.
    for (let batch = 0; batch < 5; batch++) {
      await a.addItems(Array.from({ length: 4001 }, (_, i) => ({ role: 'user', content: `common w${batch}x${i}` })));
    }
    const b = new lib.IndexedDbSession('b', { dbName, userId: 'ann' });
    await b.addItems([{ role: 'user', content: 'common newer' }]);
    // A tool call of a session written without index.tools: its text is not searched, here
    // either.
    await b.addItems([{ type: 'function_call', callId: 'c1', name: 'lookup', arguments: '{"q":"common"}', status: 'completed' }]);
    // A branch's own item is read too.
    await b.createBranchFromTurn(1, 'alt');
    await b.addItems([{ role: 'user', content: 'common branchy' }]);
    await a.addItems([{ role: 'user', content: 'common newest' }]);
    const hits = await lib.searchSessions({ dbName, userId: 'ann', query: 'common', limit: 3 });
    // (A limit past 2^32 is as good as no limit.)
    const only = await lib.searchSessions({ dbName, userId: 'ann', query: 'common', sessionIds: ['b'], limit: 2 ** 32 });
    const hit = (h) => [h.sessionId, h.branch ?? 'main', h.seq];
    return { hits: hits.map(hit), only: only.map(hit) };
  });
  assert.deepEqual(r.hits, [['a', 'main', 20005], ['b', 'alt', 0], ['b', 'main', 0]], 'the newest matches, newest first, a branch’s among them');
  assert.deepEqual(r.only, [['b', 'alt', 0], ['b', 'main', 0]], 'a session past the cut is searched too');
});

test('searching some sessions only (sessionIds) weighs each word by how common it is in them: a word common elsewhere but rare there counts for more', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-subset-${Math.random()}`;
    // Elsewhere, "kubernetes" is everywhere and "error" nowhere.
    const other = new lib.IndexedDbSession('other', { dbName, userId: 'ann' });
    await other.addItems(Array.from({ length: 50 }, (_, i) => ({ role: 'user', content: `kubernetes note ${i}` })));
    // In the chat searched, "error" is on every item and "kubernetes" on two: the item saying
    // "kubernetes" twice is the better match, though the other one is newer.
    const chat = new lib.IndexedDbSession('chat', { dbName, userId: 'ann' });
    await chat.addItems([
      { role: 'user', content: 'kubernetes kubernetes error' },
      { role: 'user', content: 'error error kubernetes' },
      { role: 'user', content: 'error only' },
    ]);
    const hits = await lib.searchSessions({ dbName, userId: 'ann', query: 'kubernetes error', sessionIds: ['chat'] });
    return hits.map((h) => h.snippet);
  });
  assert.deepEqual(r, ['kubernetes kubernetes error', 'error error kubernetes']);
});

test('a new database has nothing to index: its rows are written with their terms, and no build reads them again', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `search-new-${Math.random()}`;
    const s = new lib.IndexedDbSession('fresh', { dbName, userId: 'ann' });
    const items = [];
    for (let i = 0; i < 3000; i++) items.push({ role: i % 2 ? 'assistant' : 'user', content: `note ${i} about otters` });
    await s.addItems(items);
    const progress = [];
    const built = await lib.buildSearchIndex({ dbName, onProgress: (p) => progress.push(p) });
    const hits = await lib.searchSessions({ dbName, userId: 'ann', query: 'otters', limit: 5 });
    return { built, progress, hits: hits.length };
  });
  assert.deepEqual(r.progress, [], 'no chunk of rows was looked at');
  assert.equal(r.built.done, 0);
  assert.equal(r.hits, 5);
});

test('bad input: long queries, a missing userId, bad limits, non-string queries', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const code = (options) => outcome(() => lib.searchSessions(options));
    const base = { dbName: 'search-bad', userId: 'ann' };
    return {
      long: await code({ ...base, query: 'a'.repeat(1001) }),
      longest: await code({ ...base, query: 'a'.repeat(1000) }),
      noUser: await code({ dbName: 'search-bad', query: 'x' }),
      undefinedUser: await code({ dbName: 'search-bad', userId: undefined, query: 'x' }),
      nullUser: await code({ dbName: 'search-bad', userId: null, query: 'x' }),
      zero: await code({ ...base, query: 'x', limit: 0 }),
      fraction: await code({ ...base, query: 'x', limit: 1.5 }),
      text: await code({ ...base, query: 'x', limit: '3' }),
      number: await code({ ...base, query: 42 }),
      noOptions: await code(undefined),
      ids: await code({ ...base, query: 'x', sessionIds: 'chat' }),
      // A Set of ids is no array: refused, not read as no ids (which found nothing).
      idSet: await code({ ...base, query: 'x', sessionIds: new Set(['chat']) }),
      idObject: await code({ ...base, query: 'x', sessionIds: { 0: 'chat', length: 1 } }),
    };
  });
  assert.equal(r.long, 'SessionError INVALID_QUERY');
  assert.equal(r.longest, 'resolved');
  assert.equal(r.noUser, 'SessionError INVALID_OPTIONS');
  assert.equal(r.undefinedUser, 'SessionError INVALID_OPTIONS', 'an undefined userId is a missing one');
  assert.equal(r.nullUser, 'resolved');
  assert.equal(r.zero, 'SessionError INVALID_LIMIT');
  assert.equal(r.fraction, 'SessionError INVALID_LIMIT');
  assert.equal(r.text, 'SessionError INVALID_LIMIT');
  assert.equal(r.number, 'SessionError INVALID_QUERY');
  assert.equal(r.noOptions, 'SessionError INVALID_OPTIONS');
  assert.equal(r.ids, 'SessionError INVALID_OPTIONS');
  assert.equal(r.idSet, 'SessionError INVALID_OPTIONS');
  assert.equal(r.idObject, 'SessionError INVALID_OPTIONS');
});

test('search_past_sessions finds every earlier chat that matches, also when one of them says the word more often than one search returns hits', async () => {
  const { page } = await openHarness(env);
  model.reset();
  model.script({ calls: [{ name: 'search_past_sessions', arguments: { query: 'volcano' } }] }, { text: 'done' });
  const r = await page.evaluate(
    async ({ url }) => {
      const dbName = 'past-tools-many-hits';
      const write = async (id, items) => new lib.IndexedDbSession(id, { dbName, userId: 'ann' }).addItems(items);
      await write('ann-old', [{ role: 'user', content: 'Tell me about the volcano in Iceland' }, { role: 'assistant', content: 'Eyjafjallajökull erupted in 2010.' }]);
      // A later chat with more hits than a search returns, each ranked above the old chat's.
      await write('ann-long', Array.from({ length: 210 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `volcano ${i}` })));
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'a', model: 'm', pastSessions: true });
      const result = await runner.run(agent, 'which volcano did we talk about?', { session: new lib.IndexedDbSession('ann-now', { dbName, userId: 'ann' }) });
      return result.finalOutput;
    },
    { url: model.url },
  );
  assert.equal(r, 'done');
  const told = model.requests.at(-1).body.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
  assert.deepEqual(told[0].sessions.map((s) => s.session_id), ['ann-long', 'ann-old']);
  assert.deepEqual(told[0].sessions[1].turns, [{ turn: 1, user: 'Tell me about the volcano in Iceland', match: 'Tell me about the volcano in Iceland' }]);
});

test('search_past_sessions takes a query longer than a search takes (cut to its first 1,000 characters) and one with a lone surrogate (left out): the model is told what was found, not a failure', async () => {
  const { page } = await openHarness(env);
  model.reset();
  model.script(
    { calls: [{ name: 'search_past_sessions', arguments: { query: `volcano${' '.repeat(1200)}unrelated` } }] },
    { calls: [{ name: 'search_past_sessions', arguments: { query: 'volcano \uD800' } }] },
    { text: 'done' },
  );
  const r = await page.evaluate(
    async ({ url }) => {
      const dbName = 'past-tools-long-query';
      await new lib.IndexedDbSession('ann-old', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'Tell me about the volcano in Iceland' }]);
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'a', model: 'm', pastSessions: true });
      const result = await runner.run(agent, 'which volcano?', { session: new lib.IndexedDbSession('ann-now', { dbName, userId: 'ann' }) });
      return result.finalOutput;
    },
    { url: model.url },
  );
  assert.equal(r, 'done');
  const told = model.requests.at(-1).body.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.equal(told.length, 2);
  for (const content of told) assert.deepEqual(JSON.parse(content).sessions.map((s) => s.session_id), ['ann-old'], content);
});

test('the past-session tools, against the test model server: the user’s sessions only, and nothing about others', async () => {
  const { page } = await openHarness(env);
  model.reset();
  model.script(
    { calls: [{ name: 'search_past_sessions', arguments: {} }] },
    { calls: [{ name: 'search_past_sessions', arguments: { query: 'volcano' } }] },
    { calls: [{ name: 'read_past_session', arguments: { session_id: 'ann-old', num_turns: 1 } }] },
    { calls: [{ name: 'read_past_session', arguments: { session_id: 'bob-secret' } }] },
    { calls: [{ name: 'read_past_session', arguments: { session_id: 'no-such-session' } }] },
    { text: 'done' },
  );
  const r = await page.evaluate(
    async ({ url }) => {
      const dbName = 'past-tools';
      const write = async (id, userId, items) => new lib.IndexedDbSession(id, { dbName, userId }).addItems(items);
      await write('ann-old', 'ann', [
        { role: 'user', content: 'Tell me about the volcano in Iceland' },
        { role: 'assistant', content: 'Eyjafjallajökull erupted in 2010.' },
        { role: 'user', content: 'And its ash cloud?' },
        { role: 'assistant', content: 'It stopped flights across Europe.' },
      ]);
      await write('ann-other', 'ann', [{ role: 'user', content: 'A recipe for bread' }, { role: 'assistant', content: 'Flour, water, salt.' }]);
      await write('bob-secret', 'bob', [{ role: 'user', content: 'My secret volcano lair' }, { role: 'assistant', content: 'Noted.' }]);
      // The current chat says the word more often than a search returns hits: the past sessions
      // are still found.
      await write('ann-now', 'ann', Array.from({ length: 210 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `volcano ${i}` })));
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'a', model: 'm', pastSessions: { count: 20, turnsPerSession: 3 } });
      const session = new lib.IndexedDbSession('ann-now', { dbName, userId: 'ann' });
      const result = await runner.run(agent, 'what did we talk about?', { session });
      let refused;
      try {
        new lib.Agent({ name: 'b', pastSessions: { count: 0 } });
      } catch (e) {
        refused = `${e.name} ${e.code}`;
      }
      return { answer: result.finalOutput, refused };
    },
    { url: model.url },
  );
  assert.equal(r.answer, 'done');
  assert.equal(r.refused, 'RunnerError INVALID_AGENT');
  // What each tool told the model: the outputs the next requests carried.
  const last = model.requests.at(-1).body;
  const outputs = last.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.equal(outputs.length, 5);
  const [recent, found, transcript, bobs, missing] = outputs;
  const listed = JSON.parse(recent);
  assert.deepEqual(
    listed.sessions.map((s) => s.session_id),
    ['ann-other', 'ann-old'],
    'newest first, not the current one, not bob’s',
  );
  assert.deepEqual(listed.sessions[1].turns, [
    { user: 'Tell me about the volcano in Iceland', assistant: 'Eyjafjallajökull erupted in 2010.' },
    { user: 'And its ash cloud?', assistant: 'It stopped flights across Europe.' },
  ]);
  const search = JSON.parse(found);
  assert.deepEqual(search.sessions.map((s) => s.session_id), ['ann-old']);
  assert.deepEqual(search.sessions[0].turns, [{ turn: 1, user: 'Tell me about the volcano in Iceland', match: 'Tell me about the volcano in Iceland' }]);
  assert.equal(transcript, 'user: And its ash cloud?\nassistant: It stopped flights across Europe.');
  assert.equal(bobs, missing, 'another user’s session reads as one that does not exist');
  assert.match(missing, /no past session/);
  assert.ok(!outputs.join(' ').includes('lair'), 'nothing of bob’s');
});

test('the past-session tools read an edited chat as it reads now: on the branch it was last on, with what that branch shows of the ones it was made from', async () => {
  const { page } = await openHarness(env);
  model.reset();
  model.script(
    { calls: [{ name: 'search_past_sessions', arguments: {} }] },
    { calls: [{ name: 'search_past_sessions', arguments: { query: 'paris' } }] },
    { calls: [{ name: 'search_past_sessions', arguments: { query: 'rome' } }] },
    { calls: [{ name: 'search_past_sessions', arguments: { query: 'lisbon' } }] },
    { calls: [{ name: 'read_past_session', arguments: { session_id: 'trip' } }] },
    { text: 'done' },
  );
  const r = await page.evaluate(
    async ({ url }) => {
      const dbName = 'past-tools-branches';
      // A chat whose record names a branch deleted since (as another tab can between the
      // tool's listing and its read): read on main.
      await new lib.IndexedDbSession('older', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'Plan a day in Oslo' }]);
      await new Promise((done, fail) => {
        const open = indexedDB.open(dbName);
        open.onsuccess = () => {
          const store = open.result.transaction('agent_sessions', 'readwrite').objectStore('agent_sessions');
          const get = store.get('older');
          get.onsuccess = () => {
            store.put({ ...get.result, currentBranch: 'gone' }).onsuccess = () => {
              open.result.close();
              done();
            };
          };
          get.onerror = () => fail(get.error);
        };
      });
      const trip = new lib.IndexedDbSession('trip', { dbName, userId: 'ann' });
      await trip.addItems([
        { role: 'user', content: 'Plan a day in Paris' },
        { role: 'assistant', content: 'Louvre, then the Seine.' },
        { role: 'user', content: 'Now a day in Rome' },
        { role: 'assistant', content: 'Colosseum and pasta.' },
      ]);
      // The second question edited: the chat reads Paris, then Lisbon, from now on.
      await trip.createBranchFromTurn(2, 'edit');
      await trip.addItems([{ role: 'user', content: 'Now a day in Lisbon' }, { role: 'assistant', content: 'Trams and pastéis.' }]);
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'a', model: 'm', pastSessions: true });
      const result = await runner.run(agent, 'where did we plan to go?', { session: new lib.IndexedDbSession('now', { dbName, userId: 'ann' }) });
      return result.finalOutput;
    },
    { url: model.url },
  );
  assert.equal(r, 'done');
  const outputs = model.requests.at(-1).body.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  const [recent, paris, rome, lisbon, transcript] = outputs;
  assert.deepEqual(
    JSON.parse(recent).sessions.map((s) => [s.session_id, s.turns.map((t) => t.user)]),
    [
      ['trip', ['Plan a day in Paris', 'Now a day in Lisbon']],
      ['older', ['Plan a day in Oslo']],
    ],
  );
  assert.deepEqual(JSON.parse(paris).sessions.map((s) => s.turns), [[{ turn: 1, user: 'Plan a day in Paris', match: 'Plan a day in Paris' }]], 'a turn the branch shares with main');
  assert.deepEqual(JSON.parse(rome).sessions, [], 'the question edited away is not the chat’s any more');
  assert.deepEqual(JSON.parse(lisbon).sessions.map((s) => s.turns), [[{ turn: 2, user: 'Now a day in Lisbon', match: 'Now a day in Lisbon' }]], 'the branch’s own turn');
  assert.equal(transcript, 'user: Plan a day in Paris\nassistant: Louvre, then the Seine.\nuser: Now a day in Lisbon\nassistant: Trams and pastéis.');
});

test('a turn the original popped and wrote again, after an edit made from a later turn: the edit does not show it (its view says so exactly), and the past-session tools do not report it as the chat’s', async () => {
  const { page } = await openHarness(env);
  model.reset();
  model.script(
    { calls: [{ name: 'search_past_sessions', arguments: { query: 'madrid' } }] },
    { calls: [{ name: 'search_past_sessions', arguments: { query: 'rome' } }] },
    { text: 'done' },
  );
  const r = await page.evaluate(
    async ({ url }) => {
      const dbName = 'past-tools-rewritten';
      const trip = new lib.IndexedDbSession('trip', { dbName, userId: 'ann' });
      await trip.addItems([
        { role: 'user', content: 'Plan a day in Paris' },
        { role: 'assistant', content: 'Louvre, then the Seine.' },
        { role: 'user', content: 'Now a day in Rome' },
        { role: 'assistant', content: 'Colosseum and pasta.' },
        { role: 'user', content: 'Now a day in Berlin' },
        { role: 'assistant', content: 'The Wall and museums.' },
      ]);
      // The third question edited: the chat reads Paris, Rome, then Lisbon.
      await trip.createBranchFromTurn(3, 'edit');
      await trip.addItems([{ role: 'user', content: 'Now a day in Lisbon' }, { role: 'assistant', content: 'Trams and pastéis.' }]);
      // On the original, Undo twice (the edit keeps Rome, as its own copy), then another second turn.
      const main = new lib.IndexedDbSession('trip', { dbName, userId: 'ann', branch: 'main' });
      for (let i = 0; i < 4; i++) await main.popItem();
      await main.addItems([{ role: 'user', content: 'Now Madrid' }, { role: 'assistant', content: 'Prado and tapas.' }]);
      await trip.switchBranch('edit');
      const edit = (await trip.listBranches()).find((b) => b.branchId === 'edit');
      const shows = (hit) => edit.view.some((v) => v.branchId === (hit.branch ?? 'main') && hit.seq >= v.from && hit.seq < v.to);
      const search = async (query) =>
        (await lib.searchSessions({ dbName, userId: 'ann', query })).map((hit) => [hit.turn, hit.branch ?? 'main', shows(hit)]);
      const hits = { madrid: await search('madrid'), rome: await search('rome') };
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'a', model: 'm', pastSessions: true });
      const result = await runner.run(agent, 'where did we go?', { session: new lib.IndexedDbSession('now', { dbName, userId: 'ann' }) });
      return { hits, done: result.finalOutput, items: (await trip.getItems()).map((i) => i.content) };
    },
    { url: model.url },
  );
  assert.deepEqual(r.items, ['Plan a day in Paris', 'Louvre, then the Seine.', 'Now a day in Rome', 'Colosseum and pasta.', 'Now a day in Lisbon', 'Trams and pastéis.']);
  // Main's Madrid is turn 2 there, below the turn the edit was made from: not the edit's.
  assert.deepEqual(r.hits.madrid, [[2, 'main', false]]);
  assert.deepEqual(r.hits.rome, [[2, 'edit', true]]);
  assert.equal(r.done, 'done');
  const [madrid, rome] = model.requests.at(-1).body.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
  assert.deepEqual(madrid.sessions, [], 'the chat as it reads now has no Madrid');
  assert.deepEqual(rome.sessions.map((s) => s.turns), [[{ turn: 2, user: 'Now a day in Rome', match: 'Now a day in Rome' }]]);
});

test('the past-session search finds what an edited chat shows below 200 better hits on its original that it no longer shows', async () => {
  const { page } = await openHarness(env);
  model.reset();
  model.script({ calls: [{ name: 'search_past_sessions', arguments: { query: 'zebra' } }] }, { text: 'done' });
  const r = await page.evaluate(
    async ({ url }) => {
      const dbName = 'past-tools-deep';
      const long = new lib.IndexedDbSession('long', { dbName, userId: 'ann' });
      const turns = [];
      for (let i = 0; i < 201; i++) turns.push({ role: 'user', content: `zebra zebra zebra ${i}` }, { role: 'assistant', content: `ok ${i}` });
      await long.addItems(turns);
      // The first question edited: the chat shows none of those, and one weaker match of its own.
      await long.createBranchFromTurn(1, 'edit');
      await long.addItems([{ role: 'user', content: 'tell me about the savanna, its grass, its lions, its weather, its rivers and one zebra' }, { role: 'assistant', content: 'Sure.' }]);
      const hits = await lib.searchSessions({ dbName, userId: 'ann', query: 'zebra', limit: 200 });
      const runner = new lib.Runner({ baseUrl: url });
      const agent = new lib.Agent({ name: 'a', model: 'm', pastSessions: true });
      const result = await runner.run(agent, 'what did we say about zebras?', { session: new lib.IndexedDbSession('now', { dbName, userId: 'ann' }) });
      return { done: result.finalOutput, firstRound: hits.length, branchInFirst: hits.some((h) => h.branch === 'edit') };
    },
    { url: model.url },
  );
  assert.equal(r.done, 'done');
  assert.deepEqual({ firstRound: r.firstRound, branchInFirst: r.branchInFirst }, { firstRound: 200, branchInFirst: false }, 'the edit’s own match is below the original’s 200');
  const [found] = model.requests.at(-1).body.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
  assert.deepEqual(found.sessions.map((s) => [s.session_id, s.turns.map((t) => t.turn)]), [['long', [1]]]);
});

test('over an encrypted session, compacted or not, the past-session tools find nothing: not its own sealed chats, nor the user’s others', async () => {
  const { page } = await openHarness(env);
  model.reset();
  const asks = [
    { calls: [{ name: 'search_past_sessions', arguments: {} }] },
    { calls: [{ name: 'search_past_sessions', arguments: { query: 'volcano' } }] },
    { calls: [{ name: 'read_past_session', arguments: { session_id: 'sealed-old' } }] },
    { text: 'done' },
  ];
  model.script(...asks, ...asks);
  const r = await page.evaluate(
    async ({ url }) => {
      const dbName = 'past-tools-sealed';
      const key = crypto.getRandomValues(new Uint8Array(32));
      const sealed = (id) => new lib.EncryptedSession(new lib.IndexedDbSession(id, { dbName, userId: 'ann' }), { key });
      await sealed('sealed-old').addItems([{ role: 'user', content: 'Tell me about the volcano' }, { role: 'assistant', content: 'It erupted.' }]);
      await new lib.IndexedDbSession('plain-old', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'volcano facts' }]);
      const agent = new lib.Agent({ name: 'a', model: 'm', pastSessions: true });
      const runner = new lib.Runner({ baseUrl: url });
      const plain = await runner.run(agent, 'what did we talk about?', { session: sealed('sealed-now') });
      const compacted = new lib.CompactionSession(sealed('sealed-compacted'), { runner, model: 'm', shouldCompact: () => false });
      const wrapped = await runner.run(agent, 'what did we talk about?', { session: compacted });
      await wrapped.background;
      return [plain.finalOutput, wrapped.finalOutput];
    },
    { url: model.url },
  );
  assert.deepEqual(r, ['done', 'done']);
  const lastOfEachRun = model.requests.filter((q) => q.body.messages.at(-1).role === 'tool' && q.body.messages.filter((m) => m.role === 'tool').length === 3);
  assert.equal(lastOfEachRun.length, 2);
  for (const request of lastOfEachRun) {
    const outputs = request.body.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    for (const output of outputs) assert.match(output, /not encrypted/);
    assert.ok(!outputs.join(' ').includes('sealed-old') && !outputs.join(' ').includes('plain-old'));
  }
});

test('the demo marks in a hit’s snippet what the search matched (German and French quotes a phrase): one character that ends a run, words before another script’s punctuation, words with a soft hyphen or joiner, full-width letters, Arabic and Hebrew with their vowel marks, letters of transliterations, half-width katakana, numbers by signs and units, a name’s middle dot, variation selectors, kana with a combining sound mark, Hangul and Cyrillic in NFD', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const { matchRanges, parseQuery } = await import('/www/highlight.js');
    const dbName = `search-marks-${Math.random()}`;
    const cases = [
      ['我有一只猫。', '猫', '猫'],
      ['우리집에 가요', '집', '집'],
      ['मैं घर जा रहा हूँ।', 'हूँ', 'हूँ'],
      ['كيف؟ تمام', 'كيف', 'كيف'],
      ['Silben\u00ADtrennung hilft', 'silbentrennung', 'Silben\u00ADtrennung'],
      ['می\u200Cخواهم بروم', 'میخواهم', 'می\u200Cخواهم'],
      ['ＯｐｅｎＡＩ ２０２４年のモデル', '"openai 2024"', 'ＯｐｅｎＡＩ ２０２４'],
      ['Released by OpenAI in 2024', 'ＯＰＥＮＡＩ', 'OpenAI'],
      ['قال أحمد: شكراً جزيلاً', 'احمد', 'أحمد'],
      ['قال أحمد: شكراً جزيلاً', 'شكرا', 'شكراً'],
      ['שָׁלוֹם לכולם', 'שלום', 'שָׁלוֹם'],
      ['هو مسؤول هنا', 'مسوول', 'مسؤول'],
      // Latin letters of transliterations, Welsh; half-width katakana, its sound marks with it.
      ['Kṛṣṇa and Muḥammad', 'krsna', 'Kṛṣṇa'],
      ['Ẃyth o’r gloch', 'wyth', 'Ẃyth'],
      ['ｶﾀｶﾅのﾃﾞｰﾀです', 'データ', 'ﾃﾞｰﾀ'],
      ['カタカナ', 'ｶﾀｶﾅ', 'カタカナ'],
      ['ｶﾀｶﾅ', 'ナ', 'ﾅ'],
      ['ﾊﾞｽ', 'ス', 'ｽ'],
      ['Əli and ƊAN', 'əli ɗan', ['Əli', 'ƊAN']],
      // A query word of several tokens with one character of a script written without spaces,
      // or a prefix: a clause per token.
      ['ＯｐｅｎＡＩ ２０２４年のモデル', '2024年', '２０２４年'],
      ['GPT-4o is here', 'gpt-4*', ['GPT', '4']],
      ['the GPT-4o release', '“gpt 4o”', 'GPT-4o'],
      // German and French quotes (the closing `“` of German ones opened a phrase to the end).
      ['der große graue Elefant im alten Zoo', '„große graue“ Elefant Zoo', ['große graue', 'Elefant', 'Zoo']],
      ['le grand éléphant gris du zoo', '«grand éléphant» zoo', ['grand éléphant', 'zoo']],
      // A number after a full-width sign or before a unit; a byte order mark; a name's middle
      // dot; an ideograph's variation selector.
      ['￥5000の商品', '5000', '5000'],
      ['重さ5㎏です', '5', '5'],
      ['\uFEFFhello world', 'hello', 'hello'],
      ['ジョン・スミスさん', 'ジョンスミス', 'ジョン・スミス'],
      ['ｼﾞｮﾝ･ｽﾐｽさん', 'スミス', 'ｽﾐｽ'],
      ['约翰·史密斯先生', '约翰史密斯', '约翰·史密斯'],
      ['葛\u{E0100}飾区に住む', '葛飾', '葛\u{E0100}飾'],
      // A character past U+FFFF (CJK Extension B) alone: that character, not its pair.
      ['𠮷野家で食べた', '𠮷', '𠮷'],
      // Kana with a combining sound mark (text in NFD, as file names on macOS are), found as
      // typed (NFC), and the other way round; a combining accent over an ideograph.
      ['ヘ\u{309A}ーシ\u{3099}を開く', 'ページ', 'ヘ\u{309A}ーシ\u{3099}'],
      ['ファイルのデータ', 'テ\u{3099}ータ', 'データ'],
      ['は\u{3099}か', 'ば', 'は\u{3099}'],
      ['東\u{301}京タワー', '東京', '東\u{301}京'],
      // A half-width name's middle dot after a sound mark; Hangul written as jamo and a Cyrillic
      // letter with its mark (NFD), found as typed (NFC), and the other way round.
      ['ﾌﾞﾗｯﾄﾞ･ﾋﾟｯﾄの映画', 'ブラッドピット', 'ﾌﾞﾗｯﾄﾞ･ﾋﾟｯﾄ'],
      ['\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}\u{110B}\u{1165} 공부', '한국어', '\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}\u{110B}\u{1165}'],
      ['Купил и\u{306}огурт', 'йогурт', 'и\u{306}огурт'],
      ['мой дом', 'мои\u{306}', 'мой'],
      ['ӁАЛ', 'ӂал', 'ӁАЛ'],
    ];
    const out = [];
    for (const [i, [text, query, marked]] of cases.entries()) {
      const s = new lib.IndexedDbSession(`c${i}`, { dbName, userId: 'u' });
      await s.addItems([{ role: 'user', content: text }]);
      const hits = await lib.searchSessions({ dbName, userId: 'u', query, sessionIds: [`c${i}`] });
      const snippet = hits[0]?.snippet ?? '';
      out.push([query, hits.length, matchRanges(snippet, parseQuery(query)).map(([a, b]) => snippet.slice(a, b)), marked]);
    }
    return out;
  });
  for (const [query, found, marks, marked] of r) {
    assert.equal(found, 1, `${query} is found`);
    assert.deepEqual(marks, [marked].flat(), `${query} is marked`);
  }
});

test('applyHistoryMutations from an object that does not index tool calls keeps the tool rows it moves findable, as they were indexed (main and a session with branches)', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const out = {};
    for (const branched of [false, true]) {
      const dbName = `mutations-tools-${branched}-${Math.random()}`;
      const id = 'chat';
      const tools = new lib.IndexedDbSession(id, { dbName, userId: 'ann', index: { tools: true } });
      const call = (q) => ({ type: 'function_call', callId: 'c1', name: 'lookup', arguments: JSON.stringify({ q }) });
      await tools.addItems([
        { role: 'user', content: 'look it up' },
        call('zanzibar'),
        call('zanzibar'),
        { type: 'function_call_result', callId: 'c1', name: 'lookup', output: 'kilimanjaro facts' },
        { role: 'assistant', content: 'done' },
      ]);
      if (branched) await new lib.IndexedDbSession(id, { dbName, userId: 'ann' }).createBranchFromTurn(1);
      const find = async (query) => (await lib.searchSessions({ dbName, userId: 'ann', query })).filter((h) => h.branch === undefined).length;
      const before = await find('kilimanjaro');
      // The duplicate call removed: the rows after it move.
      await new lib.IndexedDbSession(id, { dbName, userId: 'ann' }).applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: call('zanzibar island') }] });
      const items = await tools.getItems();
      out[branched ? 'branched' : 'main'] = { before, after: await find('kilimanjaro'), items: items.length };
    }
    return out;
  });
  for (const [name, o] of Object.entries(r)) assert.deepEqual(o, { before: 1, after: 1, items: 4 }, name);
});

test('a long item (more distinct terms than one is indexed under) is found by a word or character past them, alone or with others; 様々 is a word of its own; a Thai snippet keeps each letter with its marks', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'search-long-items');
  const r = await page.evaluate(async () => {
    const s = new lib.IndexedDbSession('long', { ...db, userId: 'ann' });
    const words = Array.from({ length: 2100 }, (_, i) => `w${i}`).join(' ');
    // About 2,400 distinct pairs of Chinese characters, then a cat.
    const hanzi = Array.from({ length: 2400 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7) % 20000))).join('');
    await s.addItems([
      { role: 'user', content: `${words} hippopotamus` },
      { role: 'assistant', content: `${hanzi}我有一只猫` },
      { role: 'user', content: 'hippo alone' },
      { role: 'assistant', content: '様々な問題' },
      { role: 'user', content: '皆様こんにちは' },
      { role: 'assistant', content: `${'ก้'.repeat(60)}กแมว${'ก้'.repeat(60)}` },
    ]);
    const snippet = (await lib.searchSessions({ ...db, userId: 'ann', query: 'แมว' }))[0]?.snippet ?? '';
    return {
      late: await find('hippopotamus'),
      withEarly: await find('w3 hippopotamus'),
      prefix: await find('hippopotam*'),
      phrase: await find('"w2099 hippopotamus"'),
      none: await find('w3 rhinoceros'),
      cat: await find('猫'),
      catPair: await find('只猫'),
      iteration: await find('様々'),
      snippetStart: snippet.codePointAt(snippet.startsWith('…') ? 1 : 0).toString(16),
      snippetEnd: snippet.codePointAt(snippet.length - (snippet.endsWith('…') ? 2 : 1)).toString(16),
    };
  });
  assert.deepEqual(r.late, ['long:0']);
  assert.deepEqual(r.withEarly, ['long:0']);
  assert.deepEqual(r.prefix, ['long:0']);
  assert.deepEqual(r.phrase, ['long:0']);
  assert.deepEqual(r.none, []);
  assert.deepEqual(r.cat, ['long:1']);
  assert.deepEqual(r.catPair, ['long:1']);
  assert.deepEqual(r.iteration, ['long:3'], '様々 is not 様 alone (皆様 does not hold it)');
  assert.equal(r.snippetStart, 'e01', 'the snippet starts with a letter, not with a tone mark cut from it');
  assert.equal(r.snippetEnd, 'e49', 'and ends with the letter’s tone mark, not cut before it');
});

test('a word the index did not narrow by (past the 12 a long query looks up) is checked on the candidates the newest first until enough hold it: an older item holding every word is found behind 1,500 newer ones that lack it', async () => {
  const { page } = await openHarness(env);
  await helpers(page, 'search-past-the-first-thousand');
  const r = await page.evaluate(async () => {
    const s = new lib.IndexedDbSession('pasted', { ...db, userId: 'ann' });
    const long = 'alphabetical bicycles carnivorous dandelions elephantine fantastical gargantuan hippopotamus iridescent jellyfishes kaleidoscope labyrinthine';
    await s.addItems([{ role: 'user', content: `${long} ox` }]);
    await s.addItems(Array.from({ length: 1500 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${long} ${i}` })));
    return { all: await find(`${long} ox`), some: (await find(long, { limit: 3 })).length };
  });
  assert.deepEqual(r.all, ['pasted:0']);
  assert.equal(r.some, 3);
});
