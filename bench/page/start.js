// The page script of bench/start.mjs, in a fresh page. `?entry=index.js` imports that entry of
// the package; `?floor=f1,f2` instead downloads those files in parallel and compiles the wasm
// among them, each as it arrives: what loading the entry cannot beat. Timed from the
// navigation's start, so that downloads the page's HTML started (start-*.html preload the
// entry's files, as the README shows) count.
const q = new URLSearchParams(location.search);
try {
  if (q.get('floor')) {
    await Promise.all(
      q.get('floor').split(',').map((file) => {
        const response = fetch(`/pkg/${file}`);
        return file.endsWith('.wasm') ? WebAssembly.compileStreaming(response) : response.then((r) => r.arrayBuffer());
      }),
    );
  } else {
    await import(`/pkg/${q.get('entry')}`);
  }
  const ms = performance.now();
  // Each wasm download the page made (a preload the fetch did not use would make two).
  const wasm = performance.getEntriesByType('resource').filter((r) => r.name.endsWith('.wasm')).map((r) => r.name.split('/').pop());
  window.result = { ms, wasm };
} catch (e) {
  window.result = { error: String(e?.stack ?? e) };
}
// What the harness waits for (bench/browser.mjs, freshLoad).
console.log('bench:result');
