// Builds the npm package into pkg/: the release wasm modules, their wasm-bindgen ES module glue,
// the package entries and their TypeScript declarations. Prints the size of what ships.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { budgets, measure, table, updateReadme } from './sizes.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = join(root, 'pkg');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

// Two WebAssembly modules, so that a page that only needs sessions (the SDK drop-in) does not
// download the runner: `agent_sessions` (sessions) and `agent_sessions_runner` (Agent, Runner,
// RunState). Each feature set builds in its own target folder, so both stay incremental.
export const MODULES = [
  { name: 'agent_sessions', features: 'sessions', targetDir: 'target' },
  { name: 'agent_sessions_runner', features: 'runner', targetDir: 'target/runner' },
];

// binaryen from npm (a pinned, recent wasm-opt; old ones mis-optimise wasm-bindgen's externref
// table), else one on PATH.
const localWasmOpt = join(root, 'node_modules/.bin/wasm-opt');
const wasmOpt = existsSync(localWasmOpt) ? localWasmOpt : 'wasm-opt';
const hasWasmOpt = spawnSync(wasmOpt, ['--version']).status === 0;
if (!hasWasmOpt) console.log('wasm-opt not found: the wasm is not size-optimised further');

mkdirSync(pkg, { recursive: true });
for (const m of MODULES) {
  run('cargo', [
    'build', '--release', '--lib', '--target', 'wasm32-unknown-unknown',
    '--no-default-features', '--features', m.features, '--target-dir', m.targetDir,
  ]);
  run('wasm-bindgen', [
    '--target', 'web',
    '--out-dir', pkg,
    '--out-name', m.name,
    join(root, m.targetDir, 'wasm32-unknown-unknown/release/agent_sessions.wasm'),
  ]);
  if (hasWasmOpt) {
    const wasm = join(pkg, `${m.name}_bg.wasm`);
    run(wasmOpt, [
      '-Oz', '--strip-debug', '--strip-producers',
      '--enable-bulk-memory', '--enable-nontrapping-float-to-int', '--enable-sign-ext',
      '--enable-reference-types', '--enable-multivalue', '--enable-mutable-globals',
      wasm, '-o', wasm,
    ]);
  }
}

for (const file of ['index.js', 'index.d.ts', 'events.js', 'backup.js', 'encrypted.js', 'records.js', 'sync.js', 'conversations.js', 'runner.js', 'runner.d.ts']) {
  copyFileSync(join(root, 'js', file), join(pkg, file));
}

const sizes = measure(pkg);
console.log(table(sizes));
const budget = budgets(sizes);
console.log(budget.text);
if (budget.over.length) console.log(`over budget: ${budget.over.join(', ')} (npm test fails)`);
// The README states these sizes; outside CI the build keeps them true (a test checks them in CI).
if (!process.env.CI && updateReadme(join(root, 'README.md'), sizes)) {
  console.log('README.md: sizes updated to this build');
}
