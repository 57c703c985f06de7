// npm pack and npm publish: refuses to pack a package whose built files are missing (pkg/ is
// made by `npm run build`, not kept in git), where npm would pack an empty package without a word.
import { existsSync, readFileSync } from 'node:fs';

const { files } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const missing = files.filter((file) => !existsSync(new URL(`../${file}`, import.meta.url)));
if (missing.length > 0) {
  console.error(`The package is not built (missing: ${missing.join(', ')}): run \`npm run build\` first.`);
  process.exit(1);
}
