// The demo and test server: a reload revalidates instead of downloading again (an empty 304
// while a file is unchanged), and a rebuilt file is served at once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile, utimes, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { start, root } from './harness.mjs';

let dir;
let served;
after(async () => {
  await served?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('an unchanged file answers 304 to its ETag; a changed one is sent again', async () => {
  dir = await mkdtemp(join(tmpdir(), 'serve-'));
  await writeFile(join(dir, 'm.wasm'), 'first');
  served = await serve(dir);
  const { url } = served;
  const first = await fetch(`${url}/m.wasm`);
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('content-type'), 'application/wasm');
  assert.equal(first.headers.get('cache-control'), 'no-cache');
  const etag = first.headers.get('etag');
  assert.equal(await first.text(), 'first');
  const again = await fetch(`${url}/m.wasm`, { headers: { 'if-none-match': etag } });
  assert.equal(again.status, 304);
  assert.equal(await again.text(), '');
  await writeFile(join(dir, 'm.wasm'), 'second!');
  const later = new Date(Date.now() + 5000);
  await utimes(join(dir, 'm.wasm'), later, later);
  const rebuilt = await fetch(`${url}/m.wasm`, { headers: { 'if-none-match': etag } });
  assert.equal(rebuilt.status, 200);
  assert.equal(await rebuilt.text(), 'second!');
});

test('a page reload takes the package from the browser cache (the server sends no body again)', async () => {
  const env = await start();
  const own = await serve(root);
  const seen = [];
  own.server.on('request', (req, res) => {
    if (req.url.endsWith('_bg.wasm')) res.on('finish', () => seen.push(res.statusCode));
  });
  const context = await env.browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${own.url}/tests/pages/harness.html`);
    await page.waitForFunction(() => window.ready === true);
    const firstLoad = seen.splice(0);
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    assert.ok(firstLoad.length >= 1 && firstLoad.every((s) => s === 200), `first load: ${firstLoad}`);
    assert.ok(seen.length >= 1 && seen.every((s) => s === 304), `reload: ${seen}`);
  } finally {
    // The page goes first, so its server is not closed under a page still using it.
    await context.close();
    await own.close();
    await env.close();
  }
});
