// The demo page's entry point: several users, each with several chats, every chat an
// IndexedDbSession in one database; replies streamed by the library's runner from the built-in
// offline model or from any OpenAI-compatible endpoint. This file wires the page's controls to
// what they do, then opens the current user's chat.
import { state, followOtherTabs, keyNotFor, loadState, saveSettings } from './state.js';
import { openInitialChat, unsentChats } from './chats.js';
import { afterEach, busy } from './busy.js';
import { regenerate, send, stop } from './conversation.js';
import * as actions from './actions.js';
import { keepChats, measureSoon, showKept } from './storage.js';
import { backUpChats, restoreChats } from './backup.js';
import { closeLockForm, followLocksElsewhere, forgetOnDevice, lockChats, lockNow, openLockForm, unlock } from './lock.js';
import { deleteOldChats } from './retention.js';
import { clearSearch, hitOf, revealHit, searchNow, searchSoon, searching } from './search.js';
// Follows other tabs' changes, at the end of every action.
import './live.js';
import {
  closeEditor,
  closeRename,
  el,
  hideError,
  openEditor,
  openRename,
  renderSettings,
  renderUsers,
  setBackground,
  setStatus,
  settingsFromForm,
  syncHistoryTurns,
  toggleSidebar,
} from './view.js';

/** Whether key event `e` belongs to an input method's composition: Safari ends the composition
 * before the keydown of the Enter that confirms it (then `isComposing` is false, `keyCode` 229),
 * and that Enter must not send a half-typed message. The Escape that closes an input method's
 * candidates is its own too: it stops no reply, and closes or clears no box. */
const composing = (e) => e.isComposing || e.keyCode === 229;

function wire() {
  el.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = el.input.value;
    if (!text.trim() || state.busy) return;
    el.input.value = '';
    send(text);
  });
  el.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !composing(e)) {
      e.preventDefault();
      el.composer.requestSubmit();
    }
  });
  el.stop.addEventListener('click', stop);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.controller && !composing(e)) stop();
  });
  // A reply still being written goes with the page, and so does a message still waiting to be
  // saved (another tab's reply holding the chat): the browser asks before the tab is closed or
  // reloaded. (Not while an action only waits for a summary.)
  window.addEventListener('beforeunload', (e) => {
    if (state.controller && !state.settling) {
      e.preventDefault();
      e.returnValue = '';
    }
  });

  // Renaming: the Rename button (or a double-click on the title) opens a box in the title's place;
  // Enter or Save saves, Escape or Cancel puts the title back. Focus returns to Rename.
  el.rename.addEventListener('click', openRename);
  el.chatTitle.addEventListener('dblclick', openRename);
  el.renameForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (state.busy) return;
    await actions.renameChat(el.renameInput.value);
    // Saved: the title is back. Refused: the box stays open, with the error shown above the chat.
    (el.renameForm.hidden ? el.rename : el.renameInput).focus();
  });
  const cancelRename = () => {
    closeRename();
    el.rename.focus();
  };
  el.renameCancel.addEventListener('click', cancelRename);
  // Escape in a box (`e`) closes it with `close` (which writes nothing), also while a reply is
  // written: it never reaches the page's Escape, which stops the reply. While the box's own
  // action waits for the last reply's summary and title (a rename or an edit sent), it gives
  // that action up.
  const escapeInBox = (e, close) => {
    e.preventDefault();
    e.stopPropagation();
    if (state.settling) stop();
    else if (!state.busy || state.controller) close();
  };
  el.renameInput.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !composing(e)) escapeInBox(e, cancelRename);
  });

  // Your messages: Edit opens a box in the message's place (Enter or "Send edit" sends the edited
  // message on a new branch, Escape or Cancel closes it; focus returns to Edit); the ‹ › arrows
  // switch to the message's other versions, keeping the focus on the switcher.
  el.messages.addEventListener('click', async (e) => {
    const b = e.target.closest('button');
    if (!b || state.busy) return;
    const li = b.closest('.msg');
    if (b.classList.contains('msg-edit')) {
      openEditor(li);
    } else if (b.classList.contains('edit-cancel')) {
      cancelEdit();
    } else if (b.classList.contains('branch-step') && b.dataset.branch) {
      const { turn } = li.dataset;
      const dir = b.classList.contains('branch-prev') ? 'prev' : 'next';
      await actions.switchBranch(b.dataset.branch);
      const msg = el.messages.querySelector(`.msg[data-turn="${turn}"]`);
      const again = msg?.querySelector(`.branch-${dir}:not(:disabled)`) ?? msg?.querySelector('.branch-step:not(:disabled)');
      (again ?? el.input).focus();
    }
  });
  const cancelEdit = () => {
    const li = closeEditor();
    li?.querySelector('.msg-edit')?.focus();
  };
  el.messages.addEventListener('submit', (e) => {
    const form = e.target.closest('.msg-editor');
    if (!form) return;
    e.preventDefault();
    const text = form.querySelector('textarea').value;
    if (!text.trim() || state.busy) return;
    regenerate(Number(form.closest('.msg').dataset.turn), text);
  });
  el.messages.addEventListener('keydown', (e) => {
    const form = e.target.closest('.msg-editor');
    if (!form || e.target.tagName !== 'TEXTAREA') return;
    if (e.key === 'Enter' && !e.shiftKey && !composing(e)) {
      e.preventDefault();
      form.requestSubmit();
    } else if (e.key === 'Escape' && !composing(e)) {
      escapeInBox(e, cancelEdit);
    }
  });

  // The chat actions are a toolbar: besides Tab, the arrow keys move between its buttons (and
  // round from either end), Home and End to the first and the last; a disabled one is skipped.
  el.undo.parentElement.addEventListener('keydown', (e) => {
    const moves = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: -Infinity, End: Infinity };
    const move = moves[e.key];
    if (move === undefined || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const buttons = [...e.currentTarget.querySelectorAll('button')].filter((b) => !b.disabled && b.getClientRects().length);
    const at = buttons.indexOf(document.activeElement);
    if (!buttons.length || at < 0) return;
    e.preventDefault();
    const n = buttons.length;
    const next = Math.abs(move) === Infinity ? (move < 0 ? 0 : n - 1) : (at + move + n) % n;
    buttons[next].focus();
  });
  el.undo.addEventListener('click', actions.undoLastExchange);
  el.clear.addEventListener('click', actions.clearChat);
  // The header's choice of version reaches every branch, an emptied one too.
  // (A control disabled while an action runs loses the focus: it is given back after.)
  el.chatBranch.addEventListener('change', async () => {
    await actions.switchBranch(el.chatBranch.value);
    el.chatBranch.focus();
  });
  el.deleteChat.addEventListener('click', actions.deleteChat);
  el.newChat.addEventListener('click', actions.newChat);
  el.exportBtn.addEventListener('click', actions.exportChat);
  el.importBtn.addEventListener('click', () => el.importFile.click());
  el.importFile.addEventListener('change', () => {
    const file = el.importFile.files?.[0];
    el.importFile.value = '';
    if (file) actions.importChat(file);
  });
  el.sessionList.addEventListener('click', async (e) => {
    const b = e.target.closest('button.session');
    if (!b || state.busy) return;
    const id = b.dataset.sessionId;
    toggleSidebar(false);
    await actions.selectChat(id);
    // The list was drawn again (and its buttons disabled meanwhile): focus goes back to the chat
    // picked where the list is shown, else to the chat's input box.
    const again = [...el.sessionList.querySelectorAll('button.session')].find((s) => s.dataset.sessionId === id);
    (again?.checkVisibility?.() ? again : el.input).focus();
  });

  // Searching the chats: typing searches after a pause, Enter at once; Escape (or ×) clears the
  // box and brings the chat list back; ↓ goes from the box to the messages found, ↑ and ↓ between
  // them. Choosing one opens its chat at that message.
  el.searchInput.addEventListener('input', searchSoon);
  el.searchInput.addEventListener('keydown', (e) => {
    if (composing(e)) return;
    if (e.key === 'Enter') {
      e.preventDefault();
      searchNow();
    } else if (e.key === 'Escape' && (el.searchInput.value || searching())) {
      // Not also Stop: the box had something to clear.
      e.preventDefault();
      e.stopPropagation();
      clearSearch();
    } else if (e.key === 'ArrowDown' && searching()) {
      const first = el.searchResults.querySelector('button');
      if (first && !first.disabled) {
        e.preventDefault();
        first.focus();
      }
    }
  });
  el.searchClear.addEventListener('click', () => {
    clearSearch();
    el.searchInput.focus();
  });
  el.searchResults.addEventListener('keydown', (e) => {
    const b = e.target.closest('button.search-hit');
    if (!b) return;
    const buttons = [...el.searchResults.querySelectorAll('button.search-hit')];
    const i = buttons.indexOf(b);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      const next = e.key === 'ArrowDown' ? buttons[i + 1] : buttons[i - 1];
      (next ?? (e.key === 'ArrowUp' ? el.searchInput : b)).focus();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      clearSearch();
      el.searchInput.focus();
    }
  });
  el.searchResults.addEventListener('click', async (e) => {
    const b = e.target.closest('button.search-hit');
    if (!b || state.busy) return;
    const found = hitOf(b);
    if (!found) return;
    toggleSidebar(false);
    await actions.openHit(found.hit);
    revealHit(found);
  });

  // A switch of user (to a new one too) drops the messages typed and not sent (see
  // clearMessageBox): asked first where there are any, since the arrow keys change a closed list
  // at each press on Windows and Linux, where a keyboard user only meant to look through it.
  const dropsUnsent = (to) => {
    const unsent = unsentChats();
    if (to === state.user || unsent === 0) return true;
    if (confirm(`Switch to ${to}? The message${unsent === 1 ? '' : 's'} you typed and did not send ${unsent === 1 ? 'is' : 'are'} dropped: the next user sees none of ${unsent === 1 ? 'it' : 'them'}.`)) return true;
    setStatus(`Still chatting as ${state.user}; what you typed is kept.`);
    return false;
  };
  el.userSelect.addEventListener('change', async () => {
    const to = el.userSelect.value;
    if (!dropsUnsent(to)) {
      el.userSelect.value = state.user;
      return;
    }
    await actions.switchUser(to);
    el.userSelect.focus();
  });
  el.newUserForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const name = el.newUserName.value.trim();
    if (!name || state.busy || !dropsUnsent(name)) return;
    el.newUserName.value = '';
    actions.addUser(name);
  });

  const useSettingsFromForm = () => {
    const { settings, apiKey } = settingsFromForm();
    // A key typed for one endpoint is not sent to another chosen later (unless typed with it);
    // the offline model keeps it for the endpoint it was typed for.
    const typed = apiKey !== state.apiKey;
    const before = state.keyFor;
    const dropped = !typed && keyNotFor(settings.baseUrl);
    saveSettings(settings, dropped ? '' : apiKey, typed ? settings.baseUrl : before);
    renderSettings();
    setStatus(
      (!settings.baseUrl
        ? 'Using the offline model.'
        : settings.model
          ? `Using ${settings.model} at ${settings.baseUrl}.`
          : `Set a model name to use ${settings.baseUrl} (for example gpt-4.1-mini or llama3.2).`) +
        (dropped ? ` The API key was for ${before || 'the offline model'}: it is not sent to this endpoint; enter its own key.` : ''),
    );
  };
  el.settingsForm.addEventListener('submit', (e) => {
    e.preventDefault();
    useSettingsFromForm();
  });
  el.history.addEventListener('change', () => {
    syncHistoryTurns();
    if (el.history.value === 'turns') el.historyTurns.focus();
  });
  el.resetSettings.addEventListener('click', () => {
    el.baseUrl.value = '';
    useSettingsFromForm();
  });
  el.backup.addEventListener('click', backUpChats);
  el.restore.addEventListener('click', () => el.restoreFile.click());
  el.restoreFile.addEventListener('change', () => {
    const file = el.restoreFile.files?.[0];
    el.restoreFile.value = '';
    if (file) restoreChats(file);
  });
  el.keep.addEventListener('click', keepChats);
  el.retentionForm.addEventListener('submit', (e) => {
    e.preventDefault();
    deleteOldChats(Number(el.retentionDays.value));
  });

  // The passphrase lock: the sidebar's form (the passphrase twice), the unlock prompt in the
  // chat's place, Lock now and Forget on this device.
  el.lockOpen.addEventListener('click', openLockForm);
  el.lockCancel.addEventListener('click', () => {
    closeLockForm();
    el.lockOpen.focus();
  });
  el.lockForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    await lockChats(el.lockPassphrase.value, el.lockConfirm.value, el.lockRemember.checked);
  });
  el.lockForm.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || composing(e)) return;
    escapeInBox(e, () => {
      closeLockForm();
      el.lockOpen.focus();
    });
  });
  el.unlockForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    await unlock(el.unlockPassphrase.value, el.unlockRemember.checked);
    // Unlocked: on to the chat. Refused: the field keeps the focus, to try again.
    (el.unlock.hidden ? el.input : el.unlockPassphrase).focus();
  });
  el.lockNow.addEventListener('click', async () => {
    await lockNow();
    el.unlockPassphrase.focus();
  });
  el.lockForget.addEventListener('click', forgetOnDevice);
  el.errorClose.addEventListener('click', () => {
    hideError();
    // The button that had the keyboard is hidden with the box: the message box takes it.
    if (!el.input.disabled && el.input.offsetParent) el.input.focus();
  });
  el.errorAction.addEventListener('click', () => {
    if (el.errorAction.dataset.action === 'reload') location.reload();
    // The chat is opened again (the one that could not be, or the one open, read again).
    else if (el.errorAction.dataset.action === 'retry') busy(state.sessionId ? async () => {} : openInitialChat);
  });
  el.toggleSidebar.addEventListener('click', () => {
    toggleSidebar();
    // Opened (on a phone, above the chat): the keyboard goes into it, on the open chat's row,
    // rather than staying after it.
    if (el.app.dataset.sidebar === 'open') (el.sessionList.querySelector('button[aria-current="true"]') ?? el.newChat).focus();
  });
}

wire();
followLocksElsewhere();
followOtherTabs({ renderUsers, renderSettings });
// The storage meter is measured again after every action (a user switch shows another user's
// chats) and every re-read; live.js has it measured on every change event besides.
afterEach(measureSoon);
const { keyDropped } = loadState();
renderUsers();
renderSettings();
setBackground(false);
showKept();
await busy(openInitialChat);
// (Said once the chat is open, whose opening says nothing after it.)
if (keyDropped) renderSettings({ keyDropped });
// A page that opens locked asks for the passphrase first: the keyboard is there.
if (!el.unlock.hidden) el.unlockPassphrase.focus();
document.documentElement.dataset.ready = 'true';
