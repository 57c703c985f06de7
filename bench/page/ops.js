// The benchmark's operations. Each one runs in the page against one implementation (the harness
// `h` gives it `impl`, an instance for USER, and `instance(userId)` for more), times only its
// measured part, and returns a result that must equal `expected(sizes, rep)` for every
// implementation. Node imports this module too, for the labels and the expected results. An
// operation with `requires` (a capability of impls/list.mjs) runs only against the
// implementations that have it; the others show "—" in the table. One with `reference` also
// times, in each run, what it is compared with (returned as `reference`, in ms), shown on a line
// of its own under it.
import { describeItems, hash, makeItems, makeTurnItems, recentTurnsStart, turnCount } from '../shared/items.js';

export const USER = 'user-a';
export const OTHER_USER = 'user-b';

const fmt = (n) => n.toLocaleString('en-US');

/** Times `fn` alone: garbage left by the set-up is collected first (when the page may). */
async function timed(fn) {
  globalThis.gc?.();
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

/** Times `calls` awaited calls of `fn` in a row, each the same read, and gives the time of one
 * (their mean) and the last one's value. A read of a few rows takes a millisecond or two, close
 * to what one garbage collection or one timer tick moves a single sample by; a run of calls per
 * sample keeps the median about the read. */
async function timedCalls(fn, calls) {
  const { ms, value } = await timed(async () => {
    let value;
    for (let i = 0; i < calls; i++) value = await fn();
    return value;
  });
  return { ms: ms / calls, value };
}

/** Set-up: `total` items (of `make`, makeItems by default) in calls of at most 10,000, as an
 * application importing history would. */
async function fill(impl, sessionId, total, make = makeItems) {
  for (let from = 0; from < total; from += 10_000) {
    await impl.addItems(sessionId, make(sessionId, from, Math.min(10_000, total - from)));
  }
}

/** What a sessions list is compared by: the ids (as a set), counts, owners and order. */
function describeList(list) {
  const ids = list.map((s) => s.sessionId).sort();
  return {
    count: list.length,
    ids: hash(ids.join('\n')).toString(16),
    itemCounts: [...new Set(list.map((s) => s.itemCount))].sort((a, b) => a - b),
    users: [...new Set(list.map((s) => s.userId))].sort(),
    newestFirst: list.every((s, i) => i === 0 || list[i - 1].updatedAt >= s.updatedAt),
  };
}

/**
 * The 2 newest items of an `n`-item session after `k` replace_suffix calls: its own items for
 * `k = 0`, then a new pair per call, at the same positions (a user message and its answer) but
 * with other ids and text, so every call really rewrites.
 */
const tailAfter = (sessionId, n, k) => makeItems(k === 0 ? sessionId : `${sessionId}/rewrite-${k}`, n - 2, 2);

const newestOf = (index) => ({
  key: `getItems-newest-${index + 1}`,
  kind: 'light',
  label: (s) => `getItems(${s.limit}) of ${fmt(s.histories[index])} items`,
  sessionId: (s) => `history-${s.histories[index]}`,
  async prepare(h) {
    await fill(h.impl, this.sessionId(h.sizes), h.sizes.histories[index]);
  },
  async run(h) {
    const { ms, value } = await timedCalls(() => h.impl.getItems(this.sessionId(h.sizes), h.sizes.limit), h.sizes.reads);
    return { ms, result: describeItems(value) };
  },
  expected(s) {
    const n = s.histories[index];
    return describeItems(makeItems(this.sessionId(s), n - Math.min(s.limit, n), Math.min(s.limit, n)));
  },
});

/**
 * The newest `s.recentTurns` turns of a turn-shaped history (makeTurnItems: turns of 2, 4 and 3
 * items, the newest one cut short) of `s.histories[index]` items. The expected items are found
 * by walking back over the history's own items to the user messages that open its turns.
 */
const recentTurnsOf = (index, size) => ({
  key: `getRecentTurns-${size}`,
  kind: 'light',
  requires: 'recentTurns',
  label: (s) => `getRecentTurns(${s.recentTurns}) of ${fmt(s.histories[index])} items`,
  sessionId: (s) => `turns-history-${s.histories[index]}`,
  async prepare(h) {
    await fill(h.impl, this.sessionId(h.sizes), h.sizes.histories[index], makeTurnItems);
  },
  async run(h) {
    const { ms, value } = await timedCalls(() => h.impl.getRecentTurns(this.sessionId(h.sizes), h.sizes.recentTurns), h.sizes.reads);
    return { ms, result: describeItems(value) };
  },
  expected(s) {
    const [sessionId, n] = [this.sessionId(s), s.histories[index]];
    const from = recentTurnsStart(sessionId, n, s.recentTurns);
    return describeItems(makeTurnItems(sessionId, from, n - from));
  },
});

/**
 * Where the branches of the benchmark start in a turn-shaped history of `n` items of `sessionId`:
 * at its newest turn (asking the latest question again), numbered from 1, and the position of
 * that turn's user message. The branch shows the items before it.
 */
function newestTurn(sessionId, n) {
  return { turn: turnCount(sessionId, n), start: recentTurnsStart(sessionId, n, 1) };
}

/** The newest `limit` items of the first `count` turn-shaped items of `sessionId`. */
const newestTurnItems = (sessionId, count, limit) =>
  makeTurnItems(sessionId, count - Math.min(limit, count), Math.min(limit, count));

/**
 * createBranchFromTurn on a turn-shaped history of `s.histories[index]` items: each repeat
 * creates a new branch (its own name) of the main branch from the newest turn. Creating one
 * copies nothing, so its cost must not grow with the history. Checked, untimed: the branch's
 * newest `s.limit` items are those before that turn, and the main branch is left as it was.
 */
const createBranchOf = (index, size) => ({
  key: `createBranch-${size}`,
  kind: 'light',
  requires: 'branches',
  label: (s) => `createBranchFromTurn on a history of ${fmt(s.histories[index])} items`,
  sessionId: (s) => `branched-${s.histories[index]}`,
  branch: (rep) => `retry-${rep}`,
  async prepare(h) {
    await fill(h.impl, this.sessionId(h.sizes), h.sizes.histories[index], makeTurnItems);
  },
  async run(h, rep) {
    const [sessionId, n] = [this.sessionId(h.sizes), h.sizes.histories[index]];
    const { turn } = newestTurn(sessionId, n);
    const { ms, value } = await timed(() => h.impl.createBranchFromTurn(sessionId, turn, this.branch(rep)));
    return {
      ms,
      result: {
        id: value,
        branch: describeItems(await h.impl.getBranchItems(sessionId, this.branch(rep), h.sizes.limit)),
        main: describeItems(await h.impl.getItems(sessionId, h.sizes.limit)),
      },
    };
  },
  expected(s, rep) {
    const [sessionId, n] = [this.sessionId(s), s.histories[index]];
    const { start } = newestTurn(sessionId, n);
    return {
      id: this.branch(rep),
      branch: describeItems(newestTurnItems(sessionId, start, s.limit)),
      main: describeItems(newestTurnItems(sessionId, n, s.limit)),
    };
  },
});

/**
 * getItems(s.limit) on a branch of a turn-shaped history of `s.histories[index]` items, created
 * in the set-up from the newest turn, with `s.branchItems` items of its own (the turn asked
 * again: a user message, then what follows it, of another session tag, at the same positions).
 * There are fewer of them than `s.limit`, so the newest items span the part the branch shares
 * with the main branch and its own. Reading them must not grow with the history either.
 */
const branchNewestOf = (index, size) => ({
  key: `getBranchItems-${size}`,
  kind: 'light',
  requires: 'branches',
  label: (s) => `getItems(${s.limit}) on a branch of a ${fmt(s.histories[index])}-item history`,
  sessionId: (s) => `branch-read-${s.histories[index]}`,
  branch: 'retry',
  ownTag: (sessionId) => `${sessionId}/retry`,
  async prepare(h) {
    const [sessionId, n] = [this.sessionId(h.sizes), h.sizes.histories[index]];
    await fill(h.impl, sessionId, n, makeTurnItems);
    const { turn, start } = newestTurn(sessionId, n);
    await h.impl.createBranchFromTurn(sessionId, turn, this.branch);
    await h.impl.addBranchItems(sessionId, this.branch, makeTurnItems(this.ownTag(sessionId), start, h.sizes.branchItems));
  },
  async run(h) {
    const sessionId = this.sessionId(h.sizes);
    const { ms, value } = await timedCalls(() => h.impl.getBranchItems(sessionId, this.branch, h.sizes.limit), h.sizes.reads);
    return { ms, result: describeItems(value) };
  },
  expected(s) {
    const [sessionId, n] = [this.sessionId(s), s.histories[index]];
    const { start } = newestTurn(sessionId, n);
    const own = makeTurnItems(this.ownTag(sessionId), start, s.branchItems).slice(-s.limit);
    return describeItems([...newestTurnItems(sessionId, start, s.limit - own.length), ...own]);
  },
});

export const OPERATIONS = [
  {
    key: 'append-turns',
    kind: 'heavy',
    label: (s) => `append 1 turn (2 items) ×${fmt(s.turns)}, each awaited`,
    async run(h, rep) {
      const sessionId = `turns-${rep}`;
      const items = makeItems(sessionId, 0, 2 * h.sizes.turns);
      const { ms } = await timed(async () => {
        for (let i = 0; i < items.length; i += 2) {
          await h.impl.addItems(sessionId, [items[i], items[i + 1]]);
        }
      });
      return { ms, result: describeItems(await h.impl.getItems(sessionId)) };
    },
    expected: (s, rep) => describeItems(makeItems(`turns-${rep}`, 0, 2 * s.turns)),
  },
  {
    key: 'add-bulk',
    kind: 'heavy',
    label: (s) => `addItems of ${fmt(s.bulk)} items in one call`,
    async run(h, rep) {
      const sessionId = `bulk-${rep}`;
      const items = makeItems(sessionId, 0, h.sizes.bulk);
      const { ms } = await timed(() => h.impl.addItems(sessionId, items));
      return { ms, result: describeItems(await h.impl.getItems(sessionId)) };
    },
    expected: (s, rep) => describeItems(makeItems(`bulk-${rep}`, 0, s.bulk)),
  },
  ...[0, 1, 2].map(newestOf),
  recentTurnsOf(0, 'small'),
  recentTurnsOf(2, 'large'),
  createBranchOf(0, 'small'),
  createBranchOf(2, 'large'),
  branchNewestOf(0, 'small'),
  branchNewestOf(2, 'large'),
  {
    key: 'getItems-all',
    kind: 'light',
    label: (s) => `getItems() of ${fmt(s.all)} items`,
    async prepare(h) {
      await fill(h.impl, 'all', h.sizes.all);
    },
    async run(h) {
      const { ms, value } = await timed(() => h.impl.getItems('all'));
      return { ms, result: describeItems(value) };
    },
    expected: (s) => describeItems(makeItems('all', 0, s.all)),
  },
  {
    key: 'pop',
    kind: 'heavy',
    label: (s) => `popItem() ×${fmt(s.pops)} from ${fmt(s.popFrom)} items, each awaited`,
    async run(h, rep) {
      const sessionId = `pop-${rep}`;
      await fill(h.impl, sessionId, h.sizes.popFrom);
      const popped = [];
      const { ms } = await timed(async () => {
        for (let i = 0; i < h.sizes.pops; i++) popped.push(await h.impl.popItem(sessionId));
      });
      const left = await h.impl.getItems(sessionId);
      return {
        ms,
        result: { popped: describeItems(popped), left: left.length, newest: describeItems(left.slice(-3)) },
      };
    },
    expected(s, rep) {
      const sessionId = `pop-${rep}`;
      const left = s.popFrom - s.pops;
      return {
        popped: describeItems(makeItems(sessionId, left, s.pops).reverse()),
        left,
        newest: describeItems(makeItems(sessionId, Math.max(0, left - 3), Math.min(3, left))),
      };
    },
  },
  {
    key: 'replace-suffix',
    kind: 'heavy',
    requires: 'historyTransactions',
    label: (s) =>
      `replace_suffix of the newest 2 items ×${fmt(s.tailCalls)} on ${fmt(s.tailHistory)} items, each awaited`,
    // What it is compared with (evaluateTargets), timed in the same page and repeats, so that
    // both see the same machine: the storage engine's background work left by the operations
    // before would otherwise weigh on one and not the other.
    reference: (s) => `append 2 items ×${fmt(s.tailCalls)} on ${fmt(s.tailHistory)} items, each awaited`,
    async run(h, rep) {
      const { tailHistory: n, tailCalls: calls } = h.sizes;
      const [replaced, appended] = [`replace-${rep}`, `append-${rep}`];
      // Fresh histories each repeat: rewriting the same rows again and again leaves the storage
      // engine more to skip on every later call, so later repeats would be slower.
      await fill(h.impl, replaced, n);
      await fill(h.impl, appended, n);
      const tails = Array.from({ length: calls + 1 }, (_, k) => tailAfter(replaced, n, k));
      const items = makeItems(appended, n, 2 * calls);
      const replace = () =>
        timed(async () => {
          for (let k = 1; k < tails.length; k++) await h.impl.replaceSuffix(replaced, tails[k - 1], tails[k]);
        });
      const append = () =>
        timed(async () => {
          for (let i = 0; i < items.length; i += 2) await h.impl.addItems(appended, [items[i], items[i + 1]]);
        });
      // Each goes first every other repeat, so that neither always runs right after the set-up.
      let ms, reference;
      if (rep % 2 === 0) {
        ({ ms } = await replace());
        ({ ms: reference } = await append());
      } else {
        ({ ms: reference } = await append());
        ({ ms } = await replace());
      }
      return {
        ms,
        reference,
        result: {
          replaced: describeItems(await h.impl.getItems(replaced)),
          appended: describeItems(await h.impl.getItems(appended)),
        },
      };
    },
    expected(s, rep) {
      const [replaced, appended, n] = [`replace-${rep}`, `append-${rep}`, s.tailHistory];
      return {
        replaced: describeItems([...makeItems(replaced, 0, n - 2), ...tailAfter(replaced, n, s.tailCalls)]),
        appended: describeItems(makeItems(appended, 0, n + 2 * s.tailCalls)),
      };
    },
  },
  {
    key: 'clear',
    kind: 'heavy',
    label: (s) => `clearSession() of ${fmt(s.clear)} items, 3 other sessions kept`,
    // The cleared session sorts between the kept ones, so a key range that overshoots shows.
    names: (rep) => ({ target: `clear-${rep}-b`, kept: ['a', 'c', 'd'].map((x) => `clear-${rep}-${x}`) }),
    async run(h, rep) {
      const { target, kept } = this.names(rep);
      await fill(h.impl, kept[0], h.sizes.keep);
      await fill(h.impl, target, h.sizes.clear);
      await fill(h.impl, kept[1], h.sizes.keep);
      await fill(h.impl, kept[2], h.sizes.keep);
      const { ms } = await timed(() => h.impl.clearSession(target));
      const listed = (await h.impl.listSessions(USER))
        .filter((s) => s.sessionId.startsWith(`clear-${rep}-`))
        .map(({ sessionId, itemCount }) => ({ sessionId, itemCount }))
        .sort((a, b) => (a.sessionId < b.sessionId ? -1 : 1));
      const keptItems = [];
      for (const id of kept) keptItems.push(describeItems(await h.impl.getItems(id)));
      return { ms, result: { cleared: describeItems(await h.impl.getItems(target)), kept: keptItems, listed } };
    },
    expected(s, rep) {
      const { target, kept } = this.names(rep);
      return {
        cleared: describeItems([]),
        kept: kept.map((id) => describeItems(makeItems(id, 0, s.keep))),
        listed: [kept[0], target, ...kept.slice(1)].map((sessionId) => ({
          sessionId,
          itemCount: sessionId === target ? 0 : s.keep,
        })),
      };
    },
  },
  {
    key: 'list-sessions',
    kind: 'light',
    label: (s) => `listSessions of a user with ${fmt(s.sessions)} sessions`,
    async prepare(h) {
      // Another user's sessions share the store: the list must leave them out.
      const other = h.instance(OTHER_USER);
      for (let i = 0; i < h.sizes.sessions; i++) {
        await h.impl.addItems(`u-${i}`, makeItems(`u-${i}`, 0, 2));
        if (i % 10 === 0) await other.addItems(`v-${i}`, makeItems(`v-${i}`, 0, 2));
      }
    },
    async run(h) {
      const { ms, value } = await timedCalls(() => h.impl.listSessions(USER), h.sizes.reads);
      return { ms, result: describeList(value) };
    },
    expected: (s) =>
      describeList(
        Array.from({ length: s.sessions }, (_, i) => ({ sessionId: `u-${i}`, userId: USER, itemCount: 2, updatedAt: 0 })),
      ),
  },
  {
    key: 'cold-start',
    kind: 'cold',
    // The browser cache is off for this page: the code is downloaded and compiled, as on a
    // first visit.
    cache: false,
    label: (s) => `cold start: import, open, getItems(${s.limit}) of ${fmt(s.cold)}`,
    // Node opens a fresh page per repeat (cold.html); the data is set up here.
    async prepare(h) {
      await fill(h.impl, 'cold', h.sizes.cold);
      return { dbName: h.dbName, userId: USER, sessionId: 'cold', n: h.sizes.limit };
    },
    expected: (s) => describeItems(makeItems('cold', s.cold - Math.min(s.limit, s.cold), Math.min(s.limit, s.cold))),
  },
  {
    key: 'warm-start',
    kind: 'cold',
    // The code comes from the browser cache (the page was loaded before), as on a reload or a
    // later visit.
    cache: true,
    label: (s) => `warm start (code cached): import, open, getItems(${s.limit}) of ${fmt(s.cold)}`,
    async prepare(h) {
      await fill(h.impl, 'cold', h.sizes.cold);
      return { dbName: h.dbName, userId: USER, sessionId: 'cold', n: h.sizes.limit };
    },
    expected: (s) => describeItems(makeItems('cold', s.cold - Math.min(s.limit, s.cold), Math.min(s.limit, s.cold))),
  },
];

export function findOperation(key) {
  const op = OPERATIONS.find((o) => o.key === key);
  if (!op) throw new Error(`unknown operation "${key}"`);
  return op;
}
