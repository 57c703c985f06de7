// The runner entry: Agent, Runner and RunState (their own WebAssembly module), plus everything
// the main entry exports, so a chat page imports all it needs from one place.
import init, {
  Agent as WasmAgent,
  Runner as WasmRunner,
  RunState,
  notAnAgent,
  notARunner,
  compactionRunner,
  sessionBusy,
} from './agent_sessions_runner.js';

await init({ module_or_path: new URL('./agent_sessions_runner_bg.wasm', import.meta.url) });

// Every Agent and Runner this entry made. Checking membership runs no code of the value checked (a Proxy is
// never a member), so a hostile `agent` argument is refused with a RunnerError instead of
// reaching wasm-bindgen's class check, which throws a bare Error synchronously.
const agents = new WeakSet();
const runners = new WeakSet();

/** An agent: a name, instructions, a model and tools (see the declarations in runner.d.ts). */
class Agent extends WasmAgent {
  constructor(options) {
    super(options);
    agents.add(this);
  }
}

const fromString = RunState.fromString;
Object.defineProperty(RunState, 'fromString', {
  value: function (agent, text) {
    if (!agents.has(agent)) throw notAnAgent(agent);
    return fromString.call(this, agent, text);
  },
  writable: true,
  configurable: true,
});

/**
 * Runs `start()` holding the Web Lock of the run's session, so that one run at a time (in any
 * tab or worker of the origin) works on a session: `lock: 'wait'` (the default) waits its turn,
 * `'fail'` rejects at once with `SESSION_BUSY` when another run holds it, `false` takes no lock.
 * Only sessions stored in IndexedDB (with a `dbName` and a `sessionId`) are locked, and only
 * where the browser has Web Locks. Anything unexpected is left to the run's own option checks.
 */
function locked(options, start) {
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
  const named = session && typeof session === 'object' && typeof session.dbName === 'string' && typeof session.sessionId === 'string';
  if (!locks || !named || mode === false || (mode !== true && mode !== 'wait' && mode !== 'fail')) return start();
  const name = `agent-sessions:${session.dbName}:${session.sessionId}`;
  const how = mode === 'fail' ? { ifAvailable: true } : signal && typeof signal === 'object' && 'aborted' in signal ? { signal } : {};
  // The run's outcome reaches the caller as soon as the run settles, as without a lock (the
  // lock is released just after): the work a run leaves for after its answer waits for the
  // caller to have it first.
  return new Promise((resolve, reject) => {
    locks
      .request(name, how, (lock) => {
        if (!lock) throw sessionBusy(session.sessionId);
        const run = start();
        run.then(resolve, reject);
        return run.catch(() => {});
      })
      .catch(reject);
  });
}

/** Runs agents against an OpenAI-compatible server (see the declarations in runner.d.ts). */
class Runner extends WasmRunner {
  constructor(options) {
    super(options);
    runners.add(this);
  }

  run(agent, input, options) {
    if (!agents.has(agent)) return Promise.reject(notAnAgent(agent));
    return locked(options, () => super.run(agent, input, options));
  }

  /**
   * A streamed run: an async iterable of its events, ending with `{ type: 'done', result }`
   * (or throwing the run's error after the events that came before it), and `result`, which
   * settles when the run ends. Leaving the loop early stops the events; the run goes on (its
   * `signal` stops it).
   */
  runStreamed(agent, input, options) {
    const pending = [];
    let wake = null;
    let stopped = false;
    let ended = null; // { error } or { result } once the run settled
    const push = (event) => {
      if (stopped) return;
      pending.push(event);
      wake?.();
    };
    const result = agents.has(agent)
      ? locked(options, () => this.startStreamed(agent, input, options, push))
      : Promise.reject(notAnAgent(agent));
    result.then(
      (value) => {
        push({ type: 'done', result: value });
        ended = { result: value };
        wake?.();
      },
      (error) => {
        ended = { error };
        wake?.();
      },
    );
    async function* events() {
      try {
        for (;;) {
          if (pending.length > 0) {
            yield pending.shift();
          } else if (ended) {
            if ('error' in ended) throw ended.error;
            return;
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
      }
    }
    const stream = events();
    // Whoever only iterates still sees the error there; the result promise counts as handled.
    result.catch(() => {});
    Object.defineProperty(stream, 'result', { value: result, enumerable: true });
    return stream;
  }
}

/** A session that compacts its history with a model (see the declarations in runner.d.ts). */
class CompactionSession {
  #inner;
  #engine;
  #guarded;
  // Calls take effect in call order. A compaction reads the history, waits for the model, then
  // replaces what it read: over a session with `replaceHistory` (this package's), the
  // replacement is refused if anything was written meanwhile, so a compaction never holds up
  // the conversation; over any other session, calls wait for it.
  #tail = Promise.resolve();

  constructor(inner, options) {
    const runner = compactionRunner(options);
    if (!runners.has(runner)) throw notARunner(runner);
    this.#engine = runner.compactionEngine(inner, options);
    this.#inner = inner;
    this.#guarded = false;
    // The wrapped session's optional capabilities pass through, where it has them.
    for (const name of ['applyHistoryTransaction', 'applyHistoryMutations', 'replaceHistoryWithCompaction', 'replaceHistory', 'close']) {
      let method;
      try {
        method = inner[name];
      } catch {
        continue;
      }
      if (typeof method === 'function') {
        Object.defineProperty(this, name, { value: (...args) => this.#serial(() => method.apply(inner, args)) });
        if (name === 'replaceHistory') this.#guarded = true;
      }
    }
  }

  #serial(call) {
    const run = this.#tail.then(call);
    this.#tail = run.catch(() => {});
    return run;
  }

  getSessionId() {
    return this.#serial(() => this.#inner.getSessionId());
  }

  getItems(limit) {
    return this.#serial(() => this.#inner.getItems(limit));
  }

  addItems(items) {
    return this.#serial(() => this.#inner.addItems(items));
  }

  popItem() {
    return this.#serial(() => this.#inner.popItem());
  }

  clearSession() {
    return this.#serial(() => this.#inner.clearSession());
  }

  runCompaction(args) {
    if (this.#guarded) return this.#engine.run(this.#inner, args);
    return this.#serial(() => this.#engine.run(this.#inner, args));
  }

  getArchivedItems(options) {
    return this.#serial(() => (typeof this.#inner.getArchivedItems === 'function' ? this.#inner.getArchivedItems(options) : []));
  }
}

export { Agent, Runner, RunState, CompactionSession };
export * from './index.js';
