// Keeping the data: requestPersistentStorage asks the browser to keep the origin's storage and
// reports what the browser decided, as the browser itself reports it afterwards.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness } from './harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

test('requestPersistentStorage resolves to whether the origin is persisted, as navigator.storage says', async () => {
  const { context, page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const granted = await lib.requestPersistentStorage();
    return { granted, persisted: await navigator.storage.persisted() };
  });
  assert.equal(typeof r.granted, 'boolean');
  assert.equal(r.granted, r.persisted);
  // Granting it through the browser's own permission makes it true.
  await context.grantPermissions(['persistent-storage'], { origin: env.url }).catch(() => {});
  const again = await page.evaluate(async () => ({ granted: await lib.requestPersistentStorage(), persisted: await navigator.storage.persisted() }));
  assert.equal(again.granted, again.persisted);
});
