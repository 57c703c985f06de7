// Compiled with `tsc --strict` (no emit): our sessions are the SDK's `Session`, and the
// declarations give real types to a TypeScript user.
import type { AgentInputItem, Session } from '@openai/agents';
import {
  IndexedDbSession,
  MemorySession,
  deleteSession,
  listSessions,
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
  void [items, recent, last, id, settings, owner, db, newest, count, existed, durable, ephemeral, named];
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
