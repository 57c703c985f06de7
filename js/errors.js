// The errors the JS side of the package throws: the same shape as those the WebAssembly modules
// build (an `Error` with a stable `name` and `code`).

/** A `SessionError` with `code` and `message`. */
export function sessionError(code, message) {
  return Object.assign(new Error(message), { name: 'SessionError', code });
}

/** Whether a remote's answer says it did nothing and asks to be asked again: a 429, or the 400
 * of a conversation another request is answering in (`conversation_locked`, "retry in a few
 * seconds"). */
export const later = (status, serverCode) => status === 429 || (status === 400 && serverCode === 'conversation_locked');

/** The options a function of the package was given, to read: `{}` for `undefined` and `null`;
 * anything but an object is `INVALID_OPTIONS`, as the WebAssembly side refuses it. */
export function optionsOf(options, what, known) {
  if (options == null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw sessionError('INVALID_OPTIONS', `${what}: options must be an object, got ${Array.isArray(options) ? 'an array' : typeof options}`);
  }
  // With the options `known` (names, space-separated), another is refused: a misspelt one
  // (`userID`) would be ignored, and a user's call would read or delete every user's sessions.
  // (One given as `undefined` is none, as `{ userId: form.userId }` gives none.)
  const names = known?.split(' ');
  for (const name of names ? Object.keys(options) : []) {
    if (!names.includes(name) && options[name] !== undefined) throw sessionError('INVALID_OPTIONS', `${what}: options.${name} is not an option (${names.join(', ')})`);
  }
  return options;
}

/** Whether an id is blank as the sessions read ids: white space only, by Unicode's White_Space
 * (which has U+0085 and not U+FEFF, unlike `trim()`). */
export const blank = (id) => /^(?:(?!\uFEFF)[\s\u0085])*$/.test(id);

/** Refuses a `userId` that is not a non-empty string or null, and a `dbName` that is not a
 * non-empty string, for `call`. */
export function checkTarget(userId, dbName, call) {
  if (userId !== undefined && userId !== null && !(typeof userId === 'string' && !blank(userId))) {
    throw sessionError('INVALID_USER_ID', `${call}: options.userId must be a non-empty string or null, got ${typeof userId === 'string' ? JSON.stringify(userId) : typeof userId}`);
  }
  if (dbName != null && !(typeof dbName === 'string' && dbName !== '')) {
    throw sessionError('INVALID_OPTIONS', `${call}: options.dbName must be a non-empty string, got ${typeof dbName === 'string' ? '""' : typeof dbName}`);
  }
  // One holding a lone surrogate could not be stored and read back as it is, as the sessions
  // refuse it: refused at the call, not by the export's first read (or the import's first write).
  for (const [name, value, code] of [['userId', userId, 'INVALID_USER_ID'], ['dbName', dbName, 'INVALID_OPTIONS']]) {
    if (/\p{Cs}/u.test(value)) throw sessionError(code, `${call}: options.${name} must be well-formed UTF-16: it holds a lone surrogate`);
  }
}
