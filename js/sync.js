// SyncedSession: a session that lives in this browser (an IndexedDbSession: reads are local,
// fast, and work offline) and is kept in step with a remote Session, typically an
// OpenAIConversationsSession, so the same person's other devices see the same history.
//
// The outbox is the local history past what was synced: a write enters it in the transaction
// that stores it, so it survives reloads and crashes. A sync round, one at a time across the
// origin's tabs (a Web Lock), compares three lists: what was synced last (kept in a database of
// its own, with the remote id of every synced item), the local history, and the remote one.
// - What the local history lost since (a pop, a clear) is deleted remotely, item by item (the
//   conversation the devices share stays); what the remote lost (another device's pop) is
//   removed locally: a deletion wins.
// - The remote's new items are pulled; the local new items are pushed, at most 20 per write. The
//   items of a push are recorded before it is sent, so a push whose answer never came (a dropped
//   response, a closed tab) is recognised on the remote the next time instead of being sent again.
// - Both devices then hold the remote's order: where the remote put another device's items
//   between, the local history is rewritten once to match, in one transaction that is refused
//   (and the round tried again) if the history changed meanwhile.
// - A round compares only what came after the items synced last while both sides show they have
//   only grown since: the local session's mark (`getInfo()`: its creation time and rewrite count)
//   is unchanged, and the remote's newest items end the synced ones in place, with the same ids.
//   So a round costs what the turn costs, not what the history holds. The first round of each
//   SyncedSession compares the whole histories, and so does any round where either check fails,
//   the first one ten minutes after the last that did, and the first one back online (a
//   deletion from before the remote's newest page shows in no check).
// - Without a state to trust (none was written for the session, or it is damaged), the items both
//   histories start with, the same in the same order, are taken as synced.
// - An item the remote does not hold after it was pushed (one the conversion to its items leaves
//   out, such as a reasoning item without an id) or refuses (no form for it, `INVALID_ITEM`; or
//   HTTP 400, 413 or 422 for it sent alone, while the remote took other items of the round) is
//   kept here only, in its place: its entry in the state is `local:`, it is not pushed again,
//   and the other items sync around it. It goes when the remote lost the items it stood between.
import { recordStore } from './records.js';
import { extras } from './load_extras.js';
import { later, optionsOf, sessionError } from './errors.js';
import { bindSubscribe, endListeners, wrappedSubscribe } from './events.js';

/** The name of the event a write of a sync round makes (`{ type: 'replace', change: 'sync' }`:
 * what another device wrote, pulled), as `encrypted.js` names its own. */
const CHANGE_EVENT = Symbol.for('agent-sessions.changeEvent');

/** The Web Lock a run holds on a session from reading its history to saving its turn (and a
 * sync round while it rewrites the local history): one name per database and session, whatever
 * characters either holds (`null` or `undefined`: the default database, as everywhere). */
export function sessionLockName(dbName, sessionId) {
  return `agent-sessions:${JSON.stringify([dbName ?? 'agent-sessions', sessionId])}`;
}

const STATE_DB = 'agent-sessions-sync';
const state = recordStore(STATE_DB, 'sessions');

/** The id of a session's sync state (its head; its chunks are `chunkId(id, k)`). */
const stateId = (dbName, sessionId) => JSON.stringify([dbName, sessionId]);

/** A delay a timer can wait: at most 2^31 - 1 ms (a longer one fires at once, a round after
 * each). */
const most = (ms) => Math.min(ms, 2 ** 31 - 1);

/** A random id: `crypto.randomUUID` is only in secure contexts (an http origin has `crypto`
 * without it, and every round that pulled into a chat failed there). */
const uuid = () => crypto.randomUUID?.() ?? [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');

/** The keys of every chunk of the sync state `id`. */
const chunkRange = (id) => IDBKeyRange.bound(chunkId(id, ''), chunkId(id, '\uffff'));

/** The request deleting every chunk of the sync state `id`. */
const deleteChunks = (s, id) => s.delete(chunkRange(id));

/** Items per remote write (the Conversations API's limit). */
const PUSH_SIZE = 20;

/** How many of the remote's newest items a round reads first, and at most (one page of the
 * Conversations API), to find where the items synced last end. */
const RECENT = 20;
const PAGE = 100;

/** How long after a round compared the whole histories (ms) one does again: a deletion another
 * device made from before the remote's newest page (a device behind by a page, whose round
 * deleted there what it had deleted while offline) does not show in that page. */
const WHOLE_AFTER = 10 * 60_000;

function textOf(content, separator = '') {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part?.text === 'string' ? part.text : typeof part?.refusal === 'string' ? part.refusal : '')).join(separator);
}

/** A call output as text, as the Conversations API stores it (the runner's rule): `null` as
 * JSON writes it. An output of images or files comes back in another shape than it was written
 * in (a part of each, their sources spelled out), so only that it is one counts: one call has one
 * output. The remote may list an output without its images by data URL: they are left out.
 * `era`: which version's fingerprints (see `identity`). */
function outputText(output, era) {
  if (output === undefined || (output === null && !era)) return '';
  if (typeof output === 'string') return output;
  if (era === 2) {
    // (As `legacy_output_to_structured` and `structured_part_to_api` of the runner's conversion
    // pick an image's source.)
    const inline = (p) => /^(input_)?image$/.test(p?.type) && (/^data:/.test([p.image, p.image?.url, p.imageUrl, p.image_url].find((s) => typeof s === 'string')) || p.image?.data != null || p.data != null);
    // (An output of one image is sent as a list of it; of another part, as JSON text.)
    output = Array.isArray(output) ? output.filter((p) => !inline(p)) : output?.type === 'image' && inline(output) ? [] : output;
  }
  if (Array.isArray(output)) {
    const texts = output.map((p) => p?.text);
    if (texts.every((t) => typeof t === 'string') && (!era || texts.length > 0)) return texts.join('');
  } else if (['text', 'input_text', 'output_text'].includes(output?.type) && typeof output.text === 'string') {
    return output.text;
  }
  const files = (p) => /^(input_)?(image|file)$/.test(p?.type);
  return era && (Array.isArray(output) ? output.some(files) : files(output)) ? '\u0000files' : JSON.stringify(output);
}

/** The mark of a compaction's summary, and of a server's compaction item, with the turns it
 * stands for (core/session.rs). */
const SUMMARY_MARK = 'agent-sessions.summary';

/** What does not survive a round trip through a remote at any depth of an item: ids, statuses
 * (a remote fills in its own), `providerData` (a remote rewrites it) and the turns a compaction
 * item stands for (core/compaction.rs, a field of ours the API keeps no copy of); keys are
 * compared in one spelling (`encrypted_content` is `encryptedContent`) and one order. */
const VOLATILE = new Set(['id', 'status', 'providerData', 'provider_data', SUMMARY_MARK]);
function stable(value) {
  if (Array.isArray(value)) return value.map(stable);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.keys(value)
    .filter((k) => !VOLATILE.has(k))
    .map((k) => [k.replace(/_([a-z])/g, (_, c) => c.toUpperCase()), stable(value[k])])
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return Object.fromEntries(entries);
}

/**
 * What identifies an item whatever store holds it: the parts that survive a round trip through
 * the Conversations API (role and text of a message; id, name and arguments of a call; call id and
 * output of a call's output; the other kinds' fields but those of `stable`), in one string.
 * `era`: as the fingerprints of a sync state took it: 2, this version's; 1, before an output's
 * images by data URL were left out; 0, before reasoning, hosted tool calls and file
 * outputs were compared as they come back (see `keptCount`).
 */
function identity(item, era = 2) {
  const type = item?.type ?? (item?.role ? 'message' : '');
  switch (type) {
    case 'message':
      // The Conversations API gives a system message's parts back as one text, a line each.
      return JSON.stringify(['m', item.role ?? '', textOf(item.content, item.role === 'system' || item.role === 'developer' ? '\n' : '')]);
    case 'function_call':
      return JSON.stringify(['c', item.callId ?? item.call_id ?? '', item.name ?? '', item.arguments ?? '']);
    case 'function_call_result':
    case 'function_call_output':
      return JSON.stringify(['o', item.callId ?? item.call_id ?? '', outputText(item.output, era)]);
    case 'unknown': {
      // What the conversion gives back as `unknown` (the API's item in `providerData`, as the
      // SDK's does) for two kinds the SDK writes in its own shapes: compared as those.
      const raw = item.providerData;
      if (era && raw?.type === 'computer_call_output') {
        return identity({ type: 'computer_call_result', callId: raw.call_id, output: { type: 'computer_screenshot', data: raw.output?.image_url } });
      }
      if (era && raw?.type === 'mcp_approval_response') return identity({ type: 'hosted_tool_call', name: 'mcp_approval_response' });
    }
    // falls through
    default: {
      const { id: _id, providerData: _p, ...rest } = item ?? {};
      return JSON.stringify(['x', type, era ? stable(rest) : rest]);
    }
  }
}

/** A 106-bit digest of a string (two 53-bit multiply-xor hashes, seeded apart), in 21 or so
 * characters: what the sync state keeps of each item instead of its whole text. */
function digest(text) {
  const half = (seed) => {
    let h1 = 0xdeadbeef ^ seed;
    let h2 = 0x41c6ce57 ^ seed;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
  };
  return `${half(0)}.${half(0x9e3779b9)}`;
}

/** An item's identity as the sync state keeps it: the digest of [`identity`]. */
export function fingerprint(item) {
  return digest(identity(item));
}

/** The sync state's format: 2 keeps digests of the items' identities (1, their whole text). */
const FORMAT = 2;

/** A sync state as this version keeps it: one written by an earlier version (the identities
 * themselves as fingerprints, and in the keys of a remote without ids) is converted, so that
 * nothing it records is taken for new or lost. */
function upgraded(saved) {
  if (!saved || saved.format === FORMAT) return saved ?? {};
  const key = (k) => {
    if (typeof k !== 'string' || !k.startsWith('fp:')) return k;
    const n = k.lastIndexOf('#');
    return `fp:${digest(k.slice(3, n))}${k.slice(n)}`;
  };
  const fps = (list) => (Array.isArray(list) ? list.map((fp) => digest(String(fp))) : list);
  return {
    ...saved,
    format: FORMAT,
    synced: Array.isArray(saved.synced) ? saved.synced.map((s) => ({ key: key(s.key), fp: digest(String(s.fp)) })) : [],
    inFlight: saved.inFlight ? { confirmed: fps(saved.inFlight.confirmed), chunk: fps(saved.inFlight.chunk) } : saved.inFlight,
    tombstones: Array.isArray(saved.tombstones) ? saved.tombstones.map(key) : [],
  };
}

/** Synced entries per record of the sync state: a round that only appends rewrites the last. */
const CHUNK = 500;
const chunkId = (id, k) => `${id}#${k}`;

/**
 * The head of a session's sync state: `{ count, chunks, mark, inFlight, tombstones, remote }`, the
 * synced entries being kept `CHUNK` to a record after it. A state an earlier version wrote (one
 * record holding every entry) comes with them all, as `legacy`.
 */
async function loadHead(id) {
  const head = await state.get(id);
  if (!head) return { count: 0, chunks: 0, mark: null, inFlight: null, tombstones: [], none: true };
  if (head.format === FORMAT) return head;
  // A later version's: its round is not this version's to take (replaced as a damaged one, the
  // state would lose its tombstones, and deletions come back from the remote).
  if (typeof head.format === 'number' && head.format > FORMAT) {
    throw sessionError('DB_VERSION', `sync state of session "${id}" written by a newer version of this library: reload the page; nothing changed`);
  }
  // Neither this format nor the one before: damaged (see loadEntries).
  if (!Array.isArray(head.synced)) return damaged();
  const legacy = upgraded(head);
  return { count: legacy.synced.length, chunks: 0, mark: null, inFlight: legacy.inFlight ?? null, tombstones: legacy.tombstones, legacy: legacy.synced };
}

/** Whether this origin may keep sync state: `false` where the browser lists its databases and
 * the sync state's is not among them (an app that never synced), so that it is not made. */
export async function mayKeepSyncState() {
  // (Without IndexedDB at all, as in Node, the session's own call says so.)
  // (Reading `indexedDB` throws where the browser refuses storage, as Firefox with cookies
  // blocked: the session's own call says so too.)
  const listed = await (async () => globalThis.indexedDB?.databases?.())().catch(() => null);
  return !listed || listed.some((d) => d.name === STATE_DB);
}

/**
 * Forgets the sync state of a session that was deleted (nothing of it is left to sync), or that
 * an import wrote: what it records as synced is another
 * history's (a backup keeps its session's creation time, which otherwise tells a session made
 * again from the one a state was kept for), and the items it lacks would be taken for deleted
 * here, and deleted on the remote. The next round compares both histories afresh.
 */
export async function forgetSyncState(dbName, sessionId) {
  const id = stateId(dbName, sessionId);
  await state.batch('readwrite', (s) => [s.delete(id), deleteChunks(s, id)]);
}

/**
 * Forgets the sync state of a session as `forgetSyncState` does, and resolves to a function
 * that puts it back as it was: for a write that may not happen (a restore refused), whose
 * state is best gone before it writes (a write cut short, the tab closed, must not leave the
 * state beside a history it does not describe).
 */
export async function setAsideSyncState(dbName, sessionId) {
  const id = stateId(dbName, sessionId);
  const [head, chunks] = await state.batch('readwrite', (s) => [s.get(id), s.getAll(chunkRange(id)), s.delete(id), deleteChunks(s, id)]);
  return () => (head ? state.batch('readwrite', (s) => [head, ...chunks].map((r) => s.put(r))) : Promise.resolve());
}

/**
 * Runs `rewrite` (a write that replaces session `sessionId`'s history as a whole, an import,
 * which then forgets the session's sync state) while no sync round of that
 * session runs in any tab: a round in between would compare the new history with what the
 * state says was synced, take what the new one lacks for deleted here, and delete it on the
 * remote. `synced`: whether the app keeps sync state at all (`mayKeepSyncState`); where it
 * does not, `rewrite` runs as it is.
 */
export async function withoutSyncRound(dbName, sessionId, rewrite, synced) {
  return (await synced) ? withLock(roundLockName(stateId(dbName, sessionId)), rewrite) : rewrite();
}

/** The Web Lock a sync round of the session of state `id` holds, in any tab. */
const roundLockName = (id) => `${STATE_DB}:${id}`;

/** The head a damaged state is replaced with: nothing synced, and every record of it deleted
 * by the next write. */
const damaged = () => ({ count: 0, chunks: 0, mark: null, inFlight: null, tombstones: [], damaged: true });

/** The synced entries of `head` from about `from` on: `{ offset, synced }`, `offset` being where
 * the first one read stands (the start of its record, at most `from`); `null` when the records
 * are missing or do not hold what the head counts (written by no round of this version, or cut
 * by hand): such a state is not to be trusted, and is taken as lost. */
async function loadEntries(id, head, from = 0) {
  if (head.damaged) return null;
  if (head.legacy) return { offset: 0, synced: head.legacy };
  const count = Number.isSafeInteger(head.count) && head.count >= 0 ? head.count : -1;
  const first = Math.floor(Math.max(0, Math.min(from, count - 1)) / CHUNK);
  const ids = [];
  for (let k = first; k < Math.min(head.chunks, Math.ceil(count / CHUNK)); k++) ids.push(chunkId(id, k));
  const chunks = await state.batch('readonly', (s) => ids.map((key) => s.get(key)));
  const synced = chunks.flatMap((c) => (Array.isArray(c?.entries) ? c.entries : []));
  const sound = synced.length === count - first * CHUNK && synced.every((e) => typeof e?.key === 'string' && typeof e?.fp === 'string');
  return sound ? { offset: first * CHUNK, synced } : null;
}

/** How many items in a row between two the remote holds are taken for items kept here only. */
const GAP = 3;

/**
 * What a round without a trustworthy sync state (none was ever written for this session, or it
 * is damaged) takes as synced: the items both histories start with, the same in the same order,
 * but for up to `GAP` local items in a row between two of them, taken for items kept here only.
 * A local history that is a copy of the remote's (a backup imported on another device, a state
 * deleted) is then not pushed again, and the rest is reconciled as usual.
 */
function adopted(local, remote) {
  const synced = [];
  let r = 0;
  for (let i = 0; i < local.length && r < remote.length; i++) {
    const fp = fingerprint(local[i]);
    if (fp === remote[r].fp) {
      synced.push({ key: remote[r].key, fp });
      r += 1;
    } else if (local.slice(i + 1, i + 1 + GAP).some((item) => fingerprint(item) === remote[r].fp)) {
      // An item between two the remote holds (with at most two more), which it does not: one
      // kept here only (pushed again, it would not be held either).
      synced.push({ key: `${LOCAL}${fp}`, fp });
    } else {
      break;
    }
  }
  return synced;
}

/** Writes the state: the head, and the entries `list` from `offset` (the start of a record) on;
 * the records past them go. One transaction. */
function saveState(id, head, { offset, list, inFlight, tombstones, mark, remote, localOnly }) {
  const count = offset + list.length;
  const chunks = Math.ceil(count / CHUNK);
  return state.batch('readwrite', (s) => {
    const requests = head.damaged ? [deleteChunks(s, id)] : [];
    head.damaged = false;
    requests.push(s.put({ id, format: FORMAT, count, chunks, mark, inFlight, tombstones, localOnly, ...(typeof remote === 'string' ? { remote } : {}) }));
    for (let k = offset / CHUNK; k < chunks; k++) {
      requests.push(s.put({ id: chunkId(id, k), entries: list.slice(k * CHUNK - offset, (k + 1) * CHUNK - offset) }));
    }
    for (let k = chunks; k < (head.chunks ?? 0); k++) requests.push(s.delete(chunkId(id, k)));
    // A later write of this round deletes what this one wrote past its own end.
    head.chunks = Math.max(head.chunks ?? 0, chunks);
    return requests;
  });
}

/** The text a compaction's summary starts with (core/compaction.rs). */
const SUMMARY_TEXT = 'Summary of the earlier conversation:\n';

/** An item pulled from the remote, stored locally without the remote's id (as a local write
 * would be); a reasoning item keeps it (its encrypted content refers to it). A compaction's
 * summary whose mark a remote did not keep (the Conversations API keeps no field of its own) is
 * marked again: without it, a window of turns here would leave the summary out. */
function pulled(item) {
  if (item && typeof item === 'object' && 'id' in item && item.type !== 'reasoning') {
    const { id: _id, ...rest } = item;
    item = rest;
  }
  if (item?.role === 'system' && item[SUMMARY_MARK] === undefined && textOf(item.content, '\n').startsWith(SUMMARY_TEXT)) {
    return { ...item, [SUMMARY_MARK]: true };
  }
  return item;
}

/** How many items at the start of `local` are still as they were synced (`synced`: their
 * fingerprints); the rest is the outbox. */
function keptCount(synced, local) {
  let kept = 0;
  // A state an earlier version wrote holds the fingerprints as they were then: still synced, not
  // deleted here.
  const same = (item, fp) => [2, 1, 0].some((era) => digest(identity(item, era)) === fp);
  while (kept < synced.length && kept < local.length && same(local[kept], synced[kept].fp)) kept += 1;
  return kept;
}

/** The remote's items with their keys: the remote's id, or for a remote without ids the
 * fingerprint and which occurrence of it this is (two identical items are two items). */
function keyed(items) {
  const seen = new Map();
  return items.map((item) => {
    const fp = fingerprint(item);
    if (typeof item?.id === 'string') return { item, fp, key: `id:${item.id}` };
    const n = seen.get(fp) ?? 0;
    seen.set(fp, n + 1);
    return { item, fp, key: `fp:${fp}#${n}` };
  });
}

/**
 * Which of `entries` (remote items) each of `items` (this device's) may be: an item whose own id
 * the remote shows among them (a remote keeping ids, as the Conversations API keeps reasoning
 * ids) is that entry and no other, and that entry is no other item. Two devices' reasoning items
 * with empty summaries look alike but for their ids: paired by content, one device's could take
 * the other's place in both turns.
 */
function pairing(entries, items) {
  const own = (item) => (idOf(item) === null ? null : `id:${item.id}`);
  const keys = new Set(entries.map((e) => e.key));
  const pinned = new Set(items.map(own).filter((k) => k !== null && keys.has(k)));
  const fps = new Map(items.map((item) => [item, fingerprint(item)]));
  return (e, item) => e.fp === fps.get(item) && (pinned.has(own(item)) ? e.key === own(item) : !pinned.has(e.key));
}

/** An item's `id`, where it has one (a string). */
const idOf = (item) => (typeof item?.id === 'string' ? item.id : null);

/** The key prefix of the entries of items kept here only (see the header of this file). */
const LOCAL = 'local:';
const isLocal = (entry) => entry.key.startsWith(LOCAL);
const localCount = (entries) => entries.reduce((n, e) => n + (isLocal(e) ? 1 : 0), 0);

/** Whether a remote's error refuses what it was sent, rather than failing to take it now (a
 * server error, no network): sent again, it would be refused again. The remote's API refuses it
 * (HTTP 400, 413, 422), or the remote does before sending it (an `INVALID_ITEM`: an item of a
 * kind it has no form for, such as an audio part for the Conversations API). */
const refuses = (error) => ([400, 413, 422].includes(error?.status) && !later(error.status, error.serverCode)) || error?.code === 'INVALID_ITEM';

/** A round that stopped because something else is using the session; tried again soon. */
function busy(message) {
  return Object.assign(new Error(message), { name: 'SyncError', code: 'SESSION_BUSY' });
}

function errorInfo(error) {
  return { name: error?.name ?? 'Error', message: error?.message ?? String(error), ...(typeof error?.status === 'number' ? { status: error.status } : {}), ...(typeof error?.code === 'string' ? { code: error.code } : {}), ...(typeof error?.serverCode === 'string' ? { serverCode: error.serverCode } : {}) };
}

/** Runs `run(lock)` holding the Web Lock `name` (`lock` is `null` when `ifAvailable` found it
 * taken). Where the browser has no Web Locks (an insecure origin), `run` runs unlocked. */
function withLock(name, run, options = {}) {
  const locks = globalThis.navigator?.locks;
  return locks ? locks.request(name, options, run) : run({ name });
}

const online = () => globalThis.navigator?.onLine !== false;

/**
 * A Session whose reads are local and whose writes are also pushed to `remote` (any Session),
 * with the remote's new items pulled back. See the README's "Beyond one device".
 */
export class SyncedSession extends EventTarget {
  #local;
  #remote;
  #id;
  #lockName;
  #status;
  #timer = null;
  #interval = null;
  #attempt = 0;
  /** Busy rounds in a row (a run holding the session): they back off as failed ones do. */
  #busy = 0;
  #running = null;
  /** How many items are kept here only, as the last round (or the state at the start) said. */
  #localOnly = 0;
  /** When a round of this object last compared the whole histories (`Date.now()`), or `null`;
   * and how many times the device came back online (a round under way then does not count). */
  #comparedAt = null;
  #onlineAgain = 0;
  /** Whether a round of this object found the local session stored (see `#round`). */
  #seen = false;
  /** Whether the local session was stored when this object was made (a promise). */
  #found;
  #again = false;
  /** The round every `sync()` made during the one under way waits for. */
  #next = null;
  #closed = false;
  /** The removals of the listeners given to `subscribe`. */
  #stops = new Set();
  #minDelay;
  #maxDelay;
  #onOnline;
  #onOffline;

  constructor(local, remote, options = {}) {
    super();
    const named = local && typeof local === 'object' && typeof local.dbName === 'string' && typeof local.sessionId === 'string';
    if (!named || ['applyHistoryTransaction', 'getInfo', 'subscribe'].some((m) => typeof local[m] !== 'function')) {
      throw sessionError('INVALID_SESSION', 'SyncedSession needs an IndexedDbSession as its local session (its first argument)');
    }
    for (const method of ['getItems', 'addItems', 'popItem', 'clearSession']) {
      if (typeof remote?.[method] !== 'function') throw sessionError('INVALID_SESSION', `the remote session (second argument) must have a ${method}() method`);
    }
    const { intervalMs, retryDelayMs = 1000, maxRetryDelayMs = 60_000, syncOnOpen = true } = optionsOf(options, 'SyncedSession', 'intervalMs retryDelayMs maxRetryDelayMs syncOnOpen');
    if (typeof syncOnOpen !== 'boolean') throw sessionError('INVALID_OPTIONS', `SyncedSession: options.syncOnOpen must be true or false, got ${typeof syncOnOpen}`);
    for (const [name, value] of [['intervalMs', intervalMs], ['retryDelayMs', retryDelayMs], ['maxRetryDelayMs', maxRetryDelayMs]]) {
      if (value !== undefined && !(Number.isFinite(value) && value > 0)) throw sessionError('INVALID_OPTIONS', `options.${name} must be a positive number of milliseconds, got ${String(value)}`);
    }
    this.#local = local;
    this.#remote = remote;
    // A chat deleted before this object's first round (in another tab, by retention, while
    // offline) is not pulled back either.
    this.#found = this.#mark().then((m) => m?.createdAt != null, () => false);
    bindSubscribe(this);
    this.#id = stateId(local.dbName, local.sessionId);
    this.#lockName = roundLockName(this.#id);
    this.#minDelay = most(retryDelayMs);
    this.#maxDelay = most(Math.max(maxRetryDelayMs, retryDelayMs));
    this.#status = { pending: 0, localOnly: 0, lastSyncedAt: null, lastError: null, online: online(), syncing: false };
    this.#onOnline = () => {
      this.#setStatus({ online: true });
      // (Other devices may have changed anything meanwhile: compared whole.)
      this.#comparedAt = null;
      this.#onlineAgain += 1;
      this.#attempt = 0;
      this.#schedule(0);
    };
    this.#onOffline = () => this.#setStatus({ online: false });
    globalThis.addEventListener?.('online', this.#onOnline);
    globalThis.addEventListener?.('offline', this.#onOffline);
    if (intervalMs) this.#interval = setInterval(() => this.#schedule(0), most(intervalMs));
    if (syncOnOpen) this.#schedule(0);
    // The outbox as this device left it (a reload while offline still shows it).
    this.#pendingCount().then(
      (pending) => this.#setStatus({ pending, localOnly: this.#localOnly }),
      () => {},
    );
  }

  // Where the session is stored: what a run's lock and past-session tools look at.
  get dbName() {
    return this.#local.dbName;
  }

  get sessionId() {
    return this.#local.sessionId;
  }

  get userId() {
    return this.#local.userId;
  }

  /** The branch the local session is on. */
  get currentBranch() {
    return this.#local.currentBranch;
  }

  /** `{ pending, lastSyncedAt, lastError, online, syncing }`; a `syncstatus` event (its
   * `detail` is the same object) tells each change. */
  get syncStatus() {
    return { ...this.#status };
  }

  #setStatus(changes) {
    const next = { ...this.#status, ...changes };
    if (JSON.stringify(next) === JSON.stringify(this.#status)) return;
    this.#status = next;
    this.dispatchEvent(new CustomEvent('syncstatus', { detail: { ...next } }));
  }

  getSessionId() {
    return this.#local.getSessionId();
  }

  getItems(limit) {
    return this.#local.getItems(limit);
  }

  /** A local write, then a sync round soon (at once when online). The outbox is counted after
   * the write resolves (the count reads the whole history: a write does not wait for it). */
  async #write(call) {
    const result = await call();
    this.#pendingCount().then(
      (pending) => this.#setStatus({ pending, localOnly: this.#localOnly }),
      () => {},
    );
    this.#schedule(0);
    return result;
  }

  addItems(items) {
    return this.#write(() => this.#local.addItems(items));
  }

  popItem() {
    return this.#write(() => this.#local.popItem());
  }

  clearSession() {
    return this.#write(() => this.#local.clearSession());
  }

  applyHistoryTransaction(args) {
    return this.#write(() => this.#local.applyHistoryTransaction(args));
  }

  /** The local session's `replaceHistory` (one transaction, refused after a write in between
   * with `expectedItems`, the replaced items archived on this device): how a compaction
   * replaces this history. The next round takes the change to the remote, as any local one. */
  replaceHistory(items, options) {
    return this.#write(() => this.#local.replaceHistory(items, options));
  }

  /** How the SDK's runner replaces the history when a model's output carries a compaction item:
   * the local session's (one transaction, the replaced items archived on this device), synced
   * as `replaceHistory` is. Without it, the SDK clears the session, which a round takes to the
   * remote as a delete of every synced item, on every device. */
  replaceHistoryWithCompaction(items) {
    return this.#write(() =>
      typeof this.#local.replaceHistoryWithCompaction === 'function' ? this.#local.replaceHistoryWithCompaction(items) : this.#local.replaceHistory(items, { archive: true }),
    );
  }

  /** The local session's settings: the window its reads take by default (an `EncryptedSession`
   * over this one takes a window of turns itself). */
  get settings() {
    return this.#local.settings;
  }

  // The local session's other reads, its metadata, what a compaction (`replaceHistory`)
  // archived and what the runs on this device cost pass through: only the items sync. One
  // method each, of its own name, as a class's are.
  static {
    for (const name of ['getRecentTurns', 'getTurns', 'getInfo', 'getArchivedItems', 'getSessionUsage', 'getTurnUsage', 'getToolUsage', 'update', 'storeRunUsage']) {
      const { [name]: method } = {
        [name](...args) {
          return this.#local[name](...args);
        },
      };
      Object.defineProperty(this.prototype, name, { value: method, writable: true, configurable: true });
    }
  }

  // Usage given with a history transaction goes to the local session with it.
  get [Symbol.for('agent-sessions.transactionUsage')]() {
    return this.#local[Symbol.for('agent-sessions.transactionUsage')] === true;
  }

  /** Hears every change of the local session, the rewrites of a sync round included, until
   * `close()`. */
  subscribe(listener) {
    return wrappedSubscribe((l) => this.#local.subscribe(l), this.#stops, () => this.#closed, 'SyncedSession')(listener);
  }

  /**
   * Runs a sync round now (after the one running, if any): resolves to the status once the
   * local and remote histories are the same, rejects with what failed (also in
   * `syncStatus.lastError`; a retry is scheduled with backoff, except after a refusal: a 4xx).
   */
  sync() {
    if (this.#closed) return Promise.reject(sessionError('CLOSED', `sync() of session "${this.#local.sessionId}": the SyncedSession was closed; create a new one to sync again`));
    if (this.#running) {
      // One round after the one under way serves every call made meanwhile (each chaining a
      // round of its own made as many rounds, one after another).
      this.#next ??= this.#running.then(
        () => {},
        () => {},
      ).then(() => {
        this.#next = null;
        return this.sync();
      });
      return this.#next;
    }
    clearTimeout(this.#timer);
    this.#timer = null;
    let retryIn = null;
    const run = (async () => {
      this.#setStatus({ syncing: true, online: online() });
      try {
        await withLock(this.#lockName, () => this.#round());
        this.#attempt = 0;
        this.#busy = 0;
        const pending = await this.#pendingCount().catch(() => 0);
        this.#setStatus({ syncing: false, pending, localOnly: this.#localOnly, lastSyncedAt: Date.now(), lastError: null });
        return this.syncStatus;
      } catch (error) {
        const pending = await this.#pendingCount().catch(() => this.#status.pending);
        if (error?.code === 'SESSION_BUSY') {
          // A run (or a write) was using the session: not a failure, just later; a long run
          // is not asked every `retryDelayMs` (each round reads the remote).
          this.#setStatus({ syncing: false, pending, localOnly: this.#localOnly });
          this.#busy += 1;
          retryIn = Math.min(this.#maxDelay, this.#minDelay * 2 ** Math.min(this.#busy - 1, 5));
        } else {
          this.#setStatus({ syncing: false, pending, localOnly: this.#localOnly, lastError: errorInfo(error), online: online() });
          // This object, or its local (or remote) session, was closed: no later round can work.
          // It stops (its interval and retries went on for good, holding both sessions).
          if (error?.code === 'CLOSED') this.close();
          // A refusal (4xx: a conversation deleted or never there, a key refused) would be
          // refused again: the next write, sync(), interval or `online` tries again, no timer
          // (nor a longer wait for the next failure that is retried).
          // (Nor is a state a newer version wrote: a reload is the way on.)
          const refused = (error?.status >= 400 && error.status < 500 && ![408, 409].includes(error.status) && !later(error.status, error.serverCode)) || error?.code === 'DB_VERSION';
          if (!refused) this.#attempt += 1;
          // (At least what the server's `Retry-After` asked, as a timer can wait: a remote of
          // another kind may give anything.)
          const asked = Number(error?.retryAfter);
          if (online() && !refused) retryIn = Math.max(Math.min(this.#maxDelay, this.#minDelay * 2 ** (this.#attempt - 1)), asked > 0 ? most(asked) : 0);
        }
        throw error;
      }
    })();
    this.#running = run.finally(() => {
      this.#running = null;
      const again = this.#again;
      this.#again = false;
      // A failed round waits its backoff, even when writes asked for a round meanwhile.
      if (retryIn !== null) this.#schedule(retryIn);
      else if (again) this.#schedule(0);
    });
    this.#running.catch(() => {});
    return run;
  }

  #schedule(ms) {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#timer !== null) {
      if (ms > 0) return;
      clearTimeout(this.#timer);
    }
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (!online()) {
        this.#setStatus({ online: false });
        return;
      }
      this.sync().catch(() => {});
    }, ms);
  }

  /** The outbox's length: local items past what is still as synced, and the synced items the
   * local history lost since (deletions the remote has not seen yet). */
  async #pendingCount() {
    const head = await this.#head();
    this.#localOnly = head.localOnly ?? 0;
    const now = head.mark && (await this.#mark());
    // Only grown since the last round: the outbox is what came after.
    if (now && grown(head.mark, now, head.count)) return now.itemCount - head.count;
    // A state of a session deleted here since says nothing of this one (see `#whole`).
    const stale = now && head.mark.createdAt !== now.createdAt;
    const synced = (!stale && (await loadEntries(this.#id, head))?.synced) || [];
    const local = await this.#everyItem();
    const kept = keptCount(synced, local);
    return local.length - kept + (synced.length - kept);
  }

  /** A round of a closed session writes nothing more to the remote. */
  #stopIfClosed() {
    if (this.#closed) throw sessionError('CLOSED', 'the session was closed during the sync round; it stopped before its next remote write');
  }

  /** Stops syncing (timers, listeners; a round in progress stops before its next remote
   * write); the sessions stay usable on their own. */
  close() {
    this.#closed = true;
    endListeners(this.#stops);
    clearTimeout(this.#timer);
    clearInterval(this.#interval);
    globalThis.removeEventListener?.('online', this.#onOnline);
    globalThis.removeEventListener?.('offline', this.#onOffline);
  }

  /** The whole local history, whatever `settings` the local session reads with by default (a
   * `limit` or `turns` there is for the model's context, not for what is synced). */
  #everyItem() {
    return this.#local.getItems(Number.MAX_SAFE_INTEGER);
  }

  /** The whole remote history. A remote that declares a default window (a session of this
   * package with `settings.limit` or `turns`) is asked for every item; others are read with no
   * limit, as the protocol reads a whole history (and a remote such as the Conversations API
   * refuses a limit past its page). */
  #everyRemoteItem() {
    const settings = this.#remote.settings;
    const windowed = settings != null && typeof settings === 'object' && (settings.limit != null || settings.turns != null);
    return windowed ? this.#remote.getItems(Number.MAX_SAFE_INTEGER) : this.#remote.getItems();
  }

  /** The head of the sync state. One kept with another remote (`remote`, its id) says nothing
   * of this one: what it records as synced is not there, and would be taken for deleted there.
   * It goes as a damaged one does. */
  async #head() {
    const head = await loadHead(this.#id);
    return typeof head.remote === 'string' && head.remote !== (await this.#remoteId()) ? damaged() : head;
  }

  /** The remote's id: its `sessionId` (an `OpenAIConversationsSession`'s conversation id,
   * `undefined` before it has one), else what its `getSessionId()` gives. */
  async #remoteId() {
    const remote = this.#remote;
    return 'sessionId' in remote ? remote.sessionId : remote.getSessionId?.();
  }

  /** Where the local history stands: its record's creation time, rewrite count (see
   * `getInfo().rewrites`) and length, and the branch this object reads; `null` where the local
   * session does not tell. Two equal marks, or an equal mark with more items, mean the history
   * has only grown in between. */
  async #mark() {
    const info = await this.#local.getInfo?.();
    if (typeof info?.rewrites !== 'number') return null;
    return { createdAt: info.createdAt, rewrites: info.rewrites, itemCount: info.itemCount, branch: this.#local.currentBranch };
  }

  /** One round: see the header of this file. The first round of this object compares the whole
   * histories, and so does one after `WHOLE_AFTER` or back online; others only what came after
   * the items synced last, while both sides show that they have only grown since (`#recent`). */
  async #round() {
    // The local session deleted since this object was made for it, or since a round of it found
    // it (here, in another tab, by retention): nothing is pulled into it, which would bring back
    // the chat just deleted. Once it is written again, it is compared afresh, as by a
    // SyncedSession made for it again.
    const begun = await this.#mark();
    this.#seen ||= await this.#found;
    if (begun?.createdAt == null && this.#seen) return;
    this.#seen ||= begun?.createdAt != null;
    const head = await this.#head();
    const [at, online] = [Date.now(), this.#onlineAgain];
    const recent = this.#comparedAt !== null && Math.abs(at - this.#comparedAt) < WHOLE_AFTER && (await this.#recent(head));
    const view = recent || (await this.#whole(head));
    await this.#reconcile(view.saved ?? head, view, begun);
    if (!recent && online === this.#onlineAgain) this.#comparedAt = at;
  }

  /** Both whole histories. */
  async #whole(head) {
    const entries = head.none ? null : await loadEntries(this.#id, head);
    const start = await this.#mark();
    const local = await this.#everyItem();
    const end = await this.#mark();
    const stable = sameMark(start, end);
    const readRemote = async () => keyed(await this.#everyRemoteItem());
    const remote = await readRemote();
    // A state of the session this id named before (deleted here since, by `deleteSession` or
    // retention, and perhaps written again: its record's creation time differs) says nothing of
    // this one: compared afresh, as with no state, so that nothing is taken for deleted here.
    // (Nor does one kept while the session is not stored: nothing here is taken for deleted.)
    const stale = !!head.mark && !!start && (start.createdAt == null || head.mark.createdAt !== start.createdAt);
    return {
      offset: 0,
      base: [],
      synced: entries && !stale ? entries.synced : adopted(local, remote),
      // A damaged state is replaced whole: what it said was in flight or ignored goes with it
      // (a push that took effect is among the items both histories start with).
      saved: (entries || head.none) && !stale ? head : damaged(),
      local,
      remote,
      start: stable ? start : null,
      readRemote,
      // The mark tells whether the history changed, once it was read between two equal ones.
      unchanged: async () => {
        if (stable) return sameMark(start, await this.#mark());
        const now = await this.#everyItem();
        return now.length === local.length && now.every((item, i) => identity(item) === identity(local[i]));
      },
    };
  }

  /**
   * The histories from the newest synced item on, or `null` when a whole comparison is needed:
   * the local history must have only grown since the last round (its mark), and the remote's
   * newest items must hold the newest synced item with the synced items before it in place (see
   * `#remoteFrom`). Another device's change before that item rewrites every item after it (new
   * ids), so it shows here too.
   */
  async #recent(head) {
    if (!head.mark || head.inFlight || head.tombstones?.length || head.count === 0) return null;
    const start = await this.#mark();
    if (!grown(head.mark, start, head.count)) return null;
    // The synced entries a check of the remote's newest page needs.
    const entries = await loadEntries(this.#id, head, head.count - PAGE - 1);
    if (!entries) return null;
    const { offset, synced } = entries;
    // The newest synced item the remote holds, and the items kept here only after it; the
    // remote's list has no place for the ones kept here only (before `offset`: `localBefore`).
    const at = synced.findLastIndex((e) => !isLocal(e));
    const localBefore = (head.localOnly ?? 0) - localCount(synced);
    if (at < 0 || localBefore < 0) return null;
    const local = await this.#local.getItems(start.itemCount - offset - at);
    if (!sameMark(start, await this.#mark()) || fingerprint(local[0]) !== synced[at].fp) return null;
    const readRemote = () => this.#remoteFrom(offset - localBefore, synced.slice(0, at + 1).filter((e) => !isLocal(e)));
    const remote = await readRemote();
    if (!remote) return null;
    return {
      offset,
      base: synced.slice(0, at),
      synced: synced.slice(at),
      local,
      remote,
      start,
      readRemote: async () => (await readRemote()) ?? Promise.reject(busy('the remote changed during the sync round; it is tried again')),
      unchanged: async () => sameMark(start, await this.#mark()),
    };
  }

  /**
   * The remote's items from the newest synced one on, keyed, or `null` when the remote does not
   * hold it where it was, with the synced items before it (`synced`, the newest of them, the
   * first at `offset`) in place. Where the items have ids, its newest page is enough (read 20
   * items, then 100); items without ids are keyed by their place in the whole list, so that is
   * read.
   */
  async #remoteFrom(offset, synced) {
    const newest = synced.at(-1).key;
    const from = (entries, whole) => {
      const at = entries.findLastIndex((e) => e.key === newest);
      if (at < 0 || (whole ? at !== offset + synced.length - 1 : at > synced.length - 1)) return null;
      for (let i = 1; i <= Math.min(at, synced.length - 1); i++) {
        if (entries[at - i].key !== synced[synced.length - 1 - i].key) return null;
      }
      return entries.slice(at);
    };
    for (const want of newest.startsWith('id:') ? [RECENT, PAGE] : []) {
      const entries = keyed(await this.#remote.getItems(want));
      if (!entries.every((e) => e.key.startsWith('id:'))) break;
      const whole = entries.length < want;
      const found = from(entries, whole);
      if (found || whole || entries.some((e) => e.key === newest)) return found;
      // More than a page came after it (a push of over 100 items, say), or it is gone: the whole
      // list tells which.
      if (want === PAGE) break;
    }
    return from(keyed(await this.#everyRemoteItem()), true);
  }

  /** Makes the two histories of `view` the same (see the header of this file); `begun` is the
   * local session's mark as the round began. */
  async #reconcile(saved, view, begun) {
    const remote = this.#remote;
    const { offset, base, synced, local } = view;
    const tombstones = new Set(saved.tombstones ?? []);
    let all = view.remote;
    const reread = async () => {
      all = await view.readRemote();
    };
    const visible = () => all.filter((e) => !tombstones.has(e.key));

    // The local history: what is still as synced, then the outbox.
    const kept = keptCount(synced, local);
    // The items kept here only before those compared (see `#recent`).
    const localBefore = offset === 0 ? 0 : (saved.localOnly ?? 0) - localCount(base) - localCount(synced);
    const fresh = local.slice(kept);
    const known = new Set(synced.slice(0, kept).map((s) => s.key));

    // This device's pushes the remote holds but the state does not know yet: those confirmed,
    // and the write in flight when the last round stopped, if it took effect.
    const added = visible().filter((e) => !known.has(e.key) && !synced.some((s) => s.key === e.key));
    const claimed = [];
    const free = (e) => !claimed.includes(e);
    // Each by its id where the remote keeps it (see `pairing`), else the oldest with its content.
    const confirmedIds = saved.inFlight?.ids ?? [];
    (saved.inFlight?.confirmed ?? []).forEach((fp, k) => {
      const e = added.find((a) => free(a) && a.fp === fp && a.key === `id:${confirmedIds[k]}`) ?? added.find((a) => free(a) && a.fp === fp);
      if (e) claimed.push(e);
    });
    // The write in flight: its items in a row, the newest such row; a reasoning item of it may
    // be missing (the conversion to the remote's items leaves out one without an id).
    const chunk = saved.inFlight?.chunk ?? [];
    const optional = new Set(saved.inFlight?.optional ?? []);
    for (let at = added.length - 1; chunk.length > 0 && at >= 0; at -= 1) {
      const run = [];
      const whole = chunk.every((fp, k) => {
        const e = added[at + run.length];
        if (e && free(e) && e.fp === fp) return run.push(e);
        return optional.has(k);
      });
      if (whole && run.length > 0) {
        claimed.push(...run);
        break;
      }
    }
    // Pair them with the outbox; a claimed item the outbox no longer has was removed here.
    const paired = new Map(); // remote entry -> local item
    const unpaired = [...fresh];
    const mayBe = pairing(visible(), fresh);
    for (const e of claimed) {
      const i = unpaired.findIndex((item) => mayBe(e, item));
      if (i >= 0) paired.set(e, unpaired.splice(i, 1)[0]);
    }
    const orphans = claimed.filter((e) => !paired.has(e));
    // The remote items the last round was pulling when it stopped: those the local history took
    // are this device's now (not pushed again); the others are pulled as any new item.
    for (const key of saved.inFlight?.pulled ?? []) {
      const e = added.find((a) => a.key === key && !paired.has(a) && !claimed.includes(a));
      const i = e ? unpaired.findIndex((item) => mayBe(e, item)) : -1;
      if (i >= 0) paired.set(e, unpaired.splice(i, 1)[0]);
    }

    // Deletions: what the local history lost since the last sync, and orphaned pushes.
    const doomed = [...synced.slice(kept).map((s) => s.key), ...orphans.map((e) => e.key)];
    if (doomed.length > 0) {
      for (const key of doomed.reverse()) {
        if (!all.some((e) => e.key === key)) continue;
        this.#stopIfClosed();
        if (typeof remote.deleteItem === 'function' && key.startsWith('id:')) {
          await remote.deleteItem(key.slice(3));
        } else if (all.at(-1)?.key === key) {
          // Another device may have pushed an item since the remote was read: the pop took that
          // one then, which goes back where it was, and the round is tried again.
          const popped = await remote.popItem();
          const got = popped === undefined ? null : keyed([popped])[0];
          // (A remote whose pop gives nothing back, or found it empty, took nothing else.)
          if (got && (got.key.startsWith('id:') ? got.key !== key : got.fp !== all.at(-1).fp)) {
            await remote.addItems([popped]);
            throw busy('another device wrote to the remote during the sync round; it is tried again');
          }
          all = all.slice(0, -1);
        } else {
          tombstones.add(key); // no way to delete it there: ignored from now on
        }
      }
      await reread();
    }

    // Push the rest, each write recorded before it is sent.
    const confirmed = [...paired.values()].map(fingerprint);
    const ids = [...paired.values()].map(idOf);
    const save = async (list, inFlight, mark) =>
      saveState(this.#id, saved, { offset, list, inFlight, tombstones: [...tombstones], mark, remote: await this.#remoteId(), localOnly: localBefore + localCount(list) });
    // The state written during the round keeps the record's creation time (see `#whole`).
    const write = (inFlight) => save([...base, ...synced.slice(0, kept)], inFlight, inexact(view.start));
    let accepted = false;
    const push = async (part) => {
      this.#stopIfClosed();
      const optional = part.flatMap((item, k) => (item?.type === 'reasoning' ? [k] : []));
      await write({ confirmed, ids, chunk: part.map(fingerprint), ...(optional.length ? { optional } : {}) });
      await remote.addItems(part);
      for (const item of part) sent.add(item);
      confirmed.push(...part.map(fingerprint));
      ids.push(...part.map(idOf));
      // (A reasoning item without an id or encrypted content is left out of the remote's items:
      // a part of such items alone sent nothing.)
      accepted ||= part.some(
        (item) =>
          item?.type !== 'reasoning' ||
          typeof item.id === 'string' ||
          typeof (item.providerData?.encryptedContent ?? item.providerData?.encrypted_content ?? item.encrypted_content) === 'string',
      );
    };
    // What the remote held before this round's pushes: none of it is one of them.
    const before = new Set(all.map((e) => e.key));
    // The items whose write the remote took, and those it has no form for (`INVALID_ITEM`).
    const sent = new Set();
    const formless = new Set();
    // What the remote refused of each item sent alone (an HTTP status: see `refuses`).
    let refusal = null;
    const refused = async (error, part) => {
      if (!refuses(error)) throw error;
      // (A refused write took no effect: not in flight, nor to be looked for next time.)
      await write({ confirmed, ids, chunk: [] });
      if (part.length === 1 && error.code === 'INVALID_ITEM') formless.add(part[0]);
      else if (part.length === 1) refusal ??= error;
    };
    for (let i = 0; i < unpaired.length; i += PUSH_SIZE) {
      const part = unpaired.slice(i, i + PUSH_SIZE);
      try {
        await push(part);
      } catch (error) {
        await refused(error, part);
        // One item the remote refuses (a part its API does not take) must not hold up the
        // others: each is sent alone, and one refused alone is kept here only (below), unless
        // every write of the round was refused (`deferred`, below).
        for (const item of part.length > 1 ? part : []) {
          try {
            await push([item]);
          } catch (e) {
            await refused(e, [item]);
          }
        }
      }
    }
    if (unpaired.length > 0) await reread();

    // The remote's order, with this device's items as they were written here.
    const byKey = new Map(synced.slice(0, kept).map((s, i) => [s.key, local[i]]));
    const byEntry = new Map([...paired].map(([e, item]) => [e.key, item]));
    // This round's pushes among the remote's new items, matched from the newest: they were
    // appended after what it held, and another device's items with the same fingerprint (its
    // reasoning, its searches, whose content the fingerprint leaves out) came before them.
    const waiting = unpaired.map((item) => ({ item, used: false }));
    const pushedHere = new Map();
    const pushed = pairing(visible(), unpaired);
    for (const e of visible().reverse()) {
      if (byKey.has(e.key) || byEntry.has(e.key) || known.has(e.key) || before.has(e.key)) continue;
      const match = waiting.findLast((w) => !w.used && sent.has(w.item) && pushed(e, w.item));
      if (match) {
        match.used = true;
        pushedHere.set(e.key, match.item);
      }
    }
    // A refusal by status that no accepted write of this round tells from a refusal of every
    // request (a proxy's 400, a conversation that takes no more) sets nothing aside: those items
    // stay the outbox, after the remote's items, and the round fails once it has pulled these
    // (another device's turns are not held up by it), to be tried again. An item the remote has
    // no form for is set aside anyway, unless it comes after one of those: it waits with them,
    // so that the order stays as written (it is set aside once those before it are pushed).
    const first = refusal && !accepted ? waiting.findIndex((w) => !w.used && !sent.has(w.item) && !formless.has(w.item)) : -1;
    const deferred = first < 0 ? [] : waiting.slice(first).filter((w) => !w.used).map((w) => w.item);
    const waits = new Set(deferred);
    const wanted = [];
    const entries = [];
    const pulls = [];
    // Reasoning items here in the place of the remote's item of another id, while the remote
    // holds one of theirs too (a version that paired them by content took one device's for the
    // other's, see `pairing`): the remote's, written again. (A remote that gives items ids of its
    // own holds none of this device's: nothing to mend.)
    const repairs = new Set();
    const keys = new Set(all.map((e) => e.key));
    for (const e of visible()) {
      let mine = byKey.get(e.key) ?? byEntry.get(e.key) ?? pushedHere.get(e.key);
      const misplaced = mine?.type === 'reasoning' && typeof e.item?.id === 'string' && mine.id !== e.item.id && keys.has(`id:${mine.id}`);
      if (misplaced) {
        mine = pulled(e.item);
        repairs.add(mine);
      }
      if (mine === undefined) pulls.push(e.key);
      wanted.push(mine ?? pulled(e.item));
      entries.push({ key: e.key, fp: e.fp });
    }
    // The items the remote does not hold stay here only, each where it was: after the item
    // before it here (or first). Those synced so (`local:` entries), and those pushed this round
    // that the remote did not keep or refused: sent again, they would not be kept either (not
    // those a refusal of every write keeps as the outbox).
    // One synced so goes when the remote lost the items it stood between (a clear, a pop of its
    // turn on another device): a deletion wins. One that stood beside no item the remote held
    // (the first items of a session, set aside before anything synced) lost nothing: it stays.
    const unplaced = new Set(waiting.filter((w) => !w.used && !waits.has(w.item)).map((w) => w.item));
    const placed = new Map(wanted.map((item, i) => [item, i]));
    const shown = new Set(visible().map((e) => e.key));
    const anchored = synced.slice(0, kept).some((e) => !isLocal(e));
    const held = (from, step) => {
      for (let k = from; k >= 0 && k < kept; k += step) if (!isLocal(synced[k])) return shown.has(synced[k].key);
      return false;
    };
    local.forEach((item, i) => {
      if (!(i < kept ? isLocal(synced[i]) && (!anchored || held(i - 1, -1) || held(i + 1, 1)) : unplaced.has(item))) return;
      let before = i - 1;
      while (before >= 0 && !placed.has(local[before])) before -= 1;
      const at = before < 0 ? 0 : placed.get(local[before]) + 1;
      wanted.splice(at, 0, item);
      entries.splice(at, 0, { key: `${LOCAL}${fingerprint(item)}`, fp: fingerprint(item) });
      for (const [other, k] of placed) if (k >= at) placed.set(other, k + 1);
      placed.set(item, at);
    });
    // The outbox a refusal kept, last, in its order: not synced (no entry), sent again next time.
    wanted.push(...deferred);

    // Rewrite the local history where it differs: under the lock runs take (a run in progress
    // means "later"), after checking nothing was written since it was read, as one transaction
    // that expects the history to end as it was read. Where it is already the remote's, nothing
    // is written and no lock is taken, so a run holding the session does not hold up the round.
    // The mark read after it lets the next round start from here, when the history is then
    // exactly what this round left.
    let from = 0;
    while (from < local.length && from < wanted.length && identity(local[from]) === identity(wanted[from]) && !repairs.has(wanted[from])) from += 1;
    const same = from === local.length && from === wanted.length;
    if (this.#closed && !same) throw sessionError('CLOSED', 'the session was closed during the sync round; it stopped before writing the remote\'s items here (a new SyncedSession goes on from there)');
    const ended = async () => {
      const end = await this.#mark();
      // Deleted (and perhaps made again) meanwhile: this round's state would be taken for the
      // new session's, whose history lacks its items, and they would be deleted remotely.
      if (begun?.createdAt != null && end && end.createdAt !== begun.createdAt) throw busy('the session was deleted during the sync round; it is compared afresh next time');
      const exact = view.start && end && end.itemCount === offset + base.length + wanted.length && sameMark(view.start, { ...end, itemCount: view.start.itemCount });
      return exact ? end : inexact(end);
    };
    const rewrite = async (lock) => {
      if (lock === null) throw busy('a run holds the session; the sync round is tried again soon');
      if (!(await view.unchanged())) throw busy('the session changed during the sync round; it is tried again');
      const start = from === local.length && from > 0 ? from - 1 : from; // an append expects the last item
      const expectedSuffix = local.slice(start);
      const replacement = wanted.slice(start);
      // Should this round stop between the local write and the state's, the next one must not
      // take the pulled items for this device's outbox (and push them back).
      if (pulls.length > 0) await write({ confirmed, ids, chunk: [], pulled: pulls });
      // Into a history read empty, only if it still is: a message written meanwhile (the
      // check above and the write are not one transaction) would stand before the pulled items,
      // and the next round take them for items deleted here, and delete them remotely.
      const written =
        expectedSuffix.length > 0
          ? this.#local.applyHistoryTransaction({ operationId: `sync:${uuid()}`, transaction: { type: 'replace_suffix', expectedSuffix, replacement }, [CHANGE_EVENT]: 'sync' })
          : this.#local.replaceHistory(replacement, { expectedItems: [], archive: false, [CHANGE_EVENT]: 'sync' });
      await written.catch(async (error) => {
        if (error?.code !== 'SUFFIX_MISMATCH') throw error;
        // A write of another object or tab came in between: nothing was pulled (the record of the
        // pull goes, or the next round would take an item written meanwhile that looks the same
        // for the pulled one, and never push it), and the round is tried again soon, as above.
        // (A failure of that write is not the round's to report: it waits, as above.)
        if (pulls.length > 0) await write({ confirmed, ids, chunk: [] }).catch(() => {});
        throw busy('the session changed during the sync round; it is tried again');
      });
      return ended();
    };
    // (A history read empty is written by `replaceHistory`, of the second module: loaded before
    // the lock is taken, so that a slow or failed download does not hold up the runs.)
    if (!same && local.length === 0) await extras();
    const mark = same ? await ended() : await withLock(sessionLockName(this.#local.dbName, this.#local.sessionId), rewrite, { ifAvailable: true });
    // (A chat this round pulled is one found: deleted before the next round, not pulled back.)
    this.#seen ||= mark?.createdAt != null;
    await save([...base, ...entries], null, mark);
    if (deferred.length > 0) throw refusal;
  }
}

/** A mark of the record of `mark` that matches no later one, so that the next round compares
 * the whole histories, kept for its creation time (see `#whole`). */
function inexact(mark) {
  return mark && { ...mark, rewrites: -1 };
}

/** Whether two marks are of the same history, unchanged. */
function sameMark(a, b) {
  return !!a && !!b && a.createdAt === b.createdAt && a.rewrites === b.rewrites && a.itemCount === b.itemCount && a.branch === b.branch;
}

/** Whether the history of mark `now` is the one of mark `then` (`count` items), only grown. */
function grown(then, now, count) {
  return !!now && then.createdAt === now.createdAt && then.rewrites === now.rewrites && then.branch === now.branch && then.itemCount === count && now.itemCount >= count;
}
