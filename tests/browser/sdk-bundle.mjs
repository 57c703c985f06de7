// Bundles the parts of @openai/agents the integration tests need for the browser (esbuild, no
// network), into tests/.build/ (git-ignored). The package itself is loaded from /pkg/.
import { build } from 'esbuild';
import { join } from 'node:path';
import { root } from './harness.mjs';

export async function bundleSdk() {
  await build({
    entryPoints: [join(root, 'tests/pages/agents-sdk.entry.js')],
    outfile: join(root, 'tests/.build/agents-sdk.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'error',
  });
}
