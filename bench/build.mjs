// Bundles the benchmark for the browser with esbuild into bench/dist/ (git-ignored): the page
// runner, and one minified ES module per implementation, as an application would ship it.
// agent-sessions itself stays external: the pages import the built package from /pkg/.
import { build } from 'esbuild';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IMPLEMENTATIONS, DIAGNOSTIC } from './impls/list.mjs';

export const benchDir = fileURLToPath(new URL('.', import.meta.url));
export const distDir = join(benchDir, 'dist');

const common = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  external: ['/pkg/*'],
  // The SDK reads process.env in a few places; a browser build has none.
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'error',
};

export async function buildBundles() {
  await Promise.all([
    build({ ...common, entryPoints: [join(benchDir, 'page/runner.js')], outfile: join(distDir, 'runner.js') }),
    ...[...IMPLEMENTATIONS, ...DIAGNOSTIC].map(({ key }) => bundleImplementation(key)),
  ]);
}

/** Bundles implementation `key` as `impl-<as>.js`; `from` serves the package from another
 * folder of the site than /pkg/ (`/base/`: a build to compare with, bench/ab.mjs). */
export function bundleImplementation(key, { as = key, from } = {}) {
  const moved = from && {
    name: 'package-folder',
    setup: (b) => b.onResolve({ filter: /^\/pkg\// }, (a) => ({ path: a.path.replace(/^\/pkg\//, from), external: true })),
  };
  return build({
    ...common,
    entryPoints: [join(benchDir, `impls/${key}.js`)],
    outfile: join(distDir, `impl-${as}.js`),
    plugins: moved ? [moved] : [],
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildBundles();
  console.log(`bundled into ${distDir}`);
}
