// Arguments copied when a call is made, for the calls that act on them later (a MemorySession's
// first calls wait for its module; an EncryptedSession's wait for the calls before them): what
// the caller changes afterwards is not what is stored, as with the sessions that act at once.

/** Whether `value` is an object of no class (its prototype `Object.prototype` or `null`). */
const isPlain = (value) => {
  const proto = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
};

/** Arrays longer than this are refused by the library at once, unread. */
export const LONGEST = 1_048_576;

/** A call's arguments, copied now. Arguments the copy would change the meaning of (an object of
 * a class, among them or among the items of an array; a function), arrays the library refuses
 * for their length, and arguments that cannot be read (a throwing Proxy) are passed as they are,
 * so that the method refuses them as it would have. Where the copy is refused for what an
 * argument holds (`DataCloneError`: a function or a DOM node in it, or a Proxy such as Vue's
 * state), `refuse` is called with that error first, if given. */
export function copiedArguments(args, refuse) {
  try {
    const classed = (v) => typeof v === 'object' && v !== null && !Array.isArray(v) && !isPlain(v);
    if (args.some((a) => classed(a) || (Array.isArray(a) && (a.length > LONGEST || a.some(classed))))) return args;
    const copies = structuredClone(args);
    // A copy has no symbol-keyed fields (such as the digest an EncryptedSession gives with a
    // history transaction): an argument's own go with its copy.
    args.forEach((arg, i) => {
      if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) return;
      for (const key of Object.getOwnPropertySymbols(arg)) copies[i][key] = arg[key];
    });
    return copies;
  } catch (error) {
    if (error?.name === 'DataCloneError') refuse?.(error);
    return args;
  }
}
