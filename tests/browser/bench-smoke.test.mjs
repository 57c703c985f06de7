// The benchmark (bench/run.mjs) with tiny sizes and one repeat: every implementation it compares
// must return the same, correct results (newest items, popped items, the history after
// replace_suffix calls, sessions left after a clear, the sessions list, the newest turns, the
// branches created and read), or its timings would compare different work. No timing is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBenchmark } from '../../bench/run.mjs';
import { IMPLEMENTATIONS, supports } from '../../bench/impls/list.mjs';
import { OPERATIONS } from '../../bench/page/ops.js';
import { evaluateTargets } from '../../bench/report.mjs';
import { describeItems, makeItems, makeTurnItems } from '../../bench/shared/items.js';

test('benchmark: every implementation gives the expected results, the same for all', { timeout: 60_000 }, async () => {
  const report = await runBenchmark({ preset: 'smoke' });

  // Every operation ran against every implementation that can run it and was timed; the others
  // were left out, not given a result.
  assert.deepEqual(report.rows.map((r) => r.key), OPERATIONS.map((o) => o.key));
  for (const row of report.rows) {
    const op = OPERATIONS.find((o) => o.key === row.key);
    for (const impl of IMPLEMENTATIONS) {
      const cell = row.cells[impl.key];
      if (supports(op, impl)) {
        assert.ok(cell.samples.length === 1 && Number.isFinite(cell.median), `${row.key} / ${impl.key} was timed`);
        if (op.reference) {
          assert.ok(Number.isFinite(cell.referenceMedian), `${row.key} / ${impl.key}: its reference was timed`);
        }
      } else {
        assert.ok(cell.unsupported && cell.samples.length === 0, `${row.key} / ${impl.key} was not run`);
        const results = report.checks.filter((c) => c.op === row.key && c.impl === impl.key);
        assert.equal(results.length, 0, `${row.key} / ${impl.key} has no result`);
      }
    }
  }

  // Each result equals the expected one...
  const wrong = report.mismatches.map((m) => `${m.op} / ${m.impl}: ${JSON.stringify(m.result)}`);
  assert.deepEqual(wrong, [], 'results that differ from the expected ones');

  // ...and so each other: compared directly too, per operation and repeat.
  for (const op of OPERATIONS) {
    const checked = report.checks.filter((c) => c.op === op.key && c.checked);
    for (const rep of new Set(checked.map((c) => c.rep))) {
      const results = checked.filter((c) => c.rep === rep);
      const first = results[0];
      for (const other of results.slice(1)) {
        assert.deepEqual(other.result, first.result, `${op.key}: ${other.impl} differs from ${first.impl}`);
      }
    }
  }

  // The checks are not vacuous: the smoke sizes give non-empty, partial reads and a real list.
  const result = (op, impl = 'ours') => report.checks.find((c) => c.op === op && c.impl === impl).result;
  assert.equal(result('getItems-newest-2').count, report.sizes.limit);
  assert.equal(result('getItems-newest-1').count, report.sizes.histories[0]);
  assert.equal(result('pop').popped.count, report.sizes.pops);
  assert.equal(result('clear').kept.length, 3);
  // replace_suffix ran where history transactions exist (ours, the raw IndexedDB floor with the
  // same operation log, and the SDK's), and rewrote: the history keeps its length and older
  // items, and ends with the last call's replacement. The appends timed beside it landed too.
  const replaced = report.checks.filter((c) => c.op === 'replace-suffix').map((c) => c.impl);
  assert.deepEqual([...new Set(replaced)].sort(), ['ours', 'raw', 'sdk-memory']);
  const { tailHistory: n, tailCalls: calls } = report.sizes;
  assert.ok(calls >= 2, 'several replace_suffix calls, each replacing the previous one');
  const history = result('replace-suffix').replaced;
  assert.equal(history.count, n);
  assert.deepEqual(history.ids.slice(0, n - 2), makeItems('replace-0', 0, n - 2).map((i) => i.id));
  const lastPair = makeItems(`replace-0/rewrite-${calls}`, n - 2, 2).map((i) => i.id);
  assert.deepEqual(history.ids.slice(n - 2), lastPair);
  assert.notDeepEqual(history, describeItems(makeItems('replace-0', 0, n)));
  assert.equal(result('replace-suffix').appended.count, n + 2 * calls);
  assert.equal(result('list-sessions').count, report.sizes.sessions);
  assert.deepEqual(result('list-sessions').users, ['user-a']);

  // getRecentTurns ran where turns exist (ours, and the raw IndexedDB and Dexie floors, which
  // read the same turn index). Its turn-shaped histories cycle through
  // turns of 2, 4 and 3 items: the 3-item one holds 2 turns (a question and its answer, then a
  // question), so all of it comes back; of the 40-item one, the newest 3 turns are items 33 to
  // 39: a short-form question, a reasoning item and the answer; a question and its answer; a
  // question and a tool call, the turn still in progress.
  const turned = report.checks.filter((c) => c.op.startsWith('getRecentTurns-')).map((c) => c.impl);
  assert.deepEqual([...new Set(turned)], ['ours', 'raw', 'dexie']);
  assert.equal(report.sizes.recentTurns, 3);
  assert.deepEqual([report.sizes.histories[0], report.sizes.histories[2]], [3, 40]);
  assert.deepEqual(result('getRecentTurns-small'), describeItems(makeTurnItems('turns-history-3', 0, 3)));
  assert.deepEqual(result('getRecentTurns-large'), describeItems(makeTurnItems('turns-history-40', 33, 7)));
  assert.deepEqual(
    result('getRecentTurns-large').ids,
    [null, 'rs_turns-history-40_34', 'msg_turns-history-40_35', 'msg_turns-history-40_36',
      'msg_turns-history-40_37', 'msg_turns-history-40_38', 'fc_turns-history-40_39'],
  );
  const target = evaluateTargets(report).find((t) => t.target.startsWith('getRecentTurns('));
  assert.equal(target?.target, 'getRecentTurns(3) of 40 items within 1.5x of 3 items');

  // Branches ran where they exist (ours, and the raw IndexedDB floor storing them the same way),
  // from the newest turn. The 3-item history's newest
  // turn is its 2nd (item 2, a question): the branch shows items 0 and 1. The 40-item one has 14
  // turns (3 in every 9 items, then items 36 and 38): its branch from turn 14 shows items 0 to
  // 37, the newest 4 of them 34 to 37; the main branch still ends at item 39.
  const branched = report.checks.filter((c) => c.op.startsWith('createBranch-') || c.op.startsWith('getBranchItems-'));
  assert.deepEqual([...new Set(branched.map((c) => c.impl))], ['ours', 'raw']);
  assert.equal(branched.length, 8);
  assert.equal(report.sizes.limit, 4);
  assert.deepEqual(result('createBranch-small'), {
    id: 'retry-0',
    branch: describeItems(makeTurnItems('branched-3', 0, 2)),
    main: describeItems(makeTurnItems('branched-3', 0, 3)),
  });
  assert.deepEqual(result('createBranch-large'), {
    id: 'retry-0',
    branch: describeItems(makeTurnItems('branched-40', 34, 4)),
    main: describeItems(makeTurnItems('branched-40', 36, 4)),
  });
  assert.deepEqual(
    result('createBranch-large').branch.ids,
    ['rs_branched-40_34', 'msg_branched-40_35', 'msg_branched-40_36', 'msg_branched-40_37'],
  );
  // The branches read were given 2 items of their own (the newest turn asked again: a question
  // and a tool call, of another tag): the newest 4 are 2 shared with main, then those 2.
  assert.equal(report.sizes.branchItems, 2);
  assert.deepEqual(
    result('getBranchItems-small'),
    describeItems([...makeTurnItems('branch-read-3', 0, 2), ...makeTurnItems('branch-read-3/retry', 2, 2)]),
  );
  assert.deepEqual(
    result('getBranchItems-large'),
    describeItems([...makeTurnItems('branch-read-40', 36, 2), ...makeTurnItems('branch-read-40/retry', 38, 2)]),
  );
  assert.deepEqual(
    result('getBranchItems-large').ids,
    ['msg_branch-read-40_36', 'msg_branch-read-40_37', 'msg_branch-read-40/retry_38', 'fc_branch-read-40/retry_39'],
  );
  const branchTargets = evaluateTargets(report)
    .map((t) => t.target)
    .filter((t) => /branch/i.test(t));
  assert.deepEqual(branchTargets, [
    'getItems(4) on a branch of a 40-item history within 1.5x of the same on 3 items',
    'createBranchFromTurn on a history of 40 items within 1.5x of the same on 3 items',
  ]);
});

/** Runs a benchmark script of bench/ with `args`, and resolves to what it printed (rejects with
 * its error output when it fails). */
async function runScript(name, args) {
  const { execFile } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const script = fileURLToPath(new URL(`../../bench/${name}`, import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, ...args], (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

// The migration benchmark (bench/migration.mjs) on a tiny database: it checks, itself, every item
// of every session after the upgrade (and the sessions list, the counters, the new index and the
// newest turns read through it) and exits non-zero on any difference; it also fails when this
// build's schema version is not the one it expects, so it cannot silently go stale.
test('migration benchmark: a version 1 database is upgraded in place with nothing lost', { timeout: 120_000 }, async () => {
  const stdout = await runScript('migration.mjs', ['--sessions=4', '--items=11', '--runs=1', '--raw']);
  assert.match(stdout, /version 1 to \d+, 44 items in 4 sessions of 11/);
  assert.match(stdout, /every item of all 4 sessions/);
  assert.match(stdout, /the same upgrade and read by hand, raw IndexedDB:/);
});

// The in-page comparison of short calls (bench/ab.mjs), two rounds of a few calls, with the
// package itself as the base build: every implementation must leave the same items behind (it
// fails otherwise), and it prints a row per operation with a ratio to raw IndexedDB and to the
// base.
test('short-call comparison: the package, a base build and raw IndexedDB take turns in one page', { timeout: 120_000 }, async () => {
  const { fileURLToPath } = await import('node:url');
  const pkg = fileURLToPath(new URL('../../pkg', import.meta.url));
  const stdout = await runScript('ab.mjs', ['--rounds=2', '--calls=3', `--base=${pkg}`]);
  assert.match(stdout, /2 rounds of 3 calls each/);
  const cell = String.raw`[\d.]+ ms \([\d.]+x\)`;
  for (const row of ['append 1 turn, 3 in a row', 'popItem(), 3 in a row', 'getItems(20) of 1,000, 3 in a row', 'getRecentTurns(3) of 1,000, 3×', 'createBranchFromTurn, 3 in a row']) {
    const label = row.replace(/[()]/g, '\\$&');
    assert.match(stdout, new RegExp(String.raw`${label} +${cell} +${cell} +[\d.]+ ms \(1\.00x\) +[\d.]+x`));
  }
});

// The event latency benchmark (bench/events.mjs) with a few writes: every write's event reaches
// the other tab (it waits for all of them, or fails), spaced and back to back, and it prints
// every figure.
test('event latency benchmark: every write in one tab is heard in the other', { timeout: 120_000 }, async () => {
  const stdout = await runScript('events.mjs', ['--writes=5']);
  assert.match(stdout, /5 awaited writes of one turn, 20 ms apart/);
  assert.match(stdout, /a bare BroadcastChannel message between the same tabs: +median/);
  assert.match(stdout, /5 awaited writes of one turn back to back/);
  assert.equal(stdout.match(/addItems resolved in one tab -> subscribe listener in the other: +median/g)?.length, 2);
  const messages = Number(stdout.match(/messages that carried the 5 events: (\d+)/)?.[1]);
  assert.ok(messages >= 1 && messages <= 5, `${messages} messages`);
});

// The start benchmark (bench/start.mjs) with one load each: both entries import, plainly and
// with their files preloaded (it fails on an entry that does not load), cold and warm, locally
// and on the emulated network.
test('start benchmark: each entry imports in a fresh page, also preloaded, beside the download floor', { timeout: 180_000 }, async () => {
  const stdout = await runScript('start.mjs', ['--loads=1']);
  for (const entry of ['agent-sessions', 'agent-sessions/runner']) {
    for (const network of ['local', '80 ms, 20 Mbit/s']) {
      for (const cache of ['cold', 'warm \\(cached\\)']) {
        assert.match(stdout, new RegExp(`${entry}, ${network}, ${cache}: +import +[\\d.]+ ms \\([\\d.]+x\\) +preloaded +[\\d.]+ ms \\([\\d.]+x\\) +floor +[\\d.]+ ms`));
      }
    }
  }
});

// The search benchmark (bench/search.mjs) on a small database: it fills it, searches, scans,
// appends, measures the index and rebuilds it, and prints every figure.
test('search benchmark: searches, the reference scan, appends and the index build all run', { timeout: 180_000 }, async () => {
  const stdout = await runScript('search.mjs', ['--sessions=4', '--items=50', '--queries=3']);
  assert.match(stdout, /4 sessions x 50 items \(200 items\)/);
  assert.match(stdout, /searchSessions, 3 two-word queries, limit 20: +median/);
  assert.match(stdout, /full scan of the same items/);
  assert.match(stdout, /append one turn, its text indexed: +median/);
  assert.match(stdout, /entries and [\d.]+ KiB of terms per 1,000 items/);
  assert.match(stdout, /index build for [\d,]+ rows without terms/);
});

// The encrypted-session benchmark (bench/encrypted.mjs) with a few turns: both sides read the
// same items back and save the same history through transactions (it checks, itself), and it
// prints the three rows.
test('encrypted benchmark: ours and the floor by hand read and save the same items', { timeout: 120_000 }, async () => {
  const stdout = await runScript('encrypted.mjs', ['--turns=5']);
  assert.match(stdout, /5 turns, medians/);
  assert.match(stdout, /append one turn: +ours .* by hand .*x/);
  assert.match(stdout, /getItems\(20\): +ours .* by hand .*x/);
  assert.match(stdout, /a runner's save of a turn: +ours .* by hand .*x/);
});

// The soak benchmark (bench/soak.mjs) with a few hundred rounds: every round reads back what it
// wrote (it checks, itself), and it exits non-zero when the wasm memory or the JS heap grew after
// the warm-up.
test('soak benchmark: a chat turn over and over leaves the memory flat', { timeout: 120_000 }, async () => {
  const stdout = await runScript('soak.mjs', ['--calls=300', '--warmup=100']);
  assert.match(stdout, /300 rounds of addItems\(1\) \+ getItems\(20\) \+ popItem/);
  assert.match(stdout, /wasm memory: after 100 rounds [\d.]+ MiB, at the end [\d.]+ MiB, peak [\d.]+ MiB/);
  assert.match(stdout, /flat: neither the wasm memory nor the JS heap grew after the warm-up/);
});

// The runner benchmark (bench/runner.mjs) with a few turns: the runner and the turn written by
// hand must send the same requests and get the same answers (it checks, itself).
test('runner benchmark: the runner and the turn by hand send the same requests', { timeout: 120_000 }, async () => {
  const stdout = await runScript('runner.mjs', ['--turns=5']);
  assert.match(stdout, /5 turns, medians/);
  assert.match(stdout, /one chat turn: +ours .* by hand .*x/);
});

// Combining runs (bench/combine.mjs): each cell is the median of the runs' medians, and its ratio
// the median of the ratios each run measured against the floor beside it.
test('combining benchmark runs takes the median of each cell and of each run\'s ratio', async () => {
  const { combine } = await import('../../bench/combine.mjs');
  const run = (ours, raw) => ({
    preset: 'quick',
    sizes: { histories: [100] },
    implementations: [{ key: 'ours', label: 'agent-sessions' }, { key: 'raw', label: 'raw IndexedDB' }],
    rows: [{ key: 'pop', label: 'pop', cells: { ours: { samples: [ours], median: ours }, raw: { samples: [raw], median: raw } } }],
  });
  const combined = combine([run(3, 2), run(9, 1), run(4, 5)]);
  assert.equal(combined.runs, 3);
  assert.equal(combined.rows[0].cells.ours.median, 4);
  assert.equal(combined.rows[0].cells.raw.median, 2);
  assert.deepEqual(combined.rows[0].cells.ours.runs, [3, 9, 4]);
  // Ratios 1.5, 9 and 0.8: their median, not 4 / 2 from two different runs.
  assert.equal(combined.rows[0].cells.ours.ratio, 1.5);
  assert.equal(combined.rows[0].cells.raw.ratio, 1);
  const { timingTable, evaluateTargets } = await import('../../bench/report.mjs');
  assert.match(timingTable(combined), /4\.00 ms \(1\.50x\)/);
  assert.match(evaluateTargets(combined, null)[0].detail, /pop 1\.50x/);
  assert.throws(() => combine([run(1, 1), { ...run(1, 1), preset: 'full' }]), /different presets/);
});

// The sync benchmark (bench/sync.mjs) with a few turns: every remote ends up holding what was
// written locally, in order (it checks, itself), and it prints the three rows.
test('sync benchmark: every write reaches the remote', { timeout: 120_000 }, async () => {
  const stdout = await runScript('sync.mjs', ['--turns=3', '--small=10', '--large=30']);
  assert.match(stdout, /3 turns each, medians/);
  assert.match(stdout, /append one turn: +[\d.]+ ms +IndexedDbSession alone/);
  assert.match(stdout, /to synced, history of 10: /);
  assert.match(stdout, /to synced, history of 30: /);
});
