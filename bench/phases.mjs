// Where the time goes: runs single calls of agent-sessions and of raw IndexedDB (and any other
// implementation named) with IndexedDB instrumented (page/phases.js), and prints the mean of
// each phase per call. A diagnostic beside the benchmark, not part of it.
//
//   node bench/phases.mjs [--impls=ours,raw,raw-clone] [--calls=300] [--pkg=dir]
import { build } from 'esbuild';
import { join } from 'node:path';
import { buildBundles, benchDir, distDir } from './build.mjs';
import { startBrowser } from './browser.mjs';
import { findImplementations } from './impls/list.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const impls = findImplementations((args.impls ?? 'ours,raw,raw-clone').split(','));
const calls = Number(args.calls ?? 300);

const SCENARIOS = ['getItems(20) of 1,000', 'addItems of 1 turn', 'popItem', 'listSessions of 200', 'createBranchFromTurn'];

await buildBundles();
await build({
  entryPoints: [join(benchDir, 'page/phases.js')],
  outfile: join(distDir, 'phases.js'),
  bundle: true,
  format: 'esm',
  logLevel: 'error',
});
const browser = await startBrowser({ pkg: args.pkg });
const runId = Date.now().toString(36);
const rows = [];
try {
  for (const impl of impls) {
    const page = await browser.runnerPage(impl.key);
    const result = await page.evaluate(
      async ([key, dbName, calls, scenarios]) => {
        const { phasesOf } = await import('/bench/dist/phases.js');
        const { makeItems } = await import('/bench/shared/items.js');
        const { create } = await import(`/bench/dist/impl-${key}.js`);
        const impl = create({ dbName, userId: 'user-a' });
        await impl.open();
        await impl.addItems('read', makeItems('read', 0, 1000));
        await impl.addItems('pop', makeItems('pop', 0, calls + 10));
        for (let i = 0; i < 200; i++) await impl.addItems(`list-${i}`, makeItems(`list-${i}`, 0, 2));
        await impl.addItems('branch', makeItems('branch', 0, 100));
        const turns = makeItems('turns', 0, 2 * (calls + 10));
        const run = {
          [scenarios[0]]: () => impl.getItems('read', 20),
          [scenarios[1]]: (i) => impl.addItems('turns', [turns[2 * i], turns[2 * i + 1]]),
          [scenarios[2]]: () => impl.popItem('pop'),
          [scenarios[3]]: () => impl.listSessions('user-a'),
          // Of the 100-item history's turn 25, a new branch each call (as the benchmark's row).
          [scenarios[4]]: (i) => impl.createBranchFromTurn('branch', 25, `b${i}`),
        };
        const out = {};
        for (const name of scenarios) {
          for (let i = 0; i < 10; i++) await run[name](calls + i); // warm-up
          const samples = [];
          for (let i = 0; i < calls; i++) samples.push(await phasesOf(() => run[name](i)));
          const mean = {};
          for (const k of Object.keys(samples[0])) mean[k] = samples.reduce((s, x) => s + x[k], 0) / samples.length;
          out[name] = mean;
        }
        await impl.destroy();
        return out;
      },
      [impl.key, `phases-${runId}-${impl.key}`, calls, SCENARIOS],
    );
    for (const [scenario, p] of Object.entries(result)) rows.push({ scenario, impl: impl.label, ...p });
    await page.close();
  }
} finally {
  await browser.close();
}

const f = (ms) => ms.toFixed(3).padStart(7);
console.log(`mean per call over ${calls} calls, ms (storage = IndexedDB requests, issue to success)`);
console.log(`${'scenario'.padEnd(24)} ${'implementation'.padEnd(22)}   total  before storage between  commit   after  requests`);
for (const s of SCENARIOS) {
  for (const r of rows.filter((r) => r.scenario === s)) {
    console.log(
      `${s.padEnd(24)} ${r.impl.padEnd(22)} ${f(r.total)} ${f(r.before)} ${f(r.storage)} ${f(r.between)} ${f(r.commit)} ${f(r.after)} ${String(r.requests.toFixed(1)).padStart(9)}`,
    );
  }
}
