// The benchmark: every operation of bench/page/ops.js against every implementation of
// bench/impls/, in headless Chromium, with a correctness check of each result.
//
//   node bench/run.mjs [--quick] [--impls=ours,raw,...] [--ops=pop,clear,...] [--pkg=dir] [--markdown]
//
// --pkg serves another build of the package as /pkg/ (by default the repository's pkg/).
//
// Prints the timing table (median of the repeats and its ratio to raw IndexedDB), the size table
// and the project's targets, and writes everything to bench/results/. `runBenchmark` is what
// the smoke test (tests/browser/bench-smoke.test.mjs) runs, with tiny sizes.
import { isDeepStrictEqual } from 'node:util';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildBundles, benchDir } from './build.mjs';
import { startBrowser } from './browser.mjs';
import { CAPABILITIES, IMPLEMENTATIONS, findImplementations, supports } from './impls/list.mjs';
import { OPERATIONS } from './page/ops.js';
import { machine, machineLine } from './machine.mjs';
import { evaluateTargets, formatMs, median, sizeTable, targetLines, timingTable } from './report.mjs';
import { measureSizes } from './sizes.mjs';

/** Sizes and repeats. `repeats` is per kind of operation: heavy ones take seconds per repeat,
 * light ones a millisecond, cold ones load a page. One warm-up repeat is never counted. */
export const PRESETS = {
  full: {
    sizes: {
      turns: 1000,
      bulk: 10_000,
      histories: [100, 10_000, 100_000],
      limit: 20,
      reads: 10,
      recentTurns: 3,
      branchItems: 8,
      all: 1000,
      pops: 200,
      popFrom: 1000,
      tailCalls: 100,
      tailHistory: 10_000,
      clear: 10_000,
      keep: 100,
      sessions: 1000,
      cold: 1000,
    },
    repeats: { heavy: 5, light: 15, cold: 7 },
    warmup: 1,
  },
  quick: {
    sizes: {
      turns: 200,
      bulk: 2000,
      histories: [100, 2000, 20_000],
      limit: 20,
      reads: 10,
      recentTurns: 3,
      branchItems: 8,
      all: 1000,
      pops: 50,
      popFrom: 300,
      tailCalls: 30,
      tailHistory: 2000,
      clear: 2000,
      keep: 50,
      sessions: 200,
      cold: 1000,
    },
    repeats: { heavy: 3, light: 7, cold: 3 },
    warmup: 1,
  },
  smoke: {
    sizes: {
      turns: 3,
      bulk: 5,
      histories: [3, 25, 40],
      limit: 4,
      reads: 2,
      recentTurns: 3,
      branchItems: 2,
      all: 6,
      pops: 3,
      popFrom: 5,
      tailCalls: 3,
      tailHistory: 8,
      clear: 6,
      keep: 2,
      sessions: 12,
      cold: 7,
    },
    repeats: { heavy: 1, light: 1, cold: 1 },
    warmup: 0,
  },
};

/** Repeat `r` visits the implementations in a rotated order, so that a slow spell of the
 * machine does not always land on the same one. */
const rotate = (list, r) => list.map((_, i) => list[(i + r) % list.length]);

/**
 * Runs the benchmark and resolves to its report: the rows (samples and median per
 * implementation, and those of the reference for an operation that times one; `unsupported` for
 * an implementation that lacks the capability the operation requires, never run), every result
 * with the expected one, and the machine.
 */
export async function runBenchmark({
  preset = 'full',
  implementations = IMPLEMENTATIONS.map((i) => i.key),
  operations = OPERATIONS.map((o) => o.key),
  pkg,
  log = () => {},
} = {}) {
  const { sizes, repeats, warmup } = PRESETS[preset];
  const impls = findImplementations(implementations);
  const ops = operations.map((key) => {
    const op = OPERATIONS.find((o) => o.key === key);
    if (!op) throw new Error(`unknown operation "${key}"; known: ${OPERATIONS.map((o) => o.key).join(', ')}`);
    return op;
  });

  await buildBundles();
  const browser = await startBrowser({ pkg });
  const runId = Date.now().toString(36);
  const report = {
    preset,
    sizes,
    repeats,
    warmup,
    machine: machine(browser.version),
    implementations: impls,
    rows: [],
    checks: [],
  };
  try {
    const pages = {};
    for (const impl of impls) pages[impl.key] = await browser.runnerPage(impl.key);

    for (const op of ops) {
      const label = op.label(sizes);
      log(`${label} …`);
      const row = { key: op.key, label, kind: op.kind, cells: {} };
      if (op.reference) row.reference = op.reference(sizes);
      const able = impls.filter((impl) => supports(op, impl));
      for (const impl of impls) {
        if (!able.includes(impl)) row.cells[impl.key] = { samples: [], median: NaN, unsupported: true };
      }
      const prepared = {};
      for (const impl of able) {
        const dbName = `bench-${runId}-${impl.key}-${op.key}`;
        prepared[impl.key] = await pages[impl.key].evaluate(
          ([k, s, d]) => window.bench.prepare(k, s, d),
          [op.key, sizes, dbName],
        );
        row.cells[impl.key] = op.reference ? { samples: [], references: [] } : { samples: [] };
      }

      const total = warmup + repeats[op.kind];
      for (let rep = 0; rep < total; rep++) {
        for (const impl of rotate(able, rep)) {
          const { ms, reference, result } =
            op.kind === 'cold'
              ? await browser.coldStart(impl.key, prepared[impl.key], { cache: op.cache !== false })
              : await pages[impl.key].evaluate(([k, r]) => window.bench.run(k, r), [op.key, rep]);
          if (rep >= warmup) {
            row.cells[impl.key].samples.push(ms);
            if (op.reference) row.cells[impl.key].references.push(reference);
          }
          // Nothing survives a reload in memory: its cold start reads an empty session.
          const checked = !(op.kind === 'cold' && !impl.durable);
          const expected = op.expected(sizes, rep);
          report.checks.push({
            op: op.key,
            impl: impl.key,
            rep,
            checked,
            ok: !checked || isDeepStrictEqual(result, expected),
            result,
            expected,
          });
        }
      }

      for (const impl of able) {
        await pages[impl.key].evaluate((k) => window.bench.release(k), op.key);
        const cell = row.cells[impl.key];
        cell.median = median(cell.samples);
        if (op.reference) cell.referenceMedian = median(cell.references);
        if (op.kind === 'cold' && !impl.durable) cell.note = 'not durable: reads an empty session';
      }
      report.rows.push(row);
      const timing = (cell) =>
        formatMs(cell.median) + (op.reference ? ` (reference ${formatMs(cell.referenceMedian)})` : '');
      log(`  ${able.map((i) => `${i.label} ${timing(row.cells[i.key])}`).join(', ')}`);
    }
  } finally {
    await browser.close();
  }
  report.mismatches = report.checks.filter((c) => !c.ok);
  return report;
}

function parseArgs(argv) {
  const options = { preset: 'full', markdown: false };
  for (const arg of argv) {
    if (arg === '--quick') options.preset = 'quick';
    else if (arg === '--markdown') options.markdown = true;
    else if (arg.startsWith('--impls=')) options.implementations = arg.slice(8).split(',');
    else if (arg.startsWith('--ops=')) options.operations = arg.slice(6).split(',');
    else if (arg.startsWith('--pkg=')) options.pkg = arg.slice(6);
    else throw new Error(`unknown argument ${arg}; use --quick, --impls=a,b, --ops=a,b, --pkg=dir, --markdown`);
  }
  return options;
}

async function main() {
  const { markdown, ...options } = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const log = (line) => console.error(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
  const report = await runBenchmark({ ...options, log });
  const sizes = await measureSizes(options.pkg);
  const targets = evaluateTargets(report, sizes);

  const { warmup, repeats } = report;
  console.log(`\nagent-sessions benchmark (${report.preset}): median of ${repeats.heavy} repeats for writes, ` +
    `${repeats.light} for reads (each the time of one of ${report.sizes.reads} reads in a row), ` +
    `${repeats.cold} for cold starts, after ${warmup} warm-up; ` +
    `ratio to raw IndexedDB in parentheses\n`);
  console.log(timingTable(report, { markdown }));
  if (report.rows.some((r) => Object.values(r.cells).some((c) => c.note))) {
    console.log('\n* not durable: nothing survives a reload, so its cold start reads an empty session');
  }
  const lacking = new Set(
    report.rows
      .filter((row) => Object.values(row.cells).some((c) => c.unsupported))
      .map((row) => CAPABILITIES[OPERATIONS.find((o) => o.key === row.key).requires]),
  );
  for (const what of lacking) {
    console.log(`\n— not run: the operation needs ${what}, which the implementation lacks`);
  }
  console.log(`\n${sizeTable(sizes, { markdown })}`);
  console.log(`\nmachine: ${machineLine(report.machine)}`);
  console.log(`\ntargets:\n${targetLines(targets)}`);

  if (report.mismatches.length) {
    console.log(`\nWRONG RESULTS (${report.mismatches.length}):`);
    for (const m of report.mismatches.slice(0, 10)) {
      console.log(`  ${m.op} / ${m.impl} / repeat ${m.rep}:\n    got      ${JSON.stringify(m.result)}\n    expected ${JSON.stringify(m.expected)}`);
    }
  }

  const dir = join(benchDir, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${report.machine.date.replace(/[:.]/g, '-')}-${report.preset}.json`);
  const { checks, ...rest } = report;
  writeFileSync(
    file,
    JSON.stringify({ ...rest, checks: { total: checks.length, wrong: report.mismatches.length }, fileSizes: sizes, targets }, null, 2),
  );
  console.log(`\nresults written to ${file}`);
  if (report.mismatches.length) process.exitCode = 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
}
