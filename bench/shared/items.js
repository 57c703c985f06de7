// Conversation items for the benchmark, the same in Node (expected results) and in the page
// (what each implementation stores). Deterministic: item `n` of session `tag` is always the same
// object, so every implementation can be checked against the same answer.

const WORDS = (
  'the a of to and in is it you that for on with as this was are be at or from have by not ' +
  'session history message answer question model agent tool call weather city bridge report ' +
  'quarterly draft plan weekend trip browser storage offline reload tab item turn assistant ' +
  'user summary context window token limit result function output input reasoning step order'
).split(' ');

/** A 32-bit hash of a string (FNV-1a). */
export function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Prose of about `length` characters from a seeded generator (xorshift32). */
function prose(seed, length) {
  let x = seed || 1;
  const words = [];
  let size = 0;
  while (size < length) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const word = WORDS[(x >>> 0) % WORDS.length];
    words.push(word);
    size += word.length + 1;
  }
  return words.join(' ') + '.';
}

/**
 * Item `n` of session `tag`, shaped like the Responses-API messages the SDK stores: even `n` a
 * user message, odd `n` the assistant's answer, each with 250 to 450 characters of text.
 */
export function makeItem(tag, n) {
  const seed = (hash(tag) ^ Math.imul(n + 1, 0x9e3779b1)) >>> 0;
  const text = prose(seed, 250 + (seed % 200));
  const id = `msg_${tag}_${n}`;
  if (n % 2 === 0) {
    return { id, type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
  }
  return {
    id,
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

/** Items `from … from + count - 1` of session `tag`. */
export function makeItems(tag, from, count) {
  const items = new Array(count);
  for (let i = 0; i < count; i++) items[i] = makeItem(tag, from + i);
  return items;
}

/** Whether an item opens a new turn: a user message, short (`{ role }`) or typed `message`. */
export const startsTurn = (item) =>
  item.role === 'user' && (item.type === undefined || item.type === 'message');

/**
 * The shapes a turn-shaped history cycles through, 9 items in 3 turns of different lengths: a
 * question and its answer; a question, a tool call, its result and the answer; a question in the
 * short `{ role, content }` form, a reasoning item and the answer. Only the user messages open
 * turns, so a history cut anywhere ends with a turn in progress of any length.
 */
const TURN_CYCLE = [
  'user', 'assistant',
  'user', 'function_call', 'function_call_result', 'assistant',
  'short_user', 'reasoning', 'assistant',
];

/** Item `n` of the turn-shaped session `tag` (see TURN_CYCLE); text as in makeItem. */
export function makeTurnItem(tag, n) {
  const seed = (hash(tag) ^ Math.imul(n + 1, 0x9e3779b1)) >>> 0;
  const text = prose(seed, 250 + (seed % 200));
  const id = `${tag}_${n}`;
  const callId = `call_${tag}_${n - (n % 9)}`;
  switch (TURN_CYCLE[n % 9]) {
    case 'user':
      return { id: `msg_${id}`, type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
    case 'short_user':
      return { role: 'user', content: text };
    case 'function_call':
      return {
        type: 'function_call',
        id: `fc_${id}`,
        callId,
        name: 'lookup',
        status: 'completed',
        arguments: JSON.stringify({ query: text.slice(0, 40) }),
      };
    case 'function_call_result':
      return {
        type: 'function_call_result',
        id: `fcr_${id}`,
        callId,
        name: 'lookup',
        status: 'completed',
        output: { type: 'text', text },
      };
    case 'reasoning':
      return { type: 'reasoning', id: `rs_${id}`, content: [{ type: 'input_text', text }] };
    default:
      return {
        id: `msg_${id}`,
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text, annotations: [] }],
      };
  }
}

/** Items `from … from + count - 1` of the turn-shaped session `tag`. */
export function makeTurnItems(tag, from, count) {
  const items = new Array(count);
  for (let i = 0; i < count; i++) items[i] = makeTurnItem(tag, from + i);
  return items;
}

/**
 * Where the newest `turns` whole turns of the first `total` turn-shaped items of `tag` begin:
 * found by walking back over the items themselves until `turns` of them opened a turn (0 when
 * the history has fewer turns; items before the first user message belong to the oldest).
 */
export function recentTurnsStart(tag, total, turns) {
  if (turns <= 0) return total;
  let opened = 0;
  for (let i = total - 1; i >= 0; i--) {
    if (startsTurn(makeTurnItem(tag, i)) && ++opened === turns) return i;
  }
  return 0;
}

/**
 * How many turns the first `total` turn-shaped items of `tag` hold: the user messages among them
 * (turn `k`, numbered from 1, opens at the `k`-th). Which items open a turn repeats with
 * TURN_CYCLE, so the items of one cycle and of the cut-short end are walked, not all `total`.
 */
export function turnCount(tag, total) {
  const cycle = TURN_CYCLE.length;
  const opens = (i) => (startsTurn(makeTurnItem(tag, i)) ? 1 : 0);
  let perCycle = 0;
  for (let i = 0; i < Math.min(cycle, total); i++) perCycle += opens(i);
  let count = Math.floor(total / cycle) * perCycle;
  for (let i = total - (total % cycle); i < total; i++) count += opens(i);
  return count;
}

/**
 * What a list of items is compared by: its length, a hash of its exact JSON (every field, in
 * order), and the ids (all of them for short lists, the ends for long ones).
 */
export function describeItems(items) {
  const ids = items.map((item) => item?.id ?? null);
  return {
    count: items.length,
    digest: hash(JSON.stringify(items)).toString(16),
    ids: ids.length <= 60 ? ids : [...ids.slice(0, 5), '…', ...ids.slice(-5)],
  };
}
