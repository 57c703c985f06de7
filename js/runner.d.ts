export { Agent, Runner, RunState } from './agent_sessions_runner.js';
export type {
  ModelSettings,
  JsonSchema,
  FunctionTool,
  AgentOptions,
  RunnerOptions,
  SessionLike,
  RunOptions,
  Usage,
  ToolApprovalItem,
  RunResult,
  RunStreamEvent,
  StreamedRun,
  ModelError,
  MaxTurnsExceededError,
  RunnerError,
  RunnerErrorCode,
} from './agent_sessions_runner.js';
export * from './index.js';
