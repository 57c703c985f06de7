// Memory under a long chat: `calls` rounds of what a chat does every turn (addItems of one item,
// getItems(20), popItem) on one IndexedDbSession, in Chromium on an on-disk profile. It samples
// the WebAssembly memory of the sessions module and the page's JS heap (after a collection), and
// prints the peak and both figures after the warm-up and at the end. It fails (exit 1) when
// either grew after the warm-up: the wasm memory at all (it never shrinks, so any growth that
// late is kept), the JS heap by more than 1 MiB.
//
//   node bench/soak.mjs [--calls=10000] [--warmup=1000] [--pkg=dir]
import { startBrowser } from './browser.mjs';
import { machine, machineLine } from './machine.mjs';
import { benchArgs } from './report.mjs';

const MiB = 1024 * 1024;
const mib = (bytes) => `${(bytes / MiB).toFixed(2)} MiB`;

/** Runs in the page before the package loads: keeps each WebAssembly instance made. */
function noteInstances() {
  globalThis.wasmInstances = [];
  for (const name of ['instantiateStreaming', 'instantiate']) {
    const original = WebAssembly[name];
    WebAssembly[name] = async function (...args) {
      const made = await original.apply(this, args);
      globalThis.wasmInstances.push(made instanceof WebAssembly.Instance ? made : made.instance);
      return made;
    };
  }
}

async function main() {
  const { calls, warmup, pkg } = benchArgs(process.argv.slice(2), { calls: 10_000, warmup: 1000 });
  if (warmup >= calls) throw new Error('--warmup must be less than --calls');
  const browser = await startBrowser({ pkg });
  try {
    // The package keeps its WebAssembly instance to itself: the page notes every instance made.
    const page = await browser.appPage({ before: noteInstances });
    const r = await page.evaluate(
      async ({ calls, warmup }) => {
        const [sessions] = globalThis.wasmInstances;
        // (Its one memory, whatever the build named its export.)
        const wasmMemory = Object.values(sessions.exports).find((e) => e instanceof WebAssembly.Memory);
        const memory = () => wasmMemory.buffer.byteLength;
        // The smallest of a few readings, each after a full collection and a pause (what is
        // freed only once pending tasks ran would otherwise count as live).
        const heap = async () => {
          let least = Infinity;
          for (let i = 0; i < 5; i += 1) {
            globalThis.gc?.();
            await new Promise((ok) => setTimeout(ok, 20));
            least = Math.min(least, performance.memory?.usedJSHeapSize ?? 0);
          }
          return least;
        };
        const session = new lib.IndexedDbSession('soak', { dbName: `soak-${Date.now().toString(36)}` });
        await session.addItems(items.makeItems('soak', 0, 20));
        let peak = memory();
        let base = null;
        const started = performance.now();
        for (let i = 0; i < calls; i += 1) {
          await session.addItems([{ role: 'user', content: `message ${i}: please remember what I said about the trip` }]);
          const newest = await session.getItems(20);
          const popped = await session.popItem();
          if (newest.length !== 20 || popped?.content !== `message ${i}: please remember what I said about the trip`) {
            throw new Error(`round ${i}: the session did not give back what was written`);
          }
          if (i % 100 === 0) peak = Math.max(peak, memory());
          if (i + 1 === warmup) base = { memory: memory(), heap: await heap() };
        }
        const seconds = (performance.now() - started) / 1000;
        return { base, end: { memory: memory(), heap: await heap() }, peak: Math.max(peak, memory()), seconds, heapKnown: performance.memory !== undefined };
      },
      { calls, warmup },
    );
    console.log(`${calls.toLocaleString('en-US')} rounds of addItems(1) + getItems(20) + popItem, ${r.seconds.toFixed(1)} s`);
    console.log(`wasm memory: after ${warmup.toLocaleString('en-US')} rounds ${mib(r.base.memory)}, at the end ${mib(r.end.memory)}, peak ${mib(r.peak)}`);
    if (r.heapKnown) console.log(`JS heap after a collection: after the warm-up ${mib(r.base.heap)}, at the end ${mib(r.end.heap)}`);
    const grew = [];
    if (r.end.memory > r.base.memory) grew.push(`the wasm memory grew by ${mib(r.end.memory - r.base.memory)} after the warm-up`);
    if (r.heapKnown && r.end.heap - r.base.heap > MiB) grew.push(`the JS heap grew by ${mib(r.end.heap - r.base.heap)} after the warm-up`);
    if (grew.length > 0) {
      console.error(`not flat: ${grew.join('; ')}`);
      process.exitCode = 1;
    } else {
      console.log('flat: neither the wasm memory nor the JS heap grew after the warm-up');
    }
    console.log(`\nmachine: ${machineLine(machine(browser.version))}`);
  } finally {
    await browser.close();
  }
}

await main();
