// The package as users get it: `npm pack` of the repository, installed from the tarball into
// temporary copies of the fixtures in tests/fixtures/ (nothing is written into the repository):
// a Vite app built with `vite build`, a plain page importing the bare name through an import
// map, and a TypeScript project compiled with `tsc --strict` against the installed declarations.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve.mjs';
import { root, chromiumPath, CHROMIUM_ARGS } from './harness.mjs';

const exec = promisify(execFile);
const FIXTURES = join(root, 'tests/fixtures');
const bin = (name) => join(root, 'node_modules/.bin', name);

/** The files the published package must contain, and nothing else. */
const SHIPPED = [
  'LICENSE',
  'README.md',
  'package.json',
  'pkg/agent_sessions.d.ts',
  'pkg/agent_sessions_bg.wasm',
  'pkg/agent_sessions_extras_bg.wasm',
  'pkg/agent_sessions_memory_bg.wasm',
  'pkg/agent_sessions_runner.d.ts',
  'pkg/agent_sessions_runner_bg.wasm',
  'pkg/extras.js',
  'pkg/index.d.ts',
  'pkg/index.js',
  'pkg/memory.js',
  'pkg/runner.d.ts',
  'pkg/runner.js',
  'pkg/runner_wasm.js',
];

let tmp;
let packed; // npm pack's report
let tarball;
let browser;
const servers = [];

/** A copy of a fixture in the temporary folder, with the packed tarball installed into it. */
async function installFixture(name) {
  const dir = join(tmp, name);
  await cp(join(FIXTURES, name), dir, { recursive: true });
  await exec('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline', '--no-update-notifier', '--loglevel=error'], {
    cwd: dir,
    timeout: 120_000,
  });
  return dir;
}

async function serveFolder(dir) {
  const { url, close } = await serve(dir);
  servers.push(close);
  return url;
}

/** Loads a fixture page and returns what its round trip reported. */
async function roundTrip(url) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(url);
    await page.waitForFunction(() => window.result !== undefined, null, { timeout: 20000 });
    const result = await page.evaluate(() => window.result);
    const shown = JSON.parse(await page.textContent('#round-trip'));
    assert.deepEqual(errors, [], 'no page errors');
    assert.deepStrictEqual(shown, result, 'the page shows its result');
    return result;
  } finally {
    await context.close();
  }
}

const ITEMS = [
  { role: 'user', content: 'What city is the Golden Gate Bridge in?' },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'San Francisco.' }] },
];

function assertRoundTrip(r, wasmFiles) {
  assert.equal(r.ok, true, r.error);
  assert.deepStrictEqual(r.got, ITEMS);
  assert.deepStrictEqual(r.popped, ITEMS[1]);
  assert.deepStrictEqual(r.left, [ITEMS[0]]);
  assert.equal(r.itemCount, 1);
  assert.deepStrictEqual(r.memory.slice(0, 2), ITEMS);
  assert.equal(r.wasm.length, wasmFiles, 'each wasm is fetched once');
  // The second sessions module is fetched by the first search, and the memory module by the
  // first call of a MemorySession (after the search), not by the import.
  assert.equal(r.wasmBeforeSearch, wasmFiles - 2, 'neither the search nor the memory module was fetched before it was needed');
  const later = r.wasm.slice(wasmFiles - 2);
  assert.ok(later[0].includes('agent_sessions_extras_bg') && later[1].includes('agent_sessions_memory_bg'), r.wasm.join(', '));
  assert.deepStrictEqual(r.found.map(([, role]) => role), ['user'], 'the search found the question');
}

describe('the npm package, installed from its tarball', () => {
  let installs;
  before(async () => {
    await stat(join(root, 'pkg/index.js')).catch(() => {
      throw new Error('pkg/ is missing: run `node scripts/build.mjs` first');
    });
    tmp = await mkdtemp(join(tmpdir(), 'agent-sessions-pack-'));
    const { stdout } = await exec('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', tmp, '--loglevel=error'], {
      cwd: root,
      timeout: 60_000,
    });
    [packed] = JSON.parse(stdout);
    tarball = join(tmp, packed.filename);
    // The three installs are independent: run them together.
    installs = Object.fromEntries(
      await Promise.all(
        ['vite-app', 'importmap', 'ts-consumer'].map(async (name) => [name, await installFixture(name)]),
      ),
    );
    browser = await chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS });
  });
  after(async () => {
    await browser?.close();
    await Promise.all(servers.map((close) => close()));
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  test('npm pack ships the two entries (each one module), the wasm and the declarations, nothing else', async () => {
    assert.deepEqual(packed.files.map((f) => f.path).sort(), SHIPPED);
    const installed = JSON.parse(
      await readFile(join(installs['vite-app'], 'node_modules/agent-sessions/package.json'), 'utf8'),
    );
    assert.equal(installed.name, 'agent-sessions');
    assert.equal(installed.type, 'module');
    const entry = installed.exports['.'];
    for (const target of [entry.types, entry.import, installed.module, installed.types]) {
      assert.ok(SHIPPED.includes(target.replace(/^\.\//, '')), `${target} is in the tarball`);
    }
    assert.ok(!('dependencies' in installed), 'nothing else to install');
    // Every file the installed package holds is byte-identical to the build.
    for (const file of SHIPPED.filter((f) => f.startsWith('pkg/'))) {
      const a = await readFile(join(installs['vite-app'], 'node_modules/agent-sessions', file));
      const b = await readFile(join(root, file));
      assert.ok(a.equals(b), `${file} is shipped as built`);
    }
  });

  test('a Vite app: `vite build` (no plugins) bundles the package and its wasm; the built app works', async () => {
    const app = installs['vite-app'];
    await exec(bin('vite'), ['build', '--logLevel', 'warn'], { cwd: app, timeout: 120_000 });
    const assets = await readdir(join(app, 'dist/assets'));
    const wasm = assets.filter((f) => f.endsWith('.wasm')).sort();
    assert.equal(wasm.length, 4, `the sessions, its second, the memory and the runner wasm in dist/assets: ${assets.join(', ')}`);
    const built = ['agent_sessions_bg.wasm', 'agent_sessions_extras_bg.wasm', 'agent_sessions_memory_bg.wasm', 'agent_sessions_runner_bg.wasm'];
    for (const [asset, ours] of wasm.map((w, i) => [w, built[i]])) {
      const shipped = await readFile(join(root, 'pkg', ours));
      assert.ok((await readFile(join(app, 'dist/assets', asset))).equals(shipped), `${asset} is our ${ours}`);
    }

    const url = await serveFolder(join(app, 'dist'));
    const r = await roundTrip(`${url}/`);
    assertRoundTrip(r, 4);
    assert.equal(r.runOutput, 'Hello from the runner.');
    assert.deepStrictEqual(r.memory.slice(2).map((i) => i.role), ['user', 'assistant'], 'the run was saved');
    assert.deepEqual(r.wasm.map((u) => new URL(u).pathname).sort(), wasm.map((w) => `/assets/${w}`), 'the app loads the wasm that Vite emitted');
  });

  test('Node (a framework rendering the page on the server, a test runner): the installed package imports, its wasm read from disk; MemorySession, the second module and the runner work, and IndexedDbSession says IndexedDB is missing', async () => {
    const app = installs['vite-app'];
    const script = join(app, 'in-node.mjs');
    await writeFile(
      script,
      `import { Agent, Runner, MemorySession, IndexedDbSession, searchSessions } from 'agent-sessions/runner';
const out = {};
const memory = new MemorySession('node');
const answer = { id: 'c1', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Hello from Node.' } }], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } };
const runner = new Runner({ baseUrl: 'http://127.0.0.1:9', fetch: async () => new Response(JSON.stringify(answer), { headers: { 'content-type': 'application/json' } }) });
const result = await runner.run(new Agent({ name: 'A', model: 'm' }), 'hi', { session: memory });
out.finalOutput = result.finalOutput;
out.memory = (await memory.getItems()).map((i) => i.role);
try {
  await new IndexedDbSession('node').getItems();
} catch (e) {
  out.indexedDb = e.code;
}
// Checked by the second module, once loaded.
out.search = await searchSessions({ query: 'x' }).catch((e) => e.code);
console.log(JSON.stringify(out));
`,
    );
    const { stdout } = await exec(process.execPath, [script], { cwd: app, timeout: 60_000 });
    assert.deepEqual(JSON.parse(stdout), { finalOutput: 'Hello from Node.', memory: ['user', 'assistant'], indexedDb: 'STORAGE_UNAVAILABLE', search: 'INVALID_OPTIONS' });
  });

  test('Node with an IndexedDB written in JS (fake-indexeddb, as app tests use): sessions are stored and watched, every event heard, a listener that throws reported without ending the process, and the process ends by itself once its watch is stopped (an EncryptedSession left open too, which is collected once dropped)', async () => {
    const app = installs['vite-app'];
    const script = join(app, 'in-node-idb.mjs');
    const fake = pathToFileURL(join(root, 'node_modules/fake-indexeddb/auto/index.mjs')).href;
    await writeFile(
      script,
      `import ${JSON.stringify(fake)};
import { EncryptedSession, IndexedDbSession, listSessions, watchSessions } from 'agent-sessions';
const heard = [];
const watch = watchSessions({ userId: 'ann' }, (e) => heard.push(e.type + ' ' + e.change));
await watch.ready;
const session = new IndexedDbSession('chat', { userId: 'ann' });
// A listener that throws is reported (on stderr here), and the process goes on.
const unsubscribe = session.subscribe(() => { throw new Error('a listener that throws'); });
await session.addItems([{ role: 'user', content: 'hello from Node' }, { role: 'assistant', content: 'hi' }]);
await new Promise((done) => setTimeout(done, 50));
unsubscribe();
const popped = await session.popItem();
const listed = (await listSessions({ userId: 'ann' })).map((s) => [s.sessionId, s.title, s.itemCount]);
const items = await session.getItems();
// One more write, whose event is awaited with nothing but the watches keeping the process alive.
await new Promise((heardIt) => {
  const last = watchSessions({ userId: 'ann' }, () => heard.length === 3 && (last(), heardIt()));
  last.ready.then(() => session.addItems([{ role: 'user', content: 'last' }]));
});
watch();
// EncryptedSessions whose key a read found fitting (they then listen for a rewrite of the
// history, another tab's changeKey) and that were dropped without close() are collected, and
// keep the process running no more than one left open does.
const key = new Uint8Array(32).fill(7);
const sealed = new EncryptedSession(new IndexedDbSession('sealed', { userId: 'ann' }), { key: key.slice() });
await sealed.addItems([{ role: 'user', content: 'sealed' }]);
const read = (await sealed.getItems()).map((i) => i.content);
let collected = 0;
const registry = new FinalizationRegistry(() => collected++);
for (let i = 0; i < 20; i++) {
  const dropped = new EncryptedSession(new IndexedDbSession('sealed', { userId: 'ann' }), { key: key.slice() });
  await dropped.getItems();
  registry.register(dropped, i);
}
for (let i = 0; i < 20 && collected === 0; i++) {
  globalThis.gc();
  await new Promise((done) => setTimeout(done, 20));
}
console.log(JSON.stringify({ items, popped, listed, heard, read, collected: collected > 0 }));
`,
    );
    // A process kept alive (an open channel or port) would be killed at the timeout: a failure.
    const { stdout, stderr } = await exec(process.execPath, ['--expose-gc', script], { cwd: app, timeout: 30_000 });
    assert.match(stderr, /a listener that throws/);
    assert.deepEqual(JSON.parse(stdout), {
      items: [{ role: 'user', content: 'hello from Node' }],
      popped: { role: 'assistant', content: 'hi' },
      listed: [['chat', 'hello from Node', 1]],
      heard: ['created add', 'updated pop', 'updated add'],
      read: ['sealed'],
      collected: true,
    });
  });

  test('a plain page imports the bare name through an import map, no bundler', async () => {
    const url = await serveFolder(installs.importmap);
    const r = await roundTrip(`${url}/index.html`);
    assertRoundTrip(r, 3);
    assert.equal(new URL(r.wasm[0]).pathname, '/node_modules/agent-sessions/pkg/agent_sessions_bg.wasm');
  });

  test('a .wasm URL answered with an HTML page (the file not copied, behind an app server’s fallback to its page) fails the import with MODULE_UNAVAILABLE naming it, not a compiler’s complaint about the bytes', async () => {
    const url = await serveFolder(installs.importmap);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.route('**/agent_sessions_bg.wasm', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>app</title>' }));
      await page.goto(`${url}/index.html`);
      const error = await page.evaluate(() => import('agent-sessions').then(() => 'imported', (e) => `${e.name} ${e.code}: ${e.message}`));
      assert.match(error, /^SessionError MODULE_UNAVAILABLE: http:\/\/.*\/agent_sessions_bg\.wasm is an HTML page, not the \.wasm file/);
    } finally {
      await context.close();
    }
  });

  test('TypeScript: tsc --strict against the installed declarations (nodenext, bundler, node10, with the SDK)', async () => {
    const dir = installs['ts-consumer'];
    // The SDK's types for sdk.ts, from the repository's own install (read-only).
    await mkdir(join(dir, 'node_modules/@openai'), { recursive: true });
    for (const name of ['agents', 'agents-core', 'agents-openai', 'agents-realtime']) {
      await symlink(join(root, 'node_modules/@openai', name), join(dir, 'node_modules/@openai', name), 'dir');
    }
    const installedDecls = join(dir, 'node_modules/agent-sessions/pkg/index.d.ts');
    for (const config of ['tsconfig.json', 'tsconfig.bundler.json', 'tsconfig.node10.json', 'tsconfig.sdk.json']) {
      let out;
      try {
        out = await exec(bin('tsc'), ['-p', config, '--listFiles'], { cwd: dir, timeout: 120_000 });
      } catch (e) {
        assert.fail(`tsc -p ${config} failed:\n${e.stdout}${e.stderr}`);
      }
      const files = out.stdout.split('\n');
      assert.ok(files.includes(installedDecls), `${config}: 'agent-sessions' resolves to the installed package`);
      assert.ok(!files.some((f) => f.startsWith(join(root, 'pkg'))), `${config}: nothing from the repository's pkg/`);
    }
  });
});
