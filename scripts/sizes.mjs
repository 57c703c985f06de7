// The sizes of what ships (each built file raw, gzip level 9 and brotli), and the README's record
// of them. Every size the README states sits between markers, `<!--size:FILE:KIND-->…<!--/size-->`
// (KIND is raw, gzip, brotli, or the file's gzip budget or target), so the build can rewrite them and a test can check them.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';

export const SHIPPED = ['agent_sessions_bg.wasm', 'index.js', 'agent_sessions_extras_bg.wasm', 'extras.js', 'agent_sessions_memory_bg.wasm', 'memory.js', 'agent_sessions_runner_bg.wasm', 'runner.js'];

const KIB = 1024;

/**
 * What each shipped file may weigh gzipped (level 9), in bytes. `budget` is the ceiling a build
 * must stay under (a test fails above it): today's size plus a little, lowered as the modules
 * shrink, so nothing grows by accident. `target` is the size the project aims for; the README
 * says how far each module is from it and why.
 */
export const BUDGETS = {
  'agent_sessions_bg.wasm': { budget: 116.6 * KIB, target: 55 * KIB },
  'index.js': { budget: 28.3 * KIB },
  'agent_sessions_extras_bg.wasm': { budget: 132.9 * KIB },
  'extras.js': { budget: 3.9 * KIB },
  'agent_sessions_memory_bg.wasm': { budget: 57.7 * KIB },
  'memory.js': { budget: 3.3 * KIB },
  'agent_sessions_runner_bg.wasm': { budget: 160.9 * KIB, target: 64 * KIB },
  'runner.js': { budget: 12.5 * KIB },
};

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

/** `{ file: { raw, gzip, brotli } }` in bytes, for every shipped file in `pkgDir`. */
export function measure(pkgDir) {
  const sizes = {};
  for (const file of SHIPPED) {
    const bytes = readFileSync(join(pkgDir, file));
    sizes[file] = { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length, brotli: brotliCompressSync(bytes).length, ...BUDGETS[file] };
  }
  return sizes;
}

/** The sizes as the build prints them. */
export function table(sizes) {
  return Object.entries(sizes)
    .map(([file, s]) => `${file.padEnd(30)} raw ${kib(s.raw).padStart(10)}  gzip ${kib(s.gzip).padStart(9)}  brotli ${kib(s.brotli).padStart(9)}`)
    .join('\n');
}

/** Each file's gzip size against its budget and target, as the build prints it; `over` lists
 * the files above their budget. */
export function budgets(sizes) {
  const lines = [];
  const over = [];
  for (const [file, s] of Object.entries(sizes)) {
    if (s.budget === undefined) continue;
    const within = s.gzip <= s.budget;
    if (!within) over.push(file);
    const target =
      s.target === undefined ? '' : s.gzip <= s.target ? `, target ${kib(s.target)} met` : `, target ${kib(s.target)}: ${kib(s.gzip - s.target)} over`;
    lines.push(`${file.padEnd(30)} gzip ${kib(s.gzip).padStart(9)}  ${within ? 'within' : 'OVER'} its budget of ${kib(s.budget)}${target}`);
  }
  return { text: lines.join('\n'), over };
}

const MARKER = /<!--size:([\w.]+):(raw|gzip|brotli|budget|target)-->([^<]*)<!--\/size-->/g;

/** Every size the README states: `[{ file, kind, stated, actual }]`. */
export function readmeSizes(readme, sizes) {
  return [...readme.matchAll(MARKER)].map(([, file, kind, stated]) => ({
    file,
    kind,
    stated,
    actual: sizes[file]?.[kind] !== undefined ? kib(sizes[file][kind]) : `no ${kind} for ${file}`,
  }));
}

/** Rewrites the sizes the README states to `sizes`; returns whether anything changed. */
export function updateReadme(readmePath, sizes) {
  const readme = readFileSync(readmePath, 'utf8');
  const updated = readme.replace(MARKER, (whole, file, kind) =>
    sizes[file]?.[kind] !== undefined ? `<!--size:${file}:${kind}-->${kib(sizes[file][kind])}<!--/size-->` : whole,
  );
  if (updated !== readme) writeFileSync(readmePath, updated);
  return updated !== readme;
}
