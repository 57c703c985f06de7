// Where replies come from: the library's Runner and an Agent, made from the model settings (the
// built-in offline model when no endpoint is set), once per change of settings.
import { Agent, Runner } from './lib.js';
import { offlineFetch, OFFLINE_BASE_URL, OFFLINE_MODEL_NAME } from './offline-model.js';
import { state } from './state.js';

const INSTRUCTIONS = 'You are a helpful assistant in a small demo chat page. Reply concisely.';

/** `{ runner, agent }` for the current settings. Throws when an endpoint is set without a model. */
export function model() {
  const { settings, apiKey } = state;
  const signature = JSON.stringify([settings, apiKey]);
  if (state.model?.signature === signature) return state.model;
  let runner;
  let agent;
  if (!settings.baseUrl) {
    runner = new Runner({ baseUrl: OFFLINE_BASE_URL, api: 'chat_completions', fetch: offlineFetch });
    agent = new Agent({ name: 'Offline assistant', instructions: INSTRUCTIONS, model: OFFLINE_MODEL_NAME });
  } else {
    if (!settings.model) throw new Error('Set a model name in the model settings (for example gpt-4.1-mini or llama3.2).');
    runner = new Runner({ baseUrl: settings.baseUrl, api: settings.api, ...(apiKey ? { apiKey } : {}) });
    agent = new Agent({ name: 'Assistant', instructions: INSTRUCTIONS, model: settings.model });
  }
  state.model = { signature, runner, agent };
  return state.model;
}
