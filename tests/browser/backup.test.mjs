// Backup and restore: exportSessions streams a database's sessions as NDJSON and importSessions
// writes them back exactly (items, order, metadata, branches, archive, usage); a bad line costs
// only its session; storageEstimate reports each session's size from its record.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness } from './harness.mjs';

let env;
before(async () => {
  // Precise heap figures and gc(), for the memory measurement of a large export.
  env = await start({ args: ['--enable-precise-memory-info', '--js-flags=--expose-gc'] });
});
after(async () => {
  await env?.close();
});

/** Page helpers: a backup as text, the rest of one being read, and everything a session shows. */
async function helpers(page) {
  await page.evaluate(() => {
    window.backupText = (options) => new Response(lib.exportSessions(options)).text();
    window.readRest = async (reader, decoder) => {
      let text = '';
      for (let read = await reader.read(); !read.done; read = await reader.read()) text += decoder.decode(read.value);
      return text;
    };
    window.snapshot = async (id, options) => {
      const s = new lib.IndexedDbSession(id, options);
      const info = await s.getInfo();
      const branches = await s.listBranches();
      const views = {};
      for (const b of branches) {
        const v = new lib.IndexedDbSession(id, { ...options, branch: b.branchId });
        views[b.branchId] = { items: await v.getItems(), archived: await v.getArchivedItems(), usage: await v.getSessionUsage() };
        await v.close();
      }
      await s.close();
      delete info.bytes;
      return { info, branches, views };
    };
  });
}

test('a 10,000-item round trip gives back the same items, order, metadata, branches, archive and usage', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'backup-from', userId: 'ann' };
    const big = new lib.IndexedDbSession('big', from);
    const items = [];
    for (let i = 0; i < 10000; i++) {
      items.push(
        i % 4 === 0
          ? { role: 'user', content: `question ${i} ünïcødé 👋🏽 "quoted" \\ back\nline` }
          : { type: 'message', role: 'assistant', status: 'completed', id: `msg_${i}`, content: [{ type: 'output_text', text: `answer ${i}`, annotations: [] }], extra: { n: i, f: i / 7, nested: [null, true, { deep: 'x' }] } },
      );
    }
    for (let i = 0; i < items.length; i += 2500) await big.addItems(items.slice(i, i + 2500));
    await big.update({ title: 'The big one', summary: 'many turns', state: { step: 3, tags: ['a', 'b'] } });
    await big.storeRunUsage({ requests: 2, inputTokens: 10, outputTokens: 5, totalTokens: 15 });

    // A smaller session with a compaction archive and two branches.
    const small = new lib.IndexedDbSession('small', from);
    await small.addItems([{ role: 'user', content: 'one' }, { role: 'assistant', content: 'first answer' }]);
    await small.replaceHistoryWithCompaction([{ role: 'assistant', content: 'summary of one' }]);
    await small.addItems([{ role: 'user', content: 'two' }, { role: 'assistant', content: 'answer two' }, { role: 'user', content: 'three' }, { role: 'assistant', content: 'answer three' }]);
    const branch = await small.createBranchFromTurn(2, 'retry-two');
    await small.addItems([{ role: 'assistant', content: 'another answer to two' }]);
    await small.storeRunUsage({ requests: 1, inputTokens: 3, outputTokens: 4, totalTokens: 7 });
    await small.switchBranch('main');
    await small.createBranchFromContent('three');
    await small.switchBranch(branch);
    await Promise.all([big.close(), small.close()]);

    const text = await backupText(from);
    const report = await lib.importSessions(text, { dbName: 'backup-to' });
    const to = { dbName: 'backup-to', userId: 'ann' };
    return {
      lines: text.split('\n').filter(Boolean).length,
      header: JSON.parse(text.split('\n')[0]),
      report: { ...report, failed: report.failed.map(String) },
      before: { big: await snapshot('big', from), small: await snapshot('small', from) },
      after: { big: await snapshot('big', to), small: await snapshot('small', to) },
      listed: (await lib.listSessions(to)).map((s) => [s.sessionId, s.title, s.itemCount, s.currentBranch]),
      items,
    };
  });
  assert.equal(r.header.format, 'agent-sessions-backup');
  assert.equal(r.header.version, 1);
  assert.equal(r.header.sessions, 2);
  assert.deepEqual(r.report.failed, []);
  assert.deepEqual(r.report.imported.sort(), ['big', 'small']);
  assert.equal(r.before.big.views.main.items.length, 10000);
  assert.deepEqual(r.after.big.views.main.items, r.items, 'every item, verbatim, in order');
  assert.deepEqual(r.after.big, r.before.big);
  assert.deepEqual(r.after.small, r.before.small, 'branches, archive and usage as they were');
  assert.equal(r.before.small.branches.length, 3);
  assert.ok(r.before.small.views.main.archived.length > 0, 'the archive travels');
  assert.deepEqual(r.listed, [
    ['small', 'one', 4, 'retry-two'],
    ['big', 'The big one', 10000, 'main'],
  ]);
});

test('an onProgress that throws is reported, and the import goes on to the last session', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'progress-from' };
    for (const id of ['a', 'b', 'c']) await new lib.IndexedDbSession(id, from).addItems([{ role: 'user', content: id }]);
    const text = await backupText(from);
    const reported = [];
    const onError = (e) => (e.preventDefault(), reported.push(e.message));
    window.addEventListener('error', onError);
    try {
      const report = await lib.importSessions(text, { dbName: 'progress-to', onProgress: () => { throw new Error('the progress bar is gone'); } });
      return { imported: report.imported.sort(), reported };
    } finally {
      window.removeEventListener('error', onError);
    }
  });
  assert.deepEqual(r.imported, ['a', 'b', 'c']);
  assert.equal(r.reported.length, 3);
  assert.match(r.reported[0], /the progress bar is gone/);
});

test('a corrupt line (bytes that are not UTF-8 too; metadata no session holds) rejects only its session, with its line number; the others are imported', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'corrupt-from' };
    for (const id of ['a', 'b', 'c']) {
      const s = new lib.IndexedDbSession(id, from);
      await s.addItems([{ role: 'user', content: `hi ${id}` }, { role: 'assistant', content: `hello ${id}` }]);
      await s.close();
    }
    const lines = (await backupText(from)).split('\n');
    const outcomes = {};
    // Each corruption, in session b's lines: broken JSON, an item of another session, a lost
    // line (the record counts one more item than the backup holds), a repeated line.
    const firstOfB = lines.findIndex((l) => l.includes('"session"') && l.includes('"id":"b"'));
    const itemOfB = firstOfB + 1;
    const cases = {
      json: (ls) => ls.with(itemOfB, ls[itemOfB].slice(0, -3)),
      foreign: (ls) => ls.with(itemOfB, ls[itemOfB].replace('"sessionId":"b"', '"sessionId":"a"')),
      lost: (ls) => ls.toSpliced(itemOfB, 1),
      twice: (ls) => ls.with(itemOfB, ls[itemOfB + 1]),
      record: (ls) => ls.with(firstOfB, ls[firstOfB].replace(/"itemCount":\d+/, '"itemCount":-1')),
      array: (ls) => ls.with(itemOfB, ls[itemOfB].replace(/"item":\{"role":[^}]*\}/, '"item":["not","an","item"]')),
      // Ids no call could name: the session would be one nothing opens, deletes or exports.
      blankId: (ls) => ls.map((l, i) => (i < firstOfB ? l : l.replaceAll('"sessionId":"b"', '"sessionId":" "').replace('"id":"b"', '"id":" "'))),
      blankUser: (ls) => ls.with(firstOfB, ls[firstOfB].replace('"userId":null', '"userId":""')),
      // b's own line broken: the failure still names b, from its rows.
      sessionLine: (ls) => ls.with(firstOfB, ls[firstOfB].slice(0, -3)),
      // Metadata no session holds: a title that is no text (it reached every list), a branch
      // the session does not have (the chat could not be opened on it), a size below zero.
      title: (ls) => ls.with(firstOfB, ls[firstOfB].replace('"title":"hi b"', '"title":42')),
      branch: (ls) => ls.with(firstOfB, ls[firstOfB].replace('"id":"b"', '"id":"b","currentBranch":"ghost"')),
      bytes: (ls) => ls.with(firstOfB, ls[firstOfB].replace(/"bytes":\d+/, '"bytes":-5')),
      topics: (ls) => ls.with(firstOfB, ls[firstOfB].replace('"id":"b"', '"id":"b","topics":"weather"')),
    };
    // Bytes that are not UTF-8 in an item of b (a damaged file), read from a Blob.
    const bytes = new TextEncoder();
    const damaged = new Blob(lines.flatMap((l, i) => [...(i === itemOfB ? l.split('hi b').flatMap((part, k) => (k ? [new Uint8Array([0xff, 0xfe]), part] : [part])) : [l]), '\n']).map((p) => (typeof p === 'string' ? bytes.encode(p) : p)));
    for (const [name, corrupt] of [...Object.entries(cases), ['damaged', () => damaged]]) {
      const dbName = `corrupt-to-${name}`;
      const source = corrupt(lines);
      const report = await lib.importSessions(source instanceof Blob ? source : source.join('\n'), { dbName });
      outcomes[name] = {
        imported: report.imported,
        failed: report.failed.map((e) => ({ name: e.name, code: e.code, line: e.line, sessionId: e.sessionId, message: e.message })),
        stored: (await lib.listSessions({ dbName })).map((s) => s.sessionId).sort(),
      };
    }
    return { outcomes, itemLine: itemOfB + 1, recordLine: firstOfB + 1 };
  });
  for (const [name, o] of Object.entries(r.outcomes)) {
    assert.deepEqual(o.imported, ['a', 'c'], `${name}: the other sessions are imported`);
    assert.deepEqual(o.stored, ['a', 'c'], `${name}: nothing of b is written`);
    assert.equal(o.failed.length, 1, name);
    const [e] = o.failed;
    assert.equal(e.name, 'SessionError', name);
    assert.equal(e.code, 'IMPORT_INVALID', name);
    assert.match(e.message, /^line \d+ /, `${name}: the message names the line`);
  }
  assert.equal(r.outcomes.json.failed[0].line, r.itemLine);
  assert.match(r.outcomes.json.failed[0].message, /not JSON/);
  assert.equal(r.outcomes.foreign.failed[0].line, r.itemLine);
  assert.match(r.outcomes.foreign.failed[0].message, /another session/);
  // The end line counts the session's lines: one lost is found there.
  assert.equal(r.outcomes.lost.failed[0].line, r.itemLine + 1);
  assert.match(r.outcomes.lost.failed[0].message, /end line counts 4 lines .* has 3/);
  assert.match(r.outcomes.twice.failed[0].message, /comes twice/);
  assert.equal(r.outcomes.record.failed[0].line, r.recordLine);
  assert.equal(r.outcomes.array.failed[0].line, r.itemLine);
  assert.match(r.outcomes.array.failed[0].message, /no item object/);
  assert.equal(r.outcomes.blankId.failed[0].line, r.recordLine);
  assert.match(r.outcomes.blankId.failed[0].message, /sessionId must be a non-empty string/);
  assert.equal(r.outcomes.blankUser.failed[0].line, r.recordLine);
  assert.match(r.outcomes.blankUser.failed[0].message, /userId must be a non-empty string/);
  assert.equal(r.outcomes.json.failed[0].sessionId, 'b');
  assert.equal(r.outcomes.sessionLine.failed[0].sessionId, 'b', 'named by its rows');
  assert.equal(r.outcomes.sessionLine.failed[0].line, r.recordLine);
  for (const [name, message] of [['title', /its title \(the number 42\) is not one update\(\) takes/], ['branch', /its currentBranch \("ghost"\) is not one of its branches/], ['bytes', /its bytes \(the number -5\) is not a count/], ['topics', /its topics \(a string\) is not one update\(\) takes/]]) {
    assert.equal(r.outcomes[name].failed[0].line, r.recordLine, name);
    assert.match(r.outcomes[name].failed[0].message, message);
  }
  assert.equal(r.outcomes.damaged.failed[0].line, r.itemLine);
  assert.match(r.outcomes.damaged.failed[0].message, /its bytes are not UTF-8 text: the file is damaged/);
});

test('a backup that is not one is refused whole; a cut-short one loses only its last session', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const refused = async (source, options) => {
      try {
        await lib.importSessions(source, { dbName: 'refused', ...options });
        return null;
      } catch (e) {
        return { name: e.name, code: e.code, line: e.line, message: e.message };
      }
    };
    const from = { dbName: 'cut-from' };
    for (const id of ['x', 'y']) {
      const s = new lib.IndexedDbSession(id, from);
      await s.addItems([{ role: 'user', content: id }, { role: 'assistant', content: id }]);
      await s.close();
    }
    const text = await backupText(from);
    const cut = text.slice(0, text.lastIndexOf('{"end"'));
    const report = await lib.importSessions(new Blob([cut]), { dbName: 'cut-to' });
    // Cut just after the first session's end line, and after the header alone: whole-looking
    // files that lost sessions.
    const firstEnd = text.indexOf('\n', text.indexOf('{"end"')) + 1;
    const atBoundary = await lib.importSessions(text.slice(0, firstEnd), { dbName: 'cut-boundary' });
    const headerOnly = await lib.importSessions(text.slice(0, text.indexOf('\n') + 1), { dbName: 'cut-header' });
    // A line that belongs to no session (a stray line after the first session's end) fails on
    // its own, and does not stand for the session the cut lost.
    const junk = await lib.importSessions(`${text.slice(0, firstEnd)}{"note":"stray"}\n`, { dbName: 'cut-junk' });
    // A session the export streamed and then could not finish (its session line, then its
    // failed line), and the file cut after it: still one session begun of two.
    const lines = text.split('\n');
    const failedLine = JSON.stringify({ failed: { sessionId: JSON.parse(lines[1]).session.id, code: 'STORAGE_ERROR', message: 'the disk failed' } });
    const streamed = await lib.importSessions(`${lines[0]}\n${lines[1]}\n${failedLine}\n`, { dbName: 'cut-streamed' });
    return {
      boundary: { imported: atBoundary.imported, failed: atBoundary.failed.map((e) => [e.code, e.message]), missing: atBoundary.failed.map((e) => e.missing) },
      headerMissing: headerOnly.failed.map((e) => e.missing),
      headerOnly: { imported: headerOnly.imported, failed: headerOnly.failed.map((e) => e.code) },
      junk: { imported: junk.imported, failed: junk.failed.map((e) => e.message) },
      streamed: { imported: streamed.imported, failed: streamed.failed.map((e) => e.message) },
      wrongSource: await Promise.all([42, null, { a: 1 }].map((source) => outcome(() => lib.importSessions(source, { dbName: 'refused' })))),
      wrongIds: await Promise.all([5, 'two', [1]].map((sessionIds) => outcome(() => lib.exportSessions({ ...from, sessionIds })))),
      wrongRetention: await outcome(() => lib.applyRetention(30)),
      notJson: await refused('hello\n'),
      other: await refused('{"format":"something-else","version":1}\n'),
      newer: await refused('{"format":"agent-sessions-backup","version":99}\n'),
      // A version or a count of sessions no export writes.
      versionZero: await refused('{"format":"agent-sessions-backup","version":0,"sessions":0}\n'),
      versionFraction: await refused('{"format":"agent-sessions-backup","version":0.5,"sessions":0}\n'),
      negativeCount: await refused('{"format":"agent-sessions-backup","version":1,"sessions":-1}\n'),
      empty: await refused(''),
      options: await refused('', { onConflict: 'merge' }),
      bigint: await refused('', { onConflict: 10n }),
      // (As a search's: an import with no progress reports for the page that asked for them.)
      progress: await refused('{"format":"agent-sessions-backup","version":1,"sessions":0}\n', { onProgress: 'report' }),
      cut: { imported: report.imported, failed: report.failed.map((e) => e.message) },
      stored: (await lib.listSessions({ dbName: 'cut-to' })).map((s) => s.sessionId),
    };
  });
  for (const key of ['notJson', 'other', 'newer', 'empty', 'versionZero', 'versionFraction', 'negativeCount']) {
    assert.equal(r[key]?.code, 'IMPORT_INVALID', key);
    assert.equal(r[key].line, 1, key);
  }
  assert.match(r.newer.message, /newer/);
  assert.equal(r.options.code, 'INVALID_OPTIONS');
  assert.deepEqual([r.progress?.code, r.progress?.message], ['INVALID_OPTIONS', 'importSessions: options.onProgress must be a function, got "report"']);
  assert.deepEqual([r.bigint?.name, r.bigint?.code], ['SessionError', 'INVALID_OPTIONS'], 'an onConflict JSON cannot write is named by its type');
  assert.deepEqual(r.cut.imported, ['x']);
  assert.equal(r.cut.failed.length, 1);
  assert.match(r.cut.failed[0], /cut short/);
  assert.deepEqual(r.stored, ['x']);
  assert.deepEqual(r.boundary.imported, ['x']);
  assert.equal(r.boundary.failed.length, 1);
  assert.equal(r.boundary.failed[0][0], 'IMPORT_INVALID');
  assert.match(r.boundary.failed[0][1], /ends after 1 of the 2 sessions.*cut short/);
  assert.deepEqual(r.boundary.missing, [1], 'the count of the sessions it lost');
  assert.deepEqual(r.headerMissing, [2]);
  assert.deepEqual(r.headerOnly, { imported: [], failed: ['IMPORT_INVALID'] });
  assert.deepEqual(r.junk.imported, ['x']);
  assert.equal(r.junk.failed.length, 2, r.junk.failed.join('; '));
  assert.match(r.junk.failed[0], /belongs to no session/);
  assert.match(r.junk.failed[1], /ends after 1 of the 2 sessions.*cut short/);
  assert.deepEqual(r.streamed.imported, []);
  assert.equal(r.streamed.failed.length, 2, r.streamed.failed.join('; '));
  assert.match(r.streamed.failed[0], /session "[xy]" was not exported/);
  assert.match(r.streamed.failed[1], /ends after 1 of the 2 sessions.*cut short/);
  assert.deepEqual(r.wrongSource, Array(3).fill('SessionError IMPORT_INVALID'));
  assert.deepEqual(r.wrongIds, Array(3).fill('SessionError INVALID_OPTIONS'));
  assert.equal(r.wrongRetention, 'SessionError INVALID_OPTIONS');
});

test('bad importSessions options (a lone surrogate too) are refused before a line is read, even with a backup of no session, and bad exportSessions options at the call', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const none = await backupText({ dbName: `empty-${Math.random()}` });
    return {
      header: none.trim().split('\n').length,
      blankUser: await outcome(() => lib.importSessions(none, { userId: ' ' })),
      numberUser: await outcome(() => lib.importSessions(none, { userId: 7 })),
      emptyDb: await outcome(() => lib.importSessions(none, { dbName: '' })),
      noUser: await outcome(() => lib.importSessions(none, { userId: null })),
      // exportSessions refuses them at the call, not as an error of its stream (which
      // `new Response(stream).blob()` gives as the browser's own TypeError).
      exportBlankUser: await outcome(() => lib.exportSessions({ userId: ' ' })),
      // Blank as the sessions read ids (Unicode's White_Space): U+0085 is, U+FEFF is not.
      exportNelUser: await outcome(() => lib.exportSessions({ userId: '\u0085' })),
      bomUser: await (async () => {
        const dbName = `bom-${Math.random()}`;
        await new lib.IndexedDbSession('s', { dbName, userId: '\uFEFF' }).addItems([{ role: 'user', content: 'kept' }]);
        const text = await new Response(lib.exportSessions({ dbName, userId: '\uFEFF' })).text();
        return text.trim().split('\n').length;
      })(),
      exportEmptyDb: await outcome(() => lib.exportSessions({ dbName: '' })),
      // A lone surrogate, which no session takes: at the call too (the import of a backup of no
      // session resolved; the export's stream failed at its first read).
      loneUser: await outcome(() => lib.importSessions(none, { userId: 'a\uD800' })),
      exportLoneUser: await outcome(() => lib.exportSessions({ userId: 'a\uD800' })),
      exportLoneDb: await outcome(() => lib.exportSessions({ dbName: '\uDC00db' })),
    };
  });
  assert.equal(r.loneUser, 'SessionError INVALID_USER_ID');
  assert.equal(r.exportLoneUser, 'SessionError INVALID_USER_ID');
  assert.equal(r.exportLoneDb, 'SessionError INVALID_OPTIONS');
  assert.equal(r.header, 1, 'a backup of no session is its header alone');
  assert.equal(r.blankUser, 'SessionError INVALID_USER_ID');
  assert.equal(r.numberUser, 'SessionError INVALID_USER_ID');
  assert.equal(r.emptyDb, 'SessionError INVALID_OPTIONS');
  assert.equal(r.noUser, 'resolved');
  assert.equal(r.exportBlankUser, 'SessionError INVALID_USER_ID');
  assert.equal(r.exportNelUser, 'SessionError INVALID_USER_ID');
  assert.ok(r.bomUser > 1, 'a user the sessions take is exported');
  assert.equal(r.exportEmptyDb, 'SessionError INVALID_OPTIONS');
});

test('a backup read in small chunks, its lines split anywhere (inside a character too), comes in whole; a locked stream or chunks that are not bytes are IMPORT_INVALID', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const from = { dbName: `chunks-from-${Math.random()}` };
    // A line of about 400 KB (an image as a data URL), with text of several bytes per character.
    const big = [{ role: 'user', content: [{ type: 'input_text', text: 'Ünïcödé 東京 😀 '.repeat(2000) }, { type: 'input_image', image_url: `data:image/png;base64,${'A'.repeat(300000)}` }] }];
    const small = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello 👋' }];
    await new lib.IndexedDbSession('big', from).addItems(big);
    await new lib.IndexedDbSession('small', from).addItems(small);
    const bytes = new TextEncoder().encode(await new Response(lib.exportSessions(from)).text());
    // Chunks of 1 to 4096 bytes, in a fixed pattern.
    const source = new ReadableStream({
      start(controller) {
        let at = 0;
        for (let i = 0; at < bytes.length; i++) {
          const size = [1, 3, 4096, 7, 1000][i % 5];
          controller.enqueue(bytes.slice(at, at + size));
          at += size;
        }
        controller.close();
      },
    });
    const to = { dbName: `chunks-to-${Math.random()}` };
    const report = await lib.importSessions(source, to);
    const locked = new Response('x').body;
    locked.getReader();
    const numbers = new ReadableStream({
      start(controller) {
        controller.enqueue(42);
        controller.close();
      },
    });
    const code = (p) => p.then(() => 'imported', (e) => `${e.name} ${e.code}`);
    return {
      imported: report.imported.sort(),
      lines: report.lines,
      bigBack: JSON.stringify(await new lib.IndexedDbSession('big', to).getItems()) === JSON.stringify(big),
      smallBack: await new lib.IndexedDbSession('small', to).getItems(),
      locked: await code(lib.importSessions(locked, { dbName: `locked-${Math.random()}` })),
      numbers: await code(lib.importSessions(numbers, { dbName: `numbers-${Math.random()}` })),
    };
  });
  assert.deepEqual(r.imported, ['big', 'small']);
  assert.equal(r.bigBack, true, 'the long line, split inside its characters, is read back whole');
  assert.deepEqual(r.smallBack, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello 👋' }]);
  assert.equal(r.locked, 'SessionError IMPORT_INVALID');
  assert.equal(r.numbers, 'SessionError IMPORT_INVALID');
});

test('a source stream that fails is IMPORT_INVALID, with the report of what was imported before it', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const from = { dbName: `stream-from-${Math.random()}` };
    for (const id of ['a', 'b']) await new lib.IndexedDbSession(id, from).addItems([{ role: 'user', content: `hi ${id}` }]);
    const lines = (await new Response(lib.exportSessions(from)).text()).split('\n');
    // The header and session a, then the stream fails (a dropped connection).
    const firstOfB = lines.findIndex((l) => l.includes('"session"') && l.includes('"id":"b"'));
    const source = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(lines.slice(0, firstOfB).join('\n') + '\n'));
      },
      pull(controller) {
        controller.error(new TypeError('network error'));
      },
    });
    const to = { dbName: `stream-to-${Math.random()}` };
    try {
      await lib.importSessions(source, to);
      return 'imported';
    } catch (e) {
      return { name: e.name, code: e.code, message: e.message, cause: e.cause?.message, imported: e.report?.imported, stored: (await lib.listSessions(to)).map((s) => s.sessionId) };
    }
  });
  assert.equal(r.name, 'SessionError');
  assert.equal(r.code, 'IMPORT_INVALID');
  assert.match(r.message, /could not be read past line \d+ \(network error\)/);
  assert.equal(r.cause, 'network error');
  assert.deepEqual(r.imported, ['a']);
  assert.deepEqual(r.stored, ['a']);
});

test('a session whose record alone is over a MiB (a large state) is exported whole, and imports', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'big-record-from', userId: 'ann' };
    const s = new lib.IndexedDbSession('big', from);
    await s.addItems([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
    await s.update({ state: { notes: 'x'.repeat(1_300_000) } });
    await new lib.IndexedDbSession('small', from).addItems([{ role: 'user', content: 'other' }]);
    const text = await backupText(from);
    const to = { dbName: 'big-record-to', userId: 'ann' };
    const report = await lib.importSessions(text, to);
    const back = await snapshot('big', to);
    return { imported: report.imported.sort(), failed: report.failed.map((e) => e.message), same: JSON.stringify(back) === JSON.stringify(await snapshot('big', from)), notes: back.info.state.notes.length };
  });
  assert.deepEqual(r.failed, []);
  assert.deepEqual(r.imported, ['big', 'small']);
  assert.equal(r.notes, 1_300_000);
  assert.equal(r.same, true, 'items, metadata and state as they were');
});

test('an encrypted session (its history sealed, or only its archive) is imported only under its own id: where that id is taken, it fails with IMPORT_INVALID instead of coming in renamed and unreadable', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const key = crypto.getRandomValues(new Uint8Array(32));
    const from = { dbName: 'enc-backup-from', userId: 'ann' };
    await new lib.EncryptedSession(new lib.IndexedDbSession('chat', from), { key }).addItems([{ role: 'user', content: 'sealed' }]);
    await new lib.IndexedDbSession('plain', from).addItems([{ role: 'user', content: 'open' }]);
    // One whose sealed items are all in its archive (its history replaced by nothing).
    const archivedOnly = new lib.EncryptedSession(new lib.IndexedDbSession('vault', from), { key });
    await archivedOnly.addItems([{ role: 'user', content: 'kept in the archive' }]);
    await archivedOnly.replaceHistory([]);
    const text = await backupText(from);
    const out = {};
    // Where the id is free, it comes in and opens with its key.
    const free = { dbName: 'enc-backup-free', userId: 'ann' };
    out.free = (await lib.importSessions(text, free)).imported.sort();
    out.archived = (await new lib.EncryptedSession(new lib.IndexedDbSession('vault', free), { key }).getArchivedItems()).map((i) => i.content);
    out.readable = (await new lib.EncryptedSession(new lib.IndexedDbSession('chat', free), { key }).getItems()).map((i) => i.content);
    // Where Bob has a "chat" (an import never touches another user's session: it renames), and
    // where Ann's own "chat" is asked to be renamed.
    const bobs = { dbName: 'enc-backup-bob', userId: 'ann' };
    await new lib.IndexedDbSession('chat', { dbName: bobs.dbName, userId: 'bob' }).addItems([{ role: 'user', content: 'bob' }]);
    for (const [name, to, onConflict] of [['bob', bobs, 'skip'], ['rename', free, 'rename']]) {
      const report = await lib.importSessions(text, { ...to, onConflict });
      out[name] = {
        failed: report.failed.map((e) => [e.code, typeof e.line, e.sessionId, /encrypted items, which open only under its own id/.test(e.message)]),
        renamed: report.renamed,
        ids: (await lib.listSessions({ dbName: to.dbName })).map((s) => s.sessionId).sort(),
      };
    }
    return out;
  });
  assert.deepEqual(r.free, ['chat', 'plain', 'vault']);
  assert.deepEqual(r.readable, ['sealed']);
  assert.deepEqual(r.archived, ['kept in the archive']);
  assert.deepEqual(r.bob.failed, [['IMPORT_INVALID', 'number', 'chat', true]]);
  assert.deepEqual(r.bob.ids, ['chat', 'plain', 'vault'], "Bob's chat untouched, no renamed copy");
  assert.deepEqual(r.rename.failed, [['IMPORT_INVALID', 'number', 'chat', true], ['IMPORT_INVALID', 'number', 'vault', true]]);
  assert.deepEqual(r.rename.renamed, [{ from: 'plain', sessionId: 'plain-2' }], 'a plain session is renamed as before');
  assert.deepEqual(r.rename.ids, ['chat', 'plain', 'plain-2', 'vault']);
});

test('a session indexed with its tool calls (index.tools) is found by the same words after a round trip; one indexed without is not', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'tools-backup-from', userId: 'ann' };
    const call = (id) => ({ type: 'function_call', callId: id, name: 'weather', arguments: '{"city":"Reykjavik"}' });
    const output = (id) => ({ type: 'function_call_result', callId: id, name: 'weather', output: { type: 'text', text: 'Sleet in Reykjavik' } });
    const tools = new lib.IndexedDbSession('tools', { ...from, index: { tools: true } });
    await tools.addItems([{ role: 'user', content: 'weather please' }, call('c1'), output('c1'), { role: 'assistant', content: 'Sleet.' }]);
    await new lib.IndexedDbSession('plain', from).addItems([{ role: 'user', content: 'weather too' }, call('c2'), output('c2')]);
    const text = await backupText(from);
    const to = { dbName: 'tools-backup-to', userId: 'ann' };
    const report = await lib.importSessions(text, to);
    const find = async (options, query) => (await lib.searchSessions({ ...options, query })).map((h) => `${h.sessionId}:${h.seq}`).sort();
    // The rows as stored: the import leaves no mark of its own on them.
    const rows = await new Promise((done, fail) => {
      const open = indexedDB.open(to.dbName);
      open.onerror = () => fail(open.error);
      open.onsuccess = () => {
        const get = open.result.transaction('agent_messages').objectStore('agent_messages').getAll();
        get.onsuccess = () => {
          open.result.close();
          done(get.result);
        };
      };
    });
    return {
      imported: report.imported.sort(),
      lines: text.split('\n').filter((l) => l.startsWith('{"item"')).map((l) => [JSON.parse(l).item.sessionId, JSON.parse(l).item.seq, JSON.parse(l).item.indexTools ?? null, 'terms' in JSON.parse(l).item]),
      before: { city: await find(from, 'reykjavik'), sleet: await find(from, 'sleet'), weather: await find(from, 'weather') },
      after: { city: await find(to, 'reykjavik'), sleet: await find(to, 'sleet'), weather: await find(to, 'weather') },
      marks: rows.filter((row) => 'indexTools' in row).length,
      items: JSON.stringify((await new lib.IndexedDbSession('tools', to).getItems())) === JSON.stringify(await tools.getItems()),
    };
  });
  assert.deepEqual(r.imported, ['plain', 'tools']);
  // Only the tool rows indexed with their text say so; no row carries its terms.
  assert.deepEqual(r.lines.sort(), [['plain', 0, null, false], ['plain', 1, null, false], ['plain', 2, null, false], ['tools', 0, null, false], ['tools', 1, true, false], ['tools', 2, true, false], ['tools', 3, null, false]]);
  assert.deepEqual(r.before, { city: ['tools:1', 'tools:2'], sleet: ['tools:2', 'tools:3'], weather: ['plain:0', 'tools:0', 'tools:1'] });
  assert.deepEqual(r.after, r.before, 'the same hits after the round trip');
  assert.equal(r.marks, 0);
  assert.equal(r.items, true);
});

test('an operation of a backup that names a branch (the log is the session’s, not a branch’s) is that session’s IMPORT_INVALID: nothing of it is written, no row outlives it', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'ops-branch-from', userId: 'ann' };
    const s = new lib.IndexedDbSession('forked', from);
    await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2' }]);
    await s.applyHistoryTransaction({ operationId: 'save-1', transaction: { type: 'append_items', items: [{ role: 'assistant', content: 'a2' }] } });
    await s.createBranchFromTurn(2, 'retry');
    const lines = (await backupText(from)).split('\n');
    const at = lines.findIndex((l) => l.includes('"operationId":"save-1"'));
    const edited = lines[at].replace('"sessionId":"forked"', '"sessionId":["forked","retry"]');
    lines[at] = edited;
    const to = { dbName: 'ops-branch-to', userId: 'ann' };
    const report = await lib.importSessions(lines.join('\n'), to);
    // Such a row already stored (an earlier version's import of an edited file) is left out of
    // the session's next backup, which then imports.
    const request = (q) => new Promise((ok, fail) => ((q.onsuccess = () => ok(q.result)), (q.onerror = () => fail(q.error))));
    const db = await request(indexedDB.open(from.dbName));
    const tx = db.transaction('agent_operations', 'readwrite');
    tx.objectStore('agent_operations').put({ sessionId: ['forked', 'retry'], opSeq: 0, operationId: 'stray', digest: 'd', appliedAt: 1 });
    await new Promise((ok) => (tx.oncomplete = ok));
    db.close();
    const again = await backupText(from);
    const restored = await lib.importSessions(again, { dbName: 'ops-branch-again', userId: 'ann' });
    return {
      changed: edited.includes('["forked","retry"]'),
      line: at + 1,
      failed: report.failed.map((e) => [e.code, e.line, e.message]),
      ids: (await lib.listSessions(to)).map((x) => x.sessionId),
      stray: again.includes('stray'),
      restored: [restored.imported, restored.failed.map((e) => e.message)],
    };
  });
  assert.equal(r.changed, true, 'the line was edited');
  assert.equal(r.failed.length, 1);
  assert.deepEqual(r.failed[0].slice(0, 2), ['IMPORT_INVALID', r.line]);
  assert.match(r.failed[0][2], /operation/);
  assert.deepEqual(r.ids, [], 'nothing of the session was written');
  assert.equal(r.stray, false, 'the stray row is not exported');
  assert.deepEqual(r.restored, [['forked'], []]);
});

test('two operations of a backup’s branch with one operation id are that session’s IMPORT_INVALID, with the line; the others come in', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'ops-backup-from', userId: 'ann' };
    const s = new lib.IndexedDbSession('ops', from);
    await s.addItems([{ role: 'user', content: 'q0' }]);
    let last = { role: 'user', content: 'q0' };
    for (const n of [1, 2]) {
      const next = { role: 'assistant', content: `a${n}` };
      await s.applyHistoryTransaction({ operationId: `save-${n}`, transaction: { type: 'replace_suffix', expectedSuffix: [last], replacement: [last, next] } });
      last = next;
    }
    await new lib.IndexedDbSession('other', from).addItems([{ role: 'user', content: 'kept' }]);
    const lines = (await backupText(from)).split('\n');
    const at = lines.findIndex((l) => l.includes('"operationId":"save-2"'));
    lines[at] = lines[at].replace('"operationId":"save-2"', '"operationId":"save-1"');
    const to = { dbName: 'ops-backup-to', userId: 'ann' };
    const report = await lib.importSessions(lines.join('\n'), to);
    return {
      line: at + 1,
      failed: report.failed.map((e) => [e.name, e.code, e.line, e.sessionId, e.message]),
      imported: report.imported,
      ids: (await lib.listSessions(to)).map((x) => x.sessionId),
      whole: (await lib.importSessions((await backupText(from)), { dbName: 'ops-backup-whole', userId: 'ann' })).imported.sort(),
    };
  });
  assert.equal(r.failed.length, 1);
  const [name, code, line, sessionId, message] = r.failed[0];
  assert.deepEqual([name, code, line, sessionId], ['SessionError', 'IMPORT_INVALID', r.line, 'ops']);
  assert.match(message, /operation id of operation 1 comes twice/);
  assert.deepEqual(r.imported, ['other']);
  assert.deepEqual(r.ids, ['other'], 'nothing of the session was written');
  assert.deepEqual(r.whole, ['ops', 'other'], 'the backup as exported imports');
});

test("a backup's session renamed onto an id the backup holds too: each is imported under its own id, none skipped or replaced", async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    // Ann's backup holds "chat" and "chat-2"; where it is imported, Bob has a "chat".
    const from = { dbName: 'collide-from', userId: 'ann' };
    for (const id of ['chat', 'chat-2']) await new lib.IndexedDbSession(id, from).addItems([{ role: 'user', content: `ann ${id}` }]);
    const text = await backupText(from);
    const out = {};
    for (const onConflict of ['skip', 'replace', 'rename']) {
      const to = `collide-to-${onConflict}`;
      await new lib.IndexedDbSession('chat', { dbName: to, userId: 'bob' }).addItems([{ role: 'user', content: 'bob chat' }]);
      const report = await lib.importSessions(text, { dbName: to, userId: 'ann', onConflict });
      const stored = {};
      for (const s of await lib.listSessions({ dbName: to })) {
        stored[s.sessionId] = [s.userId, (await new lib.IndexedDbSession(s.sessionId, { dbName: to, userId: s.userId }).getItems()).map((i) => i.content)];
      }
      out[onConflict] = { renamed: report.renamed, skipped: report.skipped, replaced: report.replaced, imported: report.imported, stored };
    }
    return out;
  });
  for (const [mode, o] of Object.entries(r)) {
    assert.deepEqual(o.stored, { chat: ['bob', ['bob chat']], 'chat-2': ['ann', ['ann chat']], 'chat-2-2': ['ann', ['ann chat-2']] }, mode);
    assert.deepEqual(o.renamed, [{ from: 'chat', sessionId: 'chat-2' }, { from: 'chat-2', sessionId: 'chat-2-2' }], mode);
    assert.deepEqual([o.skipped, o.replaced, o.imported], [[], [], []], mode);
  }
});

test('a restore with onConflict replace leaves a session a run answers in as it is (SESSION_BUSY in failed), and restores the others', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const db = { dbName: `busy-restore-${Math.random()}` };
    for (const id of ['busy', 'free']) await new lib.IndexedDbSession(id, db).addItems([{ role: 'user', content: `${id} in the backup` }]);
    const text = await backupText(db);
    for (const id of ['busy', 'free']) await new lib.IndexedDbSession(id, db).addItems([{ role: 'user', content: `${id} since` }]);
    const texts = async (id) => (await new lib.IndexedDbSession(id, db).getItems()).map((i) => i.content);
    // A run answers in `busy` (it holds the session's lock, as the runner does, in any tab).
    const report = await navigator.locks.request(lib.sessionLockName(db.dbName, 'busy'), () => lib.importSessions(text, { ...db, onConflict: 'replace' }));
    return { replaced: report.replaced, failed: report.failed.map((e) => [e.code, e.sessionId]), busy: await texts('busy'), free: await texts('free') };
  });
  assert.deepEqual(r.replaced, ['free']);
  assert.deepEqual(r.failed, [['SESSION_BUSY', 'busy']]);
  assert.deepEqual(r.busy, ['busy in the backup', 'busy since'], 'left as the run knows it');
  assert.deepEqual(r.free, ['free in the backup']);
});

test('a restore with onConflict replace leaves the copy an earlier restore made (its id another user’s) as it is while a run answers in it', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: `copy-from-${Math.random()}` };
    const to = { dbName: `copy-to-${Math.random()}` };
    await new lib.IndexedDbSession('chat', { ...from, userId: 'ann' }).addItems([{ role: 'user', content: 'in the backup' }]);
    const text = await backupText(from);
    // `chat` is Bob's where it is restored: Ann's comes in as `chat-2`, and goes on there.
    await new lib.IndexedDbSession('chat', { ...to, userId: 'bob' }).addItems([{ role: 'user', content: 'bob' }]);
    const first = await lib.importSessions(text, { ...to, userId: 'ann' });
    const copy = new lib.IndexedDbSession('chat-2', { ...to, userId: 'ann' });
    await copy.addItems([{ role: 'user', content: 'since' }]);
    // A run answers in the copy: restoring the backup again would replace it.
    const report = await navigator.locks.request(lib.sessionLockName(to.dbName, 'chat-2'), () => lib.importSessions(text, { ...to, userId: 'ann', onConflict: 'replace' }));
    return {
      renamed: first.renamed,
      replaced: report.replaced,
      failed: report.failed.map((e) => e.code),
      copy: (await copy.getItems()).map((i) => i.content),
      after: (await lib.importSessions(text, { ...to, userId: 'ann', onConflict: 'replace' })).replaced,
    };
  });
  assert.deepEqual(r.renamed, [{ from: 'chat', sessionId: 'chat-2' }]);
  assert.deepEqual([r.replaced, r.failed], [[], ['SESSION_BUSY']]);
  assert.deepEqual(r.copy, ['in the backup', 'since'], 'left as the run knows it');
  assert.deepEqual(r.after, ['chat-2'], 'replaced once the run ended');
});

test('a restore with onConflict replace of a session under its own id goes on while a run answers in another user’s session of a copy’s name; a state that is an array comes back', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const db = { dbName: `own-id-${Math.random()}` };
    const ann = new lib.IndexedDbSession('chat', { ...db, userId: 'ann' });
    await ann.addItems([{ role: 'user', content: 'in the backup' }]);
    await ann.update({ state: ['a', 'list'] });
    const text = await backupText({ ...db, userId: 'ann' });
    await ann.addItems([{ role: 'user', content: 'since' }]);
    await new lib.IndexedDbSession('chat-3', { ...db, userId: 'bob' }).addItems([{ role: 'user', content: 'bob' }]);
    const report = await navigator.locks.request(lib.sessionLockName(db.dbName, 'chat-3'), () => lib.importSessions(text, { ...db, onConflict: 'replace' }));
    return { replaced: report.replaced, failed: report.failed.map((e) => e.message), items: (await ann.getItems()).map((i) => i.content), state: (await ann.getInfo()).state };
  });
  assert.deepEqual([r.replaced, r.failed], [['chat'], []]);
  assert.deepEqual(r.items, ['in the backup']);
  assert.deepEqual(r.state, ['a', 'list']);
});

test('onConflict skips, replaces or renames a stored session; another user’s session is never touched', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const db = { dbName: 'conflicts' };
    const mine = new lib.IndexedDbSession('chat', { ...db, userId: 'ann' });
    await mine.addItems([{ role: 'user', content: 'from the backup' }]);
    const text = await backupText(db);
    await mine.clearSession();
    await mine.addItems([{ role: 'user', content: 'written since' }]);
    const texts = async (id, userId = 'ann') => (await new lib.IndexedDbSession(id, { ...db, userId }).getItems()).map((i) => i.content);

    const progress = [];
    const skipped = await lib.importSessions(text, { ...db, onProgress: (p) => progress.push(p) });
    const afterSkip = await texts('chat');
    const renamed = await lib.importSessions(text, { ...db, onConflict: 'rename' });
    const renamedAgain = await lib.importSessions(text, { ...db, onConflict: 'rename' });
    const afterRename = { chat: await texts('chat'), 'chat-2': await texts('chat-2'), 'chat-3': await texts('chat-3') };
    const rewritesBefore = (await mine.getInfo()).rewrites;
    const replaced = await lib.importSessions(text, { ...db, onConflict: 'replace' });
    const afterReplace = await texts('chat');
    const rewritesAfter = (await mine.getInfo()).rewrites;
    // Bob's import of a session with the same id: Ann's stays hers, untouched.
    const bobs = await lib.importSessions(text, { ...db, userId: 'bob', onConflict: 'replace' });
    // The same backup restored for Bob again ("Restore chats" pressed twice): his copy is found
    // under the id it was given, not copied once more.
    const bobsAgain = await lib.importSessions(text, { ...db, userId: 'bob' });
    // Bob goes on in his copy; restored again with 'replace', it is the backup's again.
    const bobsCopy = new lib.IndexedDbSession(bobs.renamed[0].sessionId, { ...db, userId: 'bob' });
    await bobsCopy.addItems([{ role: 'user', content: 'written in the copy' }]);
    const bobsReplaced = await lib.importSessions(text, { ...db, userId: 'bob', onConflict: 'replace' });
    const bobsCopyAfter = (await bobsCopy.getItems()).map((i) => i.content);
    return {
      bobsAgain: { renamed: bobsAgain.renamed, skipped: bobsAgain.skipped },
      bobsReplaced: { renamed: bobsReplaced.renamed, replaced: bobsReplaced.replaced, items: bobsCopyAfter },
      skipped: skipped.skipped,
      progress,
      afterSkip,
      renamed: renamed.renamed,
      renamedAgain: renamedAgain.renamed,
      afterRename,
      replaced: replaced.replaced,
      afterReplace,
      rewrites: [rewritesBefore, rewritesAfter],
      bobs: bobs.renamed,
      bobsItems: await texts(bobs.renamed[0].sessionId, 'bob'),
      annStill: await texts('chat'),
      owners: (await lib.listSessions(db)).map((s) => [s.sessionId, s.userId]).sort(),
    };
  });
  assert.deepEqual(r.skipped, ['chat']);
  assert.deepEqual(r.progress, [{ sessions: 1, of: 1, lines: 4 }]);
  assert.deepEqual(r.afterSkip, ['written since']);
  assert.deepEqual(r.renamed, [{ from: 'chat', sessionId: 'chat-2' }]);
  assert.deepEqual(r.renamedAgain, [{ from: 'chat', sessionId: 'chat-3' }]);
  assert.deepEqual(r.afterRename, { chat: ['written since'], 'chat-2': ['from the backup'], 'chat-3': ['from the backup'] });
  assert.deepEqual(r.replaced, ['chat']);
  assert.deepEqual(r.rewrites, [1, 2], 'a session replaced by an import counts one rewrite more than either had (the backup: 0, the session: its clear)');
  assert.deepEqual(r.afterReplace, ['from the backup']);
  assert.equal(r.bobs.length, 1);
  assert.deepEqual(r.bobsAgain, { renamed: [], skipped: [r.bobs[0].sessionId] });
  assert.deepEqual(r.bobsReplaced, { renamed: [], replaced: [r.bobs[0].sessionId], items: ['from the backup'] }, 'and replaced, not copied, with replace');
  assert.deepEqual(r.bobsItems, ['from the backup']);
  assert.deepEqual(r.annStill, ['from the backup']);
  assert.deepEqual(r.owners, [
    ['chat', 'ann'],
    ['chat-2', 'ann'],
    ['chat-3', 'ann'],
    [r.bobs[0].sessionId, 'bob'],
  ].sort());
});

test('an export holds no API key, and only the sessions asked for', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const apiKey = 'sk-test-DO-NOT-LEAK-1234567890';
    const seen = [];
    const fetch = async (url, init) => {
      seen.push(new Headers(init.headers).get('authorization'));
      const message = { role: 'assistant', content: 'hello there' };
      return new Response(JSON.stringify({ id: 'x', choices: [{ message }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }), {
        headers: { 'content-type': 'application/json' },
      });
    };
    const runner = new lib.Runner({ baseUrl: 'http://model.invalid/v1', apiKey, fetch });
    const agent = new lib.Agent({ name: 'A', model: 'm', instructions: 'be brief' });
    const db = { dbName: 'keys', userId: 'ann' };
    for (const id of ['one', 'two']) {
      await runner.run(agent, `hi from ${id}`, { session: new lib.IndexedDbSession(id, db) });
    }
    const all = await backupText(db);
    const some = await backupText({ ...db, sessionIds: ['two'] });
    const ids = (text) => text.split('\n').filter((l) => l.startsWith('{"session"')).map((l) => JSON.parse(l).session.id);
    return { sent: seen[0], hasKey: all.includes(apiKey) || all.includes('1234567890'), all: ids(all), some: ids(some) };
  });
  assert.equal(r.sent, 'Bearer sk-test-DO-NOT-LEAK-1234567890', 'the runner did use the key');
  assert.equal(r.hasKey, false);
  assert.deepEqual(r.all.sort(), ['one', 'two']);
  assert.deepEqual(r.some, ['two']);
});

test('storageEstimate sums each session from its record, and follows adds, pops and clears', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const size = (items) => items.reduce((n, i) => n + JSON.stringify(i).length, 0);
    const db = { dbName: 'estimate' };
    const a = new lib.IndexedDbSession('a', { ...db, userId: 'ann' });
    const b = new lib.IndexedDbSession('b', { ...db, userId: 'bob' });
    const aItems = [{ role: 'user', content: 'x'.repeat(1000) }, { role: 'assistant', content: 'y'.repeat(500) }];
    const bItems = [{ role: 'user', content: 'z'.repeat(3000) }];
    await a.addItems(aItems);
    await b.addItems(bItems);
    const first = await lib.storageEstimate(db);
    const ann = await lib.storageEstimate({ ...db, userId: 'ann' });
    await a.popItem();
    const popped = await lib.storageEstimate(db);
    await b.clearSession();
    const cleared = await lib.storageEstimate(db);

    // A session written before sizes were kept (its record has none) is measured once.
    const c = new lib.IndexedDbSession('c', db);
    const cItems = [{ role: 'user', content: 'old' }, { role: 'assistant', content: 'session' }];
    await c.addItems(cItems);
    await c.close();
    // The record of 'c' as a version that kept no sizes left it.
    const forgetSize = () =>
      new Promise((done, fail) => {
        const open = indexedDB.open('estimate');
        open.onsuccess = () => {
          const tx = open.result.transaction('agent_sessions', 'readwrite');
          const store = tx.objectStore('agent_sessions');
          const get = store.get('c');
          get.onsuccess = () => {
            delete get.result.bytes;
            store.put(get.result);
          };
          tx.oncomplete = () => (open.result.close(), done());
          tx.onerror = () => fail(tx.error);
        };
      });
    await forgetSize();
    // Sizes kept in the records need no second module; only the measuring of an old one does.
    const loaded = () => performance.getEntriesByType('resource').some((e) => e.name.endsWith('/agent_sessions_extras_bg.wasm'));
    const loadedBefore = loaded();
    const listedBefore = (await lib.listSessions(db)).find((s) => s.sessionId === 'c').bytes;
    const measured = await lib.storageEstimate(db);
    const listedAfter = (await lib.listSessions(db)).find((s) => s.sessionId === 'c').bytes;
    const bytes = (e, id) => e.sessions.find((s) => s.sessionId === id)?.bytes;
    // The storage full: the figure cannot be kept in the record, and is still given (the screen
    // where a user chooses what to delete must not fail then).
    await forgetSize();
    const put = IDBObjectStore.prototype.put;
    IDBObjectStore.prototype.put = function (value, key) {
      if (value?.id === 'c' && typeof value.bytes === 'number') throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      return put.call(this, value, key);
    };
    let full;
    try {
      full = await lib.storageEstimate(db).then((e) => bytes(e, 'c'), (e) => `${e.name} ${e.code}`);
    } finally {
      IDBObjectStore.prototype.put = put;
    }
    const listedFull = (await lib.listSessions(db)).find((s) => s.sessionId === 'c').bytes;
    return {
      expected: { a: size(aItems), b: size(bItems), aPopped: size(aItems.slice(0, 1)), c: size(cItems) },
      first: { a: bytes(first, 'a'), b: bytes(first, 'b'), usage: first.usage, quota: first.quota, persisted: first.persisted },
      ann: ann.sessions.map((s) => s.sessionId),
      popped: bytes(popped, 'a'),
      cleared: bytes(cleared, 'b'),
      listedBefore,
      measured: bytes(measured, 'c'),
      listedAfter,
      full,
      listedFull,
      loadedBefore,
      loadedAfter: loaded(),
    };
  });
  assert.equal(r.first.a, r.expected.a);
  assert.equal(r.first.b, r.expected.b);
  assert.ok(r.first.usage > 0 && r.first.quota > r.first.usage, 'the browser’s usage and quota');
  assert.equal(typeof r.first.persisted, 'boolean');
  assert.deepEqual(r.ann, ['a'], 'one user’s sessions');
  assert.equal(r.popped, r.expected.aPopped);
  assert.equal(r.cleared, 0);
  assert.equal(r.listedBefore, null, 'not known before it is measured');
  assert.equal(r.measured, r.expected.c);
  assert.equal(r.listedAfter, r.expected.c, 'the measured size is kept in the record');
  assert.equal(r.full, r.expected.c, 'measured with the storage full');
  assert.equal(r.listedFull, null, 'not kept then');
  assert.equal(r.loadedBefore, false, 'sizes read from the records load no second module');
  assert.equal(r.loadedAfter, true, 'the old session was measured by the second module');
});

test('sizes stay close to the items held through rewrites and branches', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const size = (items) => items.reduce((n, i) => n + JSON.stringify(i).length, 0);
    const db = { dbName: 'estimate-rewrites' };
    const s = new lib.IndexedDbSession('s', db);
    const turn = (n) => [{ role: 'user', content: `question ${n} `.repeat(20) }, { role: 'assistant', content: `answer ${n} `.repeat(20) }];
    for (let n = 0; n < 10; n++) await s.addItems(turn(n));
    await s.replaceHistory(turn(100));
    const replaced = (await lib.storageEstimate(db)).sessions[0].bytes;
    // The replaced items went to the archive.
    const afterReplace = size(await s.getItems()) + size(await s.getArchivedItems());
    await s.replaceHistory(turn(101), { archive: false });
    const dropped = (await lib.storageEstimate(db)).sessions[0].bytes;
    const afterDrop = size(await s.getItems()) + size(await s.getArchivedItems());
    for (let n = 0; n < 5; n++) await s.addItems(turn(n));
    await s.createBranchFromTurn(3, 'b');
    await s.addItems(turn(7));
    const onBranch = (await lib.storageEstimate(db)).sessions[0].bytes;
    await s.switchBranch('main');
    await s.deleteBranch('b');
    const afterDelete = (await lib.storageEstimate(db)).sessions[0].bytes;
    const mainItems = size(await s.getItems()) + size(await s.getArchivedItems());
    return { replaced, afterReplace, dropped, afterDrop, onBranch, afterDelete, mainItems, branchAdded: size(turn(7)) };
  });
  assert.equal(r.replaced, r.afterReplace, 'a replaced history is measured exactly');
  // Items dropped unread count at the session's average row size: close, not exact.
  assert.ok(Math.abs(r.dropped - r.afterDrop) / r.afterDrop < 0.05, `${r.dropped} vs ${r.afterDrop}`);
  assert.ok(r.onBranch >= r.mainItems + r.branchAdded, 'the branch’s own items count');
  assert.ok(Math.abs(r.afterDelete - r.mainItems) / r.mainItems < 0.1, `${r.afterDelete} vs ${r.mainItems}`);
});

test('a session of large items (images as data URLs) is exported in pages of about 8 MiB, not 500 items at once, and imports whole', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const from = { dbName: `large-items-${Math.random()}` };
    const image = `data:image/png;base64,${'A'.repeat(600 * 1024)}`;
    const s = new lib.IndexedDbSession('photos', from);
    for (let i = 0; i < 40; i++) await s.addItems([{ role: 'user', content: [{ type: 'input_image', image: image + i }] }]);
    const reader = lib.exportSessions(from).getReader();
    const chunks = [];
    for (let read = await reader.read(); !read.done; read = await reader.read()) chunks.push(read.value);
    const to = { dbName: `large-items-to-${Math.random()}` };
    const report = await lib.importSessions(new Blob(chunks), to);
    const back = await new lib.IndexedDbSession('photos', to).getItems();
    return { sizes: chunks.map((c) => c.byteLength), imported: report.imported, count: back.length, last: back.at(-1).content[0].image.slice(-2) };
  });
  // 24 MB of items: several chunks, none much over 8 MiB (one held page and what goes with it).
  assert.ok(r.sizes.length >= 3, `chunks: ${r.sizes}`);
  assert.ok(Math.max(...r.sizes) < 10 * 1024 * 1024, `chunks: ${r.sizes}`);
  assert.deepEqual([r.imported, r.count, r.last], [['photos'], 40, '39']);
});

test('memory stays flat while 100,000 items are exported', async (t) => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const db = { dbName: 'export-large' };
    for (let s = 0; s < 4; s++) {
      const session = new lib.IndexedDbSession(`s${s}`, db);
      for (let batch = 0; batch < 5; batch++) {
        const items = [];
        for (let i = 0; i < 5000; i++) items.push({ role: i % 2 ? 'assistant' : 'user', content: `item ${s}.${batch}.${i} `.repeat(6) });
        await session.addItems(items);
      }
      await session.close();
    }
    // What the page holds: collected twice, a task apart, so that what is only on its way out (a
    // request's result being handed over, a collection still sweeping) is not counted as held.
    const held = async () => {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc();
      return performance.memory.usedJSHeapSize;
    };
    const base = await held();
    let peak = base;
    let bytes = 0;
    let chunks = 0;
    const reader = lib.exportSessions(db).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      chunks += 1;
      peak = Math.max(peak, await held());
    }
    return { base, peak, end: await held(), bytes, chunks };
  });
  const mb = (n) => (n / 1048576).toFixed(1);
  t.diagnostic(`exported ${mb(r.bytes)} MB in ${r.chunks} chunks; JS heap ${mb(r.base)} MB before, peak ${mb(r.peak)} MB, ${mb(r.end)} MB after`);
  assert.ok(r.bytes > 15 * 1048576, 'a large export');
  // Holding the export (or its rows) would take more than its own size in the heap.
  assert.ok(r.peak - r.base < r.bytes / 4, `the heap grew ${mb(r.peak - r.base)} MB while ${mb(r.bytes)} MB streamed`);
  assert.ok(r.end - r.base < r.bytes / 10, 'nothing is kept after');
});

// The export's read of the session's record, then another tab's write, then the export's reads of
// the rows: IndexedDB's order of transactions, set by holding the stores (see holdStores).
async function exportAround(page, dbName, write) {
  await helpers(page);
  return page.evaluate(
    async ({ dbName, write }) => {
      const from = { dbName };
      const s = new lib.IndexedDbSession('busy', from);
      await s.addItems([{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' }, { role: 'user', content: 'three' }]);
      // The module that reads a backup's rows, loaded and connected now: the order below is of
      // transactions, not of a download.
      await lib.buildSearchIndex(from);
      const reader = lib.exportSessions(from).getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value); // the header
      const release = await holdStores(dbName, ['agent_sessions']);
      const rest = readRest(reader, decoder).then((more) => (text += more));
      await settle();
      const deleted = write === 'recreate' ? lib.deleteSession('busy', from) : null;
      if (deleted) await settle();
      const other = new lib.IndexedDbSession('busy', from);
      const written =
        write === 'append'
          ? other.addItems([{ role: 'assistant', content: 'four' }])
          : write === 'pop'
            ? other.popItem()
            : write === 'turn'
              ? // A run's save: the turn's items and its usage, in one transaction.
                other.applyHistoryTransaction({
                  operationId: 'save',
                  transaction: { type: 'append_items', items: [{ role: 'assistant', content: 'four' }, { role: 'user', content: 'five' }] },
                  usage: { requests: 1, inputTokens: 50, outputTokens: 5 },
                })
              : other.addItems([{ role: 'user', content: 'new one' }, { role: 'assistant', content: 'new two' }, { role: 'user', content: 'new three' }]);
      await release();
      await deleted;
      await written;
      await rest;
      const to = { dbName: `${dbName}-to` };
      const report = await lib.importSessions(text, to);
      const copy = new lib.IndexedDbSession('busy', to);
      const items = (await copy.getItems()).map((i) => i.content);
      const usage = await copy.getTurnUsage();
      // The next turn of the copy takes the number the turn left out had.
      await copy.addItems([{ role: 'user', content: 'next' }]);
      await copy.storeRunUsage({ requests: 1, inputTokens: 7 });
      return {
        usage: usage.map((u) => u.turn),
        next: await copy.getTurnUsage(3),
        imported: report.imported,
        failed: report.failed.map((e) => e.message),
        items,
        now: (await s.getItems()).map((i) => i.content),
      };
    },
    { dbName, write },
  );
}

test('a turn written while its session is being exported: the backup holds the session as its record counts it, and imports', async () => {
  const { page } = await openHarness(env);
  const r = await exportAround(page, 'export-while-writing', 'append');
  assert.deepEqual(r.failed, []);
  assert.deepEqual(r.imported, ['busy']);
  assert.deepEqual(r.items, ['one', 'two', 'three'], 'the session as its record was read');
  assert.deepEqual(r.now, ['one', 'two', 'three', 'four'], 'and the turn is stored where it was written');
});

test('a turn saved with its usage while its session is being exported: the backup leaves out its usage with its items, and the copy’s next turn has only its own', async () => {
  const { page } = await openHarness(env);
  const r = await exportAround(page, 'export-while-saving', 'turn');
  assert.deepEqual(r.failed, []);
  assert.deepEqual(r.items, ['one', 'two', 'three']);
  assert.deepEqual(r.now, ['one', 'two', 'three', 'four', 'five']);
  assert.deepEqual(r.usage, [], 'no usage of a turn the backup does not hold');
  assert.equal(r.next.inputTokens, 7, 'the next turn of the copy has its own usage, not the left-out turn’s added');
  assert.equal(r.next.requests, 1);
});

test('a backup keeps the usage of a turn a history transaction rewrote, as the session keeps it', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'usage-kept' };
    const s = new lib.IndexedDbSession('chat', from);
    const q2 = { role: 'user', content: 'q2' };
    const a2 = { role: 'assistant', content: 'a2' };
    await s.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, q2, a2]);
    await s.storeRunUsage({ requests: 1, inputTokens: 40, outputTokens: 2 });
    // (One that starts a turn: the usage stays with the turn's number, as the session keeps it.)
    await s.applyHistoryTransaction({ operationId: 'undo', transaction: { type: 'replace_suffix', expectedSuffix: [q2, a2], replacement: [{ role: 'user', content: 'q2, asked again' }] } });
    const before = (await s.getSessionUsage()).inputTokens;
    // One that takes the newest turn away and starts none takes its usage with it, in both.
    const popped = new lib.IndexedDbSession('popped', from);
    await popped.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, q2, a2]);
    await popped.storeRunUsage({ requests: 1, inputTokens: 40, outputTokens: 2 });
    await popped.applyHistoryTransaction({ operationId: 'undo', transaction: { type: 'replace_suffix', expectedSuffix: [q2, a2], replacement: [] } });
    const poppedBefore = (await popped.getSessionUsage()).inputTokens;
    const text = await new Response(lib.exportSessions(from)).text();
    const report = await lib.importSessions(text, { dbName: 'usage-kept-to' });
    const copy = new lib.IndexedDbSession('chat', { dbName: 'usage-kept-to' });
    const poppedCopy = new lib.IndexedDbSession('popped', { dbName: 'usage-kept-to' });
    return {
      before, imported: report.imported.sort(), after: (await copy.getSessionUsage()).inputTokens, items: (await copy.getItems()).length,
      popped: [poppedBefore, (await poppedCopy.getSessionUsage()).inputTokens],
    };
  });
  assert.equal(r.before, 40, 'the session keeps it');
  assert.deepEqual(r.imported, ['chat', 'popped']);
  assert.equal(r.items, 3);
  assert.deepEqual(r.popped, [0, 0], 'the turn taken away took its usage, in the session and its copy');
  assert.equal(r.after, 40, 'and so does its copy');
});

test('an item popped while its session is being exported: the session is read again, and the backup imports', async () => {
  const { page } = await openHarness(env);
  const r = await exportAround(page, 'export-while-popping', 'pop');
  assert.deepEqual(r.failed, []);
  assert.deepEqual(r.imported, ['busy']);
  assert.deepEqual(r.items, ['one', 'two'], 'the session as it is after the pop');
  assert.deepEqual(r.now, ['one', 'two']);
});

test('a session sent page by page and rewritten while it is exported: its place ends in a failed line, and the import writes nothing of it; rewritten only after its last page went out, it is whole; deleted, its place ends in a deleted line, dropped by the import', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    // 800 items of 3 KB: more than a session is held for, so its first page goes out alone.
    const items = Array.from({ length: 800 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${'x'.repeat(3000)}` }));
    const exportEditing = async (dbName, edit) => {
      const from = { dbName };
      await new lib.IndexedDbSession('long', from).addItems(items);
      await new lib.IndexedDbSession('short', from).addItems([{ role: 'user', content: 'kept' }]);
      const reader = lib.exportSessions(from).getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value); // the header
      text += decoder.decode((await reader.read()).value); // the long session's first page
      const sentFirst = text.split('\n').filter((l) => l.startsWith('{"item"')).length;
      // Read on to the long session's last item, where the edit is to come after every row of it
      // was read (the reader may take its time over the rest).
      while (edit === 'after' && !text.includes('"content":"799 ')) text += decoder.decode((await reader.read()).value);
      // Another tab edits the whole chat: its items are other items from then on. Or deletes it.
      if (edit === 'delete') await lib.deleteSession('long', from);
      else await new lib.IndexedDbSession('long', from).replaceHistory(items.map((item) => ({ ...item, content: `edited ${item.content}` })), { archive: false });
      text += await readRest(reader, decoder);
      const to = { dbName: `${dbName}-to` };
      const report = await lib.importSessions(text, to);
      const copied = await new lib.IndexedDbSession('long', to).getItems();
      return {
        sentFirst,
        failedLine: text.split('\n').filter((l) => l.startsWith('{"failed"')).map((l) => JSON.parse(l).failed.code),
        deletedLine: text.split('\n').filter((l) => l.startsWith('{"deleted"')).length,
        stored: (await lib.listSessions(to)).map((s) => s.sessionId),
        imported: report.imported,
        failed: report.failed.map((e) => [e.sessionId, e.code, e.message]),
        copied: copied.length,
        edited: copied.filter((i) => i.content.startsWith('edited')).length,
      };
    };
    return {
      during: await exportEditing('export-streamed-rewritten', 'during'),
      after: await exportEditing('export-streamed-rewritten-after', 'after'),
      deleted: await exportEditing('export-streamed-deleted', 'delete'),
    };
  });
  const { during, after, deleted } = r;
  // Deleted after part of it went out: a line says so, and the import drops it without a failure.
  assert.ok(deleted.sentFirst > 0 && deleted.sentFirst < 800);
  assert.equal(deleted.deletedLine, 1);
  assert.deepEqual(deleted.failedLine, []);
  assert.deepEqual(deleted.failed, []);
  assert.deepEqual(deleted.imported, ['short']);
  assert.deepEqual(deleted.stored, ['short']);
  assert.ok(during.sentFirst > 0 && during.sentFirst < 800, `part of it went out before the edit (${during.sentFirst} items)`);
  assert.deepEqual(during.failedLine, ['SESSION_BUSY']);
  assert.deepEqual(during.imported, ['short']);
  assert.equal(during.failed.length, 1);
  assert.equal(during.failed[0][0], 'long');
  assert.equal(during.failed[0][1], 'IMPORT_INVALID');
  assert.match(during.failed[0][2], /SESSION_BUSY.*rewritten/);
  assert.equal(during.copied, 0, 'nothing of a history that never was');
  // An edit after the session's last page was read changes nothing of what went out.
  assert.deepEqual(after.failedLine, []);
  assert.deepEqual(after.imported, ['long', 'short']);
  assert.equal(after.copied, 800);
  assert.equal(after.edited, 0, 'the session as it was read');
});

test('a session sent page by page whose record an older version wrote (no rewrites count) and that gets a turn while it is exported: it is whole in the backup, not failed', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const dbName = 'export-old-record';
    const from = { dbName };
    // 800 items of 3 KB: more than a session is held for, so its first page goes out alone.
    const items = Array.from({ length: 800 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${'x'.repeat(3000)}` }));
    const s = new lib.IndexedDbSession('long', from);
    await s.addItems(items);
    await s.close();
    // The record as schema 4 and earlier left it, and as it stays until the chat is next written:
    // without `rewrites`.
    await new Promise((resolve, reject) => {
      const open = indexedDB.open(dbName);
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const db = open.result;
        const tx = db.transaction('agent_sessions', 'readwrite');
        const store = tx.objectStore('agent_sessions');
        const get = store.get('long');
        get.onsuccess = () => {
          const { rewrites, ...older } = get.result;
          store.put(older);
        };
        tx.oncomplete = () => {
          db.close();
          resolve();
        };
        tx.onerror = () => reject(tx.error);
      };
    });
    const reader = lib.exportSessions(from).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value); // the header
    text += decoder.decode((await reader.read()).value); // the session's first page
    const sentFirst = text.split('\n').filter((l) => l.startsWith('{"item"')).length;
    // Another tab's turn: its write stores the record with this version's fields.
    await new lib.IndexedDbSession('long', from).addItems([{ role: 'user', content: 'one more' }]);
    text += await readRest(reader, decoder);
    const report = await lib.importSessions(text, { dbName: `${dbName}-to` });
    return {
      sentFirst,
      failedLine: text.split('\n').filter((l) => l.startsWith('{"failed"')).length,
      imported: report.imported,
      copied: (await new lib.IndexedDbSession('long', { dbName: `${dbName}-to` }).getItems()).length,
    };
  });
  assert.ok(r.sentFirst > 0 && r.sentFirst < 800, `part of it went out before the turn (${r.sentFirst} items)`);
  assert.equal(r.failedLine, 0);
  assert.deepEqual(r.imported, ['long']);
  assert.equal(r.copied, 800, 'the session as its record was read');
});

test('a session deleted and made again under its id while it is being exported: the new one is read again, whole', async () => {
  const { page } = await openHarness(env);
  const r = await exportAround(page, 'export-while-recreating', 'recreate');
  assert.deepEqual(r.failed, []);
  assert.deepEqual(r.imported, ['busy']);
  assert.deepEqual(r.items, ['new one', 'new two', 'new three'], 'the new session, not the old record with its rows');
  assert.deepEqual(r.now, ['new one', 'new two', 'new three']);
});

test('a session deleted while the backup is written is a line saying so: the backup imports whole, no failure', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const from = { dbName: 'export-while-deleting' };
    await new lib.IndexedDbSession('kept', from).addItems([{ role: 'user', content: 'stays' }]);
    await new lib.IndexedDbSession('gone', from).addItems([{ role: 'user', content: 'goes' }]);
    const reader = lib.exportSessions(from).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value); // the header, counting both
    await lib.deleteSession('gone', from); // (retention in another tab, say)
    text += await readRest(reader, decoder);
    const progress = [];
    const report = await lib.importSessions(text, { dbName: 'export-while-deleting-to', onProgress: (p) => progress.push(`${p.sessions}/${p.of}`) });
    return { header: JSON.parse(text.split('\n')[0]).sessions, lines: text.trim().split('\n').map((l) => Object.keys(JSON.parse(l))[0]), imported: report.imported, failed: report.failed.map((e) => e.message), progress };
  });
  assert.deepEqual(r.progress, ['1/2', '2/2'], 'the deleted session counts as done');
  assert.equal(r.header, 2);
  assert.deepEqual(r.lines.filter((k) => k === 'deleted'), ['deleted']);
  assert.deepEqual(r.imported, ['kept']);
  assert.deepEqual(r.failed, [], 'a backup missing nothing is not reported as cut short');
});

test('a session deleted and made again by another user while one user’s export runs is a deleted line: that user’s chat is not in the backup', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = 'export-other-owner';
    await new lib.IndexedDbSession('kept', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'ann stays' }]);
    await new lib.IndexedDbSession('chat-7', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'ann goes' }]);
    const reader = lib.exportSessions({ dbName, userId: 'ann' }).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value); // the header, counting both
    // (Retention deleted ann's chat, and bob, in another tab, began one under its id.)
    await lib.deleteSession('chat-7', { dbName });
    await new lib.IndexedDbSession('chat-7', { dbName, userId: 'bob' }).addItems([{ role: 'user', content: 'bob private' }]);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const report = await lib.importSessions(text, { dbName: 'export-other-owner-to', userId: 'ann' });
    return { bob: text.includes('bob private'), lines: text.trim().split('\n').map((l) => Object.keys(JSON.parse(l))[0]), imported: report.imported, failed: report.failed.map(String) };
  });
  assert.equal(r.bob, false, "bob's chat went into ann's backup");
  assert.deepEqual(r.lines.filter((k) => k === 'deleted'), ['deleted']);
  assert.deepEqual(r.imported, ['kept']);
  assert.deepEqual(r.failed, []);
});

test('a session sent page by page, deleted and made again by another user while one user’s export reads it: none of the new one’s rows go out, and its place ends in a deleted line', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = 'export-paged-other-owner';
    // 800 items of 3 KB: more than a session is held for, so its first page goes out alone.
    const items = (who) => Array.from({ length: 800 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${who} ${i} ${'x'.repeat(3000)}` }));
    await new lib.IndexedDbSession('long', { dbName, userId: 'ann' }).addItems(items('ann'));
    await new lib.IndexedDbSession('short', { dbName, userId: 'ann' }).addItems([{ role: 'user', content: 'kept' }]);
    const reader = lib.exportSessions({ dbName, userId: 'ann' }).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value); // the header
    text += decoder.decode((await reader.read()).value); // the long session's first page
    const sentFirst = text.split('\n').filter((l) => l.startsWith('{"item"')).length;
    await lib.deleteSession('long', { dbName });
    const bob = new lib.IndexedDbSession('long', { dbName, userId: 'bob' });
    // (Longer than hers: a whole page of his rows follows what of hers went out, which is sent
    // before the session's end is checked.)
    await bob.addItems([...items('bob'), ...items('bob')]);
    await bob.applyHistoryTransaction({ operationId: 'bob-operation', transaction: { type: 'append_items', items: [{ role: 'user', content: 'bob again' }] } });
    await bob.storeRunUsage({ requests: 1, inputTokens: 4242, outputTokens: 1, totalTokens: 4243 });
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const report = await lib.importSessions(text, { dbName: `${dbName}-to`, userId: 'ann' });
    return {
      sentFirst,
      bob: ['"bob ', 'bob-operation', '4242'].filter((s) => text.includes(s)),
      deletedLine: text.split('\n').filter((l) => l.startsWith('{"deleted"')).length,
      failedLine: text.split('\n').filter((l) => l.startsWith('{"failed"')).length,
      imported: report.imported,
      failed: report.failed.map(String),
    };
  });
  assert.ok(r.sentFirst > 0 && r.sentFirst < 800, `its first page went out alone (${r.sentFirst})`);
  assert.deepEqual(r.bob, [], "bob's rows went into ann's backup");
  assert.equal(r.deletedLine, 1);
  assert.equal(r.failedLine, 0);
  assert.deepEqual(r.imported, ['short']);
  assert.deepEqual(r.failed, []);
});

test('a deleted line after a session whose end line is damaged: that session fails, and the backup is not reported cut short', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = 'import-deleted-after-damage';
    for (const id of ['a', 'b', 'c']) await new lib.IndexedDbSession(id, { dbName }).addItems([{ role: 'user', content: `in ${id}` }]);
    const lines = (await new Response(lib.exportSessions({ dbName })).text()).trim().split('\n');
    // b deleted while the backup was written, and a's end line damaged.
    const at = (key, id) => lines.findIndex((l) => { const v = JSON.parse(l); return v[key] && (v[key].id ?? v[key].sessionId) === id; });
    const b = at('session', 'b');
    lines.splice(b, at('end', 'b') - b + 1, JSON.stringify({ deleted: { sessionId: 'b' } }));
    lines[at('end', 'a')] = '{"end": damaged';
    const report = await lib.importSessions(lines.join('\n') + '\n', { dbName: 'import-deleted-after-damage-to' });
    return { imported: report.imported, failed: report.failed.map((e) => [e.sessionId ?? null, e.missing ?? null]) };
  });
  assert.deepEqual(r.imported, ['c']);
  assert.deepEqual(r.failed, [['a', null]], 'a alone fails; nothing is missing');
});

test('a backup whose session state is no object (an earlier version took a Date whole, and wrote its ISO string) restores the chat, without that state', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = 'import-dated-state';
    const s = new lib.IndexedDbSession('dated', { dbName });
    await s.addItems([{ role: 'user', content: 'kept' }, { role: 'assistant', content: 'also kept' }]);
    await s.update({ title: 'Dated', state: { at: new Date(0) } });
    const text = await new Response(lib.exportSessions({ dbName })).text();
    const out = {};
    for (const state of ['2026-01-01T00:00:00.000Z', 7, true]) {
      const lines = text.trim().split('\n').map((l) => JSON.parse(l));
      lines.find((l) => l.session).session.state = state;
      const to = `import-dated-state-${typeof state}`;
      const report = await lib.importSessions(lines.map((l) => JSON.stringify(l)).join('\n'), { dbName: to });
      const copy = new lib.IndexedDbSession('dated', { dbName: to });
      const info = await copy.getInfo();
      out[typeof state] = { imported: report.imported, failed: report.failed.map(String), items: (await copy.getItems()).map((i) => i.content), title: info.title, state: info.state };
    }
    // A Date inside a state goes out, and comes back, as its ISO string.
    await lib.importSessions(text, { dbName: 'import-dated-state-object' });
    out.inside = (await new lib.IndexedDbSession('dated', { dbName: 'import-dated-state-object' }).getInfo()).state;
    return out;
  });
  for (const kind of ['string', 'number', 'boolean']) {
    assert.deepEqual(r[kind], { imported: ['dated'], failed: [], items: ['kept', 'also kept'], title: 'Dated', state: null }, kind);
  }
  assert.deepEqual(r.inside, { at: '1970-01-01T00:00:00.000Z' });
});

test('a session that cannot be written out (an item JSON cannot hold, a damaged record) is a failed line: the others are exported, and the import says why', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `export-faults-${Math.random()}`;
    const from = { dbName };
    const cyclic = { role: 'user', content: 'loop' };
    cyclic.self = cyclic;
    const chats = [
      ['first', [{ role: 'user', content: 'a normal chat' }]],
      ['bigint', [{ role: 'user', content: 'tokens' }, { role: 'assistant', content: 'counted', count: 12n }]],
      ['cycle', [cyclic]],
      ['damaged', [{ role: 'user', content: 'soon damaged' }]],
      ['last', [{ role: 'user', content: 'the last chat' }]],
    ];
    for (const [id, items] of chats) await new lib.IndexedDbSession(id, from).addItems(items);
    // The record of "damaged" counts items it does not have (written by hand, as a broken tool would).
    const request = (r) => new Promise((ok, fail) => ((r.onsuccess = () => ok(r.result)), (r.onerror = () => fail(r.error))));
    const db = await request(indexedDB.open(dbName));
    const tx = db.transaction('agent_sessions', 'readwrite');
    const record = await request(tx.objectStore('agent_sessions').get('damaged'));
    tx.objectStore('agent_sessions').put({ ...record, itemCount: 7 });
    // And a record under an id no call can name (written by other code).
    tx.objectStore('agent_sessions').put({ ...record, id: '  ' });
    await new Promise((ok) => (tx.oncomplete = ok));
    db.close();
    const stream = lib.exportSessions(from);
    const text = await new Response(stream).text();
    // What the export says of it, once it ended (before the file is relied on).
    const exported = await stream.report;
    const lines = text.trim().split('\n').map((l) => JSON.parse(l));
    const report = await lib.importSessions(text, { dbName: `${dbName}-to` });
    // A stream cancelled: its report rejects with the reason. An export of sessions the database
    // does not hold: a report of none.
    const cancelled = lib.exportSessions(from);
    await cancelled.cancel(new Error('left'));
    const failing = lib.exportSessions({ dbName: `${dbName}-none`, sessionIds: ['x'] });
    await new Response(failing).text().catch(() => {});
    return {
      exported: [exported.sessions, exported.failed.map((f) => [f.sessionId, f.code]).sort(), exported.deleted],
      cancelled: await cancelled.report.then(() => 'resolved', (e) => e.message),
      emptyReport: await failing.report.then((r) => [r.sessions, r.failed.length], (e) => e.code),
      header: lines[0].sessions,
      failedLines: lines.filter((l) => l.failed).map((l) => [l.failed.sessionId, l.failed.code]),
      imported: report.imported.sort(),
      failed: report.failed.map((e) => [e.sessionId, e.code, /was not exported/.test(e.message)]),
      message: report.failed.find((e) => e.sessionId === 'bigint')?.message,
      last: (await new lib.IndexedDbSession('last', { dbName: `${dbName}-to` }).getItems()).map((i) => i.content),
    };
  });
  assert.equal(r.header, 6);
  assert.deepEqual(r.failedLines.sort(), [['  ', 'INVALID_SESSION_ID'], ['bigint', 'INVALID_ITEM'], ['cycle', 'INVALID_ITEM'], ['damaged', 'CORRUPT_SESSION']]);
  assert.deepEqual(r.exported, [2, r.failedLines.sort(), []], 'the stream’s report names the sessions left out');
  assert.equal(r.cancelled, 'left');
  assert.deepEqual(r.emptyReport, [0, 0], 'a database with none of the sessions asked for: an export of none');
  assert.deepEqual(r.imported, ['first', 'last'], 'the sessions after a failed one are exported too');
  assert.deepEqual(r.failed.sort(), [['  ', 'IMPORT_INVALID', true], ['bigint', 'IMPORT_INVALID', true], ['cycle', 'IMPORT_INVALID', true], ['damaged', 'IMPORT_INVALID', true]]);
  assert.match(r.message, /BigInt/);
  assert.deepEqual(r.last, ['the last chat']);
});

test("a run's saves (the newest item replaced by it and the new turn, again and again) and a mutation keep the size exact", async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const size = (items) => items.reduce((n, i) => n + JSON.stringify(i).length, 0);
    const db = { dbName: 'estimate-saves' };
    const s = new lib.IndexedDbSession('s', db);
    await s.addItems([{ role: 'user', content: 'q0' }, { type: 'function_call_result', callId: 'c', name: 'f', status: 'completed', output: { type: 'text', text: 'x'.repeat(50_000) } }, { role: 'assistant', content: 'a0' }]);
    for (let n = 1; n <= 15; n++) {
      const [last] = await s.getItems(1);
      await s.applyHistoryTransaction({ operationId: `save-${n}`, transaction: { type: 'replace_suffix', expectedSuffix: [last], replacement: [last, { role: 'user', content: `q${n}` }, { role: 'assistant', content: `a${n}` }] } });
    }
    const saves = { estimate: (await lib.storageEstimate(db)).sessions[0].bytes, actual: size(await s.getItems()) };
    // A mutation replaces a call (and drops its repeat) among items it read.
    const m = new lib.IndexedDbSession('m', db);
    const call = (args) => ({ type: 'function_call', callId: 'c1', name: 'f', arguments: args, status: 'completed' });
    await m.addItems([{ role: 'user', content: 'x'.repeat(5_000) }, call('{}'), call('{"again":true}'), { role: 'assistant', content: 'done' }]);
    await m.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: call(JSON.stringify({ long: 'y'.repeat(500) })) }] });
    const sizes = Object.fromEntries((await lib.storageEstimate(db)).sessions.map((x) => [x.sessionId, x.bytes]));
    return { saves, mutated: { estimate: sizes.m, actual: size(await m.getItems()) } };
  });
  assert.equal(r.saves.estimate, r.saves.actual);
  assert.equal(r.mutated.estimate, r.mutated.actual);
});

test('on a session with branches too, a run’s saves and pops keep the size exact, and so do the copies a pop gives a branch', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const size = (items) => items.reduce((n, i) => n + JSON.stringify(i).length, 0);
    const db = { dbName: `estimate-branches-${Math.random()}` };
    const s = new lib.IndexedDbSession('s', db);
    await s.addItems([{ role: 'user', content: 'q0' }, { role: 'assistant', content: 'x'.repeat(50_000) }]);
    // A branch made before the first turn shows none of main's items.
    await s.createBranchFromTurn(1, 'b');
    await s.switchBranch('main');
    for (let n = 1; n <= 15; n++) {
      const [last] = await s.getItems(1);
      await s.applyHistoryTransaction({ operationId: `save-${n}`, transaction: { type: 'replace_suffix', expectedSuffix: [last], replacement: [last, { role: 'user', content: `q${n}` }, { role: 'assistant', content: `a${n}` }] } });
    }
    for (let n = 0; n < 6; n++) await s.popItem();
    const bytes = async (id) => (await lib.storageEstimate(db)).sessions.find((x) => x.sessionId === id).bytes;
    const saves = { estimate: await bytes('s'), actual: size(await s.getItems()) };
    // A branch made from turn 3 shows turns 1 and 2; popping them on main copies them to it.
    const p = new lib.IndexedDbSession('p', db);
    await p.addItems([{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'y'.repeat(30_000) }, { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }, { role: 'user', content: 'q3' }, { role: 'assistant', content: 'a3' }]);
    await p.createBranchFromTurn(3, 'c');
    await p.switchBranch('main');
    for (let n = 0; n < 5; n++) await p.popItem();
    const mainItems = await p.getItems();
    await p.switchBranch('c');
    const cItems = await p.getItems();
    // c holds its own copies of the three rows main gave up; main its first item.
    const copies = { estimate: await bytes('p'), actual: size(mainItems) + size(cItems.slice(1)), mainItems: mainItems.length, cItems: cItems.length };
    return { saves, copies };
  });
  assert.equal(r.saves.estimate, r.saves.actual);
  assert.deepEqual([r.copies.mainItems, r.copies.cItems], [1, 4]);
  assert.equal(r.copies.estimate, r.copies.actual);
});

test('replaceHistory with expectedItems on a compacted session (as EncryptedSession rewrites) keeps the size exact, however often', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const size = (items) => items.reduce((n, i) => n + JSON.stringify(i).length, 0);
    const db = { dbName: `estimate-replace-${Math.random()}` };
    const s = new lib.IndexedDbSession('s', db);
    const big = Array.from({ length: 10 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: String(i).repeat(50_000) }));
    await s.addItems(big);
    await s.replaceHistory([{ role: 'user', content: 'summary' }, { role: 'assistant', content: 'ok' }]);
    for (let n = 0; n < 10; n++) {
      const current = await s.getItems();
      await s.replaceHistory([...current, { role: 'user', content: `q${n}` }], { archive: false, expectedItems: current });
    }
    const estimate = (await lib.storageEstimate(db)).sessions[0].bytes;
    return { estimate, actual: size(await s.getItems()) + size(await s.getArchivedItems()) };
  });
  assert.equal(r.estimate, r.actual);
});

test('options that are not an object are INVALID_OPTIONS for exportSessions, importSessions and applyRetention (a database name passed alone reached the default database)', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const dbName = `not-options-${Math.random()}`;
    await new lib.IndexedDbSession('kept', { dbName }).addItems([{ role: 'user', content: 'q' }]);
    const backup = await backupText({ dbName });
    let exported;
    try {
      lib.exportSessions(dbName);
      exported = 'returned';
    } catch (e) {
      exported = `${e.name} ${e.code}`;
    }
    const before = (await lib.listSessions()).length;
    return {
      exported,
      imported: await outcome(() => lib.importSessions(backup, 'agent-sessions')),
      retention: await outcome(() => lib.applyRetention(dbName)),
      array: await outcome(() => lib.applyRetention([])),
      // A clock that is no number deleted nothing by age, without a word.
      dateString: await outcome(() => lib.applyRetention({ dbName, maxAgeDays: 0, now: '2030-01-01' })),
      // Nor are null, true and [] (read as numbers, null made every session younger than 0 days),
      // nor a bigint (a TypeError without a code).
      notClocks: await Promise.all([null, true, [], 5n].map((now) => outcome(() => lib.applyRetention({ dbName, maxAgeDays: 0, now })))),
      // A Date is its milliseconds (nothing here is a day old).
      date: await outcome(() => lib.applyRetention({ dbName, maxAgeDays: 1, now: new Date() })),
      defaultUntouched: (await lib.listSessions()).length === before,
      stillThere: (await lib.listSessions({ dbName })).length,
    };
  });
  assert.deepEqual(r, {
    exported: 'SessionError INVALID_OPTIONS',
    imported: 'SessionError INVALID_OPTIONS',
    retention: 'SessionError INVALID_OPTIONS',
    array: 'SessionError INVALID_OPTIONS',
    dateString: 'SessionError INVALID_OPTIONS',
    notClocks: Array(4).fill('SessionError INVALID_OPTIONS'),
    date: 'resolved',
    defaultUntouched: true,
    stillThere: 1,
  });
});

test('userId: null is the sessions without a user in listSessions, storageEstimate, exportSessions and applyRetention, as in searchSessions and watchSessions (it was every user’s)', async () => {
  const { page } = await openHarness(env);
  await helpers(page);
  const r = await page.evaluate(async () => {
    const dbName = `null-user-${Math.random()}`;
    for (const [id, userId] of [['anon-1', undefined], ['ann-1', 'ann'], ['anon-2', undefined], ['bob-1', 'bob']]) {
      await new lib.IndexedDbSession(id, { dbName, userId }).addItems([{ role: 'user', content: `from ${id}` }]);
    }
    const ids = (list) => list.map((s) => s.sessionId).sort();
    const listed = ids(await lib.listSessions({ dbName, userId: null }));
    const everyone = ids(await lib.listSessions({ dbName }));
    const sized = ids((await lib.storageEstimate({ dbName, userId: null })).sessions);
    const exported = (await backupText({ dbName, userId: null }))
      .split('\n')
      .filter((l) => l.startsWith('{"session"'))
      .map((l) => JSON.parse(l).session.id)
      .sort();
    // Every session is old by this clock: only those without a user go.
    const deleted = ids(await lib.applyRetention({ dbName, userId: null, maxAgeDays: 0, now: Date.now() + 86_400_000 }));
    const left = ids(await lib.listSessions({ dbName }));
    return { listed, everyone, sized, exported, deleted, left };
  });
  assert.deepEqual(r, {
    listed: ['anon-1', 'anon-2'],
    everyone: ['ann-1', 'anon-1', 'anon-2', 'bob-1'],
    sized: ['anon-1', 'anon-2'],
    exported: ['anon-1', 'anon-2'],
    deleted: ['anon-1', 'anon-2'],
    left: ['ann-1', 'bob-1'],
  });
});

test('applyRetention leaves a record under an id no call can name (blank, a lone surrogate) or with an infinite time (stored by other code), neither counted nor deleted, and deletes the others it chose, one of an owner no call can name too', async () => {
  const { page } = await openHarness(env);
  const r = await page.evaluate(async () => {
    const dbName = `blank-id-${Math.random()}`;
    await new lib.IndexedDbSession('old', { dbName }).addItems([{ role: 'user', content: 'q' }]);
    const db = await new Promise((ok, fail) => {
      const req = indexedDB.open(dbName);
      req.onsuccess = () => ok(req.result);
      req.onerror = () => fail(req.error);
    });
    const [record] = await new Promise((ok) => {
      const req = db.transaction('agent_sessions').objectStore('agent_sessions').getAll();
      req.onsuccess = () => ok(req.result);
    });
    await new Promise((ok) => {
      const tx = db.transaction('agent_sessions', 'readwrite');
      const store = tx.objectStore('agent_sessions');
      const odd = { ...record, itemCount: 0, firstSeq: record.nextSeq };
      store.put({ ...odd, id: ' ' });
      store.put({ ...odd, id: 'lone\uD800' });
      store.put({ ...odd, id: 'never', updatedAt: -Infinity });
      store.put({ ...odd, id: 'forever', updatedAt: Infinity });
      store.put({ ...odd, id: 'blank-owner', userId: ' ' });
      store.put({ ...odd, id: 'number-owner', userId: 5 });
      tx.oncomplete = ok;
    });
    db.close();
    const deleted = await lib.applyRetention({ dbName, maxAgeDays: 0, now: Date.now() + 86_400_000 });
    const left = (await lib.listSessions({ dbName })).map((s) => s.sessionId).sort();
    // One place per user: the record of an infinite time takes none.
    await new lib.IndexedDbSession('newest', { dbName }).addItems([{ role: 'user', content: 'q' }]);
    const capped = await lib.applyRetention({ dbName, maxSessionsPerUser: 1 });
    return { deleted: deleted.map((s) => s.sessionId).sort(), left, capped: capped.map((s) => s.sessionId) };
  });
  assert.deepEqual(r, { deleted: ['blank-owner', 'number-owner', 'old'], left: [' ', 'forever', 'lone\uD800', 'never'].sort(), capped: [] });
});
