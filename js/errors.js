// The errors the JS side of the package throws: the same shape as those the WebAssembly modules
// build (an `Error` with a stable `name` and `code`).

/** A `SessionError` with `code` and `message`. */
export function sessionError(code, message) {
  return Object.assign(new Error(message), { name: 'SessionError', code });
}
