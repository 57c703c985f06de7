// What the page makes of a stored item: its visible text and how it is labelled.

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

/** How an item is shown: `{ kind, label, text }`. */
export function describe(item) {
  if (item?.role === 'user' || item?.role === 'assistant' || item?.role === 'system' || item?.role === 'developer') {
    return { kind: item.role, label: item.role === 'user' ? 'You' : item.role === 'assistant' ? 'Assistant' : 'System', text: contentText(item.content) };
  }
  if (item?.type === 'function_call') {
    return { kind: 'tool', label: 'Tool call', text: `${item.name ?? '?'}(${item.arguments ?? ''})` };
  }
  if (item?.type === 'function_call_result' || item?.type === 'function_call_output') {
    const out = item.output;
    return { kind: 'tool', label: 'Tool result', text: typeof out === 'string' ? out : contentText([out]) || JSON.stringify(out) };
  }
  return { kind: 'other', label: item?.type ?? 'Item', text: JSON.stringify(item) };
}

export const isUserMessage = (item) => item?.role === 'user';
