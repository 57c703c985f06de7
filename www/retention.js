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
    const openGoes = old.some((c) => c.sessionId === state.sessionId);
    if (openGoes) await closeChat();
    const deleted = await applyRetention({ dbName: DB_NAME, userId: user, maxAgeDays: days, now });
    if (openGoes) {
      const [next] = await listChats();
      await openChat(next ? next.sessionId : newChatId(), null, next?.currentBranch ?? 'main');
    }
    for (const chat of deleted) dropDraft(chat.sessionId);
    setStatus(`Deleted ${plural(deleted.length, 'chat')}.`);
  });
}
