// Turns a benchmark report into text: the timing table (median, ratio to raw IndexedDB; "—"
// where an implementation lacks what the operation needs; an operation's reference, timed
// beside it, on a "↳" line under it), the size table, and how each of the project's targets
// came out.
import { BASELINE, OURS } from './impls/list.mjs';
import { BUDGETS } from '../scripts/sizes.mjs';

export function median(values) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * A cell's ratio to raw IndexedDB's on the same row. A combined report (bench/combine.mjs) carries
 * the median of the ratios each run measured, floor and implementation side by side; a ratio of
 * two medians taken from different runs would mix one run's machine noise with another's.
 */
export function ratioToFloor(row, key) {
  const cell = row.cells[key];
  if (cell?.ratio !== undefined) return cell.ratio;
  return cell?.median / row.cells[BASELINE]?.median;
}

export function formatMs(ms) {
  if (!Number.isFinite(ms)) return 'n/a';
  const digits = ms >= 100 ? 0 : ms >= 10 ? 1 : 2;
  return `${ms.toFixed(digits)} ms`;
}

/**
 * One row of a script that times ours beside a floor: the label padded to `width`, each median
 * (after `oursLabel`, if any, and `floorLabel`), and their ratio.
 */
export function compareLine(label, ours, floor, { width, oursLabel = 'ours', floorLabel = 'by hand' }) {
  const a = median(ours);
  const b = median(floor);
  const mine = oursLabel ? `${oursLabel} ` : '';
  return `${label.padEnd(width)}${mine}${formatMs(a).padStart(9)}   ${floorLabel} ${formatMs(b).padStart(9)}   ${(a / b).toFixed(2)}x`;
}

const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const count = (n) => n.toLocaleString('en-US');

/** A plain-text table, or a Markdown one: first column left-aligned, the others right. */
function table(header, rows, markdown) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(markdown ? ' | ' : '  ');
  const rule = widths.map((w, i) => (markdown ? (i === 0 ? ':' : '') + '-'.repeat(Math.max(1, w - 1)) + (i === 0 ? '' : ':') : '-'.repeat(w)));
  const out = [line(header), markdown ? rule.join(' | ') : rule.join('  '), ...rows.map(line)];
  return markdown ? out.map((l) => `| ${l} |`).join('\n') : out.join('\n');
}

/** The timing table: one row per operation (and one per reference), one column per implementation. */
export function timingTable(report, { markdown = false } = {}) {
  const impls = report.implementations;
  const header = ['operation', ...impls.map((i) => i.label)];
  const rows = report.rows.flatMap((row) => {
    const base = row.cells[BASELINE]?.median;
    const line = [
      row.label,
      ...impls.map((impl) => {
        const cell = row.cells[impl.key];
        if (!cell) return '';
        if (cell.unsupported) return '—';
        const ratio = base ? ` (${ratioToFloor(row, impl.key).toFixed(2)}x)` : '';
        return `${formatMs(cell.median)}${ratio}${cell.note ? '*' : ''}`;
      }),
    ];
    if (!row.reference) return [line];
    const reference = [
      `↳ ${row.reference}, timed beside it`,
      ...impls.map((impl) => {
        const cell = row.cells[impl.key];
        if (!cell) return '';
        return cell.unsupported ? '—' : formatMs(cell.referenceMedian);
      }),
    ];
    return [line, reference];
  });
  return table(header, rows, markdown);
}

export function sizeTable(sizes, { markdown = false } = {}) {
  const rows = sizes.map((s) => [s.name, kib(s.raw), kib(s.gzip), kib(s.brotli), s.how]);
  return table(['file', 'raw', 'gzip', 'brotli', 'measured as'], rows, markdown);
}

/** The project's targets, each with whether it is met and the numbers behind it. */
export function evaluateTargets(report, sizes) {
  const targets = [];
  const rows = report.rows;
  const cell = (row, key) => row.cells[key]?.median;
  const has = (key) => report.implementations.some((i) => i.key === key);
  // Rows where both ran: an operation an implementation cannot run is no comparison.
  const both = (a, b) => rows.filter((row) => Number.isFinite(cell(row, a)) && Number.isFinite(cell(row, b)));

  const ratios = both(OURS, BASELINE).map((row) => ({
    label: row.label,
    ratio: ratioToFloor(row, OURS),
  }));
  if (ratios.length) {
    const misses = ratios.filter((r) => !(r.ratio <= 1.1));
    const worst = ratios.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    targets.push({
      target: 'within 1.10x of raw IndexedDB on every operation',
      met: misses.length === 0,
      detail: misses.length
        ? `missed on ${misses.length} of ${ratios.length}: ${misses.map((m) => `${m.label} ${m.ratio.toFixed(2)}x`).join('; ')}`
        : `worst: ${worst.label} ${worst.ratio.toFixed(2)}x`,
    });
  }

  const small = rows.find((r) => r.key === 'getItems-newest-1');
  const large = rows.find((r) => r.key === 'getItems-newest-3');
  if (has(OURS) && small && large) {
    const ratio = cell(large, OURS) / cell(small, OURS);
    targets.push({
      target: `${large.label} within 1.5x of ${small.label}`,
      met: ratio <= 1.5,
      detail: `${formatMs(cell(large, OURS))} vs ${formatMs(cell(small, OURS))}: ${ratio.toFixed(2)}x`,
    });
  }

  // Reading the newest turns goes through the by-turn index: its cost must not grow with the
  // history.
  const fewTurns = rows.find((r) => r.key === 'getRecentTurns-small');
  const manyTurns = rows.find((r) => r.key === 'getRecentTurns-large');
  if (has(OURS) && fewTurns && manyTurns) {
    const ratio = cell(manyTurns, OURS) / cell(fewTurns, OURS);
    targets.push({
      target: `${manyTurns.label} within 1.5x of ${count(report.sizes.histories[0])} items`,
      met: ratio <= 1.5,
      detail: `${formatMs(cell(manyTurns, OURS))} vs ${formatMs(cell(fewTurns, OURS))}: ${ratio.toFixed(2)}x`,
    });
  }

  // A branch shares the items before its turn instead of copying them: neither creating one nor
  // reading its newest items may grow with the history.
  const smallest = count(report.sizes.histories[0]);
  for (const key of ['getBranchItems', 'createBranch']) {
    const small = rows.find((r) => r.key === `${key}-small`);
    const large = rows.find((r) => r.key === `${key}-large`);
    if (!(has(OURS) && small && large)) continue;
    const ratio = cell(large, OURS) / cell(small, OURS);
    targets.push({
      target: `${large.label} within 1.5x of the same on ${smallest} items`,
      met: ratio <= 1.5,
      detail: `${formatMs(cell(large, OURS))} vs ${formatMs(cell(small, OURS))}: ${ratio.toFixed(2)}x`,
    });
  }

  // Rewriting the newest turn costs about what appending one does (its reference).
  const replace = rows.find((r) => r.key === 'replace-suffix');
  if (has(OURS) && replace) {
    const [rewrite, add] = [cell(replace, OURS), replace.cells[OURS].referenceMedian];
    const ratio = replace.cells[OURS].referenceRatio ?? rewrite / add;
    const { tailCalls, tailHistory } = report.sizes;
    targets.push({
      target: `replace_suffix within 1.2x of addItems, 2 items ×${count(tailCalls)} on ${count(tailHistory)} items`,
      met: ratio <= 1.2,
      detail:
        `${formatMs(rewrite)} vs ${formatMs(add)} ` +
        `(${formatMs(rewrite / tailCalls)} vs ${formatMs(add / tailCalls)} a call): ${ratio.toFixed(2)}x`,
    });
  }

  for (const rival of ['dexie', 'idb-keyval', 'localforage'].filter(has)) {
    if (!has(OURS)) break;
    const label = report.implementations.find((i) => i.key === rival).label;
    const compared = both(OURS, rival);
    if (!compared.length) continue;
    // Judged on the ratios to the floor, each measured within one run.
    const losses = compared.filter((row) => !(ratioToFloor(row, OURS) < ratioToFloor(row, rival)));
    targets.push({
      target: `ahead of ${label} on every operation`,
      met: losses.length === 0,
      detail: losses.length
        ? `behind on: ${losses.map((r) => `${r.label} (${ratioToFloor(r, OURS).toFixed(2)}x vs ${ratioToFloor(r, rival).toFixed(2)}x of the floor)`).join('; ')}`
        : 'ahead on all',
    });
  }

  // The size targets are the build's (scripts/sizes.mjs): one per WebAssembly module.
  for (const [file, { target }] of Object.entries(BUDGETS)) {
    const built = sizes?.find((s) => s.name.endsWith(file));
    if (!built || target === undefined) continue;
    targets.push({
      target: `${file} at most ${kib(target)} gzipped`,
      met: built.gzip <= target,
      detail: `${built.gzip.toLocaleString('en-US')} bytes (${kib(built.gzip)}) gzipped`,
    });
  }
  return targets;
}

export function targetLines(targets) {
  return targets.map((t) => `${t.met ? 'met   ' : 'MISSED'}  ${t.target}: ${t.detail}`).join('\n');
}

/**
 * The command line of a benchmark script: `--name=N` for each whole-number option of
 * `defaults`, `--name` for each boolean one, `--pkg=dir` for the package to measure. Anything
 * else is an error that lists what the script takes.
 */
export function benchArgs(argv, defaults) {
  const options = { ...defaults, pkg: undefined };
  const usage = [...Object.entries(defaults).map(([name, value]) => (typeof value === 'boolean' ? `--${name}` : `--${name}=N`)), '--pkg=dir'].join(', ');
  for (const arg of argv) {
    const [name, value] = arg.replace(/^--/, '').split('=');
    const n = Number(value);
    if (name === 'pkg' && value) options.pkg = value;
    else if (typeof defaults[name] === 'boolean' && value === undefined) options[name] = true;
    else if (typeof defaults[name] === 'number' && Number.isInteger(n) && n > 0) options[name] = n;
    else throw new Error(`unknown argument ${arg}; use ${usage}`);
  }
  return options;
}
