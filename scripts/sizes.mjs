// The sizes of what ships (each built file raw, gzip level 9 and brotli), and the README's record
// of them. Every size the README states sits between markers, `<!--size:FILE:KIND-->…<!--/size-->`
// (KIND is raw, gzip or brotli), so the build can rewrite them and a test can check them.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';

export const SHIPPED = ['agent_sessions_bg.wasm', 'agent_sessions.js', 'agent_sessions_runner_bg.wasm', 'agent_sessions_runner.js'];

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

/** `{ file: { raw, gzip, brotli } }` in bytes, for every shipped file in `pkgDir`. */
export function measure(pkgDir) {
  const sizes = {};
  for (const file of SHIPPED) {
    const bytes = readFileSync(join(pkgDir, file));
    sizes[file] = { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length, brotli: brotliCompressSync(bytes).length };
  }
  return sizes;
}

/** The sizes as the build prints them. */
export function table(sizes) {
  return Object.entries(sizes)
    .map(([file, s]) => `${file.padEnd(30)} raw ${kib(s.raw).padStart(10)}  gzip ${kib(s.gzip).padStart(9)}  brotli ${kib(s.brotli).padStart(9)}`)
    .join('\n');
}

const MARKER = /<!--size:([\w.]+):(raw|gzip|brotli)-->([^<]*)<!--\/size-->/g;

/** Every size the README states: `[{ file, kind, stated, actual }]`. */
export function readmeSizes(readme, sizes) {
  return [...readme.matchAll(MARKER)].map(([, file, kind, stated]) => ({
    file,
    kind,
    stated,
    actual: sizes[file] ? kib(sizes[file][kind]) : `no such file: ${file}`,
  }));
}

/** Rewrites the sizes the README states to `sizes`; returns whether anything changed. */
export function updateReadme(readmePath, sizes) {
  const readme = readFileSync(readmePath, 'utf8');
  const updated = readme.replace(MARKER, (whole, file, kind) =>
    sizes[file] ? `<!--size:${file}:${kind}-->${kib(sizes[file][kind])}<!--/size-->` : whole,
  );
  if (updated !== readme) writeFileSync(readmePath, updated);
  return updated !== readme;
}
