// Sending a message: the runner streams the reply into the page and saves the exchange in the
// open chat's session (on its branch), sending as history what the settings say; the agent that
// answered last in the chat answers, and a handoff to the other agent shows as it happens; Stop (or Esc)
// aborts it. Editing one of your messages sends the edited text on a new branch of the chat, made
// from that message's turn, so the earlier answer is kept. The runner records each run's token
// usage in the session. The work the reply leaves for afterwards (summary, title) goes on in the
// background.
import { lockedOut, openVersion, state } from './state.js';
import { current, openInitialChat } from './chats.js';
import { model, nextAgent, runOptions } from './model.js';
import { activeAgentOf, contentText, isUserMessage } from './items.js';
import { busy } from './busy.js';
import { track } from './background.js';
import { settleOpenChat } from './actions.js';
import { sessionLockName } from './lib.js';
import { closeEditor, el, focusInput, openEditor, putBack, renderAgent, renderMessages, setStatus, startExchange, updateControls } from './view.js';

export async function send(text) {
  if (state.busy || !text.trim()) return;
  // The chat it was written in: one opened in its place before its turn came (the page caught up
  // with that chat's deletion in another tab) does not get it.
  const chat = openVersion();
  await busy(async () => {
    if (openVersion() !== chat) {
      putBack(text);
      setStatus('The chat you wrote in was closed before your message was sent (it, or its version, was deleted in another tab): your message is back in the message box, not sent.');
      return;
    }
    try {
      model();
      // No chat open yet (the database could not be opened when the page loaded): opened now.
      if (!state.sessionId) await openInitialChat();
    } catch (e) {
      // Settings the model cannot be used with, or storage that cannot be opened: nothing was
      // sent or saved, the message is kept.
      putBack(text);
      throw e;
    }
    return exchange(text, 'Saved to IndexedDB.');
  });
  focusInput();
}

/** Sends `text` in place of user message `turn` (1-based): a new branch of the chat shows what
 * came before that message, and the model answers the edited one there. The branch the chat was
 * on keeps its answer: the switcher on the message goes back to it. */
export async function regenerate(turn, text) {
  // (Locked chats are encrypted, and have no branches to send an edit to.)
  if (state.busy || !text.trim() || state.lock) return;
  let unsent = false;
  // Whether the edit's box was still open when its turn came: a re-read before it that found its
  // message gone has put its text in the message box already.
  let open = false;
  // (Not sent into a chat opened in place of this one before its turn came: see `busy`.)
  const moved = () => {
    closeEditor();
    putBack(text);
    setStatus('The chat you edited in was closed before your edit was sent (it, or its version, was deleted in another tab): your edited text is in the message box, not sent.');
  };
  await busy(async () => {
    open = !!el.messages.querySelector('.msg-editor');
    // Sent now: closed, so that the re-read after it (finding the message gone) does not put the
    // text back too; reopened below where nothing was sent.
    closeEditor();
    let session;
    let branch;
    try {
      // Settings the model cannot be used with fail here, before a branch is made for nothing.
      model();
      // The summary being written for the branch the chat is on now must not land on the new one.
      await settleOpenChat();
      session = current();
      // It fails too (storage full, the message undone in another tab): nothing was sent.
      branch = await session.createBranchFromTurn(turn);
    } catch (e) {
      unsent = true;
      throw e;
    }
    const previous = state.branch;
    state.branch = branch;
    let failure = null;
    try {
      // What the new branch shows: everything before the edited message.
      const items = await session.getItems();
      state.itemCount = items.length;
      // The agent that answered last before that message answers the edited one.
      state.agent = activeAgentOf(items);
      renderAgent(state.agent);
      renderMessages(items);
    } catch (e) {
      // (The branch was deleted in another tab, storage failed): nothing was sent.
      unsent = true;
      failure = e;
    }
    try {
      if (!failure) await exchange(text, `Saved on a new branch, “${branch}”; the earlier version is kept (‹ › on your message switches).`, () => (unsent = true));
    } catch (e) {
      failure = e;
    }
    // Nothing was saved (stopped while another tab's reply held the chat, storage full): the
    // chat goes back to the version it was on, without the branch made for the edit, which
    // stays open with its text. (What failed first is the error shown.)
    if (unsent) {
      try {
        await session.switchBranch(previous);
        state.branch = previous;
        await session.deleteBranch(branch);
        setStatus('Your edit was not saved: it is open again, on the version the chat was on.');
      } catch (e) {
        failure ??= e;
        if (state.branch === branch) {
          // Still on the version made for the edit, which has no message to edit there: the
          // text goes to the message box instead.
          unsent = false;
          putBack(text);
          setStatus('Your edit was not saved, and the chat stayed on the version made for it; the edited text is in the message box.');
        }
      }
    }
    if (failure) throw failure;
  }, moved);
  // Nothing was sent: the edit stays open, with what was typed, to be sent once what failed (the
  // settings, storage) is fixed.
  const li = unsent && el.messages.querySelector(`.msg[data-turn="${turn}"]`);
  if (li) {
    openEditor(li);
    const box = li.querySelector('.msg-editor textarea');
    box.value = text;
    box.focus();
  } else {
    // The message is gone (undone or cleared, here or in another tab): the edited text goes to
    // the message box, not lost (not where the chats were locked meanwhile).
    if (unsent && open && !state.lock && !lockedOut()) {
      putBack(text);
      setStatus('The message you edited is no longer in the chat (undone or cleared); your edited text is in the message box.');
    }
    focusInput();
  }
}

/** Whether a run elsewhere (another tab's reply) holds the chat's lock: this run waits for it. */
async function heldElsewhere(session) {
  const { dbName, sessionId } = session;
  if (!dbName || !sessionId || !navigator.locks?.query) return false;
  const { held } = await navigator.locks.query();
  return held.some((lock) => lock.name === sessionLockName(dbName, sessionId));
}

/** Streams the reply to `text` into the page and saves both in the open chat's session. The
 * agent that answered last in the chat answers; when it hands off to the other one, the header
 * and the reply show it at once. */
async function exchange(text, saved, unsaved = putBack) {
  // The runner and the agents of one reading of the settings: saved in another tab while this
  // run waits there, new settings would pair the old endpoint with the new model name.
  const built = model();
  const { runner } = built;
  let agent = nextAgent(built);
  let session;
  const reply = startExchange(text, agent.name);
  const controller = new AbortController();
  state.controller = controller;
  updateControls();
  // Whether the run got the chat (its `agent_start`): a run stopped before never saved anything.
  let started = false;
  /** Whether the question is the chat's newest message, with nothing after it but the calls and
   * outputs of tools (and handoffs) that a run stopped after they ran saves: the run saved it
   * (once it had the chat). */
  const questionSaved = async () => {
    if (!started || !session) return false;
    try {
      const newest = await session.getItems(50);
      const at = newest.findLastIndex(isUserMessage);
      return at >= 0 && contentText(newest[at].content) === text && newest.slice(at + 1).every((i) => i.role === undefined);
    } catch {
      return false;
    }
  };
  // The run, once begun: a Stop that came as it saved its answer ends the loop, and the run
  // ends after, with its result (too late to stop: the answer is saved).
  let run = null;
  try {
    session = current();
    /** Runs the exchange with `agent` (`lock`: the runner's option), showing its reply. */
    const answer = async (lock) => {
      run = runner.runStreamed(agent, text, { ...runOptions(), session, signal: controller.signal, ...lock });
      for await (const event of run) {
        if (event.type === 'agent_start' && !started) {
          // The run holds the chat now.
          started = true;
          setStatus('The model is answering…');
        } else if (event.type === 'text_delta') {
          reply.append(event.delta);
        } else if (event.type === 'handoff') {
          state.agent = event.to.name;
          renderAgent(state.agent);
          reply.handoff(event.to.name);
          setStatus(`${event.from.name} handed the chat to ${event.to.name}, who is answering…`);
        }
      }
      return run.result;
    };
    let result;
    if (await heldElsewhere(session)) {
      setStatus('Waiting for the reply being written in another tab…');
      // Once it is saved (Stop ends the wait), the agent the chat has then answers (that reply
      // may have handed the chat to the other one), in the same hold of the chat's lock: nothing
      // else (another tab's reply, a lock of the chats) gets the chat in between.
      const name = sessionLockName(session.dbName, session.sessionId);
      result = await navigator.locks.request(name, { signal: controller.signal }, async () => {
        state.agent = activeAgentOf(await session.getItems());
        agent = nextAgent(built);
        renderAgent(state.agent);
        reply.relabel(agent.name);
        try {
          return await answer({ lock: false });
        } catch (e) {
          // (Stopped: the lock is held until the run has ended, as the runner's own would be.)
          await run?.result.catch(() => {});
          throw e;
        }
      });
    } else {
      setStatus('The model is answering…');
      result = await answer({});
    }
    track(state.sessionId, result.background);
    setStatus(saved);
  } catch (e) {
    if (e?.name === 'AbortError' || controller.signal.aborted) {
      const late = await run?.result.then((r) => r, () => null);
      if (late) {
        // Stopped as the answer was being saved: the run saved it (the exchange is whole).
        track(state.sessionId, late.background);
        setStatus(saved);
      } else if (await questionSaved()) {
        // A run stopped after it saved the question leaves it as the chat's newest item (it may
        // have been stopped just after it got the chat, before saving).
        setStatus('Stopped. The unfinished answer was not saved; your message was.');
      } else {
        // Stopped while another tab's reply held the chat: nothing was saved.
        unsaved(text);
        setStatus('Stopped before your message was saved; it is back in the input box.');
      }
    } else if (await questionSaved()) {
      // The question is kept (a model that failed after it was saved): sent again as it is, it
      // would be there twice; Undo takes it back into the input box.
      setStatus('Your message is saved without an answer. Undo takes it out of the chat and back into the input box (above anything typed there), to send it again.');
      throw e;
    } else {
      // Nothing was saved (storage full, the database out of reach): the message is not lost.
      unsaved(text);
      setStatus('Your message was not saved; it is back in the input box.');
      throw e;
    }
  } finally {
    state.controller = null;
    updateControls();
    reply.done();
  }
}

export function stop() {
  state.controller?.abort();
}
