// The benchmark (bench/run.mjs) with tiny sizes and one repeat: every implementation it compares
// must return the same, correct results (newest items, popped items, sessions left after a clear,
// the sessions list), or its timings would compare different work. No timing is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBenchmark } from '../../bench/run.mjs';
import { IMPLEMENTATIONS } from '../../bench/impls/list.mjs';
import { OPERATIONS } from '../../bench/page/ops.js';

test('benchmark: every implementation gives the expected results, the same for all', { timeout: 60_000 }, async () => {
  const report = await runBenchmark({ preset: 'smoke' });

  // Every operation ran against every implementation and was timed.
  assert.deepEqual(report.rows.map((r) => r.key), OPERATIONS.map((o) => o.key));
  for (const row of report.rows) {
    for (const impl of IMPLEMENTATIONS) {
      const cell = row.cells[impl.key];
      assert.ok(cell.samples.length === 1 && Number.isFinite(cell.median), `${row.key} / ${impl.key} was timed`);
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
  assert.equal(result('list-sessions').count, report.sizes.sessions);
  assert.deepEqual(result('list-sessions').users, ['user-a']);
});
