// Where each module's WebAssembly comes from: fetched, in a browser (a bundler that understands
// `new URL('…', import.meta.url)` gives the URL of the file it emits); read from disk where the
// URL names a file, as in Node (a framework rendering a page on the server, a test runner),
// whose `fetch` cannot read one. Either is what the wasm-bindgen glue's `init` takes.

/** The bytes of the wasm file at `url`: a promise of its `Response`, or of its contents. */
export function wasmFile(url) {
  const fs = url.protocol === 'file:' ? globalThis.process?.getBuiltinModule?.('fs') : undefined;
  return fs ? fs.promises.readFile(url) : fetch(url);
}
