// The benchmark (bench/run.mjs) with tiny sizes and one repeat: every implementation it compares
// must return the same, correct results (newest items, popped items, the history after
// replace_suffix calls, sessions left after a clear, the sessions list), or its timings would
// compare different work. No timing is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBenchmark } from '../../bench/run.mjs';
import { IMPLEMENTATIONS, supports } from '../../bench/impls/list.mjs';
import { OPERATIONS } from '../../bench/page/ops.js';
import { describeItems, makeItems } from '../../bench/shared/items.js';

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
  // replace_suffix ran where history transactions exist (ours and the SDK's), and rewrote: the
  // history keeps its length and older items, and ends with the last call's replacement. The
  // appends timed beside it landed too.
  const replaced = report.checks.filter((c) => c.op === 'replace-suffix').map((c) => c.impl);
  assert.deepEqual([...new Set(replaced)].sort(), ['ours', 'sdk-memory']);
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
});
