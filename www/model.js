// Where replies come from: the library's Runner and an Agent, made from the model settings (the
// built-in offline model when no endpoint is set), once per change of settings; and what each run
// sends as history. With "Summarise chats" on, the agent also has the model summarise the chat
// after every reply and title it after the first, in the background (not in a locked chat).
import { Agent, Runner } from './lib.js';
import { offlineFetch, OFFLINE_BASE_URL, OFFLINE_MODEL_NAME } from './offline-model.js';
import { state } from './state.js';

const INSTRUCTIONS = 'You are a helpful assistant in a small demo chat page. Reply concisely.';

/** `{ runner, agent }` for the current settings. Throws when an endpoint is set without a model. */
export function model() {
  const { settings, apiKey } = state;
  const signature = JSON.stringify([settings.baseUrl, settings.api, settings.model, settings.summaries, apiKey]);
  const metadata = settings.summaries ? { summaries: { everyTurns: 1 }, autoTitle: true } : {};
  if (state.model?.signature === signature) return state.model;
  let runner;
  let agent;
  if (!settings.baseUrl) {
    runner = new Runner({ baseUrl: OFFLINE_BASE_URL, api: 'chat_completions', fetch: offlineFetch });
    agent = new Agent({ name: 'Offline assistant', instructions: INSTRUCTIONS, model: OFFLINE_MODEL_NAME, ...metadata });
  } else {
    if (!settings.model) throw new Error('Set a model name in the model settings (for example gpt-4.1-mini or llama3.2).');
    runner = new Runner({ baseUrl: settings.baseUrl, api: settings.api, ...(apiKey ? { apiKey } : {}) });
    agent = new Agent({ name: 'Assistant', instructions: INSTRUCTIONS, model: settings.model, ...metadata });
  }
  state.model = { signature, runner, agent };
  return state.model;
}

/** The options of a run in the open chat's session, beyond the session itself: the newest
 * `historyTurns` turns as its history, or all of it (the chat keeps every item either way). A
 * chat the user named before its first message keeps that name: the model does not title it. */
export function runOptions() {
  const turns = state.settings.historyTurns;
  const options = turns > 0 ? { sessionSettings: { turns } } : {};
  if (state.itemCount === 0 && state.info?.title != null) options.autoTitle = false;
  // A locked chat keeps no summary or title: the runner would not write them to its
  // EncryptedSession (which has no `update`), and the model is not asked for them either.
  if (state.lock) Object.assign(options, { summaries: false, autoTitle: false });
  return options;
}
