// Headless Chromium for the benchmark: the project's Chromium and flags (tests/browser/harness.mjs)
// on a persistent profile in a temporary folder, so IndexedDB is written to disk as in a real
// browser (a default Playwright context is off-the-record and keeps IndexedDB in memory).
import { chromium } from 'playwright-core';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CHROMIUM_ARGS, chromiumPath, root } from '../tests/browser/harness.mjs';
import { serve } from '../scripts/serve.mjs';
import { machine, machineLine } from './machine.mjs';

const BENCH_ARGS = [
  // Pages that are not in front would otherwise have their timers and tasks throttled.
  '--disable-background-timer-throttling',
  '--disable-renderer-backgrounding',
  '--disable-backgrounding-occluded-windows',
  // Lets the page collect garbage before each timed part, so one run's garbage is not
  // collected during the next one.
  '--js-flags=--expose-gc',
  // performance.memory to the byte, for the soak (bench/soak.mjs).
  '--enable-precise-memory-info',
];

/** The runner page is served cross-origin isolated: performance.now() is then precise to a few
 * microseconds instead of 100 µs, which matters for sub-millisecond reads. */
const ISOLATION = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
};

/**
 * Starts the static server and the browser. `pkg` serves another build of the package as /pkg/
 * (a copy taken before a rebuild, an older release) instead of the repository's pkg/; `mounts`
 * serves more folders, each under its name (`{ base: dir }`: /base/).
 */
export async function startBrowser({ pkg, mounts = {} } = {}) {
  const site = pkg || Object.keys(mounts).length ? await siteWith(resolve(pkg ?? join(root, 'pkg')), mounts) : null;
  const { url, close: stopServing } = await serve(site ?? root);
  const profile = await mkdtemp(join(tmpdir(), 'agent-sessions-bench-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    args: [...CHROMIUM_ARGS, ...BENCH_ARGS],
  });
  const version = await browserVersion(context);

  return {
    url,
    version,
    context,

    /** A page running the benchmark for implementation `key`. */
    async runnerPage(key) {
      const page = await context.newPage();
      await page.route('**/bench/page/index.html*', async (route) => {
        const response = await route.fetch();
        await route.fulfill({ response, headers: { ...response.headers(), ...ISOLATION } });
      });
      watch(page, key);
      await page.goto(`${url}/bench/page/index.html?impl=${key}`);
      await page.waitForFunction(() => window.ready === true, null, { timeout: 30_000 });
      return page;
    },

    /** A fresh page with the package loaded as an application loads it, before anything is
     * timed (bench/page/migration.html: `lib` and the benchmark's `items`). `before` runs in the
     * page before any of its scripts. */
    async appPage({ before } = {}) {
      const page = await context.newPage();
      if (before) await page.addInitScript(before);
      watch(page, 'app');
      await page.goto(`${url}/bench/page/migration.html`);
      await page.waitForFunction(() => window.ready === true, null, { timeout: 30_000 });
      return page;
    },

    /** Loads `path` (with `query`) in a fresh page of the same profile (so the data is there)
     * and resolves to what its script leaves in `window.result`; an `error` there is thrown,
     * prefixed with `label`. `cache: false` turns the browser cache off for it, so its code is
     * downloaded and compiled again; `network` emulates those network conditions (CDP's
     * `Network.emulateNetworkConditions`). */
    async freshLoad(path, query, { cache = true, network = null, label = path } = {}) {
      const page = await context.newPage();
      watch(page, label);
      try {
        if (!cache || network) {
          const cdp = await context.newCDPSession(page);
          await cdp.send('Network.enable');
          if (!cache) await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
          if (network) await cdp.send('Network.emulateNetworkConditions', network);
        }
        // The page logs `bench:result` once `window.result` is set. Waiting for that message
        // runs nothing in the page; polling with `waitForFunction` would first inject
        // Playwright's script, whose parsing blocks the page's main thread for 20 to 30 ms
        // while the page is still starting: inside the time being measured.
        const signalled = page.waitForEvent('console', { predicate: (m) => m.text() === 'bench:result', timeout: 60_000 });
        await page.goto(`${url}${path}?${new URLSearchParams(query)}`);
        await signalled;
        const outcome = await page.evaluate(() => window.result);
        if (outcome.error) throw new Error(`${label}: ${outcome.error}`);
        return outcome;
      } finally {
        await page.close();
      }
    },

    /** One start of implementation `key` in a fresh page (bench/page/cold.html); `cache: false`
     * as in `freshLoad`. */
    coldStart(key, { dbName, userId, sessionId, n }, { cache = true } = {}) {
      const query = { impl: key, db: dbName, user: userId, session: sessionId, n: String(n) };
      return this.freshLoad('/bench/page/cold.html', query, { cache, label: `cold start of ${key} (${cache ? 'warm' : 'cold'})` });
    },

    async close() {
      await context.close();
      await stopServing();
      await rm(profile, { recursive: true, force: true });
      if (site) await rm(site, { recursive: true, force: true });
    },
  };
}

/** A folder to serve: the benchmark's files, `pkg` as /pkg/ and each of `mounts` under its
 * name (all linked, not copied). */
async function siteWith(pkg, mounts) {
  const site = await mkdtemp(join(tmpdir(), 'agent-sessions-bench-site-'));
  await symlink(join(root, 'bench'), join(site, 'bench'));
  await symlink(pkg, join(site, 'pkg'));
  for (const [name, dir] of Object.entries(mounts)) await symlink(resolve(dir), join(site, name));
  return site;
}

function watch(page, key) {
  page.on('pageerror', (e) => console.error(`[${key}] page error: ${e.message}`));
}

async function browserVersion(context) {
  const page = context.pages()[0] ?? (await context.newPage());
  const cdp = await context.newCDPSession(page);
  const { product } = await cdp.send('Browser.getVersion');
  await cdp.detach();
  return product.replace(/^(Headless)?Chrome\//, 'Chromium ');
}

/**
 * What a benchmark script does around its measurements: starts the browser (`pkg` and
 * `mounts` as in startBrowser), runs `body(browser)`, prints the machine line after what it printed, closes the
 * browser, and on an error prints it and makes the process fail.
 */
export async function benchScript(pkg, body, mounts) {
  let browser;
  try {
    browser = await startBrowser({ pkg, mounts });
    await body(browser);
    console.log(`\nmachine: ${machineLine(machine(browser.version))}`);
  } catch (e) {
    console.error(e);
    process.exitCode = 1;
  } finally {
    await browser?.close();
  }
}
