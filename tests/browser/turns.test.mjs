// History that fits the prompt: reads by whole turns (a turn starts at a user message; a tool
// call is never split from its output), and the metadata a sidebar and a prompt need (title,
// summary, topics, state), kept in the session record: both session kinds, across a reload, with
// every bad input refused before anything is written.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, openHarness, reload } from './harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

let counter = 0;
const fresh = (p) => `${p}-${++counter}`;

/** Three turns after a system message: the second calls a tool. */
const CHAT = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'first question' },
  { role: 'assistant', content: 'first answer' },
  { role: 'user', content: [{ type: 'input_text', text: 'weather?' }] },
  { type: 'function_call', callId: 'c1', name: 'weather', arguments: '{}' },
  { type: 'function_call_result', callId: 'c1', output: 'sunny' },
  { role: 'assistant', content: 'sunny' },
  { type: 'message', role: 'user', content: 'third' },
  { role: 'assistant', content: 'third answer' },
];
const texts = (items) => items.map((i) => (typeof i.content === 'string' ? i.content : i.content?.[0]?.text ?? i.type));

for (const kind of ['indexeddb', 'memory']) {
  describe(`${kind}: turns and metadata`, () => {
    let page;
    before(async () => {
      ({ page } = await openHarness(env));
    });

    test('reads by whole turns: getRecentTurns, settings.turns (winning over settings.limit), explicit limits still count items', async () => {
      const r = await page.evaluate(
        async ({ kind, id, chat }) => {
          const s = make(kind, id, { settings: { turns: 2, limit: 1 } });
          await s.addItems(chat);
          const plain = make(kind, id + '-plain');
          await plain.addItems(chat);
          return {
            settings: s.settings,
            defaultRead: await s.getItems(),
            explicit: await s.getItems(3),
            one: await s.getRecentTurns(1),
            two: await plain.getRecentTurns(2),
            all: await plain.getRecentTurns(9),
            none: await plain.getRecentTurns(0),
            afterPop: await (async () => (await plain.popItem(), await plain.popItem(), plain.getRecentTurns(1)))(),
          };
        },
        { kind, id: fresh('turns'), chat: CHAT },
      );
      assert.deepEqual(r.settings, { limit: 1, turns: 2 });
      assert.deepEqual(texts(r.defaultRead), ['weather?', 'function_call', 'function_call_result', 'sunny', 'third', 'third answer']);
      assert.deepEqual(texts(r.explicit), ['sunny', 'third', 'third answer']);
      assert.deepEqual(texts(r.one), ['third', 'third answer']);
      assert.deepEqual(r.two, CHAT.slice(3), 'the tool call stays with its output, verbatim');
      assert.deepEqual(r.all, CHAT, 'more turns than there are: everything, the system message too');
      assert.deepEqual(r.none, []);
      assert.deepEqual(texts(r.afterPop), ['weather?', 'function_call', 'function_call_result', 'sunny']);
    });

    test('a compaction summary at the head of the history stays with every window of turns', async () => {
      const r = await page.evaluate(
        async ({ kind, id, chat }) => {
          const summary = { role: 'system', content: 'the summary so far', 'agent-sessions.summary': true };
          // As a compaction leaves a history: the summary, then the turns it kept; what it
          // replaced is in the archive.
          const s = make(kind, id, { settings: { turns: 1 } });
          await s.addItems(chat);
          await s.replaceHistory([summary, ...chat.slice(1)]);
          const older = make(kind, `${id}-older`);
          await older.addItems(chat);
          await older.replaceHistory([{ role: 'system', content: 'earlier', providerData: { 'agent-sessions.summary': true } }, ...chat.slice(1)]);
          // Compacted without archiving (CompactionSession's archive: false), on main and on a
          // branch of a session that has branches.
          const unarchived = make(kind, `${id}-unarchived`);
          await unarchived.addItems(chat);
          await unarchived.replaceHistory([summary, ...chat.slice(1)], { archive: false });
          const branched = make(kind, `${id}-branched`);
          await branched.addItems(chat);
          await branched.createBranchFromTurn(3, 'alt');
          await branched.addItems(chat.slice(7));
          await branched.replaceHistory([summary, ...chat.slice(1)], { archive: false });
          return {
            one: await s.getRecentTurns(1),
            read: await s.getItems(),
            all: await s.getRecentTurns(9),
            older: await older.getRecentTurns(1),
            unarchived: await unarchived.getRecentTurns(1),
            branched: await branched.getRecentTurns(1),
          };
        },
        { kind, id: fresh('summary-head'), chat: CHAT },
      );
      assert.deepEqual(texts(r.one), ['the summary so far', 'third', 'third answer']);
      assert.deepEqual(texts(r.read), ['the summary so far', 'third', 'third answer'], 'the default window too');
      assert.equal(r.all.length, CHAT.length, 'once, when every turn is read');
      assert.deepEqual(texts(r.older), ['earlier', 'third', 'third answer'], 'the mark of earlier versions too');
      assert.deepEqual(texts(r.unarchived), ['the summary so far', 'third', 'third answer'], 'compacted without archiving');
      assert.deepEqual(texts(r.branched), ['the summary so far', 'third', 'third answer'], 'on a branch, without archiving');
    });

    test('a rewrite archives only what the new history does not hold, counting repeated items: each kept item stands for one old one, the newest', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const u = (content) => ({ role: 'user', content });
          const a = (content) => ({ role: 'assistant', content });
          const chat = [u('yes'), a('ok'), u('yes'), a('ok'), u('more'), a('ok')];
          const summary = { role: 'system', content: 'the summary so far', 'agent-sessions.summary': true };
          const s = make(kind, id);
          await s.addItems(chat);
          // Holds one of the two "yes" and two of the three "ok": the oldest of each are replaced.
          await s.replaceHistory([summary, u('yes'), a('ok'), a('ok')], { archive: true });
          // On a branch (it shows the summary, then its own turns): its own archive.
          await s.createBranchFromTurn(1);
          await s.addItems([u('yes'), a('ok'), u('yes'), a('ok')]);
          await s.replaceHistory([summary, a('ok')], { archive: true });
          return { branch: await s.getArchivedItems(), main: (await s.switchBranch('main'), await s.getArchivedItems()), kept: await s.getItems() };
        },
        { kind, id: fresh('archive-repeats') },
      );
      assert.deepEqual(texts(r.main), ['yes', 'ok', 'more'], 'the oldest "yes", the oldest "ok" and "more"');
      assert.deepEqual(texts(r.kept), ['the summary so far', 'yes', 'ok', 'ok']);
      assert.deepEqual(texts(r.branch), ['yes', 'ok', 'yes'], "the branch's: what it showed but the summary and its newest \"ok\"");
    });

    test('a summary written as an item (a history synced from a compacted one, or copied) stays with every window of turns too', async () => {
      const r = await page.evaluate(
        async ({ kind, id, chat }) => {
          const summary = { role: 'system', content: 'the summary so far', 'agent-sessions.summary': true };
          const compaction = { type: 'compaction', encrypted_content: 'opaque' };
          const added = make(kind, id);
          await added.addItems([summary, ...chat.slice(1)]);
          // As SyncedSession writes what it pulls: history transactions.
          const pulled = make(kind, `${id}-pulled`);
          await pulled.applyHistoryTransaction({ operationId: 'pull-1', transaction: { type: 'append_items', items: [compaction, ...chat.slice(1, 3)] } });
          await pulled.applyHistoryTransaction({ operationId: 'pull-2', transaction: { type: 'append_items', items: chat.slice(3) } });
          // On a branch that starts empty (its head is its own).
          const branched = make(kind, `${id}-branched`);
          await branched.addItems(chat.slice(1, 3));
          await branched.createBranchFromTurn(1, 'fresh');
          await branched.addItems([summary, ...chat.slice(3)]);
          return {
            added: await added.getRecentTurns(1),
            pulled: await pulled.getRecentTurns(1),
            branched: await branched.getRecentTurns(1),
          };
        },
        { kind, id: fresh('summary-added'), chat: CHAT },
      );
      assert.deepEqual(texts(r.added), ['the summary so far', 'third', 'third answer']);
      assert.deepEqual(texts(r.pulled), ['compaction', 'third', 'third answer']);
      assert.deepEqual(texts(r.branched), ['the summary so far', 'third', 'third answer']);
    });

    test('on a branch too: a compaction summary at the head of its view stays with a window of turns', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const summary = { role: 'system', content: 'the summary so far', 'agent-sessions.summary': true };
          const turn = (n, tag = '') => [{ role: 'user', content: `q${n}${tag}` }, { role: 'assistant', content: `a${n}${tag}` }];
          // Main compacted, then an edit of its newest turn: the branch shows main's head.
          const s = make(kind, id);
          await s.addItems([...turn(1), ...turn(2), ...turn(3)]);
          await s.replaceHistory([summary, ...turn(2), ...turn(3)]);
          await s.createBranchFromTurn(2, 'edit');
          await s.addItems([...turn(2, ' edited'), ...turn(3, ' edited')]);
          const inherited = await s.getRecentTurns(1);
          // A branch compacted itself.
          const b = make(kind, `${id}-own`);
          await b.addItems([...turn(1), ...turn(2)]);
          await b.createBranchFromTurn(2, 'alt');
          await b.addItems([...turn(2, ' alt'), ...turn(3, ' alt'), ...turn(4, ' alt')]);
          await b.replaceHistory([summary, ...turn(4, ' alt')]);
          await b.addItems(turn(5, ' alt'));
          return { inherited, own: await b.getRecentTurns(1), all: (await b.getRecentTurns(9)).length };
        },
        { kind, id: fresh('branch-summary-head') },
      );
      assert.deepEqual(texts(r.inherited), ['the summary so far', 'q3 edited', 'a3 edited']);
      assert.deepEqual(texts(r.own), ['the summary so far', 'q5 alt', 'a5 alt']);
      assert.equal(r.all, 5, 'once, when every turn is read');
    });

    // (IndexedDB records only.)
    if (kind === 'indexeddb') test('a compacted history whose record an earlier version wrote (no summaryHead kept) still shows its summary in a window of turns', async () => {
      const r = await page.evaluate(async (id) => {
        const summary = { role: 'system', content: 'the summary so far', 'agent-sessions.summary': true };
        const turn = (n) => [{ role: 'user', content: `q${n}` }, { role: 'assistant', content: `a${n}` }];
        /** Session `id` compacted without archiving by a version that kept no summaryHead (nor
         * the field); `lose`: the position of a row lost too (for a repair). */
        const old = async (id, lose) => {
          const s = new lib.IndexedDbSession(id);
          await s.addItems([...turn(1), ...turn(2), ...turn(3)]);
          await s.replaceHistory([summary, ...turn(2), ...turn(3)], { archive: false });
          await new Promise((ok, fail) => {
            const open = indexedDB.open('agent-sessions');
            open.onsuccess = () => {
              const tx = open.result.transaction(['agent_sessions', 'agent_messages'], 'readwrite');
              const store = tx.objectStore('agent_sessions');
              store.get(id).onsuccess = (e) => {
                const record = e.target.result;
                delete record.summaryHead;
                store.put(record);
                if (lose !== undefined) tx.objectStore('agent_messages').delete([id, record.firstSeq + lose]);
              };
              tx.oncomplete = () => (open.result.close(), ok());
              tx.onerror = () => fail(tx.error);
            };
          });
        };
        await old(id);
        const fresh = new lib.IndexedDbSession(id);
        const window = await fresh.getRecentTurns(1);
        await fresh.addItems(turn(4));
        const after = await new lib.IndexedDbSession(id).getRecentTurns(1);
        // Repaired (a row of its second turn lost): the rebuilt record keeps looking.
        await old(`${id}-repaired`, 2);
        const report = await lib.repairSession(`${id}-repaired`);
        return { window, after, repaired: [report.renumberedRows, await new lib.IndexedDbSession(`${id}-repaired`).getRecentTurns(1)] };
      }, fresh('old-record-summary'));
      assert.deepEqual(texts(r.window), ['the summary so far', 'q3', 'a3']);
      assert.deepEqual(texts(r.after), ['the summary so far', 'q4', 'a4'], 'and after this version writes the record');
      assert.ok(r.repaired[0] > 0, 'the repair rebuilt the record');
      assert.deepEqual(texts(r.repaired[1]), ['the summary so far', 'q3', 'a3'], 'and after a repair');
    });

    test('a branch that was given its own copy of a compacted head keeps its summary in a window of turns', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const summary = { role: 'system', content: 'the summary so far', 'agent-sessions.summary': true };
          const turn = (n, tag = '') => [{ role: 'user', content: `q${n}${tag}` }, { role: 'assistant', content: `a${n}${tag}` }];
          const window = async (s) => [await s.getRecentTurns(1), (await s.getRecentTurns(99)).filter((i) => i.content === summary.content).length];
          // An edit of a compacted main, then main gives up its rows: compacted again, or cleared.
          const edited = async (name, after) => {
            const s = make(kind, `${id}-${name}`);
            await s.addItems([...turn(1), ...turn(2), ...turn(3)]);
            await s.replaceHistory([summary, ...turn(2), ...turn(3)]);
            await s.createBranchFromTurn(2, 'edit');
            await s.addItems(turn(3, ' edited'));
            await s.switchBranch('main');
            await after(s);
            await s.switchBranch('edit');
            return window(s);
          };
          const again = await edited('again', (s) => s.replaceHistory([{ ...summary, content: 'a second summary' }, ...turn(3)]));
          const cleared = await edited('cleared', (s) => s.clearSession());
          // A branch made from a compacted branch that is then deleted.
          const m = make(kind, `${id}-middle`);
          await m.addItems([...turn(1), ...turn(2)]);
          await m.createBranchFromTurn(2, 'mid');
          await m.addItems([...turn(2, ' m'), ...turn(3, ' m')]);
          await m.replaceHistory([summary, ...turn(3, ' m')]);
          await m.addItems(turn(4, ' m'));
          await m.createBranchFromTurn(2, 'leaf');
          await m.addItems(turn(4, ' leaf'));
          await m.switchBranch('main');
          await m.deleteBranch('mid');
          await m.switchBranch('leaf');
          const middle = await window(m);
          // Branches of branches, deeper than a view may span: the deepest starts with its own copy.
          const d = make(kind, `${id}-deep`);
          await d.addItems(turn(1));
          await d.replaceHistory([summary, ...turn(1)]);
          for (let i = 1; i <= 18; i++) {
            await d.createBranchFromTurn(i, `b${i}`);
            await d.addItems([...turn(i, ` b${i}`), ...turn(i + 1, ` b${i}`)]);
          }
          return { again, cleared, middle, deep: await window(d) };
        },
        { kind, id: fresh('copied-summary-head') },
      );
      assert.deepEqual(texts(r.again[0]), ['the summary so far', 'q3 edited', 'a3 edited'], 'main compacted again');
      assert.deepEqual(texts(r.cleared[0]), ['the summary so far', 'q3 edited', 'a3 edited'], 'main cleared');
      assert.deepEqual(texts(r.middle[0]), ['the summary so far', 'q4 leaf', 'a4 leaf'], 'the branch it continued deleted');
      assert.deepEqual(texts(r.deep[0]), ['the summary so far', 'q19 b18', 'a19 b18'], '18 branches deep');
      for (const c of ['again', 'cleared', 'middle', 'deep']) assert.equal(r[c][1], 1, `${c}: once, when every turn is read`);
    });

    test('metadata: a default title from the first user message, update() of title, summary, topics and state, listed without reading a message', async () => {
      const id = fresh('meta');
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id, kind === 'indexeddb' ? { userId: 'ann' } : undefined);
          const empty = await s.getInfo();
          const long = 'Could you please help me plan a trip to the mountains next summer with my two kids and a dog';
          await s.addItems([{ role: 'system', content: 'sys' }, { role: 'user', content: long }]);
          const titled = await s.getInfo();
          await s.addItems([{ role: 'assistant', content: 'Sure.' }, { role: 'user', content: 'second question' }]);
          const before = await s.getInfo();
          const state = { budget: 1200, places: ['Alps'], when: new Date(0) };
          await s.update({ title: 'Mountain trip', summary: 'Planning a summer trip', topics: ['travel', 'kids'], state });
          state.budget = 0; // the stored state is a copy
          const after = await s.getInfo();
          await s.update({ summary: null });
          // A field given as undefined is left as it is (a form with no title in it).
          await s.update({ title: undefined, summary: undefined, topics: undefined, state: undefined });
          const cleared = await s.getInfo();
          const listed = kind === 'indexeddb' ? (await lib.listSessions({ userId: 'ann' })).find((i) => i.sessionId === id) : null;
          // A title cleared stays cleared: a later user message does not name the session.
          await s.update({ title: null });
          await s.addItems([{ role: 'user', content: 'third question' }]);
          const untitled = (await s.getInfo()).title;
          // The first user message names it, whichever write brings it; a history transaction
          // that adds a later one to an untitled session does not.
          const late = make(kind, `${id}-late`);
          await late.addItems([{ role: 'system', content: 'sys' }]);
          await late.addItems([{ role: 'user', content: 'first words' }, { role: 'assistant', content: 'reply' }]);
          const lateTitle = (await late.getInfo()).title;
          await late.update({ title: null });
          const [last] = await late.getItems(1);
          await late.applyHistoryTransaction({ operationId: 'later', transaction: { type: 'replace_suffix', expectedSuffix: [last], replacement: [last, { role: 'user', content: 'later words' }] } });
          const afterTransaction = (await late.getInfo()).title;
          // Named before its first message: the session exists from then on.
          const named = make(kind, `${id}-named`);
          await named.update({ title: 'Named first' });
          const namedFirst = await named.getInfo();
          return { empty, titled, before, after, cleared, listed, untitled, lateTitle, afterTransaction, namedFirst };
        },
        { kind, id },
      );
      assert.equal(r.empty.title, null);
      assert.equal(r.empty.createdAt, null);
      assert.deepEqual([r.namedFirst.title, r.namedFirst.itemCount, typeof r.namedFirst.createdAt, typeof r.namedFirst.updatedAt], ['Named first', 0, 'number', 'number']);
      assert.equal(r.empty.itemCount, 0);
      assert.equal(r.titled.title, 'Could you please help me plan a trip to the mountains next summer with my two…');
      assert.ok(r.titled.title.length <= 80);
      assert.equal(r.before.title, r.titled.title, 'the default title is set once');
      assert.equal(r.before.turnCount, 2);
      assert.equal(r.before.itemCount, 4);
      assert.equal(r.after.title, 'Mountain trip');
      assert.equal(r.after.summary, 'Planning a summer trip');
      assert.deepEqual(r.after.topics, ['travel', 'kids']);
      assert.equal(r.after.state.budget, 1200);
      assert.deepEqual(r.after.state.places, ['Alps']);
      assert.equal(r.after.updatedAt, r.before.updatedAt, 'metadata is not history: updatedAt stays');
      assert.equal(r.cleared.summary, null);
      assert.equal(r.cleared.title, 'Mountain trip');
      assert.equal(r.untitled, null, 'a cleared title stays cleared');
      assert.equal(r.lateTitle, 'first words');
      assert.equal(r.afterTransaction, null, 'a later user message gives no title');
      if (kind === 'indexeddb') {
        assert.deepEqual(
          { title: r.listed.title, summary: r.listed.summary, turnCount: r.listed.turnCount, itemCount: r.listed.itemCount },
          { title: 'Mountain trip', summary: null, turnCount: 2, itemCount: 4 },
        );
      }
    });

    test('getInfo().rewrites: appends (a run saving again included) leave it, every write that removes or replaces an item counts', async () => {
      const id = fresh('rewrites');
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          const seen = [];
          const note = async (what) => seen.push([what, (await s.getInfo()).rewrites]);
          const q = { role: 'user', content: 'q' };
          const a = { role: 'assistant', content: 'a' };
          const call = { type: 'function_call', callId: 'c1', name: 'f', arguments: '{}' };
          await note('new');
          await s.addItems([q, call]);
          await note('add');
          // A run saving again: the suffix it saved, unchanged, then more.
          const out = { type: 'function_call_result', callId: 'c1', output: 'ok' };
          await s.applyHistoryTransaction({ operationId: 'save-2', transaction: { type: 'replace_suffix', expectedSuffix: [call], replacement: [call, out, a] } });
          await note('resave');
          await s.applyHistoryTransaction({ operationId: 'append', transaction: { type: 'append_items', items: [q] } });
          await note('append transaction');
          await s.update({ title: 't', state: { x: 1 } });
          await note('update');
          const refused = await s.applyHistoryTransaction({ operationId: 'stale', transaction: { type: 'replace_suffix', expectedSuffix: [a], replacement: [] } }).catch((e) => e.code);
          await note('refused');
          await s.applyHistoryTransaction({ operationId: 'edit', transaction: { type: 'replace_suffix', expectedSuffix: [q], replacement: [{ role: 'user', content: 'q, edited' }] } });
          await note('replace');
          await s.popItem();
          await note('pop');
          await s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'c1', replacement: { ...call, arguments: '{"x":1}' } }] });
          await note('mutation');
          await s.replaceHistory([q, a]);
          await note('replaceHistory');
          await s.clearSession();
          await note('clear');
          await s.popItem();
          await note('pop of nothing');
          if (kind === 'indexeddb') {
            // Branches: the count is the session's; creating or switching one changes no item.
            await s.addItems([q, a, { ...q, content: 'q2' }, a]);
            await s.createBranchFromTurn(2, 'retry');
            await note('branch created');
            await s.addItems([{ ...q, content: 'q2, again' }]);
            await s.popItem();
            await note('pop on the branch');
            await s.switchBranch('main');
            await note('switched');
            await s.deleteBranch('retry');
            await note('branch deleted');
          }
          return { seen, refused };
        },
        { kind, id },
      );
      assert.equal(r.refused, 'SUFFIX_MISMATCH');
      assert.deepEqual(r.seen, [
        ['new', 0],
        ['add', 0],
        ['resave', 0],
        ['append transaction', 0],
        ['update', 0],
        ['refused', 0],
        ['replace', 1],
        ['pop', 2],
        ['mutation', 3],
        ['replaceHistory', 4],
        ['clear', 5],
        ['pop of nothing', 5],
        ...(kind === 'indexeddb' ? [['branch created', 5], ['pop on the branch', 6], ['switched', 6], ['branch deleted', 7]] : []),
      ]);
      if (kind === 'indexeddb') {
        await reload(page);
        assert.equal(await page.evaluate((id) => new lib.IndexedDbSession(id).getInfo().then((i) => i.rewrites), id), 7, 'kept in the session record');
      }
    });

    test('bad turns, titles, states and changes are refused, and nothing is written', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          await s.addItems([{ role: 'user', content: 'hello' }]);
          const tryNew = (settings) => {
            try {
              make(kind, id, { settings });
              return { ok: true };
            } catch (e) {
              return { code: e.code, message: e.message };
            }
          };
          const out = {
            settingsTurns: tryNew({ turns: 1.5 }),
            settingsTurnsString: tryNew({ turns: '2' }),
            recentTurns: await attempt(() => s.getRecentTurns(NaN)),
            recentNothing: await attempt(() => s.getRecentTurns()),
            titleNumber: await attempt(() => s.update({ title: 5 })),
            titleLong: await attempt(() => s.update({ title: 'x'.repeat(1001) })),
            stateFunction: await attempt(() => s.update({ state: { run() {} } })),
            stateString: await attempt(() => s.update({ state: 'on' })),
            // Objects JSON writes as no object: a run would send a string, and a backup would
            // hold one no restore takes as a state.
            stateDate: await attempt(() => s.update({ state: new Date() })),
            stateBoxed: await attempt(() => s.update({ state: new String('on') })),
            // Stored by the structured clone, but no run could send them to the model as JSON.
            stateBigInt: await attempt(() => s.update({ state: { visits: 1n } })),
            stateCycle: await attempt(() => {
              const state = { name: 'loop' };
              state.self = state;
              return s.update({ state });
            }),
            unknown: await attempt(() => s.update({ titel: 'typo' })),
            notObject: await attempt(() => s.update('title')),
            topics: await attempt(() => s.update({ topics: ['a', 1] })),
            mixed: await attempt(() => s.update({ summary: 'kept?', state: Symbol('x') })),
          };
          return { out, info: await s.getInfo() };
        },
        { kind, id: fresh('bad') },
      );
      const expect = {
        settingsTurns: 'INVALID_LIMIT',
        settingsTurnsString: 'INVALID_LIMIT',
        recentTurns: 'INVALID_LIMIT',
        recentNothing: 'INVALID_LIMIT',
        titleNumber: 'INVALID_TITLE',
        titleLong: 'INVALID_TITLE',
        stateFunction: 'INVALID_STATE',
        stateString: 'INVALID_STATE',
        stateDate: 'INVALID_STATE',
        stateBoxed: 'INVALID_STATE',
        stateBigInt: 'INVALID_STATE',
        stateCycle: 'INVALID_STATE',
        unknown: 'INVALID_OPTIONS',
        notObject: 'INVALID_OPTIONS',
        topics: 'INVALID_OPTIONS',
        mixed: 'INVALID_STATE',
      };
      for (const [name, code] of Object.entries(expect)) assert.equal(r.out[name].code, code, `${name}: ${r.out[name].message}`);
      assert.equal(r.info.title, 'hello');
      assert.equal(r.info.summary, null, 'a refused update writes none of its fields');
      assert.equal(r.info.state, null);
    });

    test('items written again keep their times: a run saving again and a compaction leave when each turn was asked, on main and on a branch', async () => {
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const pause = () => new Promise((ok) => setTimeout(ok, 20));
          const q = (content) => ({ role: 'user', content });
          const a = (content) => ({ role: 'assistant', content });
          /** Asks `text` in `s` as a run saves: the question, then the question and its answer. */
          const saves = [];
          const ask = async (s, text) => {
            await s.addItems([q(text)]);
            const at = (await s.getTurns()).at(-1).createdAt;
            await pause();
            await s.applyHistoryTransaction({ operationId: `save-${text}`, transaction: { type: 'replace_suffix', expectedSuffix: [q(text)], replacement: [q(text), a(`answer to ${text}`)] } });
            saves.push([at, (await s.getTurns()).at(-1).createdAt]);
            await pause();
          };
          const out = { saves };
          for (const branch of [false, true]) {
            const s = make(kind, `${id}-${branch}`);
            const times = async () => (await s.getTurns()).map((t) => t.createdAt);
            await ask(s, 'q1');
            await ask(s, 'q2');
            if (branch) {
              // A branch made from the second turn (it inherits the first), asked again there.
              await s.createBranchFromTurn(2);
              await ask(s, 'q2 again');
            }
            const asked = await times();
            const last = branch ? 'q2 again' : 'q2';
            // Compacted: a summary in place of the first turn, the newest kept.
            await s.replaceHistoryWithCompaction([a('summary of q1'), q(last), a(`answer to ${last}`)]);
            const compacted = await times();
            out[branch ? 'branch' : 'main'] = { asked, compacted, items: (await s.getItems()).length, archived: (await s.getArchivedItems()).length };
            if (branch) {
              // Back on main, which has a branch now: a save there keeps its question's time too.
              await s.switchBranch('main');
              await ask(s, 'q3');
            }
          }
          return out;
        },
        { kind, id: fresh('times') },
      );
      assert.equal(r.saves.length, 6);
      for (const [asked, saved] of r.saves) assert.equal(saved, asked, 'a run saving the answer leaves when its question was asked');
      for (const where of ['main', 'branch']) {
        const { asked, compacted } = r[where];
        assert.equal(asked.length, 2, where);
        assert.ok(asked[0] < asked[1], `${where}: each turn has the time it was asked (${asked})`);
        assert.deepEqual(compacted, [asked[1]], `${where}: the turn a compaction keeps keeps its time`);
        assert.equal(r[where].items, 3);
        assert.equal(r[where].archived, 2, `${where}: the first turn archived, the kept one not`);
      }
    });

    test('a turn popped away takes its usage with it: the turn that takes its number has its own only, on main and on a branch', async () => {
      const id = fresh('popped-usage');
      const r = await page.evaluate(
        async ({ kind, id }) => {
          const s = make(kind, id);
          const used = (inputTokens) => ({ requests: 1, inputTokens, outputTokens: 1, totalTokens: inputTokens + 1 });
          const turn = async (n, text, tokens) => {
            await s.addItems([{ role: 'user', content: `q${n} ${text}` }, { role: 'assistant', content: `a${n} ${text}` }]);
            await s.storeRunUsage(used(tokens));
          };
          await turn(1, 'first', 5);
          await turn(2, 'first', 10);
          // Undo the last exchange, and ask again.
          await s.popItem();
          const afterAnswer = (await s.getTurnUsage()).map((u) => [u.turn, u.inputTokens]);
          await s.popItem();
          const afterQuestion = (await s.getTurnUsage()).map((u) => [u.turn, u.inputTokens]);
          await turn(2, 'again', 7);
          const main = { turn2: (await s.getTurnUsage(2)).inputTokens, session: (await s.getSessionUsage()).inputTokens };
          // The same on a branch.
          await s.createBranchFromTurn(2, 'other');
          await turn(2, 'on the branch', 3);
          await s.popItem();
          await s.popItem();
          await turn(2, 'on the branch again', 4);
          const branch = { turn2: (await s.getTurnUsage(2)).inputTokens, main: (await s.getSessionUsage({ branch: 'main' })).inputTokens };
          // A turn a branch made from this one still shows keeps its usage when popped here: it
          // goes to that branch, and main's next turn 2 has its own only.
          await s.switchBranch('main');
          await turn(3, 'third', 20);
          await s.createBranchFromTurn(3, 'keep');
          await s.switchBranch('main');
          for (let i = 0; i < 4; i++) await s.popItem();
          const shown = (await s.getTurnUsage()).map((u) => [u.turn, u.inputTokens]);
          const session = (await s.getSessionUsage()).inputTokens;
          await turn(2, 'once more', 1);
          const mainTurn2 = (await s.getTurnUsage(2)).inputTokens;
          await s.switchBranch('keep');
          const kept = (await s.getTurnUsage()).map((u) => [u.turn, u.inputTokens]);
          return { afterAnswer, afterQuestion, main, branch, shown, session, mainTurn2, kept };
        },
        { kind, id },
      );
      assert.deepEqual(r.afterAnswer, [[1, 5], [2, 10]], 'the turn is still there while its question is');
      assert.deepEqual(r.afterQuestion, [[1, 5]]);
      assert.deepEqual(r.main, { turn2: 7, session: 12 });
      assert.deepEqual(r.branch, { turn2: 4, main: 12 });
      assert.deepEqual(r.shown, [[1, 5]], 'turn 3 went; turn 2, which the branch shows, went to it');
      assert.equal(r.session, 5 + 7 + 4, 'the session counts turn 2 once, turn 3 no more');
      assert.equal(r.mainTurn2, 1, 'main’s next turn 2 has its own usage only');
      assert.deepEqual(r.kept, [[2, 7]]);
    });
  });
}

test('indexeddb: the metadata survives a reload', async () => {
  const { page } = await openHarness(env);
  const id = fresh('reload');
  await page.evaluate(async (id) => {
    const s = new lib.IndexedDbSession(id);
    await s.addItems([{ role: 'user', content: 'plan my week' }]);
    await s.update({ summary: 'weekly plan', state: { day: 'monday' }, topics: ['plans'] });
  }, id);
  await reload(page);
  const info = await page.evaluate((id) => new lib.IndexedDbSession(id).getInfo(), id);
  assert.equal(info.title, 'plan my week');
  assert.equal(info.summary, 'weekly plan');
  assert.deepEqual(info.state, { day: 'monday' });
  assert.deepEqual(info.topics, ['plans']);
  assert.equal(info.turnCount, 1);
});
