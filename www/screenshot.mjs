// Writes docs/demo.png, the README's picture of the demo: a short two-turn conversation with the
// built-in offline model, at desktop size. Run `node scripts/build.mjs` first, then
// `node www/screenshot.mjs`.
import { execFileSync } from 'node:child_process';
import { mkdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, chromiumPath } from '../tests/browser/harness.mjs';
import { serve } from '../scripts/serve.mjs';

const www = dirname(fileURLToPath(import.meta.url));
const out = join(www, '..', 'docs', 'demo.png');

execFileSync(process.execPath, [join(www, 'build.mjs')], { stdio: 'inherit' });
const { server, url } = await serve(www);
const browser = await chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${url}/`);
  // Idle: no reply or action in progress, and the summary and title of the last reply written.
  const idle = () =>
    page.waitForFunction(() => {
      const app = document.getElementById('app');
      return app.dataset.busy === 'false' && app.dataset.background === 'false';
    });
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
  await idle();
  await page.fill('#new-user-name', 'Alice');
  await page.press('#new-user-name', 'Enter');
  await idle();
  for (const text of ['my hobby is horse racing', 'what is my hobby?']) {
    await page.fill('#input', text);
    await page.press('#input', 'Enter');
    await idle();
  }
  await page.evaluate(() => document.activeElement?.blur());
  await mkdir(dirname(out), { recursive: true });
  await page.screenshot({ path: out });
  console.log(`wrote ${out} (${Math.round((await stat(out)).size / 1024)} KiB)`);
} finally {
  await browser.close();
  server.close();
}
