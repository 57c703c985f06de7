// A small static file server for the demo and the browser tests. Serves `.wasm` as
// application/wasm (needed for streaming instantiation). Every answer carries an ETag (the
// file's size and modification time) and `cache-control: no-cache`: a reload asks again and gets
// an empty 304 while the file is unchanged (the browser keeps the module, and its compiled code,
// from its cache), and a rebuilt package is always what the page loads.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ts': 'text/plain; charset=utf-8',
};

/** Serves `root` on `host:port` (port 0 picks a free one). Resolves to `{ server, url, close }`;
 * `close()` resolves once the server is closed, cutting the connections a browser still keeps
 * alive (which would otherwise hold the close open). */
export function serve(root, { port = 0, host = '127.0.0.1' } = {}) {
  const base = resolve(root);
  const server = createServer(async (req, res) => {
    try {
      const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
      let file = normalize(join(base, path));
      if (file !== base && !file.startsWith(base + sep)) {
        res.writeHead(403).end('forbidden');
        return;
      }
      let info = await stat(file);
      if (info.isDirectory()) {
        file = join(file, 'index.html');
        info = await stat(file);
      }
      const etag = `"${info.size.toString(36)}-${Math.floor(info.mtimeMs).toString(36)}"`;
      const headers = {
        'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
        'cache-control': 'no-cache',
        etag,
        // Lets pages on other origins (and sandboxed frames) import the package.
        'access-control-allow-origin': '*',
      };
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, headers).end();
        return;
      }
      const body = await readFile(file);
      res.writeHead(200, headers);
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      const close = () =>
        new Promise((done) => {
          server.close(done);
          server.closeAllConnections();
        });
      ok({ server, url: `http://${host}:${actual}`, close });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ?? '.';
  const port = Number(process.argv[3] ?? process.env.PORT ?? 8080);
  const host = process.env.HOST ?? '127.0.0.1';
  const { url } = await serve(root, { port, host });
  console.log(`serving ${root} at ${url}/`);
}
