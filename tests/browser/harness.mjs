// Shared set-up for the page-level tests: a static server over the repository (so test pages
// import the built package from /pkg/) and headless Chromium driven by playwright-core.
import { chromium } from 'playwright-core';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { serve } from '../../scripts/serve.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export function chromiumPath() {
  return process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
}

/** Starts the server and the browser (with `args` added to its command line). Call `close()`
 * when done. */
export async function start({ args = [] } = {}) {
  const { url, close } = await serve(root);
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: [...CHROMIUM_ARGS, ...args] });
  return {
    url,
    browser,
    async close() {
      await browser.close();
      await close();
    },
  };
}

/** A fresh browser context (its own, empty storage) with the test page loaded. */
export async function openHarness(env, context) {
  context ??= await env.browser.newContext();
  const page = await context.newPage();
  await loaded(page, () => page.goto(`${env.url}/tests/pages/harness.html`));
  return { context, page };
}

/** Runs `navigate` and waits until the test page has loaded the package; fails at once on a
 * page error instead of waiting for a time-out. */
async function loaded(page, navigate) {
  let onError;
  const failed = new Promise((_, fail) => {
    onError = (e) => fail(new Error(`page error while loading: ${e.message}`));
    page.on('pageerror', onError);
  });
  try {
    await Promise.race([
      (async () => {
        await navigate();
        await page.waitForFunction(() => window.ready === true, null, { timeout: 15000 });
      })(),
      failed,
    ]);
  } finally {
    page.off('pageerror', onError);
  }
}

/** Reloads the page and waits for the package to load again. */
export async function reload(page) {
  await loaded(page, () => page.reload());
}

/**
 * Runs `body` (an async function, sent as its source) in `page` with `{ ...args, url }`: the
 * way the runner tests call the package against a model server at `url`.
 */
export function runInPage(page, body, args, url) {
  return page.evaluate(
    async ({ body, args, url }) => {
      const fn = eval(`(${body})`);
      return fn({ ...args, url });
    },
    { body: body.toString(), args, url },
  );
}
