// Each user's chat titles, kept in localStorage next to the chats (`{ [sessionId]: { title } }`),
// so the sidebar needs only `listSessions` and never reads a chat's history to name it. A title
// is the chat's first user message, shortened; it is set when that message is sent (or when a
// chat is imported) and dropped when the chat is cleared or deleted.
import { contentText, isUserMessage, shorten } from './items.js';

const key = (user) => `agent-sessions-demo.chats.${user}`;

function read(user) {
  try {
    const index = JSON.parse(localStorage.getItem(key(user)));
    return index && typeof index === 'object' && !Array.isArray(index) ? index : {};
  } catch {
    return {};
  }
}

function write(user, index) {
  localStorage.setItem(key(user), JSON.stringify(index));
}

/** `user`'s titles: `sessionId -> title`. */
export function titles(user) {
  const index = read(user);
  const out = new Map();
  for (const [id, entry] of Object.entries(index)) {
    if (typeof entry?.title === 'string' && entry.title) out.set(id, entry.title);
  }
  return out;
}

/** The title for a chat whose first user message is `text`. */
export const titleFromText = (text) => shorten(text);

/** The title for a chat holding `items`: its first user message, shortened; '' when it has none. */
export function titleFromItems(items) {
  const first = items.find(isUserMessage);
  return first ? titleFromText(contentText(first.content)) : '';
}

export function setTitle(user, sessionId, title) {
  if (!title) return;
  const index = read(user);
  index[sessionId] = { ...index[sessionId], title };
  write(user, index);
}

export function forgetTitle(user, sessionId) {
  const index = read(user);
  if (!(sessionId in index)) return;
  delete index[sessionId];
  write(user, index);
}
