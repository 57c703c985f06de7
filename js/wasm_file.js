// Where each module's WebAssembly comes from: fetched, in a browser (a bundler that understands
// `new URL('…', import.meta.url)` gives the URL of the file it emits); read from disk where the
// URL names a file, as in Node (a framework rendering a page on the server, a test runner),
// whose `fetch` cannot read one. Either is what the wasm-bindgen glue's `init` takes.

const unavailable = (message) => Object.assign(new Error(message), { name: 'SessionError', code: 'MODULE_UNAVAILABLE' });

/** The bytes of the wasm file at `url`: a promise of its `Response`, or of its contents. A page
 * where the file should be (a file not copied, behind a server's fallback to the app's page)
 * and a file `fetch` cannot read (a Node without `process.getBuiltinModule`) are
 * `MODULE_UNAVAILABLE`, saying so, where the compiler would name bytes and `fetch` a scheme. */
export function wasmFile(url) {
  const file = url.protocol === 'file:';
  const fs = file ? globalThis.process?.getBuiltinModule?.('fs') : undefined;
  if (fs) return fs.promises.readFile(url);
  return fetch(url).then((response) => {
    if (/^text\/html/i.test(response.headers.get('content-type'))) {
      throw unavailable(`${url} is an HTML page, not the .wasm file: serve the package's .wasm files there`);
    }
    return response;
  }, (error) => {
    // (Deno's and Bun's `fetch` read files; Node's before 20.16, without the module, do not.)
    throw file ? unavailable(`${url} cannot be read (${error?.message}): on Node, 20.16 or later (22.3 on 22) is needed`) : error;
  });
}
