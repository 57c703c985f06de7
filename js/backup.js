// Backup and restore of sessions as NDJSON: `exportSessions` streams a database's sessions a page
// at a time, `importSessions` writes them back, each session checked whole before any of it is
// written. The reading and the checking are the second WebAssembly module's (`readBackup`,
// `restoreSession`); this file only frames lines.
import { listSessionRecords } from './agent_sessions.js';
import { extras } from './load_extras.js';
import { checkTarget, optionsOf, sessionError } from './errors.js';
import { callListener } from './events.js';
import { LONGEST } from './copy.js';

// The reading and the writing of rows are the second module's, loaded by the first call.
const readBackup = async (options) => (await extras()).readBackup(options);
const restoreSession = async (lines, numbers, options) => (await extras()).restoreSession(lines, numbers, options);

/** The format name and version of the first line of a backup. */
export const BACKUP_FORMAT = 'agent-sessions-backup';
export const BACKUP_VERSION = 1;

/** The kinds of lines that carry a session's rows, in the order they are written. */
const ROW_KINDS = ['item', 'archived', 'usage', 'operation'];

/** Rows per page: each page is one read transaction. At most PAGE rows, fewer where a kind of
 * row is large (images as data URLs): the first page of each kind is FIRST_PAGE rows, each
 * next one as many as make about PAGE_SIZE of text at the size of the rows before it (a page of
 * 500 such items was gigabytes of text, built at once). */
const PAGE = 500;
const FIRST_PAGE = 8;
const PAGE_SIZE = 8 * 1024 * 1024;

/** Characters of a session's lines held back until its end line, so that a session rewritten
 * while it was read can be read again whole; a longer session streams page by page. */
const HOLD = 1024 * 1024;

/** Readings of a session rewritten while it is read, before it is written out as it is. */
const TRIES = 3;

/** What is wrong with one session only: the export writes a `failed` line for it and goes on
 * (`INVALID_SESSION_ID`: a record other code stored under an id no call can name). */
const SESSION_FAULTS = ['CORRUPT_SESSION', 'INVALID_ITEM', 'INVALID_SESSION_ID'];

function invalid(message, line) {
  const error = new Error(message);
  error.name = 'SessionError';
  error.code = 'IMPORT_INVALID';
  if (line !== undefined) error.line = line;
  return error;
}

/** The session records `options` names. A `userId` of `null` is the sessions without a user (as
 * in `searchSessions` and `watchSessions`): IndexedDB's index of owners cannot list them (`null`
 * is no key), so every record is read and those are kept. */
export async function sessionRecords(options) {
  const records = await listSessionRecords(options);
  return options?.userId === null ? records.filter((r) => r.userId == null) : records;
}

/**
 * The sessions of a database (one user's with `userId`, only `sessionIds` when given) as a
 * `ReadableStream` of UTF-8 NDJSON: a header line, then each session's record, rows and end line.
 * Sessions are read as the stream is pulled, so the whole database never sits in memory: a
 * session goes out whole once read (read again if it was rewritten meanwhile), or, past 1 MiB of
 * text, page by page.
 */
export function exportSessions(options) {
  const { dbName, userId, sessionIds } = optionsOf(options, 'exportSessions', 'dbName userId sessionIds');
  // Checked at the call, as importSessions checks them: an error of the stream is easily lost
  // (`new Response(stream).blob()` rejects with the browser's own TypeError).
  checkTarget(userId, dbName, 'exportSessions');
  if (sessionIds != null && !(Array.isArray(sessionIds) && sessionIds.length <= LONGEST && sessionIds.every((id) => typeof id === 'string'))) {
    const got = !Array.isArray(sessionIds) ? typeof sessionIds : sessionIds.length > LONGEST ? `${sessionIds.length} of them, more than the 1,048,576 one call takes` : 'an array holding something else';
    throw sessionError('INVALID_OPTIONS', `exportSessions: options.sessionIds must be an array of session ids (strings), got ${got}`);
  }
  const encoder = new TextEncoder();
  const base = dbName === undefined ? {} : { dbName };
  let queue = null; // session ids still to export
  // The session being read: { sessionId, kind (index), after, lines, record, tries, held (its
  // text so far, or null once streaming), size }.
  let current = null;
  const wanted = sessionIds == null ? null : new Set(sessionIds);
  // What went out, for `stream.report` once the stream ends: a backup's `failed` lines are
  // otherwise found only when it is restored, maybe after the device is gone.
  const report = { sessions: 0, failed: [], deleted: [] };
  let settle;
  const ended = new Promise((ok, fail) => (settle = { ok, fail }));
  // (Read or not, as the page likes.)
  ended.catch(() => {});
  const failedLine = (failed) => (report.failed.push(failed), line({ failed }));
  const deletedLine = (sessionId) => (report.deleted.push(sessionId), line({ deleted: { sessionId } }));
  const line = (value) => {
    try {
      return JSON.stringify(value) + '\n';
    } catch (error) {
      // A stored item may hold what the browser stores and JSON cannot write (a BigInt, a cycle).
      throw sessionError('INVALID_ITEM', `a ${Object.keys(value)[0]} line holds a value JSON cannot write (${error?.message ?? error})`);
    }
  };
  /** The next chunk of text, or `null` at the end. A session that cannot be written out (a
   * damaged record, an item JSON cannot write) does not stop the export: a `failed` line takes
   * its place (after what of it already went out), saying why, and the export goes on. */
  let working; // the id of the session being read
  const next = async () => {
    working = undefined;
    try {
      return await chunk();
    } catch (error) {
      if (!SESSION_FAULTS.includes(error?.code) || working === undefined) throw error;
      // (What of it was read already goes out before the line saying it failed.)
      const last = current?.last ?? '';
      current = null;
      return last + failedLine({ sessionId: working, code: error.code, message: error.message });
    }
  };
  /** Whether a session's record read (`rows`) says it is gone: deleted, or deleted and made
   * again by another user than the one exported (it is not theirs to back up). */
  const absent = (rows) => rows.length === 0 || (userId !== undefined && (rows[0].userId ?? null) !== userId);
  /** The next chunk of text, or `null` at the end. */
  const chunk = async () => {
    if (queue === null) {
      const list = await sessionRecords(userId === undefined ? base : { ...base, userId });
      // Oldest first, so an import lists them in the order they were made.
      queue = list
        .map((s) => s.id)
        .filter((id) => wanted === null || wanted.has(id))
        .reverse();
      // The rows are read by the second module: one that cannot be loaded fails the stream
      // before its first line, not after a header that promises sessions.
      if (queue.length) await extras();
      return line({ format: BACKUP_FORMAT, version: BACKUP_VERSION, exportedAt: Date.now(), sessions: queue.length });
    }
    for (;;) {
      if (current === null) {
        const sessionId = queue.shift();
        if (sessionId === undefined) return null;
        working = sessionId;
        const { rows } = await readBackup({ ...base, sessionId, kind: 'session' });
        // Deleted since it was listed: a line says so, so that the header's count still holds.
        if (absent(rows)) return deletedLine(sessionId);
        start(sessionId, rows[0], 1);
        continue;
      }
      working = current.sessionId;
      const kind = ROW_KINDS[current.kind];
      if (kind === undefined) {
        const end = line({ end: { sessionId: current.sessionId, lines: current.lines + 1 } });
        const { sessionId, held, record, tries, sent, last = '' } = current;
        current = null;
        // A session rewritten while it was read (popped, compacted, edited in another tab) lost
        // rows its record line names, or had rows read under numbers the rewrite gave other
        // items: no import would take it, or it would hold a history that never was. One still
        // held is read again from its new record; one already sent in part (longer than a
        // session is held for) is a `failed` line after its rows, which the import reports.
        const { rows } = await readBackup({ ...base, sessionId, kind: 'session' });
        // Deleted meanwhile: a line says so, after what of it went out (the pages read after the
        // deletion were empty: with an end line, it read as a damaged session), which an
        // import drops.
        if (absent(rows)) return deletedLine(sessionId);
        // (A session deleted and made again under its id meanwhile has another `createdAt`. A
        // record schema 4 or earlier wrote has no `rewrites` until its next write: none is 0.)
        if ((rows[0].rewrites ?? 0) === (record.rewrites ?? 0) && rows[0].createdAt === record.createdAt) {
          report.sessions += 1;
          return (held ?? []).join('') + last + end;
        }
        // (Nothing of it sent yet, though no longer held: it is still read again.)
        if (!sent && tries < TRIES) {
          start(sessionId, rows[0], tries + 1);
          continue;
        }
        return (sent ? last : '') + failedLine({ sessionId, code: 'SESSION_BUSY', message: `session "${sessionId}" was rewritten (popped, compacted, edited in another tab) while it was exported: back it up again` });
      }
      // Only the rows the record written above names: a turn another tab adds meanwhile would
      // make a session its record does not count, which no import would take.
      const { rows, next: after } = await readBackup({ ...base, sessionId: current.sessionId, kind, after: current.after, limit: current.page, record: current.record });
      current.lines += rows.length;
      if (after === null) {
        current.kind += 1;
        current.after = null;
      } else {
        current.after = after;
      }
      let text = '';
      // (Item rows come without their search terms: an import makes them again.)
      for (const row of rows) text += line({ [kind]: row });
      current.page = after === null ? FIRST_PAGE : Math.max(1, Math.min(PAGE, Math.floor((PAGE_SIZE * rows.length) / (text.length || 1))));
      // A session sent page by page sends the last page of each kind of row with what follows
      // it (the next kinds' first pages, or its end line once its record is checked, above), in
      // this pull: the next may come much later, when a rewrite no longer matters.
      current.last = (current.last ?? '') + hold(text);
      if (after !== null && current.last) {
        const out = current.last;
        current.last = '';
        current.sent = true;
        return out;
      }
    }
  };
  /** Starts a session's export from its record, `tries` being the how-many-th reading. The
   * record's line is held even when it alone is larger than a session is held for (a large
   * `state`): the next text held sends it, or the end line. */
  const start = (sessionId, record, tries) => {
    const text = line({ session: record });
    current = { sessionId, kind: 0, after: null, lines: 1, record, tries, held: [text], size: text.length, page: FIRST_PAGE };
  };
  /** Holds a session's text until its end line (see HOLD); what to send now, if anything. */
  const hold = (text) => {
    if (current.held === null) return text;
    current.held.push(text);
    current.size += text.length;
    if (current.size <= HOLD) return '';
    const all = current.held.join('');
    current.held = null;
    return all;
  };
  const stream = new ReadableStream(
    {
      // Each pull gives one chunk (a session, or a page of a long one), and only a read pulls
      // (no chunk is read ahead): the stream reads only as fast as it is consumed.
      async pull(controller) {
        try {
          const text = await next();
          if (text === null) {
            controller.close();
            settle.ok(report);
          } else controller.enqueue(encoder.encode(text));
        } catch (error) {
          controller.error(error);
          settle.fail(error);
        }
      },
      cancel(reason) {
        settle.fail(reason ?? new DOMException('the export was cancelled', 'AbortError'));
      },
    },
    { highWaterMark: 0 },
  );
  return Object.defineProperty(stream, 'report', { value: ended, enumerable: true });
}

/** What `linesOf` gives for a line whose bytes are not UTF-8 (a damaged file): its session fails,
 * where a decoder that replaced them would import it with its text changed. */
const NOT_UTF8 = Symbol('not UTF-8');

/** The text of a line read in `parts` (strings, or bytes decoded here as one), or `NOT_UTF8`. */
function lineText(parts, decoder) {
  if (parts.every((p) => typeof p === 'string')) return parts.join('');
  const bytes = parts.map((p) => (typeof p === 'string' ? new TextEncoder().encode(p) : p));
  const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of bytes) {
    all.set(b, at);
    at += b.length;
  }
  try {
    return decoder.decode(all);
  } catch {
    return NOT_UTF8;
  }
}

/** The lines of a backup given as a string, a Blob, or a stream of bytes or strings, with their
 * numbers (1-based); blank lines are skipped. Bytes are split into lines before they are
 * decoded (a line end is never inside a character), so that bytes that are not UTF-8 cost only
 * their line (`NOT_UTF8`). */
async function* linesOf(source) {
  let number = 0;
  if (typeof source === 'string') {
    for (const text of source.split('\n')) {
      number += 1;
      if (text.trim()) yield [text, number];
    }
    return;
  }
  const stream = typeof Blob !== 'undefined' && source instanceof Blob ? source.stream() : source;
  if (!stream || typeof stream.getReader !== 'function') {
    throw invalid(`importSessions() takes a string, a Blob or a ReadableStream, got ${source === null ? 'null' : typeof source}`);
  }
  let reader;
  try {
    reader = stream.getReader();
  } catch (error) {
    // A body read already, or locked by another reader.
    throw Object.assign(invalid(`the backup could not be read (${error?.message ?? error})`, 1), { cause: error });
  }
  const decoder = new TextDecoder('utf-8', { fatal: true });
  // The line being read, in the pieces its chunks gave: only each new chunk is searched for a
  // line end, so a line of many megabytes (an image as a data URL) costs its length, not its
  // length times its chunks.
  let parts = [];
  try {
    for (;;) {
      let chunk;
      let text;
      try {
        chunk = await reader.read();
        const value = chunk.value;
        if (chunk.done || typeof value === 'string') text = value;
        else if (ArrayBuffer.isView(value)) text = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
        else if (value instanceof ArrayBuffer) text = new Uint8Array(value);
        else throw new TypeError(`a chunk is neither bytes nor text (${value === null ? 'null' : typeof value})`);
      } catch (error) {
        // A stream that fails (a network error, an aborted upload), or gives what is neither
        // bytes nor text, is a backup cut short.
        throw Object.assign(invalid(`the backup could not be read past line ${number} (${error?.message ?? error})`, number + 1), { cause: error });
      }
      if (chunk.done) break;
      let at = 0;
      let end;
      // (`\n`, or its byte, 10.)
      while ((end = text.indexOf(typeof text === 'string' ? '\n' : 10, at)) >= 0) {
        parts.push(text.slice(at, end));
        at = end + 1;
        const line = lineText(parts, decoder);
        parts = [];
        number += 1;
        if (line === NOT_UTF8 || line.trim()) yield [line, number];
      }
      if (at < text.length) parts.push(text.slice(at));
    }
  } finally {
    reader.releaseLock();
  }
  const rest = lineText(parts, decoder);
  number += 1;
  if (rest === NOT_UTF8 || rest.trim()) yield [rest, number];
}

/**
 * Writes the sessions of a backup into a database. Each session is checked whole and written in
 * one transaction, so a bad line costs only its own session (reported in `failed`, as an
 * `IMPORT_INVALID` error with its `line`), and sessions imported before a failure stay imported.
 * `written(sessionId, userId)` is called (and awaited) after each session written;
 * `around(sessionId, owner, write)` runs each session's write and that call (`sessionId` the id
 * the backup gives it, `owner` the user it is imported for), and resolves to what `write`
 * resolves to.
 */
export async function importSessions(source, options, { written = () => {}, around = (sessionId, owner, write) => write() } = {}) {
  const { dbName, userId, onConflict = 'skip', onProgress } = optionsOf(options, 'importSessions', 'dbName userId onConflict onProgress');
  // Checked before the first line is read: a backup of no session (or one whose first session
  // fails) would otherwise never tell of them.
  checkTarget(userId, dbName, 'importSessions');
  if (!['skip', 'replace', 'rename'].includes(onConflict)) {
    throw sessionError('INVALID_OPTIONS', `importSessions: options.onConflict must be 'skip', 'replace' or 'rename', got ${typeof onConflict === 'string' ? JSON.stringify(onConflict) : typeof onConflict}`);
  }
  if (onProgress != null && typeof onProgress !== 'function') {
    throw sessionError('INVALID_OPTIONS', `importSessions: options.onProgress must be a function, got ${typeof onProgress === 'string' ? JSON.stringify(onProgress) : typeof onProgress}`);
  }
  // The ids this import wrote: a later session of the same backup never skips, replaces or is
  // renamed onto one of them. Kept by the id they would be a rename of (`chat` for `chat-3`),
  // so that each session hands the module only the few that concern it, not every id so far.
  const writtenHere = new Map();
  const concerning = (id) => writtenHere.get(id) ?? [];
  const wrote = (id) => {
    for (const key of new Set([id, /^(.*)-\d+$/.exec(id)?.[1] ?? id])) {
      if (!writtenHere.has(key)) writtenHere.set(key, []);
      writtenHere.get(key).push(id);
    }
  };
  const target = { onConflict, ...(dbName === undefined ? {} : { dbName }), ...(userId === undefined ? {} : { userId }) };
  const report = { imported: [], replaced: [], renamed: [], skipped: [], failed: [], lines: 0 };
  let header = null;
  let session = null; // { lines, numbers, error }
  // The sessions the backup begins (a session line, or the line of one the export could not
  // write out): what its header's count is compared with, not the stray lines that fail.
  let begun = 0;

  const finish = async () => {
    const s = session;
    session = null;
    if (s.error) {
      // (Its record's id, else, where its own line was damaged, the id its end line or a row
      // names: a UI can still say which chat failed.)
      const named = s.lines.map((l) => l?.end?.sessionId ?? (l && typeof l === 'object' ? Object.values(l)[0]?.sessionId : undefined));
      s.error.sessionId = s.lines[0]?.session?.id ?? named.map((id) => (Array.isArray(id) ? id[0] : id)).find((id) => typeof id === 'string');
      report.failed.push(s.error);
    } else {
      // (The module writes the record it is given: read its id and owner first.)
      const from = s.lines[0].session?.id;
      const owner = userId === undefined ? (s.lines[0].session?.userId ?? null) : userId;
      try {
        const { sessionId, status } = await around(from, owner, async () => {
          const done = await restoreSession(s.lines, s.numbers, { ...target, written: concerning(from) });
          if (done.status !== 'skipped') await written(done.sessionId, owner);
          return done;
        });
        if (status === 'renamed') report.renamed.push({ from, sessionId });
        else report[status].push(sessionId);
        if (status !== 'skipped') wrote(sessionId);
      } catch (error) {
        // (A session a run answers in is left as it is, and the others restored.)
        if (error?.code !== 'IMPORT_INVALID' && error?.code !== 'SESSION_BUSY') throw Object.assign(error, { report });
        error.sessionId = from;
        // A session refused whole is about its first line.
        error.line ??= s.numbers[0];
        report.failed.push(error);
      }
    }
    progress();
  };
  // (Sessions deleted while the backup was written count as done: see the `deleted` line.)
  let gone = 0;
  const progress = () => {
    if (typeof onProgress === 'function') {
      const done = gone + report.imported.length + report.replaced.length + report.renamed.length + report.skipped.length + report.failed.length;
      // One that throws is reported, and the import goes on (as change listeners are).
      callListener(onProgress, { sessions: done, of: header.sessions ?? null, lines: report.lines });
    }
  };

  try {
    for await (const [text, number] of linesOf(source)) {
      report.lines = number;
      let value;
      try {
        if (text === NOT_UTF8) throw new SyntaxError('its bytes are not UTF-8 text: the file is damaged');
        value = JSON.parse(text);
      } catch (e) {
        value = undefined;
        const error = invalid(`line ${number} of the backup is not JSON (${e.message})`, number);
        if (header === null) throw error;
        // The session this line is in fails; its other lines are read up to its end line.
        session ??= { lines: [], numbers: [], error: null };
        session.error ??= error;
        continue;
      }
      if (header === null) {
        // (A version is a whole number from 1; the count of sessions, where given, one from 0.)
        if (value?.format !== BACKUP_FORMAT || !(Number.isInteger(value.version) && value.version >= 1)) {
          throw invalid(`line ${number} is not the header of an agent-sessions backup`, number);
        }
        if (value.version > BACKUP_VERSION) {
          throw invalid(`the backup has format version ${value.version}, newer than ${BACKUP_VERSION} that this version of agent-sessions reads: upgrade agent-sessions`, number);
        }
        if (!(value.sessions === undefined || (Number.isInteger(value.sessions) && value.sessions >= 0))) {
          throw invalid(`line ${number} is not the header of an agent-sessions backup (its count of sessions is no whole number)`, number);
        }
        header = value;
        continue;
      }
      if (value !== null && typeof value === 'object' && 'failed' in value) {
        // A session the export could not write out: it fails here, with the export's reason.
        const { sessionId, code, message } = value.failed ?? {};
        const error = invalid(`line ${number}: session ${JSON.stringify(sessionId)} was not exported (${code}: ${message})`, number);
        // (One whose session line came before, streamed, is begun already.)
        if (session?.lines[0]?.session?.id !== sessionId) begun += 1;
        if (session !== null && session.lines[0]?.session?.id !== sessionId) await finish();
        if (session === null) session = { lines: [{ session: { id: sessionId } }], numbers: [number], error };
        else session.error = error;
        await finish();
        continue;
      }
      if (value !== null && typeof value === 'object' && 'deleted' in value && session !== null && session.lines[0]?.session?.id === value.deleted?.sessionId) {
        // A session sent page by page and deleted before its end: what of it came is dropped.
        session = null;
        gone += 1;
        progress();
        continue;
      }
      if (value !== null && typeof value === 'object' && 'deleted' in value) {
        // A session deleted while the backup was written: one the header counts, not in it.
        // (After a session left open, its end line damaged or missing: that one fails first.)
        if (session !== null) await finish();
        begun += 1;
        gone += 1;
        progress();
        continue;
      }
      if (value !== null && typeof value === 'object' && 'session' in value) {
        if (session !== null) {
          // The previous session never ended: its own check reports the missing end line.
          await finish();
        }
        session = { lines: [value], numbers: [number], error: null };
        begun += 1;
        continue;
      }
      session ??= { lines: [], numbers: [], error: invalid(`line ${number} of the backup belongs to no session`, number) };
      session.lines.push(value);
      session.numbers.push(number);
      if (value !== null && typeof value === 'object' && 'end' in value) {
        // (A session whose own line was damaged is one the backup began, once it ends.)
        if (!session.lines[0]?.session) begun += 1;
        await finish();
      }
    }
  } catch (error) {
    // What was imported before the failure stays imported: the error says which.
    throw Object.assign(error, { report });
  }
  if (header === null) throw invalid('the backup is empty: it has no header line', 1);
  if (session !== null) await finish();
  // A file cut just after a session's end line reads as whole but for the sessions it lost.
  if (Number.isInteger(header.sessions) && begun < header.sessions) {
    // (One error for the sessions it lost: `missing` counts them, for a page that counts chats.)
    report.failed.push(Object.assign(invalid(`the backup ends after ${begun} of the ${header.sessions} sessions its header counts: it was cut short`, report.lines + 1), { missing: header.sessions - begun }));
  }
  return report;
}
