export { Agent, Runner, RunState, CompactionSession } from './agent_sessions_runner.js';
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
  BackgroundReport,
  CompactionContext,
  CompactionSessionOptions,
  CompactionResult,
} from './agent_sessions_runner.js';
export * from './index.js';
