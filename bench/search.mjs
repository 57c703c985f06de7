// Full-text search: one user with `sessions` x `items` items (and another user with a tenth of
// that, so scoping is real), searched with two-word queries through searchSessions; as the
// reference in the same run, a full scan of the same user's items (every session read with
// getItems, each item's text checked for both words). Also: appending one turn with indexing
// against the same turn whose text sits in a field the index does not read (same bytes stored,
// no terms), the index's size per 1,000 items, and the build of the index for a database whose
// rows have none (as a database from before the index has them), with the longest task it held
// the page for.
//
//   node bench/search.mjs [--sessions=200] [--items=500] [--queries=20] [--pkg=dir]
//
// Uses the package as built in pkg/ (node scripts/build.mjs builds it), in headless Chromium on
// an on-disk profile (bench/browser.mjs).
import { benchScript } from './browser.mjs';
import { formatMs, median, benchArgs } from './report.mjs';


const { sessions, items, queries, pkg } = benchArgs(process.argv.slice(2), { sessions: 200, items: 500, queries: 20 });
await benchScript(pkg, async (browser) => {
  const page = await browser.context.newPage();
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  const open = async () => {
    await page.goto(`${browser.url}/bench/page/migration.html`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 30_000 });
  };
  await open();
  const dbName = `search-${Date.now().toString(36)}`;
  // Text from a vocabulary of 3,000 made-up words drawn with a Zipf-like skew, as words in
  // chat text are: a few very common, most rare.
  const filled = await page.evaluate(
    async ({ dbName, sessions, items }) => {
      let seed = 42;
      const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
      const syllables = ['ka', 'lo', 'mi', 'ren', 'tu', 'sa', 'vo', 'pel', 'dri', 'on', 'zu', 'qua', 'te', 'nis', 'ba', 'gor'];
      const vocabulary = Array.from({ length: 3000 }, (_, i) => {
        let w = '';
        for (let n = i + 1; n > 0; n = Math.floor(n / 16)) w += syllables[n % 16];
        return w;
      });
      const word = () => vocabulary[Math.min(vocabulary.length - 1, Math.floor(vocabulary.length * random() ** 3))];
      const sentence = () => Array.from({ length: 8 + Math.floor(random() * 25) }, word).join(' ');
      window.vocabulary = vocabulary;
      const started = performance.now();
      const fill = async (userId, count) => {
        for (let s = 0; s < count; s++) {
          const session = new lib.IndexedDbSession(`${userId}-${s}`, { dbName, userId });
          const batch = Array.from({ length: items }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: sentence() }));
          await session.addItems(batch);
          await session.close();
        }
      };
      await fill('ann', sessions);
      await fill('bob', Math.max(1, Math.floor(sessions / 10)));
      return { ms: performance.now() - started };
    },
    { dbName, sessions, items },
  );

  // Queries: pairs of words from the middle of the vocabulary (neither everywhere nor nowhere).
  const measured = await page.evaluate(
    async ({ dbName, sessions, queries }) => {
      const pick = (i) => window.vocabulary[40 + ((i * 37) % 400)];
      const pairs = Array.from({ length: queries }, (_, i) => `${pick(i)} ${pick(i + 11)}`);
      // Warm: the build check and the first transaction.
      await lib.searchSessions({ dbName, userId: 'ann', query: pairs[0] });
      const search = [];
      const hits = [];
      for (const query of pairs) {
        const t = performance.now();
        const found = await lib.searchSessions({ dbName, userId: 'ann', query, limit: 20 });
        search.push(performance.now() - t);
        hits.push(found.length);
      }
      // The floor, by hand with raw IndexedDB: the same index reads (each word's item keys),
      // intersected in JavaScript, and the matching rows read; no ranking, no text check.
      const floor = [];
      const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
      const raw = await request(indexedDB.open(dbName));
      for (const query of pairs) {
        const t = performance.now();
        const tx = raw.transaction(['agent_messages', 'agent_sessions'], 'readonly');
        const index = tx.objectStore('agent_messages').index('by_term');
        const lists = await Promise.all(query.split(' ').map((w) => request(index.getAllKeys(IDBKeyRange.only(`ann\u0000${w}`)))));
        lists.sort((a, b) => a.length - b.length);
        const others = lists.slice(1).map((l) => new Set(l.map((k) => `${k[0]}|${k[1]}`)));
        const both = lists[0].filter((k) => others.every((o) => o.has(`${k[0]}|${k[1]}`)));
        await Promise.all(both.map((k) => request(tx.objectStore('agent_messages').get(k))));
        floor.push(performance.now() - t);
      }
      raw.close();
      // The reference: read every item of the user's sessions and check each one's text.
      const scan = [];
      const listed = await lib.listSessions({ dbName, userId: 'ann' });
      for (const query of pairs.slice(0, 3)) {
        const words = query.split(' ');
        const t = performance.now();
        let found = 0;
        for (const s of listed) {
          const session = new lib.IndexedDbSession(s.sessionId, { dbName, userId: 'ann' });
          for (const item of await session.getItems()) {
            const text = ` ${String(item.content).toLowerCase()} `;
            if (words.every((w) => text.includes(` ${w} `))) found++;
          }
        }
        scan.push(performance.now() - t);
        hits.push(found);
      }
      return { search, scan, floor, hits, sessions: listed.length };
    },
    { dbName, sessions, queries },
  );

  // Appending a turn, indexed and not (the same text in a field the index does not read),
  // alternating, on fresh sessions of the same database.
  const append = await page.evaluate(async ({ dbName }) => {
    const text = 'please remember that my hobby is horse racing and that I live near the old harbour';
    const indexed = new lib.IndexedDbSession('append-indexed', { dbName, userId: 'carl' });
    const plain = new lib.IndexedDbSession('append-plain', { dbName, userId: 'carl' });
    const times = { indexed: [], plain: [] };
    for (let i = 0; i < 200; i++) {
      let t = performance.now();
      await indexed.addItems([{ role: 'user', content: `${text} ${i}` }, { role: 'assistant', content: `${text} ${i}` }]);
      times.indexed.push(performance.now() - t);
      t = performance.now();
      await plain.addItems([{ role: 'user', note: `${text} ${i}` }, { role: 'assistant', note: `${text} ${i}` }]);
      times.plain.push(performance.now() - t);
    }
    return times;
  }, { dbName });

  // The index's size, and a build from rows without terms: every row's terms are removed by
  // hand and the build record reset, then the page is loaded again and the build timed.
  const size = await page.evaluate(async ({ dbName }) => {
    const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
    const raw = await request(indexedDB.open(dbName));
    const rows = await request(raw.transaction('agent_messages').objectStore('agent_messages').getAll());
    let entries = 0;
    let bytes = 0;
    for (const row of rows) {
      entries += row.terms?.length ?? 0;
      bytes += JSON.stringify(row.terms ?? []).length;
    }
    const tx = raw.transaction(['agent_messages', 'agent_meta'], 'readwrite');
    for (const row of rows) {
      delete row.terms;
      tx.objectStore('agent_messages').put(row);
    }
    tx.objectStore('agent_meta').put({ name: 'searchIndex', done: false, after: null, indexed: 0 });
    await new Promise((ok) => (tx.oncomplete = ok));
    raw.close();
    return { rows: rows.length, entries, bytes };
  }, { dbName });
  await open();
  const build = await page.evaluate(async ({ dbName }) => {
    const tasks = [];
    const observer = new PerformanceObserver((list) => tasks.push(...list.getEntries().map((e) => e.duration)));
    observer.observe({ type: 'longtask', buffered: false });
    const t = performance.now();
    const progress = await lib.buildSearchIndex({ dbName });
    const ms = performance.now() - t;
    await new Promise((ok) => setTimeout(ok, 50));
    observer.disconnect();
    return { ms, progress, longest: Math.max(0, ...tasks), long: tasks.length };
  }, { dbName });

  const total = sessions * items;
  const fmt = (n) => n.toLocaleString('en-US');
  const line = (label, value) => console.log(`${label.padEnd(64)}${value}`);
  console.log(`\nagent-sessions full-text search: user "ann" with ${fmt(sessions)} sessions x ${fmt(items)} items (${fmt(total)} items), another user with a tenth of that`);
  console.log(`filled in ${(filled.ms / 1000).toFixed(1)} s (addItems of ${fmt(items)} items per session, indexed as written)\n`);
  const searchMedian = median(measured.search);
  const scanMedian = median(measured.scan);
  line(`searchSessions, ${queries} two-word queries, limit 20:`, `median ${formatMs(searchMedian).padStart(9)}`);
  line('the same index reads by hand (raw IndexedDB, no ranking):', `median ${formatMs(median(measured.floor)).padStart(9)}`);
  line('full scan of the same items (getItems per session, text checked):', `median ${formatMs(scanMedian).padStart(9)}`);
  console.log(`searchSessions / the index reads by hand: ${(searchMedian / median(measured.floor)).toFixed(2)}x`);
  console.log(`the index is ${(scanMedian / searchMedian).toFixed(0)}x faster than the scan (hits per query: ${measured.hits.slice(0, queries).join(', ')})\n`);
  const a = median(append.indexed);
  const p = median(append.plain);
  line('append one turn, its text indexed:', `median ${formatMs(a).padStart(9)}`);
  line('append the same turn, its text in a field the index does not read:', `median ${formatMs(p).padStart(9)}`);
  console.log(`ratio: ${(a / p).toFixed(2)}x\n`);
  const perThousand = (n) => (n / size.rows) * 1000;
  console.log(`index: ${perThousand(size.entries).toFixed(0)} entries and ${(perThousand(size.bytes) / 1024).toFixed(1)} KiB of terms per 1,000 items (${fmt(size.rows)} rows)`);
  console.log(`index build for ${fmt(build.progress.total)} rows without terms: ${(build.ms / 1000).toFixed(1)} s, longest task ${formatMs(build.longest)} (${build.long} tasks over 50 ms)`);
});
