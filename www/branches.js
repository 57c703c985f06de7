// Conversation branches: editing one of your messages makes a branch of the chat from that
// message's turn (the library's `createBranchFromTurn`), so the earlier answer is kept. This file
// reads the open chat's branches and works out, for each of your messages, the other versions of
// it that can be switched to: the `‹ k/n ›` switcher on a message.
//
// The rule: two branches are alternatives at turn t when they show the same turns before t and a
// different turn t. "The same turn" is the same stored user message (same text, same creation
// time) with as many items after it: a branch shares its parent's items before its turn, so those
// match exactly, while an edited message is a new item. Each different version of turn t is one
// alternative, the oldest first (the original, then the edits in the order they were made). A
// version that several branches show (a branch made at a later turn shows the earlier turns of
// the branch it was made from) is reached through the current branch when it is one of them,
// else through the one made last. A turn with a single version has no switcher.
//
// Turns are numbered as the library numbers them: from 1, each starting at a user message, so the
// turn of a rendered user message is its 1-based position among the user messages shown.

/** No branches but 'main': no switchers. */
export const NO_SWITCHERS = new Map();

/** The branches of `session` (`listBranches()`) and the switchers of its current branch: a Map
 * from turn to `{ index, count, prev, next }` (`index` is 1-based; `prev` and `next` are branch
 * ids, null at either end). Reads the turns of every branch only when there is more than one. */
export async function readBranches(session) {
  const branches = await session.listBranches();
  if (branches.length < 2) return { branches, switchers: NO_SWITCHERS };
  const turns = await Promise.all(branches.map((b) => session.getTurns({ branch: b.branchId })));
  const current = branches.findIndex((b) => b.current);
  return { branches, switchers: current < 0 ? NO_SWITCHERS : switchersOf(branches, turns, current) };
}

const version = (turn) => `${turn.createdAt}\u0000${turn.content}`;
const sameTurn = (a, b) => version(a) === version(b) && a.itemCount === b.itemCount;

/** The switchers of branch `branches[current]`, given every branch's `getTurns()` (same order). */
export function switchersOf(branches, turns, current) {
  const mine = turns[current];
  // How many leading turns each branch shares with the current one.
  const shared = turns.map((list) => {
    let n = 0;
    while (n < list.length && n < mine.length && sameTurn(list[n], mine[n])) n++;
    return n;
  });
  const switchers = new Map();
  mine.forEach((turn, i) => {
    // The versions of this turn among the branches that show the same turns before it.
    const versions = new Map();
    branches.forEach((b, j) => {
      if (shared[j] < i || turns[j].length <= i) return;
      const key = version(turns[j][i]);
      const v = versions.get(key) ?? { createdAt: turns[j][i].createdAt, order: j, via: [] };
      v.via.push(j);
      versions.set(key, v);
    });
    if (versions.size < 2) return;
    const ordered = [...versions.values()].sort((a, b) => a.createdAt - b.createdAt || a.order - b.order);
    // Which branch shows each version: the current one if it does, else the one made last.
    const ids = ordered.map((v) => branches[v.via.includes(current) ? current : v.via.at(-1)].branchId);
    const index = ordered.findIndex((v) => v.via.includes(current));
    switchers.set(turn.turn, {
      index: index + 1,
      count: ordered.length,
      prev: index > 0 ? ids[index - 1] : null,
      next: index < ids.length - 1 ? ids[index + 1] : null,
    });
  });
  return switchers;
}
