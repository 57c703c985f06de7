// Combines several benchmark runs into one table: each cell is the median of the runs' medians,
// and its ratio to raw IndexedDB is the median of the ratios each run measured (the floor timed
// beside it, on the same machine state); the project's targets are judged on those.
//
//   node bench/combine.mjs bench/results/A.json bench/results/B.json bench/results/C.json [--markdown]
//
// The runs must have measured the same rows with the same preset; implementations any run lacks
// are left out.
import { readFileSync } from 'node:fs';
import { BASELINE } from './impls/list.mjs';
import { evaluateTargets, median, targetLines, timingTable } from './report.mjs';

export function combine(reports) {
  if (reports.length === 0) throw new Error('no runs to combine');
  const [first] = reports;
  for (const r of reports) {
    if (r.preset !== first.preset) throw new Error(`runs of different presets: ${first.preset} and ${r.preset}`);
  }
  const implementations = first.implementations.filter((impl) => reports.every((r) => r.implementations.some((i) => i.key === impl.key)));
  const rows = first.rows.map((row) => {
    const same = reports.map((r) => r.rows.find((x) => x.key === row.key));
    if (same.some((x) => !x)) throw new Error(`row ${row.key} is missing from a run`);
    const cells = {};
    for (const { key } of implementations) {
      const all = same.map((x) => x.cells[key]);
      if (all.some((c) => !c || c.unsupported)) {
        cells[key] = { ...all[0], samples: [] };
        continue;
      }
      cells[key] = {
        ...all[0],
        median: median(all.map((c) => c.median)),
        runs: all.map((c) => c.median),
        ...(same.every((x) => Number.isFinite(x.cells[BASELINE]?.median))
          ? { ratio: median(same.map((x, i) => all[i].median / x.cells[BASELINE].median)) }
          : {}),
        ...(all[0].referenceMedian === undefined
          ? {}
          : {
              referenceMedian: median(all.map((c) => c.referenceMedian)),
              // The operation against its reference, timed beside it: again the median of each run's.
              referenceRatio: median(all.map((c) => c.median / c.referenceMedian)),
            }),
      };
    }
    return { ...row, cells };
  });
  return { ...first, implementations, rows, runs: reports.length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const markdown = args.includes('--markdown');
  const files = args.filter((a) => a !== '--markdown');
  const combined = combine(files.map((f) => JSON.parse(readFileSync(f, 'utf8'))));
  console.log(`\n${combined.runs} runs (${combined.preset}): each cell the median of the runs' medians; in parentheses the median of the runs' ratios to raw IndexedDB\n`);
  console.log(timingTable(combined, { markdown }));
  console.log(`\n${targetLines(evaluateTargets(combined, null))}`);
}
