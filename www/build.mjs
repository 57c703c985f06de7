// Copies the built package (pkg/, made by `node scripts/build.mjs`) next to the demo page, into
// www/vendor/agent-sessions/, so the page imports it as a user's page would: every file the npm
// package ships from pkg/ (package.json "files"). Safe to run again: the folder is replaced.
import { copyFile, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
