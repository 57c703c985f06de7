// Compiled with `tsc --strict` (no emit): our sessions are the SDK's `Session`, and the
// declarations give real types to a TypeScript user.
import type {
  AgentInputItem,
  OpenAIResponsesCompactionAwareSession,
  Session,
  SessionHistoryRewriteAwareSession,
  SessionHistoryTransactionAwareSession,
} from '@openai/agents';
import {
  IndexedDbSession,
  MemorySession,
  deleteSession,
  listSessions,
  repairSession,
  watchSessions,
  type RepairReport,
  type BranchInfo,
  type BranchView,
  type SearchHit,
  type SessionChangeEvent,
  type SessionListChange,
  type TurnInfo,
  type SessionUsage,
  type TurnUsage,
  type ToolUsage,
  type Item,
  type SessionError,
  type SessionErrorCode,
  type SessionInfo,
  type SessionSettings,
} from '../../pkg/index.js';

// Both kinds drop into the SDK where it takes a `Session`.
const durable: Session = new IndexedDbSession('chat-1', {
  userId: 'alice',
  dbName: 'my-app',
  settings: { limit: 20 },
});
const ephemeral: Session = new MemorySession();
const named: Session = new MemorySession('chat-2', { settings: { limit: 5 } });

// And where it takes the optional capabilities: atomic, idempotent history transactions and
// history rewrites.
const transactional: SessionHistoryTransactionAwareSession = new IndexedDbSession('chat-3');
const rewritable: SessionHistoryRewriteAwareSession = new MemorySession();
const bothKinds: (SessionHistoryTransactionAwareSession & SessionHistoryRewriteAwareSession)[] = [
  new IndexedDbSession('chat-4'),
  new MemorySession(),
];

async function transactions(): Promise<void> {
  const s = new IndexedDbSession('chat-5');
  await s.applyHistoryTransaction({
    operationId: 'run-1:0',
    transaction: { type: 'replace_suffix', expectedSuffix: [{ role: 'user', content: 'a' }], replacement: [] },
  });
  await s.applyHistoryMutations({
    mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}' } }],
  });
  await s.replaceHistory([{ role: 'system', content: 'summary' }], { archive: false });
  const archived: Item[] = await s.getArchivedItems({ limit: 10, before: 10 });
  void [archived, transactional, rewritable, bothKinds];
}
void transactions;

async function useTheProtocol(sdkItems: AgentInputItem[]): Promise<void> {
  const session = new IndexedDbSession('chat-1', { userId: 'alice' });
  await session.addItems(sdkItems);
  await session.addItems([{ role: 'user', content: 'plain objects work too' }]);
  const items: Item[] = await session.getItems();
  const recent: AgentInputItem[] = await session.getItems<AgentInputItem>(10);
  const last: AgentInputItem | undefined = await session.popItem<AgentInputItem>();
  const id: string = await session.getSessionId();
  const settings: Readonly<SessionSettings> = session.settings;
  const owner: string | null = session.userId;
  const db: string = session.dbName;
  await session.clearSession();
  await session.close();
  const infos: SessionInfo[] = await listSessions({ userId: 'alice', dbName: 'my-app' });
  const newest: number = infos[0]?.updatedAt ?? 0;
  const count: number = infos[0]?.itemCount ?? 0;
  const existed: boolean = await deleteSession('chat-1', { dbName: 'my-app' });
  const report: RepairReport = await repairSession('chat-1', { dbName: 'my-app', userId: 'alice' });
  const kept: number = report.itemCount + report.removedRows + report.renumberedRows;
  void [items, recent, last, id, settings, owner, db, newest, count, existed, kept, durable, ephemeral, named];
}

function handle(e: unknown): SessionErrorCode | undefined {
  if (e instanceof Error && e.name === 'SessionError') {
    return (e as SessionError).code;
  }
  return undefined;
}

// Misuse that the types reject.
// @ts-expect-error a session id is a string
new IndexedDbSession(42);
// @ts-expect-error the limit is a number
new MemorySession('x', { settings: { limit: '5' } });
// @ts-expect-error items are objects
void new MemorySession().addItems(['text']);
// @ts-expect-error unknown options are refused
new IndexedDbSession('x', { userID: 'typo' });

void useTheProtocol;
void handle;

// The runner entry: typed agents, tools, results, streams and errors.
import {
  Agent,
  Runner,
  RunState,
  CompactionSession,
  IndexedDbSession as SessionFromRunnerEntry,
  type BackgroundReport,
  type CompactionResult,
  type FunctionTool,
  type ModelError,
  type ModelBehaviorError,
  type ModelRefusalError,
  type InputGuardrail,
  type OutputGuardrailTripwireTriggered,
  type RunResult,
  type RunStreamEvent,
  type ToolApprovalItem,
  type ToolOutput,
} from '../../pkg/runner.js';

interface AppContext {
  userName: string;
}

const weather: FunctionTool<{ city: string }, AppContext> = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: async ({ city }, context) => `${context.userName}: sunny in ${city}`,
  needsApproval: async (_context, args) => args.city === 'Paris',
};

// A tool giving the model an image and text (structured outputs).
const chart: FunctionTool<{ quarter: string }> = {
  name: 'chart',
  execute: async ({ quarter }): Promise<ToolOutput[]> => [
    { type: 'text', text: `Sales in ${quarter}` },
    { type: 'image', image: { data: 'iVBORw0KGgo=', mediaType: 'image/png' }, detail: 'low' },
  ],
};
// @ts-expect-error an image needs its source
const noSource: ToolOutput = { type: 'image' };
void [chart, noSource];

async function compaction(runner: Runner, agent: Agent<AppContext>): Promise<void> {
  const session = new CompactionSession(new SessionFromRunnerEntry('long-chat'), {
    runner,
    agent,
    strategy: 'summary',
    keepTurns: 2,
    shouldCompact: ({ candidateItems }) => candidateItems.length > 20,
  });
  const byModel = new CompactionSession(new SessionFromRunnerEntry('long-chat'), { runner, model: 'gpt-5-mini', strategy: 'responses' });
  // @ts-expect-error the model that compacts is needed: an agent's, or a model's name
  const noModel = new CompactionSession(new SessionFromRunnerEntry('long-chat'), { runner, strategy: 'summary' });
  void [byModel, noModel];
  // It drops into the SDK's run() as a Session, and as the SDK's compaction-aware session (its
  // result's usage is the SDK's RequestUsage).
  const forTheSdk: Session = session;
  const compacting: OpenAIResponsesCompactionAwareSession = session;
  void compacting;
  const result = await runner.run(agent, 'Where were we?', { session });
  const report: BackgroundReport = await result.background;
  const done: CompactionResult | null = await session.runCompaction({ force: true });
  const archived: Item[] = await session.getArchivedItems({ limit: 20 });
  // The wrapped session's turns and metadata, where it has them.
  const recent: Item[] | undefined = await session.getRecentTurns?.(3);
  const title: string | null | undefined = (await session.getInfo?.())?.title;
  await session.update?.({ title: 'Renamed' });
  void [forTheSdk, report.compaction?.itemsAfter, report.errors, done?.usage.totalTokens, archived, recent, title];
}
void compaction;

async function useTheRunner(): Promise<void> {
  const agent = new Agent<AppContext>({
    name: 'Assistant',
    instructions: 'Reply very concisely.',
    model: 'gpt-4.1-mini',
    modelSettings: { temperature: 0.2, topP: 1, maxTokens: 200 },
    tools: [weather],
  });
  const runner = new Runner({ baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-…', api: 'responses', retries: 3 });
  const session = new SessionFromRunnerEntry('chat-1');
  const result: RunResult = await runner.run(agent, 'What city is the Golden Gate Bridge in?', {
    session,
    sessionSettings: { limit: 20 },
    maxTurns: 5,
    context: { userName: 'Ada' },
    signal: new AbortController().signal,
    sessionInputCallback: (history, newItems) => [...history.slice(-4), ...newItems],
  });
  const text: string | undefined = result.finalOutput;
  const tokens: number = result.usage.totalTokens;
  const pending: ToolApprovalItem[] = result.interruptions;
  for (const item of pending) result.state.approve(item);
  const saved: string = result.state.toString();
  const restored: RunState = RunState.fromString(agent, saved);
  // @ts-expect-error a RunState is made by a run, or read back from its string
  void new RunState();
  await runner.run(agent, restored, { session });

  const stream = runner.runStreamed(agent, 'And its population?', { session });
  for await (const event of stream) {
    const e: RunStreamEvent = event;
    if (e.type === 'text_delta') {
      const delta: string = e.delta;
      void delta;
    }
    // A loop written for the SDK's stream.
    if (e.type === 'raw_model_stream_event' && e.data.type === 'output_text_delta') {
      const delta: string = e.data.delta;
      void delta;
    }
    if (e.type === 'run_item_stream_event' && e.item.type === 'message_output_item') {
      const said: string = e.item.content;
      const by: string = e.item.agent.name;
      void [said, by];
    }
    if (e.type === 'agent_updated_stream_event') void e.agent.name;
  }
  const final: RunResult = await stream.result;
  void [text, tokens, final];
}

// Several agents: handoffs, structured output, guardrails, dynamic instructions, events.
async function agents(runner: Runner): Promise<void> {
  const polite: InputGuardrail<AppContext> = {
    name: 'polite',
    execute: async ({ input, context }) => ({ tripwireTriggered: input.length === 0 && context.userName === '', outputInfo: 'empty' }),
  };
  const billing = new Agent<AppContext, { refund: number }>({
    name: 'Billing',
    model: 'gpt-4.1-mini',
    handoffDescription: 'Refunds.',
    instructions: (context, agent) => `Help ${context.userName} as ${agent.name}.`,
    outputType: { type: 'json_schema', name: 'refund', schema: { type: 'object', properties: { refund: { type: 'number' } } } },
    outputGuardrails: [{ name: 'cap', execute: ({ output }) => ({ tripwireTriggered: output === null }) }],
  });
  const triage = new Agent<AppContext>({
    name: 'Triage',
    model: 'gpt-4.1-mini',
    tools: [weather],
    inputGuardrails: [polite],
    toolUseBehavior: { stopAtToolNames: ['get_weather'] },
    modelSettings: { parallelToolCalls: true, toolChoice: 'auto' },
    handoffs: [billing, { agent: billing, toolName: 'to_billing', inputFilter: (data) => ({ ...data, preHandoffItems: [] }) }],
  });
  billing.handoffs = [triage];
  billing.handoffs = [...billing.handoffs, { agent: triage, toolName: 'back_to_triage' }];
  // @ts-expect-error the list is frozen: a push would change nothing
  billing.handoffs.push(triage);
  runner
    .on('handoff', (_context, from, to) => console.log(from.name, to.name))
    .on('agent_tool_end', (_context, agent, tool, result) => console.log(agent.name, tool.name, result.length));
  const refund: RunResult<{ refund: number }> = await runner.run(billing, 'Refund me', { context: { userName: 'Ada' } });
  const amount: number | undefined = refund.finalOutput?.refund;
  const routed = await runner.run(triage, 'Refund me', { context: { userName: 'Ada' } });
  const answeredBy: string = routed.lastAgent.name;
  for await (const event of runner.runStreamed(triage, 'hi')) {
    if (event.type === 'handoff') console.log(event.from.name, event.to.name);
  }
  void [amount, answeredBy];
}
void agents;

function blockedBy(e: unknown): string | undefined {
  if (!(e instanceof Error)) return undefined;
  if (e.name === 'OutputGuardrailTripwireTriggered') return (e as OutputGuardrailTripwireTriggered).result.guardrail.name;
  if (e.name === 'ModelBehaviorError') return (e as ModelBehaviorError).rawOutput;
  if (e.name === 'ModelRefusalError') return (e as ModelRefusalError).refusal;
  return undefined;
}
void blockedBy;

// @ts-expect-error runner.on takes only the lifecycle events
new Runner({ baseUrl: 'x' }).on('agent_started', () => {});

function modelStatus(e: unknown): number | undefined {
  return e instanceof Error && e.name === 'ModelError' ? (e as ModelError).status : undefined;
}

// @ts-expect-error the API style is one of two names
new Runner({ baseUrl: 'x', api: 'soap' });
// @ts-expect-error tools need an execute function
new Agent({ name: 'x', tools: [{ name: 't' }] });
// What an errorFunction tells the model may be any value (its JSON is sent), or none (null).
new Agent({ name: 'x', tools: [{ name: 't', execute: () => 'ok', errorFunction: () => ({ error: 'card_declined' }) }, { name: 'u', execute: () => 'ok', errorFunction: null }] });

void useTheRunner;
void modelStatus;

// Branches, turns and usage, typed.
async function useBranches(): Promise<void> {
  const session = new IndexedDbSession('chat-1', { userId: 'ann', branch: 'main' });
  const branch: string = session.currentBranch;
  const id: string = await session.createBranchFromTurn(2, 'edit');
  await session.createBranchFromContent('weather');
  await session.switchBranch(branch);
  const branches: BranchInfo[] = await session.listBranches();
  const parent: string | null = branches[0].parent;
  const view: BranchView[] | undefined = branches[0].view;
  const shows = (hit: SearchHit): boolean => !!view?.some((v) => v.branchId === (hit.branch ?? 'main') && hit.seq >= v.from && hit.seq < v.to);
  const turns: TurnInfo[] = await session.getTurns({ branch: id });
  const found: TurnInfo[] = await session.findTurns('東京');
  await session.storeRunUsage({ inputTokens: 10, outputTokens: 2 });
  const usage: SessionUsage = await session.getSessionUsage({ branch: id });
  const one: TurnUsage | null = await session.getTurnUsage(1);
  const all: TurnUsage[] = await session.getTurnUsage();
  const otherBranch: TurnUsage[] = await session.getTurnUsage(null, { branch: 'main' });
  const otherTurn: TurnUsage | null = await session.getTurnUsage(2, { branch: 'main' });
  const tools: ToolUsage[] = await session.getToolUsage();
  const remembered: string = (await listSessions())[0].currentBranch;
  const stop: () => void = session.subscribe((event: SessionChangeEvent) => {
    const kind: 'add' | 'pop' | 'clear' | 'replace' | 'update' | 'delete' | 'branch' = event.type;
    if (event.change === 'compaction') void kind;
    if (event.change === 'sync') void kind;
    // @ts-expect-error no event is told with this change
    if (event.change === 'compacted') void kind;
  });
  stop();
  const unwatch = watchSessions({ userId: 'ann' }, (change: SessionListChange) => {
    // Always told: the session's user and the event behind the change.
    const owner: string | null = change.userId;
    const behind: 'add' | 'pop' | 'clear' | 'replace' | 'update' | 'delete' | 'branch' = change.change;
    void [owner, behind];
  });
  watchSessions(null, () => {})();
  const startedFrom: SessionInfo[] = await unwatch.ready;
  void startedFrom[0]?.sessionId;
  unwatch();
  await session.deleteBranch(id);
  // @ts-expect-error a turn is a number
  await session.createBranchFromTurn('2');
  void [parent, turns, found, usage.turns, one, all, tools[0].count, remembered];
}
void useBranches;

// Beyond one device: a local session synced with a conversation the Conversations API keeps.
import { SyncedSession, type SyncStatus } from '../../pkg/index.js';
import { OpenAIConversationsSession } from '../../pkg/runner.js';

async function twoDevices(): Promise<void> {
  const remote = new OpenAIConversationsSession({ apiKey: 'sk-…', conversationId: 'conv_123' });
  const remoteAsSession: Session = remote;
  const synced = new SyncedSession(new IndexedDbSession('chat-1'), remote, { intervalMs: 30_000 });
  const forTheSdk: Session = synced;
  const transactional: SessionHistoryTransactionAwareSession = synced;
  synced.addEventListener('syncstatus', (event) => console.log(event.detail.pending, event.detail.lastError?.status));
  synced.addEventListener('syncstatus', (event) => console.log(event.detail.online), { once: true });
  const status: SyncStatus = await synced.sync();
  const id: string | undefined = remote.sessionId;
  synced.close();
  const keptHere: number = status.localOnly;
  void [remoteAsSession, forTheSdk, transactional, status.lastSyncedAt, id, keptHere];
}
void twoDevices;

// Encryption at rest: an EncryptedSession is a Session; over one of ours it applies history
// transactions too, which a TypeScript user checks for before calling.
import { EncryptedSession } from '../../pkg/index.js';

async function encrypted(key: Uint8Array): Promise<void> {
  const session = new EncryptedSession(new IndexedDbSession('chat-9'), { key });
  const forTheSdk: Session = session;
  if (session.applyHistoryTransaction) {
    await session.applyHistoryTransaction({ operationId: 'run-2:0', transaction: { type: 'append_items', items: [{ role: 'user', content: 'hi' }] } });
  }
  void forTheSdk;
}
void encrypted;

async function encryptedOverTheSdk(key: Uint8Array, sdkSession: Session): Promise<void> {
  // A callback that returns something (a push's count) is still a callback.
  const skipped: Array<[number, 'history' | 'archive']> = [];
  const session = new EncryptedSession(sdkSession, { key, onUndecryptable: (count, { source }) => skipped.push([count, source]) });
  await session.replaceHistoryWithCompaction?.([{ type: 'compaction', encrypted_content: 'x' }]);
  await session.addItems([{ role: 'user', content: 'hi' }]);
}
void encryptedOverTheSdk;

// The SDK's own MemorySession class (its `sessionId` private: the key is derived for its
// `getSessionId()`), `dbName: null` as the default database, a turn that may be absent, a memory
// session made without an id, and a backup stream of any bytes.
import { MemorySession as SdkMemorySession } from '@openai/agents';
import { importSessions } from '../../pkg/index.js';

async function declaredAsTheyWork(key: Uint8Array, turn: number | undefined, bytes: ReadableStream<ArrayBuffer>): Promise<void> {
  const overSdk = new EncryptedSession(new SdkMemorySession(), { key });
  await overSdk.addItems([{ role: 'user', content: 'hi' }]);
  const session = new IndexedDbSession('chat-10', { dbName: null });
  const usage: TurnUsage | TurnUsage[] | null = await session.getTurnUsage(turn);
  void usage;
  void new MemorySession(null);
  await importSessions(bytes, { dbName: null });
  // @ts-expect-error a wrapped session needs its id one way or the other
  void new EncryptedSession({ getItems: async () => [], addItems: async () => {}, popItem: async () => undefined, clearSession: async () => {} }, { key });
}
void declaredAsTheyWork;

async function encryptedRewrite(key: Uint8Array): Promise<void> {
  const session = new EncryptedSession(new MemorySession('chat-10'), { key });
  await session.applyHistoryMutations?.({
    mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}' } }],
  });
}
void encryptedRewrite;

// An app's item and tool argument types written as interfaces (which, unlike type aliases, have
// no implicit index signature) are taken wherever items go in or come out.
interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}
async function interfaceTypedItems(runner: Runner, agent: Agent): Promise<ChatMessage[]> {
  const session = new IndexedDbSession('chat-11');
  const question: ChatMessage = { role: 'user', content: 'hi' };
  await session.addItems([question]);
  await session.replaceHistory([question], { expectedItems: [question] });
  await session.applyHistoryTransaction({ operationId: 'op', transaction: { type: 'append_items', items: [question] } });
  await runner.run(agent, [question], { session });
  const popped: ChatMessage | undefined = await session.popItem<ChatMessage>();
  void popped;
  // What the library gives back goes back in: a session without a user is `userId: null`.
  const info = await session.getInfo();
  new IndexedDbSession(info.sessionId, { userId: info.userId });
  // No limit, as Python's `None`.
  const all = await session.getItems(null);
  void all;
  // A session of the app's own with a `sessionId` property instead of `getSessionId()`.
  const own = new EncryptedSession(
    { sessionId: 'own-1', getItems: async () => [], addItems: async (items: ChatMessage[]) => void items, popItem: async () => undefined, clearSession: async () => {} },
    { key: new Uint8Array(32) },
  );
  void own;
  // A compaction wraps a whole session.
  new CompactionSession(new MemorySession('chat-12'), { runner, model: 'm' });
  return session.getItems<ChatMessage>(20);
}
void interfaceTypedItems;

import { exportSessions, type ExportReport } from '../../pkg/index.js';

// A backup, and what it left out.
async function backup(): Promise<string[]> {
  const stream = exportSessions({ userId: 'ann' });
  const file: Blob = await new Response(stream).blob();
  const report: ExportReport = await stream.report;
  void [file, report.sessions, report.deleted];
  return report.failed.map((f) => `${f.sessionId}: ${f.code}`);
}
void backup;
