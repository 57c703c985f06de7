// The runner entry: Agent, Runner and RunState (their own WebAssembly module), plus everything
// the main entry exports, so a chat page imports all it needs from one place.
import { runnerWasm } from './runner_wasm.js'; // first: its download starts before the main entry's
import init, {
  Agent as WasmAgent,
  Runner as WasmRunner,
  RunState,
  notAnAgent,
  notARunner,
  compactionRunner,
  sessionBusy,
} from './agent_sessions_runner.js';

import { EncryptedSession, IndexedDbSession, listSessions, searchSessions, sessionLockName } from './index.js';
import { copiedArguments } from './copy.js';

await init({ module_or_path: runnerWasm });

// Every Agent and Runner this entry made. Checking membership runs no code of the value checked (a Proxy is
// never a member), so a hostile `agent` argument is refused with a RunnerError instead of
// reaching wasm-bindgen's class check, which throws a bare Error synchronously.
const agents = new WeakSet();
const runners = new WeakSet();

/** The `pastSessions` setting of each Agent made with it. */
const pastOf = new WeakMap();

/** The options each Agent was made with (a shallow copy), to make copies of it for a run. */
const optionsOf = new WeakMap();

/** A `RunnerError` with `code`, as the WebAssembly module makes them. */
function runnerError(code, message) {
  return Object.assign(new Error(message), { name: 'RunnerError', code });
}

/** A run on a Runner after its free(). */
const freedRunner = () => runnerError('INVALID_RUNNER', 'this Runner was freed (free()); make a new one to run');

/** Reads `pastSessions`: `true` or `{ count = 5, turnsPerSession = 3 }`. */
function pastSessionsOf(value) {
  if (value === undefined || value === false || value === null) return null;
  const given = value === true ? {} : value;
  if (typeof given !== 'object') throw runnerError('INVALID_AGENT', `pastSessions must be true or { count, turnsPerSession }, got ${typeof value}`);
  const whole = (key, fallback) => {
    const n = given[key] ?? fallback;
    if (!Number.isInteger(n) || n < 1) throw runnerError('INVALID_AGENT', `pastSessions.${key} must be a positive integer, got ${String(n)}`);
    return n;
  };
  return { count: whole('count', 5), turnsPerSession: whole('turnsPerSession', 3) };
}

/** The handoffs each Agent was given, as given (`agent.handoffs`). */
const handoffsOf = new WeakMap();

/** A mapper of a streamed run's events to the SDK's stream events, each yielded after the event
 * of this runner it comes from (`raw_model_stream_event` of the text, `run_item_stream_event` of
 * each item with the SDK's names and item shapes, `agent_updated_stream_event` at a handoff), so
 * that a loop written for the SDK's stream reads this one. */
function sdkEvents() {
  // The output of the handoff taken, said with the handoff, the event after it.
  let held = null;
  const runItem = (name, type, { item, agent }) => {
    const out = { type, rawItem: item, agent };
    if (type === 'message_output_item') {
      Object.defineProperty(out, 'content', { enumerable: true, get: () => (item.content ?? []).map((p) => (p.type === 'output_text' ? p.text : '')).join('') });
    } else if (type !== 'reasoning_item') {
      Object.assign(out, { callId: item.callId, toolName: item.name });
      // (The output as the model gets it: the tool's text, or its parts.)
      if (type === 'tool_call_output_item') out.output = item.output?.type === 'text' ? item.output.text : item.output;
    }
    return { type: 'run_item_stream_event', name, item: out };
  };
  return (e) => {
    const kind = e.item?.type;
    switch (e.type) {
      case 'text_delta':
        return [{ type: 'raw_model_stream_event', data: { type: 'output_text_delta', delta: e.delta } }];
      case 'tool_call':
        return [e.handoff ? runItem('handoff_requested', 'handoff_call_item', e) : runItem('tool_called', 'tool_call_item', e)];
      case 'tool_output':
        if (!e.handoff) return [runItem('tool_output', 'tool_call_output_item', e)];
        held = e;
        return [];
      case 'handoff': {
        const out = held ? [{ type: 'run_item_stream_event', name: 'handoff_occurred', item: { type: 'handoff_output_item', rawItem: held.item, sourceAgent: e.from, targetAgent: e.to } }] : [];
        held = null;
        return [...out, { type: 'agent_updated_stream_event', agent: e.to }];
      }
      case 'tool_approval_requested':
        return [{ type: 'run_item_stream_event', name: e.type, item: e.item }];
      case 'item_added':
        if (kind === 'message') return [runItem('message_output_created', 'message_output_item', e)];
        if (kind === 'reasoning') return [runItem('reasoning_item_created', 'reasoning_item', e)];
        // (Function calls are said with their `tool_call`.)
        if (kind !== 'function_call' && kind?.endsWith('_call')) return [runItem('tool_called', 'tool_call_item', e)];
    }
    return [];
  };
}

function kindOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object that is not an Agent' : typeof value;
}

/** Reads a `handoffs` list: each entry an Agent, or `{ agent, toolName?, toolDescription?,
 * inputFilter? }`; returns `[{ agent, options }]`. */
function handoffList(value) {
  if (value === undefined || value === null) return [];
  let entries;
  try {
    if (!Array.isArray(value)) throw runnerError('INVALID_AGENT', `agent.handoffs must be an array, got ${kindOf(value)}`);
    entries = [...value].map((entry, i) => {
      if (agents.has(entry)) return { agent: entry, options: undefined };
      const target = entry !== null && typeof entry === 'object' ? entry.agent : undefined;
      if (agents.has(target)) return { agent: target, options: entry };
      throw runnerError('INVALID_AGENT', `agent.handoffs[${i}] must be an Agent made with new Agent(...) or { agent, toolName?, toolDescription?, inputFilter? }, got ${kindOf(entry)}`);
    });
  } catch (e) {
    throw e?.name === 'RunnerError' ? e : runnerError('INVALID_AGENT', `agent.handoffs could not be read (${e?.message ?? e})`);
  }
  return entries;
}

/** Gives `target` (a module Agent) the handoffs `list`: all of them, or none of them and the
 * error. */
function applyHandoffs(target, list, previous = []) {
  const add = (entries) => entries.forEach((h, i) => target.addHandoff(h.agent, h.agent, h.options, i));
  target.clearHandoffs();
  try {
    add(list);
  } catch (e) {
    target.clearHandoffs();
    try {
      add(previous);
    } catch {
      target.clearHandoffs();
    }
    // An Agent freed with free() cannot be handed off to: wasm-bindgen's own error, coded.
    throw e?.name === 'RunnerError' ? e : runnerError('INVALID_AGENT', `agent.handoffs could not be set (${e?.message ?? e})`);
  }
}

/** An agent: a name, instructions, a model and tools (see the declarations in runner.d.ts). */
class Agent extends WasmAgent {
  /** Frees the agent's memory in the module: a run or handoff given it afterwards is
   * `INVALID_AGENT`, not wasm-bindgen's bare error. */
  free() {
    // (Its handoffs hold the agents it hands off to, and one of theirs may hold it: let go, each
    // is freed with its own free().)
    if (agents.delete(this)) this.clearHandoffs();
    super.free();
  }

  constructor(options) {
    // The module checks the options first (a hostile value is its coded error).
    super(options);
    agents.add(this);
    try {
      optionsOf.set(this, { ...options });
      const past = pastSessionsOf(options?.pastSessions);
      if (past) {
        // Refused here, where the clash is made, not at every run.
        for (const { name } of pastSessionTools(undefined, past)) {
          if ((options.tools ?? []).some((t) => t?.name === name)) throw runnerError('INVALID_AGENT', `agent.tools has a tool named "${name}", the name of a tool pastSessions gives the agent`);
        }
        pastOf.set(this, { past });
      }
    } catch (e) {
      throw e?.name === 'RunnerError' ? e : runnerError('INVALID_AGENT', `the agent's options could not be read (${e?.message ?? e})`);
    }
    let given;
    try {
      given = options.handoffs;
    } catch (e) {
      throw runnerError('INVALID_AGENT', `agent.handoffs could not be read (${e?.message ?? e})`);
    }
    this.handoffs = given;
  }

  /** Its `modelSettings`, as given (the SDK's `Agent` has them too). */
  get modelSettings() {
    return optionsOf.get(this)?.modelSettings;
  }

  /** The agents this one hands off to, as given: a frozen list (a `push` on it would change
   * nothing). Set it again to change them (two agents can hand off to each other: give the
   * second its handoffs once both exist). */
  get handoffs() {
    return Object.freeze((handoffsOf.get(this) ?? []).map((h) => h.options ?? h.agent));
  }

  set handoffs(value) {
    if (!agents.has(this)) throw runnerError('INVALID_AGENT', 'agent.handoffs: this agent was freed with free()');
    const list = handoffList(value);
    applyHandoffs(this, list, handoffsOf.get(this));
    handoffsOf.set(this, list);
  }
}

// Agno's tools over the user's earlier sessions, for an agent made with `pastSessions`. Both
// read only sessions of the run's session's user (the sessions of no user for a session that
// has none), from the same database, and tell the model nothing about any other session: an id
// that is not one of them is "no past session", whether it exists or not.
const PREVIEW = 200;

function cut(text, length = PREVIEW) {
  const flat = String(text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length <= length ? flat : `${flat.slice(0, length - 1).trimEnd()}…`;
}

function textOf(item) {
  const content = item?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).filter(Boolean).join(' ');
  return '';
}

function roleOf(item) {
  const type = item?.type;
  return (type === undefined || type === 'message') && (item.role === 'user' || item.role === 'assistant') ? item.role : null;
}

/** Items grouped by user turn: `[{ user, assistant }]`, the first text of each. */
function turnsOf(items) {
  const turns = [];
  for (const item of items) {
    const role = roleOf(item);
    if (role === 'user') turns.push({ user: textOf(item), assistant: '' });
    else if (role === 'assistant' && turns.length && !turns.at(-1).assistant) turns.at(-1).assistant = textOf(item);
  }
  return turns;
}

function pastSessionTools(session, { count, turnsPerSession }) {
  const scope = () => {
    const named = session && typeof session === 'object' && typeof session.dbName === 'string' && typeof session.sessionId === 'string';
    // An encrypted session's items are sealed (compacted or not): nothing of them, or of the
    // user's other sessions, is offered to the model.
    let inner = session;
    while (wrapping.has(inner)) inner = wrapping.get(inner);
    if (!named || inner instanceof EncryptedSession) return null;
    return { dbName: session.dbName, userId: session.userId ?? null, current: session.sessionId };
  };
  /** The user's sessions other than the current one, newest first. */
  const others = async ({ dbName, userId, current }) =>
    (await listSessions(userId === null ? { dbName } : { dbName, userId })).filter((s) => s.userId === userId && s.sessionId !== current);
  /** What `read(session)` gives of the chat `s`, read on the branch it was last on (an edited
   * chat as it reads now), or on `main` where that branch was deleted since `s` was listed. */
  const reading = async ({ dbName, userId }, s, read) => {
    for (const branch of new Set([s.currentBranch, 'main'])) {
      const session = new IndexedDbSession(s.sessionId, userId === null ? { dbName, branch } : { dbName, userId, branch });
      try {
        return await read(session);
      } catch (e) {
        if (e?.code !== 'BRANCH_NOT_FOUND' || branch === 'main') throw e;
      } finally {
        session.free();
      }
    }
  };
  /** Whether a search hit's item is one that the chat's branch shows: one of the stored rows of
   * its `view` (turn numbers cannot tell: turns popped on the branch an edit was made from and
   * written again there are other rows, of the same turns). */
  const shown = async (where, s) => {
    // (Branches that cannot be listed leave `main`'s hits.)
    const view = s.currentBranch === 'main' ? null : (await reading(where, s, (session) => session.listBranches()).catch(() => [])).find((e) => e.current)?.view;
    return (hit) => (view ? view.some((v) => v.branchId === (hit.branch ?? 'main') && hit.seq >= v.from && hit.seq < v.to) : !hit.branch);
  };
  const noSessions = 'Past sessions are only found for runs with a session stored in IndexedDB, not encrypted.';
  return [
    {
      name: 'search_past_sessions',
      description:
        "Lists the user's earlier conversations (not this one), newest first, with a preview of their turns. With a query, only the conversations and turns that match it (all its words; \"quoted phrases\"; prefix*).",
      parameters: { type: 'object', properties: { query: { type: 'string', description: 'Words to look for; leave out to list the most recent conversations.' } }, additionalProperties: false },
      needsApproval: false,
      async execute(args) {
        const where = scope();
        if (!where) return noSessions;
        const list = await others(where);
        // What a search takes: at most 1,000 characters, no lone surrogate (a paragraph the model
        // pasted, or a lone surrogate it escaped, failed the tool, and the model tried again).
        const query = typeof args?.query === 'string' ? [...args.query.replace(/\p{Cs}/gu, '').trim()].slice(0, 1000).join('') : '';
        const sessions = [];
        if (!query) {
          for (const s of list.slice(0, count)) {
            const turns = turnsOf(await reading(where, s, (session) => session.getRecentTurns(turnsPerSession)));
            sessions.push({ session_id: s.sessionId, title: s.title, updated_at: new Date(s.updatedAt).toISOString(), turns: turns.map((t) => ({ user: cut(t.user), assistant: cut(t.assistant) })) });
          }
          return { sessions };
        }
        const known = new Map(list.map((s) => [s.sessionId, s]));
        if (!list.length) return { query, sessions };
        const matched = new Map();
        const views = new Map();
        // Only the other sessions are searched: this one's hits would take the places of theirs.
        // A search that returned all it could (a chat's many hits may have kept others out) is
        // made again over the sessions it did not reach.
        let left = [...known.keys()];
        // (At most a few rounds more than the sessions asked for: each round reaches one more
        // at least, but one whose hits its branch does not show adds none.)
        const search = (sessionIds, limit = 200) => searchSessions({ dbName: where.dbName, userId: where.userId, query, limit, sessionIds });
        const take = async (hits) => {
          for (const hit of hits) {
            const s = known.get(hit.sessionId);
            if (!s || (!matched.has(hit.sessionId) && matched.size === count)) continue;
            if (!views.has(s)) views.set(s, await shown(where, s));
            if (!views.get(s)(hit)) continue;
            if (!matched.has(hit.sessionId)) matched.set(hit.sessionId, new Map());
            const turns = matched.get(hit.sessionId);
            if (!turns.has(hit.turn) && turns.size < turnsPerSession) turns.set(hit.turn, hit.snippet);
          }
        };
        for (let round = 0; left.length && matched.size < count && round < count + 3; round++) {
          const hits = await search(left);
          await take(hits);
          if (hits.length < 200) break;
          const reached = new Set(hits.map((hit) => hit.sessionId));
          left = left.filter((id) => !reached.has(id));
          // The chats whose hits here were all on versions they no longer show (an edited chat's
          // original) may show one further down: searched once more, together, deeper (one
          // search a round at most).
          const unseen = [...reached].filter((id) => !matched.has(id));
          if (unseen.length && matched.size < count) await take(await search(unseen, 1000));
        }
        for (const [id, turns] of matched) {
          const s = known.get(id);
          const listed = await reading(where, s, (session) => session.getTurns());
          sessions.push({
            session_id: id,
            title: s.title,
            updated_at: new Date(s.updatedAt).toISOString(),
            turns: [...turns].map(([turn, match]) => ({ turn, user: cut(listed.find((t) => t.turn === turn)?.content ?? ''), match })),
          });
        }
        return { query, sessions };
      },
    },
    {
      name: 'read_past_session',
      description: "Reads one of the user's earlier conversations (an id from search_past_sessions) as user/assistant lines: its newest num_turns turns, or all of it.",
      parameters: {
        type: 'object',
        properties: { session_id: { type: 'string' }, num_turns: { type: 'integer', minimum: 1 } },
        required: ['session_id'],
        additionalProperties: false,
      },
      needsApproval: false,
      async execute(args) {
        const where = scope();
        if (!where) return noSessions;
        const id = args?.session_id;
        const found = typeof id === 'string' && (await others(where)).find((s) => s.sessionId === id);
        if (!found) return 'Error: there is no past session with that id. Use search_past_sessions to find one.';
        const n = args?.num_turns;
        const items = await reading(where, found, (past) => (Number.isInteger(n) && n > 0 ? past.getRecentTurns(n) : past.getItems()));
        const lines = items.filter(roleOf).map((item) => `${roleOf(item)}: ${textOf(item)}`);
        return lines.length ? lines.join('\n') : '(the session holds no messages)';
      },
    },
  ];
}

/**
 * The agents a run uses: `agent` itself, unless it or an agent it hands off to (directly or
 * not) has `pastSessions`. Then copies of all of them, handing off to each other as the
 * originals do (events and `lastAgent` still name the originals), each with `pastSessions` given
 * the past-session tools of the run's session. `release()` frees the copies after the run.
 */
function forRun(agent, options) {
  const reachable = [agent];
  for (let i = 0; i < reachable.length; i++) {
    for (const h of handoffsOf.get(reachable[i]) ?? []) if (!reachable.includes(h.agent)) reachable.push(h.agent);
  }
  if (!reachable.some((a) => pastOf.has(a))) return { agent, release() {} };
  let session;
  try {
    session = options?.session;
  } catch {
    session = undefined;
  }
  const copies = new Map();
  for (const original of reachable) {
    const past = pastOf.get(original);
    const { pastSessions: _, handoffs: __, ...rest } = optionsOf.get(original);
    const tools = past ? [...(rest.tools ?? []), ...pastSessionTools(session, past.past)] : rest.tools;
    copies.set(original, new WasmAgent({ ...rest, tools }));
  }
  const release = () => {
    for (const copy of copies.values()) {
      copy.clearHandoffs(); // agents that hand off to each other would keep each other alive
      copy.free();
    }
  };
  try {
    for (const [original, copy] of copies) {
      (handoffsOf.get(original) ?? []).forEach((h, i) => copy.addHandoff(copies.get(h.agent), h.agent, h.options, i));
    }
  } catch (e) {
    release();
    throw e;
  }
  return { agent: copies.get(agent), release };
}

/** Starts a run (`start(moduleAgent)`) with the agents `forRun` gives, released when it settles. */
function withAgents(agent, options, start) {
  const used = forRun(agent, options);
  let run;
  try {
    run = start(used.agent);
  } catch (e) {
    used.release();
    throw e;
  }
  run.then(used.release, used.release);
  return run;
}

// As the SDK's: `JSON.stringify` of a state (kept in an object with the page's other data) is
// the string `toString()` gives, which `fromString` takes back.
Object.defineProperty(RunState.prototype, 'toJSON', {
  value() {
    return JSON.parse(this.toString());
  },
  writable: true,
  configurable: true,
});

const fromString = RunState.fromString;
Object.defineProperty(RunState, 'fromString', {
  value: function (agent, text) {
    if (!agents.has(agent)) throw notAnAgent(agent);
    return fromString.call(this, agent, text, agent);
  },
  writable: true,
  configurable: true,
});

/**
 * `options` with `signal` aborting when either the caller's or `own` does (joined by hand where
 * `AbortSignal.any` cannot: a browser without it, a signal of another realm).
 * Options whose signal is not one (or cannot be read) are left for the run's own checks.
 */
function ownSignal(options, own) {
  try {
    const given = options?.signal;
    if (options != null && (typeof options !== 'object' || (given != null && typeof given.addEventListener !== 'function'))) return options;
    let signal = own;
    // (`AbortSignal.any` lets go of the caller's long-lived signal once the run is over.)
    if (given instanceof AbortSignal && AbortSignal.any) signal = AbortSignal.any([given, own]);
    else if (given != null) {
      const joined = new AbortController();
      for (const s of [given, own]) {
        if (s.aborted) joined.abort(s.reason);
        else s.addEventListener('abort', () => joined.abort(s.reason), { once: true });
      }
      signal = joined.signal;
    }
    return options == null ? { signal } : Object.create(options, { signal: { value: signal } });
  } catch {
    return options;
  }
}

/** `options` with a `signal` the browser's own `fetch` and Web Locks refuse (not an
 * `AbortSignal` of the platform: a polyfill's, a look-alike with `aborted` and listeners) joined
 * into one of its own; other options as they are. */
function platformSignal(options) {
  try {
    const given = options?.signal;
    if (given == null || typeof given !== 'object') return options;
    // (Throws for anything but the platform's AbortSignal, of any realm.)
    Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted').get.call(given);
    return options;
  } catch {
    return ownSignal(options, new AbortController().signal);
  }
}

/**
 * Runs `start()` holding the Web Lock of the run's session, so that one run at a time (in any
 * tab or worker of the origin) works on a session: `lock: 'wait'` (the default) waits its turn,
 * `'fail'` rejects at once with `SESSION_BUSY` when another run holds it, `false` takes none
 * (every run holds its own run mark all the same, see `runMark`).
 * Only sessions stored in IndexedDB (with a `dbName` and a `sessionId`) are locked, and only
 * where the browser has Web Locks. Anything unexpected is left to the run's own option checks.
 */
function locked(options, begin) {
  // What `begin` throws (a failure to prepare the run) is the run's rejection, as always.
  const start = () => {
    try {
      return begin();
    } catch (e) {
      return Promise.reject(e);
    }
  };
  let session;
  let mode;
  let signal;
  try {
    session = options?.session;
    mode = options?.lock ?? 'wait';
    signal = options?.signal;
  } catch {
    return start();
  }
  const locks = globalThis.navigator?.locks;
  let name;
  let mark;
  try {
    // (A session whose getters throw, or a revoked Proxy: the run itself rejects, saying so.)
    mark = locks && runMark(session);
    if (!mark) return start();
    if (mode === true || mode === 'wait' || mode === 'fail') name = sessionLockName(session.dbName, session.sessionId);
  } catch {
    return start();
  }
  // Every run also holds a mark of its own on its session, whatever its `lock`: a lock of a name
  // no other holds or asks for but a compaction waiting for it to end (see `runsEnded`), so it
  // is granted at once and never waits behind one (where the browser refuses it, the run goes
  // on without).
  const marked = () => {
    let granted = false;
    try {
      return locks
        .request(`${mark}${++marks}.${Math.random().toString(36).slice(2)}`, () => {
          granted = true;
          return start();
        })
        .catch((e) => {
          if (granted) throw e;
          return start();
        });
    } catch {
      return start();
    }
  };
  if (!name) return marked();
  const how = mode === 'fail' ? { ifAvailable: true } : signal && typeof signal === 'object' && 'aborted' in signal ? { signal } : {};
  // The run's outcome reaches the caller once the lock is released, so that a run the caller
  // starts as soon as it hears of it (with `lock: 'fail'`) finds the session free.
  return locks.request(name, how, (lock) => {
    if (!lock) throw sessionBusy(session.sessionId);
    return marked();
  });
}

/** How many runs this page marked (with a random part: one name per run in any tab). */
let marks = 0;

/** The beginning of the name of the Web Lock every run of this runner on a session stored in
 * IndexedDB (one with a `dbName` and a `sessionId`) holds, whatever its `lock` option (each run
 * its own, named by this and a part of its own); `undefined` for any other session. */
function runMark(session) {
  const named = session && typeof session === 'object' && typeof session.dbName === 'string' && typeof session.sessionId === 'string';
  return named ? `agent-sessions-run:${JSON.stringify([session.dbName, session.sessionId])}#` : undefined;
}

/** A promise that resolves once the runs of this runner under way on `session` (in any tab) have
 * ended: each run's mark is asked for in turn (no run asks for another's, so none waits behind
 * this); `null` where there is no mark to wait for. Unlike the session's lock, which an app may
 * hold around a run of the SDK (whose `run()` awaits a compaction), only runs hold them. */
function runsEnded(session) {
  const locks = globalThis.navigator?.locks;
  let mark;
  try {
    mark = typeof locks?.query === 'function' && runMark(session);
  } catch {
    // (Getters that throw: no run could be marked either.)
  }
  if (!mark) return null;
  return (async () => {
    const { held = [] } = await locks.query();
    for (const { name } of held) if (name?.startsWith(mark)) await locks.request(name, () => {});
  })().catch(() => {});
}

// The lifecycle events `runner.on` takes: the SDK's names, and the short ones.
const EVENT_NAMES = {
  agent_start: 'agent_start',
  agent_end: 'agent_end',
  handoff: 'handoff',
  agent_handoff: 'handoff',
  tool_start: 'tool_start',
  agent_tool_start: 'tool_start',
  tool_end: 'tool_end',
  agent_tool_end: 'tool_end',
};

/** A lifecycle event's listener arguments, in the SDK's order (the first is the run's context). */
function listenerArgs(event, context) {
  switch (event.type) {
    case 'agent_start':
      return [context, event.agent, event.turnInput];
    case 'agent_end':
      return [context, event.agent, event.output];
    case 'handoff':
      return [context, event.from, event.to];
    case 'tool_start':
      return [context, event.agent, event.tool, { toolCall: event.item }];
    case 'tool_end':
      return [context, event.agent, event.tool, event.output, { toolCall: event.item }];
    default:
      return null;
  }
}

function contextOf(options) {
  try {
    return options?.context;
  } catch {
    return undefined;
  }
}

/** The `context` of the run each `RunState` a run gave came from: a run resumed from that state
 * without a `context` of its own gets it, as the SDK keeps it in its state (a state made by
 * `RunState.fromString` has none: its resumption passes it again). */
const stateContexts = new WeakMap();

/** `options`, given the context of the run `input` (a state) came from where they give none. */
function withStateContext(input, options) {
  if (!stateContexts.has(input) || contextOf(options) !== undefined) return options;
  if (options != null && typeof options !== 'object') return options; // (refused by the run)
  // (Over the caller's object, as `ownSignal` does: options it inherits, or reads through
  // getters, stay as they are.)
  const context = stateContexts.get(input);
  return options == null ? { context } : Object.create(options, { context: { value: context } });
}

/** `run`, remembering the context of the states its result or error carry. */
function keepingContext(run, options) {
  const context = contextOf(options);
  const keep = (state) => state && typeof state === 'object' && context !== undefined && stateContexts.set(state, context);
  return run.then(
    (result) => (keep(result?.state), result),
    (error) => {
      keep(error?.state);
      throw error;
    },
  );
}

/** Runs agents against an OpenAI-compatible server (see the declarations in runner.d.ts). */
class Runner extends WasmRunner {
  #listeners = new Map();

  /** Frees the runner's memory in the module: a run on it afterwards is `INVALID_RUNNER`. */
  free() {
    runners.delete(this);
    super.free();
  }

  constructor(options) {
    super(options);
    runners.add(this);
  }

  /** Calls `listener` on each lifecycle event `name` of this runner's runs. */
  on(name, listener) {
    const type = Object.hasOwn(EVENT_NAMES, name) ? EVENT_NAMES[name] : undefined;
    if (!type) throw runnerError('INVALID_RUNNER', `runner.on: unknown event "${String(name)}"; the events are ${Object.keys(EVENT_NAMES).join(', ')}`);
    if (typeof listener !== 'function') throw runnerError('INVALID_RUNNER', `runner.on("${name}") needs a function, got ${kindOf(listener)}`);
    if (!this.#listeners.has(type)) this.#listeners.set(type, new Set());
    this.#listeners.get(type).add(listener);
    return this;
  }

  /** Stops calling `listener` for `name`. */
  off(name, listener) {
    if (Object.hasOwn(EVENT_NAMES, name)) this.#listeners.get(EVENT_NAMES[name])?.delete(listener);
    return this;
  }

  /** What receives a run's events: the listeners (a listener that throws is reported to the
   * page, as an uncaught error would be, and the run goes on), then `push` for a stream. */
  #dispatcher(options, push) {
    const listeners = this.#listeners;
    if (!push && ![...listeners.values()].some((set) => set.size > 0)) return undefined;
    const context = contextOf(options);
    return (event) => {
      const set = listeners.get(event.type);
      if (set?.size) {
        const args = listenerArgs(event, context);
        // (One that throws, or returns a promise that rejects, is reported: in Node, which has no
        // `reportError`, on the console.)
        const reported = (e) => (typeof reportError === 'function' ? reportError(e) : console.error(e));
        for (const listener of [...set]) {
          try {
            const returned = listener(...args);
            if (typeof returned?.then === 'function') Promise.resolve(returned).catch(reported);
          } catch (e) {
            reported(e);
          }
        }
      }
      push?.(event);
    };
  }

  run(agent, input, options) {
    // The SDK's way to stream (options that cannot be read are the run's to refuse).
    let stream;
    try {
      stream = options?.stream === true;
    } catch {}
    if (stream) return Promise.resolve(this.runStreamed(agent, input, options));
    if (!runners.has(this)) return Promise.reject(freedRunner());
    if (!agents.has(agent)) return Promise.reject(notAnAgent(agent));
    options = platformSignal(withStateContext(input, options));
    return keepingContext(locked(options, () => withAgents(agent, options, (used) => super.run(used, input, options, this.#dispatcher(options), agent))), options);
  }

  /**
   * A streamed run: an async iterable of its events, ending with `{ type: 'done', result }`
   * (or throwing the run's error after the events that came before it), and `result`, which
   * settles when the run ends. Leaving the loop before the run ended cancels it. As the SDK's
   * stream: `completed` (settles when the run ends, rejecting with its error unless the stream
   * cancelled it), `cancelled`, `error`, `finalOutput` once it ended, and `toTextStream()`.
   */
  runStreamed(agent, input, options) {
    const pending = [];
    let wake = null;
    let stopped = false;
    let ended = null; // { error } or { result } once the run settled
    let cancelled = false;
    let stop = null; // { error } once the caller aborted (see below)
    const sdk = sdkEvents();
    const push = (event) => {
      // (What the run does after a Stop is kept too: a loop that reads on after a run the Stop
      // came too late for (it saved its answer) gets all of it, `agent_end` and `done`; any
      // other loop throws at the Stop, see `events`.)
      if (stopped) return;
      pending.push(event);
      try {
        pending.push(...sdk(event));
      } catch (e) {
        // (An item of a shape the SDK's events cannot take: this runner's event is given.)
        globalThis.reportError?.(e);
      }
      wake?.();
    };
    // Leaving the loop (or cancelling the text stream) before the run ended aborts it, as the
    // SDK's stream does: the run's signal is the caller's joined with the stream's own.
    const own = new AbortController();
    // A Stop (the caller's signal) ends the loop at once, as the SDK's stream closes: the run
    // itself ends once what it waits for has returned (a tool that does not heed its signal, a
    // guardrail), and `result` settles then, with the same error.
    let unlisten = () => {};
    try {
      const given = options?.signal;
      if (typeof given?.addEventListener === 'function') {
        const halt = () => {
          // (A look-alike signal may abort without a reason: the loop still throws an
          // AbortError, as the run does.)
          stop ??= { error: given.reason ?? new DOMException('the run was aborted', 'AbortError') };
          wake?.();
        };
        if (given.aborted) halt();
        given.addEventListener('abort', halt, { once: true });
        // (Taken off when the run ends: a page may keep one signal for many runs.)
        unlisten = () => given.removeEventListener('abort', halt);
      }
    } catch {
      // Options that cannot be read: the run refuses them.
    }
    options = ownSignal(withStateContext(input, options), own.signal);
    // What the run rejects with when the stream's exit cancelled it (a failure of its own, even
    // in the same moment, stays the run's error).
    const left = new DOMException('the stream was left before the run ended', 'AbortError');
    const cancel = () => {
      if (ended || cancelled || stop) return;
      cancelled = true;
      own.abort(left);
    };
    const result = !runners.has(this)
      ? Promise.reject(freedRunner())
      : agents.has(agent)
      ? keepingContext(locked(options, () => withAgents(agent, options, (used) => this.startStreamed(used, input, options, this.#dispatcher(options, push), agent))), options)
      : Promise.reject(notAnAgent(agent));
    result.then(
      (value) => {
        unlisten();
        push({ type: 'done', result: value });
        ended = { result: value };
        wake?.();
      },
      (error) => {
        unlisten();
        ended = { error };
        wake?.();
      },
    );
    async function* events() {
      try {
        while (!stopped) {
          // A Stop ends the loop at once, before the events not read yet, unless the run has
          // ended by then (too late to stop it): its loop reads on, to its `done`.
          if (stop && !(ended && 'result' in ended)) {
            throw stop.error;
          } else if (pending.length > 0) {
            yield pending.shift();
          } else if (ended && 'result' in ended) {
            return;
          } else if (ended) {
            throw ended.error;
          } else {
            await new Promise((resolve) => {
              wake = resolve;
            });
            wake = null;
          }
        }
      } finally {
        stopped = true;
        pending.length = 0;
        cancel();
      }
    }
    const stream = events();
    // A `return()` before the first `next()` never runs the generator's `finally`.
    const finish = stream.return.bind(stream);
    // One made while a `next()` waits for an event is queued behind it: that `next()` is woken
    // and ends, instead of waiting for the run to end.
    stream.return = (value) => {
      stopped = true;
      pending.length = 0;
      cancel();
      wake?.();
      return finish(value);
    };
    // Whoever only iterates still sees the error there; the result promise counts as handled.
    result.catch(() => {});
    // As the SDK's: a run the stream's exit cancelled completes, with no error.
    const completed = result.then(
      () => {},
      (error) => {
        if (error !== left) throw error;
      },
    );
    completed.catch(() => {});
    return Object.defineProperties(stream, {
      result: { value: result, enumerable: true },
      completed: { value: completed, enumerable: true },
      cancelled: { get: () => cancelled },
      error: { get: () => (ended && 'error' in ended && ended.error !== left ? ended.error : null) },
      // And the rest of the result once the run has ended, under the SDK's names, so that its
      // approval loop (`while (stream.interruptions.length)`) works on a stream too.
      ...Object.fromEntries(['finalOutput', 'state', 'lastAgent', 'activeAgent', 'newItems', 'output', 'inputGuardrailResults', 'outputGuardrailResults', 'history', 'lastResponseId'].map((key) => [key, { get: () => ended?.result?.[key] }])),
      // (None once it ended without a result, as the SDK's: the loop then ends.)
      interruptions: { get: () => ended?.result?.interruptions ?? (ended ? [] : undefined) },
      // The text of the answer as it streams, and the events, as the SDK's `toTextStream()` and
      // `toStream()`: read from the same events (the loop's).
      toTextStream: { value: readable(stream, (e) => (e.type === 'text_delta' ? e.delta : undefined)) },
      toStream: { value: readable(stream, (e) => e) },
    });
  }
}

/** A function making a `ReadableStream` of what `pick` takes of each event of `stream` (what it
 * gives `undefined` for is passed over); cancelling it leaves the stream. */
const readable = (stream, pick) => () =>
  new ReadableStream({
    async pull(controller) {
      for (;;) {
        const { value, done } = await stream.next();
        if (done) return controller.close();
        const picked = pick(value);
        if (picked !== undefined) return controller.enqueue(picked);
      }
    },
    cancel: () => stream.return(),
  });

/** The session each `CompactionSession` wraps (the past-session tools look through it). */
const wrapping = new WeakMap();

/** The methods a `CompactionSession` has where the session it wraps has them, called in order
 * with its other calls. */
const PASSED_THROUGH = [
  'applyHistoryTransaction',
  'applyHistoryMutations',
  'replaceHistoryWithCompaction',
  'replaceHistory',
  'getRecentTurns',
  'getInfo',
  'update',
  'storeRunUsage',
  'getTurns',
  'findTurns',
  'getSessionUsage',
  'getTurnUsage',
  'getToolUsage',
  'listBranches',
  'createBranchFromTurn',
  'createBranchFromContent',
  'switchBranch',
  'deleteBranch',
  'close',
];

const COMPACTION_OPTIONS = ['runner', 'agent', 'model', 'strategy', 'keepTurns', 'archive', 'shouldCompact', 'shouldTriggerCompaction'];

/** A session that compacts its history with a model (see the declarations in runner.d.ts). */
class CompactionSession {
  #inner;
  #engine;
  #guarded;
  // Calls take effect in call order. A compaction reads the history, waits for the model, then
  // replaces what it read: over a session with `replaceHistory` (ours) or history transactions
  // marked as ours, the replacement is refused if anything was written meanwhile, so a
  // compaction never holds up the conversation; over any other session (the SDK's
  // `MemorySession`, whose refusal carries no code to tell it by), calls wait for it.
  #tail = Promise.resolve();
  /** The compaction under way over a guarded session (the next waits for it). */
  #compacting = Promise.resolve();
  /** Whether `close()` was called through this object. */
  #closed = false;

  constructor(inner, options) {
    const runner = compactionRunner(options);
    if (!runners.has(runner)) throw notARunner(runner);
    // A misspelt option (`keepTurn`) would be ignored, and the history compacted otherwise than asked.
    for (const name of Object.keys(options)) {
      if (!COMPACTION_OPTIONS.includes(name) && options[name] !== undefined) throw runnerError('INVALID_COMPACTION', `options.${name} is not an option of CompactionSession (${COMPACTION_OPTIONS.join(', ')})`);
    }
    this.#engine = runner.compactionEngine(inner, options);
    this.#inner = inner;
    wrapping.set(this, inner);
    this.#guarded = false;
    // The wrapped session's optional capabilities pass through, where it has them: history
    // transactions, the turns, metadata and usage the runner reads and writes (without them a
    // run's titles, summaries, state and turn window would silently be off), branches.
    for (const name of PASSED_THROUGH) {
      let method;
      try {
        method = inner[name];
      } catch {
        continue;
      }
      if (typeof method === 'function') {
        Object.defineProperty(this, name, {
          value: (...args) => {
            const copied = copiedArguments(args);
            if (name === 'close') this.#closed = true;
            return this.#serial(() => method.apply(inner, copied));
          },
        });
        if (name === 'replaceHistory') this.#guarded = true;
      }
    }
    // Listening to the wrapped session's changes is not a call in the order of the others.
    let subscribe;
    try {
      subscribe = inner.subscribe;
    } catch {
      subscribe = undefined;
    }
    if (typeof subscribe === 'function') Object.defineProperty(this, 'subscribe', { value: (...args) => subscribe.apply(inner, args) });
    // Usage given with a history transaction goes through to the wrapped session with it.
    const usageMark = Symbol.for('agent-sessions.transactionUsage');
    let marked = false;
    try {
      marked = inner[usageMark] === true;
    } catch {
      // A session that throws on being asked does not have it.
    }
    if (marked && typeof this.applyHistoryTransaction === 'function') {
      Object.defineProperty(this, usageMark, { value: true });
      this.#guarded = true;
    }
  }

  /** The wrapped session's id, database and owner, where it has them: a run on this session
   * holds the same cross-tab lock as a run on the wrapped one, and `pastSessions` finds the
   * user's other chats. */
  get sessionId() {
    return this.#inner.sessionId;
  }

  get dbName() {
    return this.#inner.dbName;
  }

  get userId() {
    return this.#inner.userId;
  }

  /** The branch the wrapped session is on, where it has branches. */
  get currentBranch() {
    return this.#inner.currentBranch;
  }

  /** The wrapped session's settings, where it has them: the window its `getItems()` takes by
   * default (a run reads the history so). */
  get settings() {
    return this.#inner.settings;
  }

  // A call waits for the calls before it: the items and options of a write are copied at the
  // call (`addItems`, the methods passed through), so that what the caller changes afterwards is
  // not what is stored.
  #serial(call) {
    const run = this.#tail.then(call);
    this.#tail = run.catch(() => {});
    return run;
  }

  getSessionId() {
    return this.#serial(() => this.#inner.getSessionId());
  }

  getItems(limit) {
    // (`null`, no limit, is given on as `undefined`: the SDK's sessions read `null` as 0.)
    return this.#serial(() => this.#inner.getItems(limit ?? undefined));
  }

  addItems(items) {
    const [copied] = copiedArguments([items]);
    return this.#serial(() => this.#inner.addItems(copied));
  }

  popItem() {
    return this.#serial(() => this.#inner.popItem());
  }

  clearSession() {
    return this.#serial(() => this.#inner.clearSession());
  }

  runCompaction(args) {
    // Over a guarded session it reads after the calls made before it (else it would take their
    // writes for a write in between and be refused), and holds up none made after it; and after
    // the compaction before it (two at once would each pay for a summary, and one be refused).
    // It waits for the runs of this package's runner under way on the session (in any tab) to
    // end: a run resumed after an approval has saved its call's output and waits for the model,
    // a history that looks finished, and its answer's save would be refused once the history
    // was replaced.
    // Closed through this object after it was asked (a page leaving the chat while the work
    // after a turn went on): nothing to do, as where the close came while it wrote.
    const closed = this.#closed;
    const compact = () =>
      this.#engine.run(this.#inner, args).catch((e) => {
        if (e?.code === 'CLOSED' && !closed && this.#closed) return null;
        throw e;
      });
    if (this.#guarded) {
      const run = Promise.all([this.#tail, this.#compacting]).then(() => runsEnded(this)).then(compact);
      this.#compacting = run.catch(() => {});
      return run;
    }
    // (The runs first: a run makes calls that would wait behind the compaction.)
    return runsEnded(this)?.then(() => this.#serial(compact)) ?? this.#serial(compact);
  }

  getArchivedItems(options) {
    return this.#serial(() => (typeof this.#inner.getArchivedItems === 'function' ? this.#inner.getArchivedItems(options) : []));
  }
}

// `using` frees through the same free() (the module's own classes point it at theirs).
if (typeof Symbol.dispose === 'symbol') {
  for (const C of [Agent, Runner]) C.prototype[Symbol.dispose] = C.prototype.free;
}

export { Agent, Runner, RunState, CompactionSession };
export { OpenAIConversationsSession } from './conversations.js';
export * from './index.js';
