// Bad input and storage failures: each gives a SessionError with a stable code and a message that
// says what was wrong and where, and each leaves storage exactly as it was.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness } from './harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

function assertError(res, code, message) {
  assert.equal(res.ok, false, `expected ${code}, the call succeeded`);
  assert.equal(res.isError, true, 'rejects with an Error object');
  assert.equal(res.name, 'SessionError');
  assert.equal(res.code, code, res.message);
  if (message) assert.match(res.message, message);
}

const SEED = [{ role: 'user', content: 'seed' }];

for (const kind of ['indexeddb', 'memory']) {
  describe(`${kind}: bad input changes nothing`, () => {
    let page;
    before(async () => {
      ({ page } = await openHarness(env));
    });

    /** Runs `bad` (source of an async function of the seeded session `s`) and reports its outcome
     * and the history afterwards, read through a new session object. */
    async function tryOn(bad, sessionId) {
      return page.evaluate(
        async ({ kind, bad, sessionId }) => {
          const s = make(kind, sessionId);
          await s.clearSession();
          await s.addItems([{ role: 'user', content: 'seed' }]);
          const res = await attempt(() => eval(`(${bad})`)(s));
          const reader = kind === 'memory' ? s : make(kind, sessionId);
          const history = (await attempt(() => reader.getItems())).value;
          const listed = kind === 'indexeddb' ? (await lib.listSessions()).map((i) => [i.sessionId, i.itemCount]) : null;
          return { res, history, listed };
        },
        { kind, bad, sessionId },
      );
    }

    const cases = [
      ['items is a string', `(s) => s.addItems('hello')`, /items must be an array, got a string/],
      ['items is an object', `(s) => s.addItems({ role: 'user', content: 'x' })`, /items must be an array, got an object/],
      ['items is missing', `(s) => s.addItems()`, /items must be an array, got undefined/],
      ['an item is a string', `(s) => s.addItems([{ role: 'user', content: 'ok' }, 'text'])`, /items\[1\] is not a plain object: got a string/],
      ['an item is a number', `(s) => s.addItems([{ role: 'user', content: 'ok' }, {}, 42])`, /items\[2\] is not a plain object: got the number 42/],
      ['an item is null', `(s) => s.addItems([null])`, /items\[0\] is not a plain object: got null/],
      ['an item is an array', `(s) => s.addItems([{ a: 1 }, [{ role: 'user' }]])`, /items\[1\] is not a plain object: got an array/],
      ['an item is a function', `(s) => s.addItems([() => 1])`, /items\[0\] is not a plain object: got a function/],
      ['an item is a Date', `(s) => s.addItems([new Date()])`, /items\[0\] is not a plain object: got an instance of Date/],
      ['an item holds a function', `(s) => s.addItems([{ role: 'user', content: 'ok' }, { role: 'user', content: 'x', run() {} }])`, /items\[1\] holds a value that cannot be stored \(DataCloneError/],
      ['an item holds a DOM node', `(s) => s.addItems([{ role: 'user', content: document.body }])`, /items\[0\] holds a value that cannot be stored \(DataCloneError/],
      ['limit 1.5', `(s) => s.getItems(1.5)`, /limit must be an integer, got 1.5/],
      ['limit NaN', `(s) => s.getItems(NaN)`, /limit must be an integer, got NaN/],
      ['limit "2"', `(s) => s.getItems('2')`, /limit must be an integer, got a string/],
    ];

    for (const [name, bad, message] of cases) {
      test(name, async () => {
        const code = name.startsWith('limit') ? 'INVALID_LIMIT' : 'INVALID_ITEM';
        const id = `bad-${name.replace(/\W+/g, '-')}`;
        const r = await tryOn(bad, id);
        assertError(r.res, code, message);
        assert.deepEqual(r.history, SEED, 'history unchanged');
        if (r.listed) assert.deepEqual(r.listed.find(([sid]) => sid === id), [id, 1]);
      });
    }

    test('invalid session ids, user ids, options and settings are refused by the constructor', async () => {
      const r = await page.evaluate(async (kind) => {
        const tryNew = (...args) => {
          try {
            make(kind, ...args);
            return { ok: true };
          } catch (e) {
            return { ok: false, name: e.name, code: e.code, message: e.message, isError: e instanceof Error };
          }
        };
        return {
          empty: tryNew(''),
          blank: tryNew('   '),
          number: tryNew(42),
          options: tryNew('s', 'not options'),
          settings: tryNew('s', { settings: 5 }),
          settingsLimit: tryNew('s', { settings: { limit: 1.5 } }),
          settingsLimitString: tryNew('s', { settings: { limit: '3' } }),
          userId: kind === 'indexeddb' ? tryNew('s', { userId: '' }) : null,
          userIdType: kind === 'indexeddb' ? tryNew('s', { userId: 7 }) : null,
          dbName: kind === 'indexeddb' ? tryNew('s', { dbName: '' }) : null,
          // A misspelt option, ignored, would put the session under no user, or read it all.
          misspelt: tryNew('s', kind === 'indexeddb' ? { userID: 'ann' } : { initialItems: [] }),
          misspeltSetting: tryNew('s', { settings: { turn: 3 } }),
          misspeltIndex: kind === 'indexeddb' ? tryNew('s', { index: { tool: true } }) : null,
          undefinedOther: tryNew('s', { other: undefined }),
        };
      }, kind);
      assertError(r.misspelt, 'INVALID_OPTIONS', kind === 'indexeddb' ? /^options\.userID is not an option \(there are userId, dbName, settings, branch, index\)/ : /^options\.initialItems is not an option \(there are settings\)/);
      assertError(r.misspeltSetting, 'INVALID_OPTIONS', /^options\.settings\.turn is not an option \(there are limit, turns\)/);
      if (kind === 'indexeddb') assertError(r.misspeltIndex, 'INVALID_OPTIONS', /options\.index\.tool is not an option/);
      assert.equal(r.undefinedOther.ok, true, 'a key given as undefined is no option given');
      assertError(r.empty, 'INVALID_SESSION_ID', /sessionId must be a non-empty string, got ""/);
      assertError(r.blank, 'INVALID_SESSION_ID');
      assertError(r.number, 'INVALID_SESSION_ID', /got the number 42/);
      assertError(r.options, 'INVALID_OPTIONS', /options must be an object, got a string/);
      assertError(r.settings, 'INVALID_OPTIONS', /options.settings must be an object/);
      assertError(r.settingsLimit, 'INVALID_LIMIT', /options.settings.limit must be an integer, got 1.5/);
      assertError(r.settingsLimitString, 'INVALID_LIMIT');
      if (kind === 'indexeddb') {
        assertError(r.userId, 'INVALID_USER_ID');
        assertError(r.userIdType, 'INVALID_USER_ID', /options.userId must be a string/);
        assertError(r.dbName, 'INVALID_OPTIONS', /options.dbName/);
      }
    });

    test('every call after close() rejects with CLOSED, whatever its arguments; calls made before it complete', async () => {
      const r = await page.evaluate(async (kind) => {
        const s = make(kind, 'closing');
        const added = s.addItems([{ role: 'user', content: 'before close' }]);
        const closed = s.close();
        const results = {};
        for (const [name, call] of Object.entries({
          getItems: () => s.getItems(),
          addItems: () => s.addItems([{ role: 'user', content: 'after close' }]),
          popItem: () => s.popItem(),
          clearSession: () => s.clearSession(),
          getSessionId: () => s.getSessionId(),
          // Arguments that are wrong in themselves: the session being closed is what is reported.
          'addItems with a string': () => s.addItems('x'),
          'addItems with no argument': () => s.addItems(),
          'getItems with limit 1.5': () => s.getItems(1.5),
          'getItems with limit "2"': () => s.getItems('2'),
        })) {
          results[name] = await attempt(call);
        }
        await added;
        await closed;
        const again = await attempt(() => s.close());
        const reader = make(kind, 'closing');
        return {
          results,
          again,
          history: kind === 'indexeddb' ? await reader.getItems() : null,
          id: s.sessionId,
        };
      }, kind);
      for (const [name, res] of Object.entries(r.results)) {
        const method = name.split(' ')[0];
        assertError(res, 'CLOSED', new RegExp(`^${method}: the session was closed`));
      }
      assert.equal(r.again.ok, true, 'close() twice is fine');
      assert.equal(r.id, 'closing', 'properties stay readable');
      if (kind === 'indexeddb') {
        assert.deepEqual(r.history, [{ role: 'user', content: 'before close' }]);
      }
    });
  });
}

describe('indexeddb: storage failures', () => {
  test('IndexedDB unavailable: STORAGE_UNAVAILABLE', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const real = Object.getOwnPropertyDescriptor(globalThis, 'indexedDB') ??
        Object.getOwnPropertyDescriptor(Object.getPrototypeOf(globalThis), 'indexedDB');
      Object.defineProperty(globalThis, 'indexedDB', { value: undefined, configurable: true });
      try {
        const s = new lib.IndexedDbSession('nowhere');
        return {
          // Nothing to write: nothing to open either.
          none: await s.addItems([]),
          add: await attempt(() => s.addItems([{ role: 'user', content: 'x' }])),
          get: await attempt(() => s.getItems()),
          list: await attempt(() => lib.listSessions()),
        };
      } finally {
        delete globalThis.indexedDB;
        if (!('indexedDB' in globalThis)) Object.defineProperty(globalThis, 'indexedDB', real);
      }
    });
    assert.equal(r.none, undefined);
    assertError(r.add, 'STORAGE_UNAVAILABLE', /IndexedDB is not available/);
    assertError(r.get, 'STORAGE_UNAVAILABLE');
    assertError(r.list, 'STORAGE_UNAVAILABLE');
    await context.close();
  });

  test('IndexedDB refused by the browser (opaque origin): STORAGE_UNAVAILABLE', async () => {
    const { context, page } = await openHarness(env);
    // A sandboxed frame without allow-same-origin has an opaque origin: IndexedDB throws
    // SecurityError there, as it does in some privacy modes.
    const r = await page.evaluate(async (pkgUrl) => {
      const frame = document.createElement('iframe');
      frame.setAttribute('sandbox', 'allow-scripts');
      const done = new Promise((ok) => {
        window.addEventListener('message', (e) => ok(e.data), { once: true });
      });
      frame.srcdoc = `<script type="module">
        const report = (x) => parent.postMessage(x, '*');
        try {
          const lib = await import(${JSON.stringify(pkgUrl)});
          const s = new lib.IndexedDbSession('opaque');
          await s.getItems();
          report({ ok: true });
        } catch (e) {
          report({ ok: false, name: e.name, code: e.code, message: e.message, isError: e instanceof Error });
        }
      <\/script>`;
      document.body.append(frame);
      return done;
    }, `${env.url}/pkg/index.js`);
    assertError(r, 'STORAGE_UNAVAILABLE', /SecurityError/);
    await context.close();
  });

  test('an option of a name a function does not take (a misspelt userID) is refused before anything is read or written, by every function that takes options: none reads or deletes every user’s sessions', async () => {
    const { page, context } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const dbName = 'misspelt-options';
      for (const userId of ['ann', 'bob']) await new lib.IndexedDbSession(`${userId}-chat`, { dbName, userId }).addItems([{ role: 'user', content: `hello from ${userId}` }]);
      const backup = await new Response(lib.exportSessions({ dbName })).text();
      const outcome = async (call) => {
        try {
          await call();
          return { ok: true };
        } catch (e) {
          return { ok: false, name: e.name, code: e.code, message: e.message, isError: e instanceof Error };
        }
      };
      const stop = lib.watchSessions({ dbName, userID: 'ann' }, () => {});
      const key = crypto.getRandomValues(new Uint8Array(32));
      const calls = {
        listSessions: () => lib.listSessions({ dbName, userID: 'ann' }),
        deleteSession: () => lib.deleteSession('bob-chat', { dbName, userID: 'ann' }),
        repairSession: () => lib.repairSession('bob-chat', { dbName, userID: 'ann' }),
        applyRetention: () => lib.applyRetention({ dbName, userID: 'ann', maxAgeDays: 0, now: Date.now() + 1000 }),
        exportSessions: () => lib.exportSessions({ dbName, userID: 'ann' }),
        importSessions: () => lib.importSessions(new Blob([backup]).stream(), { dbName, onconflict: 'replace' }),
        searchSessions: () => lib.searchSessions({ dbName, userId: 'ann', query: 'hello', sessionId: 'ann-chat' }),
        buildSearchIndex: () => lib.buildSearchIndex({ dbname: dbName }),
        storageEstimate: () => lib.storageEstimate({ dbName, userID: 'ann' }),
        watchSessions: () => stop.ready,
        EncryptedSession: () => new lib.EncryptedSession(new lib.MemorySession(), { key, ttL: 60 }),
        SyncedSession: () => new lib.SyncedSession(new lib.IndexedDbSession('ann-chat', { dbName, userId: 'ann' }), new lib.MemorySession(), { interval: 1000, syncOnOpen: false }),
        // A misspelt condition would replace the history whatever it holds.
        replaceHistory: () => new lib.IndexedDbSession('ann-chat', { dbName, userId: 'ann' }).replaceHistory([], { expectedItem: [] }),
        encryptedReplaceHistory: () => new lib.EncryptedSession(new lib.IndexedDbSession('ann-chat', { dbName, userId: 'ann' }), { key }).replaceHistory([], { expectedItem: [] }),
        memoryReplaceHistory: () => new lib.MemorySession('m').replaceHistory([], { expectedItem: [] }),
        getArchivedItems: () => new lib.IndexedDbSession('ann-chat', { dbName, userId: 'ann' }).getArchivedItems({ limt: 1 }),
        getTurns: () => new lib.IndexedDbSession('ann-chat', { dbName, userId: 'ann' }).getTurns({ brnch: 'main' }),
        memoryGetTurns: () => new lib.MemorySession('m').getTurns({ brnch: 'main' }),
      };
      const results = {};
      for (const [name, call] of Object.entries(calls)) results[name] = await outcome(call);
      return {
        results,
        // Still there, each with its one item.
        listed: (await lib.listSessions({ dbName })).map((s) => [s.sessionId, s.itemCount]).sort(),
        // An option given as undefined is none.
        undefinedOption: await outcome(() => lib.listSessions({ dbName, other: undefined })),
      };
    });
    for (const [name, res] of Object.entries(r.results)) {
      assert.equal(res.ok, false, `${name} refuses it`);
      assertError(res, 'INVALID_OPTIONS', /(userID|onconflict|sessionId|dbname|ttL|interval|expectedItem|limt|brnch) is not an option/);
    }
    assert.match(r.results.applyRetention.message, /^applyRetention: options\.userID is not an option \(dbName, userId, maxAgeDays, maxSessionsPerUser, now\)$/);
    assert.match(r.results.listSessions.message, /^options\.userID is not an option \(there are dbName, userId\)/);
    assert.deepEqual(r.listed, [['ann-chat', 1], ['bob-chat', 1]]);
    assert.equal(r.undefinedOption.ok, true);
    await context.close();
  });

  test('a database written by a newer schema version: DB_VERSION, data untouched', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      const open = (version, upgrade) =>
        new Promise((ok, fail) => {
          const req = indexedDB.open('future-db', version);
          req.onupgradeneeded = () => upgrade?.(req.result);
          req.onsuccess = () => ok(req.result);
          req.onerror = () => fail(req.error);
        });
      const db = await open(13, (db) => db.createObjectStore('agent_sessions', { keyPath: 'id' }));
      await new Promise((ok) => {
        const tx = db.transaction('agent_sessions', 'readwrite');
        tx.objectStore('agent_sessions').put({ id: 'kept', note: 'from the future' });
        tx.oncomplete = ok;
      });
      db.close();
      const s = new lib.IndexedDbSession('kept', { dbName: 'future-db' });
      const add = await attempt(() => s.addItems([{ role: 'user', content: 'x' }]));
      const list = await attempt(() => lib.listSessions({ dbName: 'future-db' }));
      const after = await open(undefined);
      const version = after.version;
      const rows = await new Promise((ok) => {
        const req = after.transaction('agent_sessions').objectStore('agent_sessions').getAll();
        req.onsuccess = () => ok(req.result);
      });
      after.close();
      return { add, list, version, rows };
    });
    assertError(r.add, 'DB_VERSION', /schema version 13, newer than version 12 .* left untouched/);
    assertError(r.list, 'DB_VERSION');
    assert.equal(r.version, 13);
    assert.deepEqual(r.rows, [{ id: 'kept', note: 'from the future' }]);
    await context.close();
  });

  /** In the page, as text: opens a database (`dbName`) as version 1 of the library left it,
   * holding session "kept", and keeps the connection open without closing it when another
   * connection wants to upgrade it. */
  const versionOne = `(dbName) => new Promise((ok, fail) => {
    const req = indexedDB.open(dbName, 1);
    req.onupgradeneeded = () => {
      const sessions = req.result.createObjectStore('agent_sessions', { keyPath: 'id' });
      sessions.createIndex('by_updated', 'updatedAt');
      sessions.createIndex('by_user_updated', ['userId', 'updatedAt']);
      const messages = req.result.createObjectStore('agent_messages', { keyPath: ['sessionId', 'seq'] });
      sessions.put({ id: 'kept', userId: null, createdAt: 1, updatedAt: 1, itemCount: 1, firstSeq: 0, nextSeq: 1, lastTurn: 1 });
      messages.put({ sessionId: 'kept', seq: 0, turn: 1, createdAt: 1, item: { role: 'user', content: 'before' } });
    };
    req.onsuccess = () => ok(req.result);
    req.onerror = () => fail(req.error);
  })`;

  test('an upgrade another connection blocks (one that does not close on versionchange): DB_BLOCKED for every call, those made together and those of the second module (search, delete) too, nothing changed; once it closes, the upgrade runs', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async (versionOne) => {
      const dbName = 'blocked-db';
      const old = await eval(versionOne)(dbName);
      const s = new lib.IndexedDbSession('kept', { dbName });
      // Two calls at once: the second open waits behind the first and hears no `blocked`.
      const [read, together] = await Promise.all([attempt(() => s.getItems()), attempt(() => lib.listSessions({ dbName }))]);
      // While that open still waits, another call does not queue behind it: it fails at once,
      // in the second module too (which has its own connections).
      const list = await attempt(() => lib.listSessions({ dbName }));
      const search = await attempt(() => lib.searchSessions({ dbName, userId: null, query: 'before' }));
      const deleted = await attempt(() => lib.deleteSession('kept', { dbName }));
      const versionWhileBlocked = old.version;
      old.close();
      let after;
      for (let i = 0; i < 100 && !after?.ok; i++) {
        await new Promise((ok) => setTimeout(ok, 20));
        after = await attempt(() => s.getItems());
      }
      const version = await new Promise((ok) => {
        const req = indexedDB.open(dbName);
        req.onsuccess = () => {
          ok(req.result.version);
          req.result.close();
        };
      });
      return { read, together, list, search, deleted, versionWhileBlocked, after, version };
    }, versionOne);
    assertError(r.read, 'DB_BLOCKED', /"blocked-db": its upgrade waits for another connection to it to close .* close the other tabs of this site, then try again/);
    assertError(r.together, 'DB_BLOCKED');
    assertError(r.list, 'DB_BLOCKED');
    assertError(r.search, 'DB_BLOCKED');
    assertError(r.deleted, 'DB_BLOCKED');
    assert.equal(r.versionWhileBlocked, 1);
    assert.equal(r.after.ok, true, JSON.stringify(r.after));
    assert.deepEqual(r.after.value, [{ role: 'user', content: 'before' }], 'the upgrade ran with its migrations');
    assert.equal(r.version, 12);
    await context.close();
  });

  test('a blocked upgrade given up on in one tab: a call in another tab, whose open waits behind it and hears no blocked of its own, fails with DB_BLOCKED too instead of waiting for good; once the old connection closes, both tabs work', async () => {
    const { context, page: old } = await openHarness(env);
    const { page: first } = await openHarness(env, context);
    const { page: second } = await openHarness(env, context);
    await old.evaluate((versionOne) => eval(versionOne)('blocked-tabs').then((db) => (window.old = db)), versionOne);
    const firstRead = await first.evaluate(() => attempt(() => new lib.IndexedDbSession('kept', { dbName: 'blocked-tabs' }).getItems()));
    // Bounded by the test alone: without a give-up, the call would wait until the old tab closes.
    const secondRead = await second.evaluate(() =>
      Promise.race([
        attempt(() => new lib.IndexedDbSession('kept', { dbName: 'blocked-tabs' }).getItems()),
        new Promise((ok) => setTimeout(() => ok({ ok: false, stillWaiting: true }), 20000)),
      ]),
    );
    await old.evaluate(() => window.old.close());
    const after = async () => {
      let r;
      for (let i = 0; i < 100 && !r?.ok; i++) {
        await new Promise((ok) => setTimeout(ok, 50));
        r = await attempt(() => new lib.IndexedDbSession('kept', { dbName: 'blocked-tabs' }).getItems());
      }
      return r;
    };
    const firstAfter = await first.evaluate(after);
    // The upgrade done, the other tab is told nothing of a lock any more: its first call works.
    const secondAfter = await second.evaluate(() => attempt(() => new lib.IndexedDbSession('kept', { dbName: 'blocked-tabs' }).getItems()));
    assertError(firstRead, 'DB_BLOCKED');
    assertError(secondRead, 'DB_BLOCKED');
    assert.deepEqual(firstAfter.value, [{ role: 'user', content: 'before' }]);
    assert.deepEqual(secondAfter.value, [{ role: 'user', content: 'before' }], JSON.stringify(secondAfter));
    await context.close();
  });

  test('once the connection that blocked an upgrade closes, calls made while the upgrade runs wait for it (however long its migrations take), in both modules and in other tabs, also where other calls had given up behind the blocked one, rather than fail with DB_BLOCKED', async () => {
    const { context, page } = await openHarness(env);
    const { page: other } = await openHarness(env, context);
    const dbName = 'blocked-then-upgrading';
    await page.evaluate(async ({ versionOne, dbName }) => {
      window.old = await eval(versionOne)(dbName);
      // The library's upgrade is held open (as long migrations would hold it) until released.
      const open = IDBFactory.prototype.open;
      window.began = new Promise((ok) => (window.begun = ok));
      window.released = false;
      IDBFactory.prototype.open = function (...args) {
        const request = open.apply(this, args);
        request.addEventListener('upgradeneeded', () => {
          const store = request.transaction.objectStore('agent_sessions');
          const spin = () => {
            if (!window.released) store.get('kept').onsuccess = spin;
          };
          spin();
          window.begun();
        });
        return request;
      };
    }, { versionOne, dbName });
    // Blocked: two calls together here (the second waits behind the first, and gives up behind
    // it), then one in another tab (behind both).
    const blocked = await page.evaluate(async (dbName) => {
      const s = new lib.IndexedDbSession('kept', { dbName });
      return Promise.all([attempt(() => s.getItems()), attempt(() => lib.listSessions({ dbName }))]);
    }, dbName);
    const blockedThere = await other.evaluate((dbName) => attempt(() => new lib.IndexedDbSession('kept', { dbName }).getItems()), dbName);
    const during = async (dbName) => {
      const s = new lib.IndexedDbSession('kept', { dbName });
      window.during = [attempt(() => s.getItems()), attempt(() => lib.searchSessions({ dbName, userId: null, query: 'before' }))];
    };
    await page.evaluate(async () => {
      window.old.close();
      await window.began;
      // (After the library's own upgrade handler, which the same event calls.)
      await new Promise((ok) => setTimeout(ok, 0));
    });
    await page.evaluate(during, dbName);
    await other.evaluate(during, dbName);
    // Longer than an open takes to look whether to give up (every 100 ms).
    await page.evaluate(() => new Promise((ok) => setTimeout(ok, 400)));
    await page.evaluate(() => (window.released = true));
    const [here, there] = await Promise.all([page, other].map((p) => p.evaluate(() => Promise.all(window.during))));
    for (const r of [...blocked, blockedThere]) assertError(r, 'DB_BLOCKED');
    for (const [read, search] of [here, there]) {
      assert.deepEqual(read.value, [{ role: 'user', content: 'before' }], JSON.stringify(read));
      assert.equal(search.ok, true, JSON.stringify(search));
    }
    await context.close();
  });

  test('a blocked upgrade in a tab whose timers fire a second apart (a hidden tab) fails with DB_BLOCKED about 3 s after the open, not after 30 of its timers', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async (versionOne) => {
      const old = await eval(versionOne)('blocked-throttled');
      // As a hidden tab's timers: none fires sooner than a second after it was set.
      const real = window.setTimeout;
      let fired = 0;
      window.setTimeout = (fn, ms, ...args) => real(() => (fired++, fn(...args)), Math.max(ms ?? 0, 1000));
      const read = await attempt(() => new lib.IndexedDbSession('kept', { dbName: 'blocked-throttled' }).getItems());
      window.setTimeout = real;
      old.close();
      return { read, fired };
    }, versionOne);
    assertError(r.read, 'DB_BLOCKED');
    assert.ok(r.fired < 10, `the wait took ${r.fired} timers of a second`);
    await context.close();
  });

  /** In the page: every connection opened from now on is kept in `opened`, so that a test can
   * close them: a connection closed by `close()` gets no `close` event, as one the browser lost
   * without telling, and its transactions are then refused with an InvalidStateError.
   * `unpatchedOpen` opens one that is not kept. */
  const keepConnections = () => {
    window.opened = [];
    const open = (window.unpatchedOpen = IDBFactory.prototype.open);
    IDBFactory.prototype.open = function (...args) {
      const request = open.apply(this, args);
      request.addEventListener('success', () => window.opened.push(request.result));
      return request;
    };
  };

  test('a connection the browser closed without a close event (the storage process gone): the call that finds it closed opens the database again and goes on, nothing lost', async () => {
    const { context, page } = await openHarness(env);
    await page.evaluate(keepConnections);
    const r = await page.evaluate(async () => {
      const dbName = 'lost-connection';
      const s = new lib.IndexedDbSession('lost', { dbName, userId: 'u' });
      await s.addItems([{ role: 'user', content: 'first question' }]);
      const calls = {
        getItems: () => s.getItems(),
        addItems: () => s.addItems([{ role: 'assistant', content: 'first answer' }]),
        getRecentTurns: () => s.getRecentTurns(1),
        popItem: () => s.popItem(),
        addAgain: () => s.addItems([{ role: 'assistant', content: 'second answer' }]),
        listSessions: () => lib.listSessions({ dbName, userId: 'u' }),
        searchSessions: () => lib.searchSessions({ dbName, userId: 'u', query: 'question' }),
        history: () => new lib.IndexedDbSession('lost', { dbName, userId: 'u' }).getItems(),
        createBranchFromTurn: () => s.createBranchFromTurn(1),
      };
      const results = {};
      for (const [name, call] of Object.entries(calls)) {
        for (const db of opened.splice(0)) db.close();
        results[name] = await attempt(call);
      }
      return { results, branches: (await s.listBranches()).length };
    });
    for (const [name, res] of Object.entries(r.results)) assert.equal(res.ok, true, `${name}: ${JSON.stringify(res)}`);
    assert.deepEqual(r.results.getItems.value, [{ role: 'user', content: 'first question' }]);
    assert.deepEqual(r.results.popItem.value, { role: 'assistant', content: 'first answer' });
    assert.equal(r.results.listSessions.value[0].itemCount, 2);
    assert.equal(r.results.searchSessions.value.length, 1);
    assert.deepEqual(r.results.history.value, [
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'second answer' },
    ]);
    assert.equal(r.branches, 2);
    await context.close();
  });

  test('an index build whose connection the browser closes between two chunks goes on with the database opened again: the search waiting for it finds', async () => {
    const { context, page } = await openHarness(env);
    await page.evaluate(keepConnections);
    const r = await page.evaluate(async () => {
      const dbName = 'lost-during-build';
      const s = new lib.IndexedDbSession('chat', { dbName, userId: 'u' });
      await s.addItems(Array.from({ length: 250 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `note${i}` })));
      // Rows without terms, as a version from before the index left them, and the build to do.
      const db = await new Promise((ok, fail) => {
        const req = unpatchedOpen.call(indexedDB, dbName);
        req.onsuccess = () => ok(req.result);
        req.onerror = () => fail(req.error);
      });
      await new Promise((ok, fail) => {
        const tx = db.transaction(['agent_messages', 'agent_meta'], 'readwrite');
        tx.objectStore('agent_messages').openCursor().onsuccess = (e) => {
          const cursor = e.target.result;
          if (!cursor) return;
          const { terms, ...row } = cursor.value;
          cursor.update(row);
          cursor.continue();
        };
        tx.objectStore('agent_meta').put({ name: 'searchIndex', done: false, indexed: 0, terms: 6 });
        tx.oncomplete = ok;
        tx.onerror = () => fail(tx.error);
      });
      db.close();
      let chunks = 0;
      const built = await attempt(() =>
        lib.buildSearchIndex({
          dbName,
          onProgress: () => {
            // After the first chunk, the storage process goes: every connection closed, with no event.
            if (++chunks === 1) for (const c of opened.splice(0)) c.close();
          },
        }),
      );
      const found = await attempt(() => lib.searchSessions({ dbName, userId: 'u', query: 'note249' }));
      return { built, chunks, found: found.ok ? found.value.map((h) => h.snippet) : found };
    });
    assert.equal(r.built.ok, true, JSON.stringify(r.built));
    assert.equal(r.built.value.done, 250);
    assert.ok(r.chunks >= 2, `${r.chunks} chunks reported`);
    assert.deepEqual(r.found, ['note249']);
    await context.close();
  });

  test('a database opened first without a version (an empty version 1, as DevTools or a page’s own code makes) is set up, not refused', async () => {
    const { context, page } = await openHarness(env);
    const r = await page.evaluate(async () => {
      await new Promise((ok, fail) => {
        const req = indexedDB.open('opened-bare');
        req.onsuccess = () => {
          req.result.close();
          ok();
        };
        req.onerror = () => fail(req.error);
      });
      const s = new lib.IndexedDbSession('chat', { dbName: 'opened-bare' });
      const add = await attempt(() => s.addItems([{ role: 'user', content: 'hello' }]));
      return { add, items: await attempt(() => s.getItems()), found: await attempt(() => lib.searchSessions({ dbName: 'opened-bare', userId: null, query: 'hello' })) };
    });
    assert.equal(r.add.ok, true, JSON.stringify(r.add));
    assert.deepEqual(r.items.value, [{ role: 'user', content: 'hello' }]);
    assert.equal(r.found.value?.length, 1, JSON.stringify(r.found));
    await context.close();
  });

  test('quota exceeded in a history transaction that records usage: STORAGE_FULL with the browser’s reason, nothing written', async () => {
    const { context, page } = await openHarness(env);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: env.url, quotaSize: 2 * 1024 * 1024 });
    const r = await page.evaluate(async () => {
      const s = new lib.IndexedDbSession('full-usage', { dbName: 'full-usage' });
      await s.addItems([{ role: 'user', content: 'q1' }]);
      const big = 'z'.repeat(1024 * 1024);
      const res = await attempt(() =>
        s.applyHistoryTransaction({
          operationId: 'save-1',
          transaction: { type: 'append_items', items: [{ role: 'assistant', content: big }, { role: 'assistant', content: big + big }, { role: 'assistant', content: big + big + big }] },
          usage: { requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        }),
      );
      return { res, after: (await s.getItems()).length, usage: (await s.getSessionUsage()).requests };
    });
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: env.url });
    assertError(r.res, 'STORAGE_FULL', /QuotaExceededError/);
    assert.equal(r.after, 1);
    assert.equal(r.usage, 0);
    await context.close();
  });

  test('quota exceeded: STORAGE_FULL, the whole batch rolls back, earlier history intact', async () => {
    const { context, page } = await openHarness(env);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: env.url, quotaSize: 2 * 1024 * 1024 });
    const r = await page.evaluate(async () => {
      const s = new lib.IndexedDbSession('full');
      const before = [
        { role: 'user', content: 'q1' },
        { role: 'assistant', content: 'a1' },
      ];
      await s.addItems(before);
      const big = 'z'.repeat(1024 * 1024);
      const res = await attempt(() =>
        s.addItems([
          { role: 'user', content: 'q2' },
          { role: 'assistant', content: big },
          { role: 'assistant', content: big + big },
          { role: 'assistant', content: big + big + big },
        ]),
      );
      // The error carries what the browser says of the origin's storage.
      let figures;
      try {
        await s.addItems([{ role: 'assistant', content: big + big + big }]);
      } catch (e) {
        figures = { code: e.code, usage: e.usage, quota: e.quota };
      }
      const reader = new lib.IndexedDbSession('full');
      const after = await reader.getItems();
      const listed = await lib.listSessions();
      window.full = s;
      return { res, after, listed, figures };
    });
    // Once there is room again (the rolled-back writes may hold space until the browser
    // compacts its files, so the quota is lifted), the same session object writes again.
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: env.url });
    r.last = await page.evaluate(async () => {
      await window.full.addItems([{ role: 'user', content: 'still works' }]);
      return window.full.getItems(1);
    });
    assertError(r.res, 'STORAGE_FULL', /QuotaExceededError.*nothing of this write was saved/);
    assert.equal(r.figures.code, 'STORAGE_FULL');
    // The figures are navigator.storage.estimate()'s (which reports the disk's quota, not the
    // override that made this write fail).
    assert.ok(Number.isFinite(r.figures.quota) && r.figures.quota > 0, `quota ${r.figures.quota}`);
    assert.ok(Number.isFinite(r.figures.usage) && r.figures.usage >= 0, `usage ${r.figures.usage}`);
    assert.deepEqual(r.after, [
      { role: 'user', content: 'q1' },
      { role: 'assistant', content: 'a1' },
    ]);
    assert.equal(r.listed[0].itemCount, 2);
    assert.deepEqual(r.last, [{ role: 'user', content: 'still works' }]);
    await context.close();
  });
});
