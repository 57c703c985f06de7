//! `Agent`, `Runner` and `RunState`: the exports and their declarations. A streamed run's
//! events are iterated through an async generator in `js/runner.js`, fed by `startStreamed`.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;

use crate::backend::after_turn::AfterTurn;
use crate::backend::args::optional_string;
use crate::backend::compaction::Compactor;
use crate::backend::error::{coded_error, run_error, with_state};
use crate::backend::js::{describe, js_promise};
use crate::backend::model::ModelClient;
use crate::backend::run_options::{
    self, check_input, parse_agent, parse_compaction, parse_handoff, parse_input,
    parse_run_options, parse_runner, RUN_STATE_KIND,
};
use crate::backend::run_result::{interruption, result_object};
use crate::backend::runner::{self, AgentSpec, RunError, RunOutcome};
use crate::core::error::{ErrorFamily, RunnerError, RunnerErrorCode, SessionErrorCode};
use crate::core::run::{Decision, RunState as CoreState};
use crate::core::wire::call_id;

#[wasm_bindgen(typescript_custom_section)]
const RUNNER_ERROR_CODES: &'static str = RunnerErrorCode::TS_UNION;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Sampling settings sent with every model call of an agent. */
export interface ModelSettings {
  temperature?: number;
  topP?: number;
  /** Sent as `max_tokens` (Chat Completions) or `max_output_tokens` (Responses). */
  maxTokens?: number;
  /** Sent as `parallel_tool_calls` when the agent has tools. */
  parallelToolCalls?: boolean;
  /** Sent as `tool_choice` when the agent has tools: `'auto'`, `'required'`, `'none'` or the
   * name of one of the agent's tools or handoffs (another is refused when a run starts). Once the agent used a tool in a run, it is not forced again
   * (the SDK's `resetToolChoice`), so a forced tool cannot loop. */
  toolChoice?: 'auto' | 'required' | 'none' | (string & {});
  /** Chat Completions only (`frequency_penalty`, `presence_penalty`), as in the SDK. */
  frequencyPenalty?: number;
  presencePenalty?: number;
  store?: boolean;
  /** `reasoning` (Responses); its `effort` as `reasoning_effort` (Chat Completions). */
  reasoning?: { effort?: 'minimal' | 'low' | 'medium' | 'high' | (string & {}) | null; summary?: 'auto' | 'concise' | 'detailed' | (string & {}) | null };
  /** `text.verbosity` (Responses) or `verbosity` (Chat Completions). */
  text?: { verbosity?: 'low' | 'medium' | 'high' | (string & {}) };
  /** Responses only. */
  truncation?: 'auto' | 'disabled';
  /** Sent as `prompt_cache_retention`. */
  /** `'in-memory'` (the SDK's spelling) is sent as the API's `'in_memory'`. */
  promptCacheRetention?: 'in_memory' | 'in-memory' | '24h' | (string & {}) | null;
  /** Sent in the request body as they are, over the fields made from the settings above. Any
   * other key of `modelSettings` is refused (`INVALID_AGENT`). */
  providerData?: Record<string, unknown>;
}

/** A schema the final answer must follow: sent as `response_format` (Chat Completions) or
 * `text.format` (Responses); the answer is parsed and checked against it. */
export interface JsonSchemaOutputType {
  type: 'json_schema';
  /** Default `"final_output"`. */
  name?: string;
  schema: JsonSchema;
  /** Default `true`. */
  strict?: boolean;
}

/** What a guardrail returns. */
export interface GuardrailFunctionOutput {
  tripwireTriggered: boolean;
  outputInfo?: unknown;
  /** Any other field a guardrail returns is kept in its result, as it returned it. */
  [key: string]: unknown;
}

/** Runs before the first model call of a run that starts with the agent; a triggered tripwire
 * rejects the run with `InputGuardrailTripwireTriggered` and saves nothing. */
export interface InputGuardrail<TContext = unknown> {
  name: string;
  /** `input`: the history and the new input, as sent to the model. */
  execute(args: { input: Item[]; context: TContext; agent: Agent<TContext, unknown> }): GuardrailFunctionOutput | Promise<GuardrailFunctionOutput>;
}

/** Runs on the final output of the agent; a triggered tripwire rejects the run with
 * `OutputGuardrailTripwireTriggered`, and the answer is not saved. */
export interface OutputGuardrail<TContext = unknown> {
  name: string;
  /** `output` (and `agentOutput`, the SDK's name): the final output, parsed where the agent
   * has an `outputType`. */
  execute(args: { output: unknown; agentOutput: unknown; context: TContext; agent: Agent<TContext, unknown> }): GuardrailFunctionOutput | Promise<GuardrailFunctionOutput>;
}

/** What a handoff's `inputFilter` gets and returns: what the next agent is sent. */
export interface HandoffInputData {
  /** The history and the run's input. */
  inputHistory: Item[];
  /** What the run produced before the model response that handed off. */
  preHandoffItems: Item[];
  /** That response's items, the handoff's call and output included. */
  newItems: Item[];
  /** The run's `context`, where the SDK's filters read it (`runContext.context`). */
  runContext?: { context: unknown };
}

/** A handoff with options; a bare `Agent` in `handoffs` takes the defaults. */
export interface Handoff {
  agent: Agent<unknown, unknown>;
  /** Default `transfer_to_<name>` (every character but ASCII letters and digits made `_`). */
  toolName?: string;
  /** The SDK's `handoff()` name for `toolName`. */
  toolNameOverride?: string;
  /** Default `Handoff to the <name> agent to handle the request. <handoffDescription>`. */
  toolDescription?: string;
  /** The SDK's `handoff()` name for `toolDescription`. */
  toolDescriptionOverride?: string;
  /** Changes what the next agent is sent; the session still keeps the whole turn. */
  inputFilter?: (data: HandoffInputData) => HandoffInputData | Promise<HandoffInputData>;
}

/** A JSON Schema object describing a tool's arguments. */
export type JsonSchema = { [key: string]: unknown };

/** A function tool the model can call; `execute` runs in the page. */
export interface FunctionTool<TArgs = { [key: string]: unknown }, TContext = unknown> {
  name: string;
  description?: string;
  /** JSON Schema of the arguments; default: an object with no declared properties. */
  parameters?: JsonSchema;
  /** Whether the model must follow `parameters` exactly (the API's strict mode, which needs
   * every property in `required` and `additionalProperties: false`); default `false`, sent as
   * such to the Responses API, which would otherwise make the tool strict. */
  strict?: boolean;
  /** Runs the tool. A string result is sent to the model as is, a {@link ToolOutput} (or an
   * array of them) as the image, file or text it stands for, anything else as JSON. A throw
   * is reported to the model as the tool's output and the run goes on: the SDK's fixed message
   * ("An error occurred while running the tool. Please try again."), or what `errorFunction`
   * returns. */
  execute(args: TArgs, context: TContext, details: ToolCallDetails): unknown;
  /** What the model is told (and the session keeps) when `execute` throws, as in the SDK: text,
   * or the JSON of anything else it gives; the error itself is never sent unless this returns
   * it. One that throws gives the fixed message; `null` is none.
   * (Written as a method type, as `needsApproval` is.) */
  errorFunction?: { tell(context: TContext, error: unknown): unknown }['tell'] | null;
  /** Pause the run for a human decision before the tool runs: always, or when this says so.
   * (Written as a method type so tools with specific argument types fit `AgentOptions.tools`.) */
  needsApproval?:
    | boolean
    | { check(context: TContext, args: TArgs, callId: string): boolean | Promise<boolean> }['check'];
}

/** A tool's text, as a structured output. */
export interface ToolOutputText {
  type: 'text';
  text: string;
}

/** A tool's image, given to the model as an image: a URL or data URL, `{ url }`, `{ data,
 * mediaType }` (`data` in base64) or an uploaded file's `{ fileId }`. */
export interface ToolOutputImage {
  type: 'image';
  image: string | { url: string } | { data: string; mediaType?: string } | { fileId: string };
  detail?: 'low' | 'high' | 'auto' | (string & {});
}

/** A tool's file, given to the model as a file: a URL or data URL, `{ url, filename? }`, `{ data,
 * mediaType, filename }` (`data` in base64) or an uploaded file's `{ id }`. */
export interface ToolOutputFile {
  type: 'file';
  file:
    | string
    | { url: string; filename?: string }
    | { data: string; mediaType: string; filename: string }
    | { id: string; filename?: string };
}

/** What a tool may return to give the model an image, a file or text parts (the SDK 0.20's
 * structured tool outputs). */
export type ToolOutput = ToolOutputText | ToolOutputImage | ToolOutputFile;

/** The third argument of a tool's `execute`. */
export interface ToolCallDetails {
  callId: string;
  /** The call, as the SDK gives it (`toolCall`): the `function_call` item, as the session
   * stores it. */
  toolCall: { type: 'function_call'; callId: string; name: string; arguments: string; [key: string]: unknown };
  /** The session's state (`getInfo().state`, kept current by `update_session_state`), where the
   * run reads it (`addStateToContext`, `addSummaryToContext` or `agenticState`); else `null`. */
  sessionState: { [key: string]: unknown } | null;
  /** The run's `signal`, when it has one: a tool that takes long can stop when the run is
   * aborted (the run waits for the tools it started, and rejects once they settled). */
  signal?: AbortSignal;
}

/** What a run does with its session's metadata, Agno style. The agent's options are the
 * default; a run's options override them one by one. */
export interface SessionMetadataOptions {
  /** After a finished turn, in the background, the model updates the session's summary and
   * topics (`update({ summary, topics })`): after every turn (`true`) or every `everyTurns`. */
  summaries?: boolean | { everyTurns?: number };
  /** Put the session's summary into the instructions, in a `<session_summary>` block. */
  addSummaryToContext?: boolean;
  /** After the first turn, in the background, the model titles the session (at most 6 words);
   * a chat whose first turn got no title (stopped, failed) after a later one of its first 3
   * turns, while its title is still the default one (or none, where its first message had no
   * text). */
  autoTitle?: boolean;
  /** Put the session's state into the instructions, in a `<session_state>` block. */
  addStateToContext?: boolean;
  /** Give the model the tool `update_session_state({ updates })`: a shallow merge into the
   * session's state, stored at once. */
  agenticState?: boolean;
}

export interface AgentOptions<TContext = unknown> extends SessionMetadataOptions {
  name: string;
  /** A text, or a function called before every model call of the agent. */
  instructions?: string | ((context: TContext, agent: Agent<TContext, unknown>) => string | Promise<string>);
  /** Tells other agents' models when to hand off to this one. */
  handoffDescription?: string;
  /** Agents the model can hand the conversation to, each offered as a tool. */
  handoffs?: (Agent<unknown, unknown> | Handoff)[];
  /** `'text'` (the default) or a JSON schema for the final answer. */
  outputType?: 'text' | JsonSchemaOutputType;
  inputGuardrails?: InputGuardrail<TContext>[];
  outputGuardrails?: OutputGuardrail<TContext>[];
  /** After the tools of a response ran: call the model again (the default), or end the run
   * with the (first listed) tool's output as the final answer. */
  toolUseBehavior?: 'run_llm_again' | 'stop_on_first_tool' | { stopAtToolNames: string[] };
  /** The model name the server knows, such as `"gpt-4.1-mini"` or `"llama3.2"`. */
  model?: string;
  modelSettings?: ModelSettings;
  /** `false`: its `toolChoice` stays forced after it used a tool (default `true`, as the SDK's). */
  resetToolChoice?: boolean;
  tools?: FunctionTool<{ [key: string]: unknown }, TContext>[];
  /** Agno's past sessions: the tools `search_past_sessions(query?)` (the user's `count` most
   * recent other sessions, or those matching `query`, each with previews of up to
   * `turnsPerSession` turns) and `read_past_session(session_id, num_turns?)` (a transcript), both
   * scoped to the run's session's user. `true`: `{ count: 5, turnsPerSession: 3 }`. */
  pastSessions?: boolean | { count?: number; turnsPerSession?: number };
}

/** A model server that speaks an OpenAI wire API. */
export interface RunnerOptions {
  /** The API's base URL, such as `"https://api.openai.com/v1"` or `"http://localhost:11434/v1"`. */
  baseUrl: string;
  /** Sent only as `Authorization: Bearer …` to `baseUrl`; never stored. */
  apiKey?: string;
  /** Default `"chat_completions"`, which every compatible server speaks. */
  api?: 'chat_completions' | 'responses';
  headers?: { [name: string]: string };
  /** A `fetch` to use instead of the global one: called as `fetch(url, init)`, it must resolve to a `Response`.
   * `init.headers` is a plain object of lower-case names, one value each (`apiKey`'s
   * `authorization` over one in `headers`). */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Retries of a 408, 409, 429 or 5xx answer, with backoff that honours `Retry-After`. Default 2. */
  retries?: number;
  /** How long a model call waits on the server, each time: for its answer to begin, for a whole
   * answer's body, or for each next piece of a stream; then it fails with a `ModelError` (not
   * retried). Default 600,000 ms (10 minutes). */
  timeoutMs?: number;
}

/** Anything with the session methods: our sessions, the SDK's, or your own. */
export interface SessionLike {
  getItems(limit?: number): Promise<object[]>;
  addItems(items: object[]): Promise<void>;
}

/** A whole session, as the SDK's `Session`: what a `CompactionSession` wraps. */
export interface SessionProtocol extends SessionLike {
  getSessionId(): Promise<string>;
  popItem(): Promise<unknown>;
  clearSession(): Promise<void>;
}

export interface RunOptions<TContext = unknown> extends SessionMetadataOptions {
  session?: SessionLike;
  /** The history this run reads: the newest `turns` whole turns (through `getRecentTurns`
   * where the session has it), else the newest `limit` items; `turns` wins over `limit`.
   * Without it the session's own `getItems()` (and its settings) decide. On the Responses API
   * a window of items is read with one more (`getItems(limit + 1)`), and the items it begins
   * with of a response begun before it are left out. */
  sessionSettings?: SessionSettings;
  /** Builds the model input from the history and the new items (both copies). Items it adds
   * are saved with the turn; history it repeats is not saved again. Not called without a
   * `session`, as in the SDK. */
  sessionInputCallback?: (history: Item[], newItems: Item[]) => Item[] | Promise<Item[]>;
  /** Model calls allowed in this run; default 10; `null` or `Infinity`: no limit, as in the SDK. */
  maxTurns?: number | null;
  signal?: AbortSignal;
  /** One run at a time per session stored in IndexedDB, across the tabs and workers of the
   * origin (a Web Lock named after the database and the session, held for the whole run):
   * `'wait'` (the default) waits for the run before it, `'fail'` rejects at once with
   * `SESSION_BUSY`, `false` takes none. Where Web Locks are missing, runs are not locked. Every
   * run also holds a lock of its own name, granted at once, whose end a `CompactionSession`'s
   * compaction waits for. */
  lock?: 'wait' | 'fail' | boolean;
  /** Passed to tools' `execute` and `needsApproval`, instructions, guardrails and listeners. A
   * run resumed from the `state` a run gave, without one, gets that run's. */
  context?: TContext;
  /** Server-side conversation state (Responses API); not together with `session`. */
  previousResponseId?: string;
  conversationId?: string;
}

export interface Usage {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** A tool call waiting for `state.approve()` or `state.reject()`. */
export interface ToolApprovalItem {
  type: 'tool_approval_item';
  callId: string;
  name: string;
  /** The arguments as the model wrote them (a JSON string). */
  arguments: string;
  rawItem: Item;
  /** The agent whose tool it is (the SDK's `interruption.agent`: `interruption.agent.name`). */
  agent: Agent<unknown, unknown>;
}

export interface RunResult<TOutput = string> {
  /** The final answer (parsed, for an agent with an `outputType`); `undefined` while the run
   * waits for approvals. */
  finalOutput: TOutput | undefined;
  /** The agent that gave the answer (or waits for approvals): another than the run's after a
   * handoff. */
  lastAgent: Agent<unknown, unknown>;
  /** `lastAgent`, by the SDK's other name of it. */
  activeAgent: Agent<unknown, unknown>;
  /** Everything the run produced (model output, tool calls and outputs), in order. */
  newItems: Item[];
  /** As the SDK's `output`: `newItems` as items (the SDK's `newItems` wrap them), a copy. */
  output: Item[];
  /** What the run's first model call was sent, as the SDK's `input`: the session's history it
   * read and the new input (or what `sessionInputCallback` made of them; the new input alone in
   * a conversation the server keeps). */
  input: Item[];
  /** `input` and then `newItems`, as the SDK's `history`: the conversation, to show or to run
   * again without a session. */
  history: Item[];
  usage: Usage;
  lastResponseId: string | undefined;
  interruptions: ToolApprovalItem[];
  /** The state to resume from after approvals; `state.toString()` survives a reload. */
  state: RunState;
  /** The results of the input guardrails that ran and let the run go on (one that tripped
   * ended it: its result is in the error), as the SDK's; none in a resumed run, which does not
   * check its input again (the SDK's carries the first run's in its state). */
  inputGuardrailResults: InputGuardrailResult[];
  /** The results of the output guardrails that checked the final answer, as the SDK's. */
  outputGuardrailResults: OutputGuardrailResult[];
  /** The work the run leaves for after its answer (a title, a summary, compaction where the
   * session compacts), started once the result is delivered. Never rejects: it reports what went wrong. */
  background: Promise<BackgroundReport>;
}

export interface BackgroundReport {
  /** The title the model gave the session (`autoTitle`, after the first turn, or a later one of
   * the first 3 where the first got none), else `null`. */
  title: string | null;
  /** The summary the model wrote (`summaries`), else `null`. */
  summary: string | null;
  /** What `session.runCompaction()` did after the turn (`null`: nothing, or no compaction): a
   * `CompactionResult` from this package's `CompactionSession`; another session's as it
   * returned it (the SDK's compaction sessions give `{ usage }`). */
  compaction: CompactionResult | { [key: string]: unknown } | null;
  /** What the title and summary requests cost, as the server reported it (a failed request
   * too, where its response said); zero where none was made. A compaction's is in its own
   * report. Not stored with the turn's usage: `getSessionUsage` counts the runs only. */
  usage: Usage;
  /** What failed in the background; the turn already saved is untouched. */
  errors: Error[];
}

export interface CompactionContext {
  /** The candidates among the items a compaction would replace (for a summary, those before
   * the `keepTurns` turns it keeps): all but user messages and earlier compactions. */
  candidateItems: Item[];
  /** The same list, under the name the SDK's compaction gives it. */
  compactionCandidateItems: Item[];
  sessionItems: Item[];
}

/** What `CompactionSession` takes: the model that compacts is `model`, else `agent`'s, so one
 * of the two is needed (without either: `INVALID_COMPACTION`). */
export type CompactionSessionOptions = CompactionSessionSettings &
  ({ agent: Agent<unknown, unknown>; model?: string } | { agent?: Agent<unknown, unknown>; model: string });

/** The options of `CompactionSession` beside its model. */
export interface CompactionSessionSettings {
  /** Whose server compacts (its `baseUrl`, `apiKey`, `fetch`...). */
  runner: Runner;
  /** `'summary'` (default, any chat model): the model summarises everything but the newest
   * `keepTurns` turns into one system item. `'responses'`: `POST /responses/compact` (OpenAI). */
  strategy?: 'summary' | 'responses';
  /** Turns a summary keeps as they are; default 2. */
  keepTurns?: number;
  /** Move the replaced items to the session's archive; default `true`. */
  archive?: boolean;
  /** When to compact; default: at least 10 candidates (the SDK's rule). Over a session without
   * `replaceHistory` (but ours), the compaction holds the session's calls: read the items it is
   * given, not the session (a call would wait for good). */
  shouldCompact?: (context: CompactionContext) => boolean | Promise<boolean>;
  /** The SDK's name for `shouldCompact`, taken when that is not given. */
  shouldTriggerCompaction?: (context: CompactionContext) => boolean | Promise<boolean>;
}

/** What a compaction did. `usage` has the shape of the SDK's `RequestUsage` (what its
 * compaction result holds; the token details are empty). */
export interface CompactionResult {
  itemsBefore: number;
  itemsAfter: number;
  usage: Usage & {
    inputTokensDetails: Record<string, number>;
    outputTokensDetails: Record<string, number>;
  };
}

/**
 * A session that compacts its history with a model, wrapping any session (its calls pass
 * through). `runCompaction()` compacts when the trigger says so (always with `force`); this
 * package's runner calls it after each finished turn, in the background, and so does the SDK's
 * `run()`. Over this package's sessions the replacement is one transaction, refused if the
 * history changed meanwhile (whole turns added meanwhile go after the compacted history, written
 * again), and the replaced items move to the archive (over a
 * `SyncedSession`, on the device, the remote following on the next round). A conversation the
 * Conversations API keeps (`OpenAIConversationsSession`, ours or the SDK's) is refused
 * (`INVALID_SESSION`): a compaction would clear it, deleting the conversation on every device.
 */
export class CompactionSession {
  constructor(inner: SessionProtocol, options: CompactionSessionOptions);
  /** The wrapped session's id, database and owner, where it has them: a run on this session
   * holds the wrapped session's cross-tab lock (`sessionLockName`). */
  readonly sessionId: string | undefined;
  readonly dbName: string | undefined;
  readonly userId: string | null | undefined;
  getSessionId(): Promise<string>;
  getItems<T extends object = Item>(limit?: number | null): Promise<T[]>;
  addItems(items: readonly object[]): Promise<void>;
  popItem<T extends object = Item>(): Promise<T | undefined>;
  clearSession(): Promise<void>;
  /** `null` when nothing was done: not due or nothing to replace, or refused because the history
   * was written to since it was read other than by whole turns added after it (or so three times
   * over), or its branch was deleted or the session closed meanwhile (nothing changed; the next
   * turn compacts again). Whole turns added meanwhile go after the compacted history,
   * and `itemsBefore` and `itemsAfter` count them. It first waits for the runs of this
   * package's runner under way on the session, in any tab: do not await it inside one of them
   * (a tool of it). */
  runCompaction(args?: { force?: boolean }): Promise<CompactionResult | null>;
  /** The archive of the wrapped session (`[]` where it keeps none). */
  getArchivedItems<T extends object = Item>(options?: ArchiveWindow): Promise<T[]>;
}

/** An item of a streamed run as the SDK's `run_item_stream_event` gives it (its `RunItem`s). */
export type RunItem =
  | { type: 'message_output_item'; rawItem: Item; agent: Agent<unknown, unknown>; /** The message's text. */ readonly content: string }
  | { type: 'reasoning_item'; rawItem: Item; agent: Agent<unknown, unknown> }
  | { type: 'tool_call_item' | 'handoff_call_item'; rawItem: Item; agent: Agent<unknown, unknown>; callId: string | undefined; toolName: string | undefined }
  | {
      type: 'tool_call_output_item';
      rawItem: Item;
      agent: Agent<unknown, unknown>;
      callId: string | undefined;
      toolName: string | undefined;
      /** The output as the model gets it: the tool's text (what it returned, as a string or its
       * JSON), or its parts (`rawItem.output`). The SDK's is what the tool returned. */
      output: unknown;
    }
  | { type: 'handoff_output_item'; rawItem: Item; sourceAgent: Agent<unknown, unknown>; targetAgent: Agent<unknown, unknown> }
  | ToolApprovalItem;

/** The SDK's stream events, each given after the event of this runner it comes from. */
export type SdkStreamEvent =
  | { type: 'raw_model_stream_event'; data: { type: 'output_text_delta'; delta: string } }
  | {
      type: 'run_item_stream_event';
      name: 'message_output_created' | 'tool_called' | 'tool_output' | 'handoff_requested' | 'handoff_occurred' | 'reasoning_item_created' | 'tool_approval_requested';
      item: RunItem;
    }
  | { type: 'agent_updated_stream_event'; agent: Agent<unknown, unknown> };

export type RunStreamEvent =
  | SdkStreamEvent
  | { type: 'text_delta'; delta: string }
  | { type: 'item_added'; item: Item; agent: Agent<unknown, unknown> }
  | { type: 'tool_call'; item: Item; agent: Agent<unknown, unknown>; /** Whether the call is the handoff the run takes (a response's first). */ handoff: boolean }
  | { type: 'tool_output'; item: Item; agent: Agent<unknown, unknown>; /** `true` on the output of the handoff taken, given just before `handoff`. */ handoff?: true }
  | { type: 'agent_start'; agent: Agent<unknown, unknown>; turnInput: Item[] }
  | { type: 'agent_end'; agent: Agent<unknown, unknown>; output: unknown }
  | { type: 'handoff'; from: Agent<unknown, unknown>; to: Agent<unknown, unknown> }
  | { type: 'tool_start'; agent: Agent<unknown, unknown>; tool: FunctionTool<{ [key: string]: unknown }, unknown>; item: Item }
  | { type: 'tool_end'; agent: Agent<unknown, unknown>; tool: FunctionTool<{ [key: string]: unknown }, unknown>; item: Item; output: string }
  | { type: 'tool_approval_requested'; agent: Agent<unknown, unknown>; item: ToolApprovalItem }
  | { type: 'done'; result: RunResult<unknown> };

/** The lifecycle events of `runner.on`, with their listeners' arguments (the SDK's names and
 * order; the first argument is the run's `context`). */
export interface RunnerEvents {
  agent_start: [context: unknown, agent: Agent<unknown, unknown>, turnInput: Item[]];
  agent_end: [context: unknown, agent: Agent<unknown, unknown>, output: unknown];
  handoff: [context: unknown, from: Agent<unknown, unknown>, to: Agent<unknown, unknown>];
  agent_handoff: [context: unknown, from: Agent<unknown, unknown>, to: Agent<unknown, unknown>];
  tool_start: [context: unknown, agent: Agent<unknown, unknown>, tool: FunctionTool<{ [key: string]: unknown }, unknown>, details: { toolCall: Item }];
  agent_tool_start: [context: unknown, agent: Agent<unknown, unknown>, tool: FunctionTool<{ [key: string]: unknown }, unknown>, details: { toolCall: Item }];
  tool_end: [context: unknown, agent: Agent<unknown, unknown>, tool: FunctionTool<{ [key: string]: unknown }, unknown>, result: string, details: { toolCall: Item }];
  agent_tool_end: [context: unknown, agent: Agent<unknown, unknown>, tool: FunctionTool<{ [key: string]: unknown }, unknown>, result: string, details: { toolCall: Item }];
}

/** A streamed run: iterate it for events; `result` settles when the run ends. Leaving the
 * loop before the run ended (`break`) cancels the run, as the SDK's stream does: `result`
 * rejects with an `AbortError`, `completed` resolves. */
export interface StreamedRun<TOutput = string> extends AsyncIterable<RunStreamEvent> {
  readonly result: Promise<RunResult<TOutput>>;
  /** As the SDK's: settles when the run has ended, rejecting with its error (resolving when
   * the stream's exit cancelled the run). */
  readonly completed: Promise<void>;
  /** Whether leaving the loop (or cancelling `toTextStream()`) cancelled the run. */
  readonly cancelled: boolean;
  /** The run's error once it failed, else `null` (also when the stream cancelled it). */
  readonly error: unknown;
  /** The final output once the run has ended (`undefined` before, or after a failure). */
  readonly finalOutput: TOutput | undefined;
  /** As `result`'s, once the run has ended (`undefined` before, or after a failure; but
   * `interruptions`, `[]` after a failure), under the SDK's names: its approval loop
   * (`while (stream.interruptions.length)`) reads `interruptions` and `state` from the stream. */
  readonly interruptions: ToolApprovalItem[] | undefined;
  readonly state: RunState | undefined;
  readonly lastAgent: Agent<unknown, unknown> | undefined;
  readonly activeAgent: Agent<unknown, unknown> | undefined;
  readonly newItems: Item[] | undefined;
  readonly output: Item[] | undefined;
  readonly inputGuardrailResults: InputGuardrailResult[] | undefined;
  readonly outputGuardrailResults: OutputGuardrailResult[] | undefined;
  readonly history: Item[] | undefined;
  readonly lastResponseId: string | undefined;
  /** The answer's text deltas as a stream, read from the same events as the loop (use one or
   * the other); cancelling it cancels the run, as leaving the loop does. */
  toTextStream(): ReadableStream<string>;
  /** The stream's events as a `ReadableStream` (the SDK's `toStream()`): read it or iterate the
   * stream, not both; cancelling it cancels the run. */
  toStream(): ReadableStream<RunStreamEvent>;
}

/** The errors of a run. `ModelError` carries the HTTP `status` (0 when none arrived). */
export interface ModelError extends Error {
  name: 'ModelError';
  code: 'MODEL_ERROR';
  status: number;
  serverMessage: string;
  /** The code the server gave the failure, where it gave one (`rate_limit_exceeded`,
   * `insufficient_quota`, `server_error`; an HTTP status as a string where a stream's error
   * gave a number). */
  serverCode?: string;
  /** The wait the server's `Retry-After` asked, in ms, where it gave one (an
   * `OpenAIConversationsSession` request's error). */
  retryAfter?: number;
  /** Where the run stopped: resume from it with `runner.run(agent, error.state, ...)`; tools
   * whose output it already holds are not run again. Absent if the run had not started. */
  state?: RunState;
}

/** The final answer does not parse, or does not match the agent's `outputType`; the answer is
 * not saved (the input is, and, in every session, the run's tool calls and outputs before it). */
export interface ModelBehaviorError extends Error {
  name: 'ModelBehaviorError';
  code: 'MODEL_BEHAVIOR';
  /** The answer as the model wrote it. */
  rawOutput: string;
}

/** The model's answer is a refusal and no text, as the SDK's `ModelRefusalError`; the answer is
 * not saved (the input is, and, in every session, the run's tool calls and outputs before it). */
export interface ModelRefusalError extends Error {
  name: 'ModelRefusalError';
  code: 'MODEL_REFUSAL';
  /** What the model refused with. */
  refusal: string;
  /** Where the run stopped, as the SDK's: resumed, the model is asked again. */
  state?: RunState;
}

/** An input guardrail's result, as the SDK's: `output` what its `execute` returned. */
export interface InputGuardrailResult {
  guardrail: { type: 'input'; name: string };
  output: GuardrailFunctionOutput;
}

/** An output guardrail's result, as the SDK's: with the agent and the answer it checked. */
export interface OutputGuardrailResult {
  guardrail: { type: 'output'; name: string };
  output: GuardrailFunctionOutput;
  agent: Agent<unknown, unknown>;
  agentOutput: unknown;
}

/** An input guardrail's tripwire was triggered; nothing of the run was saved. */
export interface InputGuardrailTripwireTriggered extends Error {
  name: 'InputGuardrailTripwireTriggered';
  code: 'INPUT_GUARDRAIL_TRIPWIRE';
  result: InputGuardrailResult;
}

/** An output guardrail's tripwire was triggered; the blocked answer was not saved. */
export interface OutputGuardrailTripwireTriggered extends Error {
  name: 'OutputGuardrailTripwireTriggered';
  code: 'OUTPUT_GUARDRAIL_TRIPWIRE';
  result: OutputGuardrailResult;
}

export interface MaxTurnsExceededError extends Error {
  name: 'MaxTurnsExceededError';
  code: 'MAX_TURNS_EXCEEDED';
  maxTurns: number;
  /** Where the run stopped; resume from it (with a larger `maxTurns`) to go on. */
  state?: RunState;
}


export interface RunnerError extends Error {
  name: 'RunnerError';
  code: RunnerErrorCode;
}

/** An agent. `TOutput` is the type of `finalOutput` of a run that starts with it: `string`, or
 * what its `outputType` schema describes; for a run that may end with another agent after a
 * handoff, the union of what they answer. */
export class Agent<TContext = unknown, TOutput = string> {
  constructor(options: AgentOptions<TContext>);
  readonly name: string;
  readonly model: string | undefined;
  /** Its `modelSettings`, as given. */
  readonly modelSettings: ModelSettings | undefined;
  /** The handoffs as given, a frozen list; set a new list to change them (all or none are
   * taken). */
  get handoffs(): readonly (Agent<unknown, unknown> | Handoff)[];
  set handoffs(value: readonly (Agent<unknown, unknown> | Handoff)[]);
  free(): void;
}

export class Runner {
  constructor(options: RunnerOptions);
  /** With `stream: true`, as the SDK's `run`: resolves to the run's stream (`runStreamed`). */
  run<TContext = unknown, TOutput = string>(agent: Agent<TContext, TOutput>, input: string | readonly object[] | RunState, options: RunOptions<TContext> & { stream: true }): Promise<StreamedRun<TOutput>>;
  run<TContext = unknown, TOutput = string>(agent: Agent<TContext, TOutput>, input: string | readonly object[] | RunState, options?: RunOptions<TContext> & { stream?: false }): Promise<RunResult<TOutput>>;
  runStreamed<TContext = unknown, TOutput = string>(agent: Agent<TContext, TOutput>, input: string | readonly object[] | RunState, options?: RunOptions<TContext>): StreamedRun<TOutput>;
  /** Calls `listener` on each such event of this runner's runs (a listener that throws is
   * reported to the page; the run goes on). */
  on<K extends keyof RunnerEvents>(name: K, listener: (...args: RunnerEvents[K]) => void): this;
  off<K extends keyof RunnerEvents>(name: K, listener: (...args: RunnerEvents[K]) => void): this;
  free(): void;
}

/** A paused (or finished) run. Holds no credential. */
export class RunState {
  /** Made by a run (`result.state`, `error.state`) or read back with `fromString`. */
  private constructor();
  static fromString(agent: Agent<unknown, unknown>, text: string): RunState;
  readonly kind: 'agent-sessions.RunState';
  getInterruptions(): ToolApprovalItem[];
  /** Approves the call (`options` as the SDK's; a standing approval, `alwaysApprove: true`, is
   * refused: each call is decided by itself). */
  approve(item: ToolApprovalItem | string, options?: { alwaysApprove?: false }): void;
  /** Rejects the call; the model is told `message` (the SDK's `{ message }` too). */
  reject(item: ToolApprovalItem | string, message?: string | { message?: string; alwaysReject?: false }): void;
  toString(): string;
  /** The state as JSON data, as the SDK's: `JSON.stringify(state)` (or of an object holding it)
   * writes the string `toString()` gives. */
  toJSON(): { [key: string]: unknown };
  free(): void;
}
"#;

#[wasm_bindgen(skip_typescript)]
pub struct Agent {
    spec: Rc<AgentSpec>,
}

#[wasm_bindgen]
impl Agent {
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Agent, JsValue> {
        let spec = parse_agent(&options).map_err(|e| coded_error(&e))?;
        Ok(Agent {
            spec: Rc::new(spec),
        })
    }

    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.spec.name.clone()
    }

    /// The model name, `undefined` when none was given.
    #[wasm_bindgen(getter)]
    pub fn model(&self) -> Option<String> {
        self.spec.model.clone()
    }

    /// Adds a handoff to `target` (whose JS `Agent` is `target_object`), with the options of a
    /// `{ agent, toolName?, toolDescription?, inputFilter? }` entry. js/runner.js has checked
    /// that `target` is an Agent it made.
    #[wasm_bindgen(js_name = addHandoff)]
    pub fn add_handoff(
        &self,
        target: &Agent,
        target_object: JsValue,
        options: JsValue,
        index: usize,
    ) -> Result<(), JsValue> {
        let handoff = parse_handoff(
            &self.spec,
            target.spec.clone(),
            target_object,
            &options,
            index,
        )
        .map_err(|e| coded_error(&e))?;
        self.spec.handoffs.borrow_mut().push(handoff);
        Ok(())
    }

    /// Removes every handoff (before js/runner.js sets a new list).
    #[wasm_bindgen(js_name = clearHandoffs)]
    pub fn clear_handoffs(&self) {
        self.spec.handoffs.borrow_mut().clear();
    }
}

#[wasm_bindgen(skip_typescript)]
pub struct Runner {
    client: Rc<ModelClient>,
}

impl Runner {
    fn start(
        &self,
        agent: &Agent,
        input: &JsValue,
        options: &JsValue,
        on_event: Option<Function>,
        stream: bool,
        agent_object: JsValue,
    ) -> Promise {
        let parsed = runner::check_agents(&agent.spec, &agent_object)
            .and_then(|()| parse_input(input))
            .and_then(|i| parse_run_options(options, stream).map(|o| (i, o)))
            .and_then(|(i, o)| check_input(self.client.api, &i, &o).map(|()| (i, o)));
        let (input, options) = match parsed {
            Ok(p) => p,
            Err(e) => return Promise::reject(&coded_error(&e)),
        };
        let client = self.client.clone();
        let spec = agent.spec.clone();
        js_promise(Box::pin(async move {
            let run = runner::run(
                &client,
                &spec,
                agent_object.clone(),
                input,
                &options,
                on_event.as_ref(),
            );
            match run.await {
                Ok(RunOutcome {
                    state,
                    last_agent,
                    interruptions,
                    metadata,
                    guardrail_results,
                }) => {
                    let mut turn = state.turn_input.clone();
                    turn.extend(state.new_items().iter().cloned());
                    let background = AfterTurn {
                        client: client.clone(),
                        agent: spec.clone(),
                        session: options.session.clone(),
                        metadata,
                        turn,
                        finished: interruptions.is_empty(),
                    }
                    .start();
                    let state_object = RunState::wrap(state.clone(), last_agent.clone());
                    Ok(result_object(
                        &state,
                        &interruptions,
                        state_object,
                        background.into(),
                        last_agent,
                        guardrail_results,
                    ))
                }
                Err(failure) => {
                    // Wrong use is not resumed; every other failure after the start carries where
                    // the run stopped (on an error object, even one the session threw).
                    let resumable = !matches!(
                        failure.error,
                        RunError::Usage(_)
                            | RunError::ModelBehavior { .. }
                            | RunError::Tripwire { .. }
                    );
                    let error = run_error(failure.error);
                    match (resumable, failure.state) {
                        (true, Some(state)) => {
                            let agent = waiting_agent(&spec, agent_object, &state);
                            Err(with_state(error, &RunState::wrap(state, agent)))
                        }
                        _ => Err(error),
                    }
                }
            }
        }))
    }
}

#[wasm_bindgen]
impl Runner {
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Runner, JsValue> {
        let client = parse_runner(&options).map_err(|e| coded_error(&e))?;
        Ok(Runner {
            client: Rc::new(client),
        })
    }

    /// A run; `on_event` (js/runner.js's dispatcher) receives its lifecycle events, and
    /// `agent_object` is the JS `Agent` that `agent` is (what events and `lastAgent` name).
    pub fn run(
        &self,
        agent: &Agent,
        input: JsValue,
        options: JsValue,
        on_event: Option<Function>,
        agent_object: JsValue,
    ) -> Promise {
        self.start(agent, &input, &options, on_event, false, agent_object)
    }

    /// The compaction of `new CompactionSession(inner, options)` on this runner's server
    /// (js/runner.js has checked that `options.runner` is this Runner).
    #[wasm_bindgen(js_name = compactionEngine)]
    pub fn compaction_engine(
        &self,
        inner: JsValue,
        options: JsValue,
    ) -> Result<CompactionEngine, JsValue> {
        let compactor =
            parse_compaction(&inner, &options, self.client.clone()).map_err(|e| coded_error(&e))?;
        Ok(CompactionEngine {
            compactor: Rc::new(compactor),
        })
    }

    /// A streamed run: `on_event` receives each event; the promise settles with the result.
    /// `runStreamed` (js/runner.js) turns the events into an async iterator.
    #[wasm_bindgen(js_name = startStreamed)]
    pub fn start_streamed(
        &self,
        agent: &Agent,
        input: JsValue,
        options: JsValue,
        on_event: Function,
        agent_object: JsValue,
    ) -> Promise {
        self.start(agent, &input, &options, Some(on_event), true, agent_object)
    }
}

/// `options.runner` of `new CompactionSession(inner, options)`, for js/runner.js to check.
#[wasm_bindgen(js_name = compactionRunner, skip_typescript)]
pub fn compaction_runner(options: JsValue) -> Result<JsValue, JsValue> {
    run_options::compaction_runner(&options).map_err(|e| coded_error(&e))
}

/// The error for a `runner` option that is not a `Runner` of this module.
#[wasm_bindgen(js_name = notARunner, skip_typescript)]
pub fn not_a_runner(value: JsValue) -> JsValue {
    coded_error(&RunnerError::new(
        RunnerErrorCode::InvalidCompaction,
        format!(
            "options.runner must be a Runner made with new Runner(...), got {}",
            describe(&value)
        ),
    ))
}

/// The error for a run with `lock: 'fail'` on a session another run holds (js/runner.js).
#[wasm_bindgen(js_name = sessionBusy, skip_typescript)]
pub fn session_busy(session_id: String) -> JsValue {
    coded_error(&RunnerError::new(
        RunnerErrorCode::SessionBusy,
        format!(
            "session \"{session_id}\" is running in another run (in this tab or another); \
             with lock: 'fail' a run does not wait for it"
        ),
    ))
}

/// What runs a `CompactionSession`'s compactions (js/runner.js holds one per session).
#[wasm_bindgen(skip_typescript)]
pub struct CompactionEngine {
    compactor: Rc<Compactor>,
}

#[wasm_bindgen]
impl CompactionEngine {
    /// Compacts `session` if the trigger says so, or always with `args.force`: the result, or
    /// `null` when nothing was done.
    pub fn run(&self, session: JsValue, args: JsValue) -> Promise {
        let force = args.is_object()
            && crate::backend::js::get(&args, "force").is_ok_and(|f| f.as_bool() == Some(true));
        let compactor = self.compactor.clone();
        js_promise(Box::pin(async move {
            match compactor.run(&session, force).await {
                Ok(Some(done)) => Ok(done.to_js()),
                Ok(None) => Ok(JsValue::NULL),
                Err(e) => Err(run_error(e)),
            }
        }))
    }
}

/// The error for an `agent` argument that is not an `Agent` of this module (js/runner.js checks
/// before wasm-bindgen's own check, which would throw a bare `Error` synchronously).
#[wasm_bindgen(js_name = notAnAgent, skip_typescript)]
pub fn not_an_agent(value: JsValue) -> JsValue {
    coded_error(&RunnerError::new(
        RunnerErrorCode::InvalidAgent,
        format!(
            "agent must be an Agent made with new Agent(...), got {}",
            describe(&value)
        ),
    ))
}

#[wasm_bindgen(skip_typescript)]
pub struct RunState {
    inner: RefCell<CoreState>,
    /// The JS `Agent` the state waits in (its interruptions' `agent`); `undefined` where unknown.
    agent: JsValue,
}

fn state_error(message: String) -> JsValue {
    coded_error(&RunnerError::new(RunnerErrorCode::InvalidRunState, message))
}

/// Refuses the SDK's standing decision (`key` true in `options`): a decision here is for one
/// call, and taking it silently for more would run (or refuse) later calls unasked.
fn one_call_only(options: &JsValue, key: &'static str) -> Result<(), JsValue> {
    match options.is_object() && crate::backend::js::get(options, key).is_ok_and(|v| v.is_truthy())
    {
        true => Err(state_error(format!(
            "{key} is not supported: each call is approved or rejected by itself"
        ))),
        false => Ok(()),
    }
}

/// The call id an approval refers to: an interruption item, a raw function call, or the id.
fn target_call_id(item: &JsValue) -> Option<String> {
    if let Some(id) = item.as_string() {
        return Some(id);
    }
    ["callId", "call_id"].iter().find_map(|k| {
        js_sys::Reflect::get(item, &(*k).into())
            .ok()
            .and_then(|v| v.as_string())
    })
}

/// The JS `Agent` a state of a run started with `first` (the JS `object`) waits in: that one, or
/// one it hands off to.
fn waiting_agent(first: &Rc<AgentSpec>, object: JsValue, state: &CoreState) -> JsValue {
    let found = state
        .current_agent
        .as_deref()
        .and_then(|name| crate::backend::runner::find_agent(first, &object, name));
    found.map_or(object, |(_, agent)| agent)
}

impl RunState {
    fn wrap(state: CoreState, agent: JsValue) -> JsValue {
        RunState {
            inner: RefCell::new(state),
            agent,
        }
        .into()
    }

    fn decide(&self, item: &JsValue, decision: Decision) -> Result<(), JsValue> {
        let id = target_call_id(item).ok_or_else(|| {
            state_error("approve/reject need an interruption item or its callId".into())
        })?;
        // The item's name and arguments, read before the state is borrowed: a getter of the
        // caller's that calls back into this state (`toString`, a logger) finds it free.
        let given: Vec<(&str, Option<String>)> = ["name", "arguments"]
            .iter()
            .map(|key| {
                let value = js_sys::Reflect::get(item, &(*key).into()).ok();
                (*key, value.and_then(|v| v.as_string()))
            })
            .collect();
        let mut state = self.inner.borrow_mut();
        let pending = state.pending_calls();
        // (A handoff never waits: a decision on it would be taken and never used.)
        let call = pending
            .iter()
            .find(|c| call_id(c) == Some(id.as_str()))
            .filter(|_| !state.handoff_calls.contains(&id));
        // An interruption item of another run names another call under the same id (servers
        // that number calls per response give `call_0` in every run).
        let other = |c: &crate::core::json::Value| {
            given.iter().any(|(key, given)| {
                given
                    .as_deref()
                    .is_some_and(|given| c.get(key).and_then(|v| v.as_str()) != Some(given))
            })
        };
        match call {
            Some(c) if !other(c) => {}
            _ => {
                return Err(state_error(format!(
                    "no tool call \"{id}\" is waiting for approval in this run"
                )))
            }
        }
        state.decisions.insert(id, decision);
        Ok(())
    }
}

#[wasm_bindgen]
impl RunState {
    #[wasm_bindgen(js_name = fromString)]
    /// `agent_object` is the JS `Agent` that `agent` is (js/runner.js gives it).
    pub fn from_string(
        agent: &Agent,
        text: JsValue,
        agent_object: JsValue,
    ) -> Result<RunState, JsValue> {
        let text = text.as_string().ok_or_else(|| {
            state_error(format!(
                "RunState.fromString needs the string that state.toString() gave, got {}",
                describe(&text)
            ))
        })?;
        let state = CoreState::from_json(&text).map_err(|e| state_error(e.to_string()))?;
        state
            .check_agent(&agent.spec.name)
            .map_err(|e| coded_error(&e))?;
        Ok(RunState {
            agent: waiting_agent(&agent.spec, agent_object, &state),
            inner: RefCell::new(state),
        })
    }

    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        RUN_STATE_KIND.to_string()
    }

    #[wasm_bindgen(js_name = getInterruptions)]
    pub fn get_interruptions(&self) -> Array {
        self.inner
            .borrow()
            .interruptions()
            .iter()
            .map(|call| interruption(call, &self.agent))
            .collect()
    }

    pub fn approve(&self, item: JsValue, options: JsValue) -> Result<(), JsValue> {
        one_call_only(&options, "alwaysApprove")?;
        self.decide(&item, Decision::Approved)
    }

    pub fn reject(&self, item: JsValue, message: JsValue) -> Result<(), JsValue> {
        // The SDK's form: `{ message?, alwaysReject? }`.
        let message = match message.is_object() {
            true => {
                one_call_only(&message, "alwaysReject")?;
                crate::backend::js::get(&message, "message").map_err(|e| {
                    state_error(format!(
                        "reject: options.message cannot be read ({})",
                        crate::backend::js::error_text(&e)
                    ))
                })?
            }
            false => message,
        };
        let message = optional_string(&message, "message", SessionErrorCode::InvalidOptions)
            .map_err(|e| state_error(e.message))?;
        self.decide(&item, Decision::Rejected { message })
    }

    #[wasm_bindgen(js_name = toString)]
    pub fn to_string_js(&self) -> String {
        self.inner.borrow().to_json()
    }
}

/// Items a Session was given, as the Conversations API takes them (`js/conversations.js`):
/// checked as every session checks them (`INVALID_ITEM`), then converted.
#[wasm_bindgen(js_name = toConversationItems, skip_typescript)]
pub fn to_conversation_items(items: JsValue) -> Result<JsValue, JsValue> {
    use crate::backend::js::{js_to_json, json_to_js};
    use crate::core::error::SessionError;
    use crate::core::wire::conversation::conversation_input_item;
    let taken = crate::backend::args::take_items(&items).map_err(|e| coded_error(&e))?;
    let converted = Array::new();
    for (i, (item, _)) in taken.iter().enumerate() {
        let what = format!("items[{i}]");
        let value = js_to_json(item, &what)
            .map_err(|m| coded_error(&SessionError::new(SessionErrorCode::InvalidItem, m)))?;
        match conversation_input_item(&value) {
            Ok(Some(item)) => {
                converted.push(&json_to_js(&item));
            }
            // An item the SDK leaves out too: a reasoning item the API could not tie to anything.
            Ok(None) => {}
            Err(why) => {
                return Err(coded_error(&SessionError::new(
                    SessionErrorCode::InvalidItem,
                    format!("{what} cannot be stored in a conversation: {why}"),
                )))
            }
        }
    }
    Ok(converted.into())
}

/// Items the Conversations API listed, in the shapes the SDK keeps (`js/conversations.js`).
#[wasm_bindgen(js_name = fromConversationItems, skip_typescript)]
pub fn from_conversation_items(items: JsValue) -> Result<JsValue, JsValue> {
    use crate::backend::js::{js_to_json, json_to_js};
    use crate::core::wire::conversation::agent_items;
    let listed = js_to_json(&items, "the listed items")
        .map_err(|m| coded_error(&RunnerError::new(RunnerErrorCode::InvalidSession, m)))?;
    Ok(listed
        .as_array()
        .map(|list| {
            list.iter()
                .flat_map(agent_items)
                .map(|i| json_to_js(&i))
                .collect::<Array>()
        })
        .unwrap_or_default()
        .into())
}
