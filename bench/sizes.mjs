// What each library costs to ship: our two files as built, and the other libraries as an
// esbuild minified ES module bundle of the whole package (what a bundler would include at most),
// each raw, gzip (level 9) and brotli (quality 11), as scripts/build.mjs measures.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { root } from '../tests/browser/harness.mjs';

function measure(name, bytes, how) {
  return {
    name,
    how,
    raw: bytes.length,
    gzip: gzipSync(bytes, { level: 9 }).length,
    brotli: brotliCompressSync(bytes).length,
  };
}

async function bundle(contents) {
  const result = await build({
    stdin: { contents, resolveDir: root, loader: 'js' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'error',
  });
  return Buffer.from(result.outputFiles[0].contents);
}

export async function measureSizes(pkgDir = join(root, 'pkg')) {
  const pkg = (file) => readFileSync(join(pkgDir, file));
  return [
    measure('agent-sessions: agent_sessions_bg.wasm', pkg('agent_sessions_bg.wasm'), 'as built'),
    measure('agent-sessions: index.js', pkg('index.js'), 'as built'),
    measure('agent-sessions/runner: agent_sessions_runner_bg.wasm', pkg('agent_sessions_runner_bg.wasm'), 'as built'),
    measure(
      'agent-sessions: index.js, minified',
      await bundle(`export * from ${JSON.stringify(join(resolve(pkgDir), 'index.js'))};`),
      'esbuild minified bundle, wasm not included',
    ),
    measure('dexie 4.4.7', await bundle("export * from 'dexie'; export { default } from 'dexie';"), 'esbuild minified bundle'),
    measure('@openai/agents-core 0.20.0', await bundle("export * from '@openai/agents-core';"), 'esbuild minified bundle'),
    measure('idb-keyval 6.3.0', await bundle("export * from 'idb-keyval';"), 'esbuild minified bundle'),
    measure('localforage 1.10.0', await bundle("export { default } from 'localforage';"), 'esbuild minified bundle'),
  ];
}
