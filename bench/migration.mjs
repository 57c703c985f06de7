// How long the in-place schema migration of a large database takes, and that it loses nothing:
// a database written by schema version 1 (the stores and indexes of
// tests/fixtures/db/v1.json, records of the same shapes) holding 100,000 items in 100 sessions
// of 1,000, opened by this build, which migrates it to its current version.
//
//   node bench/migration.mjs [--sessions=100] [--items=1000] [--runs=3] [--raw] [--pkg=dir]
//
// Uses the package as built in pkg/ (node scripts/build.mjs builds it; --pkg serves another
// build as /pkg/), in headless Chromium on an on-disk profile (bench/browser.mjs). Each run
// writes a fresh version 1 database with raw IndexedDB in one page, then in a new page times
// `new IndexedDbSession(...)` and its first call, `getItems(1)`: opening the database, which runs
// every migration from version 1, and that read. It then checks, in that page, every item of
// every session, the sessions list, the new index and the newest turns read through it. For
// comparison, the same open and read of the migrated database, in yet another page, with nothing
// left to migrate; and with --raw, the same upgrade written by hand with raw IndexedDB (the stores
// of version 2, the index of version 3, the usage store of version 4, the index and store of
// version 5) on another fresh version 1 database, which is what the
// browser itself takes. Prints the median of the runs, each run's times, and the machine line.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBrowser } from './browser.mjs';
import { machine, machineLine } from './machine.mjs';
import { formatMs, median, benchArgs } from './report.mjs';
import { root } from '../tests/browser/harness.mjs';

/** The schema version this build writes: its newest migration's (src/core/schema.rs). */
const SCHEMA_VERSION = Math.max(...[...readFileSync(join(root, 'src/core/schema.rs'), 'utf8').matchAll(/to_version: (\d+),/g)].map((m) => Number(m[1])));

const fmt = (n) => n.toLocaleString('en-US');
const duration = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : formatMs(ms));

/** The version 1 schema, as the fixture records it: each store's name, key, indexes, and the
 * fields of its records (those of every record of that store, in the fixture's order). */
function versionOne() {
  const fixture = JSON.parse(readFileSync(join(root, 'tests/fixtures/db/v1.json'), 'utf8'));
  assert.equal(fixture.version, 1);
  const stores = fixture.stores.map(({ records, ...store }) => {
    const fields = Object.keys(records[0]);
    for (const record of records) assert.deepEqual(Object.keys(record), fields, `${store.name}: one record shape`);
    return { ...store, fields };
  });
  return { version: fixture.version, stores };
}

/**
 * In the page: a new database `dbName` at version 1 with exactly the fixture's stores and
 * indexes, holding `sessions` sessions of `items` items (makeItems: user message and answer
 * alternating) as version 1 wrote them: each user message opens the next turn, numbered from 1;
 * the record counts them. Every tenth session has no user, the others belong to 4 users.
 */
async function writeVersionOne(page, dbName, schema, { sessions, items }) {
  return page.evaluate(
    async ({ dbName, schema, sessions, items }) => {
      const { makeItem, startsTurn } = window.items;
      const request = (r) =>
        new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
      const committed = (tx) =>
        new Promise((ok, fail) => ((tx.oncomplete = () => ok()), (tx.onabort = () => fail(tx.error))));
      const started = performance.now();
      await request(indexedDB.deleteDatabase(dbName));
      const open = indexedDB.open(dbName, schema.version);
      open.onupgradeneeded = () => {
        for (const store of schema.stores) {
          const created = open.result.createObjectStore(store.name, {
            keyPath: store.keyPath,
            autoIncrement: store.autoIncrement,
          });
          for (const index of store.indexes) {
            created.createIndex(index.name, index.keyPath, { unique: index.unique, multiEntry: index.multiEntry });
          }
        }
      };
      const db = await request(open);
      const fields = Object.fromEntries(schema.stores.map((s) => [s.name, s.fields]));
      const shapes = [];
      const base = Date.UTC(2026, 0, 1);
      for (let s = 0; s < sessions; s++) {
        const id = `session-${String(s).padStart(4, '0')}`;
        const createdAt = base + s * 60_000;
        const tx = db.transaction(['agent_sessions', 'agent_messages'], 'readwrite');
        const done = committed(tx);
        const messages = tx.objectStore('agent_messages');
        let turn = 0;
        for (let seq = 0; seq < items; seq++) {
          const item = makeItem(id, seq);
          if (startsTurn(item)) turn += 1;
          const row = { sessionId: id, seq, turn, createdAt: createdAt + seq, item };
          if (s === 0 && seq === 0) shapes.push(['agent_messages', Object.keys(row)]);
          messages.put(row);
        }
        const record = {
          id,
          userId: s % 10 === 9 ? null : `user-${s % 4}`,
          createdAt,
          updatedAt: createdAt + items,
          itemCount: items,
          firstSeq: 0,
          nextSeq: items,
          lastTurn: turn,
        };
        if (s === 0) shapes.push(['agent_sessions', Object.keys(record)]);
        tx.objectStore('agent_sessions').put(record);
        await done;
      }
      db.close();
      // Every record has the fields the fixture's records have, in their order.
      for (const [store, keys] of shapes) {
        if (JSON.stringify(keys) !== JSON.stringify(fields[store])) {
          throw new Error(`${store} records: ${keys} instead of the fixture's ${fields[store]}`);
        }
      }
      return { ms: performance.now() - started };
    },
    { dbName, schema, sessions, items },
  );
}

/** In the page: `new IndexedDbSession` and its first call, timed; the database opens there. */
function openAndRead(page, dbName, { userId }) {
  return page.evaluate(
    async ({ dbName, userId }) => {
      const start = performance.now();
      const session = new lib.IndexedDbSession('session-0000', { dbName, userId });
      const newest = await session.getItems(1);
      const ms = performance.now() - start;
      return { ms, newest: newest.map((i) => i.id) };
    },
    { dbName, userId },
  );
}

/**
 * In the page, the upgrade by hand: open at this build's version, creating what versions 2 to 5
 * add (the stores of the v2 fixture that version 1 lacks, the by_turn index, the usage store, the
 * by_term index and the meta store; the versions after add none), then the read
 * getItems(1) does (the session record, then its newest row). Timed as openAndRead is.
 */
function rawUpgradeAndRead(page, dbName, added) {
  return page.evaluate(
    async ({ dbName, added, version }) => {
      const request = (r) =>
        new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
      const start = performance.now();
      const open = indexedDB.open(dbName, version);
      open.onupgradeneeded = () => {
        for (const store of added) {
          const created = open.result.createObjectStore(store.name, { keyPath: store.keyPath });
          for (const index of store.indexes) created.createIndex(index.name, index.keyPath, { unique: index.unique });
        }
        open.transaction.objectStore('agent_messages').createIndex('by_turn', ['sessionId', 'turn'], { unique: false });
        open.result.createObjectStore('agent_usage', { keyPath: ['sessionId', 'branch', 'turn'] });
        open.transaction.objectStore('agent_messages').createIndex('by_term', 'terms', { unique: false, multiEntry: true });
        open.result.createObjectStore('agent_meta', { keyPath: 'name' });
      };
      const db = await request(open);
      const tx = db.transaction(['agent_sessions', 'agent_messages'], 'readonly');
      const record = await request(tx.objectStore('agent_sessions').get('session-0000'));
      const row = await request(tx.objectStore('agent_messages').get(['session-0000', record.nextSeq - 1]));
      const ms = performance.now() - start;
      const indexed = await request(db.transaction('agent_messages').objectStore('agent_messages').index('by_turn').count());
      db.close();
      await request(indexedDB.deleteDatabase(dbName));
      return { ms, newest: [row.item.id], indexed };
    },
    { dbName, added, version: SCHEMA_VERSION },
  );
}

/** The stores version 2 added (those of the v2 fixture that version 1 lacks). */
function addedByVersionTwo(schema) {
  const v2 = JSON.parse(readFileSync(join(root, 'tests/fixtures/db/v2.json'), 'utf8'));
  const known = new Set(schema.stores.map((s) => s.name));
  return v2.stores.filter((s) => !known.has(s.name)).map(({ records, ...store }) => store);
}

/** In the page, after the migration: what the database holds now, compared with what was
 * written. Returns the mismatches (none when nothing was lost) and what was checked. */
function verify(page, dbName, { sessions, items }) {
  return page.evaluate(
    async ({ dbName, sessions, items, SCHEMA_VERSION }) => {
      const { describeItems, makeItems } = window.items;
      const wrong = [];
      const same = (what, got, expected) => {
        if (JSON.stringify(got) !== JSON.stringify(expected)) {
          wrong.push(`${what}: got ${JSON.stringify(got).slice(0, 300)}, expected ${JSON.stringify(expected).slice(0, 300)}`);
        }
      };
      const request = (r) =>
        new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));

      // The schema: this build's version, the new index on the messages, filled for every row.
      const db = await request(indexedDB.open(dbName));
      same('version', db.version, SCHEMA_VERSION);
      const tx = db.transaction(['agent_messages', 'agent_sessions'], 'readonly');
      const messages = tx.objectStore('agent_messages');
      same('indexes of agent_messages', [...messages.indexNames], ['by_term', 'by_turn']);
      same('by_turn key path', messages.index('by_turn').keyPath, ['sessionId', 'turn']);
      same('rows stored', await request(messages.count()), sessions * items);
      same('rows in by_turn', await request(messages.index('by_turn').count()), sessions * items);
      same('session records', await request(tx.objectStore('agent_sessions').count()), sessions);
      db.close();

      // Every session: every item, verbatim and in order (a digest of their exact JSON), the
      // first and the last one in full, and its counters.
      const records = [];
      const base = Date.UTC(2026, 0, 1);
      for (let s = 0; s < sessions; s++) {
        const id = `session-${String(s).padStart(4, '0')}`;
        const userId = s % 10 === 9 ? null : `user-${s % 4}`;
        const createdAt = base + s * 60_000;
        records.push({ id, userId, createdAt, updatedAt: createdAt + items });
        const session = new lib.IndexedDbSession(id, { dbName, userId: userId ?? undefined });
        const history = await session.getItems();
        const expected = makeItems(id, 0, items);
        same(`${id}: item count`, history.length, items);
        same(`${id}: first item`, history[0], expected[0]);
        same(`${id}: last item`, history.at(-1), expected.at(-1));
        same(`${id}: every item`, describeItems(history), describeItems(expected));
        const info = await session.getInfo();
        same(`${id}: info`, [info.itemCount, info.turnCount, info.createdAt, info.updatedAt],
          [items, Math.ceil(items / 2), createdAt, createdAt + items]);
        await session.close();
        session.free();
      }

      // The sessions list: all of them, newest first, and each user's.
      const listed = await lib.listSessions({ dbName });
      const newestFirst = [...records].sort((a, b) => b.updatedAt - a.updatedAt);
      same('listSessions()', listed.map((i) => [i.sessionId, i.userId, i.itemCount, i.createdAt, i.updatedAt]),
        newestFirst.map((r) => [r.id, r.userId, items, r.createdAt, r.updatedAt]));
      for (const user of ['user-0', 'user-1', 'user-2', 'user-3']) {
        const mine = await lib.listSessions({ dbName, userId: user });
        same(`listSessions of ${user}`, mine.map((i) => i.sessionId),
          newestFirst.filter((r) => r.userId === user).map((r) => r.id));
      }

      // The newest turns, read through the new index, of the first, a middle and the last session.
      const sampled = [...new Set([0, sessions >> 1, sessions - 1])].map((s) => records[s]);
      const turnCounts = [1, 3];
      for (const { id, userId } of sampled) {
        const session = new lib.IndexedDbSession(id, { dbName, userId: userId ?? undefined });
        for (const turns of turnCounts) {
          // Turns of 2 items (a question and its answer): the newest ones are the last 2 per turn.
          const from = Math.max(0, items - 2 * turns + (items % 2 ? 1 : 0));
          same(`${id}: getRecentTurns(${turns})`, await session.getRecentTurns(turns), makeItems(id, from, items - from));
        }
        await session.close();
        session.free();
      }
      return {
        wrong,
        checked: { sessions, items: sessions * items, listed: listed.length, recentTurnsOf: sampled.map((r) => r.id), turnCounts },
      };
    },
    { dbName, sessions, items, SCHEMA_VERSION },
  );
}


async function main() {
  const options = benchArgs(process.argv.slice(2), { sessions: 100, items: 1000, runs: 3, raw: false });
  const { sessions, items, runs } = options;
  const schema = versionOne();
  const started = Date.now();
  const log = (line) => console.error(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);

  const browser = await startBrowser({ pkg: options.pkg });
  const results = [];
  try {
    for (let run = 0; run < runs; run++) {
      const dbName = `migration-${Date.now().toString(36)}-${run}`;

      const writer = await browser.appPage();
      const written = await writeVersionOne(writer, dbName, schema, options);
      await writer.close();
      log(`run ${run + 1}: version 1 database of ${fmt(sessions * items)} items written in ${formatMs(written.ms)}`);

      const page = await browser.appPage();
      const migration = await openAndRead(page, dbName, { userId: 'user-0' });
      assert.deepEqual(migration.newest, [`msg_session-0000_${items - 1}`], 'the first call read the newest item');
      log(`run ${run + 1}: migrated and read in ${formatMs(migration.ms)}; checking every item …`);
      const check = await verify(page, dbName, options);
      await page.close();
      if (check.wrong.length) {
        throw new Error(`run ${run + 1}: the migrated database differs from what was written:\n  ${check.wrong.slice(0, 20).join('\n  ')}`);
      }

      const again = await browser.appPage();
      const current = await openAndRead(again, dbName, { userId: 'user-0' });
      await again.evaluate(
        (dbName) =>
          new Promise((ok, fail) => {
            const r = indexedDB.deleteDatabase(dbName);
            r.onsuccess = () => ok();
            r.onerror = () => fail(r.error);
          }),
        dbName,
      );
      await again.close();
      log(`run ${run + 1}: all there; opening it again, with nothing to migrate: ${formatMs(current.ms)}`);
      const result = { written: written.ms, migration: migration.ms, current: current.ms, checked: check.checked };

      if (options.raw) {
        const rawName = `${dbName}-raw`;
        const rawWriter = await browser.appPage();
        await writeVersionOne(rawWriter, rawName, schema, options);
        await rawWriter.close();
        const rawPage = await browser.appPage();
        const raw = await rawUpgradeAndRead(rawPage, rawName, addedByVersionTwo(schema));
        await rawPage.close();
        assert.deepEqual(raw.newest, migration.newest);
        assert.equal(raw.indexed, sessions * items);
        log(`run ${run + 1}: the same upgrade by hand, raw IndexedDB: ${duration(raw.ms)}`);
        result.raw = raw.ms;
      }
      results.push(result);
    }
  } finally {
    await browser.close();
  }

  const samples = (key) => results.map((r) => duration(r[key])).join(', ');
  const line = (label, key) =>
    console.log(`${label.padEnd(58)}${duration(median(results.map((r) => r[key])))}  (${samples(key)})`);
  const { checked } = results[0];
  console.log(`\nagent-sessions schema migration: version 1 to ${SCHEMA_VERSION}, ${fmt(sessions * items)} items in ` +
    `${fmt(sessions)} sessions of ${fmt(items)}; median of ${runs} run${runs === 1 ? '' : 's'}, each on a fresh database\n`);
  line('new IndexedDbSession + first getItems(1), migrating:', 'migration');
  line('the same on the migrated database, nothing to migrate:', 'current');
  if (options.raw) line('the same upgrade and read by hand, raw IndexedDB:', 'raw');
  line('writing the version 1 database (set-up, not timed above):', 'written');
  console.log(`\nchecked after each migration: schema version ${SCHEMA_VERSION} with the by_turn index holding all ` +
    `${fmt(checked.items)} rows; every item of all ${fmt(checked.sessions)} sessions (count, first and last in full, ` +
    `a digest of all); each session's counters; listSessions (${fmt(checked.listed)}, newest first, and per user); ` +
    `getRecentTurns(${checked.turnCounts.join(') and (')}) of ${checked.recentTurnsOf.join(', ')}`);
  console.log(`\nmachine: ${machineLine(machine(browser.version))}`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
