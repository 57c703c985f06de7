// Builds the npm package into pkg/: the release wasm modules, the two entries (each one ES
// module: the package's JS and its wasm-bindgen glue bundled together) and their TypeScript
// declarations. Prints the size of what ships.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { budgets, measure, table, updateReadme } from './sizes.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = join(root, 'pkg');
// wasm-bindgen's output and the package's JS sources side by side, as the sources import them.
const staging = join(root, 'target/package');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

// Four WebAssembly modules, so that a page downloads only what it uses: `agent_sessions` (the
// sessions stored in IndexedDB: what a chat needs on every load), `agent_sessions_extras`
// (search, backups, repair, storage sizes: loaded by the first call that needs it),
// `agent_sessions_memory` (MemorySession's store: loaded by a MemorySession's first call) and
// `agent_sessions_runner` (Agent, Runner, RunState). Each feature set builds in its own target
// folder, so all stay incremental.
export const MODULES = [
  { name: 'agent_sessions', features: 'sessions', targetDir: 'target' },
  { name: 'agent_sessions_extras', features: 'extras', targetDir: 'target/extras' },
  { name: 'agent_sessions_memory', features: 'memory', targetDir: 'target/memory' },
  { name: 'agent_sessions_runner', features: 'runner', targetDir: 'target/runner' },
];

// binaryen from npm (a pinned, recent wasm-opt; old ones mis-optimise wasm-bindgen's externref
// table), else one on PATH.
const localWasmOpt = join(root, 'node_modules/.bin/wasm-opt');
const wasmOpt = existsSync(localWasmOpt) ? localWasmOpt : 'wasm-opt';
const hasWasmOpt = spawnSync(wasmOpt, ['--version']).status === 0;
if (!hasWasmOpt) console.log('wasm-opt not found: the wasm is not size-optimised further');

rmSync(staging, { recursive: true, force: true });
mkdirSync(staging, { recursive: true });
mkdirSync(pkg, { recursive: true });
for (const m of MODULES) {
  run('cargo', [
    'build', '--release', '--lib', '--target', 'wasm32-unknown-unknown',
    '--no-default-features', '--features', m.features, '--target-dir', m.targetDir,
  ]);
  run('wasm-bindgen', [
    '--target', 'web',
    '--out-dir', staging,
    '--out-name', m.name,
    join(root, m.targetDir, 'wasm32-unknown-unknown/release/agent_sessions.wasm'),
  ]);
  const wasm = `${m.name}_bg.wasm`;
  if (hasWasmOpt) {
    // The import and export names made one or two characters long: wasm-bindgen names each
    // import after its JS function with a 16-digit hash (unique, and incompressible), and its
    // module after the glue's file; the glue is rewritten to the same names (see minifiedGlue).
    const names = execFileSync(wasmOpt, [
      '-Oz', '--strip-debug', '--strip-producers',
      '--enable-bulk-memory', '--enable-nontrapping-float-to-int', '--enable-sign-ext',
      '--enable-reference-types', '--enable-multivalue', '--enable-mutable-globals',
      '--minify-imports-and-exports-and-modules',
      join(staging, wasm), '-o', join(pkg, wasm),
    ], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const glue = join(staging, `${m.name}.js`);
    writeFileSync(glue, minifiedGlue(readFileSync(glue, 'utf8'), JSON.parse(names), join(pkg, wasm)));
    // What the names were, for the tests that check each module's surface.
    writeFileSync(join(staging, `${m.name}_bg.names.json`), names);
  } else {
    copyFileSync(join(staging, wasm), join(pkg, wasm));
  }
  // (The second and the memory module's exports are declared with the sessions module's, as
  // the package exports them.)
  if (!['agent_sessions_extras', 'agent_sessions_memory'].includes(m.name)) copyFileSync(join(staging, `${m.name}.d.ts`), join(pkg, `${m.name}.d.ts`));
}

/**
 * The glue `source` with the names the minified module `wasmFile` uses: each import's key in the
 * object of imports, the module's name, and every `wasm.name` read of an export. `mapping` is
 * what wasm-opt printed: `{ imports: [[module, name, new]], exports: [[name, new]] }`. Throws
 * where the glue does not hold a name exactly where it is expected, so that a change in
 * wasm-bindgen's output fails the build instead of the page.
 */
function minifiedGlue(source, { imports, exports }, wasmFile) {
  const modules = [...new Set(imports.map(([module]) => module))];
  const minifiedModules = [...new Set(WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(wasmFile))).map((i) => i.module))];
  if (modules.length !== 1 || minifiedModules.length !== 1) {
    throw new Error(`${wasmFile}: expected one module of imports, found ${modules.length} and ${minifiedModules.length} after minifying`);
  }
  const moduleKey = `${JSON.stringify(modules[0])}: import0`;
  if (source.split(moduleKey).length !== 2) throw new Error(`${wasmFile}: the glue does not name its imports' module once (${moduleKey})`);
  let out = source.replace(moduleKey, `${JSON.stringify(minifiedModules[0])}: import0`);
  for (const [, name, short] of imports) {
    const key = new RegExp(`(?<![\\w$])${name}(?=: function\\()`, 'g');
    const found = out.match(key)?.length ?? 0;
    if (found !== 1) throw new Error(`${wasmFile}: the glue defines import ${name} ${found} times`);
    out = out.replace(key, short);
  }
  const exported = new Map(exports);
  out = out.replace(/(?<![\w$.])wasm\.([A-Za-z_$][\w$]*)/g, (read, name) => {
    const short = exported.get(name);
    if (short === undefined) throw new Error(`${wasmFile}: the glue reads wasm.${name}, which the module does not export`);
    return `wasm.${short}`;
  });
  return out;
}

/**
 * The bundle `source` with each class and function it exports named as it is exported (what
 * `name`, consoles and stacks show), where minifying renamed its binding. esbuild's `keepNames`
 * would do it for every function of the bundle, the glue's hundred-odd imports among them: a
 * call each when the entry is evaluated, and 8% of its size gzipped.
 */
function withExportNames(source, entry) {
  const found = [...source.matchAll(/export\{([^}]*)\};/g)];
  if (found.length !== 1) throw new Error(`${entry}: expected one export statement of its own, found ${found.length}`);
  const [statement, list] = found[0];
  const pairs = list.split(',').map((part) => {
    const [local, exported = local] = part.split(' as ');
    if (!/^[\w$]+$/.test(local) || !/^[\w$]+$/.test(exported)) throw new Error(`${entry}: cannot read the export ${part}`);
    return `[${local},${JSON.stringify(exported)}]`;
  });
  // (The list is evaluated outside the callback's scope: its parameters cannot shadow a binding
  // the list names, as a `for (const [f, n] of …)` head did an export minified to `n`.)
  const naming = `[${pairs.join(',')}].forEach(([f,n])=>typeof f=="function"&&f.name!==n&&Object.defineProperty(f,"name",{value:n,configurable:!0}));`;
  return source.replace(statement, naming + statement);
}

// Each entry is one module, so that a page loading the package unbundled (an import map, a CDN)
// fetches one file before the wasm instead of three levels of imports; an application's bundler
// sees the same code either way. The runner entry imports the main entry, not a copy of it (one
// wasm instance and one set of classes, whichever entries a page imports), and, before it, the
// small module that starts the runner wasm's download (js/runner_wasm.js).
for (const file of readdirSync(join(root, 'js'))) copyFileSync(join(root, 'js', file), join(staging, file));
const shared = {
  name: 'modules the runner entry imports, not copies',
  setup: (b) => b.onResolve({ filter: /^\.\/(index|runner_wasm)\.js$/ }, (args) => ({ path: args.path, external: true })),
};
// The main entry imports the second sessions module and the memory module when it first needs
// them: modules of their own.
const lazy = {
  name: 'the second sessions module and the memory module, imported when needed',
  setup: (b) => b.onResolve({ filter: /^\.\/(extras|memory)\.js$/ }, (args) => ({ path: args.path, external: true })),
};
for (const [entry, plugins] of [['index.js', [lazy]], ['extras.js', []], ['memory.js', []], ['runner_wasm.js', []], ['runner.js', [shared]]]) {
  const { outputFiles: [bundle] } = await build({
    entryPoints: [join(staging, entry)],
    outfile: join(pkg, entry),
    // Written below, once its exports are named.
    write: false,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    // Minified: what a page loading the package unbundled downloads and parses (a third less
    // gzipped); messages and the declarations are the same, and every exported class and
    // function keeps its name (below).
    minify: true,
    plugins,
    logLevel: 'error',
  });
  writeFileSync(bundle.path, withExportNames(bundle.text, entry));
}
for (const file of ['index.d.ts', 'runner.d.ts']) copyFileSync(join(root, 'js', file), join(pkg, file));
// pkg/ holds what package.json ships and nothing else (no file of an earlier layout).
const shipped = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).files.filter((f) => f.startsWith('pkg/'));
for (const file of readdirSync(pkg)) {
  if (!shipped.includes(`pkg/${file}`)) rmSync(join(pkg, file), { recursive: true, force: true });
}
for (const file of shipped) {
  if (!existsSync(join(root, file))) throw new Error(`the build made no ${file}, which package.json ships`);
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
