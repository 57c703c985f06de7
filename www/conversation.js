// Sending a message: the runner streams the reply into the page and saves the exchange in the
// open chat's session; Stop (or Esc) aborts it.
import { state } from './state.js';
import { current } from './chats.js';
import { model } from './model.js';
import { setTitle, titleFromText } from './titles.js';
import { busy } from './busy.js';
import { el, setStatus, startExchange } from './view.js';

export async function send(text) {
  if (state.busy || !text.trim()) return;
  await busy(async () => {
    const { runner, agent } = model();
    const session = current();
    // The first message names the chat.
    if (state.itemCount === 0) setTitle(state.user, state.sessionId, titleFromText(text));
    const reply = startExchange(text);
    const controller = new AbortController();
    state.controller = controller;
    setStatus('The model is answering…');
    try {
      const run = runner.runStreamed(agent, text, { session, signal: controller.signal });
      for await (const event of run) {
        if (event.type === 'text_delta') reply.append(event.delta);
      }
      await run.result;
      setStatus('Saved to IndexedDB.');
    } catch (e) {
      if (e?.name === 'AbortError' || controller.signal.aborted) {
        setStatus('Stopped. The unfinished answer was not saved; your message was.');
      } else {
        setStatus('');
        throw e;
      }
    } finally {
      state.controller = null;
      reply.done();
    }
  });
  el.input.focus();
}

export function stop() {
  state.controller?.abort();
}
