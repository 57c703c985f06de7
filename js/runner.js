// The runner entry: Agent, Runner and RunState (their own WebAssembly module), plus everything
// the main entry exports, so a chat page imports all it needs from one place.
import init from './agent_sessions_runner.js';

await init({ module_or_path: new URL('./agent_sessions_runner_bg.wasm', import.meta.url) });

export { Agent, Runner, RunState } from './agent_sessions_runner.js';
export * from './index.js';
