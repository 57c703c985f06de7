// The search terms of an item as a hand-written store would compute them for an index like
// agent-sessions' `by_term` (a multi-entry index over each row's `terms`): the text of a message
// (its string content or its text parts), lower-cased words and numbers, each distinct one once,
// each prefixed by the owner (`owner\0term`) so one user's index keys are never another's.
export function itemTerms(item, owner) {
  const content = item?.content;
  const text =
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join(' ')
        : '';
  const prefix = `${owner ?? ''}\0`;
  return [...new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].map((term) => prefix + term);
}
