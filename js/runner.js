// The runner entry: Agent, Runner and RunState (their own WebAssembly module), plus everything
// the main entry exports, so a chat page imports all it needs from one place.
import init, {
  Agent as WasmAgent,
  Runner as WasmRunner,
  RunState,
  notAnAgent,
} from './agent_sessions_runner.js';

await init({ module_or_path: new URL('./agent_sessions_runner_bg.wasm', import.meta.url) });

// Every Agent this entry made. Checking membership runs no code of the value checked (a Proxy is
// never a member), so a hostile `agent` argument is refused with a RunnerError instead of
// reaching wasm-bindgen's class check, which throws a bare Error synchronously.
const agents = new WeakSet();

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

/** Runs agents against an OpenAI-compatible server (see the declarations in runner.d.ts). */
class Runner extends WasmRunner {
  run(agent, input, options) {
    if (!agents.has(agent)) return Promise.reject(notAnAgent(agent));
    return super.run(agent, input, options);
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
      ? this.startStreamed(agent, input, options, push)
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

export { Agent, Runner, RunState };
export * from './index.js';
