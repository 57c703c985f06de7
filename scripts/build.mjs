// Builds the npm package into pkg/: the release wasm, the wasm-bindgen ES module glue, the
// package entry and its TypeScript declarations. Prints the size of what ships.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { gzipSync, brotliCompressSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = join(root, 'pkg');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

run('cargo', ['build', '--release', '--lib', '--target', 'wasm32-unknown-unknown']);
run('wasm-bindgen', [
  '--target', 'web',
  '--out-dir', pkg,
  '--out-name', 'agent_sessions',
  join(root, 'target/wasm32-unknown-unknown/release/agent_sessions.wasm'),
]);

const wasm = join(pkg, 'agent_sessions_bg.wasm');
// binaryen from npm (a pinned, recent wasm-opt; old ones mis-optimise wasm-bindgen's externref
// table), else one on PATH.
const localWasmOpt = join(root, 'node_modules/.bin/wasm-opt');
const wasmOpt = existsSync(localWasmOpt) ? localWasmOpt : 'wasm-opt';
const hasWasmOpt = spawnSync(wasmOpt, ['--version']).status === 0;
if (hasWasmOpt) {
  run(wasmOpt, [
    '-Oz', '--strip-debug', '--strip-producers',
    '--enable-bulk-memory', '--enable-nontrapping-float-to-int', '--enable-sign-ext',
    '--enable-reference-types', '--enable-multivalue', '--enable-mutable-globals',
    wasm, '-o', wasm,
  ]);
} else {
  console.log('wasm-opt not found: the wasm is not size-optimised further');
}

mkdirSync(pkg, { recursive: true });
copyFileSync(join(root, 'js/index.js'), join(pkg, 'index.js'));
copyFileSync(join(root, 'js/index.d.ts'), join(pkg, 'index.d.ts'));

const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
for (const file of ['agent_sessions_bg.wasm', 'agent_sessions.js']) {
  const bytes = readFileSync(join(pkg, file));
  console.log(
    `${file.padEnd(24)} raw ${kb(statSync(join(pkg, file)).size).padStart(10)}` +
      `  gzip ${kb(gzipSync(bytes, { level: 9 }).length).padStart(9)}` +
      `  brotli ${kb(brotliCompressSync(bytes).length).padStart(9)}`,
  );
}
