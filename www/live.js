// Other tabs: the page follows the current user's chats (`watchSessions`) and the open chat
// (`subscribe`), so a message sent, a chat made, renamed or deleted in another tab (or worker)
// shows here without a reload. The library tells every change of the database, this tab's own
// included; a change is followed by a re-read, never while an action, a reply or a reply's
// background work is in progress here (then once it is over).
//
// This tab's own writes need no re-read: the view was read after them. They are told apart
// without reading any chat: the chat list (`listSessions`, session records only) is read and
// compared with what the sidebar shows. When only other chats changed, the sidebar is shown
// again; when the open chat's entry changed too, the whole view is read again (as after an
// action). A change to the open chat that is another tab's for certain is read again even when
// the list looks the same (a change of its topics only, say): one published while this tab was
// idle (its event's `at` is after the tab last wrote), or one that is not an 'update' while this
// tab runs only a reply's background work (which writes the summary and title, nothing else).
import { watchSessions } from './lib.js';
import { DB_NAME, openVersion, state } from './state.js';
import { chatSignature, dropDraft, listChats, listSignature, newChatId, openChat, showList, subscribeChat } from './chats.js';
import { afterEach, isSyncing, refreshKeepingEdit, sync, whenIdle, whenSynced } from './busy.js';
import { backgroundQuiet, whenBackgroundQuiet } from './background.js';
import { el, setStatus, showError } from './view.js';
import { measureSoon } from './storage.js';

/** The user whose chats are watched, and how to stop. */
let watched = { user: null, stop: null };
/** The open chat followed (of which user), and how to stop. */
let followed = { id: null, user: null, stop: null };

/** Follows the current user's chats and the open chat: called once the view has been read, at
 * the end of every action (see the end of this file). Another user's chats, or another chat, are
 * followed from then on, and the ones left no more. */
export function follow() {
  if (watched.user !== state.user) {
    watched.stop?.();
    const stop = watchSessions({ dbName: DB_NAME, userId: state.user }, heard);
    watched = { user: state.user, stop };
    // A watch whose first read failed (the database out of reach) has ended: the next action's
    // end starts it again.
    stop.ready.catch(() => {
      if (watched.stop === stop) watched = { user: null, stop: null };
    });
  }
  // No chat is open while the database could not be opened, or after a user switch that failed:
  // there is none to follow (the other user's chat is followed no more).
  if (!state.sessionId && followed.stop) {
    followed.stop();
    followed = { id: null, user: null, stop: null };
  }
  if (state.sessionId && (followed.id !== state.sessionId || followed.user !== state.user)) {
    followed.stop?.();
    followed = { id: state.sessionId, user: state.user, stop: null };
    followed.stop = subscribeChat(state.sessionId, (event) => heard(event, true));
  }
}

/** Nothing in progress: no action, no reply, no background work left to show (what this tab
 * writes, it writes then), no re-read for another tab's change. */
const quiet = () => !state.busy && backgroundQuiet() && !isSyncing();

/** Whether the next re-read must read the open chat even if the chat list looks unchanged. */
let certain = false;
/** Whether a re-read is waiting for the tab to be quiet. */
let scheduled = false;

/** A change event (of the open chat when `open`, else from the sidebar's watch). */
function heard(event, open = false) {
  // Any change may change how much the chats take: measured again soon, whoever made it.
  measureSoon();
  // Published after this tab last wrote, and while it writes nothing: another tab's. While a
  // reply's background work runs here, what it writes is the chat's summary and title (an
  // 'update'): any other change is another tab's too.
  const later = typeof event?.at === 'number' && event.at > state.lastActive;
  if (open && later && !state.busy && (backgroundQuiet() || event.type !== 'update')) certain = true;
  schedule();
}

/** Re-reads the view once the tab is quiet (once for every change heard meanwhile). */
function schedule() {
  if (scheduled) return;
  scheduled = true;
  (async () => {
    while (!quiet()) {
      await whenIdle();
      await whenBackgroundQuiet();
      await whenSynced();
    }
    scheduled = false;
    await catchUp();
  })().catch((e) => {
    // The chats could not be read (a newer version of the page upgraded the storage in another
    // tab, say): the page says so, with what to do, as an action's error does; the next change
    // heard tries again.
    scheduled = false;
    showError(e);
  });
}

/** Reads the chat list; if it differs from what the sidebar shows, shows it, and reads the open
 * chat again too when its entry changed (or a change of it was certainly another tab's). */
async function catchUp() {
  const user = state.user;
  const wasCertain = certain;
  certain = false;
  const list = await listChats();
  if (!quiet() || user !== state.user) {
    // Something started meanwhile: it reads the view when it ends; look again after it.
    certain ||= wasCertain;
    schedule();
    return;
  }
  const open = list.find((c) => c.sessionId === state.sessionId);
  // The open chat gone (deleted in another tab) is read again whatever the sidebar shows: a
  // list redrawn meanwhile (after this tab's summary) may already lack it.
  const gone = !open && state.openListed;
  if (!wasCertain && !gone && listSignature(list) === state.listed.signature) return;
  if (!wasCertain && !gone && (open && chatSignature(open)) === state.listed.chats.get(state.sessionId)) {
    // Only other chats changed: the sidebar is all there is to show again.
    showList(list);
    return;
  }
  sync(async () => {
    const chat = openVersion();
    await reopenIfDeleted();
    await refreshKeepingEdit(chat);
  });
}

/** The open chat was deleted in another tab (a list shown here held it, the database has it no
 * more): the newest chat opens instead, or a new one. (Not only the list shown now: one redrawn
 * meanwhile, after this tab's summary, may already lack it.) */
async function reopenIfDeleted() {
  const id = state.sessionId;
  if (!state.openListed) return;
  const list = await listChats();
  if (list.some((c) => c.sessionId === id)) return;
  const next = list[0];
  // What was typed in it stays in the box (this tab did not choose to leave it), after what
  // was typed in the chat open now.
  const typed = el.input.value;
  await openChat(next ? next.sessionId : newChatId(), null, next?.currentBranch ?? 'main');
  dropDraft(id);
  if (typed.trim()) el.input.value = el.input.value.trim() ? `${el.input.value}\n\n${typed}` : typed;
  setStatus('The chat you had open was deleted in another tab.');
}

afterEach(follow);
