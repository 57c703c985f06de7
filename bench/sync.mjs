// SyncedSession: what syncing costs a write, and how long a round takes as the history grows.
// A SyncedSession over an IndexedDbSession with a remote that answers at once (a MemorySession
// in the page, so no network is timed), against a plain IndexedDbSession in the same run. The
// items carry ids, as those of the Conversations API do:
//
// - append one turn: the awaited `addItems` of each (the synced one's round runs after it,
//   untimed, and before the next timing);
// - to synced: `addItems` then `sync()`, the time until the turn is on the remote too,
//   on a history of `--small` and of `--large` items, and on the large one with items without
//   ids, which no round can place by the remote's newest items alone (each compares the whole
//   histories).
//
//   node bench/sync.mjs [--turns=50] [--small=100] [--large=2000] [--pkg=dir]
//
// Uses the package as built in pkg/ (node scripts/build.mjs builds it), in headless Chromium on
// an on-disk profile (bench/browser.mjs).
import { benchScript } from './browser.mjs';
import { benchArgs, compareLine } from './report.mjs';

const { turns, small, large, pkg } = benchArgs(process.argv.slice(2), { turns: 50, small: 100, large: 2000 });
await benchScript(pkg, async (browser) => {
  const page = await browser.appPage();
  const r = await page.evaluate(
    async ({ turns, small, large }) => {
      const stamp = Date.now().toString(36);
      const turn = (tag, i) => window.items.makeItems(tag, 2 * i, 2);
      const withoutIds = (items) => items.map(({ id: _id, ...item }) => item);
      const timed = async (list, f) => {
        const t = performance.now();
        await f();
        list.push(performance.now() - t);
      };
      // A synced session whose history already holds `n` items, all of them synced.
      const synced = async (name, n, shape = (items) => items) => {
        const remote = new lib.MemorySession(`${name}-remote`);
        const local = new lib.IndexedDbSession(name, { dbName: `sync-${name}-${stamp}` });
        for (let from = 0; from < n; from += 1000) await local.addItems(shape(window.items.makeItems(name, from, Math.min(1000, n - from))));
        const s = new lib.SyncedSession(local, remote, { syncOnOpen: false });
        await s.sync();
        return { s, remote };
      };
      const plain = (name) => new lib.IndexedDbSession(name, { dbName: `plain-${name}-${stamp}` });

      const times = { syncedAdd: [], plainAdd: [], toSyncedSmall: [], toSyncedLarge: [], toSyncedNoIds: [], plainSmall: [] };
      const a = await synced('append', 0);
      const p = plain('append');
      await a.s.addItems(turn('w', 0));
      await p.addItems(turn('w', 0));
      await a.s.sync();
      for (let i = 1; i <= turns; i++) {
        await timed(times.syncedAdd, () => a.s.addItems(turn('a', i)));
        // Untimed: the round the write asked for, so it does not run during the next timing.
        await a.s.sync();
        await timed(times.plainAdd, () => p.addItems(turn('a', i)));
      }
      const smallS = await synced('small', small);
      const largeS = await synced('large', large);
      const noIds = await synced('no-ids', large, withoutIds);
      const ps = plain('small');
      for (let i = 0; i < turns; i++) {
        await timed(times.toSyncedSmall, async () => {
          await smallS.s.addItems(turn('s', i));
          await smallS.s.sync();
        });
        await timed(times.toSyncedLarge, async () => {
          await largeS.s.addItems(turn('l', i));
          await largeS.s.sync();
        });
        await timed(times.toSyncedNoIds, async () => {
          await noIds.s.addItems(withoutIds(turn('n', i)));
          await noIds.s.sync();
        });
        await timed(times.plainSmall, () => ps.addItems(turn('s', i)));
      }
      // Everything written reached the remote, in order.
      const same = async ({ s, remote }) => JSON.stringify(await s.getItems()) === JSON.stringify(await remote.getItems());
      const ok = (await same(a)) && (await same(smallS)) && (await same(largeS)) && (await same(noIds));
      for (const x of [a, smallS, largeS, noIds]) x.s.close();
      return { times, ok };
    },
    { turns, small, large },
  );
  if (!r.ok) throw new Error('a remote does not hold what was written locally');
  const t = r.times;
  const line = (label, ours, floor, floorLabel) => console.log(compareLine(label, ours, floor, { width: 34, oursLabel: '', floorLabel }));
  console.log(`\nagent-sessions SyncedSession(IndexedDbSession, a remote in the page), ${turns} turns each, medians\n`);
  line('append one turn:', t.syncedAdd, t.plainAdd, 'IndexedDbSession alone');
  line(`to synced, history of ${small.toLocaleString('en-US')}:`, t.toSyncedSmall, t.plainSmall, 'IndexedDbSession append');
  line(`to synced, history of ${large.toLocaleString('en-US')}:`, t.toSyncedLarge, t.toSyncedSmall, `the same at ${small.toLocaleString('en-US')} items`);
  line('  the same, items without ids:', t.toSyncedNoIds, t.toSyncedLarge, 'with ids');
});
