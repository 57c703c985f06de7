// Schema migrations, in place, from a database the previous release wrote: each fixture in
// tests/fixtures/db/ (made by tests/fixtures/db/make.mjs with that release) is loaded into
// IndexedDB exactly as it was (version, stores, indexes, records), then opened by this build.
// Every session, item and order must come through, and the new stores and indexes must exist.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { start, openHarness, root } from './harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

const fixtures = readdirSync(join(root, 'tests/fixtures/db')).filter((f) => /^v\d+\.json$/.test(f));

/** The schema version this build writes: its newest migration's (src/core/schema.rs). */
const SCHEMA_VERSION = Math.max(...[...readFileSync(join(root, 'src/core/schema.rs'), 'utf8').matchAll(/to_version: (\d+),/g)].map((m) => Number(m[1])));

test('every schema version before this one has its fixture, so that each migration is tested from the version before', () => {
  assert.ok(SCHEMA_VERSION >= 9, `read ${SCHEMA_VERSION} from src/core/schema.rs`);
  const versions = fixtures.map((f) => Number(f.slice(1, -'.json'.length))).sort((a, b) => a - b);
  assert.deepEqual(versions, Array.from({ length: SCHEMA_VERSION - 1 }, (_, i) => i + 1));
});

/** Writes a fixture into a new database named `dbName`, as its release left it. */
async function load(page, dbName, fixture) {
  await page.evaluate(
    async ({ dbName, fixture }) => {
      const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
      await request(indexedDB.deleteDatabase(dbName));
      const open = indexedDB.open(dbName, fixture.version);
      open.onupgradeneeded = () => {
        for (const store of fixture.stores) {
          const created = open.result.createObjectStore(store.name, { keyPath: store.keyPath, autoIncrement: store.autoIncrement });
          for (const index of store.indexes) created.createIndex(index.name, index.keyPath, { unique: index.unique, multiEntry: index.multiEntry });
        }
      };
      const db = await request(open);
      const tx = db.transaction(fixture.stores.map((s) => s.name), 'readwrite');
      for (const store of fixture.stores) for (const record of store.records) tx.objectStore(store.name).put(record);
      await new Promise((ok, fail) => ((tx.oncomplete = ok), (tx.onerror = () => fail(tx.error))));
      db.close();
    },
    { dbName, fixture },
  );
}

for (const file of fixtures) {
  test(`a database written by schema ${file.replace('.json', '')} opens with every session and item intact, and the new stores`, async () => {
    const fixture = JSON.parse(readFileSync(join(root, 'tests/fixtures/db', file), 'utf8'));
    const { page } = await openHarness(env);
    const dbName = `migrate-${file}`;
    await load(page, dbName, fixture);
    const sessions = fixture.stores.find((s) => s.name === 'agent_sessions').records;
    const rows = fixture.stores.find((s) => s.name === 'agent_messages').records;
    const r = await page.evaluate(
      async ({ dbName, sessions }) => {
        const out = { histories: {}, listed: {} };
        for (const record of sessions) {
          const s = new lib.IndexedDbSession(record.id, { dbName, userId: record.userId ?? undefined });
          out.histories[record.id] = await s.getItems();
        }
        out.lastTurns = {};
        out.infos = {};
        for (const record of sessions) {
          const t = new lib.IndexedDbSession(record.id, { dbName, userId: record.userId ?? undefined });
          out.lastTurns[record.id] = await t.getRecentTurns(1);
          out.infos[record.id] = await t.getInfo();
        }

        // Each user's sessions, and (under null) every session.
        for (const user of [...new Set(sessions.map((r) => r.userId))]) {
          out.listed[user] = await lib.listSessions({ dbName, userId: user ?? undefined });
        }
        // Every migrated item is found by search (the index of rows written before it existed is
        // built after the upgrade): a word of each session's first message.
        out.searched = {};
        for (const record of sessions) {
          // (A whole word of ASCII letters: `ammad` in `Muḥammad` is not one.)
          const words = (t) => t.split(/[^\p{L}\p{M}\p{N}]+/u).filter((w) => /^[a-z]{3,}$/i.test(w));
          const text = out.histories[record.id].map((i) => (typeof i.content === 'string' ? i.content : '')).find((t) => words(t).length > 0);
          if (!text) continue;
          const [word] = words(text);
          const hits = await lib.searchSessions({ dbName, userId: record.userId ?? null, query: word, limit: 1000 });
          out.searched[record.id] = { word, found: hits.some((h) => h.sessionId === record.id), others: hits.filter((h) => h.sessionId !== record.id && !sessions.some((s) => s.id === h.sessionId && (s.userId ?? null) === (record.userId ?? null))).length };
        }
        // Rows an older tokeniser indexed are indexed again: a character that ends a run, a word
        // before a danda (the fourth); full-width letters and digits, Arabic and Hebrew without
        // their marks, Arabic letter variants (the fifth); the Latin letters of transliterations,
        // half-width katakana, a hosted tool call's output in a session that indexes tools (the
        // sixth); a word past an item's first 2,000 terms, Japanese iteration marks (the seventh);
        // a number after a full-width sign, a name's middle dot, a variation selector (the eighth);
        // kana with a combining sound mark (NFD), a combining mark over an ideograph (the ninth);
        // a half-width name's middle dot after a sound mark, Hangul and Cyrillic in NFD, Cyrillic
        // capitals past U+04C0 (the tenth).
        const scripts = sessions.find((s) => s.id === 'scripts');
        if (scripts) {
          out.scripts = {};
          for (const query of ['猫', '집', 'हूँ', 'openai', '2024', 'شكرا', 'احمد', 'שלום', 'muhammad krsna', 'wyth gorde', 'カタカナ', 'データ', 'zanzibar', 'hippopotamus', '様々', '5000', 'ジョンスミス', '葛飾', 'ページ', 'ばか', '東京', 'ブラッドピット', '한국어', 'йогурт', 'ӂал']) {
            const hits = await lib.searchSessions({ dbName, userId: scripts.userId, query });
            out.scripts[query] = hits.map((h) => [h.sessionId, h.seq]);
          }
        }
        // Every row of the stores beside the sessions' records, as the release left it (but the
        // search terms, which the index build writes): a branch's own rows, the archive, the
        // usage, the operation log.
        const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
        out.rows = {};
        const raw = await request(indexedDB.open(dbName));
        for (const name of ['agent_messages', 'agent_archive', 'agent_usage', 'agent_operations']) {
          if (!raw.objectStoreNames.contains(name)) continue;
          out.rows[name] = (await request(raw.transaction(name).objectStore(name).getAll())).map(({ terms, ...row }) => row);
        }
        raw.close();
        // An operation applied before the upgrade is still known: applied again, it changes
        // nothing; another under its id is refused.
        const work = sessions.find((s) => s.id === 'alice-work');
        if (work && out.rows.agent_operations?.length) {
          const w = new lib.IndexedDbSession(work.id, { dbName, userId: work.userId ?? undefined });
          const items = await w.getItems();
          const at = items.findIndex((i) => i.content === 'a question after a transaction');
          const last = items[at - 1];
          const again = { type: 'replace_suffix', expectedSuffix: [last], replacement: [last, { role: 'user', content: 'a question after a transaction' }] };
          out.replayed = await attempt(() => w.applyHistoryTransaction({ operationId: 'fixture-op', transaction: again }));
          out.unchanged = (await w.getItems()).length === items.length;
          const other = { type: 'replace_suffix', expectedSuffix: [items.at(-1)], replacement: [items.at(-1), { role: 'user', content: 'something else' }] };
          out.conflict = await attempt(() => w.applyHistoryTransaction({ operationId: 'fixture-op', transaction: other }));
        }
        // The migrated sessions take the new capabilities and go on numbering where they were.
        const first = sessions[0];
        const s = new lib.IndexedDbSession(first.id, { dbName, userId: first.userId ?? undefined });
        const last = (await s.getItems(1))[0];
        await s.applyHistoryTransaction({ operationId: 'after-migration', transaction: { type: 'replace_suffix', expectedSuffix: [last], replacement: [last, { role: 'user', content: 'new' }] } });
        await s.addItems([{ role: 'assistant', content: 'newer' }]);
        out.continued = await s.getItems(3);
        // A session that had its first user message before the upgrade is not named after the
        // user message written after it.
        out.titleAfter = (await s.getInfo()).title;
        out.archives = {};
        for (const record of sessions) {
          const a = new lib.IndexedDbSession(record.id, { dbName, userId: record.userId ?? undefined });
          out.archives[record.id] = await a.getArchivedItems();
        }
        out.popped = await s.popItem();
        const db = await request(indexedDB.open(dbName));
        const tx = db.transaction([...db.objectStoreNames]);
        out.version = db.version;
        out.stores = Object.fromEntries(
          [...db.objectStoreNames].map((name) => {
            const store = tx.objectStore(name);
            return [name, { keyPath: store.keyPath, indexes: [...store.indexNames].map((i) => [i, store.index(i).keyPath, store.index(i).unique, store.index(i).multiEntry]) }];
          }),
        );
        db.close();
        return out;
      },
      { dbName, sessions },
    );
    // Every item of every session, verbatim and in order.
    for (const record of sessions) {
      const expected = rows
        .filter((row) => row.sessionId === record.id)
        .sort((x, y) => x.seq - y.seq)
        .map((row) => row.item);
      assert.equal(expected.length, record.itemCount, `${record.id}: the fixture is consistent`);
      assert.deepEqual(r.histories[record.id], expected, record.id);
    }
    for (const [user, listed] of Object.entries(r.listed)) {
      const mine = sessions.filter((s) => user === 'null' || String(s.userId) === user).sort((x, y) => y.updatedAt - x.updatedAt);
      assert.deepEqual(
        listed.map((i) => [i.sessionId, i.itemCount, i.createdAt, i.updatedAt]),
        mine.map((s) => [s.id, s.itemCount, s.createdAt, s.updatedAt]),
        `the sessions of ${user}`,
      );
    }
    for (const [name, stored] of Object.entries(r.rows)) {
      const byKey = (rows) => rows.map((row) => JSON.stringify(row)).sort();
      const expected = (fixture.stores.find((s) => s.name === name)?.records ?? []).map(({ terms, ...row }) => row);
      assert.deepEqual(byKey(stored), byKey(expected), `every row of ${name}, as it was`);
    }
    if (fixture.stores.some((s) => s.name === 'agent_operations' && s.records.length > 0)) {
      assert.deepEqual([r.replayed.ok, r.unchanged], [true, true], `the operation applied before the upgrade, applied again: ${JSON.stringify(r.replayed)}`);
      assert.equal(r.conflict.code, 'TRANSACTION_CONFLICT', JSON.stringify(r.conflict));
    }
    assert.deepEqual(r.continued.slice(1).map((i) => i.content), ['new', 'newer']);
    assert.equal(r.titleAfter, sessions[0].title ?? null, 'the title after a new user message');
    assert.equal(r.popped.content, 'newer');
    // The archive, where the fixture's version had one.
    const archive = fixture.stores.find((s) => s.name === 'agent_archive')?.records ?? [];
    for (const record of sessions) {
      const expected = archive.filter((row) => row.sessionId === record.id).sort((x, y) => x.position - y.position).map((row) => row.item);
      assert.deepEqual(r.archives[record.id], expected, `the archive of ${record.id}`);
    }
    assert.equal(r.version, SCHEMA_VERSION);
    assert.deepEqual(r.stores.agent_operations, { keyPath: ['sessionId', 'opSeq'], indexes: [['by_operation', ['sessionId', 'operationId'], true, false]] });
    assert.deepEqual(r.stores.agent_archive, { keyPath: ['sessionId', 'position'], indexes: [] });
    assert.deepEqual(r.stores.agent_messages, {
      keyPath: ['sessionId', 'seq'],
      indexes: [
        ['by_term', 'terms', false, true],
        ['by_turn', ['sessionId', 'turn'], false, false],
      ],
    });
    assert.deepEqual(r.stores.agent_usage, { keyPath: ['sessionId', 'branch', 'turn'], indexes: [] });
    assert.deepEqual(r.stores.agent_meta, { keyPath: 'name', indexes: [] });
    for (const [id, { word, found, others }] of Object.entries(r.searched)) {
      assert.ok(found, `${id} is found by "${word}"`);
      assert.equal(others, 0, `a search for ${id}'s owner finds no other owner's session`);
    }
    assert.ok(Object.keys(r.searched).length >= 3);
    if (fixture.version >= 5) {
      const seqs = rows.filter((row) => row.sessionId === 'scripts').map((row) => row.seq);
      const fifth = fixture.version >= 6 ? [['scripts', seqs[2]]] : [];
      const sixth = fixture.version >= 7 ? [['scripts', seqs[3]]] : [];
      const tool = fixture.version >= 7 ? [['tools', rows.find((row) => row.sessionId === 'tools' && row.item.type === 'hosted_tool_call').seq]] : [];
      const seventh = (k) => (fixture.version >= 8 ? [['scripts', seqs[k]]] : []);
      const eighth = fixture.version >= 9 ? [['scripts', seqs[7]]] : [];
      const ninth = fixture.version >= 10 ? [['scripts', seqs[8]]] : [];
      const tenth = fixture.version >= 11 ? [['scripts', seqs[9]]] : [];
      assert.deepEqual(
        r.scripts,
        {
          猫: [['scripts', seqs[0]]],
          집: [['scripts', seqs[0]]],
          हूँ: [['scripts', seqs[1]]],
          openai: fifth,
          2024: fifth,
          شكرا: fifth,
          احمد: fifth,
          שלום: fifth,
          'muhammad krsna': sixth,
          'wyth gorde': sixth,
          カタカナ: sixth,
          データ: sixth,
          zanzibar: tool,
          // (Before, 様々 was 様 alone, found in 皆様 too.)
          hippopotamus: seventh(4),
          様々: seventh(5),
          5000: eighth,
          ジョンスミス: eighth,
          葛飾: eighth,
          ページ: ninth,
          ばか: ninth,
          東京: ninth,
          ブラッドピット: tenth,
          한국어: tenth,
          йогурт: tenth,
          ӂал: tenth,
        },
        'found with the terms of the tenth tokeniser',
      );
    }
    // The new index was filled from the rows already stored: the newest turns of every session
    // read through it are the newest turns of its history.
    for (const record of sessions) {
      const items = r.histories[record.id];
      const lastUser = items.map((i) => i.role === 'user' && (i.type ?? 'message') === 'message').lastIndexOf(true);
      assert.deepEqual(r.lastTurns[record.id], lastUser < 0 ? items : items.slice(lastUser), `the newest turn of ${record.id}`);
      assert.equal(r.infos[record.id].turnCount, record.lastTurn);
      // Metadata comes through as the record held it; versions before 3 had none.
      const { title, summary, topics, state } = r.infos[record.id];
      assert.deepEqual({ title, summary, topics, state }, {
        title: record.title ?? null,
        summary: record.summary ?? null,
        topics: record.topics ?? null,
        state: record.state ?? null,
      }, `the metadata of ${record.id}`);
    }
  });
}
