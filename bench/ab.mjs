// The short calls a chat makes every turn, timed in one page: this package, raw IndexedDB (the
// floor, bench/impls/raw.js) and, with --base, another build of the package, loaded side by side
// and taking turns. Each round runs one block of calls of every implementation, in an order that
// changes from round to round so that each comes first, last and between the others as often,
// after each of the others as often as before it (the rotations of the list, then the same
// reversed); a ratio is the median of the rounds' own ratios. What the
// machine does meanwhile (another process, the storage engine settling earlier writes) lands on
// neighbouring blocks alike, so these ratios move far less between runs than those of
// bench/run.mjs, whose implementations each run in a page of their own, one operation after the
// other. Use it to decide whether a change to a short call helps.
//
//   node bench/ab.mjs [--rounds=24] [--calls=100] [--pkg=dir] [--base=dir] [--ops=append,pop,…]
//
// --pkg serves another build as this package (by default pkg/), --base a build to compare it
// with (a copy of pkg/ taken before a change). Operations: append (awaited one-turn appends),
// pop (awaited pops, each block from a history it fills first, untimed), get (getItems(20) of
// 1,000 items), turns (getRecentTurns(3) of 1,000 items), branch (createBranchFromTurn: the first
// branch of each of as many chats of 30 items, which the block writes first, untimed).
import { isDeepStrictEqual } from 'node:util';
import { resolve } from 'node:path';
import { buildBundles, bundleImplementation } from './build.mjs';
import { benchScript } from './browser.mjs';
import { formatMs, median } from './report.mjs';

export const AB_OPERATIONS = ['append', 'pop', 'get', 'turns', 'branch'];

function parse(argv) {
  const options = { rounds: 24, calls: 100, pkg: undefined, base: undefined, ops: AB_OPERATIONS };
  for (const arg of argv) {
    const [name, value = ''] = arg.replace(/^--/, '').split('=');
    const n = Number(value);
    if ((name === 'rounds' || name === 'calls') && Number.isInteger(n) && n > 0) options[name] = n;
    else if ((name === 'pkg' || name === 'base') && value) options[name] = resolve(value);
    else if (name === 'ops' && value.split(',').every((op) => AB_OPERATIONS.includes(op))) options.ops = value.split(',');
    else throw new Error(`unknown argument ${arg}; use --rounds=N, --calls=N, --pkg=dir, --base=dir, --ops=${AB_OPERATIONS.join(',')}`);
  }
  return options;
}

const options = parse(process.argv.slice(2));
await buildBundles();
// The same implementation over the base build, served as /base/.
if (options.base) await bundleImplementation('ours', { as: 'base', from: '/base/' });

const LABEL_OF = {
  append: (n) => `append 1 turn, ${n} in a row`,
  pop: (n) => `popItem(), ${n} in a row`,
  get: (n) => `getItems(20) of 1,000, ${n} in a row`,
  turns: (n) => `getRecentTurns(3) of 1,000, ${n}×`,
  branch: (n) => `createBranchFromTurn, ${n} in a row`,
};
const LABELS = { ours: 'agent-sessions', base: 'base build', raw: 'raw IndexedDB' };
const variants = ['ours', ...(options.base ? ['base'] : []), 'raw'];

await benchScript(options.pkg, async (browser) => {
  const page = await browser.appPage();
  const { times, results } = await page.evaluate(runInPage, { variants, ops: options.ops, rounds: options.rounds, calls: options.calls, run: Date.now().toString(36) });
  // Every implementation must have left the same items behind.
  for (const op of options.ops) {
    for (const v of variants.slice(1)) {
      if (!isDeepStrictEqual(results[op][v], results[op].ours)) {
        throw new Error(`${op}: ${LABELS[v]} left ${JSON.stringify(results[op][v])}, agent-sessions ${JSON.stringify(results[op].ours)}`);
      }
    }
  }
  console.log(`\nshort calls in one page, ${options.rounds} rounds of ${options.calls} calls each, implementations taking turns (in every order in turn)\n`);
  const header = ['operation'.padEnd(34), ...variants.map((v) => LABELS[v].padStart(16))];
  if (options.base) header.push('vs base'.padStart(9));
  // Columns are joined by a space: a cell wider than its column (a slow outlier) still stands
  // apart from the next one.
  console.log(header.join(' '));
  for (const op of options.ops) {
    const t = times[op];
    const ratio = (a, b) => median(t[a].map((x, i) => x / t[b][i]));
    const cells = variants.map((v) => `${formatMs(median(t[v]) / options.calls)} (${ratio(v, 'raw').toFixed(2)}x)`.padStart(16));
    if (options.base) cells.push(`${ratio('ours', 'base').toFixed(2)}x`.padStart(9));
    console.log(`${LABEL_OF[op](options.calls).padEnd(34)} ${cells.join(' ')}`);
  }
  console.log('\neach cell: the median time of one call, and the median of the rounds\' ratios to raw IndexedDB');
}, options.base ? { base: options.base } : {});


/** In the page: prepares each implementation, then times the rounds. */
async function runInPage({ variants, ops, rounds, calls, run }) {
  const { makeItems, makeTurnItems, describeItems } = window.items;
  const impls = {};
  for (const v of variants) {
    const { create } = await import(`/bench/dist/impl-${v}.js`);
    impls[v] = create({ dbName: `ab-${run}-${v}`, userId: 'ann' });
    await impls[v].open();
  }
  const times = {};
  const results = {};
  for (const op of ops) {
    times[op] = Object.fromEntries(variants.map((v) => [v, []]));
    results[op] = {};
    // What each block acts on, prepared for every implementation before any is timed.
    for (const v of variants) {
      if (op === 'get') await impls[v].addItems('history', makeItems('history', 0, 1000));
      if (op === 'turns') await impls[v].addItems('turns', makeTurnItems('turns', 0, 1000));
    }
    let appended = 0;
    for (let round = 0; round < rounds; round++) {
      const k = variants.length;
      const rotated = variants.map((_, i) => variants[(i + round) % k]);
      const order = Math.floor(round / k) % 2 ? rotated.reverse() : rotated;
      const turn = makeItems('chat', appended, 2 * calls);
      for (const v of order) {
        const impl = impls[v];
        const popFrom = `pop-${round}`;
        if (op === 'pop') await impl.addItems(popFrom, makeItems(popFrom, 0, calls + 20));
        const chats = Array.from({ length: op === 'branch' ? calls : 0 }, (_, i) => `chat-${round}-${i}`);
        for (const chat of chats) await impl.addItems(chat, makeTurnItems(chat, 0, 30));
        window.gc?.();
        const start = performance.now();
        if (op === 'append') for (let i = 0; i < calls; i++) await impl.addItems('chat', [turn[2 * i], turn[2 * i + 1]]);
        else if (op === 'pop') for (let i = 0; i < calls; i++) await impl.popItem(popFrom);
        else if (op === 'get') for (let i = 0; i < calls; i++) await impl.getItems('history', 20);
        else if (op === 'turns') for (let i = 0; i < calls; i++) await impl.getRecentTurns('turns', 3);
        else for (const chat of chats) await impl.createBranchFromTurn(chat, 5, 'retry');
        times[op][v].push(performance.now() - start);
      }
      appended += 2 * calls;
    }
    for (const v of variants) {
      const session = { append: 'chat', pop: `pop-${rounds - 1}`, get: 'history', turns: 'turns', branch: `chat-${rounds - 1}-${calls - 1}` }[op];
      const items = op === 'turns' ? await impls[v].getRecentTurns(session, 3)
        : op === 'branch' ? await impls[v].getBranchItems(session, 'retry')
        : await impls[v].getItems(session);
      results[op][v] = describeItems(items);
    }
  }
  for (const v of variants) await impls[v].destroy();
  return { times, results };
}
