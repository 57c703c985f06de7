// The runner entry: Agent, Runner and RunState (their own WebAssembly module), plus everything
// the main entry exports, so a chat page imports all it needs from one place.
import init, { Agent, Runner as WasmRunner, RunState } from './agent_sessions_runner.js';

await init({ module_or_path: new URL('./agent_sessions_runner_bg.wasm', import.meta.url) });

/** Runs agents against an OpenAI-compatible server (see the declarations in runner.d.ts). */
class Runner extends WasmRunner {
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
    const result = this.startStreamed(agent, input, options, push);
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
