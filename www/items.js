// What the page makes of a stored item: its visible text and how it is labelled, and which agent
// of the demo answered (handoffs: a `transfer_to_…` call and its result, which names the agent).

/** The visible text of an item's `content`: a string or an array of text parts. */
export function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (typeof p === 'string' ? p : typeof p?.text === 'string' ? p.text : typeof p?.refusal === 'string' ? p.refusal : ''))
      .join('');
  }
  return '';
}

/** The text of a tool result's `output`: a string, a `{ type: 'text', text }` part, or parts. */
function outputText(output) {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return contentText(output);
  if (typeof output?.text === 'string') return output.text;
  return '';
}

const isResult = (item) => item?.type === 'function_call_result' || item?.type === 'function_call_output';

/** The prefix of the tools a handoff is offered to the model as (the SDK's `transfer_to_<name>`). */
const HANDOFF_TOOL = 'transfer_to_';

/** Whether `item` is the model's call of a handoff tool. */
export const isHandoffCall = (item) => item?.type === 'function_call' && typeof item.name === 'string' && item.name.startsWith(HANDOFF_TOOL);

/** The agent a handoff's result names (its output is `{"assistant":"<name>"}`), or null when
 * `item` is not the result of a handoff. `calls` are the ids of the handoff calls around it, for
 * a result that does not carry the tool's name. */
export function handoffTarget(item, calls = new Set()) {
  if (!isResult(item)) return null;
  const named = typeof item.name === 'string' && item.name ? item.name.startsWith(HANDOFF_TOOL) : calls.has(callIdOf(item));
  if (!named) return null;
  try {
    const { assistant } = JSON.parse(outputText(item.output));
    return typeof assistant === 'string' && assistant.trim() ? assistant : null;
  } catch {
    return null;
  }
}

export const callIdOf = (item) => item?.callId ?? item?.call_id ?? item?.id;

/** The ids of the handoff calls among `items`. */
export function handoffCalls(items) {
  return new Set(items.filter(isHandoffCall).map(callIdOf));
}

/** The agent that answers in a conversation of `items`: the one the last handoff in it went to,
 * or null when nothing was handed off (the first agent answers). */
export function activeAgentOf(items) {
  const calls = handoffCalls(items);
  let agent = null;
  for (const item of items) agent = handoffTarget(item, calls) ?? agent;
  return agent;
}

/** The label of the first agent's answers (and of answers from an agent not known). */
export const ASSISTANT_LABEL = 'Assistant';

/** Whether `item` is a message (no string `type`, or `type: 'message'`), as the library tells
 * them: an item of another type is not one, whatever its `role`. */
const isMessage = (item) => typeof item?.type !== 'string' || item.type === 'message';

/** How an item is shown: `{ kind, label, text }`. A handoff's result is one line, "Handed off to
 * <agent>" (`calls`: see `handoffTarget`); an answer is labelled with the agent that gave it
 * (`agent`, else "Assistant"). */
export function describe(item, { agent = null, calls } = {}) {
  if (isMessage(item) && (item?.role === 'user' || item?.role === 'assistant' || item?.role === 'system' || item?.role === 'developer')) {
    const label = item.role === 'user' ? 'You' : item.role === 'assistant' ? (agent ?? ASSISTANT_LABEL) : 'System';
    return { kind: item.role, label, text: contentText(item.content) };
  }
  const target = handoffTarget(item, calls);
  if (target) return { kind: 'handoff', label: 'Handoff', text: `Handed off to ${target}` };
  if (item?.type === 'function_call') {
    return { kind: 'tool', label: 'Tool call', text: `${item.name ?? '?'}(${item.arguments ?? ''})` };
  }
  if (isResult(item)) {
    const out = item.output;
    return { kind: 'tool', label: 'Tool result', text: typeof out === 'string' ? out : contentText([out]) || JSON.stringify(out) };
  }
  if (item?.type === 'reasoning') {
    // A reasoning model's summary of its thinking (the Responses API gives one when asked), else
    // a line saying it reasoned: its encrypted content is for the model, not the reader.
    // (Each part of a summary is a paragraph.)
    const paragraphs = (parts) => (Array.isArray(parts) ? parts.map((p) => contentText([p])).filter(Boolean).join('\n\n') : '');
    const summary = paragraphs(item.content) || paragraphs(item.rawContent) || paragraphs(item.summary);
    return { kind: 'other', label: 'Reasoning', text: summary || 'The model reasoned before answering (no summary of it was given).' };
  }
  return { kind: 'other', label: item?.type ?? 'Item', text: JSON.stringify(item) };
}

/** Whether `item` is a user message: what starts a turn in the library (and so an Edit button's
 * number, the turn a new version starts from). */
export const isUserMessage = (item) => item?.role === 'user' && isMessage(item);
