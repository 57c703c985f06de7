// How long a fresh page takes, from its navigation, to have imported each entry of the package
// (the entry's JS, its WebAssembly module(s) downloaded, compiled and instantiated): as a plain
// import, and with the page's HTML preloading the entry's files (bench/page/start-*.html, the
// links the README shows). For
// comparison, in the same run, the floor: the same files downloaded in parallel, each wasm
// compiled as it arrives (what no way of loading them can beat). Each with the browser cache off
// (a first visit) and on (a reload: the server answers 304), on the local server as it is, and on
// an emulated network of 80 ms round trips and 20 Mbit/s (the files are served uncompressed).
//
//   node bench/start.mjs [--loads=7] [--pkg=dir]
import { benchScript } from './browser.mjs';
import { formatMs, median, benchArgs } from './report.mjs';

const ENTRIES = {
  'agent-sessions': { entry: 'index.js', page: 'start-index.html', files: ['index.js', 'agent_sessions_bg.wasm'] },
  'agent-sessions/runner': {
    entry: 'runner.js',
    page: 'start-runner.html',
    files: ['runner.js', 'runner_wasm.js', 'index.js', 'agent_sessions_bg.wasm', 'agent_sessions_runner_bg.wasm'],
  },
};
const NETWORKS = {
  local: null,
  '80 ms, 20 Mbit/s': { offline: false, latency: 80, downloadThroughput: 20e6 / 8, uploadThroughput: 5e6 / 8 },
};

const { loads, pkg } = benchArgs(process.argv.slice(2), { loads: 7 });
await benchScript(pkg, async (browser) => {
  const load = async (html, query, { cache, network }) => {
    const result = await browser.freshLoad(`/bench/page/${html}`, query, { cache, network, label: html });
    if (new Set(result.wasm).size !== result.wasm.length) throw new Error(`${html}: a wasm file was downloaded twice (${result.wasm.join(', ')})`);
    return result.ms;
  };
  console.log(`\na fresh page importing each entry (ms from its navigation), median of ${loads} loads each, beside the floor\n`);
  for (const [networkName, network] of Object.entries(NETWORKS)) {
    for (const cache of [false, true]) {
      for (const [name, { entry, page, files }] of Object.entries(ENTRIES)) {
        const ours = [];
        const preloaded = [];
        const floor = [];
        // Alternated, so that a slow spell of the machine falls on all three.
        for (let i = 0; i < loads; i += 1) {
          ours.push(await load('start.html', { entry }, { cache, network }));
          preloaded.push(await load(page, { entry }, { cache, network }));
          floor.push(await load('start.html', { floor: files.join(',') }, { cache, network }));
        }
        const label = `${name}, ${networkName}, ${cache ? 'warm (cached)' : 'cold'}:`;
        const ratio = (values) => `(${(median(values) / median(floor)).toFixed(2)}x)`;
        console.log(
          `${label.padEnd(58)}import ${formatMs(median(ours)).padStart(8)} ${ratio(ours)}   preloaded ${formatMs(median(preloaded)).padStart(8)} ${ratio(preloaded)}   floor ${formatMs(median(floor)).padStart(8)}`,
        );
      }
    }
  }
});
