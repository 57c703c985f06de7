// Where replies come from: the library's Runner and two Agents, made from the model settings (the
// built-in offline model when no endpoint is set), once per change of settings; which agent
// answers next; and what each run sends as history. The two agents hand off to each other: the
// Assistant answers anything and hands trip planning to the Trip planner, which hands back
// when asked for something else (the runner offers each handoff to the model as a
// `transfer_to_…` tool, to the offline model and to a real one alike). With "Summarise chats" on,
// the agents also have the model summarise the chat after every reply and title it after the
// first, in the background (not in a locked chat).
import { Agent, Runner } from './lib.js';
import { offlineFetch, OFFLINE_BASE_URL, OFFLINE_MODEL_NAME } from './offline-model.js';
import { ASSISTANT_LABEL } from './items.js';
import { state } from './state.js';

/** The agents' names: the first one's is also how the page labels its answers. */
export const ASSISTANT = ASSISTANT_LABEL;
export const TRIP_PLANNER = 'Trip planner';

// (The offline model reads an agent's name from "You are the <name> agent" in its instructions,
// and tells a title or summary request from a reply by the words in them: they say neither.)
const ASSISTANT_INSTRUCTIONS =
  'You are a helpful assistant in a small demo chat page. Reply concisely. ' +
  `When the user wants to plan a trip (where to go, a day-by-day plan, what to pack), hand off to the ${TRIP_PLANNER}.`;
const TRIP_PLANNER_INSTRUCTIONS =
  `You are the ${TRIP_PLANNER} agent of a small demo chat page: you help the user plan trips ` +
  '(where to go, a day-by-day plan, what to pack). Reply concisely. ' +
  `When the user wants something other than travel, or asks for the assistant, hand back to the ${ASSISTANT}.`;

/** `{ runner, agent, agents }` for the current settings: `agent` the first agent, `agents` both
 * by name. Throws when an endpoint is set without a model. */
export function model() {
  const { settings } = state;
  // (Only to the endpoint it was typed for.)
  const apiKey = state.keyFor === settings.baseUrl ? state.apiKey : '';
  const signature = JSON.stringify([settings.baseUrl, settings.api, settings.model, settings.summaries, apiKey]);
  const metadata = settings.summaries ? { summaries: { everyTurns: 1 }, autoTitle: true } : {};
  if (state.model?.signature === signature) return state.model;
  let runner;
  let modelName;
  if (!settings.baseUrl) {
    runner = new Runner({ baseUrl: OFFLINE_BASE_URL, api: 'chat_completions', fetch: offlineFetch });
    modelName = OFFLINE_MODEL_NAME;
  } else {
    if (!settings.model) throw new Error('Set a model name in the model settings (for example gpt-4.1-mini or llama3.2).');
    runner = new Runner({ baseUrl: settings.baseUrl, api: settings.api, ...(apiKey ? { apiKey } : {}) });
    modelName = settings.model;
  }
  // A run that starts with either agent summarises and titles the chat alike.
  const agent = new Agent({
    name: ASSISTANT,
    instructions: ASSISTANT_INSTRUCTIONS,
    model: modelName,
    handoffDescription: 'Answers anything else, and remembers what you told it in this chat.',
    ...metadata,
  });
  const planner = new Agent({
    name: TRIP_PLANNER,
    instructions: TRIP_PLANNER_INSTRUCTIONS,
    model: modelName,
    handoffDescription: 'Plans trips: where to go, a day-by-day plan, what to pack.',
    ...metadata,
  });
  // Each can hand off to the other: set once both exist.
  agent.handoffs = [planner];
  planner.handoffs = [agent];
  state.model = { signature, runner, agent, agents: new Map([agent, planner].map((a) => [a.name, a])) };
  return state.model;
}

/** The agent the next reply in the open chat starts with: the one its history was last handed
 * off to (`state.agent`), else (or when no agent has that name) the first one. */
export function nextAgent(built = model()) {
  const { agent, agents } = built;
  return (state.agent && agents.get(state.agent)) || agent;
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
