// The errors the JS side of the package throws: the same shape as those the WebAssembly modules
// build (an `Error` with a stable `name` and `code`).

/** A `SessionError` with `code` and `message`. */
export function sessionError(code, message) {
  return Object.assign(new Error(message), { name: 'SessionError', code });
}

/** The options a function of the package was given, to read: `{}` for `undefined` and `null`;
 * anything but an object is `INVALID_OPTIONS`, as the WebAssembly side refuses it. */
export function optionsOf(options, what) {
  if (options == null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw sessionError('INVALID_OPTIONS', `${what}: options must be an object, got ${Array.isArray(options) ? 'an array' : typeof options}`);
  }
  return options;
}
