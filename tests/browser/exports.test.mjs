// What ships, exactly: each entry exports what it promises and nothing else; each WebAssembly
// module carries only its own part (the sessions module no runner code, the runner module no
// IndexedDB code: the cargo features gate them); every size the README states is what was built.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { start, openHarness, root } from './harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

const SESSIONS = [
  'EncryptedSession',
  'IndexedDbSession',
  'applyRetention',
  'createDeviceKey',
  'deviceKey',
  'deriveKeyFromPassphrase',
  'forgetDeviceKey',
  'loadDeviceKey',
  'MemorySession',
  'SyncedSession',
  'deleteSession',
  'exportSessions',
  'importSessions',
  'listSessions',
  'buildSearchIndex',
  'repairSession',
  'requestPersistentStorage',
  'searchSessions',
  'sessionLockName',
  'storageEstimate',
  'storeDeviceKey',
  'watchSessions',
];
const RUNNER = ['Agent', 'CompactionSession', 'OpenAIConversationsSession', 'RunState', 'Runner'];

test('each entry exports exactly what the README promises', async () => {
  const { page } = await openHarness(env);
  const names = await page.evaluate(async () => {
    const keys = async (path) => Object.keys(await import(path)).sort();
    return {
      index: await keys('/pkg/index.js'),
      runner: await keys('/pkg/runner.js'),
    };
  });
  assert.deepEqual(names.index, [...SESSIONS].sort());
  assert.deepEqual(names.runner, [...SESSIONS, ...RUNNER].sort());
});

test('every exported class and function has its own name (what consoles, stacks and constructor.name show)', async () => {
  const { page } = await openHarness(env);
  const wrong = await page.evaluate(async () => {
    const wrong = [];
    for (const path of ['/pkg/index.js', '/pkg/runner.js']) {
      for (const [name, value] of Object.entries(await import(path))) {
        if (typeof value === 'function' && value.name !== name) wrong.push(`${path} ${name}: ${value.name}`);
      }
    }
    return wrong;
  });
  assert.deepEqual(wrong, []);
});

/**
 * The exported and imported names of a built wasm module as wasm-bindgen named them, without
 * its internals. The build minifies the names and keeps what they were beside the glue
 * (`target/package/*.names.json`); every name the module has must be in that record.
 */
function surface(file) {
  const module = new WebAssembly.Module(readFileSync(join(root, 'pkg', file)));
  const names = JSON.parse(readFileSync(join(root, 'target/package', file.replace(/\.wasm$/, '.names.json')), 'utf8'));
  const exportNames = new Map(names.exports.map(([name, short]) => [short, name]));
  const importNames = new Map(names.imports.map(([, name, short]) => [short, name]));
  const named = (map, short) => {
    assert.ok(map.has(short), `${file}: ${short} is not in the record of its names`);
    return map.get(short);
  };
  const exports = WebAssembly.Module.exports(module)
    .map((e) => named(exportNames, e.name))
    .filter((n) => n !== 'memory' && !n.startsWith('__') && !n.startsWith('wasm_bindgen__'));
  const imports = WebAssembly.Module.imports(module).map((i) => named(importNames, i.name));
  return { exports, imports };
}

test('the sessions module holds no runner code, and the runner and memory modules no IndexedDB code', () => {
  const sessions = surface('agent_sessions_bg.wasm');
  const classesOf = (exports) => [...new Set(exports.map((n) => n.split('_')[0]))].sort();
  // One class (`session`) that IndexedDbSession extends; listSessionRecords serves the package's
  // listSessions; memorySessionArgs checks a MemorySession's arguments when it is made;
  // setIndexBuilder takes the function that runs a search index's build in the second module;
  // search, backups, repair, sizes and that build are the second module's.
  assert.deepEqual(classesOf(sessions.exports), ['listSessionRecords', 'memorySessionArgs', 'session', 'setIndexBuilder']);
  // The memory module: the same class over a MemorySession's store, and nothing of IndexedDB.
  const memory = surface('agent_sessions_memory_bg.wasm');
  assert.deepEqual(classesOf(memory.exports), ['session']);
  for (const idb of ['objectStore', 'transaction', 'Idb', 'onupgradeneeded', 'indexedDB']) {
    assert.ok(!memory.imports.some((n) => n.includes(idb)), `the memory module imports ${idb}`);
  }
  // readBackup, restoreSession and sessionSizes serve js/backup.js and storageEstimate;
  // deleteSession the package's deleteSession (and deleteSessions, applyRetention);
  // sessionCall the IndexedDbSession methods the second module serves.
  const extras = surface('agent_sessions_extras_bg.wasm');
  assert.deepEqual(classesOf(extras.exports), ['buildSearchIndex', 'deleteSession', 'readBackup', 'repairSession', 'restoreSession', 'searchSessions', 'sessionCall', 'sessionSizes']);
  // (JSON.stringify is the sessions modules' measure of an item's size; parsing and streams are
  // the runner's.)
  for (const [name, module] of [['sessions', sessions], ['extras', extras]]) {
    for (const js of ['parse', 'getReader']) {
      assert.ok(!module.imports.some((n) => n.includes(js)), `the ${name} module imports ${js}`);
    }
  }

  const runner = surface('agent_sessions_runner_bg.wasm');
  // notAnAgent, notARunner and compactionRunner serve js/runner.js's checks of foreign `agent`
  // and `runner` arguments; compactionengine runs CompactionSession's compactions; sessionBusy
  // is the error of a run refused by its session's lock; toConversationItems and
  // fromConversationItems convert items for OpenAIConversationsSession (js/conversations.js).
  assert.deepEqual(classesOf(runner.exports), [
    'agent',
    'compactionRunner',
    'compactionengine',
    'fromConversationItems',
    'notARunner',
    'notAnAgent',
    'runner',
    'runstate',
    'sessionBusy',
    'toConversationItems',
  ]);
  for (const idb of ['objectStore', 'transaction', 'Idb', 'onupgradeneeded']) {
    assert.ok(!runner.imports.some((n) => n.includes(idb)), `the runner module imports ${idb}`);
  }
});

test('every shipped file is within its size budget', async () => {
  const { BUDGETS, SHIPPED, budgets, measure } = await import('../../scripts/sizes.mjs');
  for (const file of SHIPPED) assert.ok(BUDGETS[file]?.budget > 0, `${file} has a budget`);
  const sizes = measure(join(root, 'pkg'));
  for (const file of SHIPPED) {
    assert.ok(sizes[file].gzip <= BUDGETS[file].budget, `${file}: ${sizes[file].gzip} bytes gzipped, over its budget of ${BUDGETS[file].budget}`);
  }
  assert.deepEqual(budgets(sizes).over, []);
  // The check itself: a file one byte over is reported.
  const file = 'agent_sessions_runner_bg.wasm';
  assert.deepEqual(budgets({ [file]: { ...sizes[file], gzip: BUDGETS[file].budget + 1 } }).over, [file]);
});

test('every size the README states is the size of what the build made', async () => {
  const { measure, readmeSizes, SHIPPED } = await import('../../scripts/sizes.mjs');
  const stated = readmeSizes(readFileSync(join(root, 'README.md'), 'utf8'), measure(join(root, 'pkg')));
  for (const file of SHIPPED) {
    assert.ok(stated.some((s) => s.file === file && s.kind === 'gzip'), `the README states the gzip size of ${file}`);
  }
  for (const s of stated) {
    assert.equal(s.stated, s.actual, `README: ${s.kind} size of ${s.file}; \`npm run build\` rewrites it`);
  }
});
