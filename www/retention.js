// "Delete chats not used for more than N days": the library's `applyRetention` over the current
// user's chats. It reads session records only (when each chat last changed), so it works on
// locked chats too, unlocked or not. The page counts first, by the same rule, and asks before
// anything goes; both use one clock reading, so what is asked about is what goes.
import { applyRetention } from './lib.js';
import { DB_NAME, state } from './state.js';
import { closeChat, dropDraft, listChats, newChatId, openChat } from './chats.js';
import { busy } from './busy.js';
import { settleChats } from './actions.js';
import { setStatus } from './view.js';

const DAY = 86_400_000;

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Deletes the current user's chats unchanged for more than `days` days, once the user confirms;
 * the open chat, if it goes, makes way for the newest one left (or a new one). */
export function deleteOldChats(days) {
  if (state.busy) return;
  return busy(async () => {
    if (!(Number.isInteger(days) && days >= 0)) throw new Error('Say how many days: a whole number, 0 or more.');
    const user = state.user;
    const now = Date.now();
    const old = (await listChats()).filter((c) => now - c.updatedAt > days * DAY);
    const age = days === 1 ? 'a day' : `${days} days`;
    if (old.length === 0) {
      setStatus(`No chat of ${user}'s is older than ${age}.`);
      return;
    }
    if (!confirm(`Delete ${plural(old.length, 'chat')} of ${user}'s not used for more than ${age}? ${old.length === 1 ? 'It is' : 'They are'} removed from this browser.`)) {
      setStatus('No chat was deleted.');
      return;
    }
    // A summary written after its chat is deleted would bring the chat back.
    await settleChats();
    const open = state.sessionId;
    const openGoes = old.some((c) => c.sessionId === open);
    if (openGoes) await closeChat();
    let deleted;
    try {
      deleted = await applyRetention({ dbName: DB_NAME, userId: user, maxAgeDays: days, now });
    } catch (e) {
      // Failed part way: what went before it is gone all the same, the open chat perhaps, which
      // makes way here as below (not taken later for a chat deleted in another tab).
      const gone = Array.isArray(e?.deleted) ? e.deleted : [];
      await makeWay(openGoes, open, gone).catch(() => {});
      if (gone.length) setStatus(`Deleted ${plural(gone.length, 'chat')} before it failed.`);
      throw e;
    }
    await makeWay(openGoes, open, deleted);
    setStatus(`Deleted ${plural(deleted.length, 'chat')}.`);
  });
}

/** After `deleted` went: the open chat `open`, closed for it (`closed`), opens again where it is
 * left (written to meanwhile), else makes way for the newest chat left (or a new one). */
async function makeWay(closed, open, deleted) {
  try {
    if (!closed) return;
    const list = await listChats();
    const next = list.find((c) => c.sessionId === open) ?? list[0];
    await openChat(next ? next.sessionId : newChatId(), null, next?.currentBranch ?? 'main');
  } finally {
    // (After the chat left: what was typed in it is kept for it no more.)
    for (const chat of deleted) dropDraft(chat.sessionId);
  }
}
