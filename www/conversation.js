// Sending a message: the runner streams the reply into the page and saves the exchange in the
// open chat's session, sending as history what the settings say; Stop (or Esc) aborts it. The
// work the reply leaves for afterwards (summary, title) goes on in the background.
import { state } from './state.js';
import { current } from './chats.js';
import { model, runOptions } from './model.js';
import { busy } from './busy.js';
import { track } from './background.js';
import { el, setStatus, startExchange } from './view.js';

export async function send(text) {
  if (state.busy || !text.trim()) return;
  await busy(async () => {
    const { runner, agent } = model();
    const session = current();
    const reply = startExchange(text);
    const controller = new AbortController();
    state.controller = controller;
    setStatus('The model is answering…');
    try {
      const run = runner.runStreamed(agent, text, { ...runOptions(), session, signal: controller.signal });
      for await (const event of run) {
        if (event.type === 'text_delta') reply.append(event.delta);
      }
      const result = await run.result;
      track(state.sessionId, result.background);
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
