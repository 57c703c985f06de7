// Puts what the demo page imports into www/vendor/, so the page loads everything from its own
// origin: the built package (pkg/, made by `node scripts/build.mjs`) copied into
// www/vendor/agent-sessions/, as a user's page would import it (every file the npm package ships
// from pkg/, package.json "files"); and markdown-it and DOMPurify from node_modules, bundled by
// esbuild into one ES module, www/vendor/markdown.js. Safe to run again: both are replaced.
import { copyFile, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const www = dirname(fileURLToPath(import.meta.url));
const root = join(www, '..');
const pkg = join(root, 'pkg');
const vendor = join(www, 'vendor', 'agent-sessions');

const { files = [] } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
const shipped = files.filter((f) => f.startsWith('pkg/')).map((f) => basename(f));
const FILES = shipped;

for (const file of FILES) {
  try {
    await stat(join(pkg, file));
  } catch {
    console.error(`www/build.mjs: pkg/${file} is missing; build the package first with \`node scripts/build.mjs\``);
    process.exit(1);
  }
}
await rm(vendor, { recursive: true, force: true });
await mkdir(vendor, { recursive: true });
for (const file of FILES) await copyFile(join(pkg, file), join(vendor, file));
console.log(`copied ${FILES.join(', ')} from pkg/ to www/vendor/agent-sessions/`);

// The versions are the exact ones package.json pins (devDependencies).
const version = async (name) => JSON.parse(await readFile(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
await build({
  banner: {
    js: `// markdown-it ${await version('markdown-it')} and DOMPurify ${await version('dompurify')}, bundled by www/build.mjs for www/markdown.js.`,
  },
  stdin: {
    contents: "export { default as MarkdownIt } from 'markdown-it';\nexport { default as DOMPurify } from 'dompurify';\n",
    resolveDir: root,
    sourcefile: 'markdown-entry.js',
  },
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  legalComments: 'inline',
  outfile: join(www, 'vendor', 'markdown.js'),
  logLevel: 'warning',
});
console.log('bundled markdown-it and DOMPurify into www/vendor/markdown.js');
