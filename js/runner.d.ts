export { Agent, Runner, RunState, CompactionSession } from './agent_sessions_runner.js';
export type {
  ModelSettings,
  JsonSchema,
  FunctionTool,
  AgentOptions,
  RunnerOptions,
  SessionLike,
  SessionProtocol,
  RunOptions,
  Usage,
  ToolApprovalItem,
  RunResult,
  RunStreamEvent,
  SdkStreamEvent,
  RunItem,
  StreamedRun,
  ModelError,
  MaxTurnsExceededError,
  ModelBehaviorError,
  ModelRefusalError,
  InputGuardrailTripwireTriggered,
  InputGuardrailResult,
  OutputGuardrailResult,
  OutputGuardrailTripwireTriggered,
  JsonSchemaOutputType,
  GuardrailFunctionOutput,
  InputGuardrail,
  OutputGuardrail,
  Handoff,
  HandoffInputData,
  RunnerEvents,
  RunnerError,
  RunnerErrorCode,
  BackgroundReport,
  ToolCallDetails,
  ToolOutput,
  ToolOutputText,
  ToolOutputImage,
  ToolOutputFile,
  SessionMetadataOptions,
  CompactionContext,
  CompactionSessionOptions,
  CompactionSessionSettings,
  CompactionResult,
} from './agent_sessions_runner.js';
import type { Item, SessionMethods, SessionSettings } from './agent_sessions.js';
export * from './index.js';

declare module './agent_sessions_runner.js' {
  /** Where the wrapped session has them (this package's sessions do), a `CompactionSession`
   * has its turn, metadata, usage and branch methods too, called in order with its other
   * calls: a run over it keeps its titles, summaries, state and turn window. */
  interface CompactionSession
    extends Partial<
      Pick<
        SessionMethods,
        | 'applyHistoryTransaction'
        | 'applyHistoryMutations'
        | 'replaceHistoryWithCompaction'
        | 'replaceHistory'
        | 'getRecentTurns'
        | 'getInfo'
        | 'update'
        | 'storeRunUsage'
        | 'getTurns'
        | 'findTurns'
        | 'getSessionUsage'
        | 'getTurnUsage'
        | 'getToolUsage'
        | 'listBranches'
        | 'createBranchFromTurn'
        | 'createBranchFromContent'
        | 'switchBranch'
        | 'deleteBranch'
        | 'subscribe'
        | 'close'
      >
    > {
    /** The branch the wrapped session is on (`undefined` where it has no branches). */
    readonly currentBranch: string | undefined;
    /** The wrapped session's settings, where it has them: the window `getItems()` takes by
     * default. */
    readonly settings: Readonly<SessionSettings> | undefined;
  }
}

/** What `OpenAIConversationsSession` takes. */
export interface OpenAIConversationsSessionOptions {
  /** Default `"https://api.openai.com/v1"`; any server that speaks the Conversations API. */
  baseUrl?: string;
  /** Sent only as `Authorization: Bearer …` to `baseUrl`; never stored. */
  apiKey?: string;
  /** An existing conversation; default: one is created on first use. */
  conversationId?: string;
  /** A `fetch` to use instead of the global one: called as `fetch(url, init)`, it must resolve to a `Response`. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Sent with every request (`apiKey` sets `Authorization` over one here). */
  headers?: HeadersInit;
  /** A request without an answer by then fails (`ModelError`, status 0); default 60,000 ms. */
  timeoutMs?: number;
  /** Retries of a request answered 429 or 400 `conversation_locked` (any request) or 408, 409 or 5xx (reads and the
   * conversation's delete only: a write or delete of items, or the conversation's creation, the
   * server may have done), after what `Retry-After` asks or a backoff from half a second;
   * default 2. */
  retries?: number;
}

/**
 * A Session kept by OpenAI's Conversations API, as the SDK's class of that name: created by the
 * first write or `getSessionId()` (a read before it finds nothing), `getItems(limit)` the newest `limit` (oldest first), `popItem` deletes the newest item,
 * `clearSession` deletes the conversation. A failed request rejects with a `ModelError` (HTTP
 * `status`, 0 when none came).
 */
export class OpenAIConversationsSession {
  constructor(options?: OpenAIConversationsSessionOptions);
  /** The conversation id, `undefined` until it exists. */
  readonly sessionId: string | undefined;
  getSessionId(): Promise<string>;
  getItems<T extends object = Item>(limit?: number | null): Promise<T[]>;
  addItems(items: readonly object[]): Promise<void>;
  popItem<T extends object = Item>(): Promise<T | undefined>;
  /** Deletes one item by the `id` its `getItems()` item carries (gone already: no error). */
  deleteItem(itemId: string): Promise<void>;
  clearSession(): Promise<void>;
  /** Appends `items` (a history the server compacted, beginning with its compaction item), as
   * the SDK's class does: the conversation is never cleared for a compaction. */
  replaceHistoryWithCompaction(items: readonly object[]): Promise<void>;
  /** The SDK's run() hooks, answered as its own class answers: an assistant message replayed
   * without the conversation's id and `providerData`; items in the shape stored, to compare;
   * reasoning ids kept. */
  prepareHistoryItemForModelInput<T extends object = Item>(item: T): T;
  prepareHistoryItemsForPersistenceComparison<T extends object = Item>(items: readonly T[]): T[];
  preserveReasoningItemIdsForPersistence(): boolean;
}
